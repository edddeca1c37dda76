"""``CapacityPlan``: FOS, verdict, allowable capacity, CBU, instances, elasticity, memory, scorecards.

Built from a limits JSON (``docs/interfaces.md`` §4) and a profile JSON (§5), or their
objects; the plan **is** its document: :meth:`CapacityPlan.to_dict` writes the plan JSON (§6,
schema ``bearing.plan/1``) and :meth:`CapacityPlan.from_dict` reads one back into the same
class, validated once (pydantic over these dataclasses: every problem together with its path,
unknown keys refused so a renamed key fails). Every section that the inputs cannot support is
:class:`~bearing_lib.common.schema.NotAvailable` (``{"available": false, "reason": ...}``),
never a placeholder number.

:meth:`CapacityPlan.build` runs one step per section, in order: the inputs
(:mod:`bearing_lib.plan.inputs`: the limits as a ``LimitsInput``, the profile as a
``ProfileInput``), the target and the production mix, the FOS and verdict (:mod:`.fos`), CBU,
instances (:mod:`.capacity`), safe concurrency, the elasticity replay (:mod:`.elasticity`),
how the burst buffer is held, memory (:mod:`.memory`), scorecards (:mod:`.scorecards`) and
economics (:mod:`.economics`). Its settings are one frozen :class:`PlanOptions`.
"""

from __future__ import annotations

import dataclasses
import html
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from bearing_lib.common.errors import InsufficientDataError, ParameterError, SchemaError
from bearing_lib.common.files import read_json
from bearing_lib.common.schema import NotAvailable, read_document
from bearing_lib.limits.result import LimitsResult
from bearing_lib.limits.sla import Clause
from bearing_lib.plan.capacity import (
    BurstModel,
    InstancePlan,
    SafeConcurrency,
    buffer_plan,
    curve_from_limits_steps,
    hold_buffer,
    instance_count,
    max_safe_concurrency,
)
from bearing_lib.plan.domains import FailureDomains, check_domains, failure_domains
from bearing_lib.plan.economics import PlanEconomics, apply_budget_row, plan_economics
from bearing_lib.plan.elasticity import DEFAULT_COLD_START_S, DEFAULT_COOL_DOWN_S, ReplayResult, replay
from bearing_lib.plan.fos import (
    BlendedFos,
    CbuResult,
    FosResult,
    MixFos,
    Target,
    TierBands,
    allowable_capacity,
    blend_rate_lower_bound,
    capped_closed_below,
    cbu_per_minute,
    compute_fos,
    fos_verdict,
    get_tier,
)
from bearing_lib.plan.inputs import (
    BurstFacts,
    LimitsInput,
    ProfileInput,
    ProfileTarget,
    burst_from_profile,
    enrich_steps,
    limits_document,
    limits_from_dict,
    limits_input,
    plan_burst,
    plan_target,
    profile_input,
    profile_input_from_dict,
    q_ult_of,
    seq_len_from_profile,
    series_from_profile,
    series_from_trace,
    shares_from_profile,
    spread_windows,
    target_from_profile,
    window_series_from_profile,
)
from bearing_lib.plan.interval import Interval, scaled
from bearing_lib.plan.jsonform import STRICT, section, to_json
from bearing_lib.plan.memory import (
    DEFAULT_MARGIN,
    ConcurrencyAtLimit,
    GpuNeed,
    MemoryPlan,
    ModelPreset,
    SeqLenStats,
    check_vllm_log,
    choose_model,
    concurrency_at_limit,
    get_preset,
    memory_plan,
    sequence_length_stats,
)
from bearing_lib.plan.scorecards import Scorecards, checklist, scorecard
from bearing_lib.plan.tenants import Tenants, tenant_labels, tenant_quotas
from bearing_lib.servers.kv_check import KvGauge

SCHEMA = "bearing.plan/1"
"""Version 1 adds the ``schema`` key; plan files written before it (no ``schema``) read the same."""
BREAKPOINT_RULE = "production should sit at 60–70% of the breakpoint (utilisation = Q_target / Q_ult)"
NO_SERIES = "no per-minute series (profile per_minute.series, or give the trace)"

CbuSection = section(CbuResult)
InstancesSection = section(InstancePlan)
ElasticitySection = section(ReplayResult)
MemorySection = section(MemoryPlan)
ScorecardsSection = section(Scorecards)
EconomicsSection = section(PlanEconomics)
DomainsSection = section(FailureDomains)


# --------------------------------------------------------------------------- options
@dataclass(frozen=True)
class PlanOptions:
    """The plan's settings (everything :meth:`CapacityPlan.build` takes besides its inputs).

    ``tier`` a tier name or :class:`TierBands`; ``run`` the load-test run when the limits hold
    several; ``target_rps`` replaces the profile's target (× ``growth``); ``quantile`` /
    ``growth`` derive it from the profile; ``model`` (a preset name or :class:`ModelPreset`; else the
    preset of ``served_model``, the model the analyst says the test served, else of the model the limits
    name: never a default, :func:`~bearing_lib.plan.memory.choose_model`),
    ``gpu_mem_gib``, ``gpu_count``, ``concurrency`` and ``margin`` drive the memory plan (a model that
    does not fit the GPUs makes the plan red, with no instance count);
    ``tested_instances`` overrides the instances the limits say the test drove;
    ``cold_start_s``, ``cool_down_s`` and ``latency_budget_s`` the elasticity replay;
    ``burst_multiplier`` replaces the profile's burst model and ``min_buffer`` is the least
    buffer; ``user_inputs`` the scorecard's user-supplied inputs; ``vllm_log`` (text) and
    ``tensor_parallel`` the KV check against a vLLM start-up log; ``price_per_hour`` and
    ``budget_per_month`` the economics; ``zones``, ``replicas_per_node`` and ``domains_lost`` the
    failure domains (:mod:`.domains`: the fleet that carries the target with the largest domain(s)
    down); ``tenant_column`` the trace's column naming the tenant (:mod:`.tenants`: per-tenant peaks and
    max-min fair quotas; needs the trace); ``limits_source`` / ``profile_source`` name the inputs.
    """

    tier: str | TierBands = "standard"
    run: str | None = None
    target_rps: float | None = None
    quantile: float | None = None
    growth: float | None = None
    model: str | ModelPreset | None = None
    served_model: str | None = None
    gpu_mem_gib: float | None = None
    gpu_count: int = 1
    concurrency: int | None = None
    margin: float = DEFAULT_MARGIN
    tested_instances: int | None = None
    cold_start_s: float = DEFAULT_COLD_START_S
    cool_down_s: float = DEFAULT_COOL_DOWN_S
    latency_budget_s: float | None = None
    burst_multiplier: float | None = None
    min_buffer: int = 1
    user_inputs: dict[str, Any] | None = None
    vllm_log: str | None = None
    tensor_parallel: int = 1
    price_per_hour: float | None = None
    budget_per_month: float | None = None
    zones: int | None = None
    replicas_per_node: int | None = None
    domains_lost: int = 1
    tenant_column: str | None = None
    limits_source: str = "limits JSON"
    profile_source: str = "profile JSON"

    def __post_init__(self) -> None:
        if self.tested_instances is not None and self.tested_instances < 1:
            raise ParameterError(f"tested_instances must be >= 1 (got {self.tested_instances})")
        check_domains(self.zones, self.domains_lost, self.replicas_per_node)

    @property
    def tier_bands(self) -> TierBands:
        return get_tier(self.tier) if isinstance(self.tier, str) else self.tier

    @property
    def preset(self) -> ModelPreset | None:
        return get_preset(self.model) if isinstance(self.model, str) else self.model

    @classmethod
    def of(cls, options: PlanOptions | None, changes: dict[str, Any]) -> PlanOptions:
        """``options`` (default: the defaults) with ``changes`` (keyword arguments of :meth:`CapacityPlan.build`)."""
        unknown = sorted(set(changes) - {f.name for f in dataclasses.fields(cls)})
        if unknown:
            raise ParameterError(f"unknown plan option(s) {', '.join(unknown)}; expected the fields of PlanOptions")
        return dataclasses.replace(options or cls(), **changes)


# --------------------------------------------------------------------------- the steps' working state
@dataclass
class _Inputs:
    """The typed inputs of one build, and the notes the steps add in order."""

    lim: LimitsInput
    prof: ProfileInput
    limits: LimitsResult
    from_json: bool
    notes: list[str]
    main_mix: str | None = None
    sla_latency: Clause | None = None
    series: tuple[list[float], list[str]] | None = None


def _read_inputs(limits: Any, profile: Any, opt: PlanOptions) -> _Inputs:
    """The JSON edges: each document validated once, then typed from here on."""
    if isinstance(profile, dict):
        prof = profile_input_from_dict(profile, source=opt.profile_source)
    elif isinstance(profile, ProfileInput):
        prof = profile
    else:
        prof = profile_input(profile, source=opt.profile_source)
    if isinstance(limits, dict):
        limits = limits_document(limits, source=opt.limits_source)
    if not isinstance(limits, LimitsResult):
        raise ParameterError(f"limits: expected a LimitsResult (fit_limits) or a limits JSON document, "
                             f"got {type(limits).__name__}")
    lim = limits_input(limits, source=opt.limits_source, run=opt.run)
    curve = limits.__dict__.get("_curve")
    if curve is not None:
        enrich_steps(lim, curve, opt.run)
    if opt.tested_instances is not None:
        lim.tested_instances = opt.tested_instances
        lim.tested_instances_basis = "given (--tested-instances, or the parameter tested_instances)"
    notes = [f"{m}: {why}" for m, why in lim.skipped.items()] + list(lim.notes)
    # where the series note goes among the notes: after the mix-share note for a profile (a TrafficProfile or its
    # JSON), first for a ProfileInput given as such
    from_json = not isinstance(profile, ProfileInput)
    if prof.series_note and not from_json:
        notes.append(prof.series_note)
    if not lim.limits:
        raise InsufficientDataError(f"{opt.limits_source}: no mix has a usable limit ({'; '.join(notes) or 'empty'})")
    return _Inputs(lim, prof, limits, from_json, notes)


def _target(prof: ProfileInput, opt: PlanOptions) -> Target:
    if opt.target_rps is not None:
        g = opt.growth if opt.growth is not None else 1.0
        return Target(opt.target_rps * g, None, None, g, f"given: {opt.target_rps:g} req/s × growth {g:g}")
    return plan_target(prof, quantile=opt.quantile, growth=opt.growth)


def _shares(io: _Inputs, opt: PlanOptions) -> dict[str, float]:
    """The production mix weights; one limit without shares covers all traffic (and the notes say so)."""
    shares = dict(io.prof.shares)
    if shares:
        return shares
    why, lim = io.prof.shares_reason, io.lim
    if len(lim.limits) > 1:
        raise SchemaError("the profile has no mix_shares" + (f" ({why})" if why else "")
                          + ", so the per-mix limits cannot be blended", path=opt.profile_source, field="mix_shares")
    io.notes.append(f"the profile has no mix shares{f' ({why})' if why else ''}: the one limit "
                    f"({lim.limits[0].mix}) is taken to cover all production traffic")
    return {lim.limits[0].mix: 1.0}


def _cbu(io: _Inputs, fos: FosResult, allowable: float | None, allowable_statement: str,
         trace: Any) -> CbuResult | NotAvailable:
    prof = io.prof
    series = (prof.series, prof.series_labels) if prof.series is not None and prof.series_labels else None
    if series is not None and prof.series_note and io.from_json:
        io.notes.append(prof.series_note)
    if series is None and trace is not None:
        series = series_from_trace(trace)
    io.series = series
    if allowable is None:
        return NotAvailable(allowable_statement)
    if series is None:
        return NotAvailable(NO_SERIES)
    counts, labels = series
    cbu = cbu_per_minute(counts, allowable, minute_labels=labels)
    b = fos.blended.bound
    if b != "none":
        io.notes.append(f"CBU uses {'an' if b == 'upper' else 'a'} {b} bound on the limit")
    return cbu


def _instances(io: _Inputs, fos: FosResult, tier: TierBands, target: Target,
               opt: PlanOptions) -> InstancePlan | NotAvailable:
    if opt.burst_multiplier is not None:
        burst: BurstModel | None = BurstModel(opt.burst_multiplier,
                                              source=f"given: {opt.burst_multiplier:g}× the target")
    else:
        burst = plan_burst(io.prof, target.rps, target.growth)
    q_blend = fos.blended.q_blend_rps
    if q_blend is None:
        return NotAvailable("the blended limit is not bounded")
    n = io.lim.tested_instances
    inst = instance_count(target.rps, q_blend / n, tier.target_fos, burst=burst, min_buffer=opt.min_buffer,
                          ci95=scaled(fos.blended.q_blend_ci95, 1 / n), open_reason=fos.blended.open_reason)
    inst.tested_instances = io.lim.tested_instances
    inst.tested_instances_basis = io.lim.tested_instances_basis
    if fos.blended.bound == "lower":
        io.notes.append("instance count from a lower bound on the limit: an upper bound on instances needed")
    elif fos.blended.bound == "upper":
        io.notes.append("instance count from an upper bound on the limit: a lower bound on instances needed")
    return inst


def _domains(instances: InstancePlan | NotAvailable, target: Target, tier: TierBands,
             opt: PlanOptions) -> FailureDomains | NotAvailable:
    """The fleet that carries the target at the design FOS with the largest domain(s) lost (:mod:`.domains`)."""
    if opt.zones is None:
        return NotAvailable("no failure domains given (bearing plan --zones N [--replicas-per-node K] "
                            "[--domains-lost 1|2])")
    if not isinstance(instances, InstancePlan):
        return NotAvailable(f"no instance plan: {instances.reason}")
    return failure_domains(instances.base, instances.per_instance_allowable_rps, target.rps, tier.target_fos,
                           zones=opt.zones, domains_lost=opt.domains_lost, replicas_per_node=opt.replicas_per_node,
                           buffer=instances.buffer)


def _tenants(instances: InstancePlan | NotAvailable, domains: FailureDomains | NotAvailable, trace: Any,
             opt: PlanOptions) -> Tenants | None:
    """Per-tenant peaks and quotas of the fleet's allowable capacity (:mod:`.tenants`), with ``tenant_column``."""
    if opt.tenant_column is None:
        return None
    if trace is None:
        raise ParameterError("--tenant-column needs the production trace (--trace)")
    if not isinstance(instances, InstancePlan):
        raise InsufficientDataError(f"tenant quotas need the instance plan: {instances.reason}")
    a = instances.per_instance_allowable_rps
    if isinstance(domains, FailureDomains):
        n, basis = domains.total, f"failure_domains.total {domains.total} × {a:.4g} req/s allowable per instance"
    else:
        n, basis = instances.total, f"instances.total {instances.total} × {a:.4g} req/s allowable per instance"
    labels = tenant_labels(trace, opt.tenant_column)
    return tenant_quotas(trace.frame["start_s"].to_list(), labels, n * a, column=opt.tenant_column,
                         capacity_basis=basis)


def _safe_concurrency(io: _Inputs, fos: FosResult) -> SafeConcurrency | None:
    """The max safe concurrency of the heaviest mix's latency–concurrency curve (None: no latency clause)."""
    io.main_mix = max(fos.per_mix, key=lambda m: m.share).mix if fos.per_mix else None
    io.sla_latency = next((c for c in io.lim.sla if c.kind == "percentile" and str(c.metric).endswith("_ms")
                           and c.op in ("<", "<=") and c.threshold is not None), None)
    sla = io.sla_latency
    points = (curve_from_limits_steps(io.lim.steps.get(io.main_mix or "", []), metric=str(sla.metric),
                                      stat=str(sla.stat), clauses=io.lim.sla, latency_text=sla.text) if sla else [])
    if not (sla and points):
        return None
    try:
        return max_safe_concurrency(points, float(sla.threshold), stat=str(sla.stat).upper())  # type: ignore[arg-type]
    except InsufficientDataError as exc:
        io.notes.append(f"safe concurrency: {exc}")
        return None


def _elasticity(io: _Inputs, fos: FosResult, target: Target, opt: PlanOptions) -> ReplayResult | NotAvailable:
    q_blend = fos.blended.q_blend_rps
    if q_blend is None:
        return NotAvailable("the blended limit is not bounded")
    if io.series is None:
        return NotAvailable(NO_SERIES)
    counts = [c * target.growth for c in io.series[0]]
    return replay(counts, q_blend / io.lim.tested_instances, cold_start_s=opt.cold_start_s,
                  cool_down_s=opt.cool_down_s, latency_budget_s=opt.latency_budget_s)


def _seq_len(io: _Inputs, trace: Any) -> tuple[SeqLenStats | None, str]:
    """The sequence-length distribution: the profile's, else the trace's; else why there is none."""
    seq, why = io.prof.seq_len, ""
    if seq is None and io.prof.seq_len_reason is not None:
        why = f"the profile has no sequence-length distribution: {io.prof.seq_len_reason}"
    if seq is None and trace is not None:
        why = ""
        try:
            seq = sequence_length_stats(trace.frame, source=str(trace.provenance.source))
        except InsufficientDataError as exc:
            why = str(exc)
    return seq, why


def _planning_concurrency(io: _Inputs, safe: SafeConcurrency | None,
                          opt: PlanOptions) -> tuple[int | None, str, ConcurrencyAtLimit | None]:
    """Sequences per instance for the memory plan, why, and the concurrency at Q_ult.

    Without a given concurrency: the mean concurrency at Q_ult (the load the limit is measured at;
    rounded up, memory is sized for it), else the max safe concurrency of the latency–concurrency
    curve (the last step meeting the latency clause; rounded down).
    """
    n = io.lim.tested_instances
    at, at_why = None, ""
    if io.main_mix is not None:
        try:
            at = concurrency_at_limit(io.lim.steps, io.main_mix, q_ult_of(io.limits, io.main_mix, opt.run))
        except InsufficientDataError as exc:
            at_why = str(exc)
    per = f" / {n} tested instances" if n != 1 else ""
    conc = opt.concurrency
    basis = "given" if conc is not None else ""
    if at is not None:
        at.per_instance = at.value / n
        at.used = conc is None
        at.tested_instances = n
        if at.used:
            conc = max(1, math.ceil(at.per_instance))
            basis = (f"derived from the load test's mean in flight at Q_ult: {at.statement}{per}, "
                     f"rounded up to {conc} sequences per instance")
    if conc is None and safe is not None and safe.value is not None:
        conc = int(math.floor(safe.value / n))
        sla = io.sla_latency
        clause = f"{sla.stat}({sla.metric})" if sla else "the latency clause"
        basis = (f"derived from the load test (Little's law): max safe concurrency "
                 f"{safe.value:.4g}, the highest step mean concurrency whose {clause} and every other clause "
                 f"meet the SLA (the last passing step of the latency–concurrency curve){per}, rounded down "
                 f"to {conc} per instance" + (f"; no concurrency at Q_ult: {at_why}" if at_why else ""))
    elif conc is None and at_why:
        basis = f"concurrency unknown: {at_why}; only what fits is computed (give --concurrency)"
    return conc, basis, at


def _memory(io: _Inputs, safe: SafeConcurrency | None, opt: PlanOptions, trace: Any) -> MemoryPlan | NotAvailable:
    seq, why = _seq_len(io, trace)
    conc, basis, at = _planning_concurrency(io, safe, opt)
    choice = choose_model(preset=opt.model, model=opt.served_model, tested=io.limits.conditions.model)
    mem: MemoryPlan | NotAvailable
    if choice.preset is None:
        mem = NotAvailable(choice.basis)
    elif seq is None:
        mem = NotAvailable(why or "no sequence-length distribution (profile seq_len, or the trace)")
    else:
        mem = _memory_plan(dataclasses.replace(opt, model=choice.preset), seq, conc, basis, at)
        mem.model_basis = choice.basis
    if opt.vllm_log is not None:  # checked (and its errors raised) whether or not there is a memory plan to show it
        if choice.preset is None:
            raise ParameterError(f"a vLLM log check needs the model's architecture: {choice.basis}")
        check = check_vllm_log(choice.preset, opt.vllm_log, tensor_parallel=opt.tensor_parallel)
        if isinstance(mem, MemoryPlan):
            mem.vllm_log_check = check
    return mem


def _memory_plan(opt: PlanOptions, seq: SeqLenStats, conc: int | None, basis: str,
                 at: ConcurrencyAtLimit | None) -> MemoryPlan:
    mem = memory_plan(opt.preset, conc, seq, gpu_mem_gib=opt.gpu_mem_gib, gpu_count=opt.gpu_count,  # type: ignore[arg-type]
                      margin=opt.margin)
    mem.concurrency_basis = basis or "concurrency unknown: only what fits is computed (give --concurrency)"
    mem.planning_concurrency = at
    p99 = mem.row("p99")
    if opt.gpu_mem_gib is None and conc is not None and p99 is not None and p99.total_gib is not None:
        mem.gpu_memory_needed = GpuNeed(
            p99.total_gib, "p99", conc, f"no GPU memory given: the plan needs ≥ {p99.total_gib:,.1f} GiB per instance "
                                        f"at the P99 sequence length and {conc} sequences in flight")
    return mem


def _scorecards(io: _Inputs, fos: FosResult, target: Target, memory: MemoryPlan | NotAvailable,
                opt: PlanOptions) -> Scorecards:
    headroom, why = None, memory.reason if isinstance(memory, NotAvailable) else ""
    if isinstance(memory, MemoryPlan):
        p99 = memory.row("p99")
        if opt.gpu_mem_gib is None:
            why = "no GPU memory size given (--gpu-mem-gib)"
            if memory.concurrency is not None and p99 is not None and p99.total_gib is not None:
                why += f"; the plan needs ≥ {p99.total_gib:,.1f} GiB per instance at the P99 sequence length"
        elif memory.concurrency is None:
            why = "concurrency unknown (give --concurrency or a concurrency-swept limits file)"
        else:
            headroom = p99.headroom if p99 is not None else None
    user = opt.user_inputs or {}
    b = fos.blended
    return Scorecards(
        scorecard(headroom=headroom, headroom_missing=why, peak_known=io.prof.peak_known or opt.target_rps is not None,
                  mean_known=io.prof.mean_known, fos_value=b.value, fos_bound=b.bound, user=user,
                  fos_lo=b.ci95[0] if b.ci95 is not None and capped_closed_below(b) else None,
                  blended=fos.blends_several),
        checklist(steps=io.lim.steps.get(io.main_mix or "", []), sla=io.lim.sla, target_rps=target.rps,
                  user=user.get("health")),
    )


# --------------------------------------------------------------------------- the plan
def floor_reason(floors: list[str], one_load: bool, reason: str) -> str:
    """The verdict's reason where failure floors break the SLA (``LimitsInput.floors``): a failure that does not
    grow with load breaks it at every load, whatever the instance count; one seen at a single quiet load breaks it
    there, and whether more instances would help is not tested. The instances are sized on the other clauses."""
    head = ("the SLA fails at every tested load, and with one quiet load the test cannot show whether more "
            "instances would help: " if one_load else "the SLA fails at every load, whatever the instance count: ")
    return head + "; ".join(floors) + f". Sized on the other clauses: {reason}"


@dataclass
class CapacityPlan:
    """The capacity plan, and its JSON document (§6): ``verdict`` is the badge colour, ``notes`` what the
    plan assumed; a section the inputs could not support is :class:`NotAvailable` with the reason."""

    __pydantic_config__ = STRICT
    _OMIT_NONE = ("tenants", "allowable_open_reason")
    tier: TierBands
    target: Target
    fos: FosResult
    verdict: Literal["green", "yellow", "red"]
    verdict_reason: str
    allowable_rps: float | None
    allowable_statement: str
    cbu: CbuSection
    instances: InstancesSection
    elasticity: ElasticitySection
    memory: MemorySection
    scorecards: ScorecardsSection
    notes: list[str]
    economics: EconomicsSection | None = None
    failure_domains: DomainsSection | None = None
    tenants: Tenants | None = None
    allowable_ci95: Interval | None = None
    """The allowable capacity's 95 % CI (the blended limit's over the design FOS; an end open where the limit's is)."""
    allowable_open_reason: str | None = None
    utilisation: float | None = None
    breakpoint_rule: str | None = None
    sources: dict[str, str] = field(default_factory=dict)
    bearing_version: str | None = None
    failure_floors: list[str] = field(default_factory=list)
    """Per mix, the statement of a load-independent failure floor that breaks an SLA clause at every load
    (``LimitsInput.floors``): the plan is red for it, and every number below is the other clauses' (the exports say
    so). Empty in plans written before round 21."""
    failure_floors_one_load: bool = False
    """Every floor in ``failure_floors`` was seen at one load only (``LimitsInput.floors_one_load``): the test cannot
    show whether more instances would help, so the exports do not claim either way. False in older plans."""
    schema: str = SCHEMA

    # ----------------------------------------------------------------- build
    @classmethod
    def build(
        cls,
        limits: dict[str, Any] | LimitsResult,
        profile: dict[str, Any] | ProfileInput | Any,
        options: PlanOptions | None = None,
        *,
        trace: Any = None,
        kv_gauge: KvGauge | None = None,
        **changes: Any,
    ) -> CapacityPlan:
        """Assemble the plan, one step per section (module docstring).

        ``limits`` is a limits JSON dict or a ``LimitsResult`` (whose load curve then adds
        P50/P95 latencies and mean concurrency to the steps); ``profile`` a profile JSON
        dict, a ``TrafficProfile`` (``profile_traffic``; its rate series feeds CBU and the replay) or a
        :class:`ProfileInput`. ``options`` the settings (:class:`PlanOptions`); any of its fields
        may also be given as a keyword (``tier="critical"``), which replaces the one in ``options``.
        ``trace`` (a RequestTrace) supplies the per-minute series and sequence lengths when the
        profile does not; ``kv_gauge`` what the engine reported about its KV cache
        (``bearing_lib.servers.kv_check.kv_gauge`` of server metrics) for the KV check.
        """
        opt = PlanOptions.of(options, changes)
        tier = opt.tier_bands
        io = _read_inputs(limits, profile, opt)
        target = _target(io.prof, opt)
        fos = compute_fos(io.lim.limits, _shares(io, opt), target, own_peaks=io.prof.own_peaks,
                          other_clauses=io.lim.floor_mixes)
        verdict = fos_verdict(fos, tier, target, other_clauses=bool(io.lim.floors),
                              rate_lower_bound=blend_rate_lower_bound(fos, io.lim.limits))
        allow = allowable_capacity(fos.blended.q_blend_rps, tier.target_fos, fos.blended.bound,
                                   ci95=fos.blended.q_blend_ci95, open_reason=fos.blended.open_reason)
        allowable = allow.rps
        cbu = _cbu(io, fos, allowable, allow.statement, trace)
        instances = _instances(io, fos, tier, target, opt)
        safe = _safe_concurrency(io, fos)
        memory = _memory(io, safe, opt, trace)
        no_fit = memory.does_not_fit() if isinstance(memory, MemoryPlan) else None
        if no_fit:  # no instance count carries a model that does not fit: the plan is red for that reason
            instances = NotAvailable(f"the model does not fit the GPU memory: {no_fit}")
        elasticity = _elasticity(io, fos, target, opt)
        if isinstance(instances, InstancePlan):
            why = elasticity.reason if isinstance(elasticity, NotAvailable) else ""
            hold_buffer(instances, buffer_plan(instances, elasticity if isinstance(elasticity, ReplayResult)
                                               else None, why))
            instances.safe_concurrency = safe
        domains = _domains(instances, target, tier, opt)
        tenants = _tenants(instances, domains, trace, opt)
        cards = _scorecards(io, fos, target, memory, opt)
        economics = plan_economics(fos, tier, target.rps, allowable, instances, io.prof, quantile=target.quantile,
                                   trace=trace, price_per_hour=opt.price_per_hour,
                                   budget_per_month=opt.budget_per_month, kv_gauge=kv_gauge,
                                   domains=domains if isinstance(domains, FailureDomains) else None,
                                   current_peak=target)
        apply_budget_row(cards.scorecard, economics.money)
        from bearing_lib.common.version import __version__

        color, reason = verdict.color, verdict.reason
        if verdict.over_provisioned and isinstance(instances, InstancePlan) and instances.base <= 1:
            # over-provisioned with one instance planned: no instance can be taken away (a new user read "over-
            # provisioned" beside "1 instance + 1 buffer", round 21)
            # "one instance" is the base: a new user read "needs one instance only" beside "2 (1 + 1 buffer)" (round 22)
            reason += ("; the plan's base is one instance (its buffer aside): fewer cannot be deployed, and only a "
                       "smaller instance (fewer GPUs, a cheaper accelerator) would bring the margin into the band")
        if io.lim.floors:
            color, reason = "red", floor_reason(io.lim.floors, io.lim.floors_one_load, reason)
        if no_fit:
            color, reason = "red", f"the model does not fit the GPU memory: {no_fit}. Besides: {reason}"
        return cls(tier=tier, target=target, fos=fos, verdict=color, verdict_reason=reason,
                   allowable_rps=allowable, allowable_statement=allow.statement, allowable_ci95=allow.ci95,
                   allowable_open_reason=allow.open_reason, cbu=cbu, instances=instances,
                   elasticity=elasticity, memory=memory, scorecards=cards, notes=io.notes, economics=economics,
                   failure_domains=domains, tenants=tenants,
                   utilisation=verdict.utilisation, breakpoint_rule=BREAKPOINT_RULE,
                   sources={"limits": opt.limits_source, "profile": opt.profile_source}, bearing_version=__version__,
                   failure_floors=list(io.lim.floors),
                   failure_floors_one_load=bool(io.lim.floors) and io.lim.floors_one_load)

    @classmethod
    def from_files(cls, limits_path: str | Path, profile_path: str | Path, options: PlanOptions | None = None,
                   **changes: Any) -> CapacityPlan:
        """:meth:`build` of a limits JSON file and a profile JSON file (named as the sources)."""
        kw = {k: changes.pop(k) for k in ("trace", "kv_gauge") if k in changes}
        opt = PlanOptions.of(options, {**changes, "limits_source": str(limits_path),
                                       "profile_source": str(profile_path)})
        return cls.build(read_json(limits_path, "limits"), read_json(profile_path, "profile"), opt, **kw)

    # ----------------------------------------------------------------- the JSON edge
    def to_dict(self) -> dict[str, Any]:
        """The plan JSON (``docs/interfaces.md`` §6), keys in the documented order."""
        d = to_json(self)
        head = ("schema", "bearing_version", "sources", "tier", "target", "fos", "verdict", "verdict_reason",
                "utilisation", "breakpoint_rule", "allowable_rps", "allowable_ci95", "allowable_open_reason",
                "allowable_statement")
        notes = d.pop("notes")
        return {**{k: d.pop(k) for k in head if k in d}, **d, "notes": notes}

    @classmethod
    def from_dict(cls, doc: Any, *, source: str = "plan JSON") -> CapacityPlan:
        """Validate a plan JSON document once: one :class:`SchemaError` listing every problem with its
        path (missing, renamed or mistyped keys); a document of another kind is refused as such; the
        input is not modified. Files without ``schema`` (written before it) read the same."""
        return read_document(cls, doc, source=source, kind="plan", schema=SCHEMA, keys=_REQUIRED,
                             writer="bearing plan --limits L --profile P --json OUT",
                             prepare=lambda d: {**_renamed_keys(d), "schema": SCHEMA})

    # ----------------------------------------------------------------- reading
    @property
    def blended(self) -> BlendedFos:
        return self.fos.blended

    @property
    def per_mix(self) -> list[MixFos]:
        return self.fos.per_mix

    def summary_lines(self) -> list[str]:
        """A short text summary (the CLI prints it)."""
        b = self.fos.blended
        t = self.target
        lines = [
            f"tier:        {self.tier.name} (FOS {self.tier.band}, design FOS {self.tier.target_fos:g})",
            f"target:      {t.rps:,.3f} req/s ({t.rps * 60:,.1f} req/min) — {t.basis}",
            f"blended:     Q_ult {b.q_blend_rps if b.q_blend_rps is None else format(b.q_blend_rps, ',.3f')} req/s; "
            f"{b.statement}",
            f"verdict:     {self.verdict.upper()}: {self.verdict_reason}",
            f"allowable:   {self.allowable_statement}",
        ]
        for m in self.fos.per_mix:
            lines.append(f"  mix {m.mix}: share {m.share:.1%}, Q_ult {m.q_ult_rps:,.3f} req/s, {m.fos.statement}")
            if m.own_peak is not None:
                lines.append(f"    against its own peak: {m.own_peak.statement}")
        c = self.cbu
        lines.append(f"CBU:         max {c.max:.2f}; {c.n_above} of {c.n_minutes} minutes above {c.threshold:g}"
                     if isinstance(c, CbuResult) else f"CBU:         not available: {c.reason}")
        i = self.instances
        if isinstance(i, InstancePlan):
            lines.append(f"instances:   {i.total} = {i.base} + buffer {i.buffer} ({i.buffer_basis})")
            if i.total_ci95 is not None:
                lines.append(f"             over the limit's CI: {i.range_text()}")
            if i.buffer_plan is not None:
                bp = i.buffer_plan
                lines.append(f"buffer:      {bp.mode}, {bp.instances} instance(s): {bp.reason}")
        else:
            lines.append(f"instances:   not available: {i.reason}")
        d = self.failure_domains
        if isinstance(d, FailureDomains):
            lines.append(f"domains:     {d.statement}")
        if self.tenants is not None:
            lines.append(f"tenants:     {self.tenants.statement}")
            for r in self.tenants.tenants:
                lines.append(f"  tenant {r.tenant}: peak {r.peak_rps:,.4g} req/s ({r.share_of_capacity:.1%} of the "
                             f"allowable), quota {r.quota_rps:,.4g} req/s" + (" (capped)" if r.capped else ""))
        e = self.elasticity
        lines.append(f"elasticity:  {e.recommendation}: {e.reason}" if isinstance(e, ReplayResult)
                     else f"elasticity:  not available: {e.reason}")
        lines += _memory_lines(self.memory)
        for n in self.notes:
            lines.append(f"note:        {n}")
        return lines

    def _repr_html_(self) -> str:
        """Notebook view: verdict, key numbers, per-mix FOS, then each section (or why it is missing)."""
        colors = {"green": "#1a7f37", "yellow": "#9a6700", "red": "#cf222e"}
        e = html.escape
        parts = [
            f"<p><b style='color:{colors[self.verdict]}'>{self.verdict.upper()}</b> · tier {e(self.tier.name)} "
            f"(FOS {e(self.tier.band)}) · target {self.target.rps:,.2f} req/s · {e(self.verdict_reason)}</p>",
            self.fos._repr_html_(),
        ]
        for title, obj in (("CBU", self.cbu), ("Elasticity", self.elasticity), ("Memory", self.memory),
                           ("Scorecards", self.scorecards)):
            if isinstance(obj, NotAvailable):
                parts.append(f"<p><b>{title}</b>: <i>not available: {e(obj.reason)}</i></p>")
            elif isinstance(obj, CbuResult):
                parts.append(f"<p><b>{title}</b>: max {obj.max:.2f}; {obj.n_above} of {obj.n_minutes} minutes "
                             f"above {obj.threshold:g}</p>")
            else:
                parts.append(obj._repr_html_())
        if isinstance(self.instances, InstancePlan):
            parts.append(f"<p><b>Instances</b> {self.instances.total} = {self.instances.base} + buffer "
                         f"{self.instances.buffer}: {e(self.instances.buffer_basis)}</p>")
        if self.notes:
            parts.append("<ul>" + "".join(f"<li>{e(n)}</li>" for n in self.notes) + "</ul>")
        return "".join(parts)


def _renamed_keys(doc: dict[str, Any]) -> dict[str, Any]:
    """A plan JSON with the keys renamed since it was written read under their new names (a copy; the
    input is not modified): ``instances.safe_concurrency.sla_p99_ms`` (it held whatever statistic the
    SLA named) is ``sla_threshold_ms``, with ``sla_stat`` read from its statement."""
    inst = doc.get("instances")
    sc = inst.get("safe_concurrency") if isinstance(inst, dict) else None
    if not (isinstance(sc, dict) and "sla_p99_ms" in sc and "sla_threshold_ms" not in sc):
        return doc
    import re

    new = {("sla_threshold_ms" if k == "sla_p99_ms" else k): v for k, v in sc.items()}
    m = re.search(r"\((P\d+(?:\.\d+)?|MEAN|MAX|MEDIAN) ", str(sc.get("statement") or ""))
    new.setdefault("sla_stat", m.group(1) if m else "P99")
    return {**doc, "instances": {**inst, "safe_concurrency": new}}


_REQUIRED = tuple(f.name for f in dataclasses.fields(CapacityPlan)
                  if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)


def _memory_lines(m: MemoryPlan | NotAvailable) -> list[str]:
    if isinstance(m, NotAvailable):
        return [f"memory:      not available: {m.reason}"]
    r = m.row("p99")
    if r is None:
        return [f"memory:      {m.model.name}: no P99 row"]
    fits = (f"max concurrency that fits {r.max_concurrency_that_fits} (seed MHA formula: "
            f"{r.seed_mha_max_concurrency_that_fits})" if r.max_concurrency_that_fits is not None
            else "no GPU size given")
    if m.concurrency is None or r.total_gib is None or r.seed_mha_total_gib is None:
        out = [f"memory:      {m.model.name} at P99 seq {r.seq_len:,.0f} tok: {fits}; need not computed: "
               f"{m.concurrency_basis}"]
    else:
        out = [f"memory:      {m.model.name} at P99 seq {r.seq_len:,.0f} tok, concurrency {m.concurrency}: "
               f"{r.total_gib:,.1f} GiB (seed MHA formula: {r.seed_mha_total_gib:,.1f} GiB); {fits}"]
    if m.vllm_log_check is not None:
        out.append(f"vLLM log:    {m.vllm_log_check.statement}")
    return out


def schema_document() -> dict[str, Any]:
    """The JSON Schema of the plan JSON (``bearing schema plan``)."""
    from bearing_lib.common.schema import json_schema

    return json_schema(CapacityPlan, title="bearing capacity plan JSON", schema_id=SCHEMA)


__all__ = [
    "SCHEMA",
    "BurstFacts",
    "CapacityPlan",
    "ConcurrencyAtLimit",
    "LimitsInput",
    "PlanOptions",
    "ProfileInput",
    "ProfileTarget",
    "burst_from_profile",
    "concurrency_at_limit",
    "floor_reason",
    "limits_from_dict",
    "limits_input",
    "plan_burst",
    "plan_target",
    "profile_input",
    "profile_input_from_dict",
    "read_json",
    "schema_document",
    "seq_len_from_profile",
    "series_from_profile",
    "shares_from_profile",
    "spread_windows",
    "target_from_profile",
    "window_series_from_profile",
]
