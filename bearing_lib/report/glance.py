"""The one-screen summary at the top of the report: what a reviewer reads in 30 seconds.

Read from the typed :class:`~bearing_lib.report.model.ReportModel` only: the verdict, the number (the
blended factor of safety) with its 95 % interval, the target it is measured against, the limit that
binds, the plan in one line, and what the test did not cover (load range against the target, traffic
with no limit, limits that are bounds, the twin's extrapolations, unknown GPU memory). It formats; it
computes no new figure.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from bearing_lib.common.format import fmt_number
from bearing_lib.report.model import ReportModel


@dataclass
class GlanceRow:
    """One labelled line of the summary."""

    label: str
    value: str
    note: str = ""


@dataclass
class Glance:
    """The summary: ``rows`` (the number, target, limit, what binds, plan) and ``not_covered`` (one sentence each)."""

    verdict: str
    rows: list[GlanceRow]
    not_covered: list[str] = field(default_factory=list)


def _fos_row(model: ReportModel) -> GlanceRow | None:
    fos = model.fos.data
    if fos is None:
        return None
    band = f"{fos.tier} tier: FOS band {fos.tier_bands.band}" if fos.tier_bands else ""
    if fos.blended is None or fos.blended.value is None:
        return GlanceRow("factor of safety", "not estimable", band)
    return GlanceRow("factor of safety", fos.blended.text(unit=False), band)


def _limit_row(model: ReportModel) -> GlanceRow | None:
    rows = model.mixes.data.rows if model.mixes.data is not None else []
    name = model.headline.binding_mix
    row = next((r for r in rows if r.name == name), None)
    if row is None:
        return None
    est = row.achieved if row.achieved.value is not None else row.q_ult
    basis = "completed" if est is row.achieved else "offered"
    what = f"{row.name}" + (f", binds on {row.binding}" if row.binding else "")
    low = ", a lower bound" if basis == "completed" and row.achieved_lower_bound else ""
    # a completed rate in req/s, as the headline says it (the achieved estimate carries the limits' unit "rps",
    # which the report keeps for offered loads); an offered limit keeps its load's unit
    shown = dataclasses.replace(est, unit="req/s") if basis == "completed" else est
    return GlanceRow("limit that binds", f"Q_ult {shown.text()} {basis}{low}".replace("  ", " "), what)


def _plan_run(model: ReportModel) -> str | None:
    """The run the plan covers when the limits hold several (the mixes joined to a FOS, else the binding mix's
    run); None for a single run or without a plan."""
    rows = model.mixes.data.rows if model.mixes.data is not None else []
    if len({r.run_id for r in rows}) < 2:
        return None
    runs = {r.run_id for r in rows if r.fos is not None}
    if not runs:
        runs = {r.run_id for r in rows if r.name == model.headline.binding_mix}
    return next(iter(runs)) if len(runs) == 1 else None


def _load_range(model: ReportModel) -> str | None:
    """The loads the test ran (all curves of the plan's run) against the target, in one sentence."""
    run = _plan_run(model)
    curves = [c for c in model.curves if run is None or c.run_id == run]
    if not curves:
        return None
    loads = [p.offered_load for c in curves for p in c.points if p.offered_load is not None]
    if not loads:
        return None
    unit = curves[0].offered_load_unit
    lo, hi = min(loads), max(loads)
    span = f"{_n(lo)}–{_n(hi)}" if hi > lo else f"{_n(lo)} only"
    fos = model.fos.data
    if unit in ("rps", "req/s"):
        s = f"The test ran offered loads {span} {unit}"
        if fos is None:
            return s + "."
        t = fos.target.rps
        where = "above the highest load tested" if t > hi else "inside that range"
        return f"{s}; the target {fmt_number(t)} req/s lies {where}."
    s = f"The test ran {unit} {span}, not a request rate"
    if fos is None:
        return s + "."
    return f"{s}: the target {fmt_number(fos.target.rps)} req/s is held against the rate completed at the limit."


def _n(v: float) -> str:
    """A load for people: whole numbers without decimals (a concurrency of 64), others as ``fmt_number``."""
    return f"{v:,.0f}" if float(v).is_integer() else fmt_number(v)


def _not_covered(model: ReportModel) -> list[str]:
    out: list[str] = []
    rng = _load_range(model)
    if rng:
        out.append(rng)
    fos = model.fos.data
    if fos is not None and fos.uncovered:
        parts = ", ".join(f"{k} ({v:.1%})" for k, v in fos.uncovered.items())
        out.append(f"Production traffic with no measured limit: {parts}.")
    if model.mixes.data is not None:
        run = _plan_run(model)  # other runs of the file are in the limits table; the plan covers one
        for r in model.mixes.data.rows:
            if r.censored != "none" and r.q_ult_statement and (run is None or r.run_id == run):
                out.append(f"{r.name}: {r.q_ult_statement} (a bound, not a value).")
        for sk in model.mixes.data.skipped:
            out.append(f"Not fitted: {sk.run_id} · {sk.mix}: {sk.reason}".replace("None · ", ""))
    fid_line = getattr(model.headline, "fidelity_line", None)
    if fid_line:  # the test against production (bearing_lib.fidelity): said once, first among the mix's gaps
        out.append(fid_line)
    tw = model.predicted.data
    if tw is not None:
        ext = [f.split(":", 1)[1].strip() for f in tw.flags if f.startswith("extrapolation:")]
        ext = [e.split(": ")[0] for e in ext]
        if ext:
            out.append("Production's mix lies outside the test: " + "; ".join(ext) + ".")
    plan = model.plan.data
    mem = getattr(plan, "memory", None) if plan is not None else None
    need = getattr(mem, "gpu_memory_needed", None)
    if need is not None:
        # the statement begins "no GPU memory given: ..." (a new user read "GPU memory not given: no GPU memory
        # given", round 22)
        out.append(need.statement[:1].upper() + need.statement[1:])
    return out


def glance(model: ReportModel, target: Any = None) -> Glance:
    """The one-screen summary of ``model``; ``target`` the FOS view's target row (``value``, ``note``:
    :func:`bearing_lib.report.views.section_views`), so the target reads as in its section."""
    rows = [r for r in (_fos_row(model), _limit_row(model)) if r is not None]
    fos = model.fos.data
    if fos is not None:
        if target is not None and getattr(target, "value", None):
            note = str(getattr(target, "note", "") or "")
            basis = fos.target.basis or ""
            if basis and note.endswith(basis):  # how it was computed stays in its section
                note = note[: -len(basis)].rstrip(". ")
            rows.insert(1, GlanceRow("target load", str(target.value), note))
        else:
            rows.insert(1, GlanceRow("target load", f"{fmt_number(fos.target.rps)} req/s", fos.target.basis or ""))
    if model.headline.plan_line:
        rows.append(GlanceRow("plan", model.headline.plan_line.removeprefix("Plan: ")))
    return Glance(model.headline.verdict, rows, _not_covered(model))


__all__ = ["Glance", "GlanceRow", "glance"]
