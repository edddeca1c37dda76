"""The report model: everything the capacity report shows, as typed data.

Built by :func:`build_report` from the three JSON documents of the contracts
(``docs/interfaces.md`` §4-6: limits JSON, profile JSON, plan JSON), the run's
provenance and, optionally, the previous report's ``summary.json``. Any of the three
inputs may be missing (``None``) or replaced by an :class:`Unavailable` that says why;
the sections that need it are then marked *not available* with that reason, and no
number is made up. :meth:`ReportModel.to_dict` is the ``summary.json`` twin of the HTML.

Sections, in reading order: headline (verdict badge + one quotable sentence), per-mix
limits with their conditions, load curves, production traffic, FOS and CBU, instances /
elasticity / memory, scorecards, what changed, data-quality flags, provenance.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from dataclasses import asdict, dataclass, field, is_dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from bearing_lib.common.errors import BadValueError, SchemaError
from bearing_lib.common.estimate import Estimate, derived_qualifiers
from bearing_lib.common.files import jsonable
from bearing_lib.common.format import fmt_number
from bearing_lib.common.schema import NotAvailable
from bearing_lib.common.unavailable import Unavailable
from bearing_lib.compare.identity import DEPLOYMENT_KEYS, Comparability, comparability, from_limits, identity_fields
from bearing_lib.fidelity.result import Fidelity
from bearing_lib.limits.result import FollowUpSummary, LimitsResult, MixLimit, Skipped
from bearing_lib.limits.sla import Clause
from bearing_lib.ops.export_report import ExportsReport
from bearing_lib.ops.triggers import ScalingTriggers
from bearing_lib.plan.capacity import InstancePlan
from bearing_lib.plan.capacity_plan import CapacityPlan
from bearing_lib.plan.domains import FailureDomains
from bearing_lib.plan.economics import PlanEconomics
from bearing_lib.plan.elasticity import ReplayResult
from bearing_lib.plan.fos import CbuResult, MixFos, Target, TierBands
from bearing_lib.plan.memory import MemoryPlan
from bearing_lib.plan.scorecards import Scorecards
from bearing_lib.plan.tenants import Tenants
from bearing_lib.report.compare_section import CompareSection
from bearing_lib.report.identity import ReportIdentity
from bearing_lib.report.plan_section import ProductionSource, production_source
from bearing_lib.report.summary import IDENTITY_KEYS, SUMMARY_SCHEMA, ReportSummary, SummaryLimit
from bearing_lib.report.templating import summary_block_html
from bearing_lib.servers.limit_bottlenecks import LimitBottlenecks
from bearing_lib.traffic.document import TrafficProfile

if TYPE_CHECKING:  # pragma: no cover
    from pydantic import JsonValue

    from bearing_lib.traffic.document import PassiveLimit

VERDICTS = ("green", "yellow", "red")


Interval = Estimate
"""Former name of the report's value-with-CI; the report now uses the shared :class:`Estimate`."""


@dataclass
class Headline:
    """The one sentence a reviewer quotes, and the badge beside it."""

    verdict: str  # green | yellow | red | unknown
    text: str
    verdict_reason: str | None = None
    binding_mix: str | None = None
    binding_constraint: str | None = None
    plan_line: str | None = None
    fidelity_line: str | None = None
    """When the load test does not represent production: the sentence that says how (``bearing_lib.fidelity``)."""


@dataclass
class SourceFile:
    """One load-test file the limits were fitted on, with its hash and the tool that wrote it."""

    path: str
    sha256: str | None
    format: str | None
    tool: str | None
    tool_version: str | None


@dataclass(frozen=True)
class ConditionRow:
    """One further row of the conditions table: its key (``label``) and what the cell shows, either the named
    ``parts`` of a measured part (``name value; ...``, e.g. where the work ran) or one ``value`` shown as it is
    (text, a number, or a part that was not available with its reason)."""

    label: str
    parts: tuple[tuple[str, JsonValue], ...] | None = None
    value: JsonValue = None

    @classmethod
    def of(cls, label: str, value: JsonValue) -> ConditionRow:
        """The row of one condition given as a JSON value (a mapping that is not ``available: false`` shows
        its parts)."""
        if isinstance(value, dict) and value.get("available") is not False:
            return cls(str(label), parts=tuple((str(k), v) for k, v in value.items()))
        return cls(str(label), value=value)

    def json_value(self) -> JsonValue:
        """The condition as the limits JSON wrote it (the parts back as a mapping)."""
        return dict(self.parts) if self.parts is not None else self.value


@dataclass
class ConditionsSection:
    """What every limit is conditional on (a limit without them is not comparable)."""

    model: str | None
    hardware: str | None
    tool: str | None
    window: str | None
    offered_load_unit: str | None
    sla: list[str]
    sources: list[SourceFile]
    extra: tuple[ConditionRow, ...] = ()
    """The limits' further conditions (``conditions.extra``), the load-test mixes and instances, as rows."""

    def to_dict(self) -> dict[str, Any]:
        """The ``summary.json`` form: the fields, ``extra`` as the mapping ``{label: value}``."""
        return {**asdict(replace(self, extra=())), "extra": {r.label: r.json_value() for r in self.extra}}


@dataclass
class MixRow:
    """One line of the per-mix table: limit, knee, FOS, what binds."""

    name: str
    run_id: str | None
    description: str
    share: float | None
    n_requests: int | None
    q_ult: Estimate
    """Offered load at the SLA crossing (the load-test axis), a bound when censored."""
    achieved: Estimate
    """Throughput completed at the limit (req/s): the basis of the FOS and the headline."""
    q_ult_statement: str
    censored: str
    throughput_rps: float | None
    p_critical: Estimate | None
    p_critical_note: str | None
    binding: str | None
    fos: Estimate | None
    n_steps: int
    n_invalid_steps: int
    followup: str | None = None
    """Where the test cannot resolve the limit: the follow-up test bearing designed for it (``bearing next``)."""
    floors: tuple[str, ...] = ()
    """The clauses a load-independent failure floor breaks at every load (``FailureFloor.breaks_clause``): the
    limit is then the other clauses'."""
    floors_one_load: bool = False
    """Every floor in :attr:`floors` was seen at one quiet load (``FailureFloor.one_load``): whether more instances
    would help is not tested."""
    achieved_lower_bound: bool = False
    """:attr:`achieved` is read from a step whose completed rate is a lower bound (``QUlt.achieved_lower_bound``)."""


@dataclass
class FosRow:
    """One mix's factor of safety: its limit in completed req/s (achieved basis) over the target."""

    mix: str
    share: float | None
    q_ult: Estimate
    fos: Estimate | None
    utilisation: float | None
    statement: str | None
    tokens: Estimate | None = None
    """``q_ult`` in tokens/s (input + output), with the mix's mean tokens per request from the
    plan's economics; None where the traffic has no token counts."""


@dataclass
class Predicted:
    """The digital twin's section (``model.predicted.data``): a limit the twin **predicts** for the
    production mix (never mixed up with a measured one), or why none is quoted, beside the twin's own
    validation."""

    headline: str
    predicted: Estimate | None
    trusted: bool
    flags: list[str]
    validation_rows: list[dict[str, Any]]
    param_rows: list[dict[str, Any]]
    notes: list[str]
    chart_spec: dict[str, Any] | None
    kind: str = "predicted"


@dataclass
class CurvePoint:
    offered_load: float
    value: float | None
    lo: float | None
    hi: float | None
    phase: str | None
    valid: bool
    flags: list[str]


@dataclass
class PhaseBand:
    """A contiguous run of one phase (elastic / plastic / failure) as a [lo, hi) band of offered load."""

    phase: str
    lo: float
    hi: float


@dataclass
class LoadCurve:
    """One mix's SLA metric against offered load, with phase bands, SLA line and knee."""

    mix: str
    run_id: str | None
    metric: str  # column stem, e.g. ttft_ms_p99
    label: str  # e.g. P99 TTFT (ms)
    unit: str
    offered_load_unit: str
    threshold: float | None
    knee: float | None
    q_ult: float | None
    points: list[CurvePoint]
    phase_bands: list[PhaseBand]


D = TypeVar("D")


@dataclass
class Section(Generic[D]):
    """A section that is either available (``data``, its typed dataclass) or not (``reason``)."""

    available: bool
    reason: str | None = None
    data: D | None = None

    def to_dict(self) -> dict[str, Any]:
        """The ``summary.json`` form: ``{"available", "reason", "data"}`` (``data`` ``{}`` when not available)."""
        return {"available": self.available, "reason": self.reason, "data": _data_dict(self.data)}


def _data_dict(data: Any) -> Any:
    if data is None:
        return {}
    if hasattr(data, "to_dict") and not isinstance(data, Estimate):
        return data.to_dict()
    return asdict(data) if is_dataclass(data) else data


@dataclass
class IntervalMethod:
    """How the 95 % intervals of some mixes' limits were made (``q_ult.interval_method``), and which mixes."""

    method: str
    mixes: list[str]


@dataclass
class LimitsSection:
    """The per-mix limits table (``model.mixes.data``)."""

    rows: list[MixRow]
    blended_q_ult: Estimate | None
    skipped: list[Skipped]
    notes: list[str]
    intervals: list[IntervalMethod] = field(default_factory=list)
    """Each distinct interval method with the mixes it made, in table order: a reviewer reads what the CI is."""


@dataclass
class CurvesSection:
    """The load-curve charts (``model.curves_section.data``): the mixes that have no curve, and why."""

    missing: list[str]


@dataclass
class MinuteCount:
    """Production requests in one minute (or rate window, ``bin_s``) on the trace's clock."""

    minute_start_s: float
    requests: float
    bin_s: float | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"minute_start_s": self.minute_start_s, "requests": self.requests}
        if self.bin_s is not None:
            d["bin_s"] = self.bin_s
        return d


@dataclass
class ProductionSection:
    """The production profile (``model.production.data``): the typed document the views read and the
    per-minute series for the peak chart."""

    document: TrafficProfile
    per_minute_series: list[MinuteCount]

    SUMMARY_SKIP = frozenset({"bearing_version", "quantile_method", "start_s", "end_s", "parameters", "mix_spec"})
    """Keys of the profile JSON left out of ``summary.json`` (how it was computed, not what it found)."""

    def to_dict(self) -> dict[str, Any]:
        """The ``summary.json`` form: the document as written, less :attr:`SUMMARY_SKIP`, and the series."""
        doc = {k: v for k, v in self.document.to_dict().items() if k not in self.SUMMARY_SKIP}
        return {**doc, "per_minute_series": [m.to_dict() for m in self.per_minute_series]}


@dataclass
class FosSection:
    """The FOS and CBU section (``model.fos.data``): the typed plan's FOS, target, tier and CBU."""

    tier: str
    tier_bands: TierBands
    target: Target
    blended: Estimate | None
    blended_statement: str | None
    blended_bound: str
    coverage: float | None
    uncovered: dict[str, float]
    per_mix: list[FosRow]
    ci_method: str | None
    verdict: str
    verdict_reason: str | None
    utilisation: float | None
    breakpoint_rule: str | None
    allowable_rps: float | None
    allowable_statement: str | None
    cbu: CbuResult | NotAvailable


@dataclass
class PlanSection:
    """The capacity plan (``model.plan.data``): instances, elasticity and memory (the plan's own sections, each
    its dataclass or :class:`NotAvailable`), and what an operator acts on (``report/plan_section.py``): the
    per-mix peaks and FOS against them (``per_mix``), failure domains, top tenants (None: no tenant column
    given), the scaling triggers, where production came from, and the passive limit."""

    instances: InstancePlan | NotAvailable
    elasticity: ReplayResult | NotAvailable
    memory: MemoryPlan | NotAvailable | None
    notes: list[str]
    per_mix: list[MixFos] = field(default_factory=list)
    failure_domains: FailureDomains | NotAvailable | None = None
    tenants: Tenants | None = None
    triggers: ScalingTriggers | NotAvailable = field(
        default_factory=lambda: NotAvailable("the scaling triggers were not derived for this report"))
    production_source: ProductionSource | None = None
    passive: PassiveLimit | NotAvailable = field(
        default_factory=lambda: NotAvailable("the passive limit was not computed for this report"))


@dataclass
class ScorecardsSection:
    """The plan's scorecard and health checklist (``model.scorecards.data``)."""

    scorecards: Scorecards | NotAvailable


@dataclass
class ChangesSection:
    """What changed since the previous report (``model.changes.data``)."""

    previous_name: str
    previous_run_time_utc: str | None
    previous_verdict: str
    items: list[Change]
    comparability: str = ""
    """:attr:`Comparability.statement` of the two reports' identities (the fields unknown on a side)."""


@dataclass
class Change:
    """How one number moved since the previous report."""

    item: str
    previous: Estimate
    current: Estimate | None
    delta: float | None
    delta_pct: float | None
    significant: bool | None  # True when the two 95% CIs do not overlap
    note: str


@dataclass
class Flag:
    """A data-quality finding: where it comes from, how serious, what it says."""

    source: str
    level: str
    code: str
    message: str


@dataclass
class OpsSection:
    """Bottleneck at the limit, exported settings, tokens and money (``model.ops.data``; built by
    :func:`bearing_lib.report.ops_section.ops_section`), each typed: the bottleneck per mix
    (:class:`~bearing_lib.servers.limit_bottlenecks.LimitBottlenecks`), the exported files
    (:class:`~bearing_lib.ops.export_report.ExportsReport`) and the plan's economics (:class:`PlanEconomics`, or
    None without one)."""

    bottleneck: LimitBottlenecks
    exports: ExportsReport
    economics: PlanEconomics | None
    triggers: ScalingTriggers | NotAvailable = field(
        default_factory=lambda: NotAvailable("the scaling triggers were not derived"))
    """The exported autoscalers' triggers with their evidence (:mod:`bearing_lib.ops.triggers`)."""


@dataclass
class ReportProvenance:
    bearing_version: str
    run_time_utc: str
    quantile_method: str
    parameters: dict[str, Any]
    inputs: list[dict[str, Any]]
    environment: dict[str, str] = field(default_factory=dict)


@dataclass
class ReportModel:
    """The whole report (see module docstring); ``to_dict()`` is ``summary.json``."""

    name: str
    title: str
    headline: Headline
    conditions: Section[ConditionsSection]
    mixes: Section[LimitsSection]
    curves: list[LoadCurve]
    curves_section: Section[CurvesSection]
    production: Section[ProductionSection]
    fos: Section[FosSection]
    plan: Section[PlanSection]
    scorecards: Section[ScorecardsSection]
    changes: Section[ChangesSection]
    flags: list[Flag]
    provenance: ReportProvenance
    identity: ReportIdentity = field(default_factory=ReportIdentity)
    """What makes two reports comparable: model, hardware, SLA, tier, input kinds."""
    predicted: Section[Predicted] = field(default_factory=lambda: Section(False, "the digital twin was not run"))
    """The twin's prediction for the production mix."""
    ops: Section[OpsSection] = field(default_factory=lambda: Section(
        False, "the bottleneck and operational settings section was not built for this report"))
    """Bottleneck at the limit, exported settings, tokens and money (``bearing_lib.report.ops_section``)."""
    compare: Section[CompareSection] = field(default_factory=lambda: Section(
        False, "no deployments were given to compare (bearing report --compare PATH ...)"))
    """Which deployment to run: the comparison of several deployments (``bearing_lib.report.compare_section``)."""
    fidelity: Section[Fidelity] = field(default_factory=lambda: Section(
        False, "the fidelity of the test to production was not assessed for this report"))
    """How far the load test is from production (``bearing_lib.report.fidelity_section``)."""

    @property
    def verdict(self) -> str:
        return self.headline.verdict

    @property
    def profile_doc(self) -> TrafficProfile | None:
        """The production profile as its typed document (None when the section is not available)."""
        return self.production.data.document if self.production.data is not None else None

    def summary(self) -> ReportSummary:
        """The part of ``summary.json`` other reports, the index and the runner read back."""
        rows = self.mixes.data.rows if self.mixes.data is not None else []
        return ReportSummary(
            name=self.name, verdict=self.verdict, headline=self.headline.text,
            run_time_utc=self.provenance.run_time_utc, identity=self.identity,
            limits_available=self.mixes.available,
            limits=[SummaryLimit(r.name, r.q_ult, r.achieved) for r in rows],
            blended_fos=self.fos.data.blended if self.fos.data is not None else None,
            comparison=self.compare.data if self.compare.available else None,
            compare_reason=None if self.compare.available else self.compare.reason)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready twin of the HTML (``summary.json``); :class:`ReportSummary` reads it back."""
        d: dict[str, Any] = {"schema": SUMMARY_SCHEMA, "verdict": self.verdict, "name": self.name,
                             "title": self.title, "headline": asdict(self.headline)}
        for key in ("conditions", "mixes"):
            d[key] = getattr(self, key).to_dict()
        d["curves"] = [asdict(c) for c in self.curves]
        for key in ("curves_section", "production", "fos", "plan", "scorecards", "changes"):
            d[key] = getattr(self, key).to_dict()
        d["flags"] = [asdict(f) for f in self.flags]
        d["provenance"] = asdict(self.provenance)
        d["identity"] = self.identity.to_dict()
        d["predicted"] = self.predicted.to_dict()
        d["ops"] = self.ops.to_dict()
        d["compare"] = self.compare.to_dict()
        d["fidelity"] = self.fidelity.to_dict()
        summary = self.summary().to_dict()
        d["limits"] = summary["limits"]  # the compact form other reports read back for "what changed"
        return jsonable(d)

    def _repr_html_(self) -> str:  # pragma: no cover - notebook display
        return summary_block_html(self)


# --------------------------------------------------------------------------- helpers


_fmt = fmt_number


def as_float(v: Any, *, finite: bool = False) -> float | None:
    """``v`` as a float, or None when it is missing, a bool or not a number (and, with ``finite``, not finite)."""
    if v is None or isinstance(v, bool):
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if finite and not math.isfinite(f) else f


def _split(doc: Any, what: str) -> tuple[dict[str, Any] | None, str | None]:
    """A document or the reason it is not there."""
    if doc is None:
        return None, f"no {what} was given to this run"
    if isinstance(doc, Unavailable):
        return None, doc.reason
    if isinstance(doc, dict) and doc.get("available") is False:
        return None, str(doc.get("reason") or f"the {what} says it is not available")
    if not isinstance(doc, dict):
        raise BadValueError(f"{what}: expected a JSON object, got {type(doc).__name__}", field=what)
    return doc, None


_METRIC_WORDS = {
    "ttft": "TTFT",
    "latency": "end-to-end latency",
    "e2e": "end-to-end latency",
    "tpot": "TPOT",
    "itl": "inter-token latency",
    "goodput": "goodput",
    "ttft_ms": "TTFT",
    "latency_ms": "end-to-end latency",
    "tpot_ms": "TPOT",
    "itl_ms": "inter-token latency",
    "error_rate": "error rate",
}


def constraint_label(clause: Any) -> str | None:
    """Human form of an SLA clause: ``{"metric": "ttft_ms", "stat": "p99"}`` → ``"P99 TTFT"``.

    Accepts the clause dict or its text (``"p99(ttft_ms) <= 1000 ms"``); returns the text
    unchanged when it does not look like either.
    """
    if clause is None:
        return None
    metric = stat = None
    if isinstance(clause, Clause):
        clause = {"metric": clause.metric, "stat": clause.stat, "text": clause.text}
    if isinstance(clause, dict):
        metric, stat = clause.get("metric"), clause.get("stat")
        if metric is None:
            clause = clause.get("text") or clause.get("clause")
    if metric is None and isinstance(clause, str):
        m = re.match(r"\s*(p\d+(?:\.\d+)?|mean|max|median)\s*\(\s*(\w+)\s*\)", clause, re.I)
        if m:
            stat, metric = m.group(1), m.group(2)
        else:
            m = re.match(r"\s*(\w+)", clause)
            metric = m.group(1) if m and m.group(1) in _METRIC_WORDS else None
            if metric is None:
                return clause
    word = _METRIC_WORDS.get(str(metric), str(metric))
    if stat and str(stat).lower() not in ("mean", "rate", "ratio") and metric != "error_rate":
        return f"{str(stat).upper()} {word}"
    return word


# --------------------------------------------------------------------------- sections


def _conditions(limits: LimitsResult | None, reason: str | None) -> Section:
    if limits is None:
        return Section(False, reason)
    cond = limits.conditions
    sources = [SourceFile(x.path, x.sha256, x.format, x.tool, x.tool_version) for x in cond.sources]
    tools = sorted({f"{x.tool}{' ' + str(x.tool_version) if x.tool_version else ''}" for x in cond.sources if x.tool})
    # the limits' further conditions as JSON (whatever type holds them), then the mixes and instances
    given = dict(cond.extra.to_dict() if hasattr(cond.extra, "to_dict") else jsonable(cond.extra or {}))
    given["load-test mixes"] = cond.mixes
    if cond.instances is not None:
        given["instances in the load test"] = f"{cond.instances} ({cond.instances_basis or 'stated'})"
    extra = tuple(ConditionRow.of(k, v) for k, v in given.items())
    c = ConditionsSection(
        model=_text(cond.model),
        hardware=_text(cond.hardware),
        tool=", ".join(tools) or None,
        window=_text(cond.window or cond.steady_window),
        offered_load_unit=_text(cond.offered_load_unit),
        sla=[c.text for c in limits.sla],
        sources=sources,
        extra=extra,
    )
    return Section(True, data=c)


def _str(v: Any) -> str | None:
    return None if v is None else str(v)


def _text(v: Any) -> str | None:
    """A condition as text: lists joined, empty → None (the report then says "not stated")."""
    if v is None:
        return None
    if isinstance(v, list | tuple):
        items = [str(x) for x in v if x not in (None, "")]
        return ", ".join(items) or None
    return str(v) or None


def _row_label(m: MixLimit, several_runs: bool) -> str:
    return f"{m.run_id} · {m.mix.name}" if several_runs and m.run_id else m.mix.name


def _several_runs(limits: LimitsResult) -> bool:
    return len(limits.runs) > 1


def _p_critical(m: MixLimit) -> tuple[Estimate | None, str | None]:
    pc = m.p_critical
    if pc is None:
        return None, None
    if pc.value is None:
        return None, pc.reason
    ci = tuple(pc.ci95) if pc.ci95 else None
    # "P99 never exceeded 2x its baseline up to x": P_critical ≥ x, a bound (a new user read "6.00 (≥ 6.00, open
    # above)", round 22)
    bound = {"above": "lower", "below": "upper"}.get(pc.censored or "", "none")
    return Estimate(pc.value, ci95=ci, bound=bound, unit=pc.unit or m.unit or "", basis="offered"), None


def _followup(m: MixLimit) -> str | None:
    """The follow-up test of a coarse limit, from its typed field ``q_ult.resolution.followup`` (written by
    ``bearing_lib.limits.fit``; ``{"available": false}`` when none could be designed), in the words of the
    limits' own note."""
    res = m.q_ult.resolution if m.q_ult is not None else None
    f = res.followup if res is not None else None
    if not isinstance(f, FollowUpSummary) or not f.steps:
        return None
    loads = ", ".join(f"{st.load:.4g}" for st in f.steps)
    durs = ", ".join(f"{st.duration_s:g}" for st in f.steps)
    total, resolution = f.total_s, f.expected_resolution
    return (f"follow-up test: loads {loads} {m.unit or ''} in ascending order, steps of {durs} s "
            f"(total {total:.0f} s), "
            f"then pool both runs; expected resolution ±{resolution:.0%}. `bearing next LIMITS.json --out FILE` "
            "writes it for your load-test tool")


def _mixes(limits: LimitsResult | None, reason: str | None, plan: CapacityPlan | None,
           plan_run: str | None) -> Section[LimitsSection]:
    if limits is None:
        return Section(False, reason)
    several = _several_runs(limits)
    fos_by_mix: dict[str, Estimate] = {}
    if plan is not None:
        for f in plan.per_mix:
            if f.fos.estimate is not None:
                fos_by_mix[f.mix] = f.fos.estimate
    names = [m.mix.name for m in limits.mixes]
    rows = []
    for m in limits.mixes:
        name = m.mix.name
        q = m.q_ult
        est = q.estimate if q is not None else Estimate(None, basis="offered")
        pc, pc_note = _p_critical(m)
        # A plan covers one run: join its FOS to that run's mixes (or to a mix name that is unique).
        fos = None
        if name in fos_by_mix and (m.run_id == plan_run if plan_run else names.count(name) == 1):
            fos = fos_by_mix[name]
        rows.append(
            MixRow(
                name=_row_label(m, several),
                run_id=m.run_id,
                description=m.mix.description,
                share=m.share,
                n_requests=m.n_requests,
                q_ult=est,
                achieved=q.achieved if q is not None else Estimate(None, unit="rps", basis="achieved"),
                q_ult_statement=(q.statement if q is not None else "") or est.text(),
                censored=q.censored if q is not None else "no_data",
                throughput_rps=q.throughput_rps if q is not None else None,
                p_critical=pc,
                p_critical_note=pc_note,
                binding=constraint_label(m.binding),
                fos=fos,
                n_steps=len(m.steps),
                n_invalid_steps=sum(1 for st in m.steps if _left_out(st)),
                followup=_followup(m),
                floors=tuple(f.clause for f in m.failure_floors if f.breaks_clause),
                floors_one_load=all(f.one_load for f in m.failure_floors if f.breaks_clause),
                achieved_lower_bound=q is not None and q.achieved_lower_bound,
            )
        )
    if not rows:
        return Section(False, "the limits document lists no mixes")
    blended = limits.blended.estimate if limits.blended is not None and limits.blended.value is not None else None
    intervals: dict[str, list[str]] = {}
    for m, r in zip(limits.mixes, rows, strict=True):
        method = m.q_ult.interval_method if m.q_ult is not None else None
        if method:
            intervals.setdefault(method, []).append(r.name)
    return Section(True, data=LimitsSection(rows=rows, blended_q_ult=blended, skipped=list(limits.skipped),
                                            notes=list(limits.notes),
                                            intervals=[IntervalMethod(k, v) for k, v in intervals.items()]))


def _curves(limits: LimitsResult | None, reason: str | None) -> tuple[list[LoadCurve], Section[CurvesSection]]:
    if limits is None:
        return [], Section(False, reason)
    latency_clauses = [c for c in limits.sla if c.kind == "percentile" and c.metric not in (None, "error_rate")]
    unit_load = _text(limits.conditions.offered_load_unit) or "rps"
    several = _several_runs(limits)
    curves: list[LoadCurve] = []
    missing: list[str] = []
    for m in limits.mixes:
        name = _row_label(m, several)
        steps = sorted((st for st in m.steps if st.offered_load is not None and math.isfinite(st.offered_load)),
                       key=lambda st: float(st.offered_load))
        clause = _binding_clause(m.binding, latency_clauses)
        if clause is None or not steps:
            missing.append(f"{name}: {'no steps' if not steps else 'no latency clause in the SLA'}")
            continue
        stem = f"{clause.metric}_{clause.stat}"

        def observed(st: Any, stem: str = stem, text: str = clause.text) -> float | None:
            if text in st.observed:
                return as_float(st.observed[text])
            return as_float(st.stats.get(stem))

        if not any(observed(st) is not None for st in steps):
            # steps without a supported value can still be judged from bounds on it (limits.judging: the value's 95 %
            # lower bound, a lower percentile a table reports, or a table's mean and maximum: the maximum over >= 368
            # requests proves a P99 pass), with nothing to draw; "no step supports a P99 TTFT" beside "binds on P99
            # TTFT" read as a contradiction (AIPerf's sweep CSV reports only means and maxima, round 62)
            by_bounds = sum(1 for st in steps if st.margins.get(clause.text) is not None)
            judged = (f"; {by_bounds} step(s) were judged on it from bounds the data give (a 95 % lower bound, a "
                      "lower percentile, or the mean and maximum)" if by_bounds else "")
            missing.append(f"{name}: no step has a supported {constraint_label(clause)} ({clause.text or stem}) to "
                           f"draw{judged}")
            continue
        points = [
            CurvePoint(
                offered_load=float(st.offered_load),
                value=observed(st),
                lo=as_float(st.stats.get(f"{stem}_ci95_lo")),
                hi=as_float(st.stats.get(f"{stem}_ci95_hi")),
                phase=st.phase,
                valid=st.valid is not False,
                flags=list(st.flags),
            )
            for st in steps
        ]
        pc, _ = _p_critical(m)
        curves.append(
            LoadCurve(
                mix=name,
                run_id=m.run_id,
                metric=stem,
                label=f"{constraint_label(clause)} ({clause.unit or ''})".replace(" ()", ""),
                unit=clause.unit or "",
                offered_load_unit=m.unit or unit_load,  # the run's own (conditions join several runs')
                threshold=clause.threshold,
                knee=pc.value if pc is not None else None,
                q_ult=m.q_ult.value if m.q_ult is not None else None,
                points=points,
                phase_bands=_phase_bands(points),
            )
        )
    if not curves:
        return [], Section(False, "; ".join(missing) or "no load steps in the limits document")
    return curves, Section(True, data=CurvesSection(missing))


def _binding_clause(binding: Any, clauses: list[Clause]) -> Clause | None:
    if not clauses:
        return None
    label = constraint_label(binding)
    for c in clauses:
        if label is not None and constraint_label(c) == label:
            return c
    return clauses[0]


def _phase_bands(points: list[CurvePoint]) -> list[PhaseBand]:
    """Contiguous runs of one phase as [lo, hi) load bands, split at step midpoints."""
    bands: list[PhaseBand] = []
    pts = [p for p in points if p.phase]
    for i, p in enumerate(pts):
        lo = pts[0].offered_load if i == 0 else (pts[i - 1].offered_load + p.offered_load) / 2
        hi = pts[-1].offered_load if i == len(pts) - 1 else (p.offered_load + pts[i + 1].offered_load) / 2
        if bands and bands[-1].phase == p.phase:
            bands[-1].hi = hi
        else:
            bands.append(PhaseBand(str(p.phase), lo, hi))
    return bands


def _production(doc: TrafficProfile | None, reason: str | None,
                series: list[MinuteCount]) -> Section[ProductionSection]:
    if doc is None:
        return Section(False, reason)
    return Section(True, data=ProductionSection(document=doc, per_minute_series=series))


def _minute(row: Any, i: int) -> MinuteCount:
    """One row of the per-minute series (``{"minute_start_s", "requests"[, "bin_s"]}``), checked."""
    if isinstance(row, MinuteCount):
        return row
    t = as_float(row.get("minute_start_s"), finite=True) if isinstance(row, dict) else None
    n = as_float(row.get("requests"), finite=True) if isinstance(row, dict) else None
    if t is None or n is None:
        raise BadValueError(f"per_minute_series[{i}]: expected minute_start_s and requests as finite numbers, "
                            f"got {row!r:.80}", field=f"per_minute_series[{i}]")
    b = as_float(row.get("bin_s"), finite=True)
    return MinuteCount(t, row["requests"] if isinstance(row["requests"], int) else n, b)


def _fos(plan: CapacityPlan | None, reason: str | None) -> Section[FosSection]:
    """The FOS and CBU section: a small view-model of the typed plan (``tier_bands``, ``target`` and ``cbu``
    are the plan's own dataclasses; ``cbu`` may be ``NotAvailable``)."""
    if plan is None:
        return Section(False, reason)
    b = plan.blended
    per_tok = _mean_tokens_per_mix(plan)
    per_mix = [FosRow(mix=f.mix, share=f.share, q_ult=f.q_ult, fos=f.fos.estimate, utilisation=f.utilisation,
                      statement=f.fos.statement,
                      tokens=(f.q_ult.scaled(per_tok[f.mix], unit="tokens/s", basis="achieved")
                              if f.mix in per_tok and f.q_ult.value is not None else None))
               for f in plan.per_mix]
    return Section(True, data=FosSection(
        tier=plan.tier.name, tier_bands=plan.tier, target=plan.target, blended=b.estimate,
        blended_statement=b.statement, blended_bound=b.bound, coverage=b.coverage, uncovered=b.uncovered,
        per_mix=per_mix, ci_method=plan.fos.ci_method, verdict=plan.verdict, verdict_reason=plan.verdict_reason,
        utilisation=plan.utilisation, breakpoint_rule=plan.breakpoint_rule, allowable_rps=plan.allowable_rps,
        allowable_statement=plan.allowable_statement, cbu=plan.cbu))


def _mean_tokens_per_mix(plan: CapacityPlan) -> dict[str, float]:
    """Mean input + output tokens per request of each mix (the plan's economics section), if known."""
    from bearing_lib.plan.economics import PlanEconomics, Tokens

    econ = plan.economics
    if not isinstance(econ, PlanEconomics) or not isinstance(econ.tokens, Tokens):
        return {}
    return {row.mix: row.mean_input_tokens + row.mean_output_tokens for row in econ.tokens.per_mix
            if row.mean_input_tokens + row.mean_output_tokens > 0}


def _plan(plan: CapacityPlan | None, reason: str | None, profile: TrafficProfile | None = None,
          ops: Section[OpsSection] | None = None, passive: PassiveLimit | NotAvailable | None = None
          ) -> Section[PlanSection]:
    if plan is None:
        return Section(False, reason)
    why = ops.reason if ops is not None else "no report folder to write the exports into"
    triggers = (ops.data.triggers if ops is not None and ops.data is not None else
                NotAvailable(f"the operational settings were not built: {why}"))
    return Section(True, data=PlanSection(
        instances=plan.instances, elasticity=plan.elasticity, memory=plan.memory, notes=list(plan.notes),
        per_mix=list(plan.per_mix), failure_domains=plan.failure_domains, tenants=plan.tenants, triggers=triggers,
        production_source=production_source(profile),
        passive=passive if passive is not None else NotAvailable("the production trace was not given to the report")))


def _scorecards(plan: CapacityPlan | None, reason: str | None) -> Section[ScorecardsSection]:
    if plan is None:
        return Section(False, reason)
    return Section(True, data=ScorecardsSection(plan.scorecards))


def quantile_label(q: Any) -> str:
    """``0.99`` → ``"P99"``, ``"p95"`` → ``"P95"``, ``0.999`` → ``"P99.9"``."""
    if isinstance(q, int | float) and not isinstance(q, bool) and 0 < q < 1:
        return f"P{q * 100:.10g}"
    return str(q or "").upper()


def _target_bin_s(profile: TrafficProfile | None) -> float | None:
    """The bin of the profile's target rate in seconds (60 for a request trace, 600 for ServeGen windows)."""
    t = profile.targets.target if profile is not None and profile.targets is not None else None
    return t.bin_s if t is not None else None


def _target_text(plan: CapacityPlan, bin_s: float | None = None) -> str:
    t = plan.target
    q = quantile_label(t.quantile)
    rps = t.rps
    growth = t.growth
    per = "per-minute" if bin_s is None or bin_s == 60 else f"per-window ({bin_s:g} s)"
    s = f"the {q} {per} peak" if q else "the target load"
    if rps is not None:
        s += f" of {_fmt(rps)} req/s"
    if growth is not None and abs(growth - 1.0) > 1e-9:
        s += f" (× {growth:g} growth)"
    return s


def _plan_line(plan: CapacityPlan) -> str | None:
    parts = []
    inst = plan.instances
    bound = plan.blended.bound
    # an upper bound on the limit makes the count a floor, a lower bound a ceiling (plan notes say which)
    least, most = derived_qualifiers(bound)
    if isinstance(inst, InstancePlan):
        parts.append(f"{least}{inst.total} instances ({inst.base} + {inst.buffer} buffer) at "
                     f"{most}{_fmt(inst.per_instance_allowable_rps)} req/s allowable each")
    el = plan.elasticity
    if isinstance(el, ReplayResult) and el.recommendation:
        parts.append(f"scaling: {el.recommendation}")
    if plan.allowable_rps is not None:
        parts.append(f"allowable capacity {most}{_fmt(plan.allowable_rps)} req/s")
    return ("Plan: " + "; ".join(parts) + ".") if parts else None


def _headline(limits: LimitsResult | None, limits_reason: str | None,
              plan: CapacityPlan | None, plan_reason: str | None, mixes: Section[LimitsSection],
              bin_s: float | None = None, plan_run: str | None = None) -> Headline:
    rows: list[MixRow] = mixes.data.rows if mixes.data is not None else []
    binding_row = None
    with_fos = [r for r in rows if r.fos is not None and r.fos.value is not None]
    if with_fos:
        binding_row = min(with_fos, key=lambda r: r.fos.value)
    elif rows:
        with_q = [r for r in rows if r.achieved.value is not None and r.censored == "none"]
        binding_row = min(with_q, key=lambda r: r.achieved.value) if with_q else None
    binds = ""
    # a failure floor breaks a clause at every load: the SLA fails whatever the load, and the limits are the other
    # clauses' (a JMeter run's 2.1 % of assertion failures read "Q_ult ≥ 5.90 req/s completed (it never failed)")
    # (the plan's run only: a floor of another run is not this verdict's; a mix of that run the plan skipped, for
    # want of a limit, keeps its floor; without a named run, the rows the plan joined a FOS to, else all)
    judged_rows = ([r for r in rows if r.run_id == plan_run] if plan_run else
                   [r for r in rows if r.fos is not None]) or rows
    floored = sorted({f"{c} ({r.name})" if len(rows) > 1 else c for r in judged_rows for c in r.floors})
    if binding_row is not None:
        on = f" on {binding_row.binding}" if binding_row.binding else ""
        at = binding_row.achieved.text(ci=False, unit=False, missing="")
        if binding_row.achieved.bound == "lower":  # it never failed: nothing binds yet, it is only the lowest bound
            binds = f"the {binding_row.name} mix has the lowest limit, Q_ult {at} req/s completed (it never failed)"
        else:
            low = ", a lower bound: the server may have completed more" if binding_row.achieved_lower_bound else ""
            binds = f"the {binding_row.name} mix binds{on}" + (f" (Q_ult {at} req/s completed{low})" if at else "")
        if binding_row.floors:
            binds = f"on the other clauses, {binds}"
    if floored:
        # a floor seen at one quiet load cannot show that it does not grow with load (the plan's floor_reason says
        # the same): the headline does not claim it
        one_load = all(r.floors_one_load for r in judged_rows if r.floors)
        binds = ((f"the SLA fails at every tested load: failures above the allowance break {', '.join(floored)} at "
                  "the one quiet load tested, and whether more instances would help is not tested") if one_load else
                 (f"the SLA fails at every tested load: a load-independent failure floor breaks {', '.join(floored)}, "
                  "and no instance count fixes it")) + (f"; {binds}" if binds else "")
    b_mix = binding_row.name if binding_row else None
    b_con = binding_row.binding if binding_row else None
    if plan is None:
        if limits is None:
            text = f"No verdict: neither limits ({limits_reason}) nor a capacity plan ({plan_reason}) are available."
        else:
            text = f"No verdict: the capacity plan is not available ({plan_reason})."
            if binds:
                text += f" Among the measured limits, {binds} (lowest limit)."
        return Headline("unknown", text, None, b_mix, b_con)
    verdict = plan.verdict if plan.verdict in VERDICTS else "unknown"
    blended = plan.blended.estimate
    if blended is not None and blended.bound in ("none", "lower", "upper"):
        fos_text = f"the blended FOS is {blended.text()}"
    elif plan.blended.statement:
        fos_text = f"the blended {plan.blended.statement}"
    else:
        fos_text = "the blended FOS is not estimable"
    text = f"At {_target_text(plan, bin_s)} {fos_text}: {verdict}"
    text += f"; {binds}." if binds else "."
    return Headline(verdict, text, plan.verdict_reason, b_mix, b_con, _plan_line(plan))


REPORT_IDENTITY_KEYS = tuple(dict.fromkeys((*DEPLOYMENT_KEYS, *IDENTITY_KEYS)))
"""The report's identity: the deployment (:data:`bearing_lib.compare.identity.DEPLOYMENT_KEYS`, the one
identity ``bearing compare`` uses too) and the question asked of it (tier, production source). Summaries
written before engine, engine version and instances were part of it read them as unknown."""


def _identity(limits: LimitsResult | None, plan: CapacityPlan | None,
              profile: TrafficProfile | None) -> ReportIdentity:
    """What must match for two reports to be compared: the deployment and the question asked of it."""
    ident = ReportIdentity()
    if limits is not None:
        dep = identity_fields(from_limits(limits))
        ident = replace(
            ident, hardware=dep["hardware"], engine=dep["engine"], engine_version=dep["engine_version"],  # type: ignore[arg-type]
            instances=dep["instances"], model=_text(limits.conditions.model), sla=limits.sla_text,  # type: ignore[arg-type]
            load_test_tools=", ".join(sorted({x.tool for x in limits.conditions.sources if x.tool})) or None)
    if plan is not None:
        ident = replace(ident, tier=plan.tier.name)
    if profile is not None:
        ident = replace(ident, production_format=profile.source_format)
    return ident


def _comparability(prev: ReportSummary, ident: ReportIdentity) -> Comparability:
    """The previous report against this one: a difference on any of :data:`REPORT_IDENTITY_KEYS`; a deployment
    field (:data:`DEPLOYMENT_KEYS`) unknown on a side is unknown, never equal."""
    p, c_ = prev.identity.to_dict(), ident.to_dict()
    c = comparability(p, c_, DEPLOYMENT_KEYS)
    rest = comparability(p, c_, [k for k in REPORT_IDENTITY_KEYS if k not in DEPLOYMENT_KEYS])
    return Comparability(c.differ + rest.differ, c.unknown)


def _not_comparable(prev: ReportSummary, ident: ReportIdentity) -> str | None:
    """Why the previous report cannot be compared with this one (a field stated on both sides differs), or
    None when it can (fields unknown on a side are labelled on each change, :func:`_changes`)."""
    c = _comparability(prev, ident)
    return c.statement if c.differ else None


def _previous_arg(previous: Any) -> tuple[ReportSummary | None, str]:
    """The previous report for "what changed": a :class:`ReportSummary`, or its ``summary.json`` validated
    once here, or the reason there is none."""
    if isinstance(previous, ReportSummary):
        return previous, ""
    if previous is None:
        return None, "no earlier report was found to compare with"
    doc, reason = _split(previous, "previous summary")
    if doc is None:
        return None, str(reason)
    try:
        return ReportSummary.from_dict(doc, source="previous summary.json"), ""
    except SchemaError as exc:  # an older bearing's summary: said in the section, the report still runs
        return None, f"not comparable: {exc}"


def _changes(previous: Any, mixes: Section[LimitsSection], fos: Section[FosSection],
             identity: ReportIdentity) -> Section[ChangesSection]:
    prev, reason = _previous_arg(previous)
    if prev is None:
        return Section(False, reason)
    comp = _comparability(prev, identity)
    if comp.differ:
        return Section(False, comp.statement)
    unknown = "" if comp.comparable else comp.statement
    items: list[Change] = []
    prev_mixes = {m.name: m for m in prev.limits}
    cur_rows: dict[str, MixRow] = {r.name: r for r in mixes.data.rows} if mixes.data is not None else {}
    for name in list(cur_rows) + [n for n in prev_mixes if n not in cur_rows]:
        p_row = prev_mixes.get(name)
        if p_row is None or p_row.q_ult.value is None:
            continue
        c_row = cur_rows.get(name)
        c = c_row.q_ult if c_row else None
        items.append(_change(f"Q_ult {name} (offered)", p_row.q_ult, c,
                             "mix not in this report" if c_row is None else "", unknown))
    p_f = prev.blended_fos if prev.blended_fos is not None and prev.blended_fos.value is not None else None
    c_f = fos.data.blended if fos.data is not None else None
    if p_f is not None:
        items.append(_change("blended FOS", p_f, c_f, "" if c_f else "no FOS in this report", unknown))
    if not items:
        return Section(False, "the previous report holds no limits or FOS to compare with")
    return Section(True, data=ChangesSection(previous_name=prev.name, previous_run_time_utc=prev.run_time_utc,
                                             previous_verdict=prev.verdict, items=items,
                                             comparability=comp.statement))


def _change(item: str, p: Estimate, c: Estimate | None, note: str, unknown: str = "") -> Change:
    """How one number moved. ``unknown`` (a :class:`Comparability` statement) is said instead of a verdict
    on the difference: with a deployment field unknown on a side, no "real change" or "within measurement
    noise" is claimed."""
    if unknown and c is not None and c.value is not None and p.value is not None and not (p.is_bound or c.is_bound):
        delta = c.value - p.value
        return Change(item, p, c, delta, delta / p.value if p.value else None, None,
                      note or f"not judged: {unknown}")
    if c is None or c.value is None or p.value is None:
        return Change(item, p, c, None, None, None, note or "not measured this time")
    if p.is_bound or c.is_bound:
        # a bound moved: its number is not a measurement, so no difference is quoted
        return Change(item, p, c, None, None, None,
                      note or f"{'both are' if p.is_bound and c.is_bound else 'one is'} a bound "
                              f"({p.text(ci=False)} → {c.text(ci=False)}): no difference can be quoted")
    delta = c.value - p.value
    pct = delta / p.value if p.value else None
    sig = None
    if None not in (p.lo, p.hi, c.lo, c.hi):
        sig = bool(c.hi < p.lo or c.lo > p.hi)  # type: ignore[operator]
    if not note:
        note = ("95% CIs do not overlap: a real change" if sig else
                "95% CIs overlap: within measurement noise" if sig is not None else "no CI to judge")
    return Change(item, p, c, delta, pct, sig, note)


# Loader findings are written for `bearing inspect` and the JSON (they name columns and raw values:
# "start_s is null", "offered_load is inf"); the report says the same in a reader's words.
_READABLE = [(re.compile(r"(?<![\w.-])null(?![\w-])"), "empty"), (re.compile(r"(?<![\w.-])None(?![\w-])"), "none"),
             (re.compile(r"(?<![\w.-])(?:nan|NaN)(?![\w-])"), "not a number"),
             (re.compile(r"(?<![\w.-])(?:inf|Infinity)(?![\w-])"), "unbounded")]


def _readable(message: str) -> str:
    for pattern, word in _READABLE:
        message = pattern.sub(word, message)
    return message


def _flags(limits: LimitsResult | None, profile: TrafficProfile | None,
           findings: list[Flag] | None) -> list[Flag]:
    out = [replace(f, message=_readable(f.message)) for f in findings or []]
    if limits is not None:
        several = _several_runs(limits)
        for src in limits.conditions.sources:
            # the warnings (what the files hide or get wrong); the informational notes say how fields were
            # mapped, which is `bearing inspect`'s business, so they are counted and pointed to
            where = f"load test · {Path(src.path).name}"
            for lf in src.findings:
                if lf.level == "warning":
                    out.append(Flag(where, lf.level, lf.code, _readable(lf.message)))
            n_info = sum(1 for lf in src.findings if lf.level != "warning")
            if n_info:
                out.append(Flag(where, "info", "loader_notes",
                                f"{n_info} note(s) on how the files were read: `bearing inspect` on the load test "
                                "lists them"))
        for sk in limits.skipped:
            out.append(Flag("limits", "info", "mix_skipped", f"{sk.run_id} · {sk.mix}: {sk.reason}".lstrip(" ·")))
        for note in limits.notes:
            out.append(Flag("limits", "info", "note", str(note)))
        for m in limits.mixes:
            name = _row_label(m, several)
            for st in m.steps:
                left_out = _left_out(st)
                if st.flags or left_out:
                    flags = ", ".join(st.flags)
                    why = ((f"{st.reasons[0]}" + (f" (flags: {flags})" if flags else "")) if left_out and st.reasons
                           else flags or "marked invalid")
                    out.append(Flag(f"limits · {name}", "warning", "step_" + ("invalid" if left_out else "flagged"),
                                    f"step {st.step} {_load_text(st)}: {why}"
                                    + (" (excluded from the fit)" if left_out else "")))
            for note in m.notes:
                out.append(Flag(f"limits · {name}", "info", "note", str(note)))
            if m.q_ult is not None and m.q_ult.censored != "none":
                # a floor breaks a clause at every load: "the test never failed" is of the other clauses (a new
                # user read it beside "the SLA fails at every tested load", round 22)
                other = m.q_ult.censored == "above" and any(f.breaks_clause for f in m.failure_floors)
                out.append(Flag(f"limits · {name}", "warning",
                                f"censored_{m.q_ult.censored}" + ("_other_clauses" if other else ""),
                                m.q_ult.statement or m.q_ult.censored))
    if profile is not None:
        for key, v in (("per_second", profile.per_second), ("slots", profile.slots),
                       ("decomposition", profile.decomposition), ("slo_budget", profile.slo_budget)):
            if v is not None and not v.available:
                out.append(Flag("profile", "info", f"{key}_not_available", str(v.reason)))
    return out


def _left_out(st: Any) -> bool:
    """A step the fit did not read: not a pass or fail of its own and not counted by the model (a step it read was not
    left out, whatever its flags: Vegeta's failing 5 rps step read "(excluded from the fit)" while it gave the
    bracket's failing end; round 21); in a document without statuses, an invalid step."""
    return not (st.pooled or st.status in ("pass", "fail")) if st.status is not None else st.valid is False


def _load_text(st: Any) -> str:
    """Where a step ran: "at offered load 4"; an unbounded rate (vLLM's ``inf``, null in JSON, its reason "not a
    finite number") "at an unbounded offered load"; a load the file does not give "(offered load unknown)" (a new
    user read GuideLLM's concurrent16 row as "unbounded", round 22)."""
    load = st.offered_load
    if load is not None and math.isfinite(load):
        return f"at offered load {load:g}"
    if load is not None or any("not a finite number" in str(r) for r in st.reasons or ()):
        return "at an unbounded offered load"
    return "(offered load unknown)"


def _plan_arg(plan: Any) -> tuple[CapacityPlan | None, str | None]:
    """The plan for the report: a :class:`CapacityPlan`, or a plan JSON validated once here (a renamed or
    missing key is a :class:`SchemaError` naming it, never a "—" in the report)."""
    if isinstance(plan, CapacityPlan):
        return plan, None
    doc, reason = _split(plan, "capacity plan")
    if doc is None:
        return None, reason
    return CapacityPlan.from_dict(doc, source="plan document"), None


def build_report(
    *,
    limits: LimitsResult | dict[str, Any] | Unavailable | None,
    profile: dict[str, Any] | Unavailable | None,
    plan: CapacityPlan | dict[str, Any] | Unavailable | None,
    provenance: ReportProvenance,
    previous: dict[str, Any] | Unavailable | None = None,
    findings: list[Flag] | None = None,
    name: str = "report",
    title: str = "Capacity report",
    plan_run: str | None = None,
    per_minute_series: list[dict[str, Any]] | None = None,
    twin: Any = None,
    ops: Section[OpsSection] | None = None,
    compare: CompareSection | Unavailable | None = None,
    fidelity: Section[Fidelity] | None = None,
    passive: PassiveLimit | NotAvailable | None = None,
) -> ReportModel:
    """Build the report model from the contract documents.

    Parameters
    ----------
    limits
        The :class:`LimitsResult` (or its JSON document, validated here once), or
        :class:`Unavailable` with the reason, or ``None`` when the run was not given one.
    profile, plan
        The JSON documents (dicts) of ``docs/interfaces.md`` §5-6, or :class:`Unavailable`
        with the reason, or ``None``.
    provenance
        Who made the report, from what, with which parameters.
    previous
        The previous report's ``summary.json`` (for "what changed"), if any.
    findings
        Loader/validator findings as :class:`Flag` (:func:`bearing_lib.app.pipeline.findings`).
    plan_run
        The load-test run the plan was built for (a plan covers one run); joins the
        plan's per-mix FOS to that run's rows of the limits table.
    per_minute_series
        Production requests per minute, ``[{"minute_start_s", "requests"}]`` (from the
        ``TrafficProfile`` object: the profile JSON does not carry it), for the peak chart.
    twin
        The digital twin's section (``bearing_lib.twin.section.TwinSection``), an
        :class:`Unavailable` saying why there is none, or None (not run).
    ops
        The bottleneck and operational settings section
        (:func:`bearing_lib.report.ops_section.ops_section`), or None (not built).
    compare
        The deployment comparison (:func:`bearing_lib.report.compare_section.compare_section`), an
        :class:`Unavailable` saying why there is none, or None (no deployments given).
    fidelity
        The fidelity of the test to production (:func:`bearing_lib.report.fidelity_section.fidelity_section`),
        or None (not assessed); when it differs its sentence joins the headline (``fidelity_line``).
    passive
        The passive limit of the production trace (:func:`bearing_lib.report.plan_section.passive_part`), or
        None (no trace given).
    """
    lim = LimitsResult.coerce(limits, source="limits document")  # a limits JSON validated once here
    lim_reason = None if lim is not None else _split(limits, "limits document")[1]
    prof, prof_reason = _split(profile, "production profile")
    # the profile JSON validated once here into its document, the one form the report keeps
    prof_doc = TrafficProfile.from_dict(prof, source="production profile") if prof is not None else None
    # the per-minute rows checked once here (only with a profile to show them beside)
    minutes = [_minute(r, i) for i, r in enumerate(per_minute_series or [])] if prof_doc is not None else []
    pl_, plan_reason = _plan_arg(plan)
    mixes = _mixes(lim, lim_reason, pl_, plan_run)
    curves, curves_section = _curves(lim, lim_reason)
    fos = _fos(pl_, plan_reason)
    identity = _identity(lim, pl_, prof_doc)
    headline = _headline(lim, lim_reason, pl_, plan_reason, mixes, _target_bin_s(prof_doc), plan_run)
    if fidelity is not None and fidelity.data is not None and fidelity.data.verdict == "differs":
        headline.fidelity_line = fidelity.data.sentence()
    return ReportModel(
        name=name,
        title=title,
        headline=headline,
        conditions=_conditions(lim, lim_reason),
        mixes=mixes,
        curves=curves,
        curves_section=curves_section,
        production=_production(prof_doc, prof_reason, minutes),
        fos=fos,
        plan=_plan(pl_, plan_reason, prof_doc, ops, passive),
        scorecards=_scorecards(pl_, plan_reason),
        changes=_changes(previous, mixes, fos, identity),
        flags=_flags(lim, prof_doc, findings),
        provenance=provenance,
        identity=identity,
        predicted=_predicted(twin),
        **({"ops": ops} if ops is not None else {}),
        **({"compare": Section(False, compare.reason) if isinstance(compare, Unavailable)
            else Section(True, data=compare)} if compare is not None else {}),
        **({"fidelity": fidelity} if fidelity is not None else {}),
    )


def _predicted(twin: Any) -> Section[Predicted]:
    if twin is None:
        return Section(False, "the digital twin was not run for this report (parameter twin)")
    if isinstance(twin, Unavailable):
        return Section(False, twin.reason)
    spec = None
    try:
        spec = twin.chart_spec()
    except Exception as exc:  # noqa: BLE001 - a chart the twin cannot draw is said, the section stays
        twin.notes.append(f"the validation chart could not be drawn: {exc}")
    return Section(True, data=Predicted(
        headline=twin.headline, predicted=twin.predicted, trusted=bool(twin.trusted), flags=list(twin.flags),
        validation_rows=list(twin.validation_rows), param_rows=list(twin.param_rows), notes=list(twin.notes),
        chart_spec=spec))


def make_provenance(
    *,
    parameters: dict[str, Any],
    inputs: list[dict[str, Any]],
    run_time: _dt.datetime | None = None,
) -> ReportProvenance:
    """Provenance for this run: bearing and library versions, UTC time, inputs, parameters.

    ``inputs`` are dicts with ``role``, ``path`` and ``sha256`` (use
    :func:`bearing_lib.data.provenance.sha256_of`).
    """
    import platform

    import altair
    import polars

    from bearing_lib.common.quantiles import QUANTILE_METHOD
    from bearing_lib.common.version import __version__

    t = (run_time or _dt.datetime.now(_dt.UTC)).astimezone(_dt.UTC).replace(microsecond=0)
    return ReportProvenance(
        bearing_version=__version__,
        run_time_utc=t.isoformat().replace("+00:00", "Z"),
        quantile_method=QUANTILE_METHOD,
        parameters=dict(parameters),
        inputs=list(inputs),
        environment={"python": platform.python_version(), "polars": polars.__version__, "altair": altair.__version__},
    )


__all__ = [
    "SUMMARY_SCHEMA",
    "Change",
    "ChangesSection",
    "ConditionRow",
    "ConditionsSection",
    "CurvePoint",
    "CurvesSection",
    "Flag",
    "FosRow",
    "FosSection",
    "Headline",
    "Interval",
    "IntervalMethod",
    "LimitsSection",
    "LoadCurve",
    "MinuteCount",
    "MixRow",
    "OpsSection",
    "PhaseBand",
    "PlanSection",
    "Predicted",
    "ProductionSection",
    "ReportModel",
    "ReportProvenance",
    "ReportSummary",
    "ScorecardsSection",
    "Section",
    "SourceFile",
    "Unavailable",
    "build_report",
    "constraint_label",
    "make_provenance",
    "quantile_label",
]
