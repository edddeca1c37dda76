"""The report's "Bottleneck and operational settings" section.

Three parts, each said when it cannot be given (never a made-up number):

* **bottleneck at the limit, per mix** (:mod:`bearing_lib.servers.bottleneck`'s documented rules)
  from the server metrics given with the report parameter ``server_metrics`` (a folder of
  inference-perf per-stage Prometheus reports, or any metrics input whose samples carry
  their load step); the limit step of a mix is its first failing step in the limits JSON,
  else (inference-perf) the first stage whose achieved rate fell > 10 % short of the
  requested one; timed samples (vLLM ``/metrics`` or DCGM scrapes) are put in the step whose
  window of the load test's per-request trace (``metrics_trace``) holds them. Without
  metrics: "no server metrics given", and how to give them;
* **operational settings**: the plan exported (:func:`bearing_lib.ops.exports.export`) as
  Prometheus rules, HPA, KEDA, Envoy and nginx into ``<report folder>/exports/`` beside
  ``plan.json`` and ``limits.json`` (the inputs of ``bearing export``), each file checked by
  its validator (:mod:`bearing_lib.ops.validate`; a validator not installed is said as
  "not run", never a pass) and linked with a path relative to the report, so the links hold
  when the report folder is moved;
* **tokens and money, staged plan, KV check**: the plan's ``economics`` section
  (:class:`~bearing_lib.plan.economics.PlanEconomics`), shown as it is.

Each part is typed (:class:`~bearing_lib.servers.limit_bottlenecks.LimitBottlenecks`,
:class:`~bearing_lib.ops.export_report.ExportsReport`, :class:`~bearing_lib.plan.economics.PlanEconomics`); the
JSON documents (plan, limits, profile) are validated once where they enter, in :func:`ops_section`.
:func:`ops_section` returns the :class:`~bearing_lib.report.model.Section` the report model
carries as ``ops``; the template is ``templates/ops_section.html.j2``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bearing_lib.common.errors import BearingError, ParameterError
from bearing_lib.common.files import jsonable, write_text_atomic
from bearing_lib.common.schema import NotAvailable
from bearing_lib.ops.export_report import ExportedFile, ExportsReport, export_report
from bearing_lib.ops.triggers import ScalingTriggers, scaling_triggers
from bearing_lib.report.model import OpsSection, Section
from bearing_lib.report.paths import portable, portable_path
from bearing_lib.servers.limit_bottlenecks import HOW_TO_GIVE_METRICS, LimitBottlenecks, limit_bottlenecks
from bearing_lib.traffic.document import TrafficProfile

if TYPE_CHECKING:  # pragma: no cover
    from bearing_lib.limits.result import LimitsResult
    from bearing_lib.ops.exports import PlanNumbers
    from bearing_lib.plan.capacity_plan import CapacityPlan

EXPORTS_DIR = "exports"


def load_metrics(path: str | Path, metrics_format: str = "", *, trace: str | Path = "", offset_s: float = 0.0) -> Any:
    """The server metrics at ``path`` (``None`` for an empty path). A folder that is detected as
    inference-perf lifecycle reports is read as its per-stage Prometheus reports. With ``trace``
    (the load test's per-request trace) timed samples are put in the step whose window holds
    them (:func:`bearing_lib.servers.metrics.align_to_steps`; ``offset_s`` is added to the trace's times)."""
    if not str(path):
        return None
    from bearing_lib.loaders import load

    if str(trace):
        from bearing_lib.loaders import load_trace
        from bearing_lib.servers.metrics import align_to_steps, step_windows

        return align_to_steps(load_metrics(path, metrics_format), step_windows(load_trace(trace), offset_s=offset_s))

    ds = load(path, format=metrics_format or None)
    if ds.kind != "metrics" and not metrics_format and str(ds.provenance.format).startswith("inference-perf"):
        ds = load(path, format="inference-perf-prometheus")
    if ds.kind != "metrics":
        raise ParameterError(f"server_metrics: {path} holds {ds.kind} ({ds.provenance.format}), not server metrics; "
                             "name the format with metrics_format")
    return ds


def bottleneck_part(metrics: Any, limits: LimitsResult | dict[str, Any] | None, *, metrics_path: str = "",
                    run: str | None = None) -> LimitBottlenecks:
    """Per mix: the limit step and the resource that binds there, or why none is named
    (:func:`bearing_lib.servers.limit_bottlenecks.limit_bottlenecks`; a limits JSON document is validated once)."""
    from bearing_lib.limits.result import LimitsResult

    return limit_bottlenecks(metrics, LimitsResult.coerce(limits, source="limits JSON"), metrics_path=metrics_path,
                             run=run)


def exports_part(plan: CapacityPlan, limits: LimitsResult | None, output_dir: str | Path, *,
                 triggers: Callable[[PlanNumbers], ScalingTriggers] | None = None
                 ) -> tuple[ExportsReport, ScalingTriggers | NotAvailable]:
    """Write the plan's exports into ``<output_dir>/exports/``, validate them, and list them with paths relative
    to ``output_dir`` (:func:`bearing_lib.ops.export_report.export_report`). The plan and limits JSON are written
    beside them (the inputs of ``bearing export``: the JSON edge). ``triggers`` (the plan's numbers →
    :class:`ScalingTriggers`) adds the binding-resource trigger and the cron floors to the HPA/KEDA files and is
    returned with the report (else why there is none)."""
    from bearing_lib.ops.exports import plan_numbers, sla_clauses

    folder = Path(output_dir) / EXPORTS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    write_text_atomic(folder / "plan.json", json.dumps(jsonable(plan.to_dict()), indent=1, allow_nan=False) + "\n")
    inputs = [ExportedFile("inputs", f"{EXPORTS_DIR}/plan.json", None, None, "input",
                           "the plan JSON the files were computed from (bearing export --plan)")]
    with_sla = limits is not None and bool(limits.sla)
    if with_sla:
        write_text_atomic(folder / "limits.json", json.dumps(jsonable(limits.to_dict()), indent=1,  # type: ignore[union-attr]
                                                             allow_nan=False) + "\n")
        inputs.append(ExportedFile("inputs", f"{EXPORTS_DIR}/limits.json", None, None, "input",
                                   "the limits JSON the SLA alerts come from"))
    try:
        # the files name their inputs relative to the exports folder (the report folder may move)
        numbers = plan_numbers(plan, plan_path="plan.json", limits_path="limits.json" if with_sla else None,
                               sla=sla_clauses(limits) if with_sla else ())  # type: ignore[arg-type]
    except BearingError as exc:
        why = f"the plan cannot be exported: {exc}"
        return ExportsReport.not_written(why), NotAvailable(why)
    trig = triggers(numbers) if triggers is not None else None
    report = export_report(numbers, folder, trig.export_target() if trig is not None else None,
                           inputs=tuple(inputs))
    return report, (trig if trig is not None else NotAvailable("the triggers were not derived"))


def ops_section(
    *,
    plan_doc: Any,
    limits_doc: Any,
    output_dir: str | Path,
    metrics: Any = None,
    metrics_path: str = "",
    run: str | None = None,
    write_exports: bool = True,
    profile_doc: Any = None,
) -> Section[OpsSection]:
    """The section (module docstring). ``plan_doc``/``limits_doc``/``profile_doc`` are the JSON documents (or
    ``Unavailable``), each validated once here into its typed result; ``metrics`` the loaded
    :class:`ServerMetrics` (:func:`load_metrics`) or None. The scaling triggers
    (:func:`bearing_lib.ops.triggers.scaling_triggers`: rate, binding resource, cron floors from the profile's
    hour slots) go into the exported HPA/KEDA and into ``triggers``."""
    from bearing_lib.plan.capacity_plan import CapacityPlan
    from bearing_lib.plan.economics import PlanEconomics

    plan_d = plan_doc if isinstance(plan_doc, dict) and plan_doc.get("available") is not False else None
    limits_d = limits_doc if isinstance(limits_doc, dict) and limits_doc.get("available") is not False else None
    plan_d, limits_d = portable(plan_d, output_dir), portable(limits_d, output_dir)  # paths relative to the report
    from bearing_lib.limits.result import LimitsResult

    limits = LimitsResult.coerce(limits_d, source="limits JSON")
    bottleneck = limit_bottlenecks(metrics, limits, metrics_path=metrics_path, run=run)
    if bottleneck.source:
        bottleneck.source = portable_path(metrics_path, output_dir)[0]
    if plan_d is None:
        why = f"no capacity plan: {_reason(plan_doc) or 'not built'}"
        return Section(True, data=OpsSection(bottleneck, ExportsReport.not_written(why), None, NotAvailable(why)))
    plan = CapacityPlan.from_dict(plan_d, source="plan JSON")  # validated once, then typed
    prof = _profile(profile_doc)

    def derive(numbers: PlanNumbers) -> ScalingTriggers:
        return scaling_triggers(numbers, profile=prof, metrics=metrics, limits=limits, metrics_path=metrics_path,
                                run=run)

    if write_exports:
        exports, triggers = exports_part(plan, limits, output_dir, triggers=derive)
    else:
        why = "exports not written (parameter exports false)"
        exports, triggers = ExportsReport.not_written(why), NotAvailable(why)
    econ = plan.economics if isinstance(plan.economics, PlanEconomics) else None
    return Section(True, data=OpsSection(bottleneck, exports, econ, triggers))


def _reason(doc: Any) -> str | None:
    """Why a document is missing: an ``Unavailable``'s reason, or a ``{"available": false}`` document's."""
    why = getattr(doc, "reason", None)
    if why is None and isinstance(doc, dict):
        why = doc.get("reason")
    return why


def _profile(profile_doc: Any) -> TrafficProfile | None:
    """The profile JSON as its typed document (None when there is none)."""
    if isinstance(profile_doc, TrafficProfile):
        return profile_doc
    if not isinstance(profile_doc, dict) or profile_doc.get("available") is False:
        return None
    return TrafficProfile.from_dict(profile_doc, source="production profile")


__all__ = ["EXPORTS_DIR", "HOW_TO_GIVE_METRICS", "bottleneck_part", "exports_part", "load_metrics", "ops_section"]
