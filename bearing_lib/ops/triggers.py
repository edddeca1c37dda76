"""The scaling triggers a plan exports, with the evidence for each threshold.

Three kinds, as the HPA/KEDA files carry them (``ops/exports.py``):

* **request rate** (always): per replica ``CBU threshold × per-instance allowable`` req/s, the allowable
  being the per-instance ``Q_ult`` / the tier's design FOS (the plan's ``instances``);
* **the binding resource** (:mod:`.binding`): with the load test's server metrics, a trigger on the signal
  the bottleneck names (KV cache usage or the waiting queue) at its value at the last step that held the SLA,
  bracketed by the first failing step's; otherwise the reason there is none;
* **scheduled floors** (:mod:`.schedule`): KEDA cron triggers from the profile's hour-of-day slots, only when
  the slots cover all 24 UTC hours (a shorter trace says nothing about the hours it did not see).

:func:`scaling_triggers` gathers them; :meth:`ScalingTriggers.export_target` hands the binding and the
schedule to the exports, so the files and the report show the same thresholds.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bearing_lib.common.errors import BearingError
from bearing_lib.common.schema import NotAvailable
from bearing_lib.common.unavailable import Unavailable
from bearing_lib.ops.schedule import DailySchedule, daily_schedule
from bearing_lib.servers.binding import BindingTrigger

if TYPE_CHECKING:  # pragma: no cover
    from bearing_lib.limits.result import LimitsResult
    from bearing_lib.ops.exports import ExportTarget, PlanNumbers
    from bearing_lib.traffic.document import TrafficProfile


@dataclass(frozen=True)
class RateTrigger:
    """The request-rate trigger: ``per_pod_rps`` = ``cbu_threshold`` × ``per_instance_allowable_rps``."""

    per_pod_rps: float
    cbu_threshold: float
    per_instance_allowable_rps: float
    per_instance_q_ult_rps: float
    evidence: str


@dataclass
class ScalingTriggers:
    """The triggers of the exported autoscalers: the rate, the binding resource's, and the cron floors."""

    rate: RateTrigger
    binding: BindingTrigger | NotAvailable
    schedule: DailySchedule | NotAvailable
    min_replicas: int
    max_replicas: int

    def export_target(self, base: ExportTarget | None = None) -> ExportTarget:
        """``base`` (default: the defaults) with this binding trigger and schedule (where they exist)."""
        from bearing_lib.ops.exports import ExportTarget

        return dataclasses.replace(base or ExportTarget(),
                                   binding=self.binding if isinstance(self.binding, BindingTrigger) else None,
                                   schedule=self.schedule if isinstance(self.schedule, DailySchedule) else None)


def rate_trigger(numbers: PlanNumbers) -> RateTrigger:
    a, q = numbers.per_instance_allowable_rps, numbers.per_instance_q_ult_rps
    return RateTrigger(numbers.scale_target_rps, numbers.cbu_threshold, a, q,
                       f"CBU threshold {numbers.cbu_threshold:g} × per-instance allowable {a:.4g} req/s (per-instance "
                       f"Q_ult {q:.4g} req/s / design FOS {q / a:.3g}) = {numbers.scale_target_rps:.4g} req/s per "
                       "replica")


def schedule_part(doc: TrafficProfile | None, numbers: PlanNumbers) -> DailySchedule | NotAvailable:
    """The daily schedule from the profile's hour-of-day slots, or why there is none."""
    if doc is None:
        return NotAvailable("no production profile")
    hod = doc.slots.hour_of_day if doc.slots is not None else None
    if hod is None or not hod.available:
        return NotAvailable(f"no hour-of-day slots: {hod.reason if hod is not None else 'the profile has none'}")
    if doc.relative:
        return NotAvailable("the profile's clock is relative: its hours are not times of day")
    rates = {int(r.hour): float(r.p95_rps) for r in hod.rows if r.hour is not None and r.p95_rps is not None}
    if len(rates) < 24:
        return NotAvailable(f"the profile's hour-of-day slots cover {len(rates)} of 24 UTC hours: a daily schedule "
                            "needs traffic from every hour of the day")
    return daily_schedule(rates, numbers.per_instance_allowable_rps, zones=numbers.zones,
                          domains_lost=numbers.domains_lost, replicas_per_node=numbers.replicas_per_node,
                          repeated=hod.repeated)


def binding_part(metrics: Any, limits: LimitsResult | None, *, metrics_path: str = "", run: str | None = None,
                 strict: bool = False) -> BindingTrigger | NotAvailable:
    """The trigger on the binding resource from the load test's server metrics (:func:`~.binding.binding_trigger`
    at the plan's limit step, :func:`~.bottleneck.find_limit_step`), or why there is none: the one orchestration
    the report (:func:`scaling_triggers`) and ``bearing export --server-metrics`` share. ``strict`` (the CLI)
    raises a run or mix that cannot be chosen instead of saying it."""
    if metrics is None:
        return NotAvailable("no server metrics given: the autoscalers scale on the request rate only")
    from bearing_lib.servers.binding import binding_trigger
    from bearing_lib.servers.bottleneck import bottleneck_at_limit, find_limit_step
    from bearing_lib.servers.metrics import step_signals

    try:
        found = find_limit_step(limits, run_id=run, metrics_path=metrics_path,
                                metrics_format=str(metrics.provenance.format))
        table = step_signals(metrics)
        trig = binding_trigger(table, bottleneck_at_limit(table, limit_step=found.step, run_id=run))
    except BearingError as exc:
        if strict:
            raise
        return NotAvailable(f"no binding-resource trigger: {exc}")
    return NotAvailable(trig.reason) if isinstance(trig, Unavailable) else trig


def scaling_triggers(numbers: PlanNumbers, *, profile: TrafficProfile | None = None, metrics: Any = None,
                     limits: LimitsResult | None = None, metrics_path: str = "",
                     run: str | None = None) -> ScalingTriggers:
    """The plan's triggers (module docstring); the replica bounds are the KEDA ScaledObject's."""
    from bearing_lib.ops.exports import keda

    t = ScalingTriggers(rate_trigger(numbers), binding_part(metrics, limits, metrics_path=metrics_path, run=run),
                        schedule_part(profile, numbers), 0, 0)
    spec = keda(numbers, t.export_target())[0]["spec"]
    t.min_replicas, t.max_replicas = int(spec["minReplicaCount"]), int(spec["maxReplicaCount"])
    return t


__all__ = ["RateTrigger", "ScalingTriggers", "binding_part", "rate_trigger", "scaling_triggers", "schedule_part"]
