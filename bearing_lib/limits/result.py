"""The limits stage's typed result: :class:`LimitsResult` of :class:`MixLimit` rows.

These classes are both the in-process result of :func:`bearing_lib.limits.fit.fit_limits`
and the shape of the limits JSON (``docs/interfaces.md`` §4, schema
``bearing.limits/2``): :meth:`LimitsResult.to_dict` writes it, :meth:`LimitsResult.from_dict`
validates a document once (every problem at once, :mod:`bearing_lib.common.schema`) and
gives the same objects back. What cannot live in JSON (the load-curve frame, bootstrap
replicates) is attached in process only and said so when it is asked for after a round trip.

A limit has a **basis**: ``q_ult.value`` is the *offered* load at the SLA crossing (the
load-test axis); :attr:`QUlt.achieved` is the *throughput* completed there. The plan's
factor of safety uses the achieved basis (production peaks are completed requests), and
every statement says which basis it quotes.
"""

from __future__ import annotations

import dataclasses
import html
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from bearing_lib.common.errors import ParameterError
from bearing_lib.common.estimate import Estimate
from bearing_lib.common.files import jsonable
from bearing_lib.common.format import fmt_sig
from bearing_lib.common.schema import NotAvailable
from bearing_lib.common.unavailable import Unavailable
from bearing_lib.data.engine import EngineRun
from bearing_lib.limits.cost import CostAnomaly
from bearing_lib.limits.fits import QueueFit, UslFit
from bearing_lib.limits.recovery import RecoveryResult
from bearing_lib.limits.settling import StepSettling
from bearing_lib.limits.sla import Clause
from bearing_lib.limits.steady import Mser5

SCHEMA = "bearing.limits/2"
"""Version 2 adds ``schema``, ``q_ult.basis`` and ``q_ult.achieved``; version-1 files (no
``schema`` key) read the same, their achieved estimate derived from ``throughput_rps``."""

ESTIMATORS = ("model", "pooled")
"""A request trace's estimator (``limits.fit``): ``model`` (the model of every step's counts, ``limits.model``: its
interval is the posterior's) or ``pooled`` (the pooled exceedance crossing, its block bootstrap widened to the step
grid). docs/oracle.md compares them."""
DEFAULT_ESTIMATOR = "model"
"""The estimator of a request trace when none is named (``fit_limits``, ``bearing limits``/``compare``/``report``,
the notebooks): the model since issue 23's round 17 (docs/oracle.md), before it the pooled estimator."""
UNRECORDED_ESTIMATOR = "pooled"
"""The estimator of limits written before ``conditions.estimator`` was recorded: the default then."""

Censored = Literal["none", "above", "below", "not_monotone", "no_data"]
StepStatus = Literal["pass", "fail", "undetermined", "excluded"]


@dataclass
class SourceFinding:
    """One loader finding about a load-test source (``bearing inspect`` shows the same)."""

    code: str
    level: str
    message: str
    count: int | None = None


@dataclass
class Source:
    path: str
    sha256: str | None = None
    format: str | None = None
    tool: str | None = None
    tool_version: str | None = None
    kind: str | None = None
    findings: list[SourceFinding] = field(default_factory=list)


@dataclass
class BootstrapInfo:
    n_boot: int
    seed: int
    method: str


@dataclass(frozen=True)
class StatsSettings:
    """The per-step statistics path's settings (``limits.stepstats``; ``conditions.extra["stats"]``)."""

    n_blocks: int
    """Time blocks a step."""
    rel_bin: float
    """Relative width of the latency histogram's bins."""
    tolerance: float
    """How far its quantiles may lie from the exact ones (relative)."""


Scalar = str | int | float | bool | None

StatedCondition = EngineRun | StatsSettings | NotAvailable | Scalar | list[Scalar]
"""One entry of :attr:`Conditions.extra`: where the work ran (``engine``, :class:`EngineRun`), the
statistics path's settings (``stats``, :class:`StatsSettings`), a stated part that was not available
(``{"available": false, "reason"}``), or a condition an analyst or a file stated as a plain value or a list
of them (``client: fmperf``, ``runs: [a, b]``)."""


@dataclass
class Conditions:
    """What the limits were measured under; ``model``/``hardware``/``instances`` when stated."""

    sources: list[Source] = field(default_factory=list)
    model: list[str] | str = field(default_factory=list)
    offered_load_unit: list[str] | str = field(default_factory=list)
    mixes: str = "auto"
    steady_window: str = ""
    bootstrap: BootstrapInfo | None = None
    hardware: str | None = None
    instances: int | None = None
    instances_basis: str | None = None
    pooled_runs: dict[str, list[str]] | list[str] | None = None
    """With ``--pool``: per pooled run, the runs pooled into it."""
    window: str | None = None
    estimator: str | None = None
    """The estimator asked for request traces (:data:`ESTIMATORS`; load-point tables always use the model); None in
    files written before it was recorded (their estimator was :data:`UNRECORDED_ESTIMATOR`). A comparison in the
    report fits its load tests with the same one."""
    extra: dict[str, StatedCondition] = field(default_factory=dict)
    """Other conditions, by name: the ones the analyst or the files stated (e.g. the client), kept as given, and
    where the work ran on a Parquet dataset (``engine``, ``stats``)."""

    def __post_init__(self) -> None:
        if isinstance(self.offered_load_unit, str):  # version-1 files wrote one unit as a string
            self.offered_load_unit = [self.offered_load_unit]


@dataclass
class MixRef:
    """A mix as written in JSON: ``bounds`` ``{dim: [lo, hi]}`` with ``None`` for unbounded."""

    name: str
    description: str = ""
    bounds: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)

    def to_mix(self):  # noqa: ANN201 - bearing_lib.data.mixes.Mix
        from bearing_lib.data.mixes import Mix

        return Mix.from_dict({"name": self.name, "bounds": {k: list(v) for k, v in self.bounds.items()}})

    @classmethod
    def of(cls, mix: Any) -> MixRef:
        d = mix.to_dict()
        return cls(name=d["name"], description=d["description"], bounds={k: tuple(v) for k, v in d["bounds"].items()})


@dataclass
class FollowUpStep:
    """One load of a follow-up test (``bearing_lib.limits.followup``): how long to run it and why."""

    load: float
    duration_s: float
    warmup_s: float
    relaxation_s: float
    """The queue's relaxation time ``tau`` at this load (the model's time to settle)."""
    rho: float
    """The load over the modelled capacity (capped at ``RHO_MAX``)."""
    expected_requests: int


FOLLOWUP_ORDER = "ascending, one continuous run per repeat where the tool can (bearing next's file says how)"


@dataclass(frozen=True)
class FollowUpSummary:
    """The follow-up test as the limits JSON keeps it (``q_ult.resolution.followup``; the whole plan, with its
    model's parameters, is :class:`bearing_lib.limits.followup.FollowUp`, ``bearing next``)."""

    steps: list[FollowUpStep]
    total_s: float
    budget_s: float | None
    expected_resolution: float
    order: str
    repeats: int
    model: str
    """The queue model's name (``M/G/1-style relaxation``)."""


@dataclass
class Resolution:
    """How finely the test resolves the limit (``docs/limits.md``, "Resolution")."""

    ci_relative: tuple[float | None, float | None]
    """The CI's ends relative to the value; the upper None when the CI is open above (no judged failure), the lower
    None when it is open below (the model's posterior reaching below the loads tested)."""
    tolerance: float
    coarse: bool
    steady_window_s: float | None
    """The median step's time under load: its steady window with per-request times, else the span the tool's
    summary divides its completions by (``CurveRow.rate_span_s``, drain excluded)."""
    suggested_loads: list[float]
    statement: str
    followup: FollowUpSummary | NotAvailable | None = None
    """The follow-up test that would resolve a coarse limit (``bearing_lib.limits.followup``; ``bearing next``);
    :class:`NotAvailable` with the reason when none could be designed; None for a fine limit."""


@dataclass
class QUlt:
    """The ultimate capacity of one mix: offered load at the SLA crossing, with its achieved throughput."""

    value: float | None
    unit: str | None = None
    ci95: tuple[float | None, float | None] = (None, None)
    bracket: tuple[float | None, float | None] = (None, None)
    censored: Censored = "none"
    statement: str = ""
    throughput_rps: float | None = None
    tokens_per_s: float | None = None
    mix_throughput_rps: float | None = None
    method: str = ""
    resolution: Resolution | None = None
    basis: Literal["offered"] = "offered"
    estimator: str | None = None
    """Which estimator gave ``value``: ``pooled`` (exceedance shares over all requests) or ``step-wise``."""
    interval_method: str | None = None
    """What the interval is: the bootstrap's, or the bootstrap widened to the step grid, and why."""
    bootstrap_ci95: tuple[float | None, float | None] | None = None
    """The pure bootstrap interval before any widening (for comparison; docs/oracle.md)."""
    throughput_range_rps: tuple[float, float] | None = None
    """Lowest and highest completed req/s of the repeats at the limit's load (``throughput_rps`` is their mean);
    None when no load was repeated."""
    saturated_rps: float | None = None
    """The highest rate the run completed when one of its steps saturated the server (``curves.saturation_cap``)."""
    capped: bool = False
    """True when the SLA crossing lay above ``saturated_rps`` and ``value`` was held at it."""
    achieved_lower_bound: bool = False
    """True when ``throughput_rps`` is read from a step whose completed rate is a lower bound (flag
    ``rate_lower_bound``: its send window was shorter than a typical request, so the rate is read over the busy
    span, ``curves.busy_span_rate``; the steps read are ``curves.rate_read``): the server may have completed more,
    so the plan's FOS, allowable capacity and tokens/s made from the achieved rate are conservative and at most the
    planned number of instances is needed; the completed CI's upper end may be understated too. Never set for a
    capped limit or one censored below. The offered-load value and its CI are unaffected."""
    throughput_ci95_rps: tuple[float | None, float | None] | None = None
    """The 95 % CI on the completed basis: each end of ``ci95`` read off the steps' completed rates (``limits.fit``,
    round 22; on a concurrency axis widened by each step's count noise); None for a bound, a capped limit, an axis
    other than rps or concurrency, or a file written before round 22, whose completed CI is ``ci95`` scaled by the
    value's ratio (:attr:`achieved`)."""

    throughput_bracket_rps: tuple[float | None, float | None] | None = None
    """The bracket on the completed basis: the run's completed rate at the bracket's two steps (round 22); None as
    :attr:`throughput_ci95_rps`, the bracket then scaled by the value's ratio."""

    def __post_init__(self) -> None:
        self.ci95 = tuple(self.ci95)  # type: ignore[assignment]
        self.bracket = tuple(self.bracket)  # type: ignore[assignment]
        if self.throughput_ci95_rps is not None:
            self.throughput_ci95_rps = tuple(self.throughput_ci95_rps)  # type: ignore[assignment]
        if self.throughput_bracket_rps is not None:
            self.throughput_bracket_rps = tuple(self.throughput_bracket_rps)  # type: ignore[assignment]

    @property
    def estimate(self) -> Estimate:
        """``value`` as an :class:`Estimate` on the offered-load basis (a censored value is a bound; a capped one
        is an upper bound: the most the server completed)."""
        est = Estimate.from_censored(self.value, self.censored, ci95=tuple(self.ci95), bracket=tuple(self.bracket),
                                     unit=self.unit or "", basis="offered")
        return dataclasses.replace(est, bound="upper") if self.capped and est.value is not None else est

    @property
    def achieved(self) -> Estimate:
        """The throughput completed at the limit (req/s, achieved basis), CI scaled from the offered one.

        For an ``rps`` limit without a measured throughput the offered value is used (a
        generator that keeps up completes what it sends). Not available otherwise.
        """
        est = self.estimate
        thr = self.throughput_rps
        if thr is None and self.unit == "rps":
            thr = self.value
        if est.value is None or thr is None or not est.value > 0 or not thr > 0:
            return Estimate(None, bound=est.bound, unit="rps", basis="achieved")
        out = est.scaled(thr / est.value, unit="rps", basis="achieved")
        if self.throughput_ci95_rps is not None and est.bound == "none":
            # each end read off the curve (limits.fit._completed_ci), not scaled by the value's ratio
            out = dataclasses.replace(out, ci95=tuple(self.throughput_ci95_rps))
        if self.throughput_bracket_rps is not None and out.bracket is not None:
            out = dataclasses.replace(out, bracket=tuple(self.throughput_bracket_rps))
        return out


@dataclass(frozen=True)
class Exceedance:
    """Of one clause at one step: the requests that break it (``bad``) of those that count (``of``)."""

    bad: int | None
    of: int | None


@dataclass
class Step:
    """One judged step of the load curve (``docs/limits.md``, "Judging a step")."""

    step: int
    offered_load: float | None
    load_axis: float | None = None
    throughput_rps: float | None = None
    n_requests: int | None = None
    n_ok: int | None = None
    error_rate: float | None = None
    duration_s: float | None = None
    valid: bool = True
    status: StepStatus | None = None
    flags: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    sla_margin: float | None = None
    margins: dict[str, float | None] = field(default_factory=dict)
    observed: dict[str, float | None] = field(default_factory=dict)
    recovery_step: bool = False
    concurrency_mean: float | None = None
    output_tokens_per_s: float | None = None
    phase: str | None = None
    phase_reason: str | None = None
    phase_evidence: str | None = None
    """What decided the phase (a P99, a lower percentile, the mean, errors, throughput; docs/phases-and-fits.md)."""
    cost_anomaly_index: float | None = None
    exceedances: dict[str, Exceedance] | None = None
    """Per clause (keyed by its text): requests that break it (``bad``) of those that count (``of``): the pooled
    estimator's data."""
    pooled: bool = False
    """The step entered the pooled estimate."""
    mser5: Mser5 | None = None
    """MSER-5 warm-up diagnostic of the step (``bearing_lib.limits.steady``)."""
    settling: StepSettling | None = None
    """Steady state on the whole step (``bearing_lib.limits.settling``): the trend test over its send window and
    its last quarter against each clause; ``unsettled`` in ``flags`` when it rises and that part breaks the SLA."""
    source_run: str | None = None
    """With pooled runs (``--pool``): the run the step came from."""
    stats: dict[str, float | None] = field(default_factory=dict)
    """The load curve's latency percentiles at this step, keyed ``{metric}_{stat}``
    (``ttft_ms_p50`` … ``latency_ms_p99``): what the plan's latency–concurrency curve reads."""


@dataclass(frozen=True)
class PCriticalEstimate:
    """One estimate of ``P_critical`` (``limits.phases``: the 2x rule or the breakpoint), kept in
    :attr:`PCritical.alternatives` under its method's name.

    ``censored`` is ``none``, ``above``, ``below`` or ``unavailable`` (``value`` None, ``reason`` says why); an
    open end of ``ci95`` is None. The method's own numbers are written only when it has them.
    """

    _OMIT_NONE = ("baseline_p99_ms", "slope_change", "r_squared")

    value: float | None
    ci95: tuple[float | None, float | None]
    censored: str
    reason: str
    baseline_p99_ms: float | None = None
    """2x rule: the baseline P99 (ms) it doubles."""
    slope_change: float | None = None
    """Breakpoint: the change of the log-P99 slope at the hinge, per unit load."""
    r_squared: float | None = None
    """Breakpoint: R² of the hinge model."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "ci95", (self.ci95[0], self.ci95[1]))


PCriticalMethod = Literal["2x_baseline", "breakpoint"]


@dataclass
class PCritical:
    """The critical load ``P_critical`` (``docs/phases-and-fits.md``): one type, made by
    :func:`bearing_lib.limits.phases.p_critical` and carried by :class:`MixLimit`.

    ``value``/``ci95`` are in the offered-load unit. ``censored`` is ``"none"``, ``"above"`` (P99 never
    exceeded 2x baseline: ``P_critical >= value``) or ``"unavailable"`` (``value`` None; ``reason`` says why).
    ``method`` is the estimate trusted (``2x_baseline``, ``breakpoint``, ``none``); ``alternatives`` the other
    one's document. A zero-width interval is no interval: ``ci95`` is then None and ``reason`` says the value is a
    point without uncertainty (the steps, e.g. a table's percentiles without CIs, give the curve none).
    """

    value: float | None = None
    ci95: tuple[float | None, float | None] | None = None
    method: str | None = None
    censored: str | None = None
    reason: str | None = None
    unit: str | None = None
    alternatives: dict[PCriticalMethod, PCriticalEstimate] = field(default_factory=dict)
    """The estimates by method (the one trusted and the other; both when neither gave a value)."""
    available: bool = True

    def __post_init__(self) -> None:
        if self.censored == "unavailable":
            # no method gave a value: not "available: true" beside a null value (a new user's read, round 22)
            self.available = False
        ci = self.ci95
        if ci is not None:
            self.ci95 = (ci[0], ci[1])
            if ci[0] is not None and ci[0] == ci[1]:
                self.ci95 = None
                self.reason = ((self.reason + "; ") if self.reason else "") + (
                    "a point without uncertainty: the steps give the curve no interval to draw from")

    @classmethod
    def of(cls, d: dict[str, Any]) -> PCritical:
        """From a document (:meth:`to_dict`, a limits JSON) or an unavailable one (``{"available": false, ...}``)."""
        from bearing_lib.common.schema import parse

        known = {f.name for f in dataclasses.fields(cls)}
        return parse(cls, {k: v for k, v in d.items() if k in known}, what="p_critical")

    def to_dict(self) -> dict[str, Any]:
        return jsonable(self)

    def _repr_html_(self) -> str:  # pragma: no cover - notebook display
        v = "n/a" if self.value is None else f"{self.value:.4g}"
        lo, hi = (("?" if x is None else f"{x:.4g}") for x in (self.ci95 or (None, None)))
        return (f"<p><b>P_critical</b> {v} {html.escape(self.unit or '')} [{lo}, {hi}] "
                f"({html.escape(str(self.method))}): {html.escape(str(self.reason))}</p>")


@dataclass
class FailureFloor:
    """A share of requests that breaks a clause at every load (``limits.model``: the floor ``f``)."""

    clause: str
    share: float
    ci95: tuple[float, float]
    allowed: float
    p_breaks: float
    """Posterior probability that the floor alone exceeds the clause's allowance."""
    breaks_clause: bool
    statement: str
    shared_by: str | None = None
    """What the requests behind the floor have in common (lengths, a latency ceiling, an error text)."""
    one_load: bool = False
    """The floor rests on one quiet load: the share is there, but whether it grows with load (which more instances
    would cure) is not tested (``limits.failures``)."""


@dataclass(frozen=True)
class ClauseShape:
    """How one clause's bad share rises with load in this test: the model's posterior over its steepness and its
    step-to-step variability (``limits.model``), written for a later test of the same service to read
    (``fit_limits(..., shape_from=...)``; docs/limits.md, "An earlier test's shape")."""

    clause: str
    steepness: list[float]
    """The steepness grid ``β`` (d logit bad share / d log load)."""
    concentration: list[float | None]
    """The step-to-step concentration grid ``c`` of the beta-binomial; None is the binomial (none)."""
    weights: list[list[float]]
    """This test's own posterior mass (from the flat prior) per steepness (rows) × concentration (columns)."""
    prior_from: str | None = None
    """Where the earlier test's shape offered to this one came from (None: none offered)."""
    bayes_factor: float | None = None
    """The Bayes factor of the earlier test's shape against the flat prior on this test's steps."""
    prior_used: bool = False
    """True when the earlier shape was this limit's prior (``bayes_factor`` at least ``model.SHAPE_GATE``)."""
    unit: str | None = None
    """The load unit of the test (``rps``, ``concurrency`` ...): ``β`` is per log load of that unit's axis."""
    step_s: float | None = None
    """The median duration of the test's steps: the step-to-step variability ``c`` is that of steps this long."""
    jitter: float | None = None
    """The load jitter the steps were read at (``limits.model``: σ in log load; 0 for a single run, 0.03 for runs
    pooled since round 16); a shape is offered only to a test read at the same; None: not recorded (an older file)."""


@dataclass
class MixLimit:
    """The limit of one mix in one run, with the steps it was judged on and the fits around it."""

    mix: MixRef
    q_ult: QUlt | None
    steps: list[Step] = field(default_factory=list)
    run_id: str = "run"
    share: float | None = None
    n_requests: int | None = None
    binding: str | None = None
    notes: list[str] = field(default_factory=list)
    p_critical: PCritical | None = None
    # The model fits and diagnostics below are the result types of their own modules
    # (limits.fits, limits.cost, limits.recovery); one that could not be computed is that
    # type with ``available=False`` and its reason.
    usl: UslFit | None = None
    queueing: QueueFit | None = None
    t_recover_s: float | None = None
    t_recover: RecoveryResult | None = None
    cost_anomaly_index: CostAnomaly | None = None
    failure_floors: list[FailureFloor] = field(default_factory=list)
    """Load-independent floors found per clause; one that breaks its clause is left out of the limit."""
    shapes: list[ClauseShape] = field(default_factory=list)
    """Per clause the model read (``limits.model``; none for the pooled estimator): how its bad share rises."""

    @property
    def unit(self) -> str | None:
        return self.q_ult.unit if self.q_ult else None

    @property
    def name(self) -> str:
        return self.mix.name

    @property
    def replicates(self) -> Any:
        """Bootstrap replicates of the limit (in process only; None after a JSON round trip)."""
        return self.__dict__.get("_replicates")

    def attach_replicates(self, reps: Any) -> None:
        self.__dict__["_replicates"] = reps

    def to_dict(self) -> dict[str, Any]:
        return jsonable(self)


@dataclass
class BlendedLimit:
    """``1 / Σ w_m / Q_m`` over the weighted mixes (offered-load basis, in the limits' unit). ``censored`` is
    ``below`` (an upper bound) when a weighted mix failed at its lowest load or its limit is capped
    (:attr:`QUlt.capped`), ``above`` when one never failed, ``mixed`` for both or a not-monotone limit; the
    statement names the mixes that make it so."""

    value: float | None
    ci95: tuple[float | None, float | None] = (None, None)
    weights: dict[str, float] = field(default_factory=dict)
    censored: str = "none"
    statement: str = ""
    unit: str | None = None

    def __post_init__(self) -> None:
        self.ci95 = tuple(self.ci95)  # type: ignore[assignment]

    @property
    def estimate(self) -> Estimate:
        return Estimate.from_censored(self.value, self.censored, ci95=tuple(self.ci95), unit=self.unit or "",
                                      basis="offered")


@dataclass
class Skipped:
    run_id: str
    mix: str
    share: float
    n_requests: int
    reason: str


EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
"""The sha256 of no bytes (an empty file, or a folder with no file in it): never a match of two inputs."""


@dataclass
class LimitsResult:
    """Limits for one SLA over one or more load tests: the limits JSON as objects (§4)."""

    mixes: list[MixLimit]
    sla: list[Clause] = field(default_factory=list)
    """The SLA's clauses (:class:`~bearing_lib.limits.sla.Clause`; the JSON's ``sla`` entries are their fields)."""
    conditions: Conditions = field(default_factory=Conditions)
    mix_spec: list[MixRef] | None = None
    blended: BlendedLimit | None = None
    skipped: list[Skipped] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    schema: str = SCHEMA
    bearing_version: str = ""
    quantile_method: Literal["linear"] = "linear"

    # ------------------------------------------------------------------ reading
    @property
    def limits(self) -> list[MixLimit]:
        """The per-(run, mix) limits (the JSON's ``mixes``)."""
        return self.mixes

    @cached_property
    def sla_spec(self):  # noqa: ANN201 - bearing_lib.limits.sla.SLA
        """The SLA as a parsed :class:`~bearing_lib.limits.sla.SLA` (from the clauses' text)."""
        from bearing_lib.limits.sla import parse_sla

        return parse_sla([c.text for c in self.sla])

    @property
    def sla_text(self) -> str:
        return " and ".join(c.text for c in self.sla)

    @property
    def curve(self) -> Any:
        """The load-curve frame (polars) behind the limits: in process only."""
        c = self.__dict__.get("_curve")
        if c is None:
            raise ParameterError("the load-curve frame is not part of a limits JSON; it exists only on the result "
                                 "of fit_limits in the same process (re-run fit_limits to get it)")
        return c

    def attach_curve(self, curve: Any) -> None:
        self.__dict__["_curve"] = curve

    @property
    def runs(self) -> list[str]:
        return sorted({m.run_id for m in self.mixes})

    def for_run(self, run: str | None, *, source: str = "limits") -> list[MixLimit]:
        """The mixes of one run; with several runs and ``run`` None, a :class:`ParameterError` listing them."""
        runs = self.runs
        if run is not None:
            if run not in runs:
                raise ParameterError(f"{source}: no run {run!r}; runs in the file: {', '.join(runs) or 'none named'}")
            return [m for m in self.mixes if m.run_id == run]
        if len(runs) > 1:
            raise ParameterError(f"{source}: the limits hold {len(runs)} runs ({', '.join(runs)}), i.e. different "
                                 "deployments or tests; choose one with run= (--run)")
        return list(self.mixes)

    def stands_for_one_mix_fit_of(self, sha256s: list[str | None], runs: list[str], estimator: str) -> bool:
        """Whether these limits stand for a one-mix fit (``mixes="none"``) with ``estimator`` of the files with
        ``sha256s`` holding ``runs``, under this SLA: fitted on exactly those files (every sha256 known, none of an
        empty input), the same runs, with that estimator, one mix per run covering every request (no bounds:
        ``none``, or ``auto`` that found one mix), runs not pooled, and none skipped. A comparison then reuses them
        instead of a new fit (``bearing_lib.compare.compare(own=...)``), so a report's own test reads one limit in
        both of its sections: with the report's resamples and earlier shape, if any, so its interval may be
        narrower than a new fit's."""
        mine = [s.sha256 for s in self.conditions.sources]
        if (not mine or not sha256s or not all(mine) or not all(sha256s) or sorted(mine) != sorted(sha256s)
                or EMPTY_SHA256 in mine):
            return False
        if (self.conditions.estimator or UNRECORDED_ESTIMATOR) != estimator or sorted(set(runs)) != self.runs:
            return False
        if self.conditions.pooled_runs or self.skipped or not self.mixes:
            return False
        if self.mix_spec is not None and (len(self.mix_spec) != 1 or self.mix_spec[0].bounds):
            return False
        per_run = [m.run_id for m in self.mixes]
        return len(per_run) == len(set(per_run)) and all(not m.mix.bounds for m in self.mixes)

    # ------------------------------------------------------------------ JSON edge
    def to_dict(self) -> dict[str, Any]:
        """The limits JSON (``docs/interfaces.md`` §4): field order as documented."""
        from bearing_lib.common.version import __version__

        d = jsonable(self)
        d["bearing_version"] = __version__
        head = {k: d.pop(k) for k in ("schema", "bearing_version", "quantile_method")}
        return {**head, **d}

    @classmethod
    def coerce(cls, doc: Any, *, source: str = "limits JSON") -> LimitsResult | None:
        """The limits from what a caller holds: a :class:`LimitsResult` as it is; a limits JSON document validated
        once (:meth:`from_dict`, ``source`` named in its errors); None for no limits, an :class:`Unavailable` or an
        ``{"available": false}`` stand-in. Anything else is a :class:`SchemaError` naming ``source``."""
        if doc is None or isinstance(doc, cls):
            return doc
        if isinstance(doc, Unavailable) or (isinstance(doc, dict) and doc.get("available") is False):
            return None
        return cls.from_dict(doc, source=source)

    @classmethod
    def from_dict(cls, doc: Any, *, source: str = "limits JSON") -> LimitsResult:
        """Validate a limits JSON once; one :class:`SchemaError` lists every problem."""
        from bearing_lib.common.errors import SchemaError
        from bearing_lib.common.schema import parse

        if not isinstance(doc, dict):
            raise SchemaError(f"{source}: expected a limits JSON object, found {type(doc).__name__}")
        if doc.get("available") is False:
            raise SchemaError(f"{source}: the limits are not available: {doc.get('reason')}")
        return parse(cls, _upgrade(doc), what=source)

    def table(self) -> Any:
        """One row per run × mix: limit, CI, bracket, censoring, binding clause (polars)."""
        import polars as pl

        rows = []
        for m in self.mixes:
            q = m.q_ult
            a = q.achieved
            rows.append({
                "run_id": m.run_id, "mix": m.mix.name, "share": m.share, "n_requests": m.n_requests,
                "q_ult": q.value, "unit": q.unit, "bound": q.estimate.bound, "ci95_lo": q.ci95[0],
                "ci95_hi": q.ci95[1], "last_pass": q.bracket[0], "first_fail": q.bracket[1], "censored": q.censored,
                "throughput_rps": q.throughput_rps, "achieved_rps": a.value, "tokens_per_s": q.tokens_per_s,
                "binding": m.binding, "statement": q.statement,
            })
        schema = {"run_id": pl.String, "mix": pl.String, "share": pl.Float64, "n_requests": pl.Int64,
                  "q_ult": pl.Float64, "unit": pl.String, "bound": pl.String, "ci95_lo": pl.Float64,
                  "ci95_hi": pl.Float64, "last_pass": pl.Float64, "first_fail": pl.Float64, "censored": pl.String,
                  "throughput_rps": pl.Float64, "achieved_rps": pl.Float64, "tokens_per_s": pl.Float64,
                  "binding": pl.String, "statement": pl.String}
        return pl.DataFrame(rows, schema=schema)

    def _repr_html_(self) -> str:
        esc = html.escape
        head = f"<p><b>Limits</b> for SLA <code>{esc(self.sla_text)}</code> (Q_ult: offered load at the crossing; "
        head += "achieved: throughput completed there)</p>"
        cells = ["run", "mix", "share", "Q_ult (offered)", "achieved", "bracket", "binding", "statement"]
        out = [head, "<table><thead><tr>" + "".join(f"<th>{c}</th>" for c in cells) + "</tr></thead><tbody>"]
        for m in self.mixes:
            q = m.q_ult
            vals = [m.run_id, m.mix.name, f"{m.share:.0%}", q.estimate.text(3), q.achieved.text(3, ci=False),
                    f"[{fmt_sig(q.bracket[0])}, {fmt_sig(q.bracket[1])}]", m.binding or "–", q.statement]
            out.append("<tr>" + "".join(f"<td>{esc(str(v))}</td>" for v in vals) + "</tr>")
        out.append("</tbody></table>")
        if self.blended:
            out.append(f"<p>Blended: {esc(self.blended.statement)}</p>")
        for n in self.notes:
            out.append(f"<p><i>{esc(n)}</i></p>")
        return "".join(out)


_STAT_KEY = re.compile(r"^(ttft|latency|tpot|itl)_ms_(p\d+(?:_\d+)?|mean|max)(_ci95_(lo|hi))?$")


def _upgrade(doc: dict[str, Any]) -> dict[str, Any]:
    """A version-1 limits document in the version-2 shape (a copy; the input is not modified).

    Version 1 steps could be load-curve rows with flat ``latency_ms_p99``-style keys and a
    per-step ``offered_load_unit``: the statistics move into ``stats``; the unit is the limit's.
    """
    out = dict(doc)
    cond = doc.get("conditions")
    if isinstance(cond, dict):  # conditions beyond the named ones are kept in ``extra``
        known = {f.name for f in dataclasses.fields(Conditions)}
        extra = {k: v for k, v in cond.items() if k not in known}
        if extra:
            out["conditions"] = {**{k: v for k, v in cond.items() if k in known},
                                 "extra": {**(cond.get("extra") or {}), **extra}}
    if doc.get("schema") == SCHEMA:
        return out
    if isinstance(doc.get("sla"), list):  # version 1 could leave out a clause's kind, op, unit
        out["sla"] = [_upgrade_clause(c) if isinstance(c, dict) else c for c in doc["sla"]]
    if not isinstance(doc.get("mixes"), list):
        return out
    mixes = []
    for m in doc["mixes"]:
        if isinstance(m, dict) and isinstance(m.get("cost_anomaly_index"), int | float):
            m = {**m, "cost_anomaly_index": {"available": False, "reason": "a version-1 document gives one number "
                                             f"({m['cost_anomaly_index']:g}) without its steps"}}
        if isinstance(m, dict) and isinstance(m.get("steps"), list):
            m = dict(m)
            steps = []
            for st in m["steps"]:
                if isinstance(st, dict):
                    st = dict(st)
                    stats = {k: st.pop(k) for k in list(st) if _STAT_KEY.match(k)}
                    st.setdefault("stats", stats)
                    st.pop("offered_load_unit", None)
                steps.append(st)
            m["steps"] = steps
        mixes.append(m)
    out["mixes"] = mixes
    return out


def _upgrade_clause(c: dict[str, Any]) -> dict[str, Any]:
    """A version-1 ``sla`` entry with the keys version 1 could leave out: ``kind`` (``error_rate`` when its
    metric or stat says so, else ``percentile``), ``stat`` and ``unit`` (empty), ``op`` (``<=``)."""
    kind = c.get("kind") or ("error_rate" if "error_rate" in (c.get("metric"), c.get("stat")) else "percentile")
    return {"stat": "", "op": "<=", "unit": "", **c, "kind": kind}


def schema_document() -> dict[str, Any]:
    """The JSON Schema of the limits JSON (``bearing schema limits``)."""
    from bearing_lib.common.schema import json_schema

    return json_schema(LimitsResult, title="bearing limits JSON", schema_id=SCHEMA)


__all__ = [
    "DEFAULT_ESTIMATOR",
    "ESTIMATORS",
    "FOLLOWUP_ORDER",
    "SCHEMA",
    "UNRECORDED_ESTIMATOR",
    "BlendedLimit",
    "ClauseShape",
    "Conditions",
    "Exceedance",
    "FollowUpStep",
    "FollowUpSummary",
    "LimitsResult",
    "MixLimit",
    "MixRef",
    "PCritical",
    "PCriticalEstimate",
    "PCriticalMethod",
    "QUlt",
    "Resolution",
    "Skipped",
    "Source",
    "SourceFinding",
    "StatedCondition",
    "StatsSettings",
    "Step",
    "schema_document",
]
