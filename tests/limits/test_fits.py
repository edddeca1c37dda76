"""USL and queueing fits against synthetic data with known parameters and an M/M/1 trace."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from bearing_lib.common.errors import ParameterError
from bearing_lib.limits.fits import fit_queueing, fit_queueing_curve, fit_usl, fit_usl_curve, usl

N = np.array([1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128], dtype=float)
ALPHA, BETA, LAM = 0.03, 5e-4, 50.0


def _usl_data(seed: int, noise: float = 0.02) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return usl(N, LAM, ALPHA, BETA) * np.exp(rng.normal(0, noise, N.size))


def test_usl_recovers_known_parameters():
    f = fit_usl(N, _usl_data(1))
    assert f.available
    assert f.alpha == pytest.approx(ALPHA, abs=0.01)
    assert f.beta == pytest.approx(BETA, rel=0.25)
    assert f.lam == pytest.approx(LAM, rel=0.05)
    for name, true in (("alpha", ALPHA), ("beta", BETA), ("lam", LAM)):
        lo, hi = getattr(f, f"{name}_ci95")
        assert lo <= true <= hi, name
    n_star = math.sqrt((1 - ALPHA) / BETA)  # 44.0
    assert f.n_star == pytest.approx(n_star, rel=0.15)
    assert f.n_star_ci95[0] <= n_star <= f.n_star_ci95[1]
    assert f.n_star_extrapolated is False
    assert f.r_squared > 0.97


def test_usl_ci_coverage_over_seeds():
    """Wald CIs should cover the true alpha and beta in about 95% of noisy replicates."""
    hits_a = hits_b = 0
    n_rep = 100
    for seed in range(n_rep):
        f = fit_usl(N, _usl_data(100 + seed))
        hits_a += f.alpha_ci95[0] <= ALPHA <= f.alpha_ci95[1]
        hits_b += f.beta_ci95[0] <= BETA <= f.beta_ci95[1]
    assert hits_a / n_rep >= 0.88
    assert hits_b / n_rep >= 0.88


def test_usl_flags_extrapolation_and_refuses_few_points():
    # data only up to N=16: the peak N* = 44 lies beyond it
    f = fit_usl(N[:7], usl(N[:7], LAM, ALPHA, BETA))
    assert f.n_star_extrapolated is True
    assert any("outside the measured" in w for w in f.warnings)
    _, flag = f.predict([8.0, 64.0])
    assert flag.tolist() == [False, True]
    few = fit_usl([1, 2, 4, 8], [1, 2, 3, 4])
    assert not few.available and few.alpha is None and "need >= 5" in few.reason
    with pytest.raises(ParameterError):
        few.predict(3)


def _mm1_mean_sojourn(rng: np.random.Generator, lam: float, mu: float, n: int) -> tuple[float, float]:
    """Mean time in system of an M/M/1 FIFO queue (Lindley recursion, vectorised) and its
    relative SE by batch means (20 batches), both from the simulated sample only."""
    a = rng.exponential(1 / lam, n)
    s = rng.exponential(1 / mu, n)
    # waiting W_k = X_k - min(0, min_{j<=k} X_j) with X = cumsum(S_{k-1} - A_k)
    u = np.concatenate([[0.0], s[:-1] - a[1:]])
    x = np.cumsum(u)
    w = x - np.minimum.accumulate(np.minimum(x, 0.0))
    t = (w + s)[n // 10 :]  # drop a 10% warm-up
    batches = np.array([b.mean() for b in np.array_split(t, 20)])
    m = float(t.mean())
    return m, float(batches.std(ddof=1) / math.sqrt(batches.size) / m)


def test_mm1_mu_inside_its_ci():
    mu = 10.0
    lam = np.array([1.0, 2, 3, 4, 5, 6, 7, 8])
    rng = np.random.default_rng(5)
    r, se = np.array([_mm1_mean_sojourn(rng, v, mu, 60_000) for v in lam]).T
    # the simulation itself against the closed form 1/(mu - lam), within 4 of its own SEs
    assert np.all(np.abs(r * (mu - lam) - 1) < 4 * se + 0.01)
    for fit in (fit_queueing(lam, r), fit_queueing(lam, r, se)):
        assert fit.available
        assert fit.mu == pytest.approx(mu, rel=0.05)
        assert fit.r0 == pytest.approx(1 / mu, rel=0.05)
        assert fit.mu_extrapolated is True
    # the weighted fit's CI holds mu (the unweighted CI assumes equal log noise at every
    # load, which queueing noise is not: it is reported, not trusted, see the coverage test)
    lo, hi = fit_queueing(lam, r, se).mu_ci95
    assert lo <= mu <= hi


def test_mm1_mu_ci_coverage_weighted():
    """With per-point SEs (batch means), the 95% CI of mu covers the truth in ~95% of seeds."""
    mu = 10.0
    lam = np.array([2.0, 4, 5, 6, 7, 8])
    hits = 0
    n_rep = 40
    for seed in range(n_rep):
        rng = np.random.default_rng(1000 + seed)
        r, se = np.array([_mm1_mean_sojourn(rng, v, mu, 20_000) for v in lam]).T
        lo, hi = fit_queueing(lam, r, se).mu_ci95
        hits += lo <= mu <= (math.inf if hi is None else hi)
    assert hits / n_rep >= 0.85


def test_queueing_too_few_points_and_predict_flags():
    f = fit_queueing([1.0, 2.0], [0.1, 0.2])
    assert not f.available and "need >= 3" in f.reason
    lam = np.array([1.0, 3, 5, 7, 8, 9])
    g = fit_queueing(lam, 0.1 / (1 - lam / 10))
    r, flag = g.predict([5.0, 9.5, 12.0])
    assert flag.tolist() == [False, True, True]
    assert r[0] == pytest.approx(0.2) and math.isinf(r[2])


def test_curve_helpers_pick_the_right_columns():
    lam = np.array([1.0, 3, 5, 7, 8])
    curve = pl.DataFrame(
        {
            "offered_load": lam,
            "offered_load_unit": ["rps"] * 5,
            "send_rate_rps": lam,
            "latency_ms_p50": 100 / (1 - lam / 10),
            "throughput_rps": lam,
            "concurrency_mean": lam * 0.1 / (1 - lam / 10),
            "valid": [True, True, True, True, False],
            "phase": ["elastic"] * 4 + ["failure"],
        }
    )
    q = fit_queueing_curve(curve, stat="p50")
    assert any("unweighted" in w for w in q.warnings)
    assert q.n_points == 4 and q.mu == pytest.approx(10.0, rel=1e-4) and q.r0 == pytest.approx(100.0, rel=1e-4)
    u = fit_usl_curve(curve)
    assert not u.available and u.n_points == 4  # 4 valid steps: too few for 3 parameters


# ---------------------------------------------------------------------------------------
# every step with the quantities a fit needs; goodness of fit reported and a poor fit flagged


def _usl_curve(flags):
    from bearing_lib.limits.fits import usl as usl_law

    n = np.array([1.0, 2, 4, 8, 16, 32, 64])
    x = usl_law(n, 0.133, 0.105, 0.00059)
    return pl.DataFrame({
        "offered_load": n, "offered_load_unit": ["concurrency"] * n.size, "throughput_rps": x,
        "latency_ms_p99": [None] * n.size, "valid": [False] * n.size, "flags": [flags] * n.size,
    }, schema_overrides={"latency_ms_p99": pl.Float64})


def test_usl_uses_steps_that_only_lack_a_p99():
    from bearing_lib.limits.fits import fit_usl_curve

    # 7 concurrency levels, too few requests for a P99 each: a throughput fit needs no P99
    f = fit_usl_curve(_usl_curve(["too_few_for_p99", "no_ci"]))
    assert f.available and f.n_points == 7
    assert f.alpha == pytest.approx(0.105, rel=1e-4) and f.beta == pytest.approx(0.00059, rel=1e-3)
    assert f.poor_fit is False
    # a step too short to measure anything is still left out
    g = fit_usl_curve(_usl_curve(["too_short"]))
    assert not g.available and g.n_points == 0


def test_a_poor_usl_fit_is_flagged_not_quoted():
    from bearing_lib.limits.fits import MIN_R_SQUARED, fit_usl, usl

    n = np.array([1.0, 2, 3, 4, 5, 6, 7, 8])
    y = np.array([1.0, 3.0, 1.2, 3.1, 1.1, 3.3, 1.0, 3.2])  # zig-zag: no USL describes it
    f = fit_usl(n, y)
    assert f.available
    # R² recomputed from the returned parameters
    yhat = usl(n, f.lam, f.alpha, f.beta)
    r2 = 1 - np.sum((y - yhat) ** 2) / np.sum((y - y.mean()) ** 2)
    assert f.r_squared == pytest.approx(r2, rel=1e-9) and r2 < MIN_R_SQUARED
    assert f.poor_fit is True and f.warnings[0].startswith("poor fit: R²")
    assert "not quoted" in f._repr_html_()


def test_queueing_falls_back_to_the_highest_supported_percentile():
    from bearing_lib.limits.fits import fit_queueing_curve

    # M/M/1, mu = 10: the sojourn is Exp(mu - lam), so P95 = -ln(0.05) / (mu - lam) exactly
    lam = np.array([1.0, 3, 5, 7, 8, 9])
    p95 = -np.log(0.05) / (10 - lam) * 1000
    c = pl.DataFrame({"offered_load": lam, "offered_load_unit": ["rps"] * lam.size, "throughput_rps": lam,
                      "latency_ms_p99": [None] * lam.size, "latency_ms_p95": p95,
                      "flags": [["too_few_for_p99"]] * lam.size, "valid": [False] * lam.size},
                     schema_overrides={"latency_ms_p99": pl.Float64})
    f = fit_queueing_curve(c, stat=None)
    assert f.available and f.stat == "p95" and f.n_points == 6
    assert f.mu == pytest.approx(10.0, rel=1e-6)
    assert f.r0 == pytest.approx(-np.log(0.05) / 10 * 1000, rel=1e-6)
    assert f.poor_fit is False
    assert any("fitted on P95" in w for w in f.warnings)
    # the default asks for the P99 and says it has none
    assert not fit_queueing_curve(c).available
