"""One statistical model of every step's evidence: where the SLA's bad share crosses its allowance.

Every SLA clause is a statement about a **share of requests**: ``p99(ttft) <= 1s`` allows at
most 1 % of the successful requests above 1 s; ``error_rate <= 1%`` at most 1 % failed;
``goodput(...) >= 95%`` at most 5 % failed or out of bounds. Each step of a load test is
evidence about that share at its load, as a **count** (``k`` bad of ``n``, per-request data), as
an **interval of counts** (a load-point table: the tool's reported percentiles bracket the share
above the threshold, the request count turns it into ranks), or as an **interval of shares**
(percentiles without a request count: the share bounds are taken as exact, said as an
assumption).

The model, per clause (``docs/limits.md``, "The estimator"):

* **shape**: the bad share rises with load as a logistic curve in log load,
  ``μ(x) = f + (1 − f) · expit(logit α + β (log x − θ))``, with ``α`` the clause's allowance:
  without a floor (``f = 0``) ``θ`` is the log load where the share crosses the allowance,
  ``β > 0`` its steepness; ``f`` is a **load-independent floor** (error-rate and goodput clauses
  only: failures that happen at every load, e.g. a deadline in front of the engines);
* **step-to-step variability**: near capacity a step's share is partly luck (queue episodes
  outlast a step), so a step's count is **beta-binomial** around ``μ(x)`` with concentration
  ``c`` (``c = ∞`` is the binomial): the model, not a widening to the step grid, says how much a
  step can be off;
* **within-step bursts** (request traces): a step's counts arrive divided by its block-bootstrap design effect
  (``limits.evidence.design_effect``: Kish's variance ratio, Rao–Scott effective counts), so ``k`` bad of ``n``
  that came in a few queue episodes weigh as the few episodes they are;
* **inference**: the posterior on a grid over ``(θ, β, c, f)`` with flat priors (uniform in
  ``θ`` over the tested range widened by a factor 2 each side, log-uniform in ``β`` and ``c``,
  ``f`` zero with probability 1/2 else log-uniform); the **crossing** ``x*`` (where ``μ = α``) has
  a posterior; its median is the point value and its 2.5 % / 97.5 % quantiles the 95 % credible
  interval. Several clauses: the limit is the lowest crossing, the clauses taken as independent
  (``P(x* > t) = Π_c P(x*_c > t)``). A step whose queue is still growing is a hard fail (the
  **steady-state** pseudo-clause): the crossing lies between the last steady load below it and
  the next load tested above the first not-steady one, uniformly in log load (:data:`STEADY_MODE`).
* **ceiling** (request traces): the share may saturate at ``h < 1`` (a plateau of a few %), ``μ(x) = f + (h − f) ·
  expit(…)``; ``h = 1`` with probability 1/2, else one of :data:`CEILING_MULTIPLES` of the allowance.

Every step that has evidence contributes its counts, however few (a 2-request step adds a little;
a step with no request adds nothing). A hand-written grid rather than a sampler (PyMC, emcee):
four parameters, ten steps, a deterministic answer in milliseconds, no extra dependency; the
beta-binomial is ``scipy.stats.betabinom``'s log-pmf written with ``scipy.special.gammaln`` so it
broadcasts over the grid (the same formula).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.special import betainc, betaincc, expit, gammaln, logit

ESTIMATOR = "exceedance model (beta-binomial bad share, logistic in log load; Bayesian grid)"
INTERVAL = ("95% credible interval of the crossing: posterior over crossing, steepness, step-to-step "
            "variability{floor} on a grid")
LEVEL = 0.95
INTERVAL_KIND = "equal-tailed"
"""How the 95 % interval is cut from the crossing's posterior: ``"equal-tailed"`` (2.5 % each side; the default)
or ``"shortest"`` (the shortest interval in log load holding 95 %: the highest-density interval of a unimodal
posterior). docs/oracle.md, round 12, measures both."""

# the grid (module constants, so a change is one edit and shows in the docs)
N_THETA = 161
PRIOR_WIDEN = math.log(2.0)  # θ ranges over the tested loads widened by a factor 2 each side
BETAS = np.geomspace(1.0, 3000.0, 16)
"""Steepness ``β`` (d logit share / d log load), log-uniform. Up to 3,000: a server that goes from no slow request
to all slow within 5 % of load (oracle large/rag with 1,200 s steps: 0 of 9,123 at 0.92x the truth, all of 10,621 at
1.05x) needs ``β`` ≈ 300 just to fit, and a range ending there put the crossing below the pass (issue 23, round 4)."""
CONCENTRATIONS = np.array([np.inf, 1e3, 100.0, 30.0, 10.0, 3.0])
"""Step-to-step variability allowed around the curve: the beta-binomial concentration ``c`` (``inf`` = the
binomial; 10: a step's share at 1 % strays by about 3 points, as 120 s windows near capacity do; 3: a step near
the crossing may read no slow request or many, as a 1,200 s step above the limit whose queue did not break out
does), each equally likely a priori. The counts they act on are already deflated by each step's design effect
(``limits.evidence.design_effect``): within-step bursts there, between-step luck here."""
ERROR_CONCENTRATIONS = np.array([np.inf, 1e3, 100.0])
"""A request trace's error-rate clause: sampling noise and mild overdispersion (a step's 1 % share strays by about
a point at ``c`` = 100). The latency shares' :data:`CONCENTRATIONS` down to 3 were measured on queue episodes (the
oracle); failures have no such measure, and a test without any failure cannot show their variability: at ``c`` = 3
its successes count for little and the crossing stays unplaced (issue 23, round 17: docs/limits.md)."""
TABLE_CONCENTRATIONS = np.array([np.inf, 1e3])
"""A load-point table's steps are interval-censored summaries of separate runs: they cannot show how much
one step's share strays from the curve, so only sampling noise and mild overdispersion are allowed (an
assumption, said in the result): this is what narrows a table's interval below its bracket's edges. A table's
**percentile** clauses take :data:`TABLE_PERCENTILE_CONCENTRATIONS` (round 24); its error-rate and goodput clauses
these."""
TABLE_PERCENTILE_CONCENTRATIONS = np.array([np.inf, 1e3, 100.0, 30.0])
"""A load-point table's percentile clauses: a step's reported percentile is an order statistic of requests that
are not independent (slow ones come in queue episodes), so its share strays from the curve by more than a binomial
of its request count (round 24, docs/limits.md "Load-point tables: coverage on a simulation"). On a closed M/M/4//N
loop summarised as tables (``tests/limits/test_table_coverage.py``: 8 steps of 120 s, ~120-1,200 requests each) the
raw pass/fail bracket misses the true limit in 32 of 100 seeds (11 of 100 with 300 s steps); with sampling noise
and mild overdispersion only (:data:`TABLE_CONCENTRATIONS`) the interval covered 76 of 100 (61 at 300 s), half-width
5.5 %; with this grid and a floor below the allowance (``estimators.model_options``) 88 of 100 (94 at 300 s),
half-width 19 % (18 %). Down to 3 (the traces' :data:`CONCENTRATIONS`) covers no more (88, 94) and is wider
(26 %, 21 %)."""
FLOOR_MULTIPLES = np.array([0.0, 0.1, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0, 5.0, 10.0])
"""The floor's grid, in multiples of the clause's allowance (fine where it decides the crossing). The whole grid
serves the error-rate and goodput clauses of load-point tables only; a request trace's clauses, every kind, take
:data:`PERCENTILE_FLOOR_MULTIPLES` (round 17, ``estimators.model_options``)."""
PERCENTILE_FLOOR = True
PERCENTILE_FLOOR_MULTIPLES = FLOOR_MULTIPLES[FLOOR_MULTIPLES < 1.0]
"""A request trace's floor stays below its allowance (named for the percentile clauses that first took it; every
clause kind of a trace since round 17): latency exceedances at every load (long outputs past an end-to-end bound)
shape the curve, while a share above the allowance at the lowest load is the logistic part's crossing below the
loads tested, or, for failures and goodput, the load-independent floor ``limits.failures`` states first."""
SPLIT_TABLES = True
"""A load-point table's grid is split at its tested loads (:func:`log_grid`). Not a trace's: measured on the oracle
(round 23), splitting moved five of its recorded floors by one seed each (small/rag's two stages within 17 of 20,
kv_starved/rag with an earlier shape 17, small/prefix 1,200 s covered 18, kv_starved/prefix two stages within 19,
a thin-step seed of small/rag without a value), a change of the interval's resolution, not of what the steps say; a
trace's failing step may be luck (its counts are overdispersed), a table's clear failure much less so (its
percentile clauses allow mild overdispersion only, :data:`TABLE_PERCENTILE_CONCENTRATIONS`, its error-rate and
goodput clauses sampling noise, :data:`TABLE_CONCENTRATIONS`)."""
_EPS = 1e-12
N_EFFECTIVE = 3
STEADY_MODE = "extend"
"""How a step whose queue is still rising bounds the crossing (:func:`steady_posterior`): ``"extend"``, uniformly
in log load from the last steady load below it to the next load tested above it (round 5: near a cliff a 120 s step
at 0.97x the limit is still filling, and the rising queue and the latency clause are one phenomenon, not two
independent crossings whose minimum leans low); ``"hard"`` (round 4), up to the not-steady load itself; ``"off"``."""
CEILING = True
"""Whether a trace's clause may saturate below 1: ``μ(x) = f + (h − f) · expit(…)`` with a ceiling ``h`` (round 5). A
server whose slow share jumps from a content floor to a plateau of a few % (oracle large/prefix: 0.6 % → 2.3 % →
2.6 %, then 13 %) is a steep logistic between ``f`` and ``h``; without ``h`` only a shallow curve fits both, and its
crossing spreads."""
CEILING_MULTIPLES = np.array([1.5, 2.0, 3.0, 5.0, 10.0, 30.0])
"""The ceiling's grid in multiples of the allowance (prior: no ceiling, ``h = 1``, with probability 1/2)."""
SHAPE_GATE = 1.0
"""An earlier test's shape (its posterior over steepness and step-to-step variability, :attr:`ClausePosterior.shape`)
is the prior of a later test's clause only when the later test's steps favour it over the flat prior: Bayes factor
at least this. On principle: a service whose share now rises differently keeps its own interval. Measured
(docs/oracle.md, round 13): the width target is met at 120 s with or without it, and its net effect on coverage is
about nil there (offset 1: 174 → 173 covered of 180 at 120 s, 168 → 167 at 1,200 s), but it spares the combination
whose shape varies most between tests (large/prefix at 1,200 s, Bayes factors 0.01–90: covered 16 → 18 of 20)."""

LAG_CARRIES = False
"""Off (measured, not adopted; docs/oracle.md, round 5): a step's between-step variability scaled by ``1 − lag`` (a
step whose evidence may lie all the way back to the previous load already spans an episode longer than itself).
With 120 s steps it brought the median half-width to 10–12 % in the TTFT mixes, but with 1,200 s steps coverage fell
from 173 to 157 of 180 (steps just above the limit still lag fully there, and their luck is what ``c`` carries)."""

LOAD_JITTER = 0.0
"""Off (measured, not adopted; docs/oracle.md, rounds 15-16): each step read at a load jittered by ``exp(ε)``, ``ε ~
N(0, σ²)`` in log load with this ``σ`` (with the lag's spread on one Gauss rule, :data:`JITTER_RULE_NODES`). Queue
episodes that outlast a step make its verdict partly luck *near capacity*, where the share is steep in load: a
location jitter is variability that grows toward the crossing (the beta-binomial's ``c`` spreads a share alike at
every load). Round 14's remaining misses were steady long steps at 0.97-0.99x the truth failing by chance. A few nodes
integrate the jitter where ``β σ`` is a few units (round 15's five Gauss-Hermite nodes: 4 % off at ``β σ`` = 1.5,
converging with more nodes; ``tests/limits/test_evidence_model.py``); for the steepest curves they are a mixture of
a few shifted loads rather than the integral."""
POOLED_JITTER = 0.03
"""The load jitter (as :data:`LOAD_JITTER`) of the steps of **pooled runs** only (a test and its follow-up,
``fit_limits(..., pool_runs=True)``; with :data:`limits.evidence.POOLED_RISING_AS_BOUND`). Separate runs of one
service, started afresh and perhaps days apart, read a step near capacity more differently than the steps of one run
do. Adopted in round 16 (docs/oracle.md): the two-stage design (a 10 × 120 s test and the follow-up bearing designs,
pooled) 171 / 152 → 174 / 177 within / covered of 180, covered ≥ 19 of 20 in every combination; a single run's fit
is unchanged (the jitter there costs width, rounds 15-16)."""
JITTER_NODES = 5
JITTER_RULE_NODES = 5
"""How a jittered step's lag points and its jitter are integrated (with :data:`LOAD_JITTER` on): ``k > 0`` (round
16), one ``k``-point Gauss rule of the whole mixture (the lag points, each spread by the jitter: exact for its moments
up to ``2k − 1``; as ``σ → 0`` it is the lag points themselves), so the jitter costs ``k`` evaluations per step
instead of 15 where the lag spreads a step (:func:`_gauss_rule`; a step without lag, e.g. a separate run, takes the
same five Gauss-Hermite nodes as before): the oracle's replay as accurate as round 15's rule and ~3x faster; ``0``
(round 15), every lag point on its own :data:`JITTER_NODES` nodes (``N_EFFECTIVE × JITTER_NODES``)."""
JITTER_LEVELS = 1
"""``1``: every step jittered by :data:`LOAD_JITTER` itself. ``L > 1`` (round 16): the jitter is a dimension of the
grid, ``σ ∈ {0, σ₀, …, (L − 1) σ₀}`` with ``σ₀`` = :data:`LOAD_JITTER`, no jitter with prior probability 1/2 and the
others sharing the rest: each clause's steps say how much their verdicts stray near the crossing (the crossing does
not depend on ``σ``, so the likelihoods are summed over it once all steps are in)."""


@dataclass(frozen=True)
class Evidence:
    """What one step says about one clause's bad share at load ``x``.

    ``n`` known: between ``k_lo`` and ``k_hi`` of ``n`` requests count against the clause
    (``k_lo == k_hi``: an exact count). ``n`` unknown (``None``): the share lies in
    ``[s_lo, s_hi]`` (a tool's percentiles without a request count).
    """

    x: float
    n: float | None = None
    x_from: float | None = None
    """The load of the step run before this one (lower): the step's queue starts from that load's state,
    so its evidence is placed anywhere between ``x_from`` and ``x`` (uniform in log load)."""
    k_lo: float = 0.0
    k_hi: float = 0.0
    s_lo: float = 0.0
    s_hi: float = 1.0
    lag: float = 1.0
    """The share of the way back to ``x_from`` the step's evidence may lie (``limits.evidence.LAG_S``)."""
    deff: float = 1.0
    """The design effect the counts were divided by (``limits.evidence.design_effect``; 1: raw counts)."""
    rising: bool = False
    """A step whose queue was still rising: ``k_lo`` of ``n`` is a lower bound of its load's share
    (``limits.evidence.RISING_AS_BOUND``; ``k_hi`` is then ``n``)."""

    @property
    def exact(self) -> bool:
        return self.n is not None and self.k_lo == self.k_hi

    @property
    def share(self) -> float | None:
        """The observed share (midpoint of an interval), for display."""
        if self.n is not None and self.n > 0:
            return (self.k_lo + self.k_hi) / 2 / self.n
        return None if self.n is not None else (self.s_lo + self.s_hi) / 2


@dataclass
class ClausePosterior:
    """The posterior of one clause's crossing on the common log-load grid."""

    name: str
    pdf: np.ndarray  # mass per grid cell of log x* (sums to P(crossing within the grid))
    below: float  # P(x* below the grid): the share exceeds the allowance at every load (a floor)
    above: float  # P(x* above the grid)
    floor_median: float | None = None
    floor_ci: tuple[float, float] | None = None
    p_floor_breaks: float = 0.0
    """Posterior probability that the load-independent floor alone exceeds the allowance."""
    p_no_floor: float = 1.0
    """Posterior probability that there is no floor."""
    n_steps: int = 0
    beta_median: float | None = None
    """Posterior median of the steepness ``β`` (d logit share / d log load)."""
    shape: np.ndarray | None = None
    """This test's own posterior over the shape, steepness × concentration (``BETAS`` × the concentrations used;
    sums to 1; from the flat prior even when an earlier test's shape was used): how the clause's bad share rises
    with load, for a later test of the same service (:data:`SHAPE_GATE`)."""
    shape_bayes_factor: float | None = None
    """With an earlier test's shape given: the Bayes factor of that shape against the flat prior on this test's
    steps (below :data:`SHAPE_GATE` it is not used)."""
    shape_used: bool = False
    """True when the earlier test's shape was the prior of this posterior."""


@dataclass
class CrossingPosterior:
    """The limit's posterior: the lowest crossing over the clauses."""

    log_grid: np.ndarray
    cdf: np.ndarray  # P(x* <= exp(log_grid[i])), with P(below the grid) at the start
    clauses: list[ClausePosterior] = field(default_factory=list)
    x_min: float = math.nan
    x_max: float = math.nan

    def quantile(self, p: float) -> float:
        """Load at posterior probability ``p`` (−inf below the grid, +inf above it)."""
        if p <= self.cdf[0]:
            return -math.inf
        if p > self.cdf[-1]:
            return math.inf
        return float(math.exp(np.interp(p, self.cdf, self.log_grid)))

    def prob_below(self, x: float) -> float:
        return float(np.interp(math.log(x), self.log_grid, self.cdf, left=self.cdf[0], right=self.cdf[-1]))

    def median(self) -> float:
        return self.quantile(0.5)

    def interval(self, level: float = LEVEL) -> tuple[float, float]:
        """The ``level`` interval of the limit (:data:`INTERVAL_KIND` says which)."""
        if INTERVAL_KIND == "shortest":
            return self.shortest(level)
        a = (1 - level) / 2
        return self.quantile(a), self.quantile(1 - a)

    def shortest(self, level: float = LEVEL, n: int = 201) -> tuple[float, float]:
        """The shortest interval in log load holding ``level`` of the posterior: the share below its lower end
        scanned on ``n`` points over the range where both ends lie on the grid (from the mass below the grid to
        1 − ``level`` − the mass above it). Where no interval on the grid holds ``level`` (more than 1 − ``level``
        off the grid), the equal-tailed interval, with its open end(s) at ±inf."""
        a0, a1 = float(self.cdf[0]), float(self.cdf[-1]) - level
        best, out = math.inf, (-math.inf, math.inf)
        if a1 >= a0:
            for a in np.linspace(a0, a1, n):
                lo, hi = self.quantile(float(a) + 1e-12), self.quantile(float(a) + level - 1e-12)
                if lo > 0 and math.isfinite(lo) and math.isfinite(hi):
                    w = math.log(hi) - math.log(lo)
                    if w < best:
                        best, out = w, (lo, hi)
        if math.isinf(best):
            a = (1 - level) / 2
            return self.quantile(a), self.quantile(1 - a)
        return out

    def draws(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """Posterior draws of the limit (inverse CDF; ±inf outside the grid)."""
        return np.array([self.quantile(float(u)) for u in rng.uniform(0, 1, n)])

    def binding(self) -> str | None:
        """The clause most likely to be the lowest crossing."""
        if not self.clauses:
            return None
        meds = []
        for c in self.clauses:
            cdf = c.below + np.cumsum(c.pdf)
            meds.append(np.interp(0.5, cdf, self.log_grid[1:]) if cdf[-1] >= 0.5 and c.below < 0.5
                        else (-math.inf if c.below >= 0.5 else math.inf))
        return self.clauses[int(np.argmin(meds))].name


LOCAL_BELOW = LOCAL_ABOVE = 3
"""Steps used per clause: the three below and the three from the first step where the isotonic (monotone)
bad share exceeds the allowance on. The logistic is a local shape: far from the crossing the share follows
other regimes (a slowly rising content floor, a saturated queue) that would bend a global fit."""


def local_window(evidence: list[Evidence], allowed: float) -> list[Evidence]:
    """The steps around the crossing of the isotonic bad share (exact counts; others are kept whole)."""
    from scipy.optimize import isotonic_regression

    ev = sorted(evidence, key=lambda e: e.x)
    # a rising step's lower bound places the window only when it read some bad request (a bound of 0 says nothing)
    if len(ev) <= LOCAL_BELOW + LOCAL_ABOVE or not all(e.exact or (e.rising and e.n and e.k_lo > 0) for e in ev):
        return ev
    n = np.array([e.n for e in ev], float)
    share = np.array([e.k_lo for e in ev], float) / n
    fit = isotonic_regression(share, weights=n).x
    over = np.nonzero(fit > allowed)[0]
    i = int(over[0]) if over.size else len(ev)
    return ev[max(0, i - LOCAL_BELOW):i + LOCAL_ABOVE]


@dataclass(frozen=True)
class FailureScatter:
    """How far the steps' failure counts stray from a share rising with load (:func:`failure_scatter`)."""

    chi2: float
    df: int
    p: float
    steps: int

    @property
    def beyond_noise(self) -> bool:
        """The scatter exceeds the binomial's at :data:`SCATTER_ALPHA`."""
        return self.p < SCATTER_ALPHA


SCATTER_ALPHA = 0.05
"""An error-rate clause of a request trace takes the latency shares' concentrations (:data:`CONCENTRATIONS`, down to
3) instead of :data:`ERROR_CONCENTRATIONS` when its steps' failures scatter around a rising share beyond sampling
noise at this level (:func:`failure_scatter`): the failures then show the step-to-step variability they are allowed
(issue 23, round 20: docs/limits.md, "Failures that stray from step to step")."""


def failure_scatter(evidence: list[Evidence]) -> FailureScatter | None:
    """Pearson χ² of the steps' exact counts (already divided by each step's design effect) around the weighted
    isotonic (non-decreasing in load) fit of their shares (scipy ``isotonic_regression``), on the steps less the
    fit's distinct levels; None with fewer than three exact steps, no failure, or no residual df. The isotonic fit
    takes any rising shape, so what is left is the steps' own scatter, not a wrong curve."""
    from scipy.optimize import isotonic_regression
    from scipy.stats import chi2

    ev = sorted((e for e in evidence if e.exact and e.n), key=lambda e: e.x)
    if len(ev) < 3:
        return None
    n = np.array([e.n for e in ev], float)
    k = np.array([e.k_lo for e in ev], float)
    if k.sum() <= 0:
        return None
    fitted = isotonic_regression(k / n, weights=n, increasing=True).x
    df = len(ev) - len(np.unique(np.round(fitted, 12)))
    if df <= 0:
        return None
    f = np.clip(fitted, 1e-12, 1 - 1e-12)
    x2 = float((((k - n * f) ** 2) / (n * f * (1 - f))).sum())
    return FailureScatter(chi2=x2, df=int(df), p=float(chi2.sf(x2, df)), steps=len(ev))


def log_grid(xs: list[float] | np.ndarray, n: int = N_THETA, *, split: bool = False) -> np.ndarray:
    """Cell edges of the common log-load grid over the tested loads widened by :data:`PRIOR_WIDEN`: ``n`` equal
    cells; with ``split`` (a load-point table's steps, :data:`SPLIT_TABLES`) also split at every tested load, so a
    cell never straddles a step. The crossing's mass in a cell is spread over the cell when its quantiles are read
    (:func:`combine`); a cell holding both crossings just below a failing step and that step's load spread them
    past it (inference-perf's vllm_batch_size: a 95 % CI to 113.75 rps above a stage at 111.92 where at least 10 %
    of 6,715 requests broke a 5 % allowance; a new user's case, round 23). Cells are unequal then;
    :func:`clause_posterior` weighs each by its width (the prior stays flat in log load)."""
    lx = np.log(np.asarray(xs, float))
    lx = lx[np.isfinite(lx)]
    base = np.linspace(lx.min() - PRIOR_WIDEN, lx.max() + PRIOR_WIDEN, n + 1)
    if not split:
        return base
    edges = np.unique(np.concatenate([base, lx]))
    # a load within a hair of an edge already there adds no cell (a zero-width cell has no prior weight anyway)
    keep = np.concatenate([[True], np.diff(edges) > 1e-9 * (base[-1] - base[0])])
    return edges[keep]


def _loglik_exact(n: float, k: float, mu: np.ndarray, conc: np.ndarray) -> np.ndarray:
    """Beta-binomial log-pmf of ``k`` of ``n`` up to a constant in the parameters (binomial where ``conc``
    is infinite); ``conc`` broadcasts along axis 2 of ``mu``'s grid."""
    mu = np.clip(mu, _EPS, 1 - _EPS)
    inf = np.isinf(conc).ravel()
    out = np.empty(np.broadcast_shapes(mu.shape, conc.shape))
    mu_b = np.broadcast_to(mu, out.shape)
    if inf.any():
        m = mu_b[:, :, inf]
        out[:, :, inf] = k * np.log(m) + (n - k) * np.log1p(-m)
    if (~inf).any():
        # betaln(k + a, n - k + b) - betaln(a, b) with a + b = c, written as three log-gamma differences: the
        # last depends on c alone, the first vanishes when k = 0 (most steps below the limit) and the second when
        # k = n; two to four gammaln per cell instead of betaln's six (same value to ~1e-11 in the log-likelihood)
        c = np.asarray(conc, float).ravel()[~inf].reshape((1, 1, -1) + (1,) * (mu.ndim - 3))
        a, b = mu * c, (1 - mu) * c
        r = gammaln(c) - gammaln(n + c)
        if k > 0:
            r = r + (gammaln(k + a) - gammaln(a))
        if n - k > 0:
            r = r + (gammaln(n - k + b) - gammaln(b))
        out[:, :, ~inf] = r
    return out


def _loglik_interval(e: Evidence, mu: np.ndarray, conc: np.ndarray) -> np.ndarray:
    """log P(share in [lo, hi]) under a Beta around ``μ`` (the beta-binomial's share, moment-matched).

    With ``n`` known the count interval is a share interval and the binomial sampling spread is
    added to the step-to-step one (``1/(c_eff + 1) = 1/n + 1/(c + 1)``); without ``n`` the shares are
    taken as exact quantiles of the step (``n → ∞``).
    """
    mu = np.clip(mu, 1e-9, 1 - 1e-9)
    if e.n is not None and e.n > 0:
        lo, hi = e.k_lo / e.n, e.k_hi / e.n
        inv = 1.0 / e.n + np.where(np.isinf(conc), 0.0, 1.0 / (conc + 1.0))
    else:
        lo, hi = e.s_lo, e.s_hi
        inv = np.where(np.isinf(conc), 1e-6, 1.0 / (conc + 1.0))
    ceff = np.maximum(1.0 / inv - 1.0, 1e-3)
    a, b = mu * ceff, (1 - mu) * ceff
    if hi >= 1:
        # an upper tail, as I_{1-lo}(b, a) = 1 - I_lo(a, b): it keeps its precision where 1 - betainc would round to 0
        # (below ~1e-16), as scipy's betaincc does, and runs ~10x faster than betaincc in scipy 1.17 (which made
        # the model 8x slower on a 17-step sweep); the two agree to 1e-10 in the log above the 1e-300 floor for
        # lo >= 1e-6. Below it 1 - lo loses lo's digits (a table's share without n can be that small): betaincc
        p = (betainc(b, a, 1.0 - lo) if lo >= 1e-6 else betaincc(a, b, lo)) if lo > 0 else np.ones_like(a)
        return np.log(np.maximum(p, 1e-300))
    p_hi = betainc(a, b, hi)
    p_lo = betainc(a, b, lo) if lo > 0 else np.zeros_like(a)
    return np.log(np.maximum(p_hi - p_lo, 1e-300))


def _gauss_rule(x: np.ndarray, w: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k``-point Gauss rule (nodes, weights summing to 1) of the discrete measure ``Σ w_i δ(x_i)``: the
    eigenvalues of its Jacobi matrix, built by the Lanczos process with full re-orthogonalisation (Golub-Welsch;
    Gautschi, *Orthogonal Polynomials*, 2004, §2.2.3). Exact for the measure's moments up to ``2k − 1``; a measure
    of fewer than ``k`` distinct points (farther apart than ~1e-8 of its spread) gives them back. Hand-written:
    numpy and scipy ship rules for the classical weights only (Hermite, Legendre, …), not for a given measure."""
    w = np.asarray(w, float) / np.sum(w)
    x = np.asarray(x, float)
    centre = float(np.dot(w, x))
    scale = float(np.sqrt(np.dot(w, (x - centre) ** 2)))
    if scale <= 1e-12 * max(1.0, abs(centre)):
        return np.array([centre]), np.array([1.0])
    z = (x - centre) / scale
    q = np.sqrt(w)
    basis, diag, off = [q], [], []
    for j in range(k):
        v = z * basis[j]
        diag.append(float(np.dot(basis[j], v)))
        for _ in range(2):  # full re-orthogonalisation, twice (a few dozen points, up to ten nodes)
            for b in basis:
                v = v - np.dot(b, v) * b
        norm = float(np.linalg.norm(v))
        if j == k - 1 or norm < 1e-8:  # the measure's points are exhausted (z has unit variance)
            break
        off.append(norm)
        basis.append(v / norm)
    nodes, vectors = np.linalg.eigh(np.diag(diag) + np.diag(off, 1) + np.diag(off, -1))
    return centre + scale * nodes, vectors[0] ** 2


def _jittered(pts: np.ndarray, sigma: float) -> tuple[np.ndarray, np.ndarray]:
    """The log loads a step's evidence is read at and their log weights (summing to 1): ``pts`` equally weighted
    (the lag's spread), each jittered by ``sigma`` (:data:`LOAD_JITTER`) on Gauss-Hermite nodes when it is > 0, or
    with :data:`JITTER_RULE_NODES` the whole mixture on one Gauss rule of that many nodes."""
    if sigma <= 0:
        return pts, np.full(pts.size, -math.log(pts.size))
    if JITTER_RULE_NODES > 0:
        t, w = np.polynomial.hermite.hermgauss(20)  # each point's normal, exact to degree 39
        x = (pts[:, None] + math.sqrt(2.0) * sigma * t[None, :]).ravel()
        nodes, weights = _gauss_rule(x, np.broadcast_to(w, (pts.size, t.size)).ravel(), JITTER_RULE_NODES)
        return nodes, np.log(np.maximum(weights, 1e-300))
    t, w = np.polynomial.hermite.hermgauss(JITTER_NODES)
    out = (pts[:, None] + math.sqrt(2.0) * sigma * t[None, :]).ravel()
    logw = np.log(np.broadcast_to(w / math.sqrt(math.pi) / pts.size, (pts.size, t.size)).ravel())
    return out, logw


def clause_posterior(name: str, evidence: list[Evidence], allowed: float, edges: np.ndarray,
                     floor: bool = False, concentrations: np.ndarray | None = None,
                     lag: bool = True, floor_multiples: np.ndarray = FLOOR_MULTIPLES,
                     ceiling: bool = False, shape_prior: np.ndarray | None = None,
                     jitter: float | None = None) -> ClausePosterior:
    """The posterior of the crossing of one clause over the cells of ``edges`` (log load).

    ``concentrations``: the step-to-step variability allowed (default :data:`CONCENTRATIONS`);
    a load-point table uses :data:`TABLE_PERCENTILE_CONCENTRATIONS` for a percentile clause and
    :data:`TABLE_CONCENTRATIONS` for the others (see there). ``jitter``: the steps' load jitter in log load
    (default :data:`LOAD_JITTER`; a load-point table's separate runs take none).
    """
    sigma = LOAD_JITTER if jitter is None else float(jitter)
    ev = [e for e in evidence if e.x > 0 and math.isfinite(e.x) and (e.n is None or e.n > 0)]
    centres = (edges[:-1] + edges[1:]) / 2
    if not ev:
        return ClausePosterior(name, np.zeros(centres.size), 0.0, 0.0)
    alpha = min(max(allowed, 1e-6), 1 - 1e-6)
    floors = np.minimum(np.asarray(floor_multiples) * alpha, 0.9) if floor else np.array([0.0])
    fprior = np.where(floors == 0, 0.5, 0.5 / max(len(floors) - 1, 1)) if floor else np.array([1.0])
    ceilings = np.concatenate([[1.0], np.minimum(np.asarray(CEILING_MULTIPLES) * alpha, 0.99)]) if ceiling \
        else np.array([1.0])
    cprior = np.where(ceilings == 1.0, 0.5, 0.5 / max(len(ceilings) - 1, 1)) if ceiling else np.array([1.0])
    th = centres[:, None, None, None, None]
    be = BETAS[None, :, None, None, None]
    concs = CONCENTRATIONS if concentrations is None else np.asarray(concentrations, float)
    fl = floors[None, None, None, :, None]
    ce = ceilings[None, None, None, None, :]
    la = logit(alpha)
    def mu_at(lxe: float | np.ndarray) -> np.ndarray:
        return fl + np.maximum(ce - fl, 0.0) * expit(la + be * (lxe - th))

    def loglik(sig: float) -> np.ndarray:
        ll = np.zeros((centres.size, BETAS.size, concs.size, floors.size, ceilings.size))
        for e in ev:
            co = concs[None, None, :, None, None]
            if LAG_CARRIES and lag and e.x_from is not None and 0 < e.x_from < e.x:
                with np.errstate(divide="ignore"):
                    co = co / max(1.0 - e.lag, 0.0) if e.lag < 1.0 else np.full_like(co, np.inf)
            if lag and e.x_from is not None and 0 < e.x_from < e.x and e.lag > 0:
                # the step's queue starts from the previous load's state: its evidence lies anywhere in the last
                # ``lag`` share of the way from the previous load to its own (uniform in log load)
                pts = math.log(e.x) - e.lag * np.linspace(0.0, 1.0, N_EFFECTIVE) * (math.log(e.x) - math.log(e.x_from))
            else:
                pts = np.array([math.log(e.x)])
            pts, logw = _jittered(pts, sig)
            if pts.size == 1:
                mu = mu_at(float(pts[0]))
                ll = ll + (_loglik_exact(e.n, e.k_lo, mu, co) if e.exact else _loglik_interval(e, mu, co))
                continue
            parts = [_loglik_exact(e.n, e.k_lo, mu_at(p), co) if e.exact else _loglik_interval(e, mu_at(p), co)
                     for p in pts]
            stack = np.stack(parts) + logw.reshape((-1,) + (1,) * ll.ndim)
            mx = stack.max(axis=0)
            ll = ll + mx + np.log(np.exp(stack - mx).sum(axis=0))
        return ll

    if sigma > 0 and JITTER_LEVELS > 1:
        # σ on the grid: the crossing does not depend on it, so each level's likelihood of all steps is summed with
        # its prior weight (no jitter 1/2, the others sharing the rest)
        levels = [loglik(j * sigma) + math.log(0.5 if j == 0 else 0.5 / (JITTER_LEVELS - 1))
                  for j in range(JITTER_LEVELS)]
        mx = np.maximum.reduce(levels)
        ll = mx + np.log(sum(np.exp(v - mx) for v in levels))
    else:
        ll = loglik(sigma)
    ll = ll + np.log(fprior)[None, None, None, :, None] + np.log(cprior)[None, None, None, None, :]
    width = np.diff(edges)
    if not np.allclose(width, width[0], rtol=1e-9, atol=0.0):
        # the prior is flat in log load: each θ cell weighs its width (cells split at the tested loads, log_grid)
        ll = ll + np.log(width / width.mean())[:, None, None, None, None]
    w = np.exp(ll - ll.max())
    w /= w.sum()
    shape = w.sum(axis=(0, 3, 4))  # this test's own say on the shape (flat prior), for a later test
    bf, used = None, False
    if shape_prior is not None:
        prior = np.asarray(shape_prior, float)
        if prior.shape != shape.shape:
            raise ValueError(f"shape prior of {name}: expected {shape.shape[0]} x {shape.shape[1]} weights "
                             f"(steepness x concentration), got shape {prior.shape}")
        if not np.isfinite(prior).all() or (prior < 0).any() or prior.sum() <= 0:
            raise ValueError(f"shape prior of {name}: expected finite, non-negative weights with a positive sum "
                             f"(steepness x concentration); got {int((~np.isfinite(prior)).sum())} non-finite, "
                             f"{int((prior < 0).sum())} negative, sum {float(np.nansum(prior)):g}")
        prior = prior / prior.sum()
        # the Bayes factor of the earlier shape against the flat prior: this test's marginal likelihood under the
        # earlier test's posterior over the shape, over its marginal likelihood under the flat grid prior
        bf = float((shape * prior).sum() * prior.size)
        if bf >= SHAPE_GATE:
            used = True
            w = w * prior[None, :, :, None, None]
            w /= w.sum()
    # the crossing x*: μ(x*) = α; with a floor f < α it moves above θ, with f ≥ α it is below every load
    if floor or ceiling:
        # with a ceiling h ≤ α the share never reaches the allowance (above every load)
        with np.errstate(divide="ignore", invalid="ignore"):
            target = np.where((fl < alpha) & (ce > alpha), (alpha - fl) / (ce - fl), np.nan)
            shift = (logit(np.clip(target, 1e-12, 1 - 1e-12)) - la) / be
        lx = np.where(fl < alpha, np.where(ce > alpha, th + shift, np.inf), -np.inf)
    else:
        lx = np.broadcast_to(th, w.shape)
    lx = np.broadcast_to(lx, w.shape).ravel()
    wf = w.ravel()
    below = float(wf[lx < edges[0]].sum())
    above = float(wf[lx >= edges[-1]].sum())
    inside = (lx >= edges[0]) & (lx < edges[-1])
    idx = np.searchsorted(edges, lx[inside], side="right") - 1
    pdf = np.bincount(idx, weights=wf[inside], minlength=centres.size)
    post = ClausePosterior(name, pdf, below, above, n_steps=len(ev), shape=shape, shape_bayes_factor=bf,
                           shape_used=used)
    pb = np.cumsum(w.sum(axis=(0, 2, 3, 4)))
    post.beta_median = float(np.exp(np.interp(0.5, pb, np.log(BETAS))))
    if floor:
        pf = w.sum(axis=(0, 1, 2, 4))
        # a piecewise-linear CDF over the floor grid (the mass of a grid value spread down to the one below)
        cdf = np.concatenate([[0.0], np.cumsum(pf)])
        pts = np.concatenate([[0.0], floors])
        post.floor_median = float(np.interp(0.5, cdf, pts))
        post.floor_ci = (float(np.interp(0.025, cdf, pts)), float(np.interp(0.975, cdf, pts)))
        post.p_floor_breaks = float(pf[floors >= alpha].sum())
        post.p_no_floor = float(pf[floors == 0].sum())
    return post


def steady_posterior(name: str, xs: list[float], not_steady: list[bool], edges: np.ndarray) -> ClausePosterior:
    """The steady-state pseudo-clause: the crossing lies between the last steady load below the first
    not-steady one and the next load tested above it (:data:`STEADY_MODE` ``"extend"``; ``"hard"``: that load
    itself), uniformly in log load. A queue still rising at the end of a step is over its limit or still filling
    toward a steady state the SLA allows; the next load up is where the data say which."""
    centres = (edges[:-1] + edges[1:]) / 2
    bad = [x for x, ns in zip(xs, not_steady, strict=True) if ns]
    if not bad:
        return ClausePosterior(name, np.zeros(centres.size), 0.0, 1.0)
    first = min(bad)
    good = [x for x, ns in zip(xs, not_steady, strict=True) if not ns and x < first]
    if not good:
        return ClausePosterior(name, np.zeros(centres.size), 1.0, 0.0)
    lo, hi = math.log(max(good)), math.log(first)
    if STEADY_MODE == "off":
        return ClausePosterior(name, np.zeros(centres.size), 0.0, 1.0)
    if STEADY_MODE == "extend":
        above = [x for x in xs if x > first]
        if above:
            hi = math.log(min(above))
    overlap = np.clip(np.minimum(edges[1:], hi) - np.maximum(edges[:-1], lo), 0.0, None)
    return ClausePosterior(name, overlap / overlap.sum(), 0.0, 0.0)


def combine(clauses: list[ClausePosterior], edges: np.ndarray, x_min: float, x_max: float) -> CrossingPosterior:
    """The lowest crossing over independent clause posteriors."""
    surv = np.ones(edges.size)  # P(x* > edge) for the minimum, at each cell edge
    below_all = 1.0
    for c in clauses:
        total = c.below + c.pdf.sum() + c.above
        if total <= 0:
            continue
        cdf_edges = (c.below + np.concatenate([[0.0], np.cumsum(c.pdf)])) / total
        surv = surv * (1.0 - cdf_edges)
        below_all *= 1.0 - c.below / total
    cdf = 1.0 - surv
    return CrossingPosterior(log_grid=edges, cdf=np.maximum.accumulate(cdf), clauses=clauses, x_min=x_min,
                             x_max=x_max)


__all__ = ["ESTIMATOR", "INTERVAL", "SCATTER_ALPHA", "ClausePosterior", "CrossingPosterior", "Evidence",
           "FailureScatter", "clause_posterior", "combine", "failure_scatter", "local_window", "log_grid",
           "steady_posterior"]
