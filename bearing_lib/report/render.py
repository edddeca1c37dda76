"""Render a :class:`~bearing_lib.report.model.ReportModel` to one self-contained HTML file.

The page opens with no network: CSS inline, the Vega / Vega-Lite / vega-embed bundle
from ``vl_convert.javascript_bundle()`` inlined once (its few URL string literals are
rewritten, see :func:`vega_bundle`), and each chart a ``<div>`` plus a spec that reaches
JavaScript only through Jinja's ``tojson``. Autoescaping is on for every template, so
untrusted strings (model names, error messages, file names) are text, never markup; any
URL inside them (``http://``, ``https://``, ``ftp://``, any ``scheme://``, and the
``javascript:`` / ``data:`` kind) is defanged to ``http[:]//`` so the file holds no URL
at all (:func:`defang`).
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

from markupsafe import Markup

from bearing_lib.common.files import write_text_atomic
from bearing_lib.report.charts import MAX_POINTS, fit_to_card, report_charts
from bearing_lib.report.defang import defang
from bearing_lib.report.glance import glance
from bearing_lib.report.model import ReportModel
from bearing_lib.report.templating import environment, summary_block_html
from bearing_lib.report.views import flags_view, section_views


@functools.lru_cache(maxsize=1)
def vega_bundle() -> str:
    """The Vega + Vega-Lite + vega-embed JavaScript bundle, made URL-free.

    ``vl_convert.javascript_bundle()`` holds URL string literals: the SVG/XLink/XMLNS
    namespace names (needed at run time, so rebuilt by concatenation: ``"http:/"+"/..."``
    has the same value and no URL text), and the Vega editor, schema and issue links used
    only by the editor actions the report turns off (replaced by plain text). The result
    must not contain ``</script`` (it is inlined into a script element).
    """
    import vl_convert

    js = vl_convert.javascript_bundle()
    js = js.replace('"https://vega.github.io/editor/"', '"#"')
    js = js.replace('"https://vega.github.io/schema/vega/v6.json"', '"schema/vega/v6.json"')
    js = js.replace("https://github.com/vega/vega-lite/issues/2415", "vega-lite issue 2415")
    js = re.sub(r'"(https?):/(/[^"]*)"', r'"\1:/"+"\2"', js)
    if re.search(r"https?://", js) or "</script" in js.lower():
        raise RuntimeError("internal: the Vega bundle still holds a URL or '</script'; update render.vega_bundle")
    return js


def _generator(model: ReportModel) -> str:
    p = model.provenance
    inputs = "; ".join(f"{i.get('role', 'input')}={i.get('path')} sha256:{i.get('sha256')}" for i in p.inputs)
    return f"bearing {p.bearing_version}; run {p.run_time_utc}; quantiles {p.quantile_method}; inputs: {inputs}"


def render_html(model: ReportModel) -> str:
    """The report as one self-contained HTML string (no network needed, no URL inside)."""
    charts = report_charts(model)
    views = section_views(model)
    html = environment().get_template("report.html.j2").render(
        model=model,
        generator=_generator(model),
        charts=[{"id": c.id, "spec": fit_to_card(c.spec)} for c in charts],  # each at its card's width
        chart_meta={c.id: c for c in charts},
        max_points=MAX_POINTS,
        vega_js=Markup(vega_bundle()),
        views=views,
        flag_view=flags_view(model.flags),
        glance=glance(model, target=views.fos.target if views.fos is not None else None),
    )
    return html


def render_summary_html(model: ReportModel) -> str:
    """A short HTML block (verdict + headline) for notebooks' ``_repr_html_``."""
    return summary_block_html(model)


def write_report(model: ReportModel, out_dir: str | Path) -> dict[str, Path]:
    """Write ``report.html`` and ``summary.json`` into ``out_dir`` (each file atomically).

    Returns the two paths. ``out_dir`` is created when missing.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    html_path = out / "report.html"
    json_path = out / "summary.json"
    write_text_atomic(html_path, render_html(model))
    write_text_atomic(json_path, json.dumps(model.to_dict(), indent=1, ensure_ascii=False, allow_nan=False) + "\n")
    return {"html": html_path, "summary": json_path}


__all__ = ["defang", "environment", "render_html", "render_summary_html", "vega_bundle", "write_report"]
