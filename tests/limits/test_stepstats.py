"""Per-step sufficient statistics (``limits.stepstats``): counts exact against plain polars/numpy on a raw frame,
quantiles within the stated tolerance, the limit from the statistics against the in-memory limit, and tiny steps."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bearing_lib.common.errors import BearingError
from bearing_lib.data.engine import Engine
from bearing_lib.data.mixes import Mix, MixSpec
from bearing_lib.limits import stepstats as ss
from bearing_lib.limits.curves import load_curve, step_windows
from bearing_lib.limits.fit import _as_sla, fit_limits, fit_limits_dataset
from bearing_lib.limits.resample import n_blocks
from tests.limits.synth import make_trace, mm1_frame

SPEC = MixSpec((Mix("short", {"input_tokens": (0, 1024)}), Mix("long", {"input_tokens": (1024, float("inf"))})))
SLA_TEXT = ["p99(ttft) <= 50ms", "error_rate <= 1%"]


def _raw_frame(seed: int = 3) -> pl.DataFrame:
    """Two runs × three steps of requests with errors, cancelled requests, missing TTFTs and unsorted rows."""
    rng = np.random.default_rng(seed)
    parts = []
    for run in ("a", "b"):
        for step, rate in enumerate((50.0, 80.0, 120.0)):
            n = 2400 + 300 * step
            start = 100.0 * step + rng.uniform(0, 60.0, n)
            lat = rng.lognormal(math.log(40 + 20 * step), 0.6, n)
            status = rng.choice(["ok", "error", "cancelled"], size=n, p=[0.93, 0.05, 0.02])
            ttft = np.where(rng.uniform(size=n) < 0.1, np.nan, lat * 0.3)
            parts.append(pl.DataFrame({
                "run_id": run, "step": step, "offered_load": rate, "offered_load_unit": "rps",
                "start_s": start, "end_s": start + lat / 1000.0, "latency_ms": lat,
                "ttft_ms": pl.Series(ttft).fill_nan(None),
                "input_tokens": rng.integers(10, 3000, n), "output_tokens": rng.integers(2, 400, n),
                "cached_tokens": np.zeros(n, dtype=np.int64), "status": status,
            }))
    f = pl.concat(parts)
    return f.sample(fraction=1.0, shuffle=True, seed=seed)


def test_counts_exact_against_plain_polars() -> None:
    f = _raw_frame()
    tr = make_trace(f)
    sla = _as_sla(SLA_TEXT)
    win = step_windows(tr)
    st_ = ss.step_stats(tr.frame.lazy(), win, SPEC, sla)
    # the same counts with plain polars and numpy on the raw frame, from the windows' edges
    w = win.select("run_id", "step", "t_start_s", "t_end_s")
    raw = f.join(w, on=["run_id", "step"]).filter(pl.col("start_s").is_between(pl.col("t_start_s"),
                                                                                pl.col("t_end_s")))
    raw = raw.with_columns(
        pl.when(pl.col("input_tokens") < 1024).then(pl.lit("short")).otherwise(pl.lit("long")).alias("mix"),
        pl.Series("block", np.clip(np.floor((raw["start_s"].to_numpy() - raw["t_start_s"].to_numpy())
                                            / (raw["t_end_s"].to_numpy() - raw["t_start_s"].to_numpy()) * 50),
                                   0, 49).astype(np.int64)))
    ok = pl.col("status") == "ok"
    want = raw.group_by("run_id", "step", "mix", "block").agg(
        pl.len().alias("n"), ok.sum().alias("n_ok"), (pl.col("status") == "error").sum().alias("n_failed"),
        (pl.col("status") != "cancelled").sum().alias("n_known"),
        (ok & (pl.col("ttft_ms") > 50)).sum().alias("_pk_0"), (ok & pl.col("ttft_ms").is_not_null()).sum()
        .alias("_pn_0"), pl.col("output_tokens").filter(ok).sum().alias("out_tok"),
        pl.col("latency_ms").filter(ok).max().alias("latency_ms_max"),
    ).sort("run_id", "step", "mix", "block")
    got = st_.counts.join(st_.groups, on="_g").select(
        "run_id", "step", "mix", pl.col("_block").alias("block"), "n", "n_ok", "n_failed", "n_known", "_pk_0", "_pn_0",
        "out_tok", "latency_ms_max").sort("run_id", "step", "mix", "block")
    assert got.height == want.height > 2 * 3 * 2 * 40
    for c in want.columns:
        assert got[c].cast(want[c].dtype).to_list() == want[c].to_list(), c
    # the histograms hold every successful request's TTFT once, in the bin of its value
    h = st_.hist.filter(pl.col("_m") == 0)
    assert h["count"].sum() == raw.filter(ok & pl.col("ttft_ms").is_not_null()).height
    v = raw.filter(ok)["ttft_ms"].drop_nulls().to_numpy()
    lo = ss.V0_MS * (1 + ss.REL_BIN) ** (np.floor(np.log(v / ss.V0_MS) / math.log1p(ss.REL_BIN)))
    assert np.all((lo <= v * (1 + 1e-12)) & (v < lo * (1 + ss.REL_BIN) * (1 + 1e-12)))
    bins = (1 + np.floor(np.log(v / ss.V0_MS) / math.log1p(ss.REL_BIN))).astype(np.int64)
    want_h = np.bincount(bins)
    got_h = h.group_by("_bin").agg(pl.col("count").sum()).sort("_bin")
    assert np.array_equal(want_h[got_h["_bin"].to_numpy()], got_h["count"].to_numpy())
    assert want_h.sum() == got_h["count"].sum()


@pytest.mark.parametrize("q", [0.5, 0.9, 0.99, 0.999])
def test_hist_quantile_within_tolerance(q: float) -> None:
    rng = np.random.default_rng(7)
    for n in (1, 2, 5, 100, 20_000):
        v = rng.lognormal(3.0, 1.2, n)
        bins = (1 + np.floor(np.log(v / ss.V0_MS) / math.log1p(ss.REL_BIN))).astype(np.int64)
        ub, cnt = np.unique(bins, return_counts=True)
        got = ss.hist_quantile(ub, cnt, q)
        exact = float(np.quantile(v, q))
        assert abs(got / exact - 1) <= ss.TOLERANCE * (1 + 1e-9), (n, got, exact)
    assert ss.hist_quantile(np.zeros(0, np.int64), np.zeros(0, np.int64), 0.5) is None
    assert ss.hist_quantile(np.array([0]), np.array([3]), 0.5) == 0.0  # zeros are counted as zero


def test_curve_from_stats_equals_in_memory_curve() -> None:
    f = mm1_frame([300, 600, 900, 1000], mu_rps=1000, step_s=40, seed=2,
                  mix_weights={"chat": 0.5, "rag": 0.3, "cached": 0.2}, error_prob=0.01)
    tr = make_trace(f)
    sla = _as_sla(SLA_TEXT)
    ref = load_curve(tr, SPEC)
    curve, _ = ss.stats_curve(ss.scan_trace(tr.frame.lazy(), "SYNTHETIC", "relative"), SPEC, sla)
    assert curve.select(ref.columns).columns == ref.columns and curve.height == ref.height
    quantile_cols = {c for c in ref.columns if "_p" in c and c.split("_p")[-1][:1].isdigit()}
    for c in ref.columns:
        a, b = ref[c], curve[c]
        if c in quantile_cols:
            x, y = a.to_numpy().astype(float), b.to_numpy().astype(float)
            assert np.array_equal(np.isnan(x), np.isnan(y)), c
            ok = ~np.isnan(x) & (x > 0)
            assert np.all(np.abs(y[ok] / x[ok] - 1) <= ss.TOLERANCE * (1 + 1e-9)), c
        elif a.dtype == pl.Float64:
            assert np.allclose(a.to_numpy(), b.to_numpy(), rtol=1e-12, atol=0, equal_nan=True), c
        else:
            assert a.to_list() == b.to_list(), c


@pytest.fixture(scope="module")
def synth_file(tmp_path_factory) -> tuple[object, object]:
    f = mm1_frame([300, 500, 700, 850, 950, 1050], mu_rps=1000, step_s=60, seed=1,
                  mix_weights={"chat": 0.5, "rag": 0.3, "cached": 0.2}, error_prob=0.005)
    tr = make_trace(f)
    path = tmp_path_factory.mktemp("stats") / "synth.parquet"
    tr.frame.write_parquet(path)
    return tr, path


def test_limit_from_stats_equals_in_memory_limit(synth_file) -> None:
    tr, path = synth_file
    # the pooled estimator reads the counts alone (the model, the default, reads the design effects too, which the
    # statistics give within their resolution: test_model_from_stats_equals_the_model_in_memory_per_mix below)
    mem = fit_limits(tr, SLA_TEXT, mixes=SPEC, n_boot=300, seed=0, estimator="pooled")
    got = fit_limits_dataset(path, SLA_TEXT, mixes=SPEC, n_boot=300, seed=0, stats=True, estimator="pooled")
    assert [m.mix.name for m in got.limits] == [m.mix.name for m in mem.limits] == ["long", "short"]
    for a, b in zip(mem.limits, got.limits, strict=True):
        # the pooled estimate reads exact counts: the same limit; its bootstrap interval reads other blocks
        assert b.q_ult.value == pytest.approx(a.q_ult.value, rel=1e-9)
        assert b.q_ult.bracket == a.q_ult.bracket
        assert [s.status for s in b.steps] == [s.status for s in a.steps]
        assert [s.n_requests for s in b.steps] == [s.n_requests for s in a.steps]
        for lo_hi_a, lo_hi_b in zip(a.q_ult.ci95, b.q_ult.ci95, strict=True):
            assert lo_hi_b == pytest.approx(lo_hi_a, rel=0.1)
        assert b.cost_anomaly_index.available is False and "per-step statistics" in b.cost_anomaly_index.reason
    assert got.conditions.extra["stats"].tolerance == ss.TOLERANCE
    assert any(n.startswith("fitted from per-step statistics") for n in got.notes)


def test_model_from_stats_equals_the_model_in_memory_per_mix(synth_file) -> None:
    """The model (the default estimator) on several mixes: the embedded engine's task fits each run in memory (the
    same limit to the last digit); from per-step statistics its design effects come from the per-block histogram
    counts, within their resolution (here within 1e-5 of the value and of each interval end, every mix)."""
    tr, path = synth_file
    mem = fit_limits(tr, SLA_TEXT, mixes=SPEC, n_boot=300, seed=0)
    emb = fit_limits(path, SLA_TEXT, mixes=SPEC, n_boot=300, seed=0)
    got = fit_limits_dataset(path, SLA_TEXT, mixes=SPEC, n_boot=300, seed=0, stats=True)
    assert [r.conditions.estimator for r in (mem, emb, got)] == ["model"] * 3
    assert [m.mix.name for m in got.limits] == [m.mix.name for m in emb.limits] == [m.mix.name for m in mem.limits]
    for a, e, b in zip(mem.limits, emb.limits, got.limits, strict=True):
        assert e.q_ult.value == a.q_ult.value and e.q_ult.ci95 == a.q_ult.ci95
        assert b.q_ult.value == pytest.approx(a.q_ult.value, rel=1e-5)
        assert b.q_ult.ci95 == pytest.approx(a.q_ult.ci95, rel=1e-5)
        assert b.binding == a.binding and b.q_ult.bracket == a.q_ult.bracket
        assert [s.n_requests for s in b.steps] == [s.n_requests for s in a.steps]
        # the interval's method names the largest design effect, which the histograms give within their resolution
        # (283 against 284 here)
        assert b.q_ult.estimator == a.q_ult.estimator
        assert b.q_ult.interval_method.split("(up to")[0] == a.q_ult.interval_method.split("(up to")[0]


def test_two_runs_from_stats_equal_each_run_fitted_in_memory(tmp_path) -> None:
    fa = mm1_frame([300, 600, 900, 1050], mu_rps=1000, step_s=40, seed=6, run_id="a",
                   mix_weights={"chat": 0.5, "rag": 0.5})
    fb = mm1_frame([350, 700, 1000, 1100], mu_rps=1000, step_s=40, seed=7, run_id="b",
                   mix_weights={"chat": 0.5, "rag": 0.5})
    path = tmp_path / "two.parquet"
    make_trace(pl.concat([fa, fb])).frame.write_parquet(path)
    got = fit_limits_dataset(path, SLA_TEXT, mixes=SPEC, n_boot=200, seed=3, stats=True, estimator="pooled")
    for run, f in (("a", fa), ("b", fb)):
        mem = fit_limits(make_trace(f), SLA_TEXT, mixes=SPEC, n_boot=200, seed=3, estimator="pooled")
        mine = [m for m in got.limits if m.run_id == run]
        assert [m.mix.name for m in mine] == [m.mix.name for m in mem.limits]
        for a, b in zip(mem.limits, mine, strict=True):
            assert b.q_ult.value == pytest.approx(a.q_ult.value, rel=1e-9)
            # the pooled crossing's replicates read exact counts with the same block weights: the same interval
            assert b.q_ult.bootstrap_ci95 == pytest.approx(a.q_ult.bootstrap_ci95, rel=1e-9)
            assert [s.n_requests for s in b.steps] == [s.n_requests for s in a.steps]


def test_stats_path_refuses_a_metric_the_file_lacks(synth_file) -> None:
    _, path = synth_file  # the synthetic requests carry no ITL
    with pytest.raises(BearingError, match="itl_ms"):
        fit_limits_dataset(path, ["p99(itl) <= 50ms"], mixes=SPEC, n_boot=0, stats=True)


def test_stats_auto_keeps_small_datasets_in_memory(synth_file) -> None:
    _, path = synth_file
    res = fit_limits_dataset(path, SLA_TEXT, mixes=SPEC, n_boot=0)
    assert "stats" not in res.conditions.extra
    with pytest.raises(BearingError, match="stats must be"):
        fit_limits_dataset(path, SLA_TEXT, mixes=SPEC, n_boot=0, stats="yes")


@pytest.mark.slow
def test_dask_statistics_equal_embedded(tmp_path) -> None:
    f = mm1_frame([300, 600, 900], mu_rps=1000, step_s=30, seed=4, mix_weights={"chat": 0.6, "rag": 0.4})
    tr = make_trace(f)
    ds = tmp_path / "ds"
    tr.frame.write_parquet(ds, partition_by=["step"])
    emb = fit_limits_dataset(ds, SLA_TEXT, mixes=SPEC, n_boot=100, seed=0, stats=True)
    with Engine("dask", n_workers=2, progress=False) as eng:
        got = fit_limits_dataset(ds, SLA_TEXT, mixes=SPEC, n_boot=100, seed=0, stats=True, engine=eng)
    assert got.conditions.extra["engine"].engine == "dask"
    for c in emb.curve.columns:
        a, b = emb.curve[c], got.curve[c]
        if a.dtype == pl.Float64:
            assert np.allclose(a.to_numpy(), b.to_numpy(), rtol=1e-12, atol=0, equal_nan=True), c
        else:
            assert a.to_list() == b.to_list(), c
    assert [m.q_ult.value for m in got.limits] == [m.q_ult.value for m in emb.limits]
    assert [m.q_ult.ci95 for m in got.limits] == [m.q_ult.ci95 for m in emb.limits]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sizes=st.lists(st.integers(0, 2), min_size=1, max_size=4), timed=st.booleans())
def test_tiny_steps_do_not_crash(tmp_path, sizes: list[int], timed: bool) -> None:
    rows = []
    for k, n in enumerate(sizes):
        for i in range(n):
            rows.append({"run_id": "r", "step": k, "offered_load": 10.0 * (k + 1), "offered_load_unit": "rps",
                         "start_s": 100.0 * k + i if timed else None, "end_s": 100.0 * k + i + 0.05 if timed else None,
                         "latency_ms": 50.0 + i, "ttft_ms": 10.0 + k, "input_tokens": 100, "output_tokens": 10,
                         "cached_tokens": 0, "status": "ok" if i == 0 else "error"})
    schema = {"run_id": pl.String, "step": pl.Int64, "offered_load": pl.Float64, "offered_load_unit": pl.String,
              "start_s": pl.Float64, "end_s": pl.Float64, "latency_ms": pl.Float64, "ttft_ms": pl.Float64,
              "input_tokens": pl.Int64, "output_tokens": pl.Int64, "cached_tokens": pl.Int64, "status": pl.String}
    path = tmp_path / f"tiny-{'-'.join(map(str, sizes))}-{timed}.parquet"
    pl.DataFrame(rows, schema=schema).write_parquet(path)
    try:
        res = fit_limits_dataset(path, SLA_TEXT, mixes="none", n_boot=20, seed=0, stats=True)
    except BearingError as exc:  # a clear error (no steps, nothing to judge), never a traceback
        assert str(exc)
        return
    assert int(res.curve["n_requests"].sum()) <= sum(sizes)
    for m in res.limits:
        assert all(s.status in ("pass", "fail", "undetermined", "excluded") for s in m.steps)


def test_fifty_blocks_are_the_in_memory_choice_up_to_saturation() -> None:
    """The statistics cut every step into N_BLOCKS = 50 time blocks; the in-memory path takes ``n / b`` for the
    Politis–White block length ``b`` of the step's latencies in time order, clipped to [10, 50]: 50 as well for
    M/M/1 steps from 40 % to 100 % load (the queue's memory is short against the step's length)."""
    f = mm1_frame([400, 960, 990, 1000], mu_rps=1000, step_s=120, seed=5)
    tr = make_trace(f)
    win = step_windows(tr)
    steady = f.join(win.select("step", "t_start_s", "t_end_s"), on="step").filter(
        pl.col("start_s").is_between(pl.col("t_start_s"), pl.col("t_end_s"))).sort("start_s")
    for k in range(4):
        lat = steady.filter(pl.col("step") == k)["latency_ms"].to_numpy()
        assert lat.size > 30_000 and n_blocks(lat, lat.size) == ss.N_BLOCKS
