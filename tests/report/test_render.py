"""The HTML renderer: offline, escaped, one Vega bundle, charts within the row budget.

Inputs are the HAND-MADE contract documents in tests/fixtures/report/ (see its README).
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from markupsafe import escape

from bearing_lib.report.charts import MAX_POINTS, downsample_max, load_curve_chart
from bearing_lib.report.model import CurvePoint, Flag, LoadCurve, PhaseBand, build_report, make_provenance
from bearing_lib.report.render import render_html, vega_bundle, write_report
from tests.factories import summary_doc
from tests.report.conftest import provenance

PAYLOAD = "</script><img src=x onerror=alert(1)>"


@pytest.fixture(scope="module")
def html(request) -> str:
    from tests.report.conftest import hand_made

    m = build_report(limits=hand_made("limits"), profile=hand_made("profile"), plan=hand_made("plan"),
                     previous=hand_made("previous_summary"), provenance=provenance(), name="2026-W48")
    return render_html(m)


def page(html: str) -> str:
    """The page without the inlined Vega bundle (which itself contains HTML snippets)."""
    assert html.count(vega_bundle()) == 1
    return html.replace(vega_bundle(), "")


def test_no_url_anywhere(html):
    assert "http://" not in html
    assert "https://" not in html
    assert "$schema" not in page(html)


def test_vega_bundle_inlined_once_and_nothing_loaded_from_outside(html):
    assert html.count("window.vegaEmbed=") == 1
    assert vega_bundle() in html
    # no external resources of any kind
    assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)=", page(html), re.I)
    assert html.count("<script") == 2 and html.count("</script>") == 2


def test_verdict_and_headline_come_first(html):
    body = page(html)[page(html).index("<body>"):]
    assert body.index('class="badge big b-yellow"') < body.index('id="mixes"')
    assert body.index("the long-context mix binds on P99 TTFT") < body.index('id="mixes"')


def test_generator_meta_carries_provenance(html):
    meta = re.search(r'<meta name="generator" content="([^"]*)">', html).group(1)
    assert meta.startswith("bearing 0.1.0; run ")
    assert "quantiles linear" in meta
    assert "sha256:" + "ab" * 32 in meta


def test_size_is_bundle_plus_a_little(html):
    # The Vega bundle is ~0.9 MB; everything else (CSS, tables, 5 chart specs) stays small.
    extra = len(html.encode()) - len(vega_bundle().encode())
    assert 0 < extra < 200_000


def test_charts_are_passed_as_json_and_parse(html):
    m = re.search(r"var charts = (.*);\n", html)
    charts = json.loads(m.group(1))
    ids = [c["id"] for c in charts]
    assert ids == ["chart-fos", "chart-curve-0", "chart-curve-1", "chart-slots", "chart-cbu"]
    for cid in ids:
        assert f'id="{cid}"' in html
    sub = charts[1]["spec"]["title"]["subtitle"]
    # a series drawn whole says what is drawn, not the row budget ("≤ 5,000 per layer" is no reader's word)
    assert sub == "shaded = phase, red dashed = SLA"
    for c in charts:
        assert c["spec"]["width"] == "container" and c["spec"]["autosize"]["type"] == "fit-x"  # the card's width
        assert c["spec"]["config"]["axis"]["labelFontSize"] >= 12


def _hostile_model(docs):
    docs["limits"]["conditions"]["model"] = PAYLOAD
    docs["limits"]["mixes"][0]["mix"]["name"] = PAYLOAD
    docs["plan"]["fos"]["per_mix"][0]["mix"] = PAYLOAD
    docs["plan"]["verdict_reason"] = "see http://evil.example/x " + PAYLOAD
    findings = [Flag("loader", "warning", "bad_row", "error: " + PAYLOAD)]
    prov = make_provenance(parameters={"note": PAYLOAD},
                           inputs=[{"role": "trace", "path": f"/data/{PAYLOAD}.csv", "sha256": "0" * 64}])
    return build_report(limits=docs["limits"], profile=docs["profile"], plan=docs["plan"], provenance=prov,
                        findings=findings, name="x")


def test_untrusted_strings_cannot_inject(docs):
    full = render_html(_hostile_model(docs))
    out = page(full)
    assert PAYLOAD not in full
    assert "<img" not in out and "onerror=alert(1)>" not in full
    # still only the two script elements of the template
    assert full.count("<script") == 2 and full.count("</script>") == 2
    # shown as text in the page ...
    assert "&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;" in out
    # ... and inside the chart JSON as \u escapes (tojson)
    assert "\\u003c/script\\u003e\\u003cimg src=x onerror=alert(1)\\u003e" in out
    # a URL inside an untrusted string is defanged, not linked
    assert "http://" not in full and "http[:]//evil.example/x" in out


def test_not_available_sections_say_why(docs):
    m = build_report(limits=docs["limits"], profile=None, plan={"available": False, "reason": "no GPU preset"},
                     provenance=provenance())
    text = re.sub(r"<[^>]+>", "", page(render_html(m)))
    assert "FOS and CBU — not available: no GPU preset" in text
    assert "Production profile — not available: no production profile was given to this run" in text
    assert "Capacity plan — not available: no GPU preset" in text
    assert "Scorecards — not available: no GPU preset" in text
    assert "A comparison — not available: no earlier report was found to compare with" in text


def test_downsample_keeps_bucket_maxima():
    rng = np.random.default_rng(7)
    y = rng.exponential(size=12_345)
    rows = [{"x": i, "y": float(v)} for i, v in enumerate(y)]
    out = downsample_max(rows, "y")
    assert len(out) == MAX_POINTS
    edges = [(b * len(y)) // MAX_POINTS for b in range(MAX_POINTS + 1)]
    expected = [float(y[lo:hi].max()) for lo, hi in zip(edges[:-1], edges[1:], strict=True)]
    assert [r["y"] for r in out] == expected
    assert max(r["y"] for r in out) == float(y.max())
    assert downsample_max(rows[:10], "y") == rows[:10]


def test_long_curve_is_downsampled_and_says_so():
    pts = [CurvePoint(float(i), float(i % 97), None, None, "elastic", True, []) for i in range(12_000)]
    curve = LoadCurve("m", None, "ttft_ms_p99", "P99 TTFT (ms)", "ms", "rps", 1000.0, None, None, pts,
                      [PhaseBand("elastic", 0.0, 11_999.0)])
    c = load_curve_chart(curve, 0)
    assert c.n_points == 12_000 and c.n_shown == MAX_POINTS
    # 12,000 points in 5,000 buckets: runs of at most ceil(12000 / 5000) = 3 consecutive points
    assert c.spec["title"]["subtitle"].endswith(
        "5,000 of 12,000 points drawn: the highest of each run of 3 consecutive points kept")
    sizes = [len(layer["data"]["values"]) for layer in c.spec["layer"] if "values" in layer.get("data", {})]
    assert sizes and max(sizes) == MAX_POINTS


def test_peak_chart_downsamples_a_two_week_series_and_draws_capacity_lines(docs):
    # 14 days of minutes (20,160 > 5,000): the peak chart keeps bucket maxima, so the
    # busiest minute survives, and draws the target and allowable lines from the plan.
    rng = np.random.default_rng(3)
    counts = rng.poisson(100, size=14 * 1440).astype(float)
    counts[12_345] = 900.0
    series = [{"minute_start_s": 1_763_942_400 + 60 * i, "requests": c} for i, c in enumerate(counts)]
    m = build_report(limits=docs["limits"], profile=docs["profile"], plan=docs["plan"], provenance=provenance(),
                     per_minute_series=series)
    from bearing_lib.report.charts import report_charts

    peak = next(c for c in report_charts(m) if c.id == "chart-peak")
    assert peak.n_points == 14 * 1440 and peak.n_shown == MAX_POINTS
    line, rules = peak.spec["layer"]
    assert len(line["data"]["values"]) == MAX_POINTS
    assert max(v["rps"] for v in line["data"]["values"]) == 900.0 / 60
    levels = {r["label"]: r["rps"] for r in rules["data"]["values"]}
    assert levels["target (P99 × growth)"] == docs["plan"]["target"]["rps"]
    assert levels["allowable (Q_ult / target FOS)"] == docs["plan"]["allowable_rps"]
    lowest = min(p["q_ult_rps"] for p in docs["plan"]["fos"]["per_mix"])
    assert levels["lowest per-mix Q_ult (completed req/s)"] == lowest
    # legend labels are never truncated into look-alikes ("lowest per-mix Q_ult (completed r…")
    assert rules["encoding"]["color"]["legend"]["labelLimit"] == 0
    assert "20,160 points drawn" in peak.spec["title"]["subtitle"]
    # and it is the first chart of the page, right under the verdict
    html = render_html(m)
    assert page(html).index('id="chart-peak"') < page(html).index('id="mixes"')


def test_write_report_writes_html_and_summary_twins(tmp_path, full_model):
    paths = write_report(full_model, tmp_path / "out")
    summary = json.loads(paths["summary"].read_text(encoding="utf-8"))
    assert summary["headline"]["text"] == full_model.headline.text
    assert str(escape(summary["headline"]["text"])) in paths["html"].read_text(encoding="utf-8")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["report.html", "summary.json"]


# --------------------------------------------------------------------------- every untrusted field, every scheme

# One hostile string per field that reaches the page, each tagged with its field so the
# test can show the field was rendered (as text) and not dropped.
SCHEMES = ("http://", "https://", "ftp://", "file:///", "ws://", "wss://", "s3://", "hxxps://", "HTTPS://")


def _evil(field: str) -> str:
    return f"</script><img src=x onerror=alert('{field}')> {field} https://evil.example/{field} javascript:alert(1)"


def _every_field_hostile(docs):
    lim, plan = docs["limits"], docs["plan"]
    lim["conditions"]["model"] = _evil("model")
    lim["conditions"]["hardware"] = _evil("hardware")
    lim["conditions"]["sources"][0]["path"] = _evil("source-path")
    lim["sla"][0]["text"] = _evil("sla-text")
    lim["mixes"][0]["mix"]["name"] = _evil("mix-name")
    lim["mixes"][0]["run_id"] = _evil("run-id")
    lim["notes"] = [_evil("limits-note")]
    plan["fos"]["per_mix"][0]["mix"] = _evil("mix-name")
    plan["verdict_reason"] = _evil("verdict-reason")
    plan["notes"] = [_evil("plan-note")]
    findings = [Flag("loader", "warning", "bad_row", _evil("error-message"))]
    prov = make_provenance(parameters={"note": _evil("parameter")},
                           inputs=[{"role": "trace", "path": f"/data/{_evil('file-name')}.csv", "sha256": "0" * 64}])
    return build_report(limits=lim, profile=docs["profile"], plan=plan, provenance=prov, findings=findings,
                        name="x")


FIELDS = ("model", "hardware", "source-path", "sla-text", "mix-name", "limits-note", "verdict-reason",
          "error-message", "parameter", "file-name", "plan-note", "run-id")


def test_every_untrusted_field_is_escaped_and_cannot_leave_the_json(docs):
    full = render_html(_every_field_hostile(docs))
    out = page(full)
    # nothing broke out: no new element, still exactly the template's two script elements
    assert "<img" not in out and "onerror=alert('" not in full
    assert full.count("<script") == 2 and full.count("</script>") == 2
    # every field reached the page, as escaped text
    for f in FIELDS:
        assert f"&lt;img src=x onerror=alert(&#39;{f}&#39;)&gt; {f}" in out, f
    # inside the embedded chart JSON the payload is \u-escaped (tojson), so '</script>' cannot close it
    charts = re.search(r"var charts = (.*);\n", full).group(1)
    assert "</" not in charts and "\\u003c/script\\u003e\\u003cimg" in charts
    json.loads(charts)  # still valid JSON
    # the URL and the script scheme are defanged everywhere (page and JSON)
    assert not re.search(r"(?i)\b[a-z][a-z0-9+.-]*://", out)
    assert "javascript:" not in out.lower()
    assert "https[:]//evil.example/model" in out and "javascript[:]alert(1)" in out


@pytest.mark.parametrize("scheme", SCHEMES)
def test_urls_of_every_scheme_are_defanged(docs, scheme):
    docs["limits"]["conditions"]["model"] = f"see {scheme}evil.example/x"
    docs["limits"]["mixes"][0]["mix"]["name"] = f"mix {scheme}evil.example/m"  # also in the chart JSON
    out = page(render_html(build_report(limits=docs["limits"], profile=docs["profile"], plan=docs["plan"],
                                        provenance=provenance(), name="x")))
    assert scheme.lower() not in out.lower()
    fanged = scheme.replace(":", "[:]", 1)
    assert f"see {fanged}evil.example/x" in out


@pytest.mark.parametrize("text, expected", [
    ("https://a.example/x", "https[:]//a.example/x"),
    ("HTTP://A", "HTTP[:]//A"),
    ("ftp://f", "ftp[:]//f"),
    ("file:///etc/passwd", "file[:]///etc/passwd"),
    ("wss://h/s", "wss[:]//h/s"),
    ("git+ssh://h", "git+ssh[:]//h"),
    ("http: //spaced", "http[:] //spaced"),
    ("JavaScript:alert(1)", "JavaScript[:]alert(1)"),
    ("vbscript:msgbox", "vbscript[:]msgbox"),
    ("data:text/html;base64,PHNjcmlwdD4=", "data[:]text/html;base64,PHNjcmlwdD4="),
    ("mailto:a@b.example", "mailto[:]a@b.example"),
    # plain prose with colons is left alone
    ("ttft: 500 ms; data: 3 files; ratio 1:2", "ttft: 500 ms; data: 3 files; ratio 1:2"),
    ("already http[:]//x", "already http[:]//x"),
])
def test_defang_by_hand(text, expected):
    from bearing_lib.report.render import defang

    assert defang(text) == expected


def test_index_page_escapes_headlines_verdicts_and_folder_names(tmp_path):
    from bearing_lib.app.index import write_index

    hostile = _evil("headline")
    (tmp_path / "2026-W10").mkdir()
    (tmp_path / "2026-W10" / "summary.json").write_text(json.dumps(
        summary_doc("2026-W10", headline=hostile, run_time_utc=_evil("run-time"))), encoding="utf-8")
    (tmp_path / "2026-W09").mkdir()  # a verdict outside green/yellow/red/unknown is refused, the value shown escaped
    (tmp_path / "2026-W09" / "summary.json").write_text(json.dumps(
        {**summary_doc("2026-W09"), "verdict": '"><script>alert(1)</script>'}), encoding="utf-8")
    (tmp_path / "2026-W11").mkdir()  # unreadable summary: the error message is shown, escaped
    (tmp_path / "2026-W11" / "summary.json").write_text("{not json <script>", encoding="utf-8")
    failed = tmp_path / "2026-W12.failed-20260101T000000Z"
    failed.mkdir()
    (failed / "<img src=x onerror=alert(1)>.ipynb").write_text("{}", encoding="utf-8")
    html = write_index(tmp_path).read_text(encoding="utf-8")
    assert "<script" not in html and "<img" not in html
    assert "&lt;img src=x onerror=alert(&#39;headline&#39;)&gt; headline" in html
    assert "https[:]//evil.example/headline" in html and "javascript[:]alert(1)" in html
    assert "&lt;img src=x onerror=alert(1)&gt;.ipynb" in html
    assert not re.search(r"(?i)\b[a-z][a-z0-9+.-]*://", html)
