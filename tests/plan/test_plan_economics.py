"""The plan's economics section (plan/economics.py ``plan_economics``, hooked into ``CapacityPlan.build``)
and the KV check from server metrics (plan/memory.py ``kv_metrics_check``): every figure worked out here.

The hand-made plan (tests/fixtures/plan, see test_plan.py): blended Q_ult 8 req/s, design FOS 1.5
(standard tier) -> allowable 5.333 req/s on one tested instance; target 4 req/s; 1 base + 1 elastic
buffer instance; bursts 2 a month of 2 minutes. The profile is given mean tokens 1,000 in / 250 out.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

from bearing_lib.cli.main import app
from bearing_lib.common.errors import ParameterError
from bearing_lib.common.schema import NotAvailable
from bearing_lib.data.servermetrics import ServerMetrics, conform_metrics
from bearing_lib.plan.capacity import InstancePlan
from bearing_lib.plan.capacity_plan import CapacityPlan
from bearing_lib.plan.economics import WEEK_S, Money, plan_economics, weekly_peaks
from bearing_lib.plan.fos import get_tier
from bearing_lib.plan.inputs import profile_input_from_dict
from bearing_lib.plan.memory import KvMetricsCheck, kv_metrics_check
from bearing_lib.servers.kv_check import kv_gauge
from tests.factories import provenance

DATA = Path(__file__).resolve().parents[1] / "fixtures" / "plan"
LIMITS = json.loads((DATA / "limits_handmade.json").read_text())


def _profile() -> dict:
    p = json.loads((DATA / "profile_handmade.json").read_text())
    p["seq_len"].update(input_tokens={"mean": 1000.0}, output_tokens={"mean": 250.0})
    return p


def _plan(**kw) -> dict:
    return CapacityPlan.build(json.loads(json.dumps(LIMITS)), _profile(), **kw).to_dict()


def test_tokens_and_money_by_hand():
    d = _plan(price_per_hour=4.0, budget_per_month=5000)
    e = d["economics"]
    t = e["tokens"]
    # blended Q_ult 8 req/s x 1,000 / 250 tokens; allowable 8 / 1.5
    point = {k: v for k, v in t["at_q_ult"].items() if not k.endswith("_ci95")}
    assert point == pytest.approx({"rps": 8.0, "input_tokens_per_s": 8000.0, "output_tokens_per_s": 2000.0,
                                   "total_tokens_per_s": 10000.0})
    # the limit's CI carried: the blended limit's CI x the tokens per request
    qb = d["fos"]["blended"]["q_blend_ci95"]
    assert t["at_q_ult"]["rps_ci95"] == qb
    assert t["at_q_ult"]["total_tokens_per_s_ci95"] == pytest.approx([qb[0] * 1250, qb[1] * 1250])
    assert t["at_allowable"]["output_tokens_per_s_ci95"] == pytest.approx([qb[0] / 1.5 * 250, qb[1] / 1.5 * 250])
    assert t["at_allowable"]["output_tokens_per_s"] == pytest.approx(8 / 1.5 * 250)
    assert t["at_allowable"]["total_tokens_per_s"] == pytest.approx(8 / 1.5 * 1250)
    per = {m["mix"]: m for m in t["per_mix"]}
    # short: Q_ult 12 req/s -> 12,000 in, 3,000 out; allowable 12 / 1.5 = 8 req/s -> 10,000 total
    assert per["short"]["q_ult"]["input_tokens_per_s"] == pytest.approx(12000.0)
    assert per["short"]["allowable"]["total_tokens_per_s"] == pytest.approx(10000.0)
    # short's limit CI: concurrency [7, 9] x 12 req/s / 8 = [10.5, 13.5] req/s -> [10,500, 13,500] input tok/s;
    # allowable [7, 9] req/s -> [8,750, 11,250] total tok/s
    assert per["short"]["q_ult"]["input_tokens_per_s_ci95"] == pytest.approx([10500.0, 13500.0])
    assert per["short"]["allowable"]["total_tokens_per_s_ci95"] == pytest.approx([8750.0, 11250.0])
    assert "open_reason" not in t  # both limits' CIs are closed
    assert per["long"]["q_ult"]["output_tokens_per_s"] == pytest.approx(4 * 250.0)
    assert "each mix uses the overall means" in t["per_mix_basis"]
    m = e["money"]
    # $4/h / (5.333 req/s x 250 tokens x 3,600 s) x 10^6 = $0.8333 per 1M output tokens
    assert m["usd_per_million_output_tokens"] == pytest.approx(4 / (8 / 1.5 * 250 * 3600) * 1e6)
    assert m["usd_per_million_output_tokens"] == pytest.approx(0.83333, rel=1e-4)
    # base 1 x $4 x 730 h = $2,920; elastic buffer 1 x $4 x 2 bursts x 2/60 h = $0.2667
    assert m["monthly_cost_base"] == pytest.approx(2920.0)
    assert m["monthly_cost_burst_buffer"] == pytest.approx(4 * 2 * 2 / 60)
    assert m["monthly_cost_recommended"] == pytest.approx(2920 + 4 * 2 * 2 / 60)
    assert m["monthly_cost_all_instances_always_on"] == pytest.approx(2 * 4 * 730)
    # $ per 1M output tokens over the limit's CI: price / (allowable end x 250 x 3,600) x 10^6, ends swapped
    a_lo, a_hi = qb[0] / 1.5, qb[1] / 1.5
    assert m["usd_per_million_output_tokens_ci95"] == pytest.approx(
        [4 / (a_hi * 250 * 3600) * 1e6, 4 / (a_lo * 250 * 3600) * 1e6])
    n_lo, n_hi = d["instances"]["total_ci95"]
    assert m["monthly_cost_all_instances_always_on_ci95"] == pytest.approx([n_lo * 4 * 730, n_hi * 4 * 730])
    # the instance count over the limit's CI: ceil(4 / (q_hi / 1.5)) .. ceil(4 / (q_lo / 1.5)) (+ the buffer)
    assert d["instances"]["base_ci95"] == [math.ceil(4 / a_hi - 1e-9), math.ceil(4 / a_lo - 1e-9)]
    # 2,920.27 / 5,000 = 58 % <= 80 % -> green, and it is the scorecard's budget row
    row = next(r for r in d["scorecards"]["scorecard"] if r["dimension"] == "budget")
    assert row["status"] == "green" and row["value"] == pytest.approx((2920 + 16 / 60) / 5000)
    assert m["budget_row"] == row
    # near term: ceil(4 x 1.5 / 5.333) = ceil(1.125) = 2 instances
    s = e["staged"]
    assert s["near_term"]["instances"] == 2 and s["near_term"]["rps"] == pytest.approx(6.0)
    assert s["near_term"]["instances_ci95"] == [math.ceil(6 / a_hi - 1e-9), math.ceil(6 / a_lo - 1e-9)]
    assert s["mid_term"] is None and "0 complete week(s)" in s["mid_term_reason"]
    assert e["kv_metrics_check"] == {"available": False, "reason": "no server metrics given: the KV estimate is "
                                                                   "not checked against the engine's gauge"}
    json.dumps(d, allow_nan=False)


@pytest.mark.parametrize(("budget", "status"), [(3000.0, "yellow"), (2900.0, "red")])
def test_budget_tight_or_over(budget, status):
    # 2,920.27 / 3,000 = 97 %: fits with < 20 % headroom; / 2,900 > 100 %
    row = _plan(price_per_hour=4.0, budget_per_month=budget)["economics"]["money"]["budget_row"]
    assert row["status"] == status


def test_without_price_or_tokens_each_part_says_why():
    d = _plan()
    assert d["economics"]["money"]["available"] is False
    assert "--price-per-hour" in d["economics"]["money"]["reason"]
    assert next(r for r in d["scorecards"]["scorecard"] if r["dimension"] == "budget")["status"] == "not assessed"
    p = _profile()
    p["seq_len"] = {"n": 1000, "mean": 1500, "p50": 1200, "p99": 6000, "max": 12000}  # no token split
    d = CapacityPlan.build(json.loads(json.dumps(LIMITS)), p, price_per_hour=4.0).to_dict()
    assert d["economics"]["tokens"]["available"] is False and "no token counts" in d["economics"]["tokens"]["reason"]
    assert "needs token counts" in d["economics"]["money"]["reason"]
    with pytest.raises(ParameterError):
        _plan(price_per_hour=-1.0)


def test_weekly_peaks_leave_the_partial_week_out():
    # 2 weeks and one day of minutes; week k has the constant rate 60 x (k + 1) requests per minute
    n = int((2 * WEEK_S + 86400) // 60)
    starts = [60.0 * i for i in range(n)]
    reqs = [60.0 * (int(t // WEEK_S) + 1) for t in starts]
    assert weekly_peaks(starts, reqs) == pytest.approx([1.0, 2.0])  # the third (partial) week is left out


def test_the_plan_forecasts_as_the_profile_does_and_says_when_the_fleet_runs_out():
    # 35 days of minutes: 1 req/s, and each day one busy minute at 2 + 0.1 d req/s (±0.2 on alternate days)
    days = 35
    peaks = [2.0 + 0.1 * d + (0.2 if d % 2 else -0.2) for d in range(days)]
    reqs = np.full(days * 1440, 60.0)
    for d in range(days):
        reqs[d * 1440 + 700] = peaks[d] * 60.0
    t0 = 1_704_067_200.0  # 2024-01-01 00:00 UTC: epoch minutes, days from midnight
    starts = t0 + 60.0 * np.arange(reqs.size)
    profile = {"per_minute": {"series": {"minute_start_s": starts.tolist(), "requests": reqs.tolist()}}}
    plan = CapacityPlan.from_dict(_plan())
    inst = _instances(per_instance_allowable_rps=2.0, base=3, buffer=1, total=4)
    s = plan_economics(plan.fos, plan.tier, 5.9, None, inst, profile_input_from_dict(profile), quantile=0.99).staged
    assert s.daily_peaks_rps == pytest.approx(peaks)
    # independently: least squares through (day, peak), the 95 % prediction interval 182.5 days after day 34
    x = np.arange(float(days))
    b, a = np.polyfit(x, peaks, 1)
    resid = np.array(peaks) - (a + b * x)
    s2 = float(resid @ resid) / (days - 2)
    x0 = 34 + 182.5
    sxx = float(((x - x.mean()) ** 2).sum())
    se = math.sqrt(s2 * (1 + 1 / days + (x0 - x.mean()) ** 2 / sxx))
    fc = a + b * x0
    hi = fc + stats.t.ppf(0.975, days - 2) * se
    mt = s.mid_term
    assert mt.forecast.significant
    assert mt.forecast.value == pytest.approx(fc) and mt.forecast.upper == pytest.approx(hi)
    assert mt.instances == math.ceil(fc * 1.5 / 2.0) and mt.instances_upper == math.ceil(hi * 1.5 / 2.0)
    # the profile's forecast of the same series is the same number (one function for both)
    from bearing_lib.traffic.binning import RateSeries
    from bearing_lib.traffic.targets import compute_targets

    prof = compute_targets(RateSeries(60.0, starts, reqs, aligned=True), n_boot=20).mid_term
    assert prof.forecast_rps == pytest.approx(mt.forecast.value) and prof.forecast_pi95 == pytest.approx(
        (mt.forecast.lower, mt.forecast.upper))
    # near term: ceil(5.9 x 1.5 / 2) = 5; the fleet of 4 x 2 = 8 req/s is passed when a + b (34 + 7k) > 8
    assert s.near_term.instances == 5
    k = next(k for k in range(600) if a + b * (34 + 7 * k) > 8.0)
    assert s.fleet_runs_out.weeks_after_last == k
    assert f"runs out in {k} week(s)" in s.fleet_runs_out.statement
    # the staged part reads back from its JSON as the same object (the forecast is part of the plan document)
    from bearing_lib.common.schema import parse
    from bearing_lib.plan.economics import Staged
    from bearing_lib.plan.jsonform import to_json

    assert parse(Staged, json.loads(json.dumps(to_json(s), allow_nan=False)), what="staged") == s


def _instances(**kw) -> InstancePlan:
    """An instance plan by hand: only the numbers the economics read matter (the rest is filler)."""
    base = {"target_rps": 1.0, "per_instance_q_ult_rps": 1.5, "target_fos": 1.5, "buffer_basis": "hand-made",
            "burst": None, "reason": "hand-made"}
    return InstancePlan(**{**base, **kw})


def _metrics(rows: list[dict]) -> ServerMetrics:
    full = [{"run_id": "r", "stat": "sample", "time_s": 0.0, **r} for r in rows]
    return ServerMetrics(conform_metrics(full), provenance())


def test_kv_check_from_server_metrics():
    pool = {"metric": "vllm:cache_config_info", "signal": None, "value": 1.0,
            "labels": "block_size=16,num_gpu_blocks=1000"}
    rows = [pool]
    for step, running, usage in ((0, 2.0, 0.03), (1, 4.0, 0.09), (1, 4.0, 0.11)):
        rows += [{"step": step, "metric": "vllm:num_requests_running", "signal": "requests_running", "value": running},
                 {"step": step, "metric": "vllm:kv_cache_usage_perc", "signal": "kv_cache_usage", "value": usage}]
    ds = _metrics(rows)
    # the highest step with both: step 1, 4 running x ceil((1,000 + 250/2) / 16) = ceil(70.3) = 71 blocks
    # = 284 of 1,000 blocks = 0.284 predicted against the measured mean 0.10: +184 %, not right
    c = kv_metrics_check(kv_gauge(ds), mean_input_tokens=1000, mean_output_tokens=250)
    assert isinstance(c, KvMetricsCheck) and c.step == 1 and c.blocks_per_request == 71
    assert c.predicted_usage == pytest.approx(0.284) and c.measured_usage == pytest.approx(0.10)
    assert c.rel_error == pytest.approx(1.84) and c.right is False
    # 1,000 in / 100 out: ceil(1,050 / 16) = 66 blocks x 2 running / 1,000 = 0.132 vs 0.03 at step 0
    c0 = kv_metrics_check(kv_gauge(ds), mean_input_tokens=1000, mean_output_tokens=100, step=0)
    assert c0.predicted_usage == pytest.approx(0.132)
    # through the plan: the profile's means (1,000 / 250) give the same check
    d = _plan(kv_gauge=kv_gauge(ds))
    assert d["economics"]["kv_metrics_check"]["predicted_usage"] == pytest.approx(0.284)
    # no pool: said, not guessed
    no_pool = kv_metrics_check(kv_gauge(_metrics(rows[1:])), mean_input_tokens=1, mean_output_tokens=1)
    assert isinstance(no_pool, NotAvailable) and "cache_config_info" in no_pool.reason


def test_kv_check_on_inference_perf_reports_says_what_is_missing():
    from bearing_lib.loaders import load

    folder = Path(__file__).resolve().parents[1] / "fixtures" / "inference-perf" / "k8s-sigs-kubecon-na-2025" / "vllm"
    c = kv_metrics_check(kv_gauge(load(folder, format="inference-perf-prometheus")), mean_input_tokens=1,
                         mean_output_tokens=1)
    assert isinstance(c, NotAvailable) and "no vllm:cache_config_info sample" in c.reason


def test_cli_plan_prints_tokens_money_and_staged(tmp_path):
    lim, prof, out = tmp_path / "l.json", tmp_path / "p.json", tmp_path / "plan.json"
    lim.write_text(json.dumps(LIMITS))
    prof.write_text(json.dumps(_profile()))
    res = CliRunner().invoke(app, ["plan", "--limits", str(lim), "--profile", str(prof), "--price-per-hour", "4",
                                   "--budget-per-month", "5000", "--json", str(out)])
    assert res.exit_code == 0, res.output
    assert "tokens/s:    at Q_ult 8.000 req/s: input 8,000, output 2,000, total 10,000" in res.output
    assert "  mix short: Q_ult 12.000 req/s = 15,000 tok/s (12,000 in + 3,000 out); allowable 8.000 req/s = " \
           "10,000 tok/s" in res.output
    assert "$0.83 per 1M output tokens at the allowable load" in res.output
    assert "fleet $2,920/month, of which burst buffer $0.27/month" in res.output
    assert "budget:      green" in res.output
    assert "near term:   2 instance(s) for 6.000 req/s" in res.output
    assert json.loads(out.read_text())["economics"]["money"]["monthly_cost_base"] == pytest.approx(2920.0)
    bad = CliRunner().invoke(app, ["plan", "--limits", str(lim), "--profile", str(prof), "--server-metrics",
                                   str(lim)])
    assert bad.exit_code == 1 and "Traceback" not in bad.output


@pytest.mark.parametrize(("budget", "status", "words"), [
    (2000.0, "green", "at most: $1,460/month is 73%"),  # upper bound 2 x $1 x 730 = 1,460 <= 80 % of 2,000
    (1000.0, "yellow", "the base fits the $1,000 budget"),  # base 730 fits, 1,460 does not
    (700.0, "red", "at least: $730/month exceeds"),  # even the base 730 exceeds 700
])
def test_elastic_buffer_without_burst_hours_is_costed_as_a_range(budget, status, words):
    from bearing_lib.plan.capacity import BufferPlan

    plan = CapacityPlan.from_dict(_plan())
    inst = _instances(per_instance_allowable_rps=1.0, base=1, buffer=1, total=2,
                      buffer_plan=BufferPlan("elastic", 1, "hand-made"))
    m = plan_economics(plan.fos, get_tier("standard"), 1.0, None, inst, profile_input_from_dict(
                       {"seq_len": {"input_tokens": {"mean": 100}, "output_tokens": {"mean": 10}}}),
                       price_per_hour=1.0, budget_per_month=budget).money
    assert isinstance(m, Money)
    assert m.monthly_cost_recommended is None and m.monthly_cost_range == pytest.approx((730.0, 1460.0))
    assert m.budget_row.status == status and words in m.budget_row.reason


def test_a_users_cost_model_stays_unless_a_budget_is_given():
    user = {"budget": {"cost_model": "tight"}}
    d = _plan(price_per_hour=4.0, user_inputs=user)  # a cost but no budget: the user's judgement stays
    row = next(r for r in d["scorecards"]["scorecard"] if r["dimension"] == "budget")
    assert (row["status"], row["value"]) == ("yellow", "tight")
    d = _plan(price_per_hour=4.0, budget_per_month=5000, user_inputs=user)  # a budget: the computed row
    row = next(r for r in d["scorecards"]["scorecard"] if r["dimension"] == "budget")
    assert row["status"] == "green" and "of the $5,000 budget" in row["reason"]


def test_the_reports_fos_table_gives_each_limit_in_tokens_per_second():
    """Q_ult per mix in tokens/s = completed req/s x (mean input + output tokens), bound sign kept."""
    from bearing_lib.report.model import build_report
    from tests.report.conftest import provenance

    d = _plan(price_per_hour=4.0)
    model = build_report(limits=json.loads(json.dumps(LIMITS)), plan=d, profile=_profile(), provenance=provenance())
    rows = {r.mix: r for r in model.fos.data.per_mix}
    # short: 12 req/s x 1,250 tokens = 15,000 tokens/s; long: 4 x 1,250 = 5,000 (the overall means: no trace)
    assert rows["short"].tokens.value == pytest.approx(12 * 1250.0)
    assert rows["long"].tokens.value == pytest.approx(4 * 1250.0)
    for r in rows.values():
        assert r.tokens.unit == "tokens/s" and r.tokens.bound == r.q_ult.bound
        if r.q_ult.ci95:
            assert r.tokens.ci95[0] == pytest.approx(r.q_ult.ci95[0] * 1250.0)
    plain = json.loads((DATA / "profile_handmade.json").read_text())
    without = build_report(limits=json.loads(json.dumps(LIMITS)), plan=CapacityPlan.build(
        json.loads(json.dumps(LIMITS)), plain).to_dict(), profile=plain, provenance=provenance())
    assert all(r.tokens is None for r in without.fos.data.per_mix)  # no token means: no column value


@pytest.mark.parametrize(("bound", "least"), [("upper", "at least "), ("lower", "at most "), ("none", "")])
def test_a_bound_on_the_limit_bounds_every_economics_figure_and_is_said(bound, least):
    """The economics figures are computed from the limit (tokens/s = req/s × tokens; $ per 1M tokens = price /
    tokens/s; instances = rate / allowable): an upper bound on the limit makes token rates upper bounds, costs
    and instance counts lower bounds; the section says so once, and the near-term line says "at least"."""
    from bearing_lib.plan.economics import PlanEconomics

    d = _plan(price_per_hour=4.0)
    d["fos"]["blended"]["bound"] = bound
    p = CapacityPlan.from_dict(d)
    e = plan_economics(p.fos, p.tier, p.target.rps, p.allowable_rps, p.instances,
                       profile_input_from_dict(_profile()), price_per_hour=4.0)
    assert isinstance(e, PlanEconomics)
    for part in (e.tokens, e.money, e.staged):
        assert part.limit_bound == (bound if bound != "none" else None)
    lines = e.summary_lines()
    assert any(line.startswith("near term:   " + least) for line in lines)
    assert any(line.startswith("bound:") for line in lines) == (bound != "none")
    # the figures themselves do not move: the bound is a statement about them
    assert e.tokens.at_q_ult.total_tokens_per_s == pytest.approx(10000.0)


def _flat_35_days() -> tuple[np.ndarray, np.ndarray, list[float]]:
    # 35 days of minutes at 1 req/s; each day one busy minute at 3 ± 0.3 req/s (alternate days): no trend
    days = 35
    peaks = [3.0 + (0.3 if d % 2 else -0.3) for d in range(days)]
    reqs = np.full(days * 1440, 60.0)
    for d in range(days):
        reqs[d * 1440 + 600] = peaks[d] * 60.0
    starts = 1_704_067_200.0 + 60.0 * np.arange(reqs.size)
    return starts, reqs, peaks


@pytest.mark.parametrize("with_series", [True, False])
def test_one_forecast_shared_by_the_profile_and_the_plan_and_no_trend_said(with_series):
    from bearing_lib.traffic.binning import RateSeries
    from bearing_lib.traffic.targets import compute_targets

    starts, reqs, peaks = _flat_35_days()
    prof_mid = compute_targets(RateSeries(60.0, starts, reqs, aligned=True), n_boot=20).mid_term
    # independently: no trend, so the level is the mean daily peak, and the 95 % PI mean ± t(0.975, 34) s sqrt(1 + 1/35)
    mean, sd = float(np.mean(peaks)), float(np.std(peaks, ddof=1))
    half = stats.t.ppf(0.975, 34) * sd * math.sqrt(1 + 1 / 35)
    assert prof_mid.forecast_rps == pytest.approx(mean) and prof_mid.forecast_pi95 == pytest.approx(
        (mean - half, mean + half))
    assert "no trend detected over 35 days" in prof_mid.statement
    profile = {"targets": {"target": {"rps": 3.2}, "mid_term": json.loads(json.dumps(prof_mid.to_dict()))}}
    if with_series:
        profile["per_minute"] = {"series": {"minute_start_s": starts.tolist(), "requests": reqs.tolist()}}
    plan = CapacityPlan.from_dict(_plan())
    inst = _instances(per_instance_allowable_rps=2.0, base=3, buffer=1, total=4)
    s = plan_economics(plan.fos, plan.tier, 3.2, None, inst, profile_input_from_dict(profile), quantile=0.99).staged
    # the plan's forecast is the profile's, with or without the series in the profile JSON
    fc = s.mid_term.forecast
    assert fc == prof_mid.trend
    assert (fc.value, fc.lower, fc.upper) == pytest.approx((mean, mean - half, mean + half))
    assert not fc.significant and s.fleet_runs_out.weeks_after_last is None
    assert s.fleet_runs_out.statement.startswith("no trend detected over 35 days")
    assert "no date at which" in s.fleet_runs_out.statement and "runs out in" not in s.fleet_runs_out.statement
    assert s.mid_term.rps == pytest.approx(prof_mid.rps)
    assert (s.daily_peaks_rps == pytest.approx(peaks)) if with_series else s.daily_peaks_rps is None


def test_a_limit_open_above_leaves_tokens_open_above_and_costs_and_counts_open_below():
    """Short's limit CI open above (concurrency [7, open]): the blend is open above, so tokens/s at Q_ult are
    "≥ x" (high end null), while $ per 1M tokens, the instance counts and the fleet's cost divide by the limit
    and are open BELOW (low end null): the data cannot say how cheap or how few."""
    lim = json.loads(json.dumps(LIMITS))
    lim["mixes"][0]["q_ult"]["ci95"] = [7, None]
    d = CapacityPlan.build(lim, _profile(), price_per_hour=4.0).to_dict()
    b = d["fos"]["blended"]
    assert b["q_blend_ci95"][1] is None and b["ci95"][1] is None
    assert b["open_reason"] == "no step above the limit failed a clause"
    t = d["economics"]["tokens"]
    assert t["at_q_ult"]["rps_ci95"][1] is None and t["at_q_ult"]["total_tokens_per_s_ci95"][1] is None
    assert t["at_q_ult"]["total_tokens_per_s_ci95"][0] == pytest.approx(b["q_blend_ci95"][0] * 1250)
    per = {m["mix"]: m for m in t["per_mix"]}
    # short's low end: 7 x 12 / 8 = 10.5 req/s -> 10,500 input tok/s; long keeps both ends
    assert per["short"]["q_ult"]["input_tokens_per_s_ci95"] == pytest.approx([10500.0, None])
    assert None not in per["long"]["q_ult"]["rps_ci95"]
    assert t["open_reason"] == b["open_reason"]
    m = d["economics"]["money"]
    assert m["usd_per_million_output_tokens_ci95"][0] is None
    assert m["usd_per_million_output_tokens_ci95"][1] == pytest.approx(
        4 / (b["q_blend_ci95"][0] / 1.5 * 250 * 3600) * 1e6)
    assert m["monthly_cost_all_instances_always_on_ci95"][0] is None
    inst = d["instances"]
    assert inst["base_ci95"][0] is None and inst["total_ci95"][0] is None
    assert inst["base_ci95"][1] == math.ceil(4 / (b["q_blend_ci95"][0] / 1.5) - 1e-9)
    assert d["economics"]["staged"]["near_term"]["instances_ci95"][0] is None
    assert d["allowable_ci95"][1] is None and "open above" in d["allowable_statement"]
    back = CapacityPlan.from_dict(json.loads(json.dumps(d)))
    assert back.to_dict() == d
