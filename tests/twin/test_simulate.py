"""The twin's simulation against closed forms and against the oracle's independent simulator."""

from __future__ import annotations

import numpy as np
import pytest

from bearing_lib.twin.simulate import OK, REJECTED, TIMEOUT, ServerParams, simulate


def _p(**kw) -> ServerParams:
    base = dict(prefill_base_ms=4.0, prefill_ms_per_token=0.01, decode_base_ms=10.0, decode_ms_per_seq=1.0)
    base.update(kw)
    return ServerParams(**base)


def test_single_request_closed_form():
    # prefill 4 + 0.01*1000 = 14 ms; then 4 decode iterations of 10 + 1*1 = 11 ms
    r = simulate(_p(), np.array([2.0]), np.array([1000]), np.array([5]))
    assert r.first_token_s[0] == pytest.approx(2.014, abs=1e-12)
    assert r.end_s[0] == pytest.approx(2.014 + 4 * 0.011, abs=1e-12)
    assert r.status[0] == OK


def test_cached_tokens_are_not_prefilled():
    r = simulate(_p(), np.array([0.0]), np.array([1000]), np.array([1]), np.array([600]))
    assert r.first_token_s[0] == pytest.approx(0.004 + 0.01 * 400 / 1000, abs=1e-12)
    assert r.end_s[0] == r.first_token_s[0]  # one output token: done at the first


def test_two_requests_share_decode_iterations():
    # both arrive at 0: prefilled together (4 + 0.01*300 = 7 ms), then decode at n=2 (12 ms) until the
    # short one ends (2 iterations), then n=1 (11 ms)
    r = simulate(_p(), np.array([0.0, 0.0]), np.array([100, 200]), np.array([3, 5]))
    assert r.first_token_s == pytest.approx([0.007, 0.007], abs=1e-12)
    assert r.end_s[0] == pytest.approx(0.007 + 2 * 0.012, abs=1e-12)
    assert r.end_s[1] == pytest.approx(0.007 + 2 * 0.012 + 2 * 0.011, abs=1e-12)


def test_one_slot_is_a_fifo_queue_lindley():
    rng = np.random.default_rng(3)
    a = np.sort(rng.uniform(0, 100, 200))
    o = rng.integers(2, 50, a.size)
    p = _p(max_num_seqs=1, decode_ms_per_seq=0.0)
    r = simulate(p, a, np.full(a.size, 100), o)
    free = -np.inf
    for i in range(a.size):  # Lindley: service starts when the previous request has left
        start = max(a[i], free)
        first = start + 0.005
        free = first + (o[i] - 1) * 0.010
        assert r.first_token_s[i] == pytest.approx(first, abs=1e-9)
        assert r.end_s[i] == pytest.approx(free, abs=1e-9)


def test_kv_budget_blocks_and_rejects():
    p = _p(kv_budget_tokens=1000)
    # 600+10 fits; the second (500+10) waits for the first to leave; the third can never fit
    r = simulate(p, np.array([0.0, 0.0, 0.0]), np.array([600, 500, 2000]), np.array([10, 10, 10]))
    assert r.status.tolist() == [OK, OK, REJECTED]
    assert r.first_token_s[1] >= r.end_s[0]
    assert r.kv_held[1]


def test_queue_timeout():
    p = _p(max_num_seqs=1, decode_ms_per_seq=0.0, queue_timeout_s=0.5)
    # the first holds the slot for 999 * 10 ms; the second gives up after 0.5 s
    r = simulate(p, np.array([0.0, 0.1]), np.array([10, 10]), np.array([1000, 5]))
    assert r.status.tolist() == [OK, TIMEOUT]
    assert r.end_s[1] == pytest.approx(0.6)
    assert np.isnan(r.first_token_s[1])


@pytest.mark.parametrize("rate", [3.0, 14.0, 40.0])
@pytest.mark.parametrize("server", ["small", "kv_starved"])
def test_same_answers_as_the_independent_oracle_simulator(server, rate):
    """The oracle's simulator (tests/oracle, separate code) implements the same documented model."""
    from tests.oracle.configs import MIXES, SERVERS
    from tests.oracle.simulator import poisson_arrivals
    from tests.oracle.simulator import simulate as oracle_simulate

    cfg = SERVERS[server]
    rng = np.random.default_rng(int(rate))
    a = poisson_arrivals(rng, rate, 0.0, 300.0)
    mix = MIXES["rag" if server == "kv_starved" else "chat"]
    inp, out, cached = mix.draw(rng, a.size)
    ref = oracle_simulate(cfg, a, inp, out, cached)
    p = ServerParams(cfg.prefill_base_ms, cfg.prefill_ms_per_token, cfg.decode_base_ms, cfg.decode_ms_per_seq,
                     cfg.max_num_seqs, cfg.kv_budget_tokens, cfg.max_batched_tokens, cfg.queue_timeout_s)
    got = simulate(p, a, inp, out, cached)
    assert (got.status == ref["status_code"]).all()
    np.testing.assert_allclose(got.end_s, ref["end_s"], atol=1e-6)
    ok = got.status == OK
    np.testing.assert_allclose(got.first_token_s[ok], ref["first_token_s"][ok], atol=1e-6)


def test_unsorted_arrivals_refused():
    with pytest.raises(ValueError, match="sorted"):
        simulate(_p(), np.array([1.0, 0.0]), np.array([1, 1]), np.array([2, 2]))
