"""The comparison as one self-contained HTML page: the answer, the table, the pairs, the Pareto chart.

One file that opens with no network: CSS inline, the Vega bundle inlined once
(``vl_convert.javascript_bundle()``), the chart's spec reaching JavaScript only through Jinja's
``tojson`` (which escapes ``</script>``); every other text is autoescaped (model names and paths
are untrusted). The report's typed sections are built elsewhere; this page is what
``bearing compare --html`` writes until the report takes the section over.
"""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

from bearing_lib.compare.result import Comparison

_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="generator" content="bearing {{ version }}">
<title>bearing compare</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;max-width:1200px}
.wide{overflow-x:auto}table{border-collapse:collapse;margin:1em 0;font-size:.85em}
td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;
vertical-align:top}th{background:#f4f4f4}.answer{font-size:1.1em;background:#eef6ee;padding:.6em;border-radius:4px}
.note{color:#555;font-size:.9em}
</style>
<script>{{ bundle }}</script>
</head><body>
<h1>Which deployment should we run?</h1>
<p class="note">bearing {{ version }}, written {{ written }} UTC; inputs and their hashes under Notes</p>
{% for line in c.answer %}<p class="answer">{{ line }}</p>{% endfor %}
<div class="wide">{{ table }}</div>
<h2>Differences</h2>
<ul>{% for p in c.pairs %}<li>{{ p.statement }}{% if p.limit_ratio %} <span class="note">(per-instance
limit ratio {{ '%.3g' % p.limit_ratio.value }}, 95% CI {{ '%.3g' % p.limit_ratio.ci95[0] }}–{{
'%.3g' % p.limit_ratio.ci95[1] }}; {{ p.limit_ratio.method }})</span>{% endif %}</li>{% endfor %}</ul>
<h2>Throughput per GPU vs per user</h2>
<div id="pareto"></div>
<script>vegaEmbed("#pareto", {{ spec|tojson }}, {"actions": false});</script>
<h2>Notes</h2>
<ul>{% for n in c.notes %}<li class="note">{{ n }}</li>{% endfor %}
{% for d in c.deployments %}{% for n in d.notes %}<li class="note">{{ d.name }}: {{ n }}</li>{% endfor %}
<li class="note">{{ d.name }}: uncertainty from {{ d.uncertainty }}</li>{% endfor %}</ul>
</body></html>
"""


def page_html(c: Comparison, *, bundle: str | None = None) -> str:
    """The self-contained page; ``bundle`` is the Vega JavaScript (default: vl-convert's, inlined)."""
    import jinja2

    from bearing_lib.common.version import __version__
    from bearing_lib.compare.chart import pareto_chart

    if bundle is None:
        import vl_convert

        bundle = vl_convert.javascript_bundle()
    env = jinja2.Environment(autoescape=True)
    spec: dict[str, Any] = pareto_chart(c).to_dict()
    return env.from_string(_PAGE).render(c=c, table=jinja2.utils.markupsafe.Markup(c.table_html()),
                                         spec=spec, bundle=jinja2.utils.markupsafe.Markup(bundle),
                                         version=__version__,
                                         written=datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M"))


def write_page(c: Comparison, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page_html(c), encoding="utf-8")
    return path


__all__ = ["page_html", "write_page"]
