"""T_recover on a constructed run whose recovery time follows by hand, and on the oracle."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from bearing_lib.limits.recovery import t_recover
from tests.oracle.configs import MIXES, SERVERS
from tests.oracle.simulator import stepped_run


def _run(bad_until: float, step2_len: float = 100.0) -> pl.DataFrame:
    """Steps 0 (load 10, 0-100 s), 1 (load 20, 100-200 s), 2 (load 10, 200-200+len s).

    A request every 0.1 s. Latency 3 s for starts in [100, bad_until), else 0.1 s.
    """
    start = np.arange(0.0, 200.0 + step2_len, 0.1)
    step = np.where(start < 100, 0, np.where(start < 200, 1, 2))
    lat_ms = np.where((start >= 100) & (start < bad_until), 3000.0, 100.0)
    return pl.DataFrame(
        {
            "run_id": "r",
            "step": step,
            "offered_load": np.where(step == 1, 20.0, 10.0),
            "start_s": start,
            "end_s": start + lat_ms / 1000,
            "latency_ms": lat_ms,
        }
    )


def _check(frame: pl.DataFrame) -> bool:
    return frame.height > 0 and frame["latency_ms"].max() <= 1000


def test_recovery_time_by_hand():
    r = t_recover(_run(bad_until=212.0), _check, hold_s=30, rolling_s=10, tick_s=1)
    # last bad request starts at 211.9 and ends at 214.9; a completion window (tau-10, tau]
    # is clean from tau = 224.9, so the first tick is 225: 25 s after the drop at 200
    assert r.value_s == pytest.approx(25.0)
    assert r.censored == "none"
    assert r.drops[0]["from_step"] == 1 and r.drops[0]["to_step"] == 2
    # the overloaded step was found by the check itself (default) and by the caller
    r2 = t_recover(_run(bad_until=212.0), _check, overloaded_steps=[1])
    assert r2.value_s == r.value_s


def test_not_recovered_is_censored():
    r = t_recover(_run(bad_until=280.0, step2_len=100.0), _check, hold_s=30, rolling_s=10)
    # bad completions until 282.9 -> clean window from 293; 293 + 30 > 299.9 (last start)
    assert r.censored == "above"
    assert r.value_s == pytest.approx(99.9, abs=0.01)
    assert "T_recover >" in r.reason


def test_no_drop_and_no_times():
    up = _run(bad_until=150.0).filter(pl.col("step") < 2)
    r = t_recover(up, _check)
    assert r.value_s is None and "no drop" in r.reason
    no_t = _run(bad_until=150.0).with_columns(pl.lit(None, dtype=pl.Float64).alias("start_s"))
    r = t_recover(no_t, _check)
    assert r.value_s is None and "no per-request times" in r.reason


def test_oracle_overload_then_relief():
    """On the simulator: after 90 s at 1.5x the limit, dropping to 0.5x recovers, and the
    recovery takes at least as long as the backlog needs to drain."""
    cfg, mix = SERVERS["small"], MIXES["chat"]
    df = stepped_run(cfg, mix, [6.0, 18.0, 6.0], 90.0, seed=4, run_id="r")

    def p99_ttft_ok(frame: pl.DataFrame) -> bool:
        ok = frame.filter(pl.col("status") == "ok")
        if ok.height < 20 or (frame["status"] != "ok").mean() > 0.005:
            return False
        return float(np.quantile(ok["ttft_ms"].to_numpy(), 0.99, method="linear")) <= 1000

    r = t_recover(df, p99_ttft_ok, hold_s=15, rolling_s=10)
    assert r.censored == "none" and r.value_s is not None
    # independent lower bound: the last request of the overloaded step to get its first
    # token had TTFT above the SLA; its completion is visible to the monitor only then
    late = df.filter((pl.col("step") == 1) & (pl.col("ttft_ms") > 1000))
    t_drop = df.filter(pl.col("step") == 2)["start_s"].min()
    first_tok_last = (late["start_s"] + late["ttft_ms"] / 1000).max()
    assert r.value_s >= first_tok_last - t_drop - 1.0
    assert r.value_s < 90.0
