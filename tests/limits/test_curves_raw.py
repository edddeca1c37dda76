"""load_curve's aggregation, completions and Little's law against plain polars / numpy on the raw SYNTHETIC
frame, given the step windows (written for the one-pass attempt of issue #27, kept as an independent check)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from bearing_lib.data.mixes import Mix, MixSpec
from bearing_lib.limits.curves import load_curve, step_windows
from tests.limits.synth import make_trace, mm1_frame

SPEC = MixSpec((Mix("short", {"input_tokens": (0, 1024)}), Mix("long", {"input_tokens": (1024, float("inf"))})))


def _frame() -> pl.DataFrame:
    """Two runs of three steps, with errors; some requests lose their end time (the latency stands in), a few
    lose both (no completion time: out of Little's law), a few are cancelled (neither ok nor failed)."""
    w = {"chat": 0.5, "rag": 0.3, "cached": 0.2}
    f = pl.concat([
        mm1_frame([40.0, 70.0, 95.0], mu_rps=100.0, step_s=120.0, seed=3, run_id="a", mix_weights=w, error_prob=0.04),
        mm1_frame([30.0, 60.0, 90.0], mu_rps=100.0, step_s=100.0, seed=4, run_id="b", mix_weights=w, error_prob=0.02),
    ], how="vertical_relaxed")
    i = np.arange(f.height)
    return f.with_columns(
        pl.when(pl.Series(i % 7 == 0)).then(None).otherwise(pl.col("end_s")).alias("end_s"),
        pl.when(pl.Series(i % 101 == 0)).then(None).otherwise(pl.col("latency_ms")).alias("latency_ms"),
        pl.when(pl.Series(i % 53 == 0)).then(pl.lit("cancelled")).otherwise(pl.col("status")).alias("status"),
    ).with_columns(
        pl.when(pl.Series(i % 101 == 0)).then(None).otherwise(pl.col("end_s")).alias("end_s"))


def test_curve_matches_plain_polars() -> None:
    raw = _frame()
    tr = make_trace(raw)
    win = step_windows(tr)
    curve = load_curve(tr, SPEC, windows=win)
    # by hand: each request's window, mix, completion time
    j = raw.join(win.select("run_id", "step", "t_start_s", "t_end_s", "duration_s", "offered_load"),
                 on=["run_id", "step"])
    inp = j["input_tokens"].to_numpy()
    mix = np.where(inp < 1024, "short", "long")
    start, ws, we = j["start_s"].to_numpy(), j["t_start_s"].to_numpy(), j["t_end_s"].to_numpy()
    end_s, lat = j["end_s"].to_numpy(), j["latency_ms"].fill_null(np.nan).to_numpy()
    end = np.where(np.isnan(end_s.astype(float)), start + lat / 1000.0, end_s.astype(float))
    status = np.array(j["status"].to_list())
    ok = status == "ok"
    steady = (start >= ws) & (start <= we)
    keys = list(zip(j["run_id"].to_list(), j["step"].to_list(), strict=True))
    checked = 0
    for r in curve.iter_rows(named=True):
        sel_step = np.array([k == (r["run_id"], r["step"]) for k in keys])
        sel = sel_step & (mix == r["mix"])
        n = int((sel & steady).sum())
        if n == 0:
            continue
        checked += 1
        d = r["duration_s"]
        assert r["n_requests"] == n
        assert r["n_ok"] == int((sel & steady & ok).sum())
        assert r["n_unknown"] == int((sel & steady & (status == "cancelled")).sum())
        done = sel & ok & ~np.isnan(end) & (end >= ws) & (end <= we)
        assert r["throughput_rps"] == pytest.approx(done.sum() / d, rel=1e-12)
        assert r["output_tokens_per_s"] == pytest.approx(j["output_tokens"].to_numpy()[done].sum() / d, rel=1e-12)
        v = np.sort(lat[sel & steady & ok & ~np.isnan(lat)])
        assert r["latency_ms_p50"] == pytest.approx(float(np.quantile(v, 0.5, method="linear")), rel=1e-12)
        assert r["latency_ms_mean"] == pytest.approx(float(v.mean()), rel=1e-12)
        # Little's law: every request of the step with an end time, its overlap with the window
        has_end = sel_step & ~np.isnan(end)
        ovl = np.clip(np.minimum(end, we) - np.maximum(start, ws), 0.0, None)[has_end].sum()
        assert r["inflight_mean"] == pytest.approx(ovl / (we[sel_step][0] - ws[sel_step][0]), rel=1e-12)
        in_w = has_end & steady
        expected = r["offered_load"] * float(np.mean((end - start)[in_w]))
        assert r["littles_ratio"] == pytest.approx(r["inflight_mean"] / expected, rel=1e-12)
    assert checked == 12  # 2 runs x 3 steps x 2 mixes, every group populated


def test_curve_without_end_times_counts_sent_requests() -> None:
    """No end_s and no latency: no completions (throughput = ok requests sent in the window), no Little's law."""
    raw = _frame().with_columns(pl.lit(None, pl.Float64).alias("end_s"), pl.lit(None, pl.Float64).alias("latency_ms"))
    tr = make_trace(raw)
    curve = load_curve(tr, None)
    win = step_windows(tr)
    j = raw.join(win.select("run_id", "step", "t_start_s", "t_end_s", "duration_s"), on=["run_id", "step"])
    by_hand = j.filter(pl.col("start_s").is_between(pl.col("t_start_s"), pl.col("t_end_s"))).group_by(
        "run_id", "step").agg((pl.col("status") == "ok").sum().alias("n_ok"), pl.col("duration_s").first())
    got = curve.join(by_hand, on=["run_id", "step"], suffix="_hand")
    assert got.height == 6
    assert got["n_ok"].to_list() == got["n_ok_hand"].to_list()
    np.testing.assert_allclose(got["throughput_rps"].to_numpy(), (got["n_ok_hand"] / got["duration_s_hand"]).to_numpy(),
                               rtol=1e-12)
    assert curve["inflight_mean"].null_count() == curve.height
