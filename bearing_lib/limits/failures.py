"""Failures told apart: a load-independent floor of failed requests, and what those requests share.

A failure that happens where the server is quiet does not come from load. Per run and mix, the
**quiet steps** are those where every percentile clause's exceedance share is at most half its
allowance and the queue is steady: there the server has spare capacity, so failures there are a
**floor** (a deadline in front of the engines, requests too long for any instance, a bad route).

* the floor's share is the pooled failure share of the quiet steps, with a Wilson 95 % interval;
* it is called load-independent only if the failure share does not rise across the quiet steps: one-sided
  p ≥ 0.05 for a rising slope of failures on log load. Where the steps scatter within binomial noise, a binomial
  GLM (``statsmodels``; with one quiet step the trend cannot be tested, said so; with two there is no residual df
  to estimate a dispersion and the binomial stands); where a quiet step has no failure (or only failures) the
  slope's estimate runs off toward the separation and its Wald test loses its power, so the score test of the slope
  at zero is used instead (statsmodels ``GLM.score_test``; Cochran–Armitage's trend test). Where three or more
  steps scatter beyond the binomial's (Pearson χ² above its 95 % point), the **beta-binomial likelihood-ratio test**
  of the slope (:func:`_betabinomial_rise_p`; round 20: the quasi-binomial scale it replaced took a step-shaped rise
  for scatter and called failures that grow fifty-fold with load a floor);
* it **breaks** the clause when a one-sided exact binomial test at 5 % (``scipy.stats.binomtest``) puts it
  above the allowance, on the **effective counts** ``k / φ`` of ``n / φ`` (Rao–Scott), ``φ`` the steps'
  dispersion: Pearson χ² of the steps' counts around the pooled share over ``m − 1`` df, at least 1.
  Failures come in bursts that differ from step to step (a deadline hit only while a long prompt is in
  flight, a bad replica for a minute), and the pooled binomial test then overstates the evidence
  (docs/limits.md, "False breaks"). The SLA then fails at every load, and more instances do not fix it;
  the limit is given for the other clauses.

Per clause (:func:`clause_floors`, what the estimators read): an error-rate or goodput clause's floor from a
trace's quiet steps as above, or, for a load-point table (no requests to count), the model's floor ``f``
(``limits.model``) fitted to the reported error rates (:func:`table_floor`); either becomes a typed
``FailureFloor`` with its statement.

What the failed requests share (:func:`describe_failures`): a latency ceiling (no request of the run
completed later than a sharp maximum: a deadline), prompt or requested output lengths longer than
most successful requests, a common error text.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from bearing_lib.limits import evidence as ev_mod
from bearing_lib.limits import model, pooled
from bearing_lib.limits.curves import wilson_interval
from bearing_lib.limits.judging import JudgedStep, usable_steps
from bearing_lib.limits.replicates import ReplicateTable
from bearing_lib.limits.result import FailureFloor
from bearing_lib.limits.sla import SLA, Clause

TREND_ALPHA = 0.05
NEAR_SEPARATION = 1e-6
"""A trend fit whose fitted share at a step lies this close to 0 or 1 (where the step has both outcomes) is read as
separated: the rise test is the score test (:func:`_rising_p`)."""
RISE_SAID = 1.5
"""A floor's statement names the largest rise of the failure odds per doubling of load its quiet steps do not exclude
(:func:`rise_bound`) when it is at least this: "no rise shown" from a few failures at two loads is weak evidence of
"independent of load", and the reviewer is told how weak."""
BREAK_ALPHA = 0.05
DISPERSION_ALPHA = 0.05
"""The rise-with-load test is quasi-binomial only when the steps scatter around the fitted trend beyond binomial
noise at this level (Pearson χ² test): an unconditional quasi-binomial scale on one residual df halves the power to
see a real rise (docs/limits.md, "False breaks")."""


@dataclass(frozen=True)
class QuietStep:
    """One step's failures where the server had spare capacity."""

    x: float
    failed: int
    known: int
    deff: float = 1.0
    """The step's block-bootstrap design effect of its failure share (``evidence.design_effect``: failures that
    come in bursts within the step); 1 without replicates. Read only where the floor rests on one load."""


@dataclass(frozen=True)
class Floor:
    share: float
    ci95: tuple[float, float]
    p_breaks: float
    """1 − the one-sided binomial p-value of 'the floor exceeds the allowance'."""
    breaks: bool
    trend_p: float | None
    """One-sided p-value of a rising failure share across the quiet steps (None: one quiet load, in one step or
    several)."""
    n_steps: int
    failed: int
    known: int
    dispersion: float = 1.0
    """φ: the steps' failure counts' variance over the binomial's (Pearson χ² / (steps − 1), at least 1)."""
    rise_hi: float | None = None
    """The largest rise of the failure odds per doubling of load the quiet steps do not exclude (:func:`rise_bound`;
    None for one load or a step with no failure)."""


def quiet_floor(steps: Sequence[QuietStep], allowed: float) -> Floor | None:
    """The failure floor of the quiet steps, or None when they hold no failure or the share rises with load."""
    from scipy.stats import binomtest

    steps = [s for s in steps if s.known > 0]
    k = sum(s.failed for s in steps)
    n = sum(s.known for s in steps)
    if not steps or k == 0:
        return None
    trend_p, rise_hi = _rise(steps) if len({s.x for s in steps}) >= 2 else (None, None)
    if trend_p is not None and trend_p < TREND_ALPHA:
        return None  # failures rise with load even where the latency clauses hold: not a floor
    phi = dispersion(steps)
    if trend_p is None:
        # one load: no step to compare with, so the clustering the steps' scatter measures elsewhere is the step's
        # own, over its time blocks (the requests-weighted design effect; 1 without replicates)
        phi = max(phi, sum(s.deff * s.known for s in steps) / n)
    # Rao–Scott: the pooled count carries the information of k / φ failures in n / φ independent requests
    k_eff, n_eff = k / phi, n / phi
    lo, hi = (float(v) for v in wilson_interval(k_eff, n_eff))
    p = float(binomtest(round(k_eff), max(round(n_eff), 1), allowed, alternative="greater").pvalue)
    return Floor(share=k / n, ci95=(lo, hi), p_breaks=1.0 - p, breaks=p < BREAK_ALPHA, trend_p=trend_p,
                 n_steps=len(steps), failed=k, known=n, dispersion=phi, rise_hi=rise_hi)


def dispersion(steps: Sequence[QuietStep]) -> float:
    """φ of the steps' failure counts around their pooled share: Pearson χ² / (steps − 1), at least 1 (1 for one
    step, or no failure or no success at all)."""
    k = np.array([s.failed for s in steps], float)
    n = np.array([s.known for s in steps], float)
    p = k.sum() / n.sum()
    if len(steps) < 2 or not 0 < p < 1:
        return 1.0
    x2 = float((((k - n * p) ** 2) / (n * p * (1 - p))).sum())
    return max(1.0, x2 / (len(steps) - 1))


def _trend_fit(steps: Sequence[QuietStep]):  # noqa: ANN202 - a statsmodels GLMResults, or None
    """The binomial GLM of the steps' failure shares on log load (the requests as variance weights), quasi-binomial
    when the steps scatter around the trend beyond binomial noise; None when the design is singular."""
    import warnings

    import statsmodels.api as sm
    from scipy.stats import chi2

    x = np.log(np.array([s.x for s in steps], float))
    n = np.array([s.known for s in steps], float)
    # shares with the requests as variance weights: the same binomial fit as (failed, ok) counts, and the form
    # whose scale="X2" is Pearson χ² / residual df (with a two-column endog statsmodels' X2 scale is not that)
    y = np.array([s.failed for s in steps], float) / n
    try:
        with warnings.catch_warnings():  # separation (no failure at one load) is answered by the callers
            warnings.simplefilter("ignore")
            model = sm.GLM(y, sm.add_constant(x), family=sm.families.Binomial(), var_weights=n)
            fit = model.fit()
            # the steps' scatter around the fitted trend exceeds the binomial's (Pearson χ² above its 95 % point on
            # the residual df): the Wald interval takes the dispersion in, and with it estimated from a few residual
            # df the t quantile on those df (as R's confint of a quasi family does: a normal quantile covered a known
            # slope in 0.83-0.95 of beta-binomial draws, docs/limits.md "How large a rise"); otherwise the
            # binomial's stands
            if len(steps) > 2 and fit.pearson_chi2 > chi2.ppf(1 - DISPERSION_ALPHA, fit.df_resid):
                fit = model.fit(scale="X2", use_t=True)
    except Exception:  # noqa: BLE001 - a singular design: the score test needs no fit
        return None
    return fit


def _separated(steps: Sequence[QuietStep]) -> bool:
    """A step with no failure or only failures: the slope's estimate runs off toward the separation."""
    return any(s.failed <= 0 or s.failed >= s.known for s in steps)


def _degenerate(fit) -> bool:  # noqa: ANN001 - a statsmodels GLMResults, or None
    """A trend fit that is missing or not finite, or (near separation) puts a step's share within
    :data:`NEAR_SEPARATION` of 0 or 1: one step's residual then swamps the Pearson χ², the quasi scale and the Wald
    test (6 of 60 at a quarter of the load fitted at 5e-9 read p = 0.50 for a share rising to 99 %)."""
    if fit is None:
        return True
    mu = np.asarray(fit.mu, float)
    return (not np.all(np.isfinite(np.asarray(fit.params, float))) or not math.isfinite(float(fit.scale))
            or bool(((mu < NEAR_SEPARATION) | (mu > 1.0 - NEAR_SEPARATION)).any()))


def _monotone_dispersion(steps: Sequence[QuietStep]) -> float:
    """The steps' scatter beyond any rising trend: Pearson χ² of their failure counts around the weighted isotonic
    (non-decreasing in load) fit of their shares over the steps less the fit's levels (``model.failure_scatter``,
    the error-rate clause's measure too), at least 1, and only where it exceeds the binomial's at 5 % (1 with two
    steps or no residual df, as :func:`_trend_fit`'s quasi scale). The scale of the score test where the logistic fit
    is degenerate: its own Pearson χ² is then the separation's, not the steps' variability."""
    sc = model.failure_scatter([model.Evidence(x=s.x, n=float(s.known), k_lo=float(s.failed), k_hi=float(s.failed))
                                for s in steps])
    return max(1.0, sc.chi2 / sc.df) if sc is not None and sc.beyond_noise else 1.0


def _rising_p(steps: Sequence[QuietStep]) -> float:
    """One-sided p-value that the failure share rises with log load (the binomial GLM's Wald test, the score test
    under separation, the beta-binomial likelihood-ratio test where three or more steps scatter beyond the
    binomial's: module docstring)."""
    return _rise(steps)[0]


def _rise(steps: Sequence[QuietStep]) -> tuple[float, float | None]:
    """:func:`_rising_p` and :func:`rise_bound` from one trend fit (two or more loads)."""
    fit = _trend_fit(steps)
    degenerate = _degenerate(fit)
    separated = _separated(steps)
    return _rising_p_of(steps, fit, degenerate, separated), (
        None if degenerate or separated else _bound_of(fit))


def _rising_p_of(steps: Sequence[QuietStep], fit, degenerate: bool, separated: bool) -> float:  # noqa: ANN001
    # three or more steps scattering beyond the binomial's: the beta-binomial likelihood-ratio test, which weighs a
    # run of steps without failure as the skewed distribution of clustered failures does (a quasi-binomial scale
    # takes the variance from the steps' scatter around a logistic and a step-shaped rise inflates it: 0 failures
    # in 1,890 requests at the five lowest loads, then 151, 101 and 20 of ~800, read p = 0.051, a floor)
    scatter = len(steps) > 2 and (_monotone_dispersion(steps) > 1.0 if degenerate else float(fit.scale) > 1.0)
    if scatter:
        return _betabinomial_rise_p(steps)
    if degenerate or separated:
        # a step with no failure (or only failures), or a fitted share at 0 or 1: the slope's maximum-likelihood
        # estimate runs off toward the separation and its Wald test loses its power (Hauck & Donner 1977; 0 of 200
        # then 40 of 200 read p = 0.50); the score test of the slope at zero needs no estimate: Cochran–Armitage's
        # trend test (Agresti 2013, §5.3.5 / §3.4.6), one-sided, scaled as the Wald test is when the steps scatter
        # beyond the binomial's; where the fit is degenerate its own Pearson χ² measures the separation, not the
        # steps, and the scale is their scatter around a monotone trend instead
        x = np.log(np.array([s.x for s in steps], float))
        n = np.array([s.known for s in steps], float)
        k = np.array([s.failed for s in steps], float)
        scale = _monotone_dispersion(steps) if degenerate else max(float(fit.scale), 1.0)
        return _score_trend_p(x, k, n, scale)
    b, p2 = float(fit.params[1]), float(fit.pvalues[1])
    if not math.isfinite(b) or not math.isfinite(p2):
        return 1.0
    return p2 / 2 if b > 0 else 1.0 - p2 / 2


def _betabinomial_rise_p(steps: Sequence[QuietStep]) -> float:
    """One-sided p-value of a failure share rising with log load where the steps scatter beyond the binomial's: the
    likelihood-ratio test of the slope of a beta-binomial regression (logit link on centred log load, the
    concentration ``c`` estimated with it, both fits by maximum likelihood: scipy ``betabinom`` and
    ``minimize`` L-BFGS-B from several starts, ``c`` within 1–1.2e6 and the slope within ±50), signed by the slope.
    statsmodels ships no beta-binomial regression, hence scipy. Measured (docs/limits.md, "A rise through clustered
    failures"): under a true floor it calls a rise at 5 % in 3–11 % of draws with 6 or 10 steps (the quasi-binomial
    test 3–10 %), 4–19 % with 3 (2–17 %), the most where failures cluster hardest (``c`` = 30); on failures rising
    with load and clustered at ``c`` = 30 it finds the rise the quasi-binomial test missed in four of five seeds."""
    import warnings

    from scipy.optimize import minimize
    from scipy.special import expit
    from scipy.stats import betabinom, norm

    x = np.log(np.array([s.x for s in steps], float))
    x = x - x.mean()
    k = np.array([s.failed for s in steps], float)
    n = np.array([s.known for s in steps], float)

    def nll(params: np.ndarray, slope: bool) -> float:
        a, b, lc = params if slope else (params[0], 0.0, params[1])
        c = math.exp(lc)
        p = np.clip(expit(a + b * x), 1e-9, 1 - 1e-9)
        return -float(betabinom.logpmf(k, n, c * p, c * (1 - p)).sum())

    p0 = min(max(k.sum() / n.sum(), 1e-4), 1 - 1e-4)
    a0 = math.log(p0 / (1 - p0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        null = min((minimize(nll, np.array([a0, lc]), args=(False,), method="L-BFGS-B",
                             bounds=[(-30.0, 30.0), (0.0, 14.0)]) for lc in (1.0, 4.0, 8.0)), key=lambda r: r.fun)
        alt = min((minimize(nll, np.array([null.x[0], b, null.x[1]]), args=(True,), method="L-BFGS-B",
                            bounds=[(-30.0, 30.0), (-50.0, 50.0), (0.0, 14.0)]) for b in (-2.0, 0.0, 2.0, 6.0)),
                  key=lambda r: r.fun)
    lr = max(2.0 * (null.fun - min(alt.fun, null.fun)), 0.0)
    return float(norm.sf(math.copysign(math.sqrt(lr), float(alt.x[1]))))


def rise_bound(steps: Sequence[QuietStep]) -> float | None:
    """The largest rise of the failure odds per doubling of load the quiet steps do not exclude: ``2 ** b_hi``, with
    ``b_hi`` the one-sided 95 % upper bound of the trend fit's slope on log load (its Wald interval, quasi-binomial
    where the steps scatter beyond the binomial's; its coverage measured on binomial draws: docs/limits.md). None for
    one load, where the fit is (near) separated (no finite estimate), or beyond 2^30."""
    if len({s.x for s in steps}) < 2 or _separated(steps):
        return None
    fit = _trend_fit(steps)  # the bound alone: no rise test (the beta-binomial's takes a fraction of a second)
    return None if _degenerate(fit) else _bound_of(fit)


def _bound_of(fit) -> float | None:  # noqa: ANN001 - a statsmodels GLMResults, not degenerate
    hi = float(np.asarray(fit.conf_int(alpha=2 * TREND_ALPHA))[1][1])
    return float(2.0**hi) if math.isfinite(hi) and hi <= 30.0 else None


def _score_trend_p(x: np.ndarray, k: np.ndarray, n: np.ndarray, scale: float = 1.0) -> float:
    """One-sided p-value of the score test that the failure share rises with ``x`` (log load): statsmodels'
    ``GLM.score_test`` of the slope at zero from the intercept-only binomial fit, its χ² divided by ``scale`` (a
    quasi-binomial dispersion, at least 1), signed by ``U = Σ (x_i − x̄) k_i`` (for a 2 × m table, Cochran–Armitage's
    trend test). 1 when the pooled share is 0 or 1 or the loads do not vary."""
    import warnings

    import statsmodels.api as sm
    from scipy.stats import norm

    p = float(k.sum() / n.sum())
    xb = float((n * x).sum() / n.sum())
    if not 0.0 < p < 1.0 or float((n * (x - xb) ** 2).sum()) <= 0.0:
        return 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        null = sm.GLM(k / n, np.ones((len(n), 1)), family=sm.families.Binomial(), var_weights=n)
        stat = float(np.asarray(null.score_test(null.fit().params, exog_extra=x[:, None])[0]).ravel()[0])
    if not math.isfinite(stat) or stat < 0.0:
        return 1.0
    u = float(((x - xb) * k).sum())
    return float(norm.sf(math.copysign(math.sqrt(stat / scale), u)))


def describe_failures(requests: pl.DataFrame, failed: pl.Expr, ok: pl.Expr) -> str | None:
    """What the failed requests of a run share, in words (None when nothing stands out)."""
    parts: list[str] = []
    f = requests.filter(failed)
    g = requests.filter(ok)
    if f.height == 0 or g.height == 0:
        return None
    if "latency_ms" in g.columns:
        lat = g["latency_ms"].drop_nulls()
        if lat.len() >= 20:
            top = float(lat.max())
            near_n = int((lat >= 0.95 * top).sum())
            near = near_n / lat.len()
            # a deadline bunches the successful requests under it (an untruncated tail puts one or two within 5 % of
            # its maximum), and failed requests with a recorded latency ran up to it: half of them, or as many as the
            # bunching asks of the successes (fast 429s beside a deadline's time-outs do not hide it); failures that
            # all returned early ("output too few tokens" after a few seconds) are not a deadline's
            fl = f["latency_ms"].drop_nulls() if "latency_ms" in f.columns else pl.Series([], dtype=pl.Float64)
            at_it = int((fl >= 0.95 * top).sum())
            ran_to_it = fl.len() == 0 or at_it >= 0.5 * fl.len() or at_it >= DEADLINE_MIN_NEAR
            if near >= 0.01 and near_n >= DEADLINE_MIN_NEAR and ran_to_it:
                ran = f"; {at_it} of the {fl.len()} failed requests with a latency ran to it" if fl.len() else ""
                parts.append(f"no request completed later than {top / 1000:.3g} s at any load ({near:.1%} of the "
                             f"successful ones within 5 % of it{ran}): a deadline of about {top / 1000:.3g} s in "
                             "front of the engines")
    for col, what in (("input_tokens", "prompts"), ("requested_output_tokens", "requested outputs")):
        if col not in f.columns:
            continue
        fv, gv = f[col].drop_nulls(), g[col].drop_nulls()
        if fv.len() >= 3 and gv.len() >= 20:
            p90 = float(gv.quantile(0.9, "linear"))
            med = float(fv.quantile(0.5, "linear"))
            if med > p90:
                parts.append(f"their {what} are long (median {med:,.0f} tokens, above the successful requests' "
                             f"P90 {p90:,.0f})")
        elif fv.len() < f.height / 2 and gv.len() >= 20:
            parts.append(f"{f.height - fv.len()} of the {f.height} failed requests record no {what[:-1]} length")
            break
    if "error" in f.columns:
        err = f["error"].drop_nulls()
        if err.len():
            top, cnt = err.value_counts(sort=True).row(0)
            if cnt / f.height >= 0.5:
                # the text itself is the tool's (untrusted, and quoted in reports): its leading status code only
                code = str(top).split(":")[0].strip()
                if code.isdigit() and code[0] in "23":
                    # a success status with a failure: the tool's own check failed on it (a JMeter assertion,
                    # ``success=false`` with ``failureMessage``), not an HTTP error
                    what = (f"text on a status-{code} response, a failed assertion of the load tool rather than an "
                            "HTTP error")
                else:
                    what = f"status {code}" if code.isdigit() else "text"
                parts.append(f"{cnt} of {f.height} carry the same error {what} (`bearing inspect` lists the texts)")
    return "; ".join(parts) or None


DEADLINE_MIN_NEAR = 5
"""The successful requests a deadline must bunch within 5 % of the longest one (besides at least 1 % of them) before
the floor's statement names it: an untruncated latency tail of a few hundred requests puts one or two there. As many
failed requests running to it name it too where more failed fast (half of the timed failures otherwise)."""
FLOOR_BREAKS = 0.9
"""A clause is broken by its load-independent floor when the posterior probability that the floor alone
exceeds the allowance is at least this (and the floor's 95 % interval excludes zero): a claim that no
number of instances helps needs strong evidence."""


def table_floor(c: Clause, post: model.ClausePosterior, evidence: list[model.Evidence]) -> FailureFloor | None:
    """The clause's load-independent floor, when the data show one (its 95 % interval excludes zero)."""
    if post.floor_ci is None or post.floor_median is None:
        return None
    lo, hi = post.floor_ci
    if post.p_no_floor >= 0.05:  # a floor is claimed only when the data exclude none at 95 %
        return None
    breaks = post.p_floor_breaks >= FLOOR_BREAKS
    allowed = pooled.allowed_share(c)
    what = {"percentile": f"of requests above the clause's threshold ({c.text})",
            "error_rate": "of requests fail", "goodput": "of requests fail or miss a bound"}[c.kind]
    loads = sorted(e.x for e in evidence)
    share = post.floor_median
    if breaks:
        statement = (f"the SLA fails at every tested load ({loads[0]:.4g}–{loads[-1]:.4g}) because about {share:.1%} "
                     f"{what} independently of load (floor 95% CI {lo:.2%}–{hi:.2%}, above the {allowed:.2%} "
                     f"{c.text} allows): more instances do not fix it; find and fix what those requests share")
    else:
        statement = (f"a load-independent floor of about {share:.2%} {what} (95% CI {lo:.2%}–{hi:.2%}), within the "
                     f"{allowed:.2%} allowed; the limit is where the load-dependent part adds the rest")
    return FailureFloor(clause=c.text, share=share, ci95=(lo, hi), allowed=allowed,
                        p_breaks=post.p_floor_breaks, breaks_clause=breaks, statement=statement)


def clause_floors(judged: list[JudgedStep], sla: SLA, tables: bool,
                  reps: ReplicateTable | None = None) -> list[FailureFloor]:
    """Load-independent failure floors per failure clause (error rate, goodput).

    A request trace: the failures of the quiet steps (``limits.failures``), each step with its block-bootstrap
    design effect from ``reps`` (the group's replicates; read where the floor rests on one load). A load-point
    table has no per-request data: the model's floor ``f`` (``limits.model``) fitted to the reported error rates.
    """
    pool = usable_steps(judged, tables)
    clauses = [c for c in sla.clauses if c.kind in ("error_rate", "goodput")]
    if not clauses or not pool:
        return []
    out = []
    if tables:
        evidence, _ = ev_mod.table_evidence(pool, sla.clauses)
        xs = [e.x for c in clauses for e in evidence[c.text]]
        if not xs:
            return []
        edges = model.log_grid(xs)
        for c in clauses:
            if not evidence[c.text]:
                continue
            post = model.clause_posterior(c.text, evidence[c.text], pooled.allowed_share(c), edges, floor=True,
                                          concentrations=model.TABLE_CONCENTRATIONS, jitter=0.0)
            fl = table_floor(c, post, evidence[c.text])
            if fl is not None:
                out.append(fl)
        return out
    pct = [(i, c) for i, c in enumerate(sla.clauses) if c.kind == "percentile"]
    for i, c in enumerate(sla.clauses):
        if c not in clauses:
            continue
        quiet = []
        for j in pool:
            r = j.row
            if j.not_steady or r.count(i).n is None:
                continue
            calm = all(r.count(q).n and (r.count(q).bad or 0) / r.count(q).n <= pooled.allowed_share(pc) / 2
                       for q, pc in pct)
            if calm:
                k, n = int(r.count(i).bad or 0), int(r.count(i).n)
                deff = 1.0 if reps is None else ev_mod.design_effect(
                    reps.share(int(r.step), i, pooled.allowed_share(c)), k, n)
                quiet.append(QuietStep(float(j.x), k, n, deff))
        fl = quiet_floor(quiet, pooled.allowed_share(c))
        if fl is None:
            continue
        allowed = pooled.allowed_share(c)
        what = "of requests fail" if c.kind == "error_rate" else "of requests fail or miss a bound"
        loads = sorted(q.x for q in quiet if q.known > 0)
        ci = f"95% CI {fl.ci95[0]:.2%}–{fl.ci95[1]:.2%}"
        if fl.trend_p is None:
            # one load (or steps all at one load): a share that does not change with load is not shown, only that
            # it is there; the statement says what a second load would settle
            where = (f"{fl.failed} of {fl.known} at {loads[0]:.4g}, the only load where the latency clauses hold "
                     "with room; with one load, whether the failures grow with load cannot be tested"
                     + (f"; they come in bursts within the step and count as {fl.failed / fl.dispersion:.3g} of "
                        f"{fl.known / fl.dispersion:.3g} independent requests (design effect {fl.dispersion:.3g})"
                        if fl.dispersion > 1.0 else ""))
            statement = (f"the SLA fails at every tested load because about {fl.share:.1%} {what} there ({where}; "
                         f"{ci}, above the {allowed:.2%} {c.text} allows): a test at a second, lower load would tell "
                         "a floor that more instances do not fix from failures that come with load") if fl.breaks \
                else (f"about {fl.share:.2%} {what} ({where}; {ci}); the {allowed:.2%} allowed is not exceeded by it "
                      "alone")
        else:
            where = (f"{fl.failed} of {fl.known} at the {fl.n_steps} load(s) where the latency clauses hold with room "
                     f"({loads[0]:.4g}–{loads[-1]:.4g}; no rise across them: one-sided p = {fl.trend_p:.2g}"
                     + (f", though failure odds up to {fl.rise_hi:.2g}× per doubling of load are not excluded (95%)"
                        if fl.rise_hi is not None and fl.rise_hi >= RISE_SAID else "") + ")")
            statement = (f"the SLA fails at every tested load because about {fl.share:.1%} {what} independently of "
                         f"load ({where}; {ci}, above the {allowed:.2%} {c.text} allows): more instances do not fix "
                         "it") if fl.breaks \
                else (f"a load-independent floor of about {fl.share:.2%} {what} ({where}; {ci}); the {allowed:.2%} "
                      "allowed is not exceeded by it alone")
        out.append(FailureFloor(clause=c.text, share=fl.share, ci95=fl.ci95, allowed=allowed, p_breaks=fl.p_breaks,
                                breaks_clause=fl.breaks, statement=statement, one_load=fl.trend_p is None))
    return out


__all__ = ["DEADLINE_MIN_NEAR", "FLOOR_BREAKS", "RISE_SAID", "Floor", "QuietStep", "clause_floors",
           "describe_failures", "dispersion", "quiet_floor", "rise_bound", "table_floor"]
