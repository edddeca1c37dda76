"""The limit search's pieces: the simulated window at a rate, and the steady frame the SLA judges."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from bearing_lib.limits.sla import parse_sla
from bearing_lib.twin.search import SearchOptions, steady_frame
from bearing_lib.twin.simulate import ServerParams, simulate


def test_the_default_window_is_fixed_in_seconds():
    opt = SearchOptions()
    assert opt.window(19.0) == (300.0, 1200.0)  # 22,800 steady requests at 19 rps, as before
    assert opt.window(1.7) == pytest.approx((300.0, 3000 / 1.7))  # at least 3,000 steady requests


def test_the_opt_in_window_held_by_requests():
    opt = SearchOptions(max_requests=6000, warmup_requests=1500)
    warm, dur = opt.window(19.0)
    assert warm == pytest.approx(1500 / 19.0) and dur == pytest.approx(6000 / 19.0)
    assert opt.window(92.0) == pytest.approx((60.0, 6000 / 92.0))  # the warm-up floor of 60 s
    assert opt.window(1.7) == pytest.approx((300.0, 3000 / 1.7))  # low rates: the seconds bind, as by default


def _by_hand(a, o, r, keep) -> pl.DataFrame:
    """The steady requests written row by row from the replay's arrays, without the twin's code."""
    rows = []
    for k in np.flatnonzero(keep):
        ok = r.status[k] == 0
        tpot = (r.end_s[k] - r.first_token_s[k]) * 1000.0 / (o[k] - 1) if ok and o[k] > 1 else None
        rows.append({"ttft_ms": (r.first_token_s[k] - a[k]) * 1000.0 if ok else None,
                     "latency_ms": (r.end_s[k] - a[k]) * 1000.0, "tpot_ms": tpot, "itl_ms": tpot,
                     "status": {0: "ok", 1: "timeout", 2: "rejected"}[int(r.status[k])]})
    return pl.DataFrame(rows, schema={"ttft_ms": pl.Float64, "latency_ms": pl.Float64, "tpot_ms": pl.Float64,
                                      "itl_ms": pl.Float64, "status": pl.String})


@pytest.mark.parametrize("rate", [0.5, 3.0])
def test_the_steady_frame_gives_the_margins_of_the_rows_written_by_hand(rate):
    p = ServerParams(30, 0.05, 47, 0.5, max_num_seqs=53, kv_budget_tokens=2800, kv_policy="paged",
                     request_timeout_s=20, queue_timeout_s=5, decode_ms_per_kctx=0.7)
    rng = np.random.default_rng(1)
    n = 800
    a = np.cumsum(rng.exponential(1 / rate, n))
    i = rng.integers(50, 2600, n).astype(float)
    o = rng.integers(1, 600, n).astype(float)
    r = simulate(p, a, i, o)
    assert set(np.unique(r.status)) == {0, 1, 2}  # every outcome is in the frame
    keep = a > 30.0
    hand = _by_hand(a, o, r, keep)
    for text in ("p99(ttft) <= 2s", "p95(latency) <= 10s and error_rate <= 5%", "p50(tpot) <= 60ms",
                 "goodput(ttft<=500ms, tpot<=50ms) >= 95%", "p90(itl) <= 70ms and p99(e2e) <= 30s"):
        sla = parse_sla(text)
        fr = steady_frame(a, o, r, keep, tuple(sla.metrics()))
        assert fr.columns == [*sla.metrics(), "status"]
        assert sla.margin(fr) == pytest.approx(sla.margin(hand), rel=1e-12, abs=1e-12), text


def test_a_column_the_twin_does_not_give_is_refused():
    r = simulate(ServerParams(5, 0.01, 10, 0), np.array([0.0]), np.array([100.0]), np.array([3.0]))
    with pytest.raises(ValueError, match="no 'queue_ms'"):
        steady_frame(np.array([0.0]), np.array([3.0]), r, np.array([True]), ("queue_ms",))
