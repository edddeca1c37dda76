"""Altair charts of the report model, as Vega-Lite spec dicts ready for ``tojson``.

Every layer is limited to :data:`MAX_POINTS` rows (Altair's own ``MaxRowsError`` limit);
longer series are downsampled by bucket maxima (peaks are what capacity is judged on,
so they are kept) and the chart subtitle says so. Specs carry no ``$schema`` and no URL:
the report must open with no network.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import altair as alt

from bearing_lib.common.estimate import Estimate
from bearing_lib.common.files import jsonable
from bearing_lib.plan.fos import CbuResult
from bearing_lib.report.compare_section import CHART_ID as COMPARE_CHART_ID
from bearing_lib.report.compare_section import CHART_TITLE, pareto_spec
from bearing_lib.report.defang import defang_tree
from bearing_lib.report.model import LoadCurve, ReportModel, quantile_label

MAX_POINTS = 5000
PHASE_COLORS = {"elastic": "#2e7d32", "plastic": "#f9a825", "failure": "#c62828", "unknown": "#9e9e9e"}


@dataclass
class ChartSpec:
    """One chart for the page: a DOM id, a heading, and the Vega-Lite spec."""

    id: str
    title: str
    spec: dict[str, Any]
    n_points: int
    n_shown: int


def downsample_max(rows: Sequence[dict[str, Any]], key: str, limit: int = MAX_POINTS) -> list[dict[str, Any]]:
    """At most ``limit`` rows: split ``rows`` (in order) into ``limit`` buckets, keep each bucket's max ``key``.

    Rows are returned unchanged when there are ``limit`` or fewer. Bucket maxima (not a
    stride) so that the peaks a capacity reviewer looks for survive.
    """
    n = len(rows)
    if n <= limit:
        return list(rows)
    out = []
    for b in range(limit):
        lo, hi = (b * n) // limit, ((b + 1) * n) // limit
        bucket = rows[lo:hi]
        out.append(max(bucket, key=lambda r: -math.inf if r.get(key) is None else r[key]))
    return out


def _subtitle(n_total: int, n_shown: int, extra: str = "") -> str:
    if n_shown < n_total:
        s = f"{n_shown:,} of {n_total:,} points shown: downsampled to ≤ {MAX_POINTS:,} per layer (bucket maxima)"
    else:
        s = f"all {n_total:,} points shown (≤ {MAX_POINTS:,} per layer)"
    return f"{extra} · {s}" if extra else s


def scrub(spec: dict[str, Any]) -> dict[str, Any]:
    """Drop ``$schema`` (the only URL Altair puts in a spec), defang URLs in the data (untrusted
    mix names, titles), and refuse any URL left."""
    spec = defang_tree({k: v for k, v in spec.items() if k != "$schema"})
    text = json.dumps(spec)
    if "http://" in text or "https://" in text:
        raise ValueError("internal: a chart spec holds a URL; the report must open offline")
    return spec


def load_curve_chart(curve: LoadCurve, idx: int) -> ChartSpec:
    """SLA metric vs offered load: phase bands, 95% CI bars, SLA line, knee and Q_ult rules."""
    rows = [
        {"load": p.offered_load, "value": p.value, "lo": p.lo, "hi": p.hi, "phase": p.phase or "unknown",
         "valid": "valid" if p.valid else "invalid (" + (", ".join(p.flags) or "flagged") + ")"}
        for p in curve.points if p.value is not None
    ]
    shown = downsample_max(rows, "value")
    x_title = f"offered load ({curve.offered_load_unit})"
    base = alt.Chart(alt.Data(values=shown))
    layers: list[alt.Chart] = []
    if curve.phase_bands:
        bands = alt.Chart(alt.Data(values=[asdict(b) for b in curve.phase_bands])).mark_rect(opacity=0.13).encode(
            x=alt.X("lo:Q", title=x_title), x2="hi:Q",
            color=alt.Color("phase:N", title="phase",
                            scale=alt.Scale(domain=list(PHASE_COLORS), range=list(PHASE_COLORS.values()))),
        )
        layers.append(bands)
    if any(r["lo"] is not None and r["hi"] is not None for r in shown):
        layers.append(base.transform_filter("datum.lo != null && datum.hi != null").mark_rule(color="#555").encode(
            x="load:Q", y=alt.Y("lo:Q"), y2="hi:Q"))
    vals = [r["value"] for r in shown if r["value"] is not None]
    # Latency past the knee grows by orders of magnitude: a log axis keeps the SLA line and
    # the elastic part readable (said in the axis title).
    log = bool(vals) and min(vals) > 0 and max(vals) / min(vals) > 20
    y_title = curve.label + (" (log scale)" if log else "")
    y_scale = alt.Scale(type="log") if log else alt.Undefined
    layers.append(base.mark_line(color="#1f4e79", point=False).encode(
        x=alt.X("load:Q", title=x_title), y=alt.Y("value:Q", title=y_title, scale=y_scale)))
    layers.append(base.mark_point(filled=True, size=50, color="#1f4e79").encode(
        x="load:Q", y="value:Q",
        shape=alt.Shape("valid:N", title="step"),
        tooltip=[alt.Tooltip("load:Q", title="offered load"), alt.Tooltip("value:Q", title=curve.label, format=",.1f"),
                 alt.Tooltip("lo:Q", title="95% CI lo", format=",.1f"),
                 alt.Tooltip("hi:Q", title="95% CI hi", format=",.1f"), "phase:N", "valid:N"]))
    rules = []
    if curve.threshold is not None:
        rules.append(alt.Chart(alt.Data(values=[{"y": curve.threshold, "label": "SLA"}])).mark_rule(
            color="#c62828", strokeDash=[6, 3], size=2).encode(y="y:Q", tooltip=["label:N", "y:Q"]))
    verticals = []
    if curve.knee is not None:
        verticals.append({"x": curve.knee, "label": "knee (P_critical)"})
    if curve.q_ult is not None and math.isfinite(curve.q_ult):
        verticals.append({"x": curve.q_ult, "label": "Q_ult"})
    if verticals:
        rules.append(alt.Chart(alt.Data(values=verticals)).mark_rule(size=2).encode(
            x="x:Q", strokeDash=alt.StrokeDash("label:N", title="marker"), tooltip=["label:N", "x:Q"]))
    chart = alt.layer(*layers, *rules).resolve_scale(color="independent", shape="independent").properties(
        width=520, height=260,
        title=alt.Title(f"{curve.mix}: {curve.label} vs offered load",
                        subtitle=_subtitle(len(rows), len(shown), "shaded = phase, red dashed = SLA")),
    )
    return ChartSpec(f"chart-curve-{idx}", f"{curve.mix}", scrub(chart.to_dict()), len(rows), len(shown))


def slots_chart(slots: Any) -> ChartSpec | None:
    """Daily (hour-of-day) or weekly (weekday × hour) profile: P95 rate per slot.

    Reads the profile's ``slots`` (``hour_weekday`` preferred, else ``hour_of_day``, each
    ``{"available", "rows": [{"hour", ["weekday"], "p95_rps", ...}]}``), or a plain list of
    slot rows.
    """
    rows_in: list[dict[str, Any]] = []
    if isinstance(slots, dict):
        for key in ("hour_weekday", "hour_of_day"):
            part = slots.get(key)
            if isinstance(part, dict) and part.get("available") and isinstance(part.get("rows"), list):
                rows_in = part["rows"]
                break
    elif isinstance(slots, list):
        rows_in = slots
    if not rows_in or not isinstance(rows_in[0], dict) or "hour" not in rows_in[0]:
        return None
    first = rows_in[0]
    vkey = "p95_rps" if "p95_rps" in first else next(
        (k for k, v in first.items() if k not in ("weekday", "hour", "day") and isinstance(v, int | float)), None)
    if vkey is None:
        return None
    day = "weekday" if "weekday" in first else None
    names = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    rows = [{"hour": r["hour"], "value": r.get(vkey), "day": _day_name(r.get(day) if day else None, names)}
            for r in rows_in]
    shown = downsample_max(rows, "value")
    enc = {"x": alt.X("hour:Q", title="hour of day (UTC)", scale=alt.Scale(domain=[0, 23])),
           "y": alt.Y("value:Q", title=vkey.replace("_", " ")),
           "tooltip": ["day:N", "hour:Q", alt.Tooltip("value:Q", format=",.2f")]}
    if day:
        enc["color"] = alt.Color("day:N", sort=names, title="weekday")
    title = "Weekly profile" if day else "Daily profile"
    chart = alt.Chart(alt.Data(values=shown)).mark_line(point=True).encode(**enc).properties(
        width=520, height=220,
        title=alt.Title(title, subtitle=_subtitle(len(rows), len(shown), f"{vkey} per slot")))
    return ChartSpec("chart-slots", title, scrub(chart.to_dict()), len(rows), len(shown))


def elapsed_unit(span_s: float) -> tuple[float, str]:
    """``(seconds per unit, unit name)`` for an elapsed-time axis spanning ``span_s`` seconds."""
    if span_s <= 3 * 3600:
        return 60.0, "min"
    if span_s <= 3 * 86400:
        return 3600.0, "h"
    return 86400.0, "days"


def peak_chart(series: list[dict[str, Any]], lines: list[dict[str, Any]], *,
               relative: bool = False) -> ChartSpec | None:
    """Production req/s per minute (or per published rate window) against the target, the allowable
    capacity and Q_ult.

    ``series`` rows are ``{"minute_start_s", "requests"}`` (a row may carry ``bin_s``, the
    window length, default 60 s); ``lines`` ``{"label", "rps"}``. With ``relative`` the
    x axis is elapsed time on the trace's own clock (quantitative, no calendar dates);
    else UTC time. This is the chart that answers "is the service safe at its peak".
    """
    import datetime as _dt

    pts = [(float(r["minute_start_s"]), float(r["requests"]) / float(r.get("bin_s") or 60.0))
           for r in series if r.get("minute_start_s") is not None and r.get("requests") is not None]
    if not pts:
        return None
    bin_s = float(series[0].get("bin_s") or 60.0)
    per = "minute" if bin_s == 60 else f"{bin_s:g} s window"
    if relative:
        unit_s, unit = elapsed_unit(pts[-1][0] - pts[0][0])
        rows = [{"t": t / unit_s, "rps": v} for t, v in pts]
        x = alt.X("t:Q", title=f"elapsed time on the trace's clock ({unit} from its start)",
                  scale=alt.Scale(zero=False, nice=False))
        tip_t = alt.Tooltip("t:Q", title=f"elapsed ({unit})", format=",.2f")
        sub = f"requests per {per} ÷ {bin_s:g} · relative clock: no calendar dates"
    else:
        rows = [{"t": _dt.datetime.fromtimestamp(t, _dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "rps": v}
                for t, v in pts]
        x = alt.X("t:T", title=f"{per} (UTC)", scale=alt.Scale(type="utc"), axis=alt.Axis(format="%m-%d %H:%M"))
        tip_t = alt.Tooltip("t:T", format="%Y-%m-%d %H:%M", formatType="utc")
        sub = f"requests per UTC {per} ÷ {bin_s:g}"
    shown = downsample_max(rows, "rps")
    line = alt.Chart(alt.Data(values=shown)).mark_line(color="#1f4e79").encode(
        x=x, y=alt.Y("rps:Q", title=f"requests/s (per-{'minute' if bin_s == 60 else 'window'} mean)"),
        tooltip=[tip_t, alt.Tooltip("rps:Q", format=",.2f")])
    layers: list[Any] = [line]
    marks = [ln for ln in lines if ln.get("rps") is not None and math.isfinite(ln["rps"])]
    if marks:
        layers.append(alt.Chart(alt.Data(values=marks)).mark_rule(size=2).encode(
            y="rps:Q",
            color=alt.Color("label:N", title="level", legend=alt.Legend(labelLimit=0, orient="bottom", columns=1),
                            scale=alt.Scale(domain=[m["label"] for m in marks],
                                            range=["#6a1b9a", "#2e7d32", "#c62828", "#555"][:len(marks)])),
            strokeDash=alt.StrokeDash("label:N", legend=None),
            tooltip=["label:N", alt.Tooltip("rps:Q", format=",.2f")]))
    chart = alt.layer(*layers).properties(
        width=620, height=240,
        title=alt.Title("Production load against capacity", subtitle=_subtitle(len(rows), len(shown), sub)))
    return ChartSpec("chart-peak", "Production load against capacity", scrub(chart.to_dict()), len(rows), len(shown))


def _day_name(v: Any, names: list[str]) -> str:
    if isinstance(v, int) and 0 <= v < 7:
        return names[v]
    return "all days" if v is None else str(v)


def series_chart(series: list[dict[str, Any]], *, x: str, y: str, title: str, y_title: str,
                 cid: str, rule: float | None = None, rule_label: str = "", x_title: str = "") -> ChartSpec | None:
    """A time series (e.g. per-minute requests or CBU), downsampled by bucket maxima.

    String x values are ISO UTC times (a time axis); numbers a quantitative axis titled
    ``x_title`` (elapsed time of a relative clock). Rows whose x or y is missing are left out.
    """
    rows = [{"x": r[x], "y": r[y]} for r in series
            if isinstance(r, dict) and r.get(x) is not None and r.get(y) is not None]
    if not rows:
        return None
    shown = downsample_max(rows, "y")
    x_is_time = isinstance(rows[0]["x"], str)
    x = "minute (UTC)" if x_is_time else (x_title or x)
    x_enc = (alt.X("x:T", title=x, scale=alt.Scale(type="utc"), axis=alt.Axis(format="%m-%d %H:%M"))
             if x_is_time else alt.X("x:Q", title=x))
    line = alt.Chart(alt.Data(values=shown)).mark_line(color="#1f4e79", point=True).encode(
        x=x_enc, y=alt.Y("y:Q", title=y_title))
    layers: list[alt.Chart] = [line]
    if rule is not None:
        layers.append(alt.Chart(alt.Data(values=[{"y": rule, "label": rule_label}])).mark_rule(
            color="#c62828", strokeDash=[6, 3]).encode(y="y:Q", tooltip=["label:N", "y:Q"]))
    chart = alt.layer(*layers).properties(width=520, height=200,
                                          title=alt.Title(title, subtitle=_subtitle(len(rows), len(shown))))
    return ChartSpec(cid, title, scrub(chart.to_dict()), len(rows), len(shown))


def fos_chart(per_mix: list[Any], blended: Estimate | None) -> ChartSpec | None:
    """FOS per mix and blended, with 95% CIs, a marker for bounds and a reference line at 1.

    A bound (``FOS ≥ x`` from a limit that never failed, ``FOS < x`` from one that failed at
    its first step) is drawn as a triangle pointing the way the truth lies, never as a bar.
    """
    def row(mix: str, e: Estimate) -> dict[str, Any]:
        return {"mix": mix, "value": e.value, "lo": None if e.is_bound else e.lo, "hi": None if e.is_bound else e.hi,
                "bound": e.bound, "label": e.text(ci=False)}

    rows = [row(p.mix, p.fos) for p in per_mix if p.fos is not None and p.fos.value is not None]
    if blended is not None and blended.value is not None:
        rows.append(row("blended", blended))
    if not rows:
        return None
    base = alt.Chart(alt.Data(values=rows))
    tip = ["mix:N", alt.Tooltip("label:N", title="FOS"), alt.Tooltip("lo:Q", format=".2f"),
           alt.Tooltip("hi:Q", format=".2f")]
    bars = base.transform_filter("datum.bound == 'none'").mark_bar(color="#1f4e79", opacity=0.8).encode(
        y=alt.Y("mix:N", title=None, sort=None), x=alt.X("value:Q", title="factor of safety (Q_ult / target)"),
        tooltip=tip)
    lower = base.transform_filter("datum.bound == 'lower'").mark_point(
        shape="triangle-right", size=160, filled=True, color="#1f4e79").encode(
        y=alt.Y("mix:N", sort=None), x="value:Q", tooltip=tip)
    upper = base.transform_filter("datum.bound == 'upper'").mark_point(
        shape="triangle-left", size=160, filled=True, color="#c62828").encode(
        y=alt.Y("mix:N", sort=None), x="value:Q", tooltip=tip)
    labels = base.transform_filter("datum.bound != 'none'").mark_text(align="left", dx=10).encode(
        y=alt.Y("mix:N", sort=None), x="value:Q", text="label:N")
    err = base.transform_filter("datum.lo != null && datum.hi != null").mark_rule(color="#000").encode(
        y=alt.Y("mix:N", sort=None), x="lo:Q", x2="hi:Q")
    refs = alt.Chart(alt.Data(values=[{"x": 1.0, "label": "FOS 1 = at the limit"}])).mark_rule(
        color="#c62828", strokeDash=[4, 2]).encode(x="x:Q", tooltip=["label:N"])
    # only layers that hold data: an empty filtered layer makes Vega warn "Infinite extent"
    kinds = {r["bound"] for r in rows}
    layers = [lay for lay, want in ((bars, "none" in kinds), (lower, "lower" in kinds), (upper, "upper" in kinds),
                                    (labels, bool(kinds - {"none"})),
                                    (err, any(r["lo"] is not None and r["hi"] is not None for r in rows)))
              if want]
    chart = alt.layer(*layers, refs).properties(
        width=520, height=28 * len(rows) + 20,
        title=alt.Title("Factor of safety", subtitle=_subtitle(
            len(rows), len(rows), "bars = FOS, black = 95% CI, ▶ = at least (≥), ◀ = less than (<)")))
    return ChartSpec("chart-fos", "Factor of safety", scrub(chart.to_dict()), len(rows), len(rows))


def report_charts(model: ReportModel) -> list[ChartSpec]:
    """Every chart of the report, in page order."""
    out: list[ChartSpec] = []
    prod, fos = model.production.data, model.fos.data
    relative = prod is not None and prod.document.relative
    if prod is not None and prod.per_minute_series:
        lines = []
        if fos is not None:
            t = fos.target  # the plan's Target
            lines.append({"label": f"target ({quantile_label(t.quantile)} × growth)", "rps": t.rps})
            lines.append({"label": "allowable (Q_ult / target FOS)", "rps": fos.allowable_rps})
            q = [p.q_ult.value for p in fos.per_mix if not p.q_ult.is_bound]
            q = [v for v in q if v is not None]
            if q:
                lines.append({"label": "lowest per-mix Q_ult (completed req/s)", "rps": min(q)})
        c = peak_chart([m.to_dict() for m in prod.per_minute_series], lines, relative=relative)
        if c:
            out.append(c)
    if fos is not None:
        c = fos_chart(fos.per_mix, fos.blended)
        if c:
            out.append(c)
    for i, curve in enumerate(model.curves):
        out.append(load_curve_chart(curve, i))
    tw = model.predicted.data
    if tw is not None and tw.chart_spec:
        n = len(tw.validation_rows)
        out.append(ChartSpec("chart-twin", "The twin's replay of the load test", scrub(dict(tw.chart_spec)), n, n))
    if prod is not None and not relative:  # no time of day on a relative clock
        c = slots_chart(prod.profile_json.get("slots"))
        if c:
            out.append(c)
    if fos is not None:
        cbu = fos.cbu  # the plan's CbuResult, or NotAvailable
        above = jsonable(cbu.minutes_above) if isinstance(cbu, CbuResult) else None
        if above:
            c = cbu_chart(above, threshold=cbu.threshold, relative=relative)
            if c:
                out.append(c)
    pareto = pareto_spec(model.compare.data)
    if pareto is not None:
        out.append(ChartSpec(COMPARE_CHART_ID, CHART_TITLE, scrub(pareto[0]), pareto[1], pareto[1]))
    return out


def cbu_chart(minutes: list[dict[str, Any]], *, threshold: float, relative: bool) -> ChartSpec | None:
    """CBU in the minutes above the threshold. The plan labels a minute with its ISO UTC time (wall
    clock) or its start in seconds on the trace's clock (relative clock): the latter is drawn on an
    elapsed-time axis, never as a string on a time axis (which Vega cannot place: a blank chart and
    "Infinite extent")."""
    def secs(m: Any) -> float | None:
        try:
            return float(m)
        except (TypeError, ValueError):
            return None

    if relative or all(secs(r.get("minute")) is not None for r in minutes):
        ts = [secs(r.get("minute")) for r in minutes]
        known = [t for t in ts if t is not None]
        if not known:
            return None
        unit_s, unit = elapsed_unit(max(known) - min(known))
        rows = [{"x": t / unit_s, "y": _num(r.get("cbu"))} for t, r in zip(ts, minutes, strict=True) if t is not None]
        x_title = f"elapsed time on the trace's clock ({unit} from its start)"
    else:
        rows = [{"x": str(r.get("minute")), "y": _num(r.get("cbu"))} for r in minutes]
        x_title = ""
    return series_chart(rows, x="x", y="y", title="CBU in the minutes above the threshold",
                        y_title="CBU (throughput / allowable)", cid="chart-cbu", rule=threshold,
                        rule_label="scale-out line", x_title=x_title)


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


__all__ = ["MAX_POINTS", "ChartSpec", "cbu_chart", "downsample_max", "elapsed_unit", "load_curve_chart",
           "peak_chart", "report_charts", "scrub", "series_chart"]
