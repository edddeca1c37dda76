"""Altair charts of the report model, as Vega-Lite spec dicts ready for ``tojson``.

Every layer is limited to :data:`MAX_POINTS` rows (Altair's own ``MaxRowsError`` limit);
longer series are downsampled by bucket maxima (peaks are what capacity is judged on,
so they are kept) and the chart subtitle says so in plain words. Specs carry no ``$schema`` and no URL:
the report must open with no network.

Readable at a glance: every chart takes its card's width (``width: "container"``, autosize ``fit-x``),
fonts are 13–16 px (:data:`READABLE_CONFIG`), axis labels that would collide are dropped (Vega's
``labelOverlap`` with a separation), a load sweep spanning ≥ :data:`LOG_SPAN` × is drawn on a log axis,
and the FOS chart carries the tier's band (red below it, green inside, yellow above: over-provisioned).
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
from bearing_lib.plan.fos import CbuResult, TierBands
from bearing_lib.report.compare_section import CHART_ID as COMPARE_CHART_ID
from bearing_lib.report.compare_section import CHART_TITLE, pareto_spec
from bearing_lib.report.defang import defang_tree
from bearing_lib.report.model import LoadCurve, ReportModel, quantile_label
from bearing_lib.report.wording import words as _words
from bearing_lib.traffic.document import SlotBaselines, SlotRow

MAX_POINTS = 5000
LOG_SPAN = 10.0
"""A load sweep whose highest load is at least this many times its lowest is drawn on a log axis."""
HEIGHT = 300
NOTEBOOK_WIDTH = 640
READABLE_CONFIG: dict[str, Any] = {
    "font": "system-ui, -apple-system, Segoe UI, Roboto, sans-serif",
    "axis": {"labelFontSize": 13, "titleFontSize": 14, "titleFontWeight": 600, "labelOverlap": "greedy",
             "labelSeparation": 8, "labelLimit": 260},
    "legend": {"labelFontSize": 13, "titleFontSize": 13, "labelLimit": 0, "symbolSize": 120},
    "title": {"fontSize": 16, "subtitleFontSize": 13, "anchor": "start", "subtitleColor": "#555", "offset": 10},
    "header": {"labelFontSize": 13, "titleFontSize": 14},
}
"""Fonts and axis-label rules shared by every chart of the page."""
TIER_COLORS = {"red": "#c62828", "green": "#2e7d32", "yellow": "#f9a825"}
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
    """The chart's subtitle in a reader's words: what is drawn, and when a long series was thinned, how."""
    if n_shown < n_total:
        s = (f"{n_shown:,} of {n_total:,} points drawn: the highest of each run of "
             f"{math.ceil(n_total / n_shown):,} consecutive points kept")
        return f"{extra} · {s}" if extra else s
    return extra


def fit_to_card(spec: dict[str, Any], height: int | None = None) -> dict[str, Any]:
    """``spec`` drawn at its card's full width with the page's readable fonts (:data:`READABLE_CONFIG`); the
    page applies it to every chart (:func:`bearing_lib.report.render.render_html`).

    A single or layered chart gets ``width: "container"`` and autosize ``fit-x``; a concatenated one keeps
    its widths (Vega-Lite cannot fit those to a container) and only gets the fonts.
    """
    out = dict(spec)
    if not any(k in out for k in ("hconcat", "vconcat", "concat", "facet", "repeat")):
        out["width"] = "container"
        out["autosize"] = {"type": "fit-x", "contains": "padding"}
        if height is not None:
            out["height"] = height
    config = dict(out.get("config") or {})
    for key, val in READABLE_CONFIG.items():
        config[key] = {**val, **config.get(key, {})} if isinstance(val, dict) else config.get(key, val)
    out["config"] = config
    return out


def time_axis(first_s: float, last_s: float) -> tuple[str, str]:
    """``(tick format, title suffix)`` of a UTC time axis from ``first_s`` to ``last_s`` (epoch seconds): within
    one UTC day the ticks are ``HH:MM`` and the date goes into the title, so labels stay short."""
    import datetime as _dt

    a = _dt.datetime.fromtimestamp(first_s, _dt.UTC)
    b = _dt.datetime.fromtimestamp(last_s, _dt.UTC)
    if a.date() == b.date():
        return "%H:%M", f", {a:%Y-%m-%d}"
    if last_s - first_s <= 3 * 86400:
        return "%m-%d %H:%M", ""
    return "%a %m-%d", ""


def log_worthy(values: Sequence[float | None]) -> bool:
    """True when the positive ``values`` span at least :data:`LOG_SPAN` × (and none is ≤ 0)."""
    v = [x for x in values if x is not None and math.isfinite(x)]
    return bool(v) and min(v) > 0 and max(v) / min(v) >= LOG_SPAN


def scrub(spec: dict[str, Any]) -> dict[str, Any]:
    """Drop ``$schema`` (the only URL Altair puts in a spec), defang URLs in the data (untrusted
    mix names, titles), and refuse any URL left."""
    spec = defang_tree({k: v for k, v in spec.items() if k != "$schema"})
    text = json.dumps(spec)
    if "http://" in text or "https://" in text:
        raise ValueError("internal: a chart spec holds a URL; the report must open offline")
    return spec


def load_curve_chart(curve: LoadCurve, idx: int) -> ChartSpec:
    """SLA metric vs offered load: phase bands, 95% CI bars, SLA line, knee and Q_ult rules.

    A sweep whose loads span ≥ :data:`LOG_SPAN` × (a 1–128 concurrency sweep, a 0.5–10 req/s rate sweep) is
    drawn on a log load axis, so the low steps are not crushed into the left edge; phase bands are clipped
    to the drawn range.
    """
    rows = [
        {"load": p.offered_load, "value": p.value, "lo": p.lo, "hi": p.hi, "phase": p.phase or "unknown",
         "valid": "valid" if p.valid else "invalid (" + (", ".join(_words(f) for f in p.flags) or "flagged") + ")"}
        for p in curve.points if p.value is not None
    ]
    shown = downsample_max(rows, "value")
    loads = [r["load"] for r in shown if r["load"] is not None]
    x_log = log_worthy(loads)
    x_title = f"offered load ({curve.offered_load_unit})" + (", log scale" if x_log else "")
    if x_log:
        marks_x = [v for v in (curve.knee, curve.q_ult) if v is not None and math.isfinite(v) and v > 0]
        lo_x, hi_x = min(loads + marks_x) / 1.15, max(loads + marks_x) * 1.15
        x_scale = alt.Scale(type="log", domain=[lo_x, hi_x], nice=False)
    else:
        lo_x = hi_x = None
        x_scale = alt.Undefined
    base = alt.Chart(alt.Data(values=shown))
    layers: list[alt.Chart] = []
    if curve.phase_bands:
        band_rows = [asdict(b) for b in curve.phase_bands]
        if x_log:
            band_rows = [{**b, "lo": max(b["lo"], lo_x), "hi": min(b["hi"], hi_x)} for b in band_rows
                         if b["hi"] > lo_x and b["lo"] < hi_x]
        bands = alt.Chart(alt.Data(values=band_rows)).mark_rect(opacity=0.13).encode(
            x=alt.X("lo:Q", title=x_title, scale=x_scale), x2="hi:Q",
            color=alt.Color("phase:N", title="phase",
                            scale=alt.Scale(domain=list(PHASE_COLORS), range=list(PHASE_COLORS.values()))),
        )
        if band_rows:
            layers.append(bands)
    if any(r["lo"] is not None and r["hi"] is not None for r in shown):
        layers.append(base.transform_filter("datum.lo != null && datum.hi != null").mark_rule(color="#555").encode(
            x=alt.X("load:Q", scale=x_scale), y=alt.Y("lo:Q"), y2="hi:Q"))
    vals = [r["value"] for r in shown if r["value"] is not None]
    # Latency past the knee grows by orders of magnitude: a log axis keeps the SLA line and
    # the elastic part readable (said in the axis title).
    log = bool(vals) and min(vals) > 0 and max(vals) / min(vals) > 20
    y_title = curve.label + (", log scale" if log else "")
    y_scale = alt.Scale(type="log") if log else alt.Undefined
    layers.append(base.mark_line(color="#1f4e79", point=False).encode(
        x=alt.X("load:Q", title=x_title, scale=x_scale), y=alt.Y("value:Q", title=y_title, scale=y_scale)))
    layers.append(base.mark_point(filled=True, size=70, color="#1f4e79").encode(
        x=alt.X("load:Q", scale=x_scale), y="value:Q",
        shape=alt.Shape("valid:N", title="step", legend=alt.Legend(orient="bottom", columns=1)),
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
    if x_log:
        verticals = [v for v in verticals if v["x"] > 0]
    if verticals:
        rules.append(alt.Chart(alt.Data(values=verticals)).mark_rule(size=2).encode(
            x=alt.X("x:Q", scale=x_scale), strokeDash=alt.StrokeDash("label:N", title="marker"),
            tooltip=["label:N", "x:Q"]))
    chart = alt.layer(*layers, *rules).resolve_scale(color="independent", shape="independent").properties(
        title=alt.Title(f"{curve.mix}: {curve.label} vs offered load",
                        subtitle=_subtitle(len(rows), len(shown), "shaded = phase, red dashed = SLA")),
    )
    return ChartSpec(f"chart-curve-{idx}", f"{curve.mix}", _finish(chart, HEIGHT), len(rows), len(shown))


def log_load_axis(spec: dict[str, Any], field_name: str = "offered_load") -> dict[str, Any]:
    """``spec`` (a chart made elsewhere, e.g. the twin's replay) with a log x scale on ``field_name`` when the
    loads in its inline data span ≥ :data:`LOG_SPAN` ×; unchanged otherwise."""
    loads: list[float] = []

    def walk(x: Any) -> None:
        if isinstance(x, dict):
            vals = x.get("values")
            if isinstance(vals, list):
                loads.extend(r[field_name] for r in vals if isinstance(r, dict)
                             and isinstance(r.get(field_name), int | float))
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    walk(spec)
    if not log_worthy(loads):
        return spec
    out = json.loads(json.dumps(spec))

    def mark(x: Any) -> None:
        if isinstance(x, dict):
            enc = x.get("encoding")
            if isinstance(enc, dict) and isinstance(enc.get("x"), dict) and enc["x"].get("field") == field_name:
                enc["x"]["scale"] = {**(enc["x"].get("scale") or {}), "type": "log", "nice": False}
                if isinstance(enc["x"].get("title"), str):
                    enc["x"]["title"] += ", log scale"
            for v in x.values():
                mark(v)
        elif isinstance(x, list):
            for v in x:
                mark(v)

    mark(out)
    return out


def _finish(chart: Any, height: int | None = None) -> dict[str, Any]:
    """An Altair chart as a spec of fixed size (``NOTEBOOK_WIDTH`` × ``height``, for notebooks, which stack
    the specs), with the page's fonts and no URL. :func:`fit_to_card` makes it card-wide in the page."""
    spec = chart.to_dict()
    spec["width"] = NOTEBOOK_WIDTH
    if height is not None:
        spec["height"] = height
    spec["config"] = {**READABLE_CONFIG, **(spec.get("config") or {})}
    return scrub(spec)


def slots_chart(slots: SlotBaselines | None) -> ChartSpec | None:
    """Daily (hour-of-day) or weekly (weekday × hour) profile: P95 rate per slot.

    Reads the profile's ``slots`` (``hour_weekday`` preferred, else ``hour_of_day``): each slot's
    ``p95_rps`` (or, for a hand-written table without it, its first rate given).
    """
    rows_in: list[SlotRow] = []
    if slots is not None:
        for part in (slots.hour_weekday, slots.hour_of_day):
            if part is not None and part.available and part.rows:
                rows_in = part.rows
                break
    if not rows_in or rows_in[0].hour is None:
        return None
    first = rows_in[0]
    vkey = next((k for k in ("p95_rps", "mean_rps", "p50_rps", "max_rps", "baseline_rps")
                 if getattr(first, k) is not None), None)
    if vkey is None:
        return None
    weekly = first.weekday is not None
    names = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    rows = [{"hour": r.hour, "value": getattr(r, vkey), "day": _day_name(r.weekday if weekly else None, names)}
            for r in rows_in]
    shown = downsample_max(rows, "value")
    enc = {"x": alt.X("hour:Q", title="hour of day (UTC)", scale=alt.Scale(domain=[0, 23])),
           "y": alt.Y("value:Q", title=_SLOT_VALUE.get(vkey, vkey.replace("_", " "))),
           "tooltip": ["day:N", "hour:Q", alt.Tooltip("value:Q", format=",.2f")]}
    if weekly:
        enc["color"] = alt.Color("day:N", sort=names, title="weekday")
    title = "Weekly profile" if weekly else "Daily profile"
    chart = alt.Chart(alt.Data(values=shown)).mark_line(point=True).encode(**enc).properties(
        title=alt.Title(title, subtitle=_subtitle(len(rows), len(shown),
                                                  _SLOT_VALUE.get(vkey, vkey.replace("_", " ")) + " per slot")))
    return ChartSpec("chart-slots", title, _finish(chart, 260), len(rows), len(shown))


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
        fmt, day = time_axis(pts[0][0], pts[-1][0])
        x = alt.X("t:T", title=f"{per} (UTC{day})", scale=alt.Scale(type="utc"),
                  axis=alt.Axis(format=fmt))
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
        title=alt.Title("Production load against capacity", subtitle=_subtitle(len(rows), len(shown), sub)))
    return ChartSpec("chart-peak", "Production load against capacity", _finish(chart, HEIGHT), len(rows), len(shown))


_SLOT_VALUE = {"p95_rps": "P95 of the per-minute rate (req/s)", "p99_rps": "P99 of the per-minute rate (req/s)",
               "mean_rps": "mean rate (req/s)", "max_rps": "highest per-minute rate (req/s)"}


def _iso_seconds(text: Any) -> float | None:
    """Epoch seconds of an ISO UTC time string, or None."""
    import datetime as _dt

    try:
        t = _dt.datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None
    return (t if t.tzinfo else t.replace(tzinfo=_dt.UTC)).timestamp()


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
    if x_is_time:
        secs = [_iso_seconds(r["x"]) for r in rows]
        known = [t for t in secs if t is not None]
        fmt, day = time_axis(min(known), max(known)) if known else ("%m-%d %H:%M", "")
        x_enc = alt.X("x:T", title=f"minute (UTC{day})", scale=alt.Scale(type="utc"),
                      axis=alt.Axis(format=fmt))
    else:
        x_enc = alt.X("x:Q", title=x)
    line = alt.Chart(alt.Data(values=shown)).mark_line(color="#1f4e79", point=True).encode(
        x=x_enc, y=alt.Y("y:Q", title=y_title))
    layers: list[alt.Chart] = [line]
    if rule is not None:
        layers.append(alt.Chart(alt.Data(values=[{"y": rule, "label": rule_label}])).mark_rule(
            color="#c62828", strokeDash=[6, 3]).encode(y="y:Q", tooltip=["label:N", "y:Q"]))
    chart = alt.layer(*layers).properties(title=alt.Title(title, subtitle=_subtitle(len(rows), len(shown))))
    return ChartSpec(cid, title, _finish(chart, 260), len(rows), len(shown))


def tier_band_rows(tier: TierBands | None, lo: float, hi: float) -> list[dict[str, Any]]:
    """The tier's FOS band as coloured spans over ``[lo, hi]``: red below ``fos_min`` (below the tier), green
    inside the band, yellow above ``fos_max`` (over-provisioned), as :func:`bearing_lib.plan.fos.verdict`
    colours a FOS value with no CI. Empty spans are left out."""
    if tier is None:
        return []
    edges = [("red", f"below the {tier.name} tier (FOS < {tier.fos_min:g})", lo, tier.fos_min)]
    top = tier.fos_max if tier.fos_max is not None else hi
    edges.append(("green", f"{tier.name} tier band ({tier.describe()})", tier.fos_min, top))
    if tier.fos_max is not None:
        edges.append(("yellow", f"above the band: over-provisioned (FOS > {tier.fos_max:g})", tier.fos_max, hi))
    return [{"colour": c, "band": label, "x": max(a, lo), "x2": min(b, hi)} for c, label, a, b in edges
            if min(b, hi) > max(a, lo)]


def fos_chart(per_mix: list[Any], blended: Estimate | None, tier: TierBands | None = None) -> ChartSpec | None:
    """FOS per mix and blended, with 95% CIs, over the tier's band (red / green / yellow), with a line at 1.

    Each FOS is a dot with its 95% CI and its value written beside it. A bound (``FOS ≥ x`` from a limit
    that never failed, ``FOS < x`` from one that failed at its first step) is a triangle pointing the way
    the truth lies, never a dot. The axis is logarithmic when the values and the band edges span
    ≥ :data:`LOG_SPAN` × (a FOS of 0.15 against a band of 1.5–3), so both ends stay readable.
    """
    def row(mix: str, e: Estimate) -> dict[str, Any]:
        return {"mix": mix, "value": e.value, "lo": None if e.is_bound else e.lo, "hi": None if e.is_bound else e.hi,
                "bound": e.bound, "label": e.text(ci=not e.is_bound, unit=False).replace("95% CI ", "")}

    rows = [row(p.mix, p.fos) for p in per_mix if p.fos is not None and p.fos.value is not None]
    if blended is not None and blended.value is not None:
        rows.append(row("blended", blended))
    if not rows:
        return None
    span = [v for r in rows for v in (r["value"], r["lo"], r["hi"]) if v is not None and v > 0] + [1.0]
    if tier is not None:
        span += [tier.fos_min] + ([tier.fos_max] if tier.fos_max is not None else [tier.fos_min * 1.5])
    log = log_worthy(span) and min(span) > 0
    lo_x, hi_x = (min(span) / 1.4, max(span) * 1.4) if log else (0.0, max(span) * 1.15)
    x_scale = alt.Scale(type="log" if log else "linear", domain=[lo_x, hi_x], nice=False)
    x_title = "factor of safety (Q_ult / target)" + (", log scale" if log else "")
    base = alt.Chart(alt.Data(values=rows))
    y = alt.Y("mix:N", title=None, sort=None, axis=alt.Axis(labelFontWeight=600))
    tip = ["mix:N", alt.Tooltip("label:N", title="FOS")]
    layers: list[Any] = []
    bands = tier_band_rows(tier, lo_x, hi_x)
    if bands:
        layers.append(alt.Chart(alt.Data(values=bands)).mark_rect(opacity=0.16).encode(
            x=alt.X("x:Q", scale=x_scale, title=x_title), x2="x2:Q",
            color=alt.Color("band:N", title="tier band", sort=None,
                            scale=alt.Scale(domain=[b["band"] for b in bands],
                                            range=[TIER_COLORS[b["colour"]] for b in bands]),
                            legend=alt.Legend(orient="bottom", direction="horizontal")),
            tooltip=["band:N"]))
    kinds = {r["bound"] for r in rows}
    if any(r["lo"] is not None and r["hi"] is not None for r in rows):
        layers.append(base.transform_filter("datum.lo != null && datum.hi != null").mark_rule(
            color="#000", size=2).encode(y=y, x=alt.X("lo:Q", scale=x_scale, title=x_title), x2="hi:Q"))
    # only layers that hold data: an empty filtered layer makes Vega warn "Infinite extent"
    if "none" in kinds:
        layers.append(base.transform_filter("datum.bound == 'none'").mark_circle(size=140, color="#1f4e79",
                                                                                  opacity=1).encode(
            y=y, x=alt.X("value:Q", scale=x_scale, title=x_title), tooltip=tip))
    if "lower" in kinds:
        layers.append(base.transform_filter("datum.bound == 'lower'").mark_point(
            shape="triangle-right", size=180, filled=True, color="#1f4e79").encode(
            y=y, x=alt.X("value:Q", scale=x_scale, title=x_title), tooltip=tip))
    if "upper" in kinds:
        layers.append(base.transform_filter("datum.bound == 'upper'").mark_point(
            shape="triangle-left", size=180, filled=True, color="#c62828").encode(
            y=y, x=alt.X("value:Q", scale=x_scale, title=x_title), tooltip=tip))
    layers.append(base.mark_text(align="left", dx=12, dy=-12, fontSize=13).encode(
        y=y, x=alt.X("value:Q", scale=x_scale), text="label:N"))
    layers.append(alt.Chart(alt.Data(values=[{"x": 1.0, "label": "FOS 1 = at the limit"}])).mark_rule(
        color="#c62828", strokeDash=[4, 2], size=2).encode(x=alt.X("x:Q", scale=x_scale), tooltip=["label:N"]))
    what = "dot = FOS, black = 95% CI, ▶ = at least (≥), ◀ = less than (<), red dashed = FOS 1"
    if bands:
        what = f"{what}; shaded = the {tier.name} tier's band" if tier else what
    chart = alt.layer(*layers).resolve_scale(color="independent").properties(
        title=alt.Title("Factor of safety", subtitle=what))
    return ChartSpec("chart-fos", "Factor of safety", _finish(chart, 46 * len(rows) + 40), len(rows), len(rows))


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
        c = fos_chart(fos.per_mix, fos.blended, fos.tier_bands)
        if c:
            out.append(c)
    for i, curve in enumerate(model.curves):
        out.append(load_curve_chart(curve, i))
    tw = model.predicted.data
    if tw is not None and tw.chart_spec:
        n = len(tw.validation_rows)
        out.append(ChartSpec("chart-twin", "The twin's replay of the load test",
                             scrub(log_load_axis(dict(tw.chart_spec))), n, n))
    if prod is not None and not relative:  # no time of day on a relative clock
        c = slots_chart(prod.document.slots)
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


__all__ = ["HEIGHT", "LOG_SPAN", "MAX_POINTS", "NOTEBOOK_WIDTH", "READABLE_CONFIG", "ChartSpec", "cbu_chart",
           "downsample_max", "elapsed_unit", "fit_to_card", "fos_chart", "load_curve_chart", "log_load_axis",
           "log_worthy", "peak_chart", "report_charts", "scrub", "series_chart", "tier_band_rows", "time_axis"]
