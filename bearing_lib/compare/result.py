"""The comparison's typed result: :class:`Comparison` of :class:`Deployment` rows and :class:`PairDifference`.

These classes are both what :func:`bearing_lib.compare.compare` returns and the shape of the
comparison JSON (schema ``bearing.compare/1``): :meth:`Comparison.to_dict` writes it,
:meth:`Comparison.from_dict` validates a document once (every problem at once,
:mod:`bearing_lib.common.schema`) and gives the same objects back. Draws of the limits are
not part of the document; the intervals computed from them are.

Every rate says its basis: a deployment's ``limit`` is the offered load at the SLA crossing
(the load-test axis, as ``bearing limits`` gives it); ``per_instance_rps`` is the *achieved*
throughput there divided by the serving instances the test drove, which is what capacity is
planned in and what deployments are compared on.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any, Literal

from bearing_lib.common.estimate import Estimate
from bearing_lib.common.files import jsonable

SCHEMA = "bearing.compare/1"

Verdict = Literal["better", "worse", "not distinguishable", "not ranked"]
Basis = Literal["cost per 1M output tokens", "output tokens/s per GPU", "req/s per instance", "none"]


@dataclass
class Identity:
    """What a deployment is: model, engine, hardware, parallelism, replicas, options.

    ``stated`` says where each known field came from (``files``: the load test's own files or
    the limits JSON's conditions; ``path``: the folder or file names, e.g. ``tp4_pp2``;
    ``--label``/``--hardware``/``--gpus``: the analyst). A field left None is unknown and is
    never taken as equal to another deployment's.
    """

    name: str
    model: str | None = None
    engine: str | None = None
    engine_version: str | None = None
    hardware: str | None = None
    gpus: int | None = None
    """GPUs the tested deployment used in total (all instances)."""
    instances: int = 1
    tensor_parallel: int | None = None
    pipeline_parallel: int | None = None
    options: dict[str, str] = field(default_factory=dict)
    """Engine options that change capacity (chunked prefill, quantisation, prefix caching, ...)."""
    stated: dict[str, str] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)


@dataclass
class StepPoint:
    """One load step of one deployment, as a point of the throughput-per-GPU vs per-user plane."""

    deployment: str
    offered_load: float | None
    throughput_rps: float | None
    output_tokens_per_s: float | None
    per_gpu_tps: float | None
    """Output tokens/s per GPU at this step (None without a GPU count)."""
    per_user_tps: float | None
    """Output tokens/s one request sees: 1000 / median TPOT (ms) when known, else output tokens/s / mean concurrency."""
    status: str
    feasible: bool
    """The step met the SLA (status ``pass``)."""
    on_front: bool = False


@dataclass
class FleetPlan:
    """Instances that carry the production target at the tier's design FOS, and what they cost a month."""

    target_rps: float
    target_basis: str
    tier: str
    target_fos: float
    instances: int | None
    instances_ci95: tuple[int | None, int | None] | None = None
    """Instances at the upper and lower ends of the limit's 95 % interval."""
    gpus: int | None = None
    monthly_cost: float | None = None
    monthly_cost_ci95: tuple[float | None, float | None] | None = None
    statement: str = ""


@dataclass
class Deployment:
    """One deployment's limit and what follows from it (``docs/compare.md``)."""

    identity: Identity
    sla: str
    mix: str
    limit: Estimate
    """Q_ult: offered load at the SLA crossing, in the test's unit, for the whole tested deployment."""
    per_instance_rps: Estimate
    """Achieved throughput at the limit per serving instance (req/s)."""
    limit_statement: str = ""
    """The limits' own sentence about the limit (why it is a bound, or why there is none)."""
    output_tokens_per_request: float | None = None
    input_tokens_per_request: float | None = None
    """Mean input tokens per successful request of the test (None when read from a limits JSON)."""
    per_gpu_tps: Estimate | None = None
    """Output tokens/s per GPU at the limit."""
    per_user_tps: float | None = None
    """Output tokens/s per request at the limit (interpolated between the steps around it)."""
    price_per_hour: float | None = None
    """Price of one serving instance per hour ($)."""
    cost_per_1m_output_tokens: Estimate | None = None
    fleet: FleetPlan | None = None
    uncertainty: str = ""
    """Where the interval of comparisons comes from: the estimator's draws, or the log-normal approximation."""
    steps: list[StepPoint] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.identity.name


@dataclass
class Ratio:
    """A ratio A / B with its 95 % interval and how it was computed."""

    value: float
    ci95: tuple[float, float]
    method: str


@dataclass
class PairDifference:
    """A against B: the ratios with their intervals, and the verdict on the ranking basis."""

    a: str
    b: str
    comparable: bool
    basis: Basis
    verdict: Verdict
    statement: str
    limit_ratio: Ratio | None = None
    """Per-instance achieved limit, A / B."""
    per_gpu_ratio: Ratio | None = None
    """Output tokens/s per GPU at the limit, A / B."""
    cost_ratio: Ratio | None = None
    """Cost per 1M output tokens, A / B (below 1: A is cheaper)."""
    reasons: list[str] = field(default_factory=list)
    """Why the pair is not ranked (different model, SLA or workload; an unknown identity field; no limit)."""


@dataclass
class Comparison:
    """Deployments side by side under one SLA: limits, efficiency, cost, pairwise differences, the answer."""

    deployments: list[Deployment]
    pairs: list[PairDifference] = field(default_factory=list)
    answer: list[str] = field(default_factory=list)
    """The ranked answer, first line first (``docs/compare.md``, "The answer")."""
    ranking: list[str] = field(default_factory=list)
    """Deployment names, best first, on :attr:`basis` (only those ranked against the best)."""
    basis: Basis = "none"
    tier: str | None = None
    notes: list[str] = field(default_factory=list)
    schema: str = SCHEMA
    bearing_version: str = ""

    # ------------------------------------------------------------------ reading
    def deployment(self, name: str) -> Deployment:
        for d in self.deployments:
            if d.name == name:
                return d
        from bearing_lib.common.errors import ParameterError

        raise ParameterError(f"no deployment {name!r}; deployments: {', '.join(d.name for d in self.deployments)}")

    def pair(self, a: str, b: str) -> PairDifference:
        for p in self.pairs:
            if (p.a, p.b) == (a, b):
                return p
        from bearing_lib.common.errors import ParameterError

        raise ParameterError(f"no pair {a!r} vs {b!r}")

    def table(self) -> list[dict[str, str | int | float | None]]:
        """One row per deployment (plain values, for a table or a DataFrame)."""
        rows = []
        for d in self.deployments:
            i = d.identity
            rows.append({
                "deployment": d.name, "model": i.model, "engine": i.engine, "hardware": i.hardware, "gpus": i.gpus,
                "instances": i.instances, "limit": d.limit.text(3), "per_instance_rps": d.per_instance_rps.text(3),
                "per_gpu_tps": d.per_gpu_tps.text(3) if d.per_gpu_tps else "–",
                "per_user_tps": None if d.per_user_tps is None else round(d.per_user_tps, 1),
                "cost_per_1m_output_tokens": d.cost_per_1m_output_tokens.text(3)
                if d.cost_per_1m_output_tokens else "–",
                "fleet": d.fleet.statement if d.fleet else "–",
            })
        return rows

    def _repr_html_(self) -> str:
        return "".join(f"<p>{html.escape(line)}</p>" for line in self.answer) + self.table_html()

    def table_html(self) -> str:
        """The per-deployment table (escaped): the notebook display and the comparison page use it."""
        cols = ["deployment", "model", "engine", "hardware", "gpus", "instances", "options", "SLA", "limit (offered)",
                "req/s per instance (achieved)", "output tok/s per GPU", "tok/s per user", "$ / 1M output tokens",
                "fleet"]
        out = ["<table><thead><tr>", *(f"<th>{html.escape(h)}</th>" for h in cols), "</tr></thead><tbody>"]
        for d in self.deployments:
            i = d.identity
            opts = ", ".join(f"{k}={v}" for k, v in sorted(i.options.items())) or "–"
            tp = f" (tp{i.tensor_parallel} pp{i.pipeline_parallel})" if i.tensor_parallel else ""
            vals = [d.name, i.model or "unknown", " ".join(x for x in (i.engine, i.engine_version) if x) or "unknown",
                    i.hardware or "unknown", f"{i.gpus}{tp}" if i.gpus else "unknown", i.instances, opts, d.sla,
                    d.limit.text(3), d.per_instance_rps.text(3), d.per_gpu_tps.text(3) if d.per_gpu_tps else "–",
                    f"{d.per_user_tps:.1f}" if d.per_user_tps is not None else "–",
                    d.cost_per_1m_output_tokens.text(3) if d.cost_per_1m_output_tokens else "–",
                    d.fleet.statement if d.fleet else "–"]
            out.append("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in vals) + "</tr>")
        out.append("</tbody></table>")
        return "".join(out)

    # ------------------------------------------------------------------ JSON edge
    def to_dict(self) -> dict[str, Any]:
        from bearing_lib.common.version import __version__

        d = jsonable(self)
        d["bearing_version"] = __version__
        head = {k: d.pop(k) for k in ("schema", "bearing_version")}
        return {**head, **d}

    @classmethod
    def from_dict(cls, doc: Any, *, source: str = "comparison JSON") -> Comparison:
        """Validate a comparison JSON once; one :class:`SchemaError` lists every problem."""
        from bearing_lib.common.schema import read_document

        return read_document(cls, doc, source=source, kind="compare", schema=SCHEMA, keys=("deployments",),
                             writer="bearing compare --json")


def schema_document() -> dict[str, Any]:
    """The JSON Schema of the comparison JSON."""
    from bearing_lib.common.schema import json_schema

    return json_schema(Comparison, title="bearing comparison JSON", schema_id=SCHEMA)


__all__ = [
    "SCHEMA",
    "Basis",
    "Comparison",
    "Deployment",
    "FleetPlan",
    "Identity",
    "PairDifference",
    "Ratio",
    "StepPoint",
    "Verdict",
    "schema_document",
]
