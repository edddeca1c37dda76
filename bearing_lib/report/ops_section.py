"""The report's "Bottleneck and operational settings" section.

Three parts, each said when it cannot be given (never a made-up number):

* **bottleneck at the limit, per mix** (:mod:`bearing_lib.ops.bottleneck`'s documented rules)
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
  (:mod:`bearing_lib.plan.economics`), shown as it is.

:func:`ops_section` returns the :class:`~bearing_lib.report.model.Section` the report model
carries as ``ops``; the template is ``templates/ops_section.html.j2``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bearing_lib.common.errors import BearingError, ParameterError
from bearing_lib.common.files import jsonable, write_text_atomic
from bearing_lib.common.schema import NotAvailable
from bearing_lib.ops.triggers import ScalingTriggers, scaling_triggers
from bearing_lib.report.model import OpsSection, Section
from bearing_lib.report.paths import portable, portable_path
from bearing_lib.traffic.document import ProfileDocument

if TYPE_CHECKING:  # pragma: no cover
    from bearing_lib.limits.result import LimitsResult
    from bearing_lib.ops.exports import PlanNumbers

EXPORTS_DIR = "exports"
HOW_TO_GIVE_METRICS = (
    "give the server metrics of the load test with the report parameter server_metrics "
    "(bearing report -p server_metrics PATH [-p metrics_format inference-perf-prometheus]): a folder of "
    "inference-perf stage_N_prometheus_metrics.json reports, or metrics whose samples carry their load step "
    "(timed vLLM/DCGM scrapes are put in the load test's steps with -p metrics_trace LOADTEST, its per-request "
    "trace)"
)


def load_metrics(path: str | Path, metrics_format: str = "", *, trace: str | Path = "", offset_s: float = 0.0) -> Any:
    """The server metrics at ``path`` (``None`` for an empty path). A folder that is detected as
    inference-perf lifecycle reports is read as its per-stage Prometheus reports. With ``trace``
    (the load test's per-request trace) timed samples are put in the step whose window holds
    them (:func:`bearing_lib.ops.metrics.align_to_steps`; ``offset_s`` is added to the trace's times)."""
    if not str(path):
        return None
    from bearing_lib.loaders import load

    if str(trace):
        from bearing_lib.loaders import load_trace
        from bearing_lib.ops.metrics import align_to_steps, step_windows

        return align_to_steps(load_metrics(path, metrics_format), step_windows(load_trace(trace), offset_s=offset_s))

    ds = load(path, format=metrics_format or None)
    if ds.kind != "metrics" and not metrics_format and str(ds.provenance.format).startswith("inference-perf"):
        ds = load(path, format="inference-perf-prometheus")
    if ds.kind != "metrics":
        raise ParameterError(f"server_metrics: {path} holds {ds.kind} ({ds.provenance.format}), not server metrics; "
                             "name the format with metrics_format")
    return ds


def _limit_steps(limits: LimitsResult | None, metrics_path: str, fmt: str, run: str | None) -> list[dict[str, Any]]:
    from bearing_lib.ops.bottleneck import find_limit_step

    mixes = [m for m in (limits.mixes if limits is not None else []) if not run or m.run_id in (None, run)]
    rows = []
    for m in mixes:
        ls = find_limit_step(limits, run_id=m.run_id, mix=m.name, metrics_path=metrics_path, metrics_format=fmt)
        rows.append({"mix": m.name, "run_id": m.run_id, "limit_step": ls.step, "limit_step_basis": ls.basis})
    if not rows:  # no limits: one row for the whole test, at its first saturated stage if there is one
        ls = find_limit_step(None, metrics_path=metrics_path, metrics_format=fmt)
        rows.append({"mix": "all", "run_id": None, "limit_step": ls.step, "limit_step_basis": ls.basis})
    return rows


def bottleneck_part(metrics: Any, limits: LimitsResult | dict[str, Any] | None, *, metrics_path: str = "",
                    run: str | None = None) -> dict[str, Any]:
    """Per mix: the limit step and the resource that binds there (or why none is named). A limits
    JSON document is validated once (:meth:`LimitsResult.from_dict`)."""
    if isinstance(limits, dict):
        from bearing_lib.limits.result import LimitsResult

        limits = LimitsResult.from_dict(limits, source="limits JSON")
    if metrics is None:
        return {"given": False, "statement": "no server metrics given", "how": HOW_TO_GIVE_METRICS, "rows": []}
    from bearing_lib.ops.bottleneck import bottleneck_at_limit
    from bearing_lib.ops.metrics import step_signals

    table = step_signals(metrics)
    fmt = str(metrics.provenance.format)
    if table.height == 0:
        return {"given": True, "source": metrics_path, "format": fmt, "rows": [],
                "statement": "the server metrics hold no sample with a load step and a known signal: "
                             + HOW_TO_GIVE_METRICS}
    rows = []
    for r in _limit_steps(limits, metrics_path, fmt, run):
        try:
            b = bottleneck_at_limit(table, limit_step=r["limit_step"], run_id=r["run_id"])
        except ParameterError as exc:  # the metrics hold several runs and none is this mix's: said in its row
            rows.append({**r, "resource": None, "statement": str(exc), "rules": []})
            continue
        rows.append({**r, "resource": b.resource, "statement": b.statement,
                     "rules": [dataclasses.asdict(f) for f in b.fired]})
    steps = sorted({int(s) for s in table["step"].to_list()})
    return {"given": True, "source": metrics_path, "format": fmt, "rows": rows,
            "signals": sorted(set(table["signal"].to_list())), "steps": steps,
            "rules_doc": "docs/operations.md (bottleneck rules KV-1, KV-2, MEM-1, CMP-1, CMP-2, UP-1)",
            "statement": "; ".join(f"{r['mix']}: {r['resource'] or 'none named'}" for r in rows)}


def _relative(text: str, folder: Path) -> str:
    """Validator output and manifest paths without the report's absolute folder."""
    return text.replace(str(folder.resolve()) + "/", "").replace(str(folder) + "/", "")


def exports_part(plan_doc: dict[str, Any], limits_doc: dict[str, Any] | None, output_dir: str | Path, *,
                 triggers: Callable[[PlanNumbers], ScalingTriggers] | None = None) -> dict[str, Any]:
    """Write the plan's exports into ``<output_dir>/exports/``, validate them, and list them with
    paths relative to ``output_dir``. ``triggers`` (the plan's numbers → :class:`ScalingTriggers`) adds the
    binding-resource trigger and the cron floors to the HPA/KEDA files; the result's ``"triggers"`` is then
    that object (else why there is none)."""
    from bearing_lib.ops.exports import FILE_NAMES, FORMATS, export, read_plan

    root = Path(output_dir)
    folder = root / EXPORTS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    write_text_atomic(folder / "plan.json", json.dumps(jsonable(plan_doc), indent=1, allow_nan=False) + "\n")
    limits_path = None
    if isinstance(limits_doc, dict) and limits_doc.get("sla"):
        limits_path = folder / "limits.json"
        write_text_atomic(limits_path, json.dumps(jsonable(limits_doc), indent=1, allow_nan=False) + "\n")
    try:
        numbers = read_plan(folder / "plan.json", limits_path=limits_path)
    except BearingError as exc:
        return {"written": False, "reason": f"the plan cannot be exported: {exc}", "files": [],
                "triggers": NotAvailable(f"the plan cannot be exported: {exc}")}
    # the files name their inputs relative to the exports folder (the report folder may move)
    numbers = dataclasses.replace(numbers, plan_path="plan.json",
                                  limits_path="limits.json" if limits_path else numbers.limits_path)
    trig = triggers(numbers) if triggers is not None else None
    target = trig.export_target() if trig is not None else None
    ok_formats, errors = [], {}
    for fmt in FORMATS:  # one format that cannot be written (e.g. a rate below nginx's 1 r/m) does not stop the rest
        try:
            export(numbers, [fmt], folder / ".probe", target, check=False)
            ok_formats.append(fmt)
        except BearingError as exc:
            errors[fmt] = str(exc)
    import shutil

    shutil.rmtree(folder / ".probe", ignore_errors=True)
    w = export(numbers, ok_formats, folder, target, check=True) if ok_formats else None
    checks = {c["path"]: c for c in (w.checks if w else [])}
    files = []
    for fmt in FORMATS:
        if fmt in errors:
            files.append({"format": fmt, "path": None, "validator": None, "ok": False, "verdict": "not written",
                          "output": errors[fmt]})
            continue
        for i, name in enumerate(FILE_NAMES[fmt]):
            full = str(folder / name)
            c = checks.get(full) or (checks.get(str(folder / FILE_NAMES[fmt][0])) if i else None)
            verdict = "passed" if c and c["ok"] else ("FAILED" if c and c["ok"] is False else "not run")
            files.append({"format": fmt, "path": f"{EXPORTS_DIR}/{name}", "validator": c["validator"] if c else None,
                          "ok": c["ok"] if c else None, "verdict": verdict,
                          "output": _relative(c["output"], folder) if c else "no validator for this file"})
    if w is not None:  # the manifest, with paths relative to the exports folder
        manifest = json.loads((folder / "exports.json").read_text())
        text = _relative(json.dumps(manifest, indent=1), folder).replace(f'"{folder}"', '"."')
        write_text_atomic(folder / "exports.json", text + "\n")
    extra = [{"format": "inputs", "path": f"{EXPORTS_DIR}/plan.json", "validator": None, "ok": None,
              "verdict": "input", "output": "the plan JSON the files were computed from (bearing export --plan)"}]
    if limits_path:
        extra.append({"format": "inputs", "path": f"{EXPORTS_DIR}/limits.json", "validator": None, "ok": None,
                      "verdict": "input", "output": "the limits JSON the SLA alerts come from"})
    if w is not None:
        extra.append({"format": "manifest", "path": f"{EXPORTS_DIR}/exports.json", "validator": None, "ok": None,
                      "verdict": "manifest", "output": "what was written, from which numbers, and each check"})
    n_fail = sum(1 for f in files if f["ok"] is False)
    n_not_run = sum(1 for f in files if f["verdict"] == "not run" and f["validator"])
    return {"written": w is not None, "folder": EXPORTS_DIR, "files": files + extra,
            "triggers": trig if trig is not None else NotAvailable("the triggers were not derived"),
            "bound_note": numbers.bound_note,
            "numbers": {"per_instance_allowable_rps": numbers.per_instance_allowable_rps,
                        "scale_target_rps": numbers.scale_target_rps, "min_replicas": numbers.min_replicas,
                        "max_replicas": numbers.max_replicas, "cbu_threshold": numbers.cbu_threshold,
                        "sla": [c.text for c in numbers.sla]},
            "statement": (f"{len(files)} file(s) in {EXPORTS_DIR}/: "
                          f"{sum(1 for f in files if f['ok'])} passed their validator, {n_fail} failed or not "
                          f"written, {n_not_run} not checked (validator missing)"),
            "apply": f"kubectl apply -f {EXPORTS_DIR}/hpa.yaml (or {EXPORTS_DIR}/keda-scaledobject.yaml, not both); "
                     f"add {EXPORTS_DIR}/prometheus-rules.yaml to Prometheus' rule_files"}


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
    ``Unavailable``); ``metrics`` the loaded :class:`ServerMetrics` (:func:`load_metrics`) or None. The
    scaling triggers (:func:`bearing_lib.ops.triggers.scaling_triggers`: rate, binding resource, cron floors
    from the profile's hour slots) go into the exported HPA/KEDA and into ``triggers``."""
    plan = plan_doc if isinstance(plan_doc, dict) and plan_doc.get("available") is not False else None
    limits = limits_doc if isinstance(limits_doc, dict) and limits_doc.get("available") is not False else None
    plan, limits = portable(plan, output_dir), portable(limits, output_dir)  # paths relative to the report
    data: dict[str, Any] = {"bottleneck": bottleneck_part(metrics, limits, metrics_path=metrics_path, run=run)}
    if data["bottleneck"].get("source"):
        data["bottleneck"]["source"] = portable_path(metrics_path, output_dir)[0]
    triggers: ScalingTriggers | NotAvailable
    if plan is None:
        why = getattr(plan_doc, "reason", None) or (plan_doc.get("reason") if isinstance(plan_doc, dict) else None)
        data["exports"] = {"written": False, "reason": f"no capacity plan: {why or 'not built'}", "files": []}
        data["economics"] = None
        triggers = NotAvailable(f"no capacity plan: {why or 'not built'}")
    else:
        prof = _profile(profile_doc)

        def derive(numbers: PlanNumbers) -> ScalingTriggers:
            return scaling_triggers(numbers, profile=prof, metrics=metrics, limits=limits,
                                    metrics_path=metrics_path, run=run)

        data["exports"] = (exports_part(plan, limits, output_dir, triggers=derive) if write_exports else
                           {"written": False, "reason": "exports not written (parameter exports false)", "files": [],
                            "triggers": NotAvailable("exports not written (parameter exports false)")})
        triggers = data["exports"].pop("triggers")
        from bearing_lib.plan.capacity_plan import CapacityPlan
        from bearing_lib.plan.economics import PlanEconomics

        econ = CapacityPlan.from_dict(plan_doc, source="plan JSON").economics  # validated once, then typed
        data["economics"] = econ.to_dict() if isinstance(econ, PlanEconomics) else None  # the plan's JSON form
    return Section(True, data=OpsSection(**jsonable(data), triggers=triggers))


def _profile(profile_doc: Any) -> ProfileDocument | None:
    """The profile JSON as its typed document (None when there is none)."""
    if isinstance(profile_doc, ProfileDocument):
        return profile_doc
    if not isinstance(profile_doc, dict) or profile_doc.get("available") is False:
        return None
    return ProfileDocument.from_dict(profile_doc, source="production profile")


__all__ = ["EXPORTS_DIR", "HOW_TO_GIVE_METRICS", "bottleneck_part", "exports_part", "load_metrics", "ops_section"]
