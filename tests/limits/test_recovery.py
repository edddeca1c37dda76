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
    assert r.drops[0].from_step == 1 and r.drops[0].to_step == 2
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


# ---------------------------------------------------------------------------------------
# windows that scale with the step, and steps too short to tell


def test_a_40_s_step_that_recovered_at_once_is_not_censored():
    # every request of the overloaded step (100-200 s) takes 3 s; the 40 s lower step is clean
    r = t_recover(_run(bad_until=200.0, step2_len=40.0), _check, hold_s=30, rolling_s=10, tick_s=1)
    # the lower step runs 200-239.9 s (39.9 s): window and hold scale by 0.5 x 39.9 / 40 to
    # 4.9875 s and 14.96 s (15 ticks). The last bad completion is at 199.9 + 3 = 202.9 s; the
    # window (tau - 4.9875, tau] is clean from tau = 207.9, so the first clean tick is 208:
    # 8 s after the drop, held through 223 s (< 239.9)
    assert r.censored == "none"
    assert r.value_s == pytest.approx(8.0)
    assert r.drops[0].rolling_s == pytest.approx(10 * 0.5 * 39.9 / 40)
    assert "scaled to the 40 s step" in r.reason
    # the unscaled rule (10 s + 30 s on a 40 s step) could only have said "> 39.9 s (censored)"
    assert 202.9 + 10 + 30 > 239.9


def test_a_step_too_short_to_tell_says_so():
    r = t_recover(_run(bad_until=200.0, step2_len=10.0), _check, hold_s=30, rolling_s=10, tick_s=1)
    # 9.9 s: the scaled window 10 x 0.5 x 9.9 / 40 = 1.24 s < 2 s, too short
    assert r.value_s is None and r.censored == "too_short"
    assert "too short to tell" in r.reason and "at least 14 s" in r.reason


# ---------------------------------------------------------------------------------------
# recovery steps: requested load in time order, whatever the numbering


def _stepped(plan: list[tuple[int, float, float, float]], step_s: float = 100.0, rest_s: float = 0.0
             ) -> pl.DataFrame:
    """Steps run in the listed (time) order: (step number, requested load, sent rps, latency ms), ``rest_s`` apart."""
    parts, t = [], 0.0
    for step, requested, sent, lat in plan:
        start = t + np.arange(0.0, step_s, 1.0 / sent)
        parts.append(pl.DataFrame({
            "start_s": start, "end_s": start + lat / 1000, "latency_ms": np.full(start.size, lat),
            "status": "ok", "run_id": "r", "step": step, "offered_load": requested, "offered_load_unit": "rps",
        }))
        t += step_s + rest_s
    return pl.concat(parts)


def test_a_step_run_after_the_overload_is_a_recovery_step_whatever_its_number():
    from bearing_lib.limits.fit import fit_limits
    from tests.limits.synth import make_trace

    # numbered by load (as a loader may renumber), run in time as 2 rps, 8 rps (fails), 1 rps
    df = _stepped([(1, 2.0, 2.0, 100.0), (2, 8.0, 8.0, 3000.0), (0, 1.0, 1.0, 100.0)])
    r = fit_limits(make_trace(df), "p99(latency) <= 1s", mixes="none", n_boot=0)
    by = {s.step: s for s in r.mixes[0].steps}
    assert by[0].recovery_step and by[0].status == "excluded"
    assert not by[1].recovery_step and not by[2].recovery_step
    assert "run after step 2, which failed at a higher requested load (8 > 1)" in by[0].reasons[0]


def test_a_step_run_after_a_long_rest_is_no_recovery_step():
    """Vegeta's bloomz-7b series (a new user's case, round 21): the 2 rps attack ran 52 minutes after the 5 rps one
    failed, was left out as a recovery step, and the limit (1.42 rps) fell below a load that passed 120 of 120. A
    step that starts at least a step's length and a minute after the failing one ended is no recovery: here 100 s
    steps 3,000 s apart; 30 s apart, still a recovery step."""
    from bearing_lib.limits import judging
    from bearing_lib.limits.fit import fit_limits
    from tests.limits.synth import make_trace

    plan = [(1, 2.0, 2.0, 100.0), (2, 8.0, 8.0, 3000.0), (0, 1.0, 1.0, 100.0)]
    rested = {s.step: s for s in fit_limits(make_trace(_stepped(plan, rest_s=3000.0)), "p99(latency) <= 1s",
                                             mixes="none", n_boot=0).mixes[0].steps}
    assert not rested[0].recovery_step and rested[0].status != "excluded"
    assert judging.RECOVERY_REST_S == 60.0
    short = {s.step: s for s in fit_limits(make_trace(_stepped(plan, rest_s=30.0)), "p99(latency) <= 1s",
                                           mixes="none", n_boot=0).mixes[0].steps}
    assert short[0].recovery_step
    # review finding: a failing step of long requests (30 s each on 200 s steps) keeps only its middle 50 %, and the
    # window's length taken as the step's let the next step, run with no rest at all, pass as rested
    long_reqs = [(1, 2.0, 2.0, 100.0), (2, 8.0, 8.0, 30_000.0), (0, 1.0, 1.0, 100.0)]
    none = {s.step: s for s in fit_limits(make_trace(_stepped(long_reqs, step_s=200.0)), "p99(latency) <= 1s",
                                          mixes="none", n_boot=0).mixes[0].steps}
    assert none[0].recovery_step
    # the rest is measured from the failing step's last request end (t_done_s), against its length from first start
    # to last end: the 8 rps step of 30 s requests is sent over 99.875 s and ends 129.875 s after it began; the next
    # step starts rest − 29.875 s after that end, so it is rested from a rest of 159.75 s (by hand)
    for rest, recovery in ((120.0, True), (200.0, False)):
        steps = {s.step: s for s in fit_limits(make_trace(_stepped(long_reqs, rest_s=rest)), "p99(latency) <= 1s",
                                               mixes="none", n_boot=0).mixes[0].steps}
        assert steps[0].recovery_step is recovery, rest
    # failed requests carry their end but no latency (AIPerf): the end counts (review finding, round 22). The 8 rps
    # step's sends from +40 s fail at start + 30 s, so it still ends 129.875 s after it began: a rest of 120 s is
    # still no rest; counted at their starts it would end 99.875 s after and the next step would pass as rested
    df = _stepped(long_reqs, rest_s=120.0)
    t2 = df.filter(pl.col("step") == 2)["start_s"].min()
    late = (pl.col("step") == 2) & (pl.col("start_s") >= t2 + 40.0)
    df = df.with_columns(pl.when(late).then(pl.lit("error")).otherwise(pl.col("status")).alias("status"),
                         pl.when(late).then(None).otherwise(pl.col("latency_ms")).alias("latency_ms"))
    from bearing_lib.limits.curves import step_windows

    win = step_windows(make_trace(df)).filter(pl.col("step") == 2)
    assert win["t_done_s"][0] - win["t_first_s"][0] == pytest.approx(129.875)
    steps = {s.step: s for s in fit_limits(make_trace(df), "p99(latency) <= 1s", mixes="none",
                                           n_boot=0).mixes[0].steps}
    assert steps[0].recovery_step


def test_an_achieved_rate_dip_while_the_requested_load_rose_is_not_recovery():
    from bearing_lib.limits.fit import fit_limits
    from tests.limits.synth import make_trace

    # 5 rps passes; 10 rps fails; 12 rps requested but the generator sent only 9.9 rps
    # (achieved 1 % below the failing step's 10): the requested load rose, not a recovery step
    df = _stepped([(0, 5.0, 5.0, 100.0), (1, 10.0, 10.0, 3000.0), (2, 12.0, 9.9, 3000.0)])
    r = fit_limits(make_trace(df), "p99(latency) <= 1s", mixes="none", n_boot=0)
    by = {s.step: s for s in r.mixes[0].steps}
    assert not by[2].recovery_step and by[2].status == "fail"
