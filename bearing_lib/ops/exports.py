"""The plan as the settings operators deploy: Prometheus rules, HPA, KEDA, Envoy and nginx.

Everything is computed from the plan JSON (``bearing plan --json``, docs/interfaces.md §6)
and, for the SLA, from the limits JSON it was built from (§4). :func:`read_plan` is the
typed reader: it validates the keys used here and names every missing or mistyped one at
once. Which number goes where (docs/operations.md has the worked example):

- **per-instance allowable capacity** ``A = instances.per_instance_allowable_rps`` (Q_ult per
  instance / FOS); **CBU** = fleet throughput / (instances × A); alert when CBU >
  ``cbu.threshold`` (0.8) for ``for_minutes``, and when CBU > 1 (below the design FOS);
- **autoscaler target per pod** = ``cbu.threshold × A`` (scale out before CBU reaches the
  threshold); **min replicas** = ``instances.base`` (the instances the target load needs; with a
  fixed buffer, ``instances.total``); **max replicas** = the larger of ``instances.total`` and the
  elasticity replay's ``max_instances``; **scale-down stabilisation** = the replay's
  ``elasticity.cool_down_s``. With failure domains (``bearing plan --zones``) the replica counts
  are the domains': min = ``failure_domains.instances`` (the fleet that carries the target with the
  largest domain(s) lost; ``failure_domains.total`` with a fixed buffer), max = the larger of
  ``failure_domains.total`` and the replay's maximum rounded up to an even spread over the zones;
- **error-budget burn** from the SLA's ``error_rate <= x`` clause (budget ``x`` over an SLO
  window, 30 days by default): 10 % of the budget in 1 h, and the multi-window pairs (2 % in 1 h
  with a 5 min confirmation, page; 5 % in 6 h with 30 min, ticket). A burn rate of
  ``f × window / long_window`` spends fraction ``f`` of the budget in the long window;
- **latency** from each percentile clause (``p95(ttft) <= 1s`` → ``histogram_quantile(0.95, …)
  > 1`` on vLLM's histogram for that metric);
- **rate limits** at ``A`` per instance (× ``instances`` for a limiter in front of several):
  nginx ``limit_req`` in requests per minute rounded *down*, Envoy's local rate limit as a
  token bucket refilled at exactly ``A``;
- **per-tenant rate limits** (a plan built with ``--tenant-column``): each tenant's quota
  (``tenants.tenants[].quota_rps``, max-min fair shares of the fleet's allowable capacity, fleet-wide:
  for a limiter in front of the whole fleet) keyed on the request header ``--tenant-header``
  (``x-tenant-id``): nginx one ``limit_req_zone`` per tenant (a ``map`` gives the key only to that
  tenant's requests), Envoy one ``descriptors`` entry per tenant (the route's ``rate_limits`` action
  ``request_headers`` → descriptor key ``tenant``).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from bearing_lib.common.errors import ParameterError, SchemaError
from bearing_lib.common.files import read_json
from bearing_lib.plan.fos import UPPER_BOUND_REASON

if TYPE_CHECKING:  # pragma: no cover
    from bearing_lib.limits.result import LimitsResult
    from bearing_lib.limits.sla import Clause
    from bearing_lib.plan.capacity_plan import CapacityPlan

FORMATS = ("prometheus", "hpa", "keda", "envoy", "nginx")
HPA_MAX_STABILIZATION_S = 3600  # autoscaling/v2: stabilizationWindowSeconds <= 3600
HISTOGRAMS = {
    "ttft_ms": "vllm:time_to_first_token_seconds",
    "latency_ms": "vllm:e2e_request_latency_seconds",
    "tpot_ms": "vllm:time_per_output_token_seconds",
    "itl_ms": "vllm:inter_token_latency_seconds",
}
"""SLA metric → the vLLM histogram the latency alert reads."""
REQUESTS_COMPLETED = "vllm:request_success_total"
RUNNING_GAUGE = "vllm:num_requests_running"
HTTP_REQUESTS = "http_requests_total"
ERROR_MATCHER = 'status=~"5..|5xx"'
"""Server errors among vLLM's HTTP requests (its API server labels status as ``2xx`` ... ``5xx``)."""


# --------------------------------------------------------------------------- typed readers
# The plan JSON is read through the one typed plan (bearing_lib.plan.capacity_plan.CapacityPlan.from_dict).


@dataclass(frozen=True)
class PlanNumbers:
    """The numbers the exports use, each read from a named plan key."""

    plan_path: str
    per_instance_allowable_rps: float
    per_instance_q_ult_rps: float
    cbu_threshold: float
    base_instances: int
    total_instances: int
    buffer_mode: str | None
    cool_down_s: float | None
    replay_max_instances: int | None
    tier: str
    verdict: str
    target_rps: float
    limits_path: str | None = None
    sla: tuple[Clause, ...] = ()
    limit_bound: str = "none"
    limit_bound_reason: str = UPPER_BOUND_REASON
    """Why an upper bound is one (the plan's ``blended.upper_reason``)."""
    """``fos.blended.bound`` of the plan: ``upper`` when the limit is an upper bound (the test failed at its
    first step), ``lower`` when a lower bound (it never failed)."""
    domain_instances: int | None = None
    """``failure_domains.instances``: carries the target with the largest domain(s) lost (None: no domains)."""
    domain_total: int | None = None
    """``failure_domains.total``: those plus the burst buffer, spread evenly."""
    zones: int | None = None
    replicas_per_node: int | None = None
    domains_lost: int = 1
    domains_statement: str | None = None
    tenant_quotas: tuple[tuple[str, float], ...] = ()
    """``tenants.tenants[]``: (tenant, quota_rps), fleet-wide (empty: the plan has no tenants)."""
    floors: bool = False
    """``failure_floors`` of the plan is not empty: a failure floor breaks an SLA clause at every load, and the
    numbers are the other clauses'."""
    floors_one_load: bool = False
    """``failure_floors_one_load`` of the plan: every floor was seen at one load, so whether more instances would
    help is not tested."""

    @property
    def bound_note(self) -> str | None:
        """What a bound on the limit, or a failure floor of the plan, means for every number exported from it (None
        for a value without a floor)."""
        # a floor seen at one quiet load cannot show that more instances would not help (the plan says which)
        fix = ("and with one load tested, whether more instances would help is untested" if self.floors_one_load
               else "and meeting the SLA needs the floor removed, not a rate limit or more instances")
        floor = (f"a failure floor breaks the SLA at every load tested: these numbers are the other clauses', {fix} "
                 "(the capacity plan's verdict says what the failed requests share)") if self.floors else None
        if self.limit_bound == "upper":
            note = (f"the plan's limit is an UPPER bound ({self.limit_bound_reason}): the real allowable "
                    "capacity is below these numbers, so rate limits and autoscaler targets built on them admit more "
                    "than the service carries; " + ("test from a lower load to get a value"
                                                    if self.limit_bound_reason == UPPER_BOUND_REASON else
                                                    "test between the last passing load and the saturation"))
        elif self.limit_bound == "lower":
            note = ("the plan's limit is a lower bound (the load test never failed"
                    + (" on the other clauses" if self.floors else "") + "): the real allowable capacity is at or "
                    "above these numbers, so the limits here are conservative")
        else:
            return floor
        return f"{note}; {floor}" if floor else note

    @property
    def scale_target_rps(self) -> float:
        """Per-pod autoscaler target: ``cbu.threshold × per-instance allowable``."""
        return self.cbu_threshold * self.per_instance_allowable_rps

    @property
    def min_replicas(self) -> int:
        if self.domain_instances is not None and self.domain_total is not None:
            return self.domain_total if self.buffer_mode == "fixed" else self.domain_instances
        return self.total_instances if self.buffer_mode == "fixed" else self.base_instances

    @property
    def max_replicas(self) -> int:
        hi = max(self.total_instances, self.replay_max_instances or 0, self.min_replicas)
        if self.zones is not None and self.domain_total is not None:
            from bearing_lib.plan.domains import round_up_to_domains

            hi = round_up_to_domains(max(hi, self.domain_total), self.zones, self.replicas_per_node)
        return hi


def read_plan(plan_path: str | Path, *, limits_path: str | Path | None = None) -> PlanNumbers:
    """The plan JSON's numbers the exports need; the SLA from ``limits_path`` (else the limits file
    the plan names in ``sources.limits``, when it exists). Missing keys: one :class:`SchemaError`
    listing them all, with the file."""
    from bearing_lib.plan.capacity_plan import CapacityPlan

    plan_path = Path(plan_path)
    doc = read_json(plan_path, "plan JSON")
    try:
        p = CapacityPlan.from_dict(doc, source=f"plan JSON {plan_path}")
    except SchemaError as exc:
        raise SchemaError(f"{exc.message}\nwrite it with `bearing plan --limits L --profile P --json OUT`",
                          path=plan_path) from None
    if limits_path is None:
        named = p.sources.get("limits")
        if isinstance(named, str):
            cand = Path(named) if Path(named).is_absolute() else plan_path.parent / named
            cand = cand if cand.is_file() else Path(named)
            limits_path = cand if cand.is_file() else None
    sla = read_sla(Path(limits_path)) if limits_path is not None else ()
    return plan_numbers(p, plan_path=str(plan_path), limits_path=str(limits_path) if limits_path else None, sla=sla)


def plan_numbers(p: CapacityPlan, *, plan_path: str, limits_path: str | None = None,
                 sla: tuple[Clause, ...] = ()) -> PlanNumbers:
    """The numbers the exports need, read from the typed plan ``p`` (``plan_path`` / ``limits_path`` name the files
    the exports cite); a plan without an instance count or a CBU cannot be exported (:class:`SchemaError` naming
    the field)."""
    from bearing_lib.plan.capacity import InstancePlan
    from bearing_lib.plan.domains import FailureDomains
    from bearing_lib.plan.elasticity import ReplayResult
    from bearing_lib.plan.fos import CbuResult

    inst, cbu = p.instances, p.cbu
    if not isinstance(inst, InstancePlan):
        raise SchemaError(f"the plan has no instance count ({inst.reason}): the exports need it", path=plan_path,
                          field="instances")
    if not isinstance(cbu, CbuResult):
        raise SchemaError(f"the plan has no CBU ({cbu.reason}): the exports need its threshold", path=plan_path,
                          field="cbu")
    el = p.elasticity if isinstance(p.elasticity, ReplayResult) else None
    dom = p.failure_domains if isinstance(p.failure_domains, FailureDomains) else None
    numbers = PlanNumbers(
        plan_path=plan_path,
        per_instance_allowable_rps=inst.per_instance_allowable_rps,
        per_instance_q_ult_rps=inst.per_instance_q_ult_rps,
        cbu_threshold=cbu.threshold,
        base_instances=inst.base,
        total_instances=inst.total,
        buffer_mode=inst.buffer_plan.mode if inst.buffer_plan is not None else None,
        cool_down_s=el.cool_down_s if el else None,
        replay_max_instances=el.max_instances if el else None,
        tier=p.tier.name,
        verdict=p.verdict,
        target_rps=p.target.rps,
        limits_path=limits_path,
        sla=sla,
        limit_bound=p.blended.bound,
        limit_bound_reason=p.blended.upper_reason,
        domain_instances=dom.instances if dom else None,
        domain_total=dom.total if dom else None,
        zones=dom.zones if dom else None,
        replicas_per_node=dom.replicas_per_node if dom else None,
        domains_lost=dom.domains_lost if dom else 1,
        domains_statement=dom.statement if dom else None,
        tenant_quotas=tuple((r.tenant, r.quota_rps) for r in p.tenants.tenants) if p.tenants is not None else (),
        floors=bool(p.failure_floors),
        floors_one_load=bool(p.failure_floors) and p.failure_floors_one_load,
    )
    if not (numbers.per_instance_allowable_rps > 0 and math.isfinite(numbers.per_instance_allowable_rps)):
        raise SchemaError(
            f"instances.per_instance_allowable_rps must be a positive number (found "
            f"{numbers.per_instance_allowable_rps})",
            path=plan_path, field="instances.per_instance_allowable_rps",
        )
    if not 0 < numbers.cbu_threshold <= 1:
        raise SchemaError(f"cbu.threshold must be in (0, 1] (found {numbers.cbu_threshold})", path=plan_path,
                          field="cbu.threshold")
    return numbers


def sla_clauses(limits: LimitsResult) -> tuple[Clause, ...]:
    """The SLA clauses of a typed limits result (:class:`~bearing_lib.limits.sla.Clause`, each with its threshold)."""
    return tuple(limits.sla)


def read_sla(limits_path: Path) -> tuple[Clause, ...]:
    """The SLA clauses of a limits JSON (``sla`` list, §4), read through the one typed limits reader."""
    from bearing_lib.limits.result import LimitsResult

    doc = read_json(limits_path, "limits JSON")
    return sla_clauses(LimitsResult.from_dict(doc, source=f"limits JSON {limits_path}"))


# --------------------------------------------------------------------------- options
@dataclass(frozen=True)
class ExportTarget:
    """Where the exports point: the workload, its metrics, the Prometheus behind KEDA."""

    namespace: str = "default"
    deployment: str = "vllm"
    selector: str | None = None
    """PromQL label matchers for the service's series (default ``namespace="<namespace>"``)."""
    prometheus_url: str = "http://prometheus-operated.monitoring.svc:9090"
    pods_metric: str = "vllm_requests_per_second"
    """Per-pod metric name the HPA reads through the custom-metrics API (prometheus-adapter)."""
    queue_target: float | None = None
    """Waiting requests per pod to scale on as well (the plan has no queue figure: the user's choice)."""
    queue_metric: str = "vllm_num_requests_waiting"
    """Per-pod custom metric name of the waiting queue (HPA)."""
    for_minutes: int = 5
    slo_window_days: float = 30.0
    instances: int = 1
    """Instances behind one rate limiter (1: a limiter per instance, e.g. a sidecar)."""
    min_replicas: int | None = None
    max_replicas: int | None = None
    cool_down_s: float | None = None
    tenant_header: str = "x-tenant-id"
    """Request header naming the tenant (per-tenant rate limits)."""
    schedule: Any = None
    """A :class:`~bearing_lib.ops.schedule.DailySchedule` (``--profile``): KEDA cron triggers per UTC hour slot."""
    binding: Any = None
    """A :class:`~bearing_lib.servers.binding.BindingTrigger` (``--server-metrics``): scale on the binding signal
    too."""

    @property
    def matchers(self) -> str:
        return self.selector if self.selector is not None else f'namespace="{self.namespace}"'

    def check(self) -> None:
        if self.for_minutes < 1:
            raise ParameterError(f"--for-minutes must be >= 1 (got {self.for_minutes})")
        if self.slo_window_days <= 0:
            raise ParameterError(f"--slo-window-days must be > 0 (got {self.slo_window_days})")
        if self.instances < 1:
            raise ParameterError(f"--instances must be >= 1 (got {self.instances})")
        if self.queue_target is not None and not self.queue_target > 0:
            raise ParameterError(f"--queue-target must be > 0 (got {self.queue_target})")
        if not _HEADER.fullmatch(self.tenant_header):
            raise ParameterError(f"--tenant-header must be an HTTP header name of letters, digits and '-' "
                                 f"(got {self.tenant_header!r})")
        for name, v in (("--min-replicas", self.min_replicas), ("--max-replicas", self.max_replicas)):
            if v is not None and v < 1:
                raise ParameterError(f"{name} must be >= 1 (got {v})")


_HEADER = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*")
_TENANT = re.compile(r"[A-Za-z0-9._:@/+-]+")


def _tenants(numbers: PlanNumbers, notes: list[str]) -> list[tuple[str, float]]:
    """The plan's tenant quotas that a rate limiter can hold (a tenant name nginx and Envoy can match)."""
    out = []
    for name, q in numbers.tenant_quotas:
        if not _TENANT.fullmatch(name):
            notes.append(f"tenant {name!r}: not a plain header value; no per-tenant limit written for it")
            continue
        out.append((name, q))
    return out


def _sel(matchers: str, extra: str = "") -> str:
    parts = [m for m in (matchers, extra) if m]
    return "{" + ",".join(parts) + "}"


def _num(x: float) -> str:
    """A number for PromQL / YAML: up to 6 significant digits, no exponent for ordinary sizes."""
    return f"{x:.6g}"


def _header(numbers: PlanNumbers, what: str) -> list[str]:
    return [
        f"{what}, written by bearing export from {numbers.plan_path}",
        f"tier {numbers.tier}, verdict {numbers.verdict}; per-instance allowable capacity "
        f"{_num(numbers.per_instance_allowable_rps)} req/s (instances.per_instance_allowable_rps), "
        f"CBU threshold {_num(numbers.cbu_threshold)} (cbu.threshold)",
        *([f"WARNING: {numbers.bound_note}"] if numbers.limit_bound == "upper" or numbers.floors else
          [f"note: {numbers.bound_note}"] if numbers.bound_note else []),
    ]


# --------------------------------------------------------------------------- Prometheus
def burn_factor(budget_fraction: float, long_window_h: float, slo_window_days: float) -> float:
    """Burn rate that spends ``budget_fraction`` of the error budget in ``long_window_h`` hours."""
    return budget_fraction * slo_window_days * 24.0 / long_window_h


def prometheus_rules(numbers: PlanNumbers, target: ExportTarget) -> tuple[dict[str, Any], list[str]]:
    """(rules document, notes). Recording rules for throughput, instances and CBU, then alerts."""
    m = target.matchers
    a = numbers.per_instance_allowable_rps
    notes: list[str] = []
    rec = [
        {"record": "bearing:request_throughput:rate1m", "expr": f"sum(rate({REQUESTS_COMPLETED}{_sel(m)}[1m]))"},
        {"record": "bearing:instances:count", "expr": f"count({RUNNING_GAUGE}{_sel(m)})"},
        {
            "record": "bearing:cbu:ratio",
            "expr": f"bearing:request_throughput:rate1m / (bearing:instances:count * {_num(a)})",
        },
    ]
    fm = f"{target.for_minutes}m"
    alerts: list[dict[str, Any]] = [
        {
            "alert": "BearingCBUHigh",
            "expr": f"bearing:cbu:ratio > {_num(numbers.cbu_threshold)}",
            "for": fm,
            "labels": {"severity": "warning"},
            "annotations": {
                "summary": "Capacity utilisation above the plan's threshold: scale out",
                "description": (
                    f"CBU {{{{ $value | humanize }}}} > {_num(numbers.cbu_threshold)} for {fm}: fleet throughput / "
                    f"(instances x {_num(a)} req/s allowable per instance)."
                ),
            },
        },
        {
            "alert": "BearingAboveAllowable",
            "expr": "bearing:cbu:ratio > 1",
            "for": fm,
            "labels": {"severity": "critical"},
            "annotations": {
                "summary": "Load above the allowable capacity: the factor of safety is below the design value",
                "description": f"CBU {{{{ $value | humanize }}}} > 1 for {fm} "
                               f"(allowable {_num(a)} req/s per instance).",
            },
        },
    ]
    err = next((c for c in numbers.sla if c.kind == "error_rate"), None)
    if err is not None:
        budget = err.threshold
        for w in ("5m", "30m", "1h", "6h"):
            total = f"sum(rate({HTTP_REQUESTS}{_sel(m)}[{w}]))"
            bad = f"sum(rate({HTTP_REQUESTS}{_sel(m, ERROR_MATCHER)}[{w}]))"
            rec.append({"record": f"bearing:request_errors:ratio_rate{w}", "expr": f"{bad} / {total}"})
        days = target.slo_window_days
        f10 = burn_factor(0.10, 1, days)
        f_fast, f_slow = burn_factor(0.02, 1, days), burn_factor(0.05, 6, days)
        slo = f"SLO {_num(100 * (1 - budget))}% over {_num(days)} d ({err.text})"
        alerts += [
            {
                "alert": "BearingErrorBudget10PercentIn1h",
                "expr": f"bearing:request_errors:ratio_rate1h > {_num(f10 * budget)}",
                "labels": {"severity": "ticket"},  # the sources: 10% burned within 1 h → open a ticket
                "annotations": {"summary": f"10% of the error budget spent in 1 h ({slo})",
                                "description": f"1 h error ratio {{{{ $value | humanizePercentage }}}} > burn rate "
                                               f"{_num(f10)} x budget {_num(budget)}."},
            },
            {
                "alert": "BearingErrorBudgetBurnFast",
                "expr": (f"bearing:request_errors:ratio_rate1h > {_num(f_fast * budget)} and "
                         f"bearing:request_errors:ratio_rate5m > {_num(f_fast * budget)}"),
                "labels": {"severity": "page"},
                "annotations": {"summary": f"Error budget burning at {_num(f_fast)}x (2% in 1 h, confirmed over 5 m; "
                                           f"{slo})"},
            },
            {
                "alert": "BearingErrorBudgetBurnSlow",
                "expr": (f"bearing:request_errors:ratio_rate6h > {_num(f_slow * budget)} and "
                         f"bearing:request_errors:ratio_rate30m > {_num(f_slow * budget)}"),
                "labels": {"severity": "ticket"},
                "annotations": {"summary": f"Error budget burning at {_num(f_slow)}x (5% in 6 h, confirmed over "
                                           f"30 m; {slo})"},
            },
        ]
    else:
        notes.append("no error_rate clause in the SLA (or no limits JSON): no error-budget alerts written")
    for c in numbers.sla:
        if c.kind != "percentile":
            continue
        hist = HISTOGRAMS.get(c.metric or "")
        q = _quantile(c.stat)
        if hist is None or q is None:
            notes.append(f"SLA clause {c.text!r}: no vLLM histogram for {c.metric}; no latency alert written")
            continue
        thr_s = c.threshold / 1000.0 if c.unit == "ms" else c.threshold
        name = "".join(w.capitalize() for w in (c.metric or "").removesuffix("_ms").split("_"))
        alerts.append(
            {
                "alert": f"BearingSLA{name}{c.stat.upper()}",
                "expr": f"histogram_quantile({_num(q)}, sum by (le) (rate({hist}_bucket{_sel(m)}[5m]))) "
                        f"> {_num(thr_s)}",
                "for": fm,
                "labels": {"severity": "critical"},
                "annotations": {
                    "summary": f"SLA clause {c.text} violated (server-side histogram)",
                    "description": f"{c.stat} of {hist} is {{{{ $value | humanizeDuration }}}} > {_num(thr_s)} s for "
                                   f"{fm}; the server's histogram leaves out network and gateway time.",
                },
            }
        )
    if not numbers.sla:
        notes.append("no limits JSON found (plan sources.limits, or --limits): no SLA latency or error-budget alerts")
    doc = {"groups": [{"name": "bearing-capacity-recording", "interval": "30s", "rules": rec},
                      {"name": "bearing-capacity-alerts", "rules": alerts}]}
    return doc, notes


def _quantile(stat: str) -> float | None:
    if stat in ("p50", "median"):
        return 0.5
    if stat.startswith("p"):
        try:
            v = float(stat[1:])
        except ValueError:
            return None
        return v / 100.0 if 0 < v < 100 else None
    return None


# --------------------------------------------------------------------------- autoscalers
def _replicas(numbers: PlanNumbers, target: ExportTarget) -> tuple[int, int]:
    lo = target.min_replicas if target.min_replicas is not None else max(1, numbers.min_replicas)
    hi = target.max_replicas if target.max_replicas is not None else max(numbers.max_replicas, lo)
    if hi < lo:
        raise ParameterError(f"max replicas {hi} is below min replicas {lo}")
    return lo, hi


def _cool_down(numbers: PlanNumbers, target: ExportTarget, notes: list[str]) -> int:
    cd = target.cool_down_s if target.cool_down_s is not None else numbers.cool_down_s
    if cd is None:
        raise SchemaError(
            "the plan's elasticity section is not available, so there is no cool-down: pass --cool-down-s",
            path=numbers.plan_path, field="elasticity.cool_down_s",
        )
    if cd > HPA_MAX_STABILIZATION_S:
        notes.append(f"cool-down {cd:g} s capped at {HPA_MAX_STABILIZATION_S} s (autoscaling/v2 maximum)")
        cd = HPA_MAX_STABILIZATION_S
    return int(round(cd))


def _check_target(numbers: PlanNumbers) -> None:
    if numbers.scale_target_rps < 0.001:
        raise ParameterError(
            f"the per-pod target {numbers.scale_target_rps:g} req/s is below 0.001 (1m), the smallest value the "
            "autoscalers can hold; the plan's allowable capacity is too small to autoscale on request rate"
        )


def _floor3(x: float) -> str:
    """``x`` rounded down to 3 decimals, as text without trailing zeros (a KEDA threshold)."""
    text = f"{math.floor(x * 1000 + 1e-9) / 1000:.3f}".rstrip("0").rstrip(".")
    return text or "0"


def _milli(x: float) -> str:
    """A Kubernetes quantity in milli-units, rounded down (the target never exceeds the plan's)."""
    return f"{math.floor(x * 1000 + 1e-9)}m"


def _behavior(cool_down_s: int) -> dict[str, Any]:
    return {
        "scaleDown": {"stabilizationWindowSeconds": cool_down_s,
                      "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]},
        "scaleUp": {"stabilizationWindowSeconds": 0,
                    "policies": [{"type": "Percent", "value": 100, "periodSeconds": 60}]},
    }


def _domain_notes(numbers: PlanNumbers) -> list[str]:
    if numbers.domains_statement is None:
        return []
    spread = ("topologySpreadConstraints with maxSkew 1 on topology.kubernetes.io/zone" if (numbers.zones or 1) > 1
              else f"at most {numbers.replicas_per_node} replicas per node (kubernetes.io/hostname)")
    return [f"replicas from the plan's failure domains (failure_domains): {numbers.domains_statement}; the "
            f"Deployment must spread its pods evenly ({spread}) for the loss to hold"]


def _binding(target: ExportTarget, notes: list[str]):  # noqa: ANN202 - BindingTrigger | None
    """The binding-signal trigger, unless ``--queue-target`` already sets the queue's (the user's number wins)."""
    b = target.binding
    if b is None:
        return None
    if b.signal == "requests_waiting" and target.queue_target is not None:
        notes.append(f"the bottleneck's queue threshold ({b.threshold:.4g}) is not used: --queue-target "
                     f"{target.queue_target:g} sets it")
        return None
    return b


def hpa(numbers: PlanNumbers, target: ExportTarget) -> tuple[dict[str, Any], list[str]]:
    """A Kubernetes HorizontalPodAutoscaler (autoscaling/v2) on a per-pod request-rate metric."""
    notes: list[str] = []
    _check_target(numbers)
    lo, hi = _replicas(numbers, target)
    cd = _cool_down(numbers, target, notes)
    doc = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {
            "name": f"{target.deployment}-bearing",
            "namespace": target.namespace,
            "labels": {"app.kubernetes.io/managed-by": "bearing"},
            "annotations": {
                "bearing/per-instance-allowable-rps": _num(numbers.per_instance_allowable_rps),
                "bearing/target-per-pod-rps": _num(numbers.scale_target_rps),
            },
        },
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target.deployment},
            "minReplicas": lo,
            "maxReplicas": hi,
            "metrics": [
                {
                    "type": "Pods",
                    "pods": {
                        "metric": {"name": target.pods_metric},
                        "target": {"type": "AverageValue", "averageValue": _milli(numbers.scale_target_rps)},
                    },
                }
            ],
            "behavior": _behavior(cd),
        },
    }
    b = _binding(target, notes)
    if b is not None:
        doc["spec"]["metrics"].append({"type": "Pods", "pods": {
            "metric": {"name": b.pods_metric},
            "target": {"type": "AverageValue", "averageValue": _milli(b.threshold)}}})
        notes.append(f"also scales on {b.pods_metric} above {b.threshold:.4g} per pod: {b.evidence}")
    if target.queue_target is not None:
        doc["spec"]["metrics"].append({"type": "Pods", "pods": {
            "metric": {"name": target.queue_metric},
            "target": {"type": "AverageValue", "averageValue": _milli(target.queue_target)}}})
        notes.append(f"also scales on {target.queue_metric} above {target.queue_target:g} waiting per pod "
                     "(--queue-target; the HPA takes the larger replica count of the two metrics)")
    notes += _domain_notes(numbers)
    notes.append(
        f"the HPA reads the per-pod metric {target.pods_metric!r} through the custom-metrics API: with "
        f"prometheus-adapter, a rule with seriesQuery '{REQUESTS_COMPLETED}{{namespace!=\"\",pod!=\"\"}}', "
        f"name as '{target.pods_metric}' and metricsQuery "
        "'sum(rate(<<.Series>>{<<.LabelMatchers>>}[1m])) by (<<.GroupBy>>)'"
    )
    return doc, notes


def keda(numbers: PlanNumbers, target: ExportTarget) -> tuple[dict[str, Any], list[str]]:
    """A KEDA ScaledObject with a Prometheus trigger (AverageValue: the query's value per replica)."""
    notes: list[str] = []
    _check_target(numbers)
    lo, hi = _replicas(numbers, target)
    cd = _cool_down(numbers, target, notes)
    sched = target.schedule
    if sched is not None:
        if target.min_replicas is None:
            lo = sched.floor
        hi = max(hi, lo, *(w.replicas for w in sched.windows))
    doc = {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": f"{target.deployment}-bearing", "namespace": target.namespace,
                     "labels": {"app.kubernetes.io/managed-by": "bearing"}},
        "spec": {
            "scaleTargetRef": {"name": target.deployment},
            "pollingInterval": 15,
            "cooldownPeriod": cd,
            "minReplicaCount": lo,
            "maxReplicaCount": hi,
            "advanced": {"horizontalPodAutoscalerConfig": {"behavior": _behavior(cd)}},
            "triggers": [
                {
                    "type": "prometheus",
                    "metricType": "AverageValue",
                    "metadata": {
                        "serverAddress": target.prometheus_url,
                        "query": f"sum(rate({REQUESTS_COMPLETED}{_sel(target.matchers)}[1m]))",
                        "threshold": _floor3(numbers.scale_target_rps),
                    },
                }
            ],
        },
    }
    b = _binding(target, [])
    if b is not None:
        doc["spec"]["triggers"].append({"type": "prometheus", "metricType": "AverageValue", "metadata": {
            "serverAddress": target.prometheus_url,
            "query": f"sum({b.metric}{_sel(target.matchers)})",
            "threshold": _floor3(b.threshold)}})
        notes.append(f"also scales on sum({b.metric}) above {b.threshold:.4g} per replica: {b.evidence}")
    if target.queue_target is not None:
        doc["spec"]["triggers"].append({"type": "prometheus", "metricType": "AverageValue", "metadata": {
            "serverAddress": target.prometheus_url,
            "query": f"sum(vllm:num_requests_waiting{_sel(target.matchers)})",
            "threshold": _floor3(target.queue_target)}})
        notes.append(f"also scales on waiting requests above {target.queue_target:g} per replica (--queue-target)")
    if sched is not None:
        doc["spec"]["triggers"] += [w.trigger() for w in sched.windows]
        notes.append("scheduled floor from the profile's hour-of-day slots (ceil(hour P95 / per-instance allowable "
                     f"{_num(numbers.per_instance_allowable_rps)} req/s)): {sched.statement()}; minReplicaCount is the "
                     "off-peak floor and the request-rate trigger still scales above the floor")
    notes += _domain_notes(numbers)
    notes.append("KEDA's cooldownPeriod applies only to scaling to zero; the scale-down stabilisation window carries "
                 "the plan's cool-down")
    return doc, notes


# --------------------------------------------------------------------------- rate limits
def _limit_rps(numbers: PlanNumbers, target: ExportTarget) -> float:
    return numbers.per_instance_allowable_rps * target.instances


def token_bucket(rps: float) -> dict[str, Any]:
    """Envoy token bucket refilled at ``rps``: ``k`` tokens every ``k / rps`` seconds (rounded up to whole ms),
    ``k`` the whole requests per second (at least 1), so the interval stays >= 50 ms (Envoy's minimum)."""
    k = max(1, math.floor(rps))
    interval_ms = math.ceil(1000.0 * k / rps - 1e-9)  # rounded up: the refill rate never exceeds ``rps``
    if interval_ms < 50:
        k = math.ceil(rps * 0.05)
        interval_ms = math.ceil(1000.0 * k / rps - 1e-9)
    seconds = interval_ms / 1000.0
    return {"max_tokens": k, "tokens_per_fill": k, "fill_interval": f"{seconds:.3f}s"}


def envoy(numbers: PlanNumbers, target: ExportTarget) -> tuple[dict[str, Any], list[str]]:
    """An Envoy HTTP filter entry (``envoy.filters.http.local_ratelimit``) for ``http_filters``."""
    rps = _limit_rps(numbers, target)
    pct = {"numerator": 100, "denominator": "HUNDRED"}
    doc = {
        "name": "envoy.filters.http.local_ratelimit",
        "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit",
            "stat_prefix": "bearing_local_rate_limit",
            "token_bucket": token_bucket(rps),
            "filter_enabled": {"runtime_key": "bearing_local_rate_limit_enabled", "default_value": dict(pct)},
            "filter_enforced": {"runtime_key": "bearing_local_rate_limit_enforced", "default_value": dict(pct)},
            "response_headers_to_add": [
                {"append_action": "OVERWRITE_IF_EXISTS_OR_ADD",
                 "header": {"key": "x-bearing-rate-limited", "value": "true"}}
            ],
        },
    }
    notes = [f"place the entry in the http_connection_manager's http_filters, before envoy.filters.http.router; "
             f"rate {_num(rps)} req/s for {target.instances} instance(s) behind this Envoy"]
    tenants = _tenants(numbers, notes)
    if tenants:
        doc["typed_config"]["descriptors"] = [
            {"entries": [{"key": "tenant", "value": name}], "token_bucket": token_bucket(q)}
            for name, q in tenants if q > 0]
        notes.append(f"per-tenant limits (the plan's tenants: max-min fair quotas of the fleet's allowable capacity, "
                     f"fleet-wide): add to the route `rate_limits: [{{actions: [{{request_headers: {{header_name: "
                     f"{target.tenant_header}, descriptor_key: tenant}}}}]}}]`; "
                     + ", ".join(f"{n} {_num(q)} req/s" for n, q in tenants))
    return doc, notes


def nginx(numbers: PlanNumbers, target: ExportTarget) -> tuple[dict[str, str], list[str]]:
    """Two include files: the ``limit_req_zone`` (http context) and the ``limit_req`` lines (location)."""
    rps = _limit_rps(numbers, target)
    per_min = math.floor(rps * 60 + 1e-9)
    if per_min < 1:
        raise ParameterError(f"the allowable rate {rps:g} req/s is below nginx's smallest rate, 1 request per minute")
    burst = max(1, math.floor(rps))
    head = "\n".join(f"# {line}" for line in _header(numbers, "nginx limit_req"))
    http = (
        f"{head}\n# include in the http {{}} context. Rate {per_min}r/m = {_num(rps)} req/s x 60, rounded down, for "
        f"{target.instances} instance(s) behind this nginx.\n"
        f"limit_req_zone $server_name zone=bearing_llm:1m rate={per_min}r/m;\n"
    )
    loc = (
        f"{head}\n# include in the location {{}} that proxies to the model server.\n"
        f"limit_req zone=bearing_llm burst={burst} nodelay;\n"
    )
    notes = [f"nginx rate {per_min}r/m (exact allowable {_num(rps * 60)}/min)"]
    var = "$http_" + target.tenant_header.lower().replace("-", "_")
    tenants = _tenants(numbers, notes)
    if tenants:
        http += (f"# per-tenant limits keyed on the {target.tenant_header} header: the plan's max-min fair quotas of "
                 "the fleet's allowable capacity (fleet-wide), rounded down to requests per minute\n")
    for i, (name, q) in enumerate(tenants):
        t_min = math.floor(q * 60 + 1e-9)
        if t_min < 1:
            notes.append(f"tenant {name}: quota {q:g} req/s is below 1 request per minute; not limited separately")
            continue
        http += (f"map {var} $bearing_tenant_{i} {{\n    default \"\";\n    \"{name}\" {var};\n}}\n"
                 f"limit_req_zone $bearing_tenant_{i} zone=bearing_tenant_{i}:1m rate={t_min}r/m;  # {name}\n")
        loc += f"limit_req zone=bearing_tenant_{i} burst={max(1, math.floor(q))} nodelay;\n"
        notes.append(f"tenant {name}: {t_min}r/m (quota {_num(q)} req/s)")
    loc += "limit_req_status 429;\n"
    return {"http": http, "location": loc}, notes


# --------------------------------------------------------------------------- writing
FILE_NAMES = {
    "prometheus": ["prometheus-rules.yaml"],
    "hpa": ["hpa.yaml"],
    "keda": ["keda-scaledobject.yaml"],
    "envoy": ["envoy-local-ratelimit.yaml"],
    "nginx": ["nginx-limit-req-http.conf", "nginx-limit-req-location.conf"],
}


@dataclass(frozen=True)
class WrittenCheck:
    """One written file's validation (:class:`bearing_lib.ops.validate.Check`) with the format it belongs to."""

    format: str | None
    path: str
    validator: str
    ok: bool | None
    output: str


@dataclass
class Written:
    """What :func:`export` wrote: the files per format, the numbers used (``numbers``: the manifest's record of
    them, written as is to ``exports.json``: a JSON edge), and notes."""

    out_dir: str
    files: dict[str, list[str]] = field(default_factory=dict)
    notes: dict[str, list[str]] = field(default_factory=dict)
    numbers: dict[str, Any] = field(default_factory=dict)
    checks: list[WrittenCheck] = field(default_factory=list)
    """With ``check=True``: per file, the validator and whether it passed (``ok`` null: not installed)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _yaml(doc: Any, header: list[str]) -> str:
    lines = "".join(f"# {h}\n" for h in header)
    return lines + yaml.safe_dump(doc, sort_keys=False, width=200, allow_unicode=True)


def export(
    numbers: PlanNumbers, formats: list[str], out_dir: str | Path, target: ExportTarget | None = None, *,
    check: bool = False,
) -> Written:
    """Write the chosen formats into ``out_dir`` (created; existing files of the same names are replaced)
    and ``exports.json``, the manifest of what was written, from which numbers and (``check``) which
    validator passed each file (:mod:`bearing_lib.ops.validate`)."""
    target = target or ExportTarget()
    target.check()
    unknown = [f for f in formats if f not in FORMATS]
    if unknown:
        raise ParameterError(f"unknown export format(s) {unknown}; known: {', '.join(FORMATS)} (or all)")
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ParameterError(f"OUT must be a folder: {out} is a file")
    out.mkdir(parents=True, exist_ok=True)
    w = Written(out_dir=str(out))
    for fmt in formats:
        if fmt == "nginx":
            parts, notes = nginx(numbers, target)
            (out / FILE_NAMES["nginx"][0]).write_text(parts["http"])
            (out / FILE_NAMES["nginx"][1]).write_text(parts["location"])
        else:
            build = {"prometheus": prometheus_rules, "hpa": hpa, "keda": keda, "envoy": envoy}[fmt]
            doc, notes = build(numbers, target)
            title = {"prometheus": "Prometheus recording and alerting rules", "hpa": "Kubernetes HPA",
                     "keda": "KEDA ScaledObject", "envoy": "Envoy local rate limit HTTP filter"}[fmt]
            header = _header(numbers, title) + [f"note: {n}" for n in notes]
            (out / FILE_NAMES[fmt][0]).write_text(_yaml(doc, header))
        w.files[fmt] = [str(out / n) for n in FILE_NAMES[fmt]]
        w.notes[fmt] = notes
    if numbers.bound_note:
        w.notes["limit"] = [numbers.bound_note]
    w.numbers = {
        **{k: v for k, v in asdict(numbers).items() if k != "sla"},
        "sla": [c.text for c in numbers.sla],
        "scale_target_rps": numbers.scale_target_rps,
        "min_replicas": _replicas(numbers, target)[0],
        "max_replicas": _replicas(numbers, target)[1],
        "target": asdict(target),
    }
    if check:
        from bearing_lib.ops.validate import check_written

        fmt_of = {p: f for f, paths in w.files.items() for p in paths}
        w.checks = [WrittenCheck(fmt_of.get(c.path), c.path, c.validator, c.ok, c.output)
                    for c in check_written(w.files)]
    (out / "exports.json").write_text(json.dumps(w.to_dict(), indent=1) + "\n")
    return w
