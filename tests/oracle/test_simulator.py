"""The oracle simulator against closed forms, a per-iteration reference, and Little's law."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.oracle.configs import MIXES, SERVERS
from tests.oracle.simulator import ServerConfig, poisson_arrivals, simulate, stepped_run

CFG = ServerConfig(
    name="t",
    max_num_seqs=4,
    kv_budget_tokens=10_000,
    max_batched_tokens=4096,
    prefill_base_ms=5.0,
    prefill_ms_per_token=0.1,
    decode_base_ms=10.0,
    decode_ms_per_seq=2.0,
    queue_timeout_s=5.0,
)


def _run(cfg, arr, inp, out, cached=None):
    cached = np.zeros(len(arr), dtype=np.int64) if cached is None else np.asarray(cached)
    return simulate(cfg, np.asarray(arr, float), np.asarray(inp), np.asarray(out), cached)


def test_single_request_closed_form():
    r = _run(CFG, [1.0], [1000], [11], [400])
    ttft = 0.005 + 0.0001 * 600  # base + per uncached token
    assert r["first_token_s"][0] == pytest.approx(1.0 + ttft)
    assert r["end_s"][0] == pytest.approx(1.0 + ttft + 10 * (0.010 + 0.002 * 1))
    assert r["status_code"][0] == 0


def test_two_requests_share_prefill_and_decode():
    r = _run(CFG, [0.0, 0.0], [100, 300], [3, 6])
    pf = 0.005 + 0.0001 * 400
    assert r["first_token_s"].tolist() == pytest.approx([pf, pf])
    d2, d1 = 0.010 + 0.004, 0.010 + 0.002
    assert r["end_s"][0] == pytest.approx(pf + 2 * d2)
    assert r["end_s"][1] == pytest.approx(pf + 2 * d2 + 3 * d1)


def test_kv_budget_blocks_admission_and_timeout():
    cfg = ServerConfig(**{**CFG.to_dict(), "kv_budget_tokens": 1500, "queue_timeout_s": 5.0})
    # first request reserves 1000+200 tokens; the second (500+100) must wait for it
    r = _run(cfg, [0.0, 0.01], [1000, 500], [200, 100])
    end0 = r["end_s"][0]
    assert r["first_token_s"][1] == pytest.approx(end0 + 0.005 + 0.05)
    assert end0 > 1.01  # the first request decodes for 199 x 12 ms
    # with a 1 s queue timeout the second request times out unserved
    cfg2 = ServerConfig(**{**cfg.to_dict(), "queue_timeout_s": 1.0})
    r2 = _run(cfg2, [0.0, 0.01], [1000, 500], [200, 100])
    assert r2["status_code"].tolist() == [0, 1]
    assert r2["end_s"][1] == pytest.approx(1.01)
    assert math.isnan(r2["first_token_s"][1])


def test_oversized_request_rejected():
    r = _run(CFG, [0.0], [9_990], [20])
    assert r["status_code"][0] == 2


def _reference(cfg: ServerConfig, arr, inp, out, cached):
    """Per-iteration reference implementation (no event jumping), written independently."""
    n = len(arr)
    first = [math.nan] * n
    end = [math.nan] * n
    status = [0] * n
    waiting: list[int] = []
    running: dict[int, int] = {}  # index -> tokens still to decode
    t, nxt, kv = 0.0, 0, 0
    while nxt < n or waiting or running:
        while nxt < n and arr[nxt] <= t:
            waiting.append(nxt)
            nxt += 1
        batch, btok = [], 0
        while waiting and len(running) + len(batch) < cfg.max_num_seqs:
            j = waiting[0]
            if t - arr[j] > cfg.queue_timeout_s:
                waiting.pop(0)
                status[j], end[j] = 1, arr[j] + cfg.queue_timeout_s
                continue
            if kv + inp[j] + out[j] > cfg.kv_budget_tokens or (
                batch and btok + inp[j] - cached[j] > cfg.max_batched_tokens
            ):
                break
            waiting.pop(0)
            batch.append(j)
            btok += inp[j] - cached[j]
            kv += inp[j] + out[j]
        if batch:
            t += (cfg.prefill_base_ms + cfg.prefill_ms_per_token * btok) / 1000
            for j in batch:
                first[j] = t
                running[j] = out[j] - 1
            for j in [j for j in batch if running[j] == 0]:
                end[j] = t
                kv -= inp[j] + out[j]
                del running[j]
            continue
        if not running:
            if nxt < n:  # else the last waiting requests just timed out: the loop ends
                t = arr[nxt]
            continue
        t += (cfg.decode_base_ms + cfg.decode_ms_per_seq * len(running)) / 1000
        for j in list(running):
            running[j] -= 1
            if running[j] == 0:
                end[j] = t
                kv -= inp[j] + out[j]
                del running[j]
    return np.array(first), np.array(end), np.array(status)


@pytest.mark.parametrize("rate", [3.0, 12.0, 40.0])
def test_event_jumping_matches_per_iteration_reference(rate):
    rng = np.random.default_rng(7)
    arr = poisson_arrivals(rng, rate, 0.0, 40.0)
    inp = rng.integers(50, 2000, arr.size)
    out = rng.integers(1, 120, arr.size)
    cached = (rng.random(arr.size) < 0.5) * (inp // 2)
    got = _run(CFG, arr, inp, out, cached)
    f, e, s = _reference(CFG, arr.tolist(), inp.tolist(), out.tolist(), cached.tolist())
    assert np.array_equal(got["status_code"], s)
    np.testing.assert_allclose(got["end_s"], e, rtol=0, atol=1e-9)
    np.testing.assert_allclose(got["first_token_s"], f, rtol=0, atol=1e-9, equal_nan=True)
    if rate == 40.0:
        assert (s == 1).sum() > 0  # the overload case really exercises timeouts


@pytest.mark.parametrize("server,mix,rate", [("small", "chat", 10.0), ("kv_starved", "rag", 4.0)])
def test_littles_law(server, mix, rate):
    """Time-average number in system (sampled every 0.5 s) = arrival rate x mean time in system."""
    rng = np.random.default_rng(11)
    arr = poisson_arrivals(rng, rate, 0.0, 2400.0)
    inp, out, cached = MIXES[mix].draw(rng, arr.size)
    res = simulate(SERVERS[server], arr, inp, out, cached)
    a, b = 300.0, 2100.0
    grid = np.arange(a, b, 0.5)
    in_system = np.searchsorted(np.sort(arr), grid, side="right") - np.searchsorted(
        np.sort(res["end_s"]), grid, side="right"
    )
    L = in_system.mean()
    sel = (arr >= a) & (arr < b)
    lam = sel.sum() / (b - a)
    W = (res["end_s"] - arr)[sel].mean()
    assert L == pytest.approx(lam * W, rel=0.03)
    assert L > 5  # a busy server, not a trivial check


def test_stepped_run_canonical_rows():
    df = stepped_run(SERVERS["small"], MIXES["chat"], [2.0, 4.0], 30.0, seed=3, run_id="r1")
    assert set(df["step"].unique().to_list()) == {0, 1}
    assert df.filter(pl.col("step") == 1)["start_s"].min() >= 30.0
    ok = df.filter(pl.col("status") == "ok")
    # latency = ttft + (out-1) x tpot, and end = start + latency, for every ok request
    np.testing.assert_allclose(
        ok["latency_ms"].to_numpy(),
        (ok["end_s"] - ok["start_s"]).to_numpy() * 1000,
        rtol=1e-9,
    )
    multi = ok.filter(pl.col("output_tokens") > 1)
    np.testing.assert_allclose(
        multi["latency_ms"].to_numpy(),
        (multi["ttft_ms"] + multi["tpot_ms"] * (multi["output_tokens"] - 1)).to_numpy(),
        rtol=1e-9,
    )
    assert df["offered_load_unit"].unique().to_list() == ["rps"]


@settings(max_examples=40, deadline=None)
@given(
    slots=st.integers(1, 6),
    kv=st.integers(300, 5000),
    max_bt=st.integers(50, 3000),
    timeout=st.floats(0.2, 5.0),
    rate=st.floats(0.5, 60.0),
    seed=st.integers(0, 10_000),
)
def test_event_jumping_equals_reference_for_any_config(slots, kv, max_bt, timeout, rate, seed):
    """Property: for any server configuration the event-jumping simulator and the
    per-iteration reference produce the same first-token and end times and statuses."""
    cfg = ServerConfig(
        name="h",
        max_num_seqs=slots,
        kv_budget_tokens=kv,
        max_batched_tokens=max_bt,
        prefill_base_ms=2.0,
        prefill_ms_per_token=0.05,
        decode_base_ms=5.0,
        decode_ms_per_seq=1.5,
        queue_timeout_s=timeout,
    )
    rng = np.random.default_rng(seed)
    arr = poisson_arrivals(rng, rate, 0.0, 8.0)
    inp = rng.integers(1, 400, arr.size)
    out = rng.integers(1, 60, arr.size)
    cached = (rng.random(arr.size) < 0.3) * (inp // 2)
    got = _run(cfg, arr, inp, out, cached)
    # the reference has no rejection path: give it only requests that fit the budget
    fits = inp + out <= kv
    assert np.all(got["status_code"][~fits] == 2)
    f, e, s = _reference(cfg, arr[fits].tolist(), inp[fits].tolist(), out[fits].tolist(), cached[fits].tolist())
    assert np.array_equal(got["status_code"][fits], s)
    np.testing.assert_allclose(got["end_s"][fits], e, rtol=0, atol=1e-9)
    np.testing.assert_allclose(got["first_token_s"][fits], f, rtol=0, atol=1e-9, equal_nan=True)
