"""Load curves on hand-computed tiny traces, closed forms and simulations with known truth.

Traces here are SYNTHETIC (built in the tests)."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from statsmodels.stats.proportion import proportion_confint

from bearing_lib.data.loadpoints import LoadPointTable, conform_loadpoints
from bearing_lib.data.mixes import Mix, MixSpec
from bearing_lib.data.provenance import Provenance
from bearing_lib.limits.curves import load_curve, min_n_supported, order_stat_ranks, step_windows, wilson_interval
from tests.limits.synth import make_trace, mm1_frame


def _binom_cdf(k: int, n: int, p: float) -> float:
    return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k + 1)) if k >= 0 else 0.0


def _tiny() -> pl.DataFrame:
    """Step 0: 11 requests sent at t = 0, 10, ..., 100 s; steady window [10, 90] keeps t = 10..90 (9 requests).

    Latencies 100, 200, ..., 1100 ms; the request at t = 50 is an error."""
    t = np.arange(0, 101, 10, dtype=float)
    lat = np.arange(1, 12) * 100.0
    status = ["ok"] * 11
    status[5] = "error"
    return pl.DataFrame({
        "start_s": t, "end_s": t + lat / 1000, "latency_ms": lat, "ttft_ms": lat / 10,
        "output_tokens": [10] * 11, "input_tokens": [100] * 11, "status": status,
        "run_id": "r", "step": 0, "offered_load": 0.11, "offered_load_unit": "rps",
    })


def test_tiny_trace_by_hand():
    c = load_curve(make_trace(_tiny()))
    r = c.row(0, named=True)
    # steady window = middle 80 % of [0, 100] -> [10, 90]: t = 10..90, 9 requests, one error (t = 50)
    assert r["duration_s"] == pytest.approx(80.0)
    assert (r["n_requests"], r["n_ok"], r["n_errors"]) == (9, 8, 1)
    assert r["error_rate"] == pytest.approx(1 / 9)
    # throughput counts completions inside [10, 90]: ok requests sent at 10..80 (not 50, the error)
    # end by 80.9 s; the one sent at 90 ends at 91.0 s, outside: 7 completions
    assert r["throughput_rps"] == pytest.approx(7 / 80)
    assert r["send_rate_rps"] == pytest.approx(9 / 80)
    assert r["output_tokens_per_s"] == pytest.approx(70 / 80)
    # Little: send rate x mean latency (s) of the 9 requests (200..1000 ms -> mean 0.6 s)
    assert r["concurrency_mean"] == pytest.approx(9 / 80 * 0.6)
    ok = sorted([200.0, 300, 400, 500, 700, 800, 900, 1000])  # 600 is the error
    # p50 linear: h = 7*0.5 = 3.5 -> 500 + 0.5*(700-500) = 600
    assert r["latency_ms_p50"] == pytest.approx(600.0)
    assert r["ttft_ms_p50"] == pytest.approx(60.0)
    # 8 values cannot support a P90 CI (needs u <= n): null, flagged
    assert r["latency_ms_p90"] is None and r["latency_ms_p99"] is None
    assert "too_few_for_p99" in r["flags"] and "too_few_for_p90" in r["flags"]
    # the P50 CI of n = 8: l, u from Binomial(8, 0.5)
    lo, hi = order_stat_ranks(8, 0.5)
    assert r["latency_ms_p50_ci95_lo"] == ok[lo - 1]
    assert r["latency_ms_p50_ci95_hi"] == ok[hi - 1]
    wl, wh = proportion_confint(1, 9, alpha=0.05, method="wilson")
    assert r["error_rate_ci95_lo"] == pytest.approx(wl) and r["error_rate_ci95_hi"] == pytest.approx(wh)
    assert r["flags"] == ["too_few_for_p90", "too_few_for_p95", "too_few_for_p99"] and r["valid"] is False


def test_order_stat_ranks_against_binomial_cdf():
    for n, q in [(20, 0.5), (100, 0.9), (400, 0.99), (1000, 0.95), (368, 0.99), (367, 0.99)]:
        lo, hi = (int(v) for v in order_stat_ranks(n, q))
        cov = _binom_cdf(hi - 1, n, q) - _binom_cdf(lo - 1, n, q)
        assert cov >= 0.95
        # l is the largest rank with P(B <= l-1) <= 0.025; u the smallest with P(B <= u-1) >= 0.975
        assert _binom_cdf(lo - 1, n, q) <= 0.025 < _binom_cdf(lo, n, q)
        assert _binom_cdf(hi - 1, n, q) >= 0.975 > _binom_cdf(hi - 2, n, q)
    # P99 needs 1 - 0.99^n >= 0.975 -> n >= 368
    assert min_n_supported(0.99) == 368
    assert min_n_supported(0.5) == 6  # n = 6: Binomial(6, .5) F(5) = 63/64 >= .975 and F(0) = 1/64 < .025


def test_wilson_closed_form():
    k, n = np.array([0, 3, 50]), np.array([20, 40, 50])
    lo, hi = wilson_interval(k, n)
    for i in range(3):
        wl, wh = proportion_confint(k[i], n[i], alpha=0.05, method="wilson")
        assert lo[i] == pytest.approx(wl, abs=1e-12) and hi[i] == pytest.approx(wh, abs=1e-12)


def test_order_stat_ci_coverage_by_simulation():
    """Exponential samples, n = 500: the P99 CI must cover the true P99 = ln(100) in >= 95 % (MC tolerance)."""
    rng = np.random.default_rng(7)
    n, reps = 500, 4000
    lo, hi = (int(v) for v in order_stat_ranks(n, 0.99))
    x = np.sort(rng.exponential(1.0, (reps, n)), axis=1)
    truth = math.log(100)
    cover = np.mean((x[:, lo - 1] <= truth) & (truth <= x[:, hi - 1]))
    exact = _binom_cdf(hi - 1, n, 0.99) - _binom_cdf(lo - 1, n, 0.99)
    assert cover == pytest.approx(exact, abs=3 * math.sqrt(exact * (1 - exact) / reps))
    assert cover >= 0.95 - 3 * math.sqrt(0.05 * 0.95 / reps)


def test_twenty_requests_p99_flagged_never_invented():
    df = mm1_frame([2.0], mu_rps=10, step_s=12.5, seed=3)
    tr = make_trace(df)
    r = load_curve(tr).row(0, named=True)
    assert r["n_ok"] < 368
    assert r["latency_ms_p99"] is None and r["latency_ms_p99_ci95_hi"] is None
    assert "too_few_for_p99" in r["flags"] and not r["valid"]
    # the lower bound is kept: it can still prove a failure
    assert r["latency_ms_p99_ci95_lo"] is not None


def test_generator_behind_and_too_short():
    # offered 10 rps, but 4 rps sent for 200 s; a second step lasts 20 s
    a = np.concatenate([np.arange(0, 200, 0.25), 300 + np.arange(0, 20, 0.25)])
    n = a.size
    df = pl.DataFrame({
        "start_s": a, "latency_ms": np.full(n, 50.0), "status": "ok", "run_id": "r",
        "step": np.r_[np.zeros(800, int), np.ones(80, int)],
        "offered_load": np.r_[np.full(800, 10.0), np.full(80, 4.0)],
        "offered_load_unit": "rps",
    })
    c = load_curve(make_trace(df))
    f0, f1 = c["flags"].to_list()
    assert "generator_behind" in f0 and "too_short" not in f0
    assert "too_short" in f1 and "generator_behind" not in f1


def test_not_steady_when_queue_grows():
    # M/M/1 with mu = 10: 5 rps is steady, 13 rps grows a queue by ~3 requests/s
    tr = make_trace(mm1_frame([5.0, 13.0], mu_rps=10, step_s=120, seed=11))
    w = step_windows(tr)
    assert w["not_steady"].to_list() == [False, True]
    c = load_curve(tr, windows=w)
    assert "not_steady" in c["flags"][1] and not c["valid"][1]


def test_mixes_against_total_load():
    tr = make_trace(mm1_frame([3.0, 6.0], mu_rps=10, step_s=100, seed=2,
                              mix_weights={"chat": 0.5, "rag": 0.5}))
    spec = MixSpec((Mix("short", {"input_tokens": (0, 1000)}), Mix("long", {"input_tokens": (1000, math.inf)})))
    c = load_curve(tr, spec)
    assert sorted(set(c["mix"])) == ["long", "short"]
    assert set(c["offered_load"]) == {3.0, 6.0}
    tot = load_curve(tr)
    for step in (0, 1):
        part = c.filter(pl.col("step") == step)
        assert part["n_requests"].sum() == tot.filter(pl.col("step") == step)["n_requests"][0]


def test_without_times_uses_tool_duration():
    df = mm1_frame([4.0], mu_rps=10, step_s=200, seed=5).drop("start_s", "end_s")
    steps = pl.DataFrame({"run_id": ["run"], "step": [0], "duration_s": [200.0]})
    tr = make_trace(df, time_origin="none", steps=steps)
    r = load_curve(tr).row(0, named=True)
    assert r["duration_s"] == 200.0
    assert r["throughput_rps"] == pytest.approx(df.height / 200.0)
    assert "no_times" in r["flags"] and "steadiness_unknown" in r["flags"]
    assert r["latency_ms_p50"] == pytest.approx(float(np.quantile(df["latency_ms"].to_numpy(), 0.5)))


def test_load_point_table_passthrough():
    rows = [{"run_id": "x", "step": 0, "offered_load": 1.0, "offered_load_unit": "rps", "duration_s": 120.0,
             "n_requests": 120, "n_ok": 118, "n_errors": 2, "throughput_rps": 0.98, "achieved_rate_rps": 1.0,
             "ttft_ms_p50": 80.0, "ttft_ms_p99": 300.0, "latency_ms_mean": 2000.0}]
    t = LoadPointTable(conform_loadpoints(rows), Provenance(source="SYNTHETIC", format="x", tool="x", sha256=""))
    r = load_curve(t).row(0, named=True)
    assert r["ttft_ms_p99"] == 300.0 and r["ttft_ms_p99_ci95_lo"] is None
    assert r["error_rate"] == pytest.approx(2 / 120)
    assert r["concurrency_mean"] == pytest.approx(0.98 * 2.0)
    assert "no_ci" in r["flags"] and "too_few_for_p99" in r["flags"]


def test_a_closed_loop_table_never_holds_more_in_flight_than_its_users():
    """Locust's 40-user plateau (rishabhpoddar, raw: 189 completions over 201 s, mean latency 44.596 s) reads
    λW = 189 / 201 × 44.596 = 41.93 in flight: a fifth of those completions started during the ramp, before the
    window. 40 users hold at most 40; an rps step keeps λW (by hand)."""
    base = {"run_id": "x", "duration_s": 201.0, "n_requests": 189, "n_ok": 189, "n_errors": 0,
            "throughput_rps": 189 / 201, "latency_ms_mean": 44596.0}
    rows = [{**base, "step": 0, "offered_load": 40.0, "offered_load_unit": "concurrency"},
            {**base, "run_id": "y", "step": 0, "offered_load": 1.0, "offered_load_unit": "rps"},
            {**base, "run_id": "z", "step": 0, "offered_load": 60.0, "offered_load_unit": "concurrency"}]
    t = LoadPointTable(conform_loadpoints(rows), Provenance(source="SYNTHETIC", format="x", tool="x", sha256=""))
    c = dict(zip(*load_curve(t).select("run_id", "concurrency_mean").to_dict(as_series=False).values(), strict=True))
    assert c["x"] == 40.0
    assert c["y"] == pytest.approx(189 / 201 * 44.596) and c["y"] == pytest.approx(41.93, abs=0.01)
    assert c["z"] == pytest.approx(189 / 201 * 44.596)  # below its 60 users: Little's law as it stands


def test_percentiles_equal_linear_quantiles_per_group():
    """Curve percentiles (read off sorted lists) equal quantile_expr (linear) and numpy's linear, per step x mix."""
    from bearing_lib.common.quantiles import quantile_expr

    tr = make_trace(mm1_frame([3.0, 6.0, 8.0], mu_rps=10, step_s=300, seed=13,
                              mix_weights={"chat": 0.6, "rag": 0.4}, error_prob=0.02))
    spec = MixSpec((Mix("short", {"input_tokens": (0, 1000)}), Mix("long", {"input_tokens": (1000, math.inf)})))
    w = step_windows(tr)
    c = load_curve(tr, spec, windows=w)
    from bearing_lib.limits.curves import steady_requests
    from bearing_lib.limits.sla import OK_EXPR

    steady = steady_requests(tr, w, spec).collect().filter(OK_EXPR)
    ref = steady.group_by("run_id", "step", "mix").agg(
        [quantile_expr("latency_ms", q).alias(f"q{q}") for q in (0.5, 0.9, 0.95, 0.99)] + [pl.col("latency_ms")])
    joined = c.join(ref, on=["run_id", "step", "mix"])
    assert joined.height == c.height == 6
    for r in joined.iter_rows(named=True):
        for name, q in (("p50", 0.5), ("p90", 0.9), ("p95", 0.95), ("p99", 0.99)):
            if r[f"latency_ms_{name}"] is None:
                assert "too_few_for_" + name in r["flags"]
                continue
            assert r[f"latency_ms_{name}"] == pytest.approx(r[f"q{q}"], rel=1e-12)
            assert r[f"latency_ms_{name}"] == pytest.approx(float(np.quantile(r["latency_ms"], q)), rel=1e-12)


def test_without_times_short_sending_period_and_backlog():
    # 200 requests offered at 16 rps are sent in 12.5 s; the tool ran 31.6 s (completions 6.3/s)
    df = mm1_frame([16.0], mu_rps=100, step_s=12.5, seed=6).head(200).drop("start_s", "end_s")
    steps = pl.DataFrame({"run_id": ["run"], "step": [0], "duration_s": [31.6]})
    r = load_curve(make_trace(df, time_origin="none", steps=steps)).row(0, named=True)
    assert r["throughput_rps"] == pytest.approx(200 / 31.6)
    assert "too_short" in r["flags"]  # the sending period 200 / 16 = 12.5 s < 30 s
    assert "throughput_below_offered" in r["flags"]  # 6.3 < 0.7 x 16


def test_overloaded_throughput_counts_completions_not_sends():
    """GuideLLM-like overload: 1.244 rps sent for 200 s to a FIFO server that completes 1.18 rps.

    Deterministic arrivals t_k = k / 1.244 and service 1 / 1.18 s: the queue only grows, so
    completion k is at c_k = (k + 1) / 1.18. The throughput of the steady window is the number
    of ok completions inside it over its length (computed here from c_k), about 1.18, not the
    1.244 rps of requests sent in it."""
    lam, mu = 1.244, 1.18
    t = np.arange(0.0, 200.0, 1.0 / lam)
    c = (np.arange(t.size) + 1) / mu
    lat = (c - t) * 1000
    df = pl.DataFrame({"start_s": t, "end_s": c, "latency_ms": lat, "status": "ok", "run_id": "r", "step": 0,
                       "offered_load": lam, "offered_load_unit": "rps", "output_tokens": 10})
    r = load_curve(make_trace(df)).row(0, named=True)
    w = step_windows(make_trace(df)).row(0, named=True)
    d = t[-1] - t[0]
    trim = min(max(0.1 * d, 2 * lat.mean() / 1000), 0.25 * d)
    a, b = t[0] + trim, t[-1] - trim
    assert (w["t_start_s"], w["t_end_s"]) == (pytest.approx(a), pytest.approx(b))
    done = int(((c >= a) & (c <= b)).sum())
    sent = int(((t >= a) & (t <= b)).sum())
    assert r["throughput_rps"] == pytest.approx(done / (b - a))
    assert r["throughput_rps"] == pytest.approx(mu, rel=0.01)
    assert r["send_rate_rps"] == pytest.approx(sent / (b - a))
    assert r["send_rate_rps"] == pytest.approx(lam, rel=0.01)
    assert r["output_tokens_per_s"] == pytest.approx(10 * done / (b - a))
    assert r["t_first_s"] == pytest.approx(0.0)


def test_metric_without_values_gives_typed_nulls():
    """A metric no request carries (here ITL, TPOT) gives null Float64 statistics and no flag of its own."""
    c = load_curve(make_trace(_tiny()))
    r = c.row(0, named=True)
    for col in ("itl_ms_p50", "itl_ms_p50_ci95_lo", "itl_ms_p99_ci95_hi", "itl_ms_mean", "itl_ms_max", "tpot_ms_p95"):
        assert c.schema[col] == pl.Float64 and r[col] is None, col
    # ok latencies: 200..1000 without the error at 600
    assert r["latency_ms_max"] == 1000.0 and r["latency_ms_mean"] == pytest.approx(4800 / 8)


def _sglang_line(rate: float, completed: int, duration: float, median_e2e_ms: float) -> str:
    import json

    return json.dumps({
        "backend": "sglang", "dataset_name": "random", "request_rate": rate, "max_concurrency": None,
        "random_input_len": 1024, "random_output_len": 128, "random_range_ratio": 0.0, "sharegpt_output_len": None,
        "duration": duration, "completed": completed, "total_input_tokens": 1024 * completed,
        "total_output_tokens": 128 * completed, "output_throughput": 128 * completed / duration,
        "mean_e2e_latency_ms": median_e2e_ms, "median_e2e_latency_ms": median_e2e_ms, "median_ttft_ms": 80.0,
        "median_itl_ms": 15.0,
    })


def test_sglang_drain_is_not_a_throughput_shortfall(tmp_path):
    """SGLang bench_serving's duration is taken after gathering every request (sgl-project/sglang
    python/sglang/bench_serving.py, ``benchmark``), so it includes the drain; the lines state no prompt count, so
    the send window is estimated as completed / rate. Completed rates divide by the send window where no queue
    built up (median E2E under 3 × the run's unloaded latency, its lowest median E2E, 6 s here), else by the
    completion span: the duration less that latency, never less than the send window. By hand:

    * a healthy fixed-count run: 100 prompts at 10 rps (send window 100 / 10 = 10 s), median E2E 6 s, duration
      17 s: the tool's 100 / 17 = 5.88 req/s; no queue (6 s < 18 s): 100 / 10 = 10 req/s: no flag;
    * an overloaded run: 2,000 prompts at 20 rps (100 s of sending), median E2E 100 s, duration 300 s: span
      max(300 − 6, 100) = 294 s, 2,000 / 294 = 6.80 req/s < 14: below offered, and saturated (100 s ≥ 3 × 6 s).
    """
    from bearing_lib import load

    f = tmp_path / "online.jsonl"
    f.write_text(_sglang_line(10.0, 100, 17.0, 6000.0) + "\n" + _sglang_line(20.0, 2000, 300.0, 100000.0) + "\n")
    table = load(str(f))
    assert isinstance(table, LoadPointTable) and table.provenance.format == "sglang-bench-serving"
    assert table.frame["send_window_s"].to_list() == [pytest.approx(10.0), pytest.approx(100.0)]
    assert table.frame["send_window_basis"].to_list() == ["estimated", "estimated"]
    assert table.frame["duration_includes_drain"].to_list() == [True, True]
    c = load_curve(table).sort("offered_load")
    healthy, overloaded = c.row(0, named=True), c.row(1, named=True)
    assert healthy["throughput_rps"] == pytest.approx(100 / 10.0)
    assert healthy["output_tokens_per_s"] == pytest.approx(128 * 100 / 10.0)
    assert healthy["send_rate_rps"] == pytest.approx(10.0)
    assert not {"throughput_below_offered", "saturated"} & set(healthy["flags"])
    assert overloaded["throughput_rps"] == pytest.approx(2000 / 294.0)
    assert {"throughput_below_offered", "saturated"} <= set(overloaded["flags"])


def test_drain_rule_is_only_for_tools_whose_duration_includes_it():
    """A table from another tool keeps the plain completed / duration rule (its duration is its own)."""
    rows = [{"run_id": "r", "step": 0, "offered_load": 10.0, "offered_load_unit": "rps", "duration_s": 17.0,
             "n_requests": 100, "n_ok": 100, "n_errors": 0, "throughput_rps": 100 / 17.0, "latency_ms_p50": 6000.0}]
    prov = Provenance(source="hand", format="generic-loadpoints", tool="hand", sha256="0" * 64, time_origin="none")
    c = load_curve(LoadPointTable(frame=conform_loadpoints(rows, path="hand"), provenance=prov))
    assert "throughput_below_offered" in c.row(0, named=True)["flags"]


@pytest.mark.shared_data
def test_a_closed_loop_trace_never_holds_more_in_flight_than_its_users(shared_data):
    """LLMPerf's lepton_70b (a new user's case): 5 concurrent users, 150 requests of which 20 succeeded; the failures
    returned early and only the successes' latency is known, so send rate × mean latency read 12.0 in flight. Raw:
    λW by hand from the file's send rate and the successes' mean latency is above 5; the curve says 5."""
    from bearing_lib import load

    tr = load(shared_data("loadtests/llmperf/ray-llmperf-leaderboard/individual/lepton_70b.json"))
    r = load_curve(tr).row(0, named=True)
    assert (r["offered_load"], r["offered_load_unit"], r["n_requests"], r["n_ok"]) == (5.0, "concurrency", 150, 20)
    lam_w = r["send_rate_rps"] * float(tr.frame.filter(pl.col("status") == "ok")["latency_ms"].mean()) / 1000.0
    assert lam_w > 10.0 and r["concurrency_mean"] == 5.0


def test_a_burst_step_is_its_whole_span():
    """Every request of a step sent within one mean latency (one request per stream: GuideLLM's concurrent=4 sanity
    run sent 4 within 1.2 ms, each ran 24.9 s) has no sending to trim: the step is first send to last end. By hand:
    4 requests sent at 0, 0.0004, 0.0008, 0.0012 s ending at 24.9, 24.905, 24.9, 24.909 s: 4 requests, 24.909 s,
    4 / 24.909 = 0.1606 req/s (it read 1 request in a 0.6 ms window and a rate of 0 before round 23). A step of
    sustained sends is trimmed as before."""
    start = [0.0, 0.0004, 0.0008, 0.0012]
    end = [24.9, 24.905, 24.9, 24.909]
    df = pl.DataFrame({"request_id": [f"r{i}" for i in range(4)], "start_s": start, "end_s": end,
                       "latency_ms": [(e - s) * 1000 for s, e in zip(start, end, strict=True)],
                       "ttft_ms": [170.0] * 4, "status": ["ok"] * 4, "run_id": "r", "step": 0,
                       "offered_load": 4.0, "offered_load_unit": "concurrency"})
    w = step_windows(make_trace(df)).row(0, named=True)
    assert w["n_sent"] == 4 and w["duration_s"] == pytest.approx(24.909)
    (row,) = load_curve(make_trace(df)).iter_rows(named=True)
    assert row["n_requests"] == 4 and row["throughput_rps"] == pytest.approx(4 / 24.909)
    # sustained: 100 requests a second apart, each 0.5 s: trimmed 10 % each side of the 99 s send span
    n = 100
    df2 = df.clear().vstack(pl.DataFrame({
        "request_id": [f"s{i}" for i in range(n)], "start_s": [float(i) for i in range(n)],
        "end_s": [i + 0.5 for i in range(n)], "latency_ms": [500.0] * n, "ttft_ms": [170.0] * n,
        "status": ["ok"] * n, "run_id": "r", "step": 0, "offered_load": 4.0, "offered_load_unit": "concurrency"},
        schema=df.schema))
    w2 = step_windows(make_trace(df2)).row(0, named=True)
    assert w2["t_start_s"] == pytest.approx(9.9) and w2["t_end_s"] == pytest.approx(89.1)


def test_the_burst_rule_spares_a_short_rps_step_and_reads_end_times():
    """A short step on a finite rps schedule keeps its send window (30 requests at 10 rps over 2.9 s, each 40 s: its
    send rate is 10.3, not 0.7 over a 42.9 s span); a closed loop's burst whose latency is missing reads end − start
    (4 requests within 1.2 ms ending 24.9 s later: 4 in 24.9 s); one request of a closed loop is a burst of one
    (its span is its 10 s in the system). Review findings, round 23."""
    n = 30
    rps = pl.DataFrame({"request_id": [f"q{i}" for i in range(n)], "start_s": [i / 10 for i in range(n)],
                        "end_s": [i / 10 + 40.0 for i in range(n)], "latency_ms": [40_000.0] * n,
                        "status": ["ok"] * n, "run_id": "r", "step": 0, "offered_load": 10.0,
                        "offered_load_unit": "rps"})
    w = step_windows(make_trace(rps)).row(0, named=True)
    assert w["duration_s"] < 2.9 and w["send_rate_rps"] > 9.0
    start = [0.0, 0.0004, 0.0008, 0.0012]
    burst = pl.DataFrame({"request_id": [f"r{i}" for i in range(4)], "start_s": start,
                          "end_s": [24.9, 24.905, 24.9, 24.909], "latency_ms": [None] * 4, "status": ["ok"] * 4,
                          "run_id": "r", "step": 0, "offered_load": 4.0, "offered_load_unit": "concurrency"},
                         schema_overrides={"latency_ms": pl.Float64})
    w = step_windows(make_trace(burst)).row(0, named=True)
    assert w["n_sent"] == 4 and w["duration_s"] == pytest.approx(24.909)
    one = burst.head(1).with_columns(pl.lit(10.0).alias("end_s"), pl.lit(10_000.0).alias("latency_ms"))
    w = step_windows(make_trace(one)).row(0, named=True)
    assert w["n_sent"] == 1 and w["duration_s"] == pytest.approx(10.0)
