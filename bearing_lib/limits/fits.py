"""Model fits on load curves: the Universal Scalability Law and a single-queue latency law.

* **USL** (Gunther): throughput at concurrency N,
  ``X(N) = lam * N / (1 + alpha (N - 1) + beta N (N - 1))``; ``alpha`` is contention,
  ``beta`` coherency (crosstalk), ``lam`` the single-client throughput. Peak concurrency
  ``N* = sqrt((1 - alpha) / beta)``. Fitted by ``scipy.optimize.curve_fit`` (bounded
  least squares, ``alpha in [0, 1]``, ``beta >= 0``); 95% CIs are Wald intervals from the
  covariance with Student-t quantiles on ``n - 3`` degrees of freedom; ``N*``'s CI is
  the delta method on log N* (so it stays positive); with ``beta``'s CI reaching 0 its
  upper end is unbounded (None).
* **Queueing**: ``R(lam) = R0 / (1 - lam / mu)`` (an M/M/1-like single bottleneck; for
  M/M/1 it holds for the mean *and* every percentile of the sojourn time, since the
  sojourn is exponential with rate ``mu - lam``). Fitted on the log scale (latency noise
  is multiplicative): for a given ``mu`` the best ``log R0`` is a mean, so the residual
  sum of squares is profiled over ``mu`` (scipy ``minimize_scalar``), and the 95% CI of
  ``mu`` is the profile set ``RSS(mu) <= RSS_min (1 + F(0.95; 1, n-2) / (n-2))``, which
  is asymmetric as it should be near ``mu = max(lam)``.

Both results report goodness of fit (R², RMSE) and set ``poor_fit`` with a warning when R²
is below :data:`MIN_R_SQUARED` (0.8): such a fit is reported, flagged, and not to be quoted.
Both use every step that has the quantities they need: a step flagged only for too few
requests for some percentile (``too_few_for_pNN``) still has a sound throughput, so the
USL uses it; the queueing fit uses the highest percentile that enough steps support.

Both results say when a question goes beyond the data: ``N*`` outside the measured
concurrencies, ``mu`` above the highest measured arrival rate (it always is: the model
puts the pole there), and :meth:`UslFit.predict` / :meth:`QueueFit.predict` return the
flag with each prediction. With too few points a result has ``available=False`` and a
``reason``, and every number is None.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np
import polars as pl

from bearing_lib.common.errors import ParameterError

USL_MIN_POINTS = 5
QUEUE_MIN_POINTS = 3
MIN_R_SQUARED = 0.8
"""Goodness-of-fit floor: a fit whose R² (log-scale R² for queueing) is below it is flagged
``poor_fit`` and its parameters are not to be quoted (docs/phases-and-fits.md)."""
QUEUE_STATS = ("p99", "p95", "p90", "p50", "mean")
_INFO_FLAGS = frozenset({"no_times", "no_ci", "steadiness_unknown"})  # as limits.curves.INFO_FLAGS


def _t975(df: int) -> float:
    from scipy.stats import t

    return float(t.ppf(0.975, df))



def _json_dict(obj: object) -> dict[str, object]:
    """``asdict`` with tuples as lists (JSON arrays)."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(obj).items()}  # type: ignore[call-overload]

@dataclass
class UslFit:
    """USL fit result (None values and ``reason`` when unavailable)."""

    available: bool = True
    reason: str = ""
    alpha: float | None = None
    beta: float | None = None
    lam: float | None = None
    alpha_ci95: tuple[float | None, float | None] = (None, None)
    beta_ci95: tuple[float | None, float | None] = (None, None)
    lam_ci95: tuple[float | None, float | None] = (None, None)
    n_star: float | None = None
    n_star_ci95: tuple[float | None, float | None] = (None, None)
    n_star_extrapolated: bool | None = None
    x_max: float | None = None
    r_squared: float | None = None
    rmse: float | None = None
    n_points: int = 0
    n_range: tuple[float | None, float | None] = (None, None)
    warnings: list[str] = field(default_factory=list)
    poor_fit: bool | None = None

    def predict(self, n: float | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Throughput at concurrency ``n`` and a per-value flag: True = extrapolated."""
        if not self.available:
            raise ParameterError(f"USL fit unavailable: {self.reason}")
        n = np.asarray(n, dtype=float)
        x = usl(n, self.lam, self.alpha, self.beta)  # type: ignore[arg-type]
        lo, hi = self.n_range
        return x, (n < lo) | (n > hi)  # type: ignore[operator]

    def to_dict(self) -> dict[str, object]:
        return _json_dict(self)

    def _repr_html_(self) -> str:  # pragma: no cover - notebook display
        if not self.available:
            return f"<p><b>USL</b> unavailable: {self.reason}</p>"
        if self.poor_fit:
            return f"<p><b>USL</b> poor fit (R²={self.r_squared:.2f} < {MIN_R_SQUARED:g}): parameters not quoted</p>"
        return (
            f"<p><b>USL</b> α={self.alpha:.4g} β={self.beta:.3g} λ={self.lam:.4g} N*={self.n_star or float('nan'):.4g}"
            f"{' (extrapolated)' if self.n_star_extrapolated else ''}; R²={self.r_squared:.3f}</p>"
        )


def usl(n: np.ndarray, lam: float, alpha: float, beta: float) -> np.ndarray:
    """USL throughput ``lam N / (1 + alpha (N-1) + beta N (N-1))``."""
    n = np.asarray(n, dtype=float)
    return lam * n / (1.0 + alpha * (n - 1.0) + beta * n * (n - 1.0))


def _gof(y: np.ndarray, yhat: np.ndarray) -> tuple[float, float]:
    ss_res = float(np.sum((y - yhat) ** 2))
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    return (1.0 - ss_res / ss_tot if ss_tot > 0 else math.nan), math.sqrt(ss_res / y.size)


def fit_usl(concurrency: np.ndarray | list[float], throughput: np.ndarray | list[float]) -> UslFit:
    """Fit the USL to throughput (any rate unit) vs concurrency (clients or in-flight requests).

    Parameters
    ----------
    concurrency
        N per point (> 0), e.g. the clients of a concurrency sweep or Little's-law mean
        in-flight requests of an rps sweep.
    throughput
        Completed throughput per point, same length.

    Examples
    --------
    >>> n = [1, 2, 4, 8, 16, 32]
    >>> x = usl(np.array(n), 10.0, 0.05, 0.002)
    >>> f = fit_usl(n, x)
    >>> round(f.alpha, 3), round(f.beta, 4), round(f.lam, 2)
    (0.05, 0.002, 10.0)
    """
    from scipy.optimize import curve_fit

    n = np.asarray(concurrency, dtype=float)
    y = np.asarray(throughput, dtype=float)
    if n.shape != y.shape:
        raise ParameterError(f"concurrency and throughput differ in length ({n.size} vs {y.size})")
    ok = np.isfinite(n) & np.isfinite(y) & (n > 0) & (y >= 0)
    n, y = n[ok], y[ok]
    if n.size < USL_MIN_POINTS or np.unique(n).size < USL_MIN_POINTS:
        return UslFit(
            False,
            f"the USL has 3 parameters; need >= {USL_MIN_POINTS} points at distinct concurrency, "
            f"found {np.unique(n).size}",
            n_points=int(n.size),
        )
    order = np.argsort(n)
    n, y = n[order], y[order]
    lam0 = max(float(y[0] / n[0]), 1e-9)
    try:
        popt, pcov = curve_fit(
            usl, n, y, p0=[lam0, 0.01, 1e-4], bounds=([0.0, 0.0, 0.0], [np.inf, 1.0, np.inf]), maxfev=20000
        )
    except (RuntimeError, ValueError) as exc:
        return UslFit(False, f"least squares did not converge: {exc}", n_points=int(n.size))
    lam, alpha, beta = (float(v) for v in popt)
    se = np.sqrt(np.clip(np.diag(pcov), 0.0, None))
    tq = _t975(n.size - 3)
    r2, rmse = _gof(y, usl(n, *popt))
    warnings: list[str] = []
    if not np.all(np.isfinite(se)):
        warnings.append("covariance not estimable: CIs unavailable")
        se = np.full(3, np.nan)

    def ci(v: float, s: float, lo_bound: float = -math.inf, hi_bound: float = math.inf):
        if not np.isfinite(s):
            return (None, None)
        return (max(v - tq * s, lo_bound), min(v + tq * s, hi_bound))

    n_star = n_star_ci = None
    extrap = None
    if beta > 0 and alpha < 1:
        n_star = math.sqrt((1.0 - alpha) / beta)
        extrap = bool(n_star < n[0] or n_star > n[-1])
        # delta method on log N* = 0.5 (log(1-alpha) - log beta)
        g = np.array([0.0, -0.5 / (1.0 - alpha), -0.5 / beta])
        var = float(g @ pcov @ g) if np.all(np.isfinite(pcov)) else math.nan
        if np.isfinite(var):
            s = math.sqrt(max(var, 0.0))
            beta_lo = beta - tq * se[2]
            hi = None if beta_lo <= 0 else n_star * math.exp(tq * s)
            n_star_ci = (n_star * math.exp(-tq * s), hi)
        if extrap:
            warnings.append(f"N* = {n_star:.4g} lies outside the measured concurrency {n[0]:.4g}-{n[-1]:.4g}")
    else:
        warnings.append("beta = 0: throughput never peaks within the model (N* infinite)")
    poor = _poor(r2, warnings)
    return UslFit(
        True,
        "fitted (scipy curve_fit, bounded least squares; Wald CIs, t on n-3 df)",
        alpha=alpha,
        beta=beta,
        lam=lam,
        alpha_ci95=ci(alpha, se[1], 0.0, 1.0),
        beta_ci95=ci(beta, se[2], 0.0),
        lam_ci95=ci(lam, se[0], 0.0),
        n_star=n_star,
        n_star_ci95=n_star_ci or (None, None),
        n_star_extrapolated=extrap,
        x_max=float(usl(np.array([n_star]), lam, alpha, beta)[0]) if n_star else None,
        r_squared=r2,
        rmse=rmse,
        n_points=int(n.size),
        n_range=(float(n[0]), float(n[-1])),
        warnings=warnings,
        poor_fit=poor,
    )


@dataclass
class QueueFit:
    """Fit of ``R = R0 / (1 - lam/mu)`` (None values and ``reason`` when unavailable)."""

    available: bool = True
    reason: str = ""
    mu: float | None = None
    mu_ci95: tuple[float | None, float | None] = (None, None)
    r0: float | None = None
    r_squared_log: float | None = None
    rmse_log: float | None = None
    n_points: int = 0
    lam_range: tuple[float | None, float | None] = (None, None)
    mu_extrapolated: bool | None = None
    warnings: list[str] = field(default_factory=list)
    poor_fit: bool | None = None
    stat: str | None = None

    def predict(self, lam: float | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Latency at arrival rate ``lam`` (inf at or beyond mu) and a flag: True = extrapolated."""
        if not self.available:
            raise ParameterError(f"queueing fit unavailable: {self.reason}")
        lam = np.asarray(lam, dtype=float)
        with np.errstate(divide="ignore"):
            r = np.where(lam < self.mu, self.r0 / (1.0 - lam / self.mu), np.inf)  # type: ignore[operator]
        lo, hi = self.lam_range
        return r, (lam < lo) | (lam > hi)  # type: ignore[operator]

    def to_dict(self) -> dict[str, object]:
        return _json_dict(self)

    def _repr_html_(self) -> str:  # pragma: no cover - notebook display
        if not self.available:
            return f"<p><b>Queueing fit</b> unavailable: {self.reason}</p>"
        if self.poor_fit:
            return (f"<p><b>Queueing fit</b> poor fit (log R²={self.r_squared_log:.2f} < {MIN_R_SQUARED:g}):"
                    " parameters not quoted</p>")
        lo, hi = (("∞" if v is None else f"{v:.4g}") for v in self.mu_ci95)
        return f"<p><b>Queueing fit</b> μ={self.mu:.4g} [{lo}, {hi}], R0={self.r0:.4g}</p>"


def fit_queueing(
    arrival_rate: np.ndarray | list[float],
    latency: np.ndarray | list[float],
    latency_rel_se: np.ndarray | list[float] | None = None,
) -> QueueFit:
    """Fit ``R = R0 / (1 - lam/mu)`` to latency (any unit) vs arrival rate (any rate unit).

    ``mu`` comes out in the arrival-rate unit, ``R0`` in the latency unit. Pass only
    points where the system was stable (elastic/plastic steps): beyond ``mu`` the model
    has no steady state.

    ``latency_rel_se`` (optional, per point): the relative standard error of each
    latency (= SE of log latency), e.g. from batch means or a percentile's CI. Queueing
    noise grows steeply near ``mu``, so an unweighted fit trusts the noisiest points
    too much and its CI is too narrow; with SEs the fit is weighted and the CI is the
    known-variance profile interval ``RSS_w(mu) <= RSS_w,min + 3.84 s``, where
    ``s = max(1, RSS_w,min / (n-2))`` inflates it when the scatter exceeds the stated
    SEs (Birge ratio). Without SEs the F-test interval above assumes equal log noise.

    Examples
    --------
    >>> lam = np.array([1.0, 3, 5, 7, 8, 9])
    >>> f = fit_queueing(lam, 0.1 / (1 - lam / 10))
    >>> round(f.mu, 3), round(f.r0, 3)
    (10.0, 0.1)
    """
    from scipy.optimize import minimize_scalar
    from scipy.stats import chi2
    from scipy.stats import f as f_dist

    lam = np.asarray(arrival_rate, dtype=float)
    r = np.asarray(latency, dtype=float)
    if lam.shape != r.shape:
        raise ParameterError(f"arrival_rate and latency differ in length ({lam.size} vs {r.size})")
    if latency_rel_se is None:
        se = np.ones_like(r)
    else:
        se = np.asarray(latency_rel_se, dtype=float)
        if se.shape != r.shape:
            raise ParameterError(f"latency_rel_se and latency differ in length ({se.size} vs {r.size})")
    ok = np.isfinite(lam) & np.isfinite(r) & (lam >= 0) & (r > 0) & np.isfinite(se) & (se > 0)
    lam, r, se = lam[ok], r[ok], se[ok]
    w = 1.0 / se**2
    if lam.size < QUEUE_MIN_POINTS or np.unique(lam).size < QUEUE_MIN_POINTS:
        return QueueFit(
            False,
            f"need >= {QUEUE_MIN_POINTS} points at distinct arrival rates with a latency; found {np.unique(lam).size}",
            n_points=int(lam.size),
        )
    y = np.log(r)
    lmax = float(lam.max())

    def rss_at(mu: float) -> tuple[float, float]:
        z = y + np.log1p(-lam / mu)
        c = float(np.sum(w * z) / np.sum(w))
        return float(np.sum(w * (z - c) ** 2)), c

    # search on u = log(mu/lmax - 1): mu from lmax*(1+1e-6) to lmax*(1+1e6)
    def obj(u: float) -> float:
        return rss_at(lmax * (1.0 + math.exp(u)))[0]

    grid = np.linspace(math.log(1e-6), math.log(1e6), 400)
    vals = np.array([obj(u) for u in grid])
    k = int(np.argmin(vals))
    lo_u, hi_u = grid[max(k - 1, 0)], grid[min(k + 1, grid.size - 1)]
    res = minimize_scalar(obj, bounds=(lo_u, hi_u), method="bounded", options={"xatol": 1e-10})
    u_hat = float(res.x) if res.fun <= vals[k] else float(grid[k])
    mu = lmax * (1.0 + math.exp(u_hat))
    rss_min, c = rss_at(mu)
    dof = lam.size - 2
    warnings: list[str] = []
    if dof >= 1:
        if latency_rel_se is None:
            cut = rss_min * (1.0 + float(f_dist.ppf(0.95, 1, dof)) / dof)
        else:
            cut = rss_min + float(chi2.ppf(0.95, 1)) * max(1.0, rss_min / dof)
        lo_mu, hi_mu = _profile_bounds(obj, u_hat, cut, grid[0], grid[-1], lmax)
        if hi_mu is None:
            warnings.append("latency barely rises: mu's upper bound is not identified")
        ci = (lo_mu, hi_mu)
    else:
        ci = (None, None)
        warnings.append("no residual degrees of freedom: CI unavailable")
    ybar = float(np.sum(w * y) / np.sum(w))
    ss_tot = float(np.sum(w * (y - ybar) ** 2))
    r2 = 1.0 - rss_min / ss_tot if ss_tot > 0 else math.nan
    warnings.append(
        f"mu = {mu:.4g} is beyond the highest measured arrival rate {lmax:.4g}: it is an extrapolation of the model"
    )
    poor = _poor(r2, warnings)
    return QueueFit(
        True,
        "fitted on log latency; R0 profiled out; mu CI from the profile RSS ("
        + ("F test, equal log noise)" if latency_rel_se is None else "weighted by the stated SEs)"),
        mu=float(mu),
        mu_ci95=ci,
        r0=float(math.exp(c)),
        r_squared_log=r2,
        rmse_log=math.sqrt(float(np.sum((y - c - np.log(1.0 / (1.0 - lam / mu))) ** 2)) / lam.size),
        n_points=int(lam.size),
        lam_range=(float(lam.min()), lmax),
        mu_extrapolated=True,
        warnings=warnings,
        poor_fit=poor,
    )


def _poor(r2: float, warnings: list[str]) -> bool:
    """True (and a warning) when R² is below :data:`MIN_R_SQUARED` or undefined."""
    if math.isfinite(r2) and r2 >= MIN_R_SQUARED:
        return False
    warnings.insert(0, f"poor fit: R² {r2:.2f} < {MIN_R_SQUARED:g}; the model does not describe these steps,"
                       " do not quote its parameters")
    return True


def usable_steps(curve: pl.DataFrame) -> pl.DataFrame:
    """Steps whose only flags are informational or ``too_few_for_pNN`` (all steps without ``flags``).

    A step with too few requests for a P99 still measured its throughput and its lower
    percentiles; a step that is too short, not steady or whose generator fell behind did not.
    Without a ``flags`` column, ``valid`` decides.
    """
    if "flags" in curve.columns:
        bad = pl.col("flags").list.eval(
            ~(pl.element().is_in(list(_INFO_FLAGS)) | pl.element().str.starts_with("too_few_for_"))).list.any()
        return curve.filter(~bad.fill_null(False))
    return curve.filter(pl.col("valid")) if "valid" in curve.columns else curve


def _profile_bounds(obj, u_hat: float, cut: float, u_min: float, u_max: float, lmax: float):
    """Where the profile RSS crosses ``cut`` on each side of ``u_hat`` (brentq), as mu values.

    The lower end is bounded by the data (mu > max lam); an upper end beyond ``u_max``
    is not identified (None).
    """
    from scipy.optimize import brentq

    def f(u: float) -> float:
        return obj(u) - cut

    lo = u_min if f(u_min) <= 0 else brentq(f, u_min, u_hat, xtol=1e-12)
    hi = None if f(u_max) <= 0 else brentq(f, u_hat, u_max, xtol=1e-12)
    mu_lo = float(lmax * (1.0 + math.exp(lo)))
    return mu_lo, (None if hi is None else float(lmax * (1.0 + math.exp(hi))))


def fit_usl_curve(curve: pl.DataFrame) -> UslFit:
    """USL on a load-curve frame: ``throughput_rps`` vs concurrency.

    Concurrency is the offered load when ``offered_load_unit`` is ``concurrency``, else
    Little's-law ``concurrency_mean``. Steps are those of :func:`usable_steps`: a throughput
    fit needs no latency percentile, so a step flagged only ``too_few_for_p99`` is used.
    """
    g = usable_steps(curve)
    unit = g["offered_load_unit"].drop_nulls().first() if "offered_load_unit" in g.columns and g.height else None
    ncol = "offered_load" if unit == "concurrency" or "concurrency_mean" not in g.columns else "concurrency_mean"
    return fit_usl(g[ncol].to_numpy(), g["throughput_rps"].to_numpy())


def fit_queueing_curve(curve: pl.DataFrame, *, metric: str = "latency_ms", stat: str | None = "p99") -> QueueFit:
    """Queueing fit on a load-curve frame: ``{metric}_{stat}`` vs arrival rate.

    Arrival rate is ``send_rate_rps`` when present, else ``offered_load`` in rps. Steps are
    those of :func:`usable_steps` that are not ``phase`` failure. A concurrency sweep has
    no arrival rate set by the client: completed throughput is used and the fit says so in
    its warnings. ``stat=None`` picks the first of P99, P95, P90, P50, mean that at least
    :data:`QUEUE_MIN_POINTS` steps support (the M/M/1 law holds for every percentile), so
    steps too short for a P99 still give a fit, labelled with the percentile used. With the
    curve's ``{metric}_{stat}_ci95_lo/hi`` columns each point is weighted by the SE implied
    by its order-statistic CI; without them the fit is unweighted (noted in ``warnings``).
    """
    g = usable_steps(curve)
    if "phase" in g.columns:
        g = g.filter(pl.col("phase").fill_null("") != "failure")
    notes = []
    if stat is None:
        counts = {s: int(g[f"{metric}_{s}"].is_not_null().sum()) if f"{metric}_{s}" in g.columns else 0
                  for s in QUEUE_STATS}
        stat = next((s for s in QUEUE_STATS if counts[s] >= QUEUE_MIN_POINTS), QUEUE_STATS[0])
        if stat != QUEUE_STATS[0]:
            notes.append(f"{QUEUE_STATS[0].upper()} supported on {counts[QUEUE_STATS[0]]} step(s) only: fitted on"
                         f" {'the mean' if stat == 'mean' else stat.upper()}")
    col = f"{metric}_{stat}"
    if col not in g.columns:
        return QueueFit(False, f"the curve has no column {col}", stat=stat)
    unit = g["offered_load_unit"].drop_nulls().first() if "offered_load_unit" in g.columns and g.height else None
    if "send_rate_rps" in g.columns and unit != "concurrency":
        lam = g["send_rate_rps"].to_numpy()
    elif unit == "concurrency":
        lam = g["throughput_rps"].to_numpy()
        notes.append("concurrency sweep: arrival rate taken as completed throughput")
    else:
        lam = g["offered_load"].to_numpy()
    lo_c, hi_c = f"{col}_ci95_lo", f"{col}_ci95_hi"
    se = None
    if lo_c in g.columns and hi_c in g.columns:
        with np.errstate(invalid="ignore", divide="ignore"):
            se = (np.log(g[hi_c].to_numpy().astype(float)) - np.log(g[lo_c].to_numpy().astype(float))) / 3.919927969
        if not np.isfinite(se).any():
            se = None
        else:  # a step without a CI gets the widest SE seen (a percentile that is hardly supported)
            se = np.where(np.isfinite(se) & (se > 0), se, np.nanmax(se))
    if se is None:
        notes.append(f"{col} has no CI columns: fitted unweighted (CI assumes equal log noise at every load)")
    fit = fit_queueing(lam, g[col].to_numpy().astype(float), se)
    fit.stat = stat
    fit.warnings.extend(notes)
    return fit
