"""The plan JSON as a typed document: :class:`PlanDocument`, validated once at the edge.

``docs/interfaces.md`` §6, schema ``bearing.plan/1``. :meth:`CapacityPlan.to_dict
<bearing_lib.plan.capacity_plan.CapacityPlan.to_dict>` writes the document;
:meth:`PlanDocument.from_dict` reads one back (pydantic v2 over these stdlib dataclasses,
every problem of the document reported together with its path, unknown keys refused so a
renamed key fails instead of reading as missing) and :meth:`PlanDocument.to_dict` writes
it again unchanged. Readers downstream of the plan (the report model and its views,
``bearing_lib.ops.exports``) read these attributes, never the JSON.

A section the inputs could not support is :class:`~bearing_lib.common.schema.NotAvailable`
(``{"available": false, "reason": ...}``) in place of its dataclass. The FOS values carry
:class:`~bearing_lib.common.estimate.Estimate` views (:attr:`FosValue.estimate`,
:attr:`MixFosDoc.q_ult`). Typed loosely on purpose: a scorecard row's ``value`` (a number,
a text or nothing) and the elasticity ``settings``' optional entries.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Discriminator, Tag

from bearing_lib.common.errors import SchemaError
from bearing_lib.common.estimate import Estimate
from bearing_lib.common.files import jsonable
from bearing_lib.common.schema import NotAvailable, parse

SCHEMA = "bearing.plan/1"
"""Version 1 adds the ``schema`` key; plan files written before it (no ``schema``) read the same."""

_STRICT = ConfigDict(extra="forbid")
Interval = list[float | None]
"""A 95 % CI ``[lo, hi]`` as written in the JSON."""


def _gap(v: Any) -> str:
    return "~unavailable" if (isinstance(v, dict) and v.get("available") is False) or isinstance(v, NotAvailable) \
        else "~available"


# --------------------------------------------------------------------------- tier, target, FOS
@dataclass
class TierDoc:
    __pydantic_config__ = _STRICT
    name: str
    fos_min: float
    fos_max: float | None
    design_fos: float | None
    target_fos: float
    band: str


@dataclass
class TargetDoc:
    """The planned load: ``rps`` (and ``per_minute`` = rps × 60) with its 95 % CI, quantile and growth."""

    __pydantic_config__ = _STRICT
    rps: float
    per_minute: float
    ci95: Interval | None
    quantile: float | None
    growth: float
    basis: str

    @property
    def estimate(self) -> Estimate:
        ci = (self.ci95[0], self.ci95[1]) if self.ci95 and len(self.ci95) == 2 else None
        return Estimate(self.rps, ci95=ci, unit="req/s", basis="achieved")


def _ci_tuple(ci: Interval | None) -> tuple[float | None, float | None] | None:
    if not ci or len(ci) != 2 or (ci[0] is None and ci[1] is None):
        return None
    return ci[0], ci[1]


@dataclass
class FosValue:
    """A factor of safety (or a bound on it) with its 95 % CI and the sentence that says which."""

    __pydantic_config__ = _STRICT
    value: float | None
    ci95: Interval | None
    bound: Literal["none", "lower", "upper", "unbounded"]
    statement: str

    @property
    def estimate(self) -> Estimate | None:
        """The FOS as an :class:`Estimate` (basis ``ratio``); None when there is no value."""
        if self.value is None:
            return None
        return Estimate(self.value, ci95=_ci_tuple(self.ci95), bound=self.bound, basis="ratio")


@dataclass
class MixFosDoc:
    """One mix: its limit in completed req/s (achieved basis), share, FOS and utilisation."""

    __pydantic_config__ = _STRICT
    mix: str
    share: float
    q_ult_rps: float
    q_ult_ci95: Interval | None
    censored: Literal["none", "above", "below", "not_monotone"]
    fos: FosValue
    utilisation: float | None

    @property
    def q_ult(self) -> Estimate:
        bound = {"above": "lower", "below": "upper"}.get(self.censored, "none")
        return Estimate(self.q_ult_rps, ci95=_ci_tuple(self.q_ult_ci95), bound=bound,  # type: ignore[arg-type]
                        unit="req/s", basis="achieved")


@dataclass
class BlendedFosDoc(FosValue):
    """The share-weighted (harmonic) blend of the per-mix limits and its FOS."""

    __pydantic_config__ = _STRICT
    q_blend_rps: float | None = None
    q_blend_ci95: Interval | None = None
    weights: dict[str, float] = field(default_factory=dict)
    coverage: float | None = None
    uncovered: dict[str, float] = field(default_factory=dict)


@dataclass
class FosDoc:
    __pydantic_config__ = _STRICT
    per_mix: list[MixFosDoc]
    blended: BlendedFosDoc
    ci_method: str | None = None


# --------------------------------------------------------------------------- CBU
@dataclass
class MinuteAboveDoc:
    __pydantic_config__ = _STRICT
    minute: str
    index: int
    requests: float
    cbu: float


@dataclass
class CbuDoc:
    """Carrying-capacity utilisation per minute: the minutes above ``threshold`` (listed up to 200)."""

    __pydantic_config__ = _STRICT
    definition: str
    allowable_rps: float
    threshold: float
    n_minutes: int
    max: float | None
    p95: float | None
    n_above: int
    n_above_1: int
    minutes_above: list[MinuteAboveDoc]
    minutes_above_truncated: bool


# --------------------------------------------------------------------------- instances
@dataclass
class BurstDoc:
    __pydantic_config__ = _STRICT
    multiplier: float
    per_month: float | None = None
    duration_min: float | None = None
    source: str = ""


@dataclass
class BufferPlanDoc:
    __pydantic_config__ = _STRICT
    mode: Literal["elastic", "fixed"]
    instances: int
    reason: str


@dataclass
class SafeConcurrencyDoc:
    __pydantic_config__ = _STRICT
    value: float | None
    throughput_rps: float | None
    throughput_basis: str
    sla_p99_ms: float
    contiguous_value: float | None
    statement: str


@dataclass
class InstancesDoc:
    """``total = base + buffer`` instances at ``per_instance_allowable_rps`` each, with the reasoning."""

    __pydantic_config__ = _STRICT
    target_rps: float
    per_instance_q_ult_rps: float
    target_fos: float
    per_instance_allowable_rps: float
    base: int
    buffer: int
    total: int
    buffer_basis: str
    burst: BurstDoc | None
    reason: str
    tested_instances: int = 1
    tested_instances_basis: str = ""
    buffer_plan: BufferPlanDoc | None = None
    safe_concurrency: SafeConcurrencyDoc | None = None


# --------------------------------------------------------------------------- elasticity
@dataclass
class ScalingEventDoc:
    __pydantic_config__ = _STRICT
    after_minute: int
    action: str
    count: int
    instances_after: int
    reason: str
    ready_from_minute: int | None = None


@dataclass
class ReplaySettingsDoc:
    __pydantic_config__ = _STRICT
    scale_up_threshold: float | None = None
    scale_down_threshold: float | None = None
    target_ratio: float | None = None
    min_instances: int | None = None
    latency_budget_s: float | None = None
    credit: str | None = None


@dataclass
class ElasticityDoc:
    """The minute-by-minute replay of the scaling rule over the production series."""

    __pydantic_config__ = _STRICT
    per_instance_rps: float
    cold_start_s: float
    cool_down_s: float
    initial_instances: int
    n_minutes: int
    events: list[ScalingEventDoc]
    n_scale_up: int
    n_scale_down: int
    over_capacity_minutes: list[int]
    n_over_capacity: int
    max_instances: int
    recommendation: Literal["elastic", "fixed+buffer"]
    buffer: int
    reason: str
    settings: ReplaySettingsDoc = field(default_factory=ReplaySettingsDoc)


# --------------------------------------------------------------------------- memory
@dataclass
class ModelDoc:
    """The model preset's architecture facts and the per-token sizes derived from them."""

    __pydantic_config__ = _STRICT
    name: str
    kv_bytes_per_token: float
    seed_mha_kv_bytes_per_token: float
    weight_bytes: float
    params: int | None = None
    layers: int | None = None
    hidden: int | None = None
    attention: Literal["gqa", "mla"] | None = None
    heads: int | None = None
    kv_heads: int | None = None
    head_dim: int | None = None
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    weight_dtype: str | None = None
    kv_dtype: str | None = None
    source: str | None = None


@dataclass
class SeqLenDoc:
    __pydantic_config__ = _STRICT
    n: int
    mean: float
    p50: float
    p99: float
    max: float
    source: str = ""
    quantile_method: str = "linear"


@dataclass
class MemoryRowDoc:
    """Memory per instance at one sequence-length basis (``mean``, ``p50``, ``p99``, ``max``)."""

    __pydantic_config__ = _STRICT
    basis: str
    seq_len: float
    weights_gib: float
    kv_gib: float | None
    margin_gib: float | None
    total_gib: float | None
    seed_mha_kv_gib: float | None
    seed_mha_total_gib: float | None
    headroom: float | None
    max_concurrency_that_fits: int | None
    seed_mha_max_concurrency_that_fits: int | None


@dataclass
class PlanningConcurrencyDoc:
    """Mean concurrency at Q_ult by Little's law (``ConcurrencyAtLimit``) and whether the plan used it."""

    __pydantic_config__ = _STRICT
    value: float
    at_load: float
    unit: str
    method: str
    steps_used: list[float]
    derived: bool
    statement: str
    per_instance: float
    used: bool
    tested_instances: int


@dataclass
class GpuNeedDoc:
    __pydantic_config__ = _STRICT
    gib_per_instance: float
    basis: str
    concurrency: int
    statement: str


@dataclass
class VllmCheckDoc:
    __pydantic_config__ = _STRICT
    kv_cache_gib: float
    logged_tokens: int
    predicted_tokens: int
    rel_error: float
    right: bool
    statement: str


@dataclass
class MemoryDoc:
    """KV-cache memory per instance: the model, the planning concurrency and one row per basis."""

    __pydantic_config__ = _STRICT
    model: ModelDoc
    concurrency: int | None
    seq_len: SeqLenDoc
    margin: float
    gpu_mem_gib: float | None
    gpu_count: int
    formula: str
    rows: list[MemoryRowDoc]
    concurrency_basis: str = ""
    planning_concurrency: PlanningConcurrencyDoc | None = None
    gpu_memory_needed: GpuNeedDoc | None = None
    vllm_log_check: VllmCheckDoc | None = None

    def row(self, basis: str) -> MemoryRowDoc | None:
        return next((r for r in self.rows if r.basis == basis), None)


# --------------------------------------------------------------------------- scorecards
@dataclass
class ScoreRowDoc:
    __pydantic_config__ = _STRICT
    dimension: str
    status: str
    value: float | str | bool | None
    reason: str


@dataclass
class CheckItemDoc:
    __pydantic_config__ = _STRICT
    metric: str
    healthy_rule: str
    status: str
    value: float | str | bool | None
    reason: str


@dataclass
class ScorecardsDoc:
    __pydantic_config__ = _STRICT
    scorecard: list[ScoreRowDoc]
    checklist: list[CheckItemDoc]


def _section(tp: Any) -> Any:
    return Annotated[Annotated[tp, Tag("~available")] | Annotated[NotAvailable, Tag("~unavailable")],
                     Discriminator(_gap)]


CbuSection = _section(CbuDoc)
InstancesSection = _section(InstancesDoc)
ElasticitySection = _section(ElasticityDoc)
MemorySection = _section(MemoryDoc)
ScorecardsSection = _section(ScorecardsDoc)


@dataclass
class EconomicsDoc:
    """``economics`` (``bearing_lib.plan.economics.PlanEconomics``): tokens/s, money, the staged plan
    in instances and the KV check against the engine's metrics. Typed loosely: each part is an
    object with ``available`` (and its reason when false); the report's ops section prints them."""

    tokens: dict[str, Any]
    money: dict[str, Any]
    staged: dict[str, Any]
    kv_metrics_check: dict[str, Any]


EconomicsSection = _section(EconomicsDoc)


# --------------------------------------------------------------------------- the document
@dataclass
class PlanDocument:
    """The plan JSON (§6), typed. ``verdict`` is the badge colour; ``notes`` what the plan assumed."""

    __pydantic_config__ = _STRICT
    tier: TierDoc
    target: TargetDoc
    fos: FosDoc
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
    utilisation: float | None = None
    breakpoint_rule: str | None = None
    sources: dict[str, str] = field(default_factory=dict)
    bearing_version: str | None = None
    schema: str = SCHEMA

    @classmethod
    def from_dict(cls, doc: Any, *, source: str = "plan JSON") -> PlanDocument:
        """Validate a plan JSON document once: one :class:`SchemaError` listing every problem with its
        path (missing, renamed or mistyped keys); the input is not modified."""
        if not isinstance(doc, dict):
            raise SchemaError(f"{source}: expected a plan JSON object, found {type(doc).__name__}")
        if doc.get("schema", SCHEMA) != SCHEMA:
            raise SchemaError(f"{source}: schema {doc.get('schema')!r} is not {SCHEMA!r} (this bearing reads "
                              f"{SCHEMA})", field="schema")
        return parse(cls, {**doc, "schema": SCHEMA}, what=source)

    def to_dict(self) -> dict[str, Any]:
        """The plan JSON again (what :meth:`from_dict` read, with ``schema``)."""
        return jsonable(self)

    # ---------------------------------------------------------------- reading
    @property
    def blended(self) -> BlendedFosDoc:
        return self.fos.blended

    @property
    def per_mix(self) -> list[MixFosDoc]:
        return self.fos.per_mix


def schema_document() -> dict[str, Any]:
    """The JSON Schema of the plan JSON (``bearing schema plan``)."""
    from bearing_lib.common.schema import json_schema

    return json_schema(PlanDocument, title="bearing capacity plan JSON", schema_id=SCHEMA)


__all__ = [
    "SCHEMA",
    "BlendedFosDoc",
    "BufferPlanDoc",
    "BurstDoc",
    "CbuDoc",
    "CheckItemDoc",
    "ElasticityDoc",
    "FosDoc",
    "FosValue",
    "GpuNeedDoc",
    "InstancesDoc",
    "MemoryDoc",
    "MemoryRowDoc",
    "MinuteAboveDoc",
    "MixFosDoc",
    "ModelDoc",
    "PlanDocument",
    "PlanningConcurrencyDoc",
    "ReplaySettingsDoc",
    "SafeConcurrencyDoc",
    "ScalingEventDoc",
    "ScoreRowDoc",
    "ScorecardsDoc",
    "SeqLenDoc",
    "TargetDoc",
    "TierDoc",
    "VllmCheckDoc",
    "schema_document",
]
