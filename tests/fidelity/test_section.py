"""The fidelity section of the report: built from a limits document (its load test loaded again from its
sources), rendered, written into summary.json and read back by ReportSummary; the headline line; the
"traffic covered by limits" row. The load test and production are the bundled LMBenchmark short_input run
and the Azure 2023 code trace; the expected figures are read from the raw files here."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from bearing_lib.loaders import load
from bearing_lib.report.fidelity_section import fidelity_section
from bearing_lib.report.model import build_report
from bearing_lib.report.render import render_html, write_report
from bearing_lib.report.summary import ReportSummary
from tests.report.conftest import hand_made, provenance

ROOT = Path(__file__).resolve().parents[2]
LMB = ROOT / "data/loadtests/lmbenchmark-llm-d-exp2/llm-d-70b-2replicas"
AZ_CODE = ROOT / "data/traces/azure-llm-inference-2023/AzureLLMInferenceTrace_code.csv"


@pytest.fixture(scope="module")
def section():
    limits = hand_made("limits")  # its steps complete 0.5-7 req/s; its SLA's latency threshold is 1 s
    limits["conditions"]["sources"][0].update(path=str(LMB), format="lmbench-csv")  # what bearing limits writes
    return fidelity_section(limits_doc=limits, production=load(AZ_CODE), traffic=None,
                            run="llm-d-70b-2replicas/short_input", production_source="AzureLLMInferenceTrace_code.csv")


def test_section_holds_the_raw_figures(section):
    assert section.available, section.reason
    fid = section.data
    raw = pl.read_csv(AZ_CODE)
    p50 = float(np.quantile(raw["ContextTokens"].to_numpy().astype(float), 0.5, method="linear"))
    assert fid.dimension("input_tokens").production.p50 == p50 == 1469.0
    assert fid.dimension("burstiness").extra.time_scale_s == 1.0  # from the SLA's "<= 1000 ms"
    assert fid.dimension("rate").verdict == "unknown"  # no profile given: production's peak is not known
    assert fid.verdict == "differs"


def test_production_peak_is_the_profile_target():
    # the rate dimension holds the profile's target against the tested rates: P99 of the per-minute counts of the
    # code trace (complete UTC minutes, empty ones 0), counted here from the raw CSV
    from bearing_lib.traffic.profile import profile_traffic

    limits = hand_made("limits")
    limits["conditions"]["sources"][0].update(path=str(LMB), format="lmbench-csv")
    prod = load(AZ_CODE)
    raw = pl.read_csv(AZ_CODE).select(pl.col("TIMESTAMP").str.to_datetime(time_zone="UTC"))
    t = raw["TIMESTAMP"].dt.epoch("ns").to_numpy() / 1e9
    first, last = np.floor(t.min() / 60) + 1, np.floor(t.max() / 60)  # the partial first and last minutes left out
    minute = np.floor(t / 60)
    counts = np.bincount((minute[(minute >= first) & (minute < last)] - first).astype(int),
                         minlength=int(last - first))
    p99 = float(np.quantile(counts, 0.99, method="linear")) / 60.0
    sec = fidelity_section(limits_doc=limits, production=prod, traffic=profile_traffic(prod, n_boot=0),
                           run="llm-d-70b-2replicas/short_input", production_source="code.csv")
    rate = sec.data.dimension("rate")
    assert rate.production.peak_rps == pytest.approx(p99, rel=1e-9)
    assert rate.production.basis.startswith("the target load: Q_target = P99") and rate.verdict != "unknown"


def test_rendered_section_headline_and_summary(section, tmp_path):
    docs = {n: hand_made(n) for n in ("limits", "profile", "plan")}
    import altair as alt

    from bearing_lib.common.estimate import Estimate
    from bearing_lib.twin.section import TwinSection

    twin = TwinSection(title="t", headline="Predicted for the production mix: 0.19 req/s", kind="predicted",
                       predicted=Estimate(0.19, unit="req/s"), trusted=True, flags=[], validation_rows=[],
                       param_rows=[], chart=alt.Chart(alt.Data(values=[{"x": 1}])).mark_point().encode(x="x:Q"))
    model = build_report(limits=docs["limits"], profile=docs["profile"], plan=docs["plan"], provenance=provenance(),
                         fidelity=section, twin=twin)
    assert model.headline.fidelity_line.startswith("The test does not represent production: the limit was measured "
                                                   "on prompts of median 76 tokens")
    html = render_html(model)
    body = html[html.index("<body>"):]
    assert 'id="fidelity"' in body and 'id="fidelity-line"' in body
    # a trusted twin's translation to production's mix is offered beside the verdict "differs"
    assert re.search(r'id="fidelity-twin">.*Predicted for the production mix: 0.19 req/s', body)
    rows = re.findall(r"<tr><td>(input length|output length|prefix-cache hit rate|burstiness|request rate|model)</td>",
                      body)
    assert rows == ["input length", "output length", "prefix-cache hit rate", "burstiness", "request rate", "model"]
    # the FOS row says what share of production lies inside the tested lengths, not only "100 % covered by mix"
    row = re.search(r"<th>traffic covered by limits</th><td>(.*?)</td>", body).group(1)
    assert f"{section.data.covered_share:.1%}" in row.replace("&nbsp;", " ") or "0.2" in row
    assert "inside the lengths the test sent" in row
    write_report(model, tmp_path)
    doc = json.loads((tmp_path / "summary.json").read_text())
    assert doc["fidelity"]["available"] is True and doc["fidelity"]["data"]["verdict"] == "differs"
    back = ReportSummary.read(tmp_path / "summary.json")
    assert back.fidelity is not None
    assert back.fidelity.dimension("input_tokens").production.p50 == 1469.0
    assert back.fidelity.to_dict() == json.loads(json.dumps(section.data.to_dict()))


def test_missing_load_test_is_said(tmp_path):
    limits = hand_made("limits")
    limits["conditions"]["sources"][0]["path"] = str(tmp_path / "gone")
    sec = fidelity_section(limits_doc=limits, production=load(AZ_CODE), traffic=None)
    assert not sec.available and "not here" in sec.reason
    assert not fidelity_section(limits_doc={"available": False, "reason": "x"}, production=load(AZ_CODE),
                                traffic=None).available


def test_summary_without_fidelity_reads_as_not_assessed(tmp_path):
    docs = {n: hand_made(n) for n in ("limits", "profile", "plan")}
    model = build_report(limits=docs["limits"], profile=docs["profile"], plan=docs["plan"], provenance=provenance())
    d = model.to_dict()
    d.pop("fidelity")
    s = ReportSummary.from_dict(d)
    assert s.fidelity is None and "not assessed" in s.fidelity_reason
    d["fidelity"] = {"available": True, "reason": None, "data": {"verdict": "maybe", "dimensions": []}}
    with pytest.raises(Exception, match="fidelity.data.verdict"):
        ReportSummary.from_dict(d)


def test_bearing_report_prints_the_reports_fidelity_sentence_once(section, tmp_path, monkeypatch):
    """The sentence the report's headline and at-a-glance box show is printed by ``bearing report`` (one line on
    stderr, after the headline), read from the summary.json the run wrote; the box says it once, not with its
    opening words twice."""
    from typer.testing import CliRunner

    from bearing_lib.app import runner
    from bearing_lib.cli.main import app
    from bearing_lib.report.glance import glance

    docs = {n: hand_made(n) for n in ("limits", "profile", "plan")}
    model = build_report(limits=docs["limits"], profile=docs["profile"], plan=docs["plan"], provenance=provenance(),
                         fidelity=section)
    # the sentence by hand from the section's own headline (the first differing dimension's words)
    said = f"The test does not represent production: {section.data.headline.rstrip('.')}."
    assert model.headline.fidelity_line == said
    box = glance(model).not_covered
    assert box.count(said) == 1 and not any("production: The test" in line for line in box)
    out = tmp_path / "w"
    write_report(model, out)
    doc = json.loads((out / "summary.json").read_text())
    published = runner.RunResult("w", out, out / "report.html", out / "summary.json", [], doc["verdict"])
    monkeypatch.setattr(runner, "run_report", lambda *a, **k: published)  # the run itself is tested elsewhere
    r = CliRunner().invoke(app, ["report", "--name", "w", "--reports-dir", str(tmp_path), "-p", "limits_json",
                                 "x.json"])
    assert r.exit_code == 0, r.output
    lines = r.stderr.splitlines()
    assert lines[0] == f"verdict: {doc['verdict']}"
    assert lines[1] == doc["headline"]["text"] and lines[2] == said
    assert r.stdout.strip() == str(out / "report.html")
