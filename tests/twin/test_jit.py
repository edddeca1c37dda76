"""The twin's event loop compiled by numba gives the numbers of the same source run as plain Python.

Compilation types every variable once (integers as int64, times as float64, the heaps as lists of tuples); a
conversion that went wrong there (an iteration count truncated, a tuple compared in another order, a NaN test)
would move a replay without failing the closed forms. The independent checks of the model itself are
``test_simulate.py`` (the oracle simulator, to 1e-6 s) and ``test_paged.py`` (a naive one-iteration loop)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bearing_lib.twin import simulate as sim
from bearing_lib.twin.simulate import ServerParams, simulate

CASES = {
    "reserve, slots and batch cap": ServerParams(20, 0.05, 40, 0.5, max_num_seqs=24, max_batched_tokens=2000),
    "paged with context cost": ServerParams(20, 0.05, 40, 0.5, max_num_seqs=64, kv_budget_tokens=30000,
                                            kv_policy="paged", decode_ms_per_kctx=1.2),
    "request deadline and overhead": ServerParams(30, 0.05, 47, 0.5, max_num_seqs=53, kv_budget_tokens=50000,
                                                  request_timeout_s=29.9, ttft_overhead_ms=160),
    "paged, both timeouts, rejections": ServerParams(30, 0.05, 47, 0.5, max_num_seqs=53, kv_budget_tokens=2800,
                                                     kv_policy="paged", request_timeout_s=20, queue_timeout_s=5,
                                                     decode_ms_per_kctx=0.7),
}


def _python(p: ServerParams, a, i, o, c, monkeypatch):
    """The same event loop run by the interpreter (what ``NUMBA_DISABLE_JIT=1`` would run)."""
    sim._compiled()  # the loop then calls the compiled _iters_to_cover: one function under test at a time
    for name in sim._STEPS:  # its steps, compiled to be inlined, run as the interpreter's source
        monkeypatch.setattr(sim, name, getattr(sim, name).py_func)

    def lim(v):
        return math.inf if v is None else float(v)

    c = np.minimum(c.astype(float), i)
    return sim._event_loop(a, i, np.maximum(i - c, 0.0), i + o, np.maximum(o, 1).astype(np.int64),
                           p.prefill_base_ms / 1e3, p.prefill_ms_per_token / 1e3, p.decode_base_ms / 1e3,
                           p.decode_ms_per_seq / 1e3, p.decode_ms_per_kctx / 1e6, lim(p.max_num_seqs),
                           lim(p.kv_budget_tokens), lim(p.max_batched_tokens), lim(p.queue_timeout_s),
                           lim(p.request_timeout_s), p.kv_policy == "paged")


@pytest.mark.parametrize("name", sorted(CASES))
def test_compiled_loop_equals_the_interpreted_one(name, monkeypatch):
    p = CASES[name]
    rng = np.random.default_rng(7)
    n = 1500
    a = np.cumsum(rng.exponential(1 / 4.0, n))
    i = rng.integers(50, 3000, n).astype(float)
    o = rng.integers(1, 600, n).astype(float)
    c = np.where(rng.random(n) < 0.3, rng.integers(0, 1000, n), 0)
    r = simulate(p, a, i, o, c)
    first, started, end, status, kv_held, slot_held, peak_run, peak_kv, n_pre = _python(p, a, i, o, c, monkeypatch)
    oh = p.ttft_overhead_ms / 1000.0
    assert np.array_equal(r.first_token_s, first + oh, equal_nan=True)
    assert np.array_equal(r.end_s, np.where(status == 0, end + oh, end), equal_nan=True)
    assert np.array_equal(r.aborted_first_s, started + oh, equal_nan=True)
    assert np.array_equal(r.status, status) and np.array_equal(r.kv_held, kv_held)
    assert np.array_equal(r.slot_held, slot_held)
    assert (r.peak_running, r.peak_kv_tokens, r.preemptions) == (peak_run, peak_kv, n_pre)
    # each case reaches the mechanism it names (else the comparison would not cover it)
    if p.kv_policy == "paged":
        assert r.preemptions > 0
    if p.request_timeout_s is not None:
        assert np.sum(r.status == 1) > 0
    if name.endswith("rejections"):
        assert np.sum(r.status == 2) == np.sum(i + o > 2800) > 0


def test_no_requests():
    r = simulate(CASES["reserve, slots and batch cap"], np.empty(0), np.empty(0), np.empty(0))
    assert r.first_token_s.size == 0 and r.peak_running == 0 and r.preemptions == 0
