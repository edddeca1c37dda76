"""Factor of safety (FOS), verdict bands, allowable capacity and CBU.

* ``FOS = Q_ult / Q_target``. Per mix, ``Q_ult`` is that mix's limit and ``FOS_m`` reads
  "if all production traffic looked like mix m". Blended with the production mix
  weights ``w_m`` (renormalised over the mixes that have a limit), the fleet's capacity
  is the weighted harmonic mean ``Q_blend = 1 / Σ w_m / Q_m`` (each request of mix m
  uses ``1/Q_m`` of a second of the service), and ``FOS = Q_blend / Q_target``.
* 95 % CI by Monte Carlo with a fixed seed: each limit and the target are drawn from a
  two-piece log-normal whose 2.5 % / 97.5 % points are the given CI ends (median at the
  point value), independently; the FOS CI is the 2.5 % / 97.5 % quantile (linear) of
  the drawn ``Q_blend / Q_target``. A missing CI means that input is held fixed.
* Censored limits are reported as bounds, never as numbers: a limit "≥ X (never
  failed)" gives "FOS ≥ X / Q_target"; a limit "< Y" (failed at the first step) gives
  "FOS < Y / Q_target". A blend with a lower-bound mix is a lower bound, with an
  upper-bound mix an upper bound; with both it cannot be bounded.
* Verdict by service tier (critical ≥ 2.5, standard 1.5–3.0, non-core ≥ 1.2;
  configurable) plus the sources' rule that production sits at 60–70 % of the
  breakpoint (utilisation = ``Q_target / Q_ult``, ceiling 0.70).
* Allowable capacity = ``Q_ult / target FOS`` (the tier's design FOS, by default its
  minimum); CBU per minute = throughput / allowable, minutes above 0.8 listed.
"""

from __future__ import annotations

import dataclasses
import html
import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from bearing_lib.common.blend import blended_capacity
from bearing_lib.common.errors import BadValueError, ParameterError
from bearing_lib.common.estimate import SIGN, Estimate
from bearing_lib.common.format import fmt_number as _n
from bearing_lib.common.quantiles import quantile
from bearing_lib.plan.interval import OPEN_ABOVE, OPEN_BELOW, Interval, OpenEnd, ci_text, open_end, opened, scaled
from bearing_lib.plan.jsonform import STRICT, to_json

Censored = Literal["none", "above", "below", "not_monotone"]
Bound = Literal["none", "lower", "upper", "unbounded"]
Color = Literal["green", "yellow", "red"]

MC_DRAWS = 20_000
MC_SEED = 20261129
Z975 = 1.959963984540054
UTILISATION_CEILING = 0.70
UTILISATION_FLOOR = 0.60
CBU_THRESHOLD = 0.8
NEAR_TERM_FACTOR = 1.5
"""Staged reservation (docs/domain.md): near term = current peak × 1.5; mid term = 6-month forecast × 1.5."""
_DEFAULT_OPEN = {"high": OPEN_ABOVE, "low": OPEN_BELOW, "both": f"{OPEN_ABOVE}; {OPEN_BELOW}"}


# --------------------------------------------------------------------------- tiers
@dataclass(frozen=True)
class TierBands:
    """FOS band of a service tier: ``fos_min`` ≤ FOS (≤ ``fos_max`` when set); the plan's ``tier``.

    ``design_fos`` is the target FOS used for allowable capacity (default: ``fos_min``);
    ``target_fos`` (the one used) and ``band`` (the band in words) are filled from them.
    """

    __pydantic_config__ = STRICT
    name: str
    fos_min: float
    fos_max: float | None = None
    design_fos: float | None = None
    target_fos: float = field(default=None, kw_only=True)  # type: ignore[assignment]
    band: str = field(default=None, kw_only=True)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self.fos_min <= 0 or (self.fos_max is not None and self.fos_max <= self.fos_min):
            raise ParameterError(
                f"tier {self.name!r}: expected 0 < fos_min < fos_max (got {self.fos_min}, {self.fos_max})"
            )
        if self.design_fos is not None and self.design_fos <= 0:
            raise ParameterError(f"tier {self.name!r}: design_fos must be > 0 (got {self.design_fos})")
        if self.target_fos is None:
            object.__setattr__(self, "target_fos", self.design_fos if self.design_fos is not None else self.fos_min)
        if self.band is None:
            object.__setattr__(self, "band", self.describe())

    def describe(self) -> str:
        return f"{self.fos_min:g}–{self.fos_max:g}" if self.fos_max is not None else f"≥ {self.fos_min:g}"

    def to_dict(self) -> dict[str, object]:
        return to_json(self)


TIERS: dict[str, TierBands] = {
    "critical": TierBands("critical", 2.5),
    "standard": TierBands("standard", 1.5, 3.0),
    "non-core": TierBands("non-core", 1.2),
}


def get_tier(name: str, *, fos_min: float | None = None, fos_max: float | None = None,
             design_fos: float | None = None) -> TierBands:
    """A tier by name (``critical``, ``standard``, ``non-core``), with optional overrides."""
    key = name.lower().replace("_", "-")
    if key == "noncore":
        key = "non-core"
    if key not in TIERS:
        raise ParameterError(f"unknown service tier {name!r}; expected one of {', '.join(TIERS)}")
    t = TIERS[key]
    if fos_min is None and fos_max is None and design_fos is None:
        return t
    return TierBands(t.name, fos_min if fos_min is not None else t.fos_min,
                     fos_max if fos_max is not None else t.fos_max, design_fos)


# --------------------------------------------------------------------------- inputs
@dataclass(frozen=True)
class Limit:
    """One mix's ultimate capacity in completed requests per second.

    ``censored``: ``none`` (a measured limit), ``above`` (never failed: ``q_ult_rps`` is
    a lower bound), ``below`` (failed at the first step: an upper bound),
    ``not_monotone`` (measured, but the curve passed again after failing; treated as a
    value and flagged).
    """

    mix: str
    q_ult_rps: float
    ci95: Interval | None = None
    """The 95 % CI in completed req/s; an end the limits left open is ``None`` (a CI open above: no step
    above the limit failed a clause). Every number the plan makes from the limit keeps that end open."""
    censored: Censored = "none"
    statement: str = ""
    open_reason: str | None = None
    """Why an end of ``ci95`` is open (None when both ends are closed)."""
    capped: bool = False
    """The limits held the SLA crossing at the run's saturated throughput (``q_ult.capped``): the value is the
    most the server completed, so the limit is an upper bound and every number made from it says so."""
    achieved_lower_bound: bool = False
    """The limit's completed rate is read from a step whose send window was shorter than a typical request
    (``q_ult.achieved_lower_bound``): the server may have completed more. It stays a value (the offered-load limit
    is measured), and the verdict that the target exceeds it says so (:func:`verdict`, ``rate_lower_bound``)."""

    def __post_init__(self) -> None:
        if not (self.q_ult_rps > 0 and math.isfinite(self.q_ult_rps)):
            raise BadValueError(f"mix {self.mix!r}: q_ult must be a positive finite rate (got {self.q_ult_rps})")
        if self.censored not in ("none", "above", "below", "not_monotone"):
            raise BadValueError(f"mix {self.mix!r}: censored must be none|above|below|not_monotone, "
                                f"got {self.censored!r}")
        if self.ci95 is not None:
            lo, hi = self.ci95
            if lo is None and hi is None:
                raise BadValueError(f"mix {self.mix!r}: ci95 has no closed end; give None for no interval")
            if not ((lo is None or 0 < lo <= self.q_ult_rps) and (hi is None or self.q_ult_rps <= hi)):
                raise BadValueError(
                    f"mix {self.mix!r}: ci95 {self.ci95} must bracket q_ult {self.q_ult_rps} and be > 0"
                )
            if open_end(self.ci95) and self.open_reason is None:
                object.__setattr__(self, "open_reason", _DEFAULT_OPEN[open_end(self.ci95)])

    @property
    def open_end(self) -> Literal["low", "high"] | None:
        """The end of ``ci95`` that is open, if one is."""
        return open_end(self.ci95)  # type: ignore[return-value]

    @property
    def bound(self) -> Bound:
        if self.capped:
            return "upper"
        return {"above": "lower", "below": "upper"}.get(self.censored, "none")  # type: ignore[return-value]


UPPER_BOUND_REASON = "the load test failed at its first step"
"""Why a limit is an upper bound when the limits say ``censored: below``."""

CAPPED_REASON = "the server saturated below the SLA crossing: the limit is capped at the most it completed"
"""Why a limit is an upper bound when the limits held it at the saturated throughput (``q_ult.capped``)."""

UNTESTED_BASIS = {False: "the most the test completed", True: "the blended limit the test showed"}
"""What a lower-bound limit below the planned peak is, in words, by whether it blends several mixes: the verdict's
"untested at the peak" and the business scorecard say the same (a completed rate, not the offered load a step ran
at: an SGLang run offered 8 rps and completed 6.49 req/s, and "the highest load tested (6.49 req/s)" read as if 8 had
not been tested, round 61)."""


@dataclass(frozen=True)
class Target:
    """Planned load ``rps`` (requests/s; ``per_minute`` = rps × 60), with the peak estimate's 95 % CI when known."""

    __pydantic_config__ = STRICT
    rps: float
    per_minute: float = field(default=None, kw_only=True)  # type: ignore[assignment]
    ci95: tuple[float, float] | None = None
    quantile: float | None = None
    growth: float = 1.0
    basis: str = ""

    def __post_init__(self) -> None:
        if not (self.rps > 0 and math.isfinite(self.rps)):
            raise BadValueError(f"target load must be a positive finite rate in req/s (got {self.rps})")
        if self.ci95 is not None and not (0 < self.ci95[0] <= self.rps <= self.ci95[1]):
            raise BadValueError(f"target ci95 {self.ci95} must bracket the target {self.rps} and be > 0")
        if self.per_minute is None:
            object.__setattr__(self, "per_minute", self.rps * 60)

    @property
    def estimate(self) -> Estimate:
        return Estimate(self.rps, ci95=self.ci95, unit="req/s", basis="achieved")

    @property
    def current_peak_rps(self) -> float:
        """The current peak: the target's statistic of the observed rate, before growth (``rps / growth``).

        The one definition every section uses ("current peak" in the staged plan and the traffic
        section alike): docs/domain.md plans from the P95/P99 of the per-minute rate, not from its single
        busiest minute, so the current peak is the target's quantile (P99 by default), never the max."""
        return self.rps / self.growth if self.growth else self.rps

    @property
    def near_term_rps(self) -> float:
        """Near-term planning load: current peak × :data:`NEAR_TERM_FACTOR` (docs/domain.md, staged reservation)."""
        return self.current_peak_rps * NEAR_TERM_FACTOR

    @property
    def peak_name(self) -> str:
        """The current peak's definition in words: ``"P99 of the observed rate"`` (or ``"given target"``)."""
        if self.quantile is None:
            return "the given target load"
        q = self.quantile
        name = "max" if q >= 1 else f"P{q * 100:.10g}"
        return f"{name} of the observed rate"

    def to_dict(self) -> dict[str, object]:
        return to_json(self)


# --------------------------------------------------------------------------- results
CI_METHOD = (f"Monte Carlo, {MC_DRAWS} draws, seed {MC_SEED}, two-piece log-normal per input fitted to its 95% CI, "
             "inputs independent; never narrower, relative to the value, than the limit's CI; an end the limit's CI "
             "leaves open stays open")


def _ci(ci: Interval | None) -> Interval | None:
    return None if not ci or (ci[0] is None and ci[1] is None) else ci


@dataclass
class FosEstimate:
    """A factor of safety (or a bound on it) with its 95 % CI and the sentence that says which."""

    __pydantic_config__ = STRICT
    _OMIT_NONE = ("open_reason",)
    value: float | None
    ci95: Interval | None
    """The 95 % CI; an end is ``None`` (open) where the limit's CI is open: the FOS may lie beyond it."""
    bound: Bound
    statement: str
    open_reason: str | None = None
    """Why an end of ``ci95`` is open (None when both ends are closed)."""

    @property
    def open_end(self) -> OpenEnd | None:
        return open_end(self.ci95)

    @property
    def estimate(self) -> Estimate | None:
        """The FOS as an :class:`Estimate` (basis ``ratio``); None when there is no value."""
        if self.value is None:
            return None
        return Estimate(self.value, ci95=_ci(self.ci95), bound=self.bound, basis="ratio")

    def to_dict(self) -> dict[str, object]:
        return to_json(self)


@dataclass(frozen=True)
class OwnPeak:
    """A mix's own peak from the profile (``mix_peaks``): the target quantile of the mix's own per-bin rate
    (``own_rps``) and the share method's figure ``share × overall P(q)`` (``share_method_rps``), both in req/s
    as observed (before growth), and the overall P(q) they were read beside (``overall_rps``)."""

    mix: str
    own_rps: float
    share_method_rps: float
    overall_rps: float
    quantile: float
    bin_s: float


@dataclass
class MixPeakFos:
    """FOS of one mix against its own peak: ``Q_ult_m / own peak_m`` (``fos``, its 95 % CI from the limit's
    CI alone: the own peak has none), beside the share method's ``Q_ult_m / (share_m × overall peak)``
    (``fos_share_method``); ``differs`` when the share method's peak is more than 10 % below the own one.
    Both peaks are scaled as the target is (``× target / overall peak``: growth or a given target)."""

    __pydantic_config__ = STRICT
    own_peak_rps: float
    share_method_rps: float
    quantile: float
    bin_s: float
    fos: FosEstimate
    fos_share_method: float | None
    own_over_share: float | None
    differs: bool
    statement: str


@dataclass
class MixFos:
    """One mix: its limit in completed req/s (achieved basis), share, FOS and utilisation (target / limit).

    ``fos`` reads "if all production traffic looked like mix m" (``Q_ult_m / Q_target``, what the verdict's
    mix-shift warning uses); ``own_peak`` the mix's FOS against its own peak (:class:`MixPeakFos`), when the
    profile gives per-mix peaks."""

    __pydantic_config__ = STRICT
    _OMIT_NONE = ("own_peak",)
    mix: str
    share: float
    q_ult_rps: float
    q_ult_ci95: Interval | None
    censored: Censored
    fos: FosEstimate
    utilisation: float | None
    own_peak: MixPeakFos | None = None
    capped: bool = False
    """The limit is held at the saturated throughput (``Limit.capped``): an upper bound, as the FOS made from it
    (the report showed it as a value, "173 (171–176)", beside "FOS < 21.03"; round 22)."""

    @property
    def q_ult(self) -> Estimate:
        bound = "upper" if self.capped else {"above": "lower", "below": "upper"}.get(self.censored, "none")
        return Estimate(self.q_ult_rps, ci95=_ci(self.q_ult_ci95), bound=bound,  # type: ignore[arg-type]
                        unit="req/s", basis="achieved")

    def to_dict(self) -> dict[str, object]:
        return to_json(self)


@dataclass
class BlendedFos:
    """The share-weighted (harmonic) blend of the per-mix limits and its FOS (``value`` ... ``statement``)."""

    __pydantic_config__ = STRICT
    _OMIT_NONE = ("open_reason", "bound_reason")
    q_blend_rps: float | None = None
    q_blend_ci95: Interval | None = None
    weights: dict[str, float] = field(default_factory=dict)
    coverage: float | None = None
    uncovered: dict[str, float] = field(default_factory=dict)
    value: float | None = field(kw_only=True)
    ci95: Interval | None = field(kw_only=True)
    bound: Bound = field(kw_only=True)
    statement: str = field(kw_only=True)
    open_reason: str | None = field(default=None, kw_only=True)
    """Why an end of ``q_blend_ci95`` and ``ci95`` is open: a weighted mix's limit CI is open there."""
    bound_reason: str | None = field(default=None, kw_only=True)
    """Why the blend is an upper bound when a weighted limit is capped at the saturated throughput (None
    otherwise: an upper bound then means a test that failed at its first step, :data:`UPPER_BOUND_REASON`)."""

    @property
    def upper_reason(self) -> str:
        """Why the blend is an upper bound, in words (for the verdict, the economics and the exports)."""
        return self.bound_reason or UPPER_BOUND_REASON

    @property
    def fos(self) -> FosEstimate:
        """The blended FOS alone."""
        return FosEstimate(self.value, self.ci95, self.bound, self.statement, self.open_reason)

    @property
    def estimate(self) -> Estimate | None:
        return self.fos.estimate

    def to_dict(self) -> dict[str, object]:
        return to_json(self)


@dataclass
class Verdict:
    """The badge colour with its reason and the utilisation (target / blended limit) it judged; the plan
    writes it as ``verdict``, ``verdict_reason`` and ``utilisation``."""

    color: Color
    reason: str
    utilisation: float | None
    over_provisioned: bool = False
    """The FOS lies above the tier's band for certain (not "possibly"): the plan then says what fewer instances,
    or a smaller instance, would do."""


@dataclass
class FosResult:
    """Per-mix and blended FOS (the plan's ``fos``; see module docstring); :func:`fos_verdict` judges it."""

    __pydantic_config__ = STRICT
    per_mix: list[MixFos]
    blended: BlendedFos
    ci_method: str | None = CI_METHOD

    @property
    def blends_several(self) -> bool:
        """More than one mix enters the blend: the blended limit is a traffic-weighted harmonic mean of each mix's
        limit, not one rate the test saw (the words "the most the test completed" would not be true of it)."""
        return len(self.blended.weights) > 1

    def to_dict(self) -> dict[str, object]:
        return to_json(self)

    def _repr_html_(self) -> str:  # pragma: no cover - notebook display
        rows = "".join(
            f"<tr><td>{html.escape(m.mix)}</td><td>{m.share:.1%}</td><td>{m.q_ult_rps:,.2f}</td>"
            f"<td>{html.escape(m.fos.statement)}</td></tr>"
            for m in self.per_mix
        )
        return (
            f"<p>blended: {html.escape(self.blended.statement)}</p>"
            f"<table><tr><th>mix</th><th>share</th><th>Q_ult req/s</th><th>FOS</th></tr>{rows}</table>"
        )


# --------------------------------------------------------------------------- maths
def fos_point(q_ult_rps: float, target_rps: float) -> float:
    """``Q_ult / Q_target`` (both in req/s)."""
    if q_ult_rps <= 0 or target_rps <= 0:
        raise ParameterError(f"FOS needs positive rates (got Q_ult {q_ult_rps}, target {target_rps})")
    return q_ult_rps / target_rps


def _draw(value: float, ci95: Interval | None, rng: np.random.Generator, n: int) -> np.ndarray:
    """Two-piece log-normal: median ``value``, 2.5 %/97.5 % points at the CI ends. An open end is held at
    the value for the draws (the result's end on that side is then reported open, never as a number)."""
    z = rng.standard_normal(n)
    if ci95 is None:
        return np.full(n, value)
    lo, hi = ci95
    s_lo = 0.0 if lo is None else math.log(value / lo) / Z975
    s_hi = 0.0 if hi is None else math.log(hi / value) / Z975
    return value * np.exp(np.where(z < 0, z * s_lo, z * s_hi))


def _bound_text(bound: Bound, v: float) -> str:
    return {"lower": f"FOS ≥ {_n(v)}", "upper": f"FOS < {_n(v)}"}.get(bound, f"FOS {_n(v)}")


def _union_open(ends: Sequence[OpenEnd | None]) -> OpenEnd | None:
    sides = {e for e in ends if e} - {None}
    if "both" in sides or sides == {"low", "high"}:
        return "both"
    return next(iter(sides), None)  # type: ignore[return-value]


def _with_floor(ci: Interval | None, floor: Interval | None) -> Interval | None:
    """``ci`` widened to contain ``floor`` (each closed end of ``floor`` that lies outside ``ci``)."""
    if floor is None:
        return ci
    if ci is None:
        return floor
    lo = ci[0] if floor[0] is None or ci[0] is None else min(ci[0], floor[0])
    hi = ci[1] if floor[1] is None or ci[1] is None else max(ci[1], floor[1])
    return (lo, hi)


def _estimate(value: float | None, samples: np.ndarray | None, bound: Bound, why: str = "", *,
              floor: Interval | None = None, open_: OpenEnd | None = None,
              open_reason: str | None = None) -> FosEstimate:
    """A FOS from its Monte-Carlo ``samples``: the 2.5 %/97.5 % quantiles, never narrower than ``floor`` (the
    limit's CI over the point target: the target's uncertainty may add to the limit's, never take from it),
    with the end(s) ``open_`` left open (``None``) and ``open_reason`` said."""
    if value is None or bound == "unbounded":
        return FosEstimate(None, None, "unbounded", why or "FOS cannot be bounded")
    ci = None
    if samples is not None and np.ptp(samples) > 0:
        lo, hi = quantile(samples, [0.025, 0.975])
        ci = (float(lo), float(hi))
    ci = _with_floor(ci, floor)
    if open_ is not None:
        ci = opened(ci if ci is not None else (value, value), open_)
    else:
        open_reason = None
    if ci is not None and ci[0] is not None and ci[0] == ci[1]:
        ci = None  # a point without uncertainty is said to be one, never a zero-width interval
    text = _bound_text(bound, value)
    if ci:
        text += f" ({ci_text(ci, open_reason, label='95% CI ' if bound == 'none' else '95% CI of the bound ')})"
    if why:
        text += f"; {why}"
    return FosEstimate(value, ci, bound, text, open_reason)


def compute_fos(
    limits: Sequence[Limit],
    shares: dict[str, float],
    target: Target,
    *,
    own_peaks: Sequence[OwnPeak] = (),
    draws: int = MC_DRAWS,
    seed: int = MC_SEED,
    other_clauses: Collection[str] = (),
) -> FosResult:
    """Per-mix and blended FOS with Monte-Carlo CIs (the verdict: :func:`fos_verdict`; the allowable
    capacity: :func:`allowable_capacity`).

    ``other_clauses``: the mixes whose limit is the other clauses' (a failure floor of theirs breaks one clause at
    every load: ``LimitsInput.floor_mixes``), so their lower bound's reason says the test never failed *on the other
    clauses* (it failed the floor's clause at every load; round 22's note F); another mix's says "never failed".

    ``shares`` are production mix weights by mix name (any mix without a limit, e.g.
    ``other``, is reported as uncovered; the blend renormalises over covered mixes).
    ``own_peaks`` (the profile's per-mix peaks) add each mix's FOS against its own peak
    (:class:`MixPeakFos`); the blended FOS does not change.
    """
    if not limits:
        raise ParameterError("no limits: the limits file holds no mix with a usable q_ult")
    names = [lim.mix for lim in limits]
    if len(set(names)) != len(names):
        raise BadValueError(f"limits name a mix twice: {names}")
    rng = np.random.default_rng(seed)
    t_draws = _draw(target.rps, target.ci95, rng, draws)
    own = {p.mix: p for p in own_peaks}

    per_mix: list[MixFos] = []
    q_draws: dict[str, np.ndarray] = {}
    for lim in limits:
        q_draws[lim.mix] = _draw(lim.q_ult_rps, lim.ci95, rng, draws)
        v = fos_point(lim.q_ult_rps, target.rps)
        never = ("the load test never failed on the other clauses" if lim.mix in other_clauses
                 else "the load test never failed")
        why = {"above": f"{never} (limit is a lower bound)",
               "below": "the load test failed at its first step (limit is an upper bound)",
               "not_monotone": "latency curve not monotone: limit flagged"}.get(lim.censored, "")
        if lim.capped:
            why = f"{CAPPED_REASON} (an upper bound)"
        est = _estimate(v, q_draws[lim.mix] / t_draws, lim.bound, why, floor=scaled(lim.ci95, 1 / target.rps),
                        open_=lim.open_end, open_reason=lim.open_reason)
        per_mix.append(MixFos(lim.mix, float(shares.get(lim.mix, 0.0)), lim.q_ult_rps, lim.ci95, lim.censored, est,
                              target.rps / lim.q_ult_rps,
                              _own_peak_fos(lim, q_draws[lim.mix], own.get(lim.mix), target, why), lim.capped))

    total_share = sum(v for v in shares.values() if v > 0)
    covered = {m: float(shares.get(m, 0.0)) for m in names if shares.get(m, 0.0) > 0}
    uncovered = {m: float(s) for m, s in shares.items() if m not in names and s > 0}
    coverage = (sum(covered.values()) / total_share) if total_share > 0 else 0.0
    if not covered:
        if len(limits) == 1 and not shares:
            covered = {names[0]: 1.0}
            coverage = 1.0
        else:
            raise BadValueError(
                f"no production traffic falls in a mix that has a limit (limit mixes {names}, "
                f"production shares {shares}); the limits and the profile must use the same mix definitions"
            )
    wsum = sum(covered.values())
    weights = {m: s / wsum for m, s in covered.items()}
    by_name = {lim.mix: lim for lim in limits}
    q_blend = blended_capacity([by_name[m].q_ult_rps for m in weights], list(weights.values()))
    q_blend_draws = 1.0 / sum(weights[m] / q_draws[m] for m in weights)
    bounds = {by_name[m].bound for m in weights}
    if "lower" in bounds and "upper" in bounds:
        bound: Bound = "unbounded"
    elif "lower" in bounds:
        bound = "lower"
    elif "upper" in bounds:
        bound = "upper"
    else:
        bound = "none"
    why = ""
    if bound == "unbounded":
        on = " on the other clauses" if any(m in other_clauses for m in weights) else ""
        why = (f"one mix never failed{on} (lower bound) and another failed at once (upper bound): the blend is not "
               "bounded")
    elif bound != "none":
        why = "blend of a censored limit"
    if coverage < 1.0:
        cov_note = f"blend covers {coverage:.1%} of production traffic (no limit for {', '.join(sorted(uncovered))})"
        why = f"{why}; {cov_note}" if why else cov_note
    blend_open = _union_open([by_name[m].open_end for m in weights])
    blend_reason = "; ".join(dict.fromkeys(by_name[m].open_reason for m in weights if by_name[m].open_reason)) or None
    if len(weights) == 1:  # one mix: the blend is its limit, interval and all (no Monte-Carlo noise on it)
        qb_ci = by_name[next(iter(weights))].ci95
    else:
        qb_ci = None
        if np.ptp(q_blend_draws) > 0:
            lo, hi = quantile(q_blend_draws, [0.025, 0.975])
            qb_ci = opened((float(lo), float(hi)), blend_open)
    blended_est = _estimate(q_blend / target.rps if bound != "unbounded" else None, q_blend_draws / t_draws, bound, why,
                            floor=scaled(qb_ci, 1 / target.rps), open_=blend_open, open_reason=blend_reason)
    capped = any(by_name[m].capped for m in weights)
    blended = BlendedFos(q_blend if bound != "unbounded" else None, qb_ci if bound != "unbounded" else None,
                         weights, coverage, uncovered, value=blended_est.value, ci95=blended_est.ci95,
                         bound=blended_est.bound, statement=blended_est.statement,
                         open_reason=blended_est.open_reason,
                         bound_reason=CAPPED_REASON if capped and blended_est.bound == "upper" else None)
    return FosResult(per_mix, blended)


def _own_peak_fos(lim: Limit, q_draws: np.ndarray, peak: OwnPeak | None, target: Target,
                  why: str) -> MixPeakFos | None:
    """The mix's FOS against its own peak (:class:`MixPeakFos`), None without a peak or with a zero one."""
    if peak is None or peak.own_rps <= 0 or peak.overall_rps <= 0:
        return None
    k = target.rps / peak.overall_rps  # growth, or a given target, scales the mix's peaks as it scales the target
    own, by_share = peak.own_rps * k, peak.share_method_rps * k
    est = _estimate(lim.q_ult_rps / own, q_draws / own, lim.bound, why, floor=scaled(lim.ci95, 1 / own),
                    open_=lim.open_end, open_reason=lim.open_reason)
    f_share = lim.q_ult_rps / by_share if by_share > 0 else None
    ratio = own / by_share if by_share > 0 else None
    from bearing_lib.traffic.mix_peaks import UNDERSTATED_RATIO

    differs = ratio is not None and ratio > UNDERSTATED_RATIO
    q = f"P{peak.quantile * 100:g}"
    text = (f"own {q} {own:.4g} req/s: {est.statement}; share × overall {q} {by_share:.4g} req/s gives FOS "
            f"{_n(f_share) if f_share is not None else 'none'}"
            + (f" ({ratio:.2f}× below the own peak: the share method overstates this mix's FOS)" if differs else ""))
    if abs(k - 1) > 1e-9:
        text += f" (peaks × {k:.4g}, as the target)"
    return MixPeakFos(own, by_share, peak.quantile, peak.bin_s, est, f_share, ratio, differs, text)


RATE_LOWER_BOUND_WORDS = "a lower bound: the server may have completed more"
"""What the verdict adds to a limit whose completed rate is a lower bound (:attr:`Limit.achieved_lower_bound`)."""


def blend_rate_lower_bound(fos: FosResult, limits: Sequence[Limit]) -> bool:
    """Whether the blended limit's completed rate is a lower bound: a limit the blend weighs has one
    (:attr:`Limit.achieved_lower_bound`; the blend rises with every limit, so a lower bound on one bounds it)."""
    return any(lim.achieved_lower_bound and fos.blended.weights.get(lim.mix, 0.0) > 0 for lim in limits)


def fos_verdict(fos: FosResult, tier: TierBands, target: Target, *, other_clauses: bool = False,
                rate_lower_bound: bool = False) -> Verdict:
    """The plan's verdict on ``fos``: :func:`verdict` of the blended FOS, with the mixes that alone would
    fall below the tier named, and yellow at best when part of production traffic has no limit. ``other_clauses``:
    a failure floor breaks a clause at every load, and the limits are the other clauses' (the reason says so);
    ``rate_lower_bound``: a weighted limit's completed rate is a lower bound (:attr:`Limit.achieved_lower_bound`,
    :func:`blend_rate_lower_bound`), and so is the blend's (it rises with every limit)."""
    b = fos.blended
    v = verdict(b.fos, tier, target_rps=target.rps, q_ult_rps=b.q_blend_rps, upper_reason=b.bound_reason,
                closed_below=capped_closed_below(b), other_clauses=other_clauses, rate_lower_bound=rate_lower_bound,
                blended=fos.blends_several)
    weak = [m for m in fos.per_mix if m.share > 0 and m.fos.bound != "lower" and m.fos.value is not None
            and m.fos.value < tier.fos_min]
    # a shift of the mix needs another mix to shift from ("alone, mix all (100% of traffic) …" said nothing)
    if weak and fos.blends_several:
        names_txt = ", ".join(f"{m.mix} ({m.share:.0%} of traffic, FOS {SIGN[m.fos.bound]}"
                              f"{_edge_text(m.fos.value, (1.0, tier.fos_min, tier.fos_max))})"
                              for m in weak)
        # dataclasses.replace keeps the typed fields (over_provisioned: review finding, round 22)
        v = dataclasses.replace(v, reason=f"{v.reason}; note: alone, mix {names_txt} would be below the tier "
                                f"minimum {tier.fos_min:g}, so a shift of the mix towards it erodes the margin")
    if b.coverage is not None and b.coverage < 1.0 and v.color == "green":
        v = dataclasses.replace(v, color="yellow", reason=f"{v.reason}; but only {b.coverage:.1%} of production "
                                "traffic has a measured limit")
    return v


@dataclass(frozen=True)
class Allowable:
    """The allowable capacity ``Q_ult / design FOS`` (req/s) with the limit's 95 % CI carried (``ci95``; an end
    open where the limit's is, said in ``open_reason``) and the sentence; the plan writes ``allowable_rps``,
    ``allowable_ci95``, ``allowable_open_reason`` and ``allowable_statement``."""

    rps: float | None
    ci95: Interval | None
    statement: str
    open_reason: str | None = None


def allowable_capacity(q_ult_rps: float | None, target_fos: float, bound: Bound = "none", *,
                       ci95: Interval | None = None, open_reason: str | None = None) -> Allowable:
    """``Q_ult / target FOS`` with a sentence; a bound on ``Q_ult`` stays a bound; the limit's CI ``ci95``
    (req/s) is divided by the same FOS, an open end kept open.

    >>> a = allowable_capacity(9.0, 1.5, ci95=(8.0, None))
    >>> a.rps, a.ci95[1], round(a.ci95[0], 4)
    (6.0, None, 5.3333)
    """
    if q_ult_rps is None or bound == "unbounded":
        return Allowable(None, None, "allowable capacity cannot be given: the limit is not bounded")
    a = q_ult_rps / target_fos
    rel = {"lower": "at least ", "upper": "less than "}.get(bound, "")
    ci = scaled(ci95, 1 / target_fos)
    end = open_end(ci)
    reason = (open_reason or _DEFAULT_OPEN[end]) if end else None
    text = f"allowable = Q_ult / FOS {target_fos:g} = {rel}{a:,.3f} req/s ({a * 60:,.1f} req/min)"
    if ci is not None and ci != (a, a):
        text += f"; {ci_text(ci, reason, unit='req/s', label='95% CI ' if bound == 'none' else '95% CI of the bound ')}"
    return Allowable(a, ci, text, reason)


def capped_closed_below(b: BlendedFos) -> bool:
    """The blended FOS is an upper bound only because its limit is capped at the saturated throughput, and the
    limit's own 95 % CI is closed below: its lower end then bounds the sustained limit from below (the sustained
    limit is ``min(SLA crossing, saturation)``, and the crossing's lower end lies under the cap). A limit that failed
    at its first step has no such end, whatever the target's own uncertainty makes of the FOS's interval."""
    ci = b.q_blend_ci95
    return b.bound == "upper" and b.bound_reason == CAPPED_REASON and ci is not None and ci[0] is not None


def _edge_text(v: float, edges: tuple[float | None, ...]) -> str:
    """``v`` as the verdict writes it, with as many decimals (up to four) as it takes not to read as an edge it is
    compared with: 0.9949 against 1 reads "0.995", not "FOS 0.99" or a rounded "1.00 < 1" (round 21)."""
    for digits in (2, 3, 4):
        text = _n(v, digits)
        if not any(e is not None and v != e and text == _n(float(e), digits) for e in edges):
            return text
    return text


def verdict(fos: FosEstimate, tier: TierBands, *, target_rps: float | None = None,
            q_ult_rps: float | None = None, upper_reason: str | None = None, closed_below: bool = False,
            other_clauses: bool = False, rate_lower_bound: bool = False, blended: bool = False) -> Verdict:
    """green / yellow / red with the reason in words (rules in the module docstring). ``upper_reason``: why an
    upper bound is one (:data:`CAPPED_REASON`; default :data:`UPPER_BOUND_REASON`); ``closed_below``: a capped
    limit whose own CI is closed below (:func:`capped_closed_below`), so the FOS's lower end bounds it;
    ``other_clauses``: the limit is the other clauses' (a failure floor breaks one at every load), and "never
    failed" or "the SLA still held" would not be true of the SLA; ``rate_lower_bound``: the limit's completed rate
    is a lower bound (:attr:`Limit.achieved_lower_bound`), and "the target exceeds the measured limit" says so;
    ``blended``: ``q_ult_rps`` blends several mixes' limits (:attr:`FosResult.blends_several`), not one rate the
    test completed."""
    band = f"the {tier.name} tier's band {tier.describe()}"
    never = "the load test never failed on the other clauses" if other_clauses else "the load test never failed"
    held_by = "the other clauses" if other_clauses else "the SLA"
    if fos.value is None:
        return Verdict("yellow", f"FOS cannot be judged: {fos.statement}", None)
    v = fos.value
    vt = _edge_text(v, (1.0, tier.fos_min, tier.fos_max))
    u = 1.0 / v
    lo = (fos.ci95[0] if fos.ci95[0] is not None else 0.0) if fos.ci95 else v
    if fos.bound == "lower":
        if v < 1.0:
            # the load test never failed, and never reached the planned peak either: the peak is
            # untested, and a lower bound below 1 says nothing about it (never a reassuring colour)
            # the limit is a completed rate, not the offered load a step was run at (UNTESTED_BASIS)
            what = f"the target lies above {UNTESTED_BASIS[blended]}"
            if target_rps and q_ult_rps:
                what = (f"the target {target_rps:,.2f} req/s is {target_rps / q_ult_rps:.1f}× "
                        f"{UNTESTED_BASIS[blended]} ({q_ult_rps:,.2f} req/s, where {held_by} still held)")
            return Verdict("red", f"untested at the peak: {what}; FOS ≥ {vt} says nothing about the peak; "
                           "re-test up to and beyond the peak", None)
        if v < tier.fos_min:
            return Verdict("yellow", f"{fos.statement.split(';')[0]} only: {never}, so the true FOS "
                           f"may or may not meet {band}; re-test with higher load", None)
        if tier.fos_max is not None and v > tier.fos_max:
            return Verdict("yellow", f"FOS ≥ {vt} is above {band}: over-provisioned", None, over_provisioned=True)
        return Verdict("green", f"FOS ≥ {vt} already meets {band} ({never})", None)
    if fos.bound == "upper":
        if v <= tier.fos_min:
            return Verdict("red", f"FOS < {vt} is below {band} ({upper_reason or UPPER_BOUND_REASON})", None)
        lo_ci = fos.ci95[0] if closed_below and fos.ci95 is not None else None
        if lo_ci is not None and lo_ci >= tier.fos_min:
            # a limit capped at the saturated throughput whose own CI is closed below: the FOS lies between the two
            # ends, and the rules of a measured FOS apply to both (a new user's inference-perf run, capped at 173.4
            # req/s, read "cannot confirm" the band at FOS < 20.8)
            held = f"FOS < {vt} ({upper_reason or UPPER_BOUND_REASON}) and ≥ {_n(lo_ci)} (95% CI)"
            if tier.fos_max is not None and lo_ci > tier.fos_max:
                return Verdict("yellow", f"{held} is above {band}: over-provisioned", None, over_provisioned=True)
            if 1.0 / lo_ci > UTILISATION_CEILING:
                return Verdict("yellow", f"{held} meets {band}, but production could run at up to {1 / lo_ci:.0%} "
                               f"of the breakpoint; the sources keep it at {UTILISATION_FLOOR:.0%}–"
                               f"{UTILISATION_CEILING:.0%}", None)
            if tier.fos_max is not None and v > tier.fos_max:
                return Verdict("yellow", f"{held} meets {band}'s minimum, but may lie above its maximum: possibly "
                               "over-provisioned", None)
            return Verdict("green", f"{held} lies within {band}", None)
        fix = ("re-test from a lower load" if upper_reason is None else
               "the sustained limit lies below the saturated throughput; re-test with steps between the last "
               "passing load and the saturation")
        return Verdict("yellow", f"FOS < {vt} only ({upper_reason or UPPER_BOUND_REASON}): cannot confirm "
                       f"{band}; {fix}", None)
    if v < 1.0:
        what = f"the target {target_rps:,.2f} req/s exceeds the measured limit {q_ult_rps:,.2f} req/s" if (
            target_rps and q_ult_rps) else "the target exceeds the measured limit"
        fails = "the SLA fails at the planned peak"
        if rate_lower_bound:
            # the measured rate understates the server: the red stands on what was measured, and says what would
            # settle it (a send window at least as long as a typical request: docs/limits.md, "rate_lower_bound")
            what += f" ({RATE_LOWER_BOUND_WORDS})"
            fails += (" unless the server completes more than was measured; a test whose steps send for longer than "
                      "a typical request takes would measure it")
        return Verdict("red", f"FOS {vt} < 1: {what}; {fails}", u)
    if v < tier.fos_min:
        return Verdict("red", f"FOS {vt} is below {band} (production would run at {u:.0%} of the breakpoint)", u)
    if lo < tier.fos_min:
        down = (f"reaches down to {_edge_text(lo, (1.0, tier.fos_min, tier.fos_max))}"
                if fos.ci95 is None or fos.ci95[0] is not None else "is open below")
        return Verdict("yellow", f"FOS {vt} meets {band} but its 95% CI {down}", u)
    if u > UTILISATION_CEILING:
        return Verdict("yellow", f"FOS {vt} meets {band}, but production would run at {u:.0%} of the breakpoint; "
                       f"the sources keep it at {UTILISATION_FLOOR:.0%}–{UTILISATION_CEILING:.0%}", u)
    if tier.fos_max is not None and v > tier.fos_max:
        return Verdict("yellow", f"FOS {vt} is above {band}: over-provisioned (production at {u:.0%} of the "
                       "breakpoint)", u, over_provisioned=True)
    return Verdict("green", f"FOS {vt} within {band}; production at {u:.0%} of the breakpoint", u)


# --------------------------------------------------------------------------- CBU
CBU_DEFINITION = "CBU = throughput in the minute (req/s) / allowable capacity (req/s)"
CBU_MAX_LISTED = 200


@dataclass
class MinuteAbove:
    """A minute whose CBU exceeds the threshold: its label, index in the series, requests and CBU."""

    __pydantic_config__ = STRICT
    minute: str
    index: int
    requests: float
    cbu: float


@dataclass
class CbuResult:
    """Carrying-capacity utilisation per minute, ``(requests in the minute / 60) / allowable_rps``: its
    summary and the minutes above ``threshold`` (listed up to 200; the plan's ``cbu``)."""

    __pydantic_config__ = STRICT
    definition: str
    allowable_rps: float
    threshold: float
    n_minutes: int
    max: float | None
    p95: float | None
    n_above: int
    n_above_1: int
    minutes_above: list[MinuteAbove]
    minutes_above_truncated: bool

    def to_dict(self) -> dict[str, object]:
        return to_json(self)


def cbu_per_minute(
    counts_per_minute: Sequence[float],
    allowable_rps: float,
    *,
    minute_labels: Sequence[str] | None = None,
    threshold: float = CBU_THRESHOLD,
    max_listed: int = CBU_MAX_LISTED,
) -> CbuResult:
    """CBU for each minute and the minutes above ``threshold`` (0.8: scale out or limit early)."""
    if not allowable_rps or allowable_rps <= 0:
        raise ParameterError(f"allowable capacity must be > 0 req/s (got {allowable_rps})")
    labels = list(minute_labels) if minute_labels is not None else [str(i) for i in range(len(counts_per_minute))]
    if len(labels) != len(counts_per_minute):
        raise ParameterError("minute_labels and counts_per_minute differ in length")
    cbu = [float(c) / 60.0 / allowable_rps for c in counts_per_minute]
    above = [MinuteAbove(labels[i], i, float(counts_per_minute[i]), c) for i, c in enumerate(cbu) if c > threshold]
    return CbuResult(
        definition=CBU_DEFINITION, allowable_rps=allowable_rps, threshold=threshold, n_minutes=len(cbu),
        max=max(cbu) if cbu else None, p95=float(quantile(cbu, 0.95)) if cbu else None, n_above=len(above),
        n_above_1=sum(1 for c in cbu if c > 1.0), minutes_above=above[:max_listed],
        minutes_above_truncated=len(above) > max_listed,
    )


__all__ = [
    "CBU_THRESHOLD",
    "NEAR_TERM_FACTOR",
    "RATE_LOWER_BOUND_WORDS",
    "TIERS",
    "UNTESTED_BASIS",
    "Allowable",
    "BlendedFos",
    "CbuResult",
    "FosEstimate",
    "FosResult",
    "Limit",
    "MinuteAbove",
    "MixFos",
    "MixPeakFos",
    "OwnPeak",
    "Target",
    "TierBands",
    "Verdict",
    "allowable_capacity",
    "blend_rate_lower_bound",
    "blended_capacity",
    "capped_closed_below",
    "cbu_per_minute",
    "compute_fos",
    "fos_point",
    "fos_verdict",
    "get_tier",
    "verdict",
]
