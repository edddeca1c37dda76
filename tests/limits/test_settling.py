"""Steady state on the whole step (``bearing_lib.limits.settling``).

Expected numbers come from the raw LMBenchmark CSVs read with polars (no bearing code), from scipy on
hand-made series, and from SYNTHETIC M/M/1 runs whose true SLA limit is known in closed form.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
import statsmodels.api as sm
from scipy import stats

from bearing_lib import load
from bearing_lib.data.mixes import MixSpec
from bearing_lib.limits.fit import fit_limits
from bearing_lib.limits.settling import LATE_FRACTION, TREND_BINS, settling_by_step
from bearing_lib.limits.sla import parse_sla
from tests.limits.settling_rates import rates
from tests.limits.synth import make_trace

SHAREGPT = Path(__file__).resolve().parents[2] / "data/loadtests/lmbenchmark-llm-d-exp2/vllm-70b-2replicas"


def _raw_step(qps: str) -> dict[str, float]:
    """The raw file's whole-step facts: P90 TTFT (ms) of the last quarter (by launch time), its size, the
    Mann–Kendall p of the 12 equal-time bin medians."""
    df = pl.read_csv(SHAREGPT / f"LMBench_sharegpt_output_{qps}.csv").sort("launch_time")
    t0, t1 = df["launch_time"].min(), df["launch_time"].max()
    late = df.filter(pl.col("launch_time") >= t1 - LATE_FRACTION * (t1 - t0))
    b = np.minimum(np.floor((df["launch_time"].to_numpy() - t0) / (t1 - t0) * TREND_BINS), TREND_BINS - 1)
    ttft = df["ttft"].to_numpy() * 1000
    med = [np.median(ttft[b == k]) for k in range(TREND_BINS) if (b == k).sum() >= 2]
    t = df["launch_time"].to_numpy()
    x = sm.add_constant(np.column_stack([np.log(df["prompt_tokens"].to_numpy()), (t - t0) / (t1 - t0)]))
    fit = sm.OLS(np.log(ttft), x).fit(cov_type="HAC", cov_kwds={"maxlags": int(len(t) ** (1 / 3)) + 1})
    return {"late_p90": float(np.quantile(late["ttft"].to_numpy() * 1000, 0.9)), "late_n": late.height,
            "content_z": float(fit.tvalues[2]),
            "p": float(stats.kendalltau(np.arange(len(med)), med, alternative="greater").pvalue),
            "late_bad": int((late["ttft"] > 1.0).sum())}


@pytest.fixture(scope="module")
def sharegpt():
    trace = load(str(SHAREGPT))
    return trace, fit_limits(trace, "p90(ttft) <= 1s", mixes="none", n_boot=200)


def test_raw_last_quarter_breaks_while_steady_window_passes():
    """The issue's fact, from the raw file: at 2.5 rps the last quarter's P90 TTFT is 3.64 s."""
    raw = _raw_step("2.5")
    assert raw["late_n"] == 63
    assert raw["late_p90"] == pytest.approx(3639.84, abs=0.5)
    assert raw["p"] < 0.01


def test_sharegpt_step_judged_on_its_late_part(sharegpt):
    _, res = sharegpt
    lim = next(m for m in res.mixes if m.run_id.endswith("sharegpt"))
    steps = {st.offered_load: st for st in lim.steps}
    s25 = steps[2.5]
    raw = _raw_step("2.5")
    # a queue still rising through the step is no measurement of a sustained load: it cannot pass, and as its
    # steady window passes it is no measured failure either: undetermined
    assert s25.status == "undetermined" and "unsettled" in s25.flags
    assert s25.reasons[0].startswith("not settled") and s25.reasons[0].endswith("undetermined")
    late = s25.settling.clauses[0]
    assert late.value == pytest.approx(raw["late_p90"], rel=1e-9)
    assert (late.bad, late.of) == (raw["late_bad"], raw["late_n"])
    assert s25.settling.p_value == pytest.approx(raw["p"], rel=1e-9)
    # given the prompt lengths (they grow through every step), the rise is still there: HAC z = 5.5
    assert s25.settling.content_z == pytest.approx(raw["content_z"], rel=1e-6) and raw["content_z"] > 5
    # the steady window alone still passes it: the rule, not the window, fails the step
    assert s25.margins["p90(ttft) <= 1s"] > 0
    # 2 rps rises too, but with the content: longer multi-round prompts late in every step (given the prompt
    # lengths, HAC z = 1.57 < 2.33), and its last quarter holds anyway: a pass
    raw2 = _raw_step("2")
    assert raw2["p"] < 0.01 and raw2["late_p90"] < 1000 and raw2["content_z"] < 2.33
    assert steps[2.0].status == "pass" and "unsettled" not in steps[2.0].flags
    assert steps[2.0].settling.rising is False
    assert steps[2.0].settling.content_z == pytest.approx(raw2["content_z"], rel=1e-6)
    # the limit lies in the raw bracket [2, 2.5] (raw P90 TTFT over all requests: 623 ms at 2, 1605 ms at 2.5),
    # bound by the steady-state pseudo-clause; the bracket reaches the first judged failure, 3 rps (its steady
    # window's P90 already breaks 1 s), since the limit may lie above a step that only kept rising
    s3 = steps[3.0]
    assert s3.status == "fail" and s3.margins["p90(ttft) <= 1s"] < 0
    assert tuple(lim.q_ult.bracket) == (2.0, 3.0) and lim.binding.startswith("steady state")
    # the model (the default): a value in the raw bracket, its interval within the steps around it
    q = lim.q_ult
    assert 2.0 <= q.value <= 2.5 and 1.5 < q.ci95[0] < 2.0 and 2.5 < q.ci95[1] < 3.0 and q.resolution.coarse
    # the pooled estimator: the pseudo-clause's midpoint below the unsettled step, the interval the step grid's
    pooled = next(m for m in fit_limits(sharegpt[0], "p90(ttft) <= 1s", mixes="none", n_boot=200,
                                        estimator="pooled").mixes if m.run_id.endswith("sharegpt"))
    assert pooled.q_ult.value == pytest.approx(2.25)
    assert tuple(pooled.q_ult.ci95) == (1.5, 3.0) and pooled.q_ult.resolution.coarse


def _trace(per_step: list[list[tuple[float, float]]]) -> object:
    rows = []
    for k, reqs in enumerate(per_step):
        for i, (t, ttft) in enumerate(reqs):
            rows.append({"request_id": f"{k}-{i}", "start_s": 1000.0 * k + t, "end_s": 1000.0 * k + t + 1.0,
                         "latency_ms": 1000.0, "ttft_ms": ttft, "status": "ok", "run_id": "run", "step": k,
                         "offered_load": float(k + 1), "offered_load_unit": "rps"})
    return make_trace(pl.DataFrame(rows))


def test_trend_and_late_part_by_hand():
    """A step whose TTFT rises linearly over 120 s: the bins' medians rise (τ = 1); its last 30 s hold 30 of the
    120 requests, all above 100 ms; a flat step is not rising."""
    rising = [(float(t), 10.0 + t) for t in range(120)]
    flat = [(float(t), 50.0 + (t % 7)) for t in range(120)]
    res = settling_by_step(_trace([rising, flat]), MixSpec.single(), parse_sla("p90(ttft) <= 100ms"),
                           "ttft_ms").of("run", "all")
    r, f = res[0], res[1]
    exp = stats.kendalltau(np.arange(12), np.arange(12), alternative="greater").pvalue
    assert r.tau == pytest.approx(1.0) and r.p_value == pytest.approx(exp) and r.rising
    late = [t for t in range(120) if t >= 119 - 0.25 * 119]
    assert r.late_n == len(late)
    c = r.clauses[0]
    assert (c.bad, c.of) == (sum(10 + t > 100 for t in late), len(late))
    assert c.p_value == pytest.approx(stats.binomtest(c.bad, c.of, 0.1, alternative="greater").pvalue)
    assert r.unsettled() and not f.rising and not f.unsettled()


def test_tiny_steps_do_not_crash():
    """Steps of 1 and 2 requests (and one whose requests share a start) have no trend test."""
    res = settling_by_step(_trace([[(0.0, 5.0)], [(0.0, 5.0), (1.0, 500.0)], [(3.0, 5.0), (3.0, 6.0)]]),
                           MixSpec.single(), parse_sla("p90(ttft) <= 100ms"), "ttft_ms")
    got = res.of("run", "all") or {}
    assert all(not st.rising and st.p_value is None for st in got.values())


def test_false_alarms_on_steady_mm1_below_the_limit():
    """SYNTHETIC M/M/1 (μ = 10/s) stepped runs of 120 s at 0.5–0.95× the true limit of p90(latency) <= 1s
    (7.70 rps): the rule calls at most 1 % of them unsettled (measured: 0.1 % of 1,000 steps, docs/limits.md);
    at 1.5× (ρ = 1.15) the queue grows without bound and it fires in ≥ 90 % of runs."""
    res = rates("p90(latency) <= 1s", range(40))
    below = [o for f, o in res.items() if f < 1]
    assert sum(o["runs"] for o in below) == 200
    assert sum(o["unsettled"] for o in below) <= 2
    assert res[1.5]["unsettled"] >= 36
