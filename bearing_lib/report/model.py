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
from dataclasses import asdict, dataclass, field
from typing import Any

from bearing_lib.common.errors import BadValueError
from bearing_lib.common.unavailable import Unavailable

SUMMARY_SCHEMA = "bearing.report.summary/1"
VERDICTS = ("green", "yellow", "red")


@dataclass
class Interval:
    """A value with its 95% confidence interval (``lo``/``hi`` None when not estimable)."""

    value: float | None
    lo: float | None = None
    hi: float | None = None
    unit: str = ""

    def text(self, digits: int = 2) -> str:
        """``"1.63 (95% CI 1.45–1.82)"``; ``"not estimable"`` without a value."""
        if self.value is None:
            return "not estimable"
        unit = f" {self.unit}" if self.unit else ""
        s = f"{_fmt(self.value, digits)}{unit}"
        if self.lo is not None and self.hi is not None:
            s += f" (95% CI {_fmt(self.lo, digits)}–{_fmt(self.hi, digits)})"
        return s


@dataclass
class Headline:
    """The one sentence a reviewer quotes, and the badge beside it."""

    verdict: str  # green | yellow | red | unknown
    text: str
    verdict_reason: str | None = None
    binding_mix: str | None = None
    binding_constraint: str | None = None
    plan_line: str | None = None


@dataclass
class Conditions:
    """What every limit is conditional on (a limit without them is not comparable)."""

    model: str | None
    hardware: str | None
    tool: str | None
    window: str | None
    offered_load_unit: str | None
    sla: list[str]
    sources: list[dict[str, Any]]
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class MixRow:
    """One line of the per-mix table: limit, knee, FOS, what binds."""

    name: str
    run_id: str | None
    description: str
    share: float | None
    n_requests: int | None
    q_ult: Interval
    q_ult_statement: str
    censored: str
    throughput_rps: float | None
    p_critical: Interval | None
    p_critical_note: str | None
    binding: str | None
    fos: Interval | None
    n_steps: int
    n_invalid_steps: int


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
    phase_bands: list[dict[str, Any]]


@dataclass
class Section:
    """A section that is either available (``data``) or not (``reason``)."""

    available: bool
    reason: str | None = None
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class Change:
    """How one number moved since the previous report."""

    item: str
    previous: Interval
    current: Interval | None
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
    conditions: Section
    mixes: Section
    curves: list[LoadCurve]
    curves_section: Section
    production: Section
    fos: Section
    plan: Section
    scorecards: Section
    changes: Section
    flags: list[Flag]
    provenance: ReportProvenance

    @property
    def verdict(self) -> str:
        return self.headline.verdict

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready twin of the HTML (``summary.json``)."""
        d = asdict(self)
        d = {"schema": SUMMARY_SCHEMA, "verdict": self.verdict, **d}
        # Compact forms other reports read back for "what changed".
        d["limits"] = {
            "available": self.mixes.available,
            "mixes": [{"name": r["name"], "q_ult": r["q_ult"]} for r in self.mixes.data.get("rows", [])],
        }
        return _json_safe(d)

    def _repr_html_(self) -> str:  # pragma: no cover - notebook display
        from bearing_lib.report.render import render_summary_html

        return render_summary_html(self)


# --------------------------------------------------------------------------- helpers


def _fmt(v: float | None, digits: int = 2) -> str:
    if v is None:
        return "—"
    if isinstance(v, float) and not math.isfinite(v):
        return "∞" if v > 0 else "−∞"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:,.{digits}f}"


def _json_safe(obj: Any) -> Any:
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {str(k): _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_json_safe(v) for v in obj]
    return obj


def as_float(v: Any, *, finite: bool = False) -> float | None:
    """``v`` as a float, or None when it is missing, a bool or not a number (and, with ``finite``, not finite)."""
    if v is None or isinstance(v, bool):
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if finite and not math.isfinite(f) else f


def _interval(d: Any, unit: str = "") -> Interval | None:
    """``{"value", "ci95": [lo, hi]}`` (or the summary form ``{"value","lo","hi"}``) → Interval."""
    if not isinstance(d, dict) or as_float(d.get("value")) is None:
        return None
    ci = d.get("ci95")
    lo = hi = None
    if isinstance(ci, list | tuple) and len(ci) == 2:
        lo, hi = as_float(ci[0]), as_float(ci[1])
    elif "lo" in d or "hi" in d:
        lo, hi = as_float(d.get("lo")), as_float(d.get("hi"))
    return Interval(as_float(d["value"]), lo, hi, str(d.get("unit") or unit))


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


def _conditions(limits: dict[str, Any] | None, reason: str | None) -> Section:
    if limits is None:
        return Section(False, reason)
    cond = dict(limits.get("conditions") or {})
    sources = [s for s in cond.pop("sources", []) or [] if isinstance(s, dict)]
    tools = sorted({f"{s.get('tool')}{' ' + str(s['tool_version']) if s.get('tool_version') else ''}"
                    for s in sources if s.get("tool")})
    c = Conditions(
        model=_text(cond.pop("model", None)),
        hardware=_text(cond.pop("hardware", None)),
        tool=", ".join(tools) or _text(cond.pop("tool", None)),
        window=_text(cond.pop("window", None) or cond.pop("steady_window", None)),
        offered_load_unit=_text(cond.pop("offered_load_unit", None)),
        sla=[str(c.get("text") or c) if isinstance(c, dict) else str(c) for c in limits.get("sla") or []],
        sources=sources,
        extra={k: v for k, v in cond.items() if v not in (None, [], {})},
    )
    return Section(True, data=asdict(c))


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


def _mix_name(m: dict[str, Any]) -> str:
    mix = m.get("mix") or {}
    return str(mix.get("name") if isinstance(mix, dict) else mix)


def _row_label(m: dict[str, Any], several_runs: bool) -> str:
    run = m.get("run_id")
    return f"{run} · {_mix_name(m)}" if several_runs and run else _mix_name(m)


def _fos_of(entry: dict[str, Any]) -> Interval | None:
    """Per-mix or blended FOS: nested ``{"fos": {"value", "ci95"}}`` (contract §6) or flat."""
    inner = entry.get("fos") if isinstance(entry.get("fos"), dict) else entry
    return _interval(inner)


def _several_runs(limits: dict[str, Any]) -> bool:
    return len({m.get("run_id") for m in limits.get("mixes") or []}) > 1


def _mixes(limits: dict[str, Any] | None, reason: str | None, plan: dict[str, Any] | None,
           plan_run: str | None) -> Section:
    if limits is None:
        return Section(False, reason)
    several = _several_runs(limits)
    fos_by_mix: dict[str, Interval] = {}
    if plan is not None:
        for f in (plan.get("fos") or {}).get("per_mix") or []:
            iv = _fos_of(f)
            if iv is not None and f.get("mix") is not None:
                fos_by_mix[str(f["mix"])] = iv
    names = [_mix_name(m) for m in limits.get("mixes") or []]
    rows = []
    for m in limits.get("mixes") or []:
        name = _mix_name(m)
        mix = m.get("mix") or {}
        q = m.get("q_ult") or {}
        q_iv = _interval(q, str(q.get("unit") or "")) or Interval(None, unit=str(q.get("unit") or ""))
        steps = [s for s in m.get("steps") or [] if isinstance(s, dict)]
        pc = m.get("p_critical")
        # A plan covers one run: join its FOS to that run's mixes (or to a mix name that is unique).
        fos = None
        if name in fos_by_mix and (m.get("run_id") == plan_run if plan_run else names.count(name) == 1):
            fos = fos_by_mix[name]
        rows.append(
            MixRow(
                name=_row_label(m, several),
                run_id=_str(m.get("run_id")),
                description=str(mix.get("description") or "") if isinstance(mix, dict) else "",
                share=as_float(m.get("share")),
                n_requests=int(m["n_requests"]) if as_float(m.get("n_requests")) is not None else None,
                q_ult=q_iv,
                q_ult_statement=str(q.get("statement") or q_iv.text()),
                censored=str(q.get("censored") or "none"),
                throughput_rps=as_float(q.get("throughput_rps")),
                p_critical=_interval(pc, q_iv.unit) if isinstance(pc, dict) else None,
                p_critical_note=_str(pc.get("reason")) if isinstance(pc, dict) and pc.get("value") is None else None,
                binding=constraint_label(m.get("binding")),
                fos=fos,
                n_steps=len(steps),
                n_invalid_steps=sum(1 for s in steps if s.get("valid") is False),
            )
        )
    if not rows:
        return Section(False, "the limits document lists no mixes")
    blended = _interval(limits.get("blended"), rows[0].q_ult.unit)
    return Section(True, data={"rows": [asdict(r) for r in rows],
                               "blended_q_ult": asdict(blended) if blended else None,
                               "skipped": list(limits.get("skipped") or []),
                               "notes": [str(n) for n in limits.get("notes") or []]})


def _curves(limits: dict[str, Any] | None, reason: str | None) -> tuple[list[LoadCurve], Section]:
    if limits is None:
        return [], Section(False, reason)
    latency_clauses = [c for c in limits.get("sla") or [] if isinstance(c, dict)
                       and c.get("kind", "percentile") == "percentile" and c.get("metric") not in (None, "error_rate")]
    unit_load = _text((limits.get("conditions") or {}).get("offered_load_unit")) or "rps"
    several = _several_runs(limits)
    curves: list[LoadCurve] = []
    missing: list[str] = []
    for m in limits.get("mixes") or []:
        name = _row_label(m, several)
        steps = sorted((s for s in m.get("steps") or [] if as_float(s.get("offered_load")) is not None),
                       key=lambda s: float(s["offered_load"]))
        clause = _binding_clause(m.get("binding"), latency_clauses)
        if clause is None or not steps:
            missing.append(f"{name}: {'no steps' if not steps else 'no latency clause in the SLA'}")
            continue
        stem = f"{clause['metric']}_{clause['stat']}"
        text = str(clause.get("text") or "")

        def observed(s: dict[str, Any], stem: str = stem, text: str = text) -> float | None:
            obs = s.get("observed")
            if isinstance(obs, dict) and text in obs:
                return as_float(obs[text])
            return as_float(s.get(stem))

        if not any(observed(s) is not None for s in steps):
            missing.append(f"{name}: no step supports a {constraint_label(clause)} ({text or stem})")
            continue
        points = [
            CurvePoint(
                offered_load=float(s["offered_load"]),
                value=observed(s),
                lo=as_float(s.get(f"{stem}_ci95_lo")),
                hi=as_float(s.get(f"{stem}_ci95_hi")),
                phase=_str(s.get("phase")),
                valid=s.get("valid") is not False,
                flags=[str(f) for f in s.get("flags") or []],
            )
            for s in steps
        ]
        pc = m.get("p_critical") or {}
        curves.append(
            LoadCurve(
                mix=name,
                run_id=_str(m.get("run_id")),
                metric=stem,
                label=f"{constraint_label(clause)} ({clause.get('unit') or ''})".replace(" ()", ""),
                unit=str(clause.get("unit") or ""),
                offered_load_unit=unit_load,
                threshold=as_float(clause.get("threshold")),
                knee=as_float(pc.get("value")) if isinstance(pc, dict) else None,
                q_ult=as_float((m.get("q_ult") or {}).get("value")),
                points=points,
                phase_bands=_phase_bands(points),
            )
        )
    if not curves:
        return [], Section(False, "; ".join(missing) or "no load steps in the limits document")
    return curves, Section(True, data={"missing": missing})


def _binding_clause(binding: Any, clauses: list[dict[str, Any]]) -> dict[str, Any] | None:
    if not clauses:
        return None
    label = constraint_label(binding)
    for c in clauses:
        if label is not None and constraint_label(c) == label:
            return c
    return clauses[0]


def _phase_bands(points: list[CurvePoint]) -> list[dict[str, Any]]:
    """Contiguous runs of one phase as [lo, hi) load bands, split at step midpoints."""
    bands: list[dict[str, Any]] = []
    pts = [p for p in points if p.phase]
    for i, p in enumerate(pts):
        lo = pts[0].offered_load if i == 0 else (pts[i - 1].offered_load + p.offered_load) / 2
        hi = pts[-1].offered_load if i == len(pts) - 1 else (p.offered_load + pts[i + 1].offered_load) / 2
        if bands and bands[-1]["phase"] == p.phase:
            bands[-1]["hi"] = hi
        else:
            bands.append({"phase": p.phase, "lo": lo, "hi": hi})
    return bands


def _production(profile: dict[str, Any] | None, reason: str | None,
                series: list[dict[str, Any]] | None) -> Section:
    if profile is None:
        return Section(False, reason)
    skip = {"bearing_version", "quantile_method", "start_s", "end_s", "parameters", "mix_spec"}
    data: dict[str, Any] = {k: v for k, v in profile.items() if k not in skip}
    data["per_minute_series"] = list(series or [])
    return Section(True, data=data)


def _tier_name(tier: Any) -> str | None:
    if isinstance(tier, dict):
        return _str(tier.get("name"))
    return _str(tier)


def _fos(plan: dict[str, Any] | None, reason: str | None) -> Section:
    if plan is None:
        return Section(False, reason)
    fos = plan.get("fos") or {}
    blended_doc = fos.get("blended") if isinstance(fos.get("blended"), dict) else {}
    blended = _interval(blended_doc)
    per_mix = []
    for f in fos.get("per_mix") or []:
        iv = _fos_of(f)
        inner = f.get("fos") if isinstance(f.get("fos"), dict) else {}
        per_mix.append({"mix": str(f.get("mix")), "fos": asdict(iv) if iv else None,
                        "statement": inner.get("statement") or f.get("statement"),
                        **{k: v for k, v in f.items() if k not in ("mix", "value", "ci95", "fos", "statement")}})
    tier = plan.get("tier")
    return Section(
        True,
        data={
            "tier": _tier_name(tier),
            "tier_bands": tier if isinstance(tier, dict) else None,
            "target": plan.get("target"),
            "blended": asdict(blended) if blended else None,
            "blended_statement": blended_doc.get("statement"),
            "blended_bound": blended_doc.get("bound"),
            "coverage": as_float(blended_doc.get("coverage")),
            "uncovered": blended_doc.get("uncovered") or {},
            "per_mix": per_mix,
            "ci_method": fos.get("ci_method"),
            "verdict": plan.get("verdict"),
            "verdict_reason": plan.get("verdict_reason"),
            "utilisation": as_float(plan.get("utilisation")),
            "breakpoint_rule": plan.get("breakpoint_rule"),
            "allowable_rps": as_float(plan.get("allowable_rps")),
            "allowable_statement": plan.get("allowable_statement"),
            "cbu": plan.get("cbu"),
        },
    )


def _plan(plan: dict[str, Any] | None, reason: str | None) -> Section:
    if plan is None:
        return Section(False, reason)
    data = {k: plan.get(k) for k in ("instances", "elasticity", "memory")}
    if all(v is None for v in data.values()):
        return Section(False, "the plan holds no instances, elasticity or memory sections")
    data["notes"] = [str(n) for n in plan.get("notes") or []]
    return Section(True, data=data)


def _scorecards(plan: dict[str, Any] | None, reason: str | None) -> Section:
    if plan is None:
        return Section(False, reason)
    sc = plan.get("scorecards")
    if not sc:
        return Section(False, "the plan holds no scorecards")
    return Section(True, data={"scorecards": sc})


def quantile_label(q: Any) -> str:
    """``0.99`` → ``"P99"``, ``"p95"`` → ``"P95"``, ``0.999`` → ``"P99.9"``."""
    if isinstance(q, int | float) and not isinstance(q, bool) and 0 < q < 1:
        return f"P{q * 100:.10g}"
    return str(q or "").upper()


def _target_text(plan: dict[str, Any]) -> str:
    t = plan.get("target") or {}
    q = quantile_label(t.get("quantile"))
    rps = as_float(t.get("rps"))
    growth = as_float(t.get("growth"))
    s = f"the {q} per-minute peak" if q else "the target load"
    if rps is not None:
        s += f" of {_fmt(rps)} req/s"
    if growth is not None and abs(growth - 1.0) > 1e-9:
        s += f" (× {growth:g} growth)"
    return s


def _plan_line(plan: dict[str, Any]) -> str | None:
    inst = plan.get("instances")
    parts = []
    if isinstance(inst, dict) and inst.get("available") is not False and as_float(inst.get("total")) is not None:
        s = f"{int(inst['total'])} instances"
        if as_float(inst.get("base")) is not None and as_float(inst.get("buffer")) is not None:
            s += f" ({int(inst['base'])} + {int(inst['buffer'])} buffer)"
        if as_float(inst.get("per_instance_allowable_rps")) is not None:
            s += f" at {_fmt(as_float(inst['per_instance_allowable_rps']))} req/s allowable each"
        parts.append(s)
    el = plan.get("elasticity")
    if isinstance(el, dict) and el.get("recommendation"):
        parts.append(f"scaling: {el['recommendation']}")
    allow = as_float(plan.get("allowable_rps"))
    if allow is not None:
        parts.append(f"allowable capacity {_fmt(allow)} req/s")
    return ("Plan: " + "; ".join(parts) + ".") if parts else None


def _headline(limits: dict[str, Any] | None, limits_reason: str | None,
              plan: dict[str, Any] | None, plan_reason: str | None, mixes: Section) -> Headline:
    rows = mixes.data.get("rows", []) if mixes.available else []
    binding_row = None
    with_fos = [r for r in rows if r["fos"] and r["fos"]["value"] is not None]
    if with_fos:
        binding_row = min(with_fos, key=lambda r: r["fos"]["value"])
    elif rows:
        with_q = [r for r in rows if r["q_ult"]["value"] is not None and r["censored"] == "none"]
        binding_row = min(with_q, key=lambda r: r["q_ult"]["value"]) if with_q else None
    binds = ""
    if binding_row is not None:
        on = f" on {binding_row['binding']}" if binding_row["binding"] else ""
        binds = f"the {binding_row['name']} mix binds{on}"
    b_mix = binding_row["name"] if binding_row else None
    b_con = binding_row["binding"] if binding_row else None
    if plan is None:
        if limits is None:
            text = f"No verdict: neither limits ({limits_reason}) nor a capacity plan ({plan_reason}) are available."
        else:
            text = f"No verdict: the capacity plan is not available ({plan_reason})."
            if binds:
                text += f" Among the measured limits, {binds} (lowest limit)."
        return Headline("unknown", text, None, b_mix, b_con)
    verdict = str(plan.get("verdict") or "unknown")
    if verdict not in VERDICTS:
        verdict = "unknown"
    blended_doc = (plan.get("fos") or {}).get("blended") or {}
    blended = _interval(blended_doc)
    bound = blended_doc.get("bound") if isinstance(blended_doc, dict) else None
    if blended is not None and bound in (None, "none"):
        fos_text = f"the blended FOS is {blended.text()}"
    elif isinstance(blended_doc, dict) and blended_doc.get("statement"):
        fos_text = f"the blended {blended_doc['statement']}"
    else:
        fos_text = "the blended FOS is not estimable"
    text = f"At {_target_text(plan)} {fos_text}: {verdict}"
    text += f"; {binds}." if binds else "."
    return Headline(verdict, text, _str(plan.get("verdict_reason")), b_mix, b_con, _plan_line(plan))


def _changes(previous: Any, mixes: Section, fos: Section) -> Section:
    prev, reason = _split(previous, "previous summary")
    if prev is None:
        return Section(False, reason if previous is not None else "no earlier report was found to compare with")
    items: list[Change] = []
    prev_mixes = {str(m.get("name")): m for m in (prev.get("limits") or {}).get("mixes") or []}
    cur_rows = {r["name"]: r for r in mixes.data.get("rows", [])} if mixes.available else {}
    for name in list(cur_rows) + [n for n in prev_mixes if n not in cur_rows]:
        p = _interval((prev_mixes.get(name) or {}).get("q_ult"))
        if p is None:
            continue
        c_row = cur_rows.get(name)
        c = Interval(**c_row["q_ult"]) if c_row else None
        items.append(_change(f"Q_ult {name}", p, c, "mix not in this report" if c_row is None else ""))
    p_f = _interval(((prev.get("fos") or {}).get("data") or prev.get("fos") or {}).get("blended"))
    c_f = Interval(**fos.data["blended"]) if fos.available and fos.data.get("blended") else None
    if p_f is not None:
        items.append(_change("blended FOS", p_f, c_f, "" if c_f else "no FOS in this report"))
    data = {
        "previous_name": prev.get("name"),
        "previous_run_time_utc": (prev.get("provenance") or {}).get("run_time_utc"),
        "previous_verdict": prev.get("verdict"),
        "items": [asdict(i) for i in items],
    }
    if not items:
        return Section(False, "the previous report holds no limits or FOS to compare with")
    return Section(True, data=data)


def _change(item: str, p: Interval, c: Interval | None, note: str) -> Change:
    if c is None or c.value is None or p.value is None:
        return Change(item, p, c, None, None, None, note or "not measured this time")
    delta = c.value - p.value
    pct = delta / p.value if p.value else None
    sig = None
    if None not in (p.lo, p.hi, c.lo, c.hi):
        sig = bool(c.hi < p.lo or c.lo > p.hi)  # type: ignore[operator]
    if not note:
        note = ("95% CIs do not overlap: a real change" if sig else
                "95% CIs overlap: within measurement noise" if sig is not None else "no CI to judge")
    return Change(item, p, c, delta, pct, sig, note)


def _flags(limits: dict[str, Any] | None, profile: dict[str, Any] | None,
           findings: list[dict[str, Any]] | None) -> list[Flag]:
    out: list[Flag] = []
    for f in findings or []:
        out.append(Flag(str(f.get("source", "loader")), str(f.get("level", "warning")), str(f.get("code", "")),
                        str(f.get("message", ""))))
    if limits is not None:
        several = _several_runs(limits)
        for sk in limits.get("skipped") or []:
            if isinstance(sk, dict):
                out.append(Flag("limits", "info", "mix_skipped",
                                f"{sk.get('run_id', '')} · {sk.get('mix')}: {sk.get('reason')}".lstrip(" ·")))
        for note in limits.get("notes") or []:
            out.append(Flag("limits", "info", "note", str(note)))
        for m in limits.get("mixes") or []:
            name = _row_label(m, several)
            for s in m.get("steps") or []:
                fl = [str(x) for x in s.get("flags") or []]
                if fl or s.get("valid") is False:
                    out.append(Flag(f"limits · {name}", "warning", "step_" + ("invalid" if s.get("valid") is False
                                                                                 else "flagged"),
                                    f"step {s.get('step')} at offered load {s.get('offered_load')}: "
                                    f"{', '.join(fl) or 'marked invalid'}"
                                    + (" (excluded from the fit)" if s.get("valid") is False else "")))
            for note in m.get("notes") or []:
                out.append(Flag(f"limits · {name}", "info", "note", str(note)))
            cens = (m.get("q_ult") or {}).get("censored")
            if cens and cens != "none":
                out.append(Flag(f"limits · {name}", "warning", f"censored_{cens}",
                                str((m.get("q_ult") or {}).get("statement") or cens)))
    if profile is not None:
        for key in ("per_second", "slots", "decomposition", "slo_budget"):
            v = profile.get(key)
            if isinstance(v, dict) and v.get("available") is False:
                out.append(Flag("profile", "info", f"{key}_not_available", str(v.get("reason"))))
    return out


def build_report(
    *,
    limits: dict[str, Any] | Unavailable | None,
    profile: dict[str, Any] | Unavailable | None,
    plan: dict[str, Any] | Unavailable | None,
    provenance: ReportProvenance,
    previous: dict[str, Any] | Unavailable | None = None,
    findings: list[dict[str, Any]] | None = None,
    name: str = "report",
    title: str = "Capacity report",
    plan_run: str | None = None,
    per_minute_series: list[dict[str, Any]] | None = None,
) -> ReportModel:
    """Build the report model from the contract documents.

    Parameters
    ----------
    limits, profile, plan
        The JSON documents (dicts) of ``docs/interfaces.md`` §4-6, or :class:`Unavailable`
        with the reason, or ``None`` when the run was not given one.
    provenance
        Who made the report, from what, with which parameters.
    previous
        The previous report's ``summary.json`` (for "what changed"), if any.
    findings
        Loader/validator findings, dicts with ``source``, ``level``, ``code``, ``message``.
    plan_run
        The load-test run the plan was built for (a plan covers one run); joins the
        plan's per-mix FOS to that run's rows of the limits table.
    per_minute_series
        Production requests per minute, ``[{"minute_start_s", "requests"}]`` (from the
        ``TrafficProfile`` object: the profile JSON does not carry it), for the peak chart.
    """
    lim, lim_reason = _split(limits, "limits document")
    prof, prof_reason = _split(profile, "production profile")
    pl_, plan_reason = _split(plan, "capacity plan")
    mixes = _mixes(lim, lim_reason, pl_, plan_run)
    curves, curves_section = _curves(lim, lim_reason)
    fos = _fos(pl_, plan_reason)
    return ReportModel(
        name=name,
        title=title,
        headline=_headline(lim, lim_reason, pl_, plan_reason, mixes),
        conditions=_conditions(lim, lim_reason),
        mixes=mixes,
        curves=curves,
        curves_section=curves_section,
        production=_production(prof, prof_reason, per_minute_series),
        fos=fos,
        plan=_plan(pl_, plan_reason),
        scorecards=_scorecards(pl_, plan_reason),
        changes=_changes(previous, mixes, fos),
        flags=_flags(lim, prof, findings),
        provenance=provenance,
    )


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
    "Change",
    "Conditions",
    "CurvePoint",
    "Flag",
    "Headline",
    "Interval",
    "LoadCurve",
    "MixRow",
    "ReportModel",
    "ReportProvenance",
    "SUMMARY_SCHEMA",
    "Section",
    "Unavailable",
    "build_report",
    "constraint_label",
    "make_provenance",
    "quantile_label",
]
