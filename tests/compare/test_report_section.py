"""The report's comparison section: built under the report's SLA, written into ``summary.json`` and read back,
rendered as a Pareto chart that a real browser draws with every deployment (marks counted in the SVG).

The report's own limits are surajssd's tp8 pp1 deployment fitted under ``p90(ttft) <= 300ms and
p90(tpot) <= 60ms``; the deployments compared are the three Llama-3.3-70B layouts read in place. The
step counts and the tp8-first ranking are checked against the raw files (:mod:`tests.compare.handcalc`).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from bearing_lib.common.errors import ParameterError, SchemaError
from bearing_lib.common.unavailable import Unavailable
from bearing_lib.compare import compare
from bearing_lib.report.charts import report_charts
from bearing_lib.report.compare_section import CHART_ID, CompareSection, compare_section
from bearing_lib.report.model import build_report
from bearing_lib.report.render import write_report
from bearing_lib.report.summary import ReportSummary
from tests.compare import handcalc as hand
from tests.report.conftest import docs, hand_made, provenance  # noqa: F401 - the docs fixture
from tests.report.test_browser import browser, open_offline  # noqa: F401 - the browser fixture

SURAJ = "loadtests/vllm-bench-serve/surajssd-llm-k8s-azure-a100/llama-3.3-70b"
KUBECON = "loadtests/inference-perf/k8s-sigs-kubecon-na-2025"
SLA = ["p90(ttft) <= 300ms", "p90(tpot) <= 60ms"]
NAMES = ("01_tp8_pp1", "02_tp4_pp2_no_IB", "04_tp4_pp2_IB")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    import os

    from bearing_lib.limits.fit import fit_limits
    from bearing_lib.loaders import load
    from tests.conftest import ENV

    base = os.environ.get(ENV)
    if not base:
        pytest.skip(f"{ENV} is not set")
    folders = {n: Path(base) / SURAJ / n for n in NAMES}
    own = fit_limits(load(folders["01_tp8_pp1"]), SLA, mixes="none", n_boot=100).to_dict()
    section = compare_section([str(p) for p in folders.values()], limits_doc=own, profile_doc=hand_made("profile"),
                              n_boot=100)
    model = build_report(limits=own, profile=hand_made("profile"), plan=None, provenance=provenance(), name="cmp",
                         compare=section)
    paths = write_report(model, tmp_path_factory.mktemp("compare-report"))
    return model, paths, folders


@pytest.mark.shared_data
def test_section_is_fitted_under_the_reports_sla_and_ranks_tp8_first(report, shared_data):
    model, _, folders = report
    c = model.compare.data.comparison
    assert model.compare.available and [d.name for d in c.deployments] == list(NAMES)
    assert {d.sla for d in c.deployments} == {"p90(ttft) <= 300ms and p90(tpot) <= 60ms"}
    # by hand: tp8 pp1 passes at 4 req/s, both tp4 pp2 layouts fail there
    for name, folder in folders.items():
        at4 = next(r for r in hand.vllm_steps(folder) if r["offered"] == 4.0)
        assert (at4["ttft_p90"] <= 300 and at4["tpot_p90"] <= 60) == (name == "01_tp8_pp1")
    assert c.ranking[0] == "01_tp8_pp1" and c.basis == "output tokens/s per GPU"
    assert c.deployments[0].fleet is not None  # the report's profile gives the fleet
    assert "the production profile's target and the standard tier" in model.compare.data.source


@pytest.mark.shared_data
def test_summary_json_carries_the_comparison_and_reads_it_back(report, shared_data):
    model, paths, _ = report
    doc = json.loads(paths["summary"].read_text())
    block = doc["compare"]
    assert block["available"] is True and block["data"]["comparison"]["schema"] == "bearing.compare/1"
    assert [d["identity"]["name"] for d in block["data"]["comparison"]["deployments"]] == list(NAMES)
    back = ReportSummary.read(paths["summary"])
    assert back.comparison is not None and back.compare_reason is None
    assert back.comparison.to_dict() == model.compare.data.to_dict()
    # the summary's own writer gives the same block the model wrote
    assert back.to_dict()["compare"] == json.loads(json.dumps(block))


def test_summary_without_a_comparison_says_why_and_a_bad_block_is_named(docs):  # noqa: F811
    m = build_report(limits=docs["limits"], profile=docs["profile"], plan=docs["plan"], provenance=provenance())
    d = json.loads(json.dumps(m.to_dict()))
    assert d["compare"]["available"] is False and "--compare" in d["compare"]["reason"]
    s = ReportSummary.from_dict(d)
    assert s.comparison is None and "--compare" in s.compare_reason
    del d["compare"]  # written before the section existed: not built
    assert ReportSummary.from_dict(d).compare_reason.startswith("not built")
    d["compare"] = {"available": True, "reason": None, "data": {"source": 3, "inputs": [], "notes": [],
                                                                 "comparison": {"schema": "bearing.compare/1"}}}
    with pytest.raises(SchemaError, match=r"compare\.data\.source") as e:
        ReportSummary.from_dict(d)
    assert "compare.data.comparison" in str(e.value)
    assert CHART_ID not in [c.id for c in report_charts(m)]
    m = build_report(limits=docs["limits"], profile=None, plan=None, provenance=provenance(),
                     compare=Unavailable("a comparison needs two deployments or more"))
    assert m.compare.available is False and m.compare.reason.startswith("a comparison needs")


def test_relative_inputs_are_read_as_the_pipeline_reads_them(tmp_path, monkeypatch):
    from bearing_lib.report.compare_section import _resolved

    root = Path(__file__).resolve().parents[2]
    monkeypatch.chdir(tmp_path)  # not the project root: a relative path is then taken under the project root
    rel = "data/loadtests/lmbenchmark-llm-d-exp2/llm-d-70b-2replicas"
    assert _resolved(f"x={rel}") == f"x={root / rel}" and _resolved(rel) == str(root / rel)
    (tmp_path / "here").mkdir()
    assert _resolved("here") == "here"  # as given when it exists


def test_bad_inputs_are_refused_naming_them(tmp_path):
    with pytest.raises(ParameterError, match="missing-run: no such file"):
        compare_section([str(tmp_path / "missing-run")])
    assert compare_section([]) is None


@pytest.mark.shared_data
def test_a_comparison_json_is_shown_as_it_is_and_says_its_sla_is_not_the_reports(shared_data, tmp_path):
    folders = [shared_data(f"{KUBECON}/{n}") for n in ("vllm", "vllm_quantization")]
    c = compare([str(p) for p in folders], sla="p90(ttft) <= 500ms", gpus=1, n_boot=50)
    path = tmp_path / "cmp.json"
    path.write_text(json.dumps(c.to_dict()))
    own = hand_made("limits")  # its SLA is not p90(ttft) <= 500ms
    s = compare_section([str(path)], limits_doc=own)
    assert s.comparison.to_dict()["deployments"] == c.to_dict()["deployments"]
    assert "shown as it is" in s.source
    assert any("not the report's SLA" in n for n in s.notes)
    with pytest.raises(ParameterError, match="comparison JSON; give it alone"):
        compare_section([str(path), str(folders[0])], limits_doc=own)
    assert CompareSection.from_dict(json.loads(json.dumps(s.to_dict()))).to_dict() == s.to_dict()


@pytest.mark.shared_data
@pytest.mark.browser
def test_the_pareto_chart_draws_every_deployment_in_chromium(report, browser, shared_data):  # noqa: F811
    model, paths, folders = report
    assert [c.id for c in report_charts(model)][-1] == CHART_ID
    page, problems, requests = open_offline(browser, paths["html"])
    page.wait_for_selector(f"#{CHART_ID} svg", timeout=30_000)
    labels = page.eval_on_selector_all(
        f"#{CHART_ID} svg path[aria-roledescription='point']", "els => els.map(e => e.getAttribute('aria-label'))")
    for name, folder in folders.items():
        n_files = len(list(folder.glob("*.json.gz")))  # one load step per benchmark_serving result file
        steps = [x for x in labels if f"deployment: {name};" in x and "offered_load" in x]
        limit = [x for x in labels if f"deployment: {name};" in x and "limit:" in x]
        assert len(steps) == n_files, (name, steps)
        assert len(limit) == 1, (name, limit)
    # every step's per-GPU value in the SVG is the raw file's output tok/s / GPUs (tp x pp)
    for name, folder in folders.items():
        gpus = math.prod(hand.tp_pp(folder))
        want = sorted(round(r["out_tps"] / gpus, 3) for r in hand.vllm_steps(folder))
        got = sorted(round(float(x.split("output tokens/s per GPU: ")[1].split(";")[0]), 3)
                     for x in labels if f"deployment: {name};" in x and "offered_load" in x)
        assert got == pytest.approx(want, abs=1.1e-3)  # both rounded to 3 decimals
    assert page.locator("#compare-answer").inner_text().startswith("For the production mix at its peak")
    assert page.locator("#compare-table tbody tr").count() == len(folders)
    assert not requests and not problems, (requests, problems)
    page.close()


def _lmbench_pair(tmp_path) -> dict[str, Path]:
    """The bundled LMBenchmark sharegpt sweeps of vLLM and llm-d (Llama-70B, two replicas), one run each."""
    from tests.conftest import ROOT

    bundled = ROOT / "data" / "loadtests" / "lmbenchmark-llm-d-exp2"
    paths = {}
    for dep in ("vllm-70b-2replicas", "llm-d-70b-2replicas"):
        (tmp_path / dep).mkdir()
        for f in (bundled / dep).glob("LMBench_sharegpt_*.csv"):
            (tmp_path / dep / f.name).symlink_to(f)
        paths[dep] = tmp_path / dep
    return paths


def _dep(section, name):
    (d,) = [d for d in section.comparison.deployments if d.name == name]
    return d


def test_load_tests_compared_in_a_report_are_fitted_with_the_reports_estimator(tmp_path):
    """The report's limits record their estimator (``conditions.estimator``); another load test compared in that
    report is fitted with it (the vLLM sweep here; the llm-d sweep is the report's own and takes its limits)."""
    from bearing_lib.limits.fit import fit_limits
    from bearing_lib.loaders import load

    paths = _lmbench_pair(tmp_path)
    sla = "p99(ttft) <= 2s"
    fits = {e: fit_limits(load(paths["llm-d-70b-2replicas"]), sla, mixes="none", n_boot=50, estimator=e)
            for e in ("pooled", "model")}
    other = {e: fit_limits(load(paths["vllm-70b-2replicas"]), sla, mixes="none", n_boot=50, estimator=e)
             .mixes[0].q_ult.value for e in ("pooled", "model")}
    assert {e: r.conditions.estimator for e, r in fits.items()} == {"pooled": "pooled", "model": "model"}
    own = {e: r.mixes[0].q_ult.value for e, r in fits.items()}
    assert abs(own["model"] - own["pooled"]) > 0.01 * own["pooled"]  # the two estimators differ on this sweep
    assert abs(other["model"] - other["pooled"]) > 0.01 * other["pooled"]
    items = [f"{d}={p}" for d, p in paths.items()]
    for e, r in fits.items():
        section = compare_section(items, limits_doc=r.to_dict(), n_boot=50)
        assert _dep(section, "vllm-70b-2replicas").limit.value == pytest.approx(other[e], rel=1e-12), e
        assert _dep(section, "llm-d-70b-2replicas").limit.value == pytest.approx(own[e], rel=1e-12), e
        assert (f"with its estimator ({e})" in section.source) is True
    # a limits JSON written before the estimator was recorded: the default then (pooled), and the source does not
    # claim one
    old = fits["model"].to_dict()
    del old["conditions"]["estimator"]
    section = compare_section(items, limits_doc=old, n_boot=50)
    assert _dep(section, "vllm-70b-2replicas").limit.value == pytest.approx(other["pooled"], rel=1e-12)
    assert "with its estimator" not in section.source
    # an estimator this bearing does not know: the default one (the model), said; never a failed report
    old["conditions"]["estimator"] = "bayes"
    section = compare_section(items, limits_doc=old, n_boot=50)
    assert _dep(section, "vllm-70b-2replicas").limit.value == pytest.approx(other["model"], rel=1e-12)
    assert "with its estimator" not in section.source
    assert any("an estimator bearing does not know ('bayes')" in n for n in section.notes)
    # a limits JSON of the model beside a load test fitted with the pooled estimator: compared as given, said
    model_json = tmp_path / "model.json"
    model_json.write_text(json.dumps(fits["model"].to_dict()))
    c = compare([f"m={model_json}", f"v={paths['vllm-70b-2replicas']}"], sla=sla, n_boot=50, estimator="pooled")
    (m,) = [d for d in c.deployments if d.name == "m"]
    assert m.limit.value == pytest.approx(own["model"], rel=1e-12)
    assert any(n.startswith("the limits come from different estimators (m: model, v: pooled)") for n in c.notes)
    c = compare([f"m={model_json}", f"v={paths['vllm-70b-2replicas']}"], sla=sla, n_boot=50, estimator="model")
    assert not any("different estimators" in n for n in c.notes)


def test_the_reports_own_load_test_takes_the_reports_limits(tmp_path):
    """The report's own load test, compared, reads the report's limit and interval (its resamples and seed), not a
    second fit's: one value in both sections, its input tokens per request kept. Not when the files differ (line ends
    rewritten), nor the runs (the same files in a folder of another name), nor the estimator, nor when the report's
    limits are per mix (a second fit is one mix)."""
    from bearing_lib.compare.build import OWN_FIT
    from bearing_lib.limits.fit import fit_limits
    from bearing_lib.loaders import load

    paths = _lmbench_pair(tmp_path)
    sla = "p99(ttft) <= 2s"
    llmd = paths["llm-d-70b-2replicas"]
    # the model: its value and interval move with the resamples' design effect, so the two fits can be told apart
    report_own = fit_limits(load(llmd), sla, mixes="none", n_boot=100, seed=7, estimator="model")
    fresh = fit_limits(load(llmd), sla, mixes="none", n_boot=20, seed=0, estimator="model")
    r, f = report_own.mixes[0].q_ult, fresh.mixes[0].q_ult
    assert abs(r.value - f.value) > 1e-3 * r.value and r.ci95 != pytest.approx(f.ci95, rel=1e-6)
    # the other deployment as a limits JSON (read as it is: no fit of its own in this test)
    vllm = tmp_path / "vllm.json"
    vllm.write_text(json.dumps(fit_limits(load(paths["vllm-70b-2replicas"]), sla, mixes="none", n_boot=0,
                                          estimator="model").to_dict()))
    # the folder spelled otherwise than the report's limits name it: the same files and runs
    (tmp_path / "x").mkdir()
    spelled = f"{tmp_path}/x/../{llmd.name}"
    items = [f"vllm-70b-2replicas={vllm}", f"llm-d-70b-2replicas={spelled}"]
    section = compare_section(items, limits_doc=report_own.to_dict(), n_boot=20, seed=0)
    d = _dep(section, "llm-d-70b-2replicas")
    assert (d.limit.value, d.limit.ci95) == (pytest.approx(r.value, rel=1e-12), pytest.approx(r.ci95, rel=1e-12))
    (own_note,) = [n for n in section.comparison.notes if n.startswith(f"llm-d-70b-2replicas: {OWN_FIT} ")]
    # the folder is named once, as given, not again as the limits resolved it
    assert f"{OWN_FIT} {spelled}, mix 'all'" in own_note and f"{llmd}," not in own_note
    assert not any(n.startswith(f"vllm-70b-2replicas: {OWN_FIT}") for n in section.comparison.notes)
    tokens = d.input_tokens_per_request
    assert tokens is not None and tokens > 0
    # the estimator the comparison fits with is not the limits' own: fitted again
    c = compare(items, sla=sla, n_boot=20, seed=0, estimator="pooled", own=report_own)
    assert not any(OWN_FIT in n for n in c.notes)
    # the same files (links) in a folder of another name: other runs (run ids name the folder), fitted again
    other = tmp_path / "renamed"
    other.mkdir()
    for p in llmd.iterdir():
        (other / p.name).symlink_to(p.resolve())
    section = compare_section([items[0], f"llm-d-70b-2replicas={other}"], limits_doc=report_own.to_dict(),
                              n_boot=20, seed=0)
    d = _dep(section, "llm-d-70b-2replicas")
    assert d.limit.value == pytest.approx(f.value, rel=1e-12) and d.input_tokens_per_request == tokens
    assert not any(OWN_FIT in n for n in section.comparison.notes)
    # the same folder with one file's line ends written CRLF: other bytes (sha256), the same rows; fitted again
    changed = tmp_path / "changed" / "llm-d-70b-2replicas"
    changed.mkdir(parents=True)
    for p in llmd.iterdir():
        (changed / p.name).write_bytes(p.read_bytes())
    victim = sorted(changed.iterdir())[0]
    victim.write_bytes(victim.read_bytes().replace(b"\n", b"\r\n"))
    section = compare_section([f"llm-d-70b-2replicas={changed}", items[0]], limits_doc=report_own.to_dict(),
                              n_boot=20, seed=0)
    d = _dep(section, "llm-d-70b-2replicas")
    assert (d.limit.value, d.limit.ci95) == (pytest.approx(f.value, rel=1e-12), pytest.approx(f.ci95, rel=1e-12))
    assert not any(OWN_FIT in n for n in section.comparison.notes)
    # limits per mix (two mixes by output length): not what a one-mix fit gives, so fitted again
    from bearing_lib.data.mixes import Mix, MixSpec

    spec = MixSpec((Mix("short", {"output_tokens": (0, 200)}), Mix("long", {"output_tokens": (200, math.inf)})))
    per_mix = fit_limits(load(llmd), sla, mixes=spec, n_boot=0, estimator="model")
    assert len(per_mix.mixes) == 2
    section = compare_section(items, limits_doc=per_mix.to_dict(), n_boot=20, seed=0)
    assert _dep(section, "llm-d-70b-2replicas").limit.value == pytest.approx(f.value, rel=1e-12)
    assert not any(OWN_FIT in n for n in section.comparison.notes)
