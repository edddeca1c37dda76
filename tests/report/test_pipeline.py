"""The steps the notebooks call (bearing_lib.app.pipeline), on the bundled Azure trace."""

from __future__ import annotations

import csv
import json

import pytest

from bearing_lib.app import pipeline
from bearing_lib.common.errors import BadValueError, ParameterError
from bearing_lib.common.unavailable import Unavailable

AZURE = "data/traces/azure-llm-inference-2023/AzureLLMInferenceTrace_conv.csv"


@pytest.fixture(scope="module")
def azure():
    return pipeline.load(AZURE)


@pytest.fixture(scope="module")
def lmbench_sharegpt_limits():
    from bearing_lib import load_trace
    from bearing_lib.limits.fit import fit_limits

    trace = load_trace("data/loadtests/lmbenchmark-llm-d-exp2/vllm-70b-2replicas")
    return fit_limits(trace, "p95(ttft) <= 1s", mixes="none", n_boot=100)


def test_week_window_keeps_exactly_that_iso_week(azure):
    with open(pipeline.resolve(AZURE), newline="", encoding="utf-8") as fh:
        stamps = [r["TIMESTAMP"][:10] for r in csv.DictReader(fh)]
    assert set(stamps) == {"2023-11-16"}  # a Thursday of ISO week 2023-W46
    kept = pipeline.window(azure, week="2023-W46")
    assert len(kept) == len(stamps) == 19_366
    assert kept.provenance.findings[-1].code == "window"
    with pytest.raises(BadValueError, match=r"no request in the window \[2023-11-20T00:00:00\+00:00.*the trace spans "
                                            r"2023-11-16T18:15"):
        pipeline.window(azure, week="2023-W47")
    assert pipeline.window(azure) is azure  # no window: the whole trace
    part = pipeline.window(azure, start="2023-11-16T18:30:00Z", end="2023-11-16T18:31:00Z")
    expected = sum(1 for s in open(pipeline.resolve(AZURE), encoding="utf-8").read().splitlines()[1:]
                   if s.startswith("2023-11-16 18:30:"))
    assert len(part) == expected
    with pytest.raises(ParameterError, match="expected an ISO time"):
        pipeline.window(azure, start="yesterday")


def test_required_parameters_and_json_io(tmp_path):
    with pytest.raises(ParameterError, match="parameter 'trace' is required"):
        pipeline.require("", "trace", "the trace")
    assert pipeline.require("x", "trace", "the trace") == "x"
    p = pipeline.write_json({"a": float("inf"), "b": [1.5]}, tmp_path / "d" / "x.json")
    assert json.loads(p.read_text()) == {"a": None, "b": [1.5]}
    (tmp_path / "bad.json").write_text("[1, 2]")
    with pytest.raises(BadValueError, match="must be a JSON object"):
        pipeline.read_json(tmp_path / "bad.json", "limits JSON")
    assert isinstance(pipeline.read_limits(""), Unavailable)
    assert pipeline.read_previous("") is None
    assert isinstance(pipeline.read_previous(tmp_path / "missing.json"), Unavailable)


def test_limits_document_records_analyst_conditions_without_overwriting():
    class Fake:
        def to_dict(self):
            return {"conditions": {"model": [], "hardware": "H100 x4 (from the files)"}, "mixes": []}

    doc = pipeline.limits_document(Fake(), model="Llama-3-70B", hardware="should not win")
    assert doc["conditions"]["model"] == "Llama-3-70B (stated by the analyst; not in the load-test files)"
    assert doc["conditions"]["hardware"] == "H100 x4 (from the files)"
    assert pipeline.limits_document(Unavailable("no steps")) == {"available": False, "reason": "no steps"}


def test_plan_and_profile_say_why_when_an_input_is_missing(azure):
    assert pipeline.plan({"available": False, "reason": "no steps"}, None).reason == "no limits: no steps"
    assert pipeline.plan({"mixes": []}, Unavailable("no times")).reason == "no production profile: no times"
    traffic = pipeline.profile(azure)
    series = pipeline.per_minute_series(traffic)
    assert len(series) == 58 and max(s.requests for s in series) == 502
    assert pipeline.per_minute_series(Unavailable("x")) == []


def test_limits_steps_carry_the_curves_mean_concurrency(lmbench_sharegpt_limits):
    """The limits JSON's steps carry the curve's Little's-law concurrency (the plan sizes KV with it)."""
    result = lmbench_sharegpt_limits
    curve = result.curve
    doc = result.to_dict()
    checked = 0
    for m in doc["mixes"]:
        name = m["mix"]["name"] if isinstance(m["mix"], dict) else m["mix"]
        for st in m["steps"]:
            row = curve.filter(
                (curve["run_id"] == m["run_id"]) & (curve["mix"] == name) & (curve["step"] == st["step"])
            )
            assert row.height == 1
            assert st["concurrency_mean"] == row["concurrency_mean"][0]
            checked += 1
    assert checked > 0


def test_portable_paths(tmp_path):
    out = tmp_path / ".tmp-demo-1234"
    out.mkdir()
    (out / "limits.json").write_text("{}", encoding="utf-8")
    other = tmp_path / "elsewhere.csv"
    other.write_text("x\n", encoding="utf-8")
    # in the report folder: relative to it (survives the rename to reports/<name>/)
    assert pipeline.portable_path(out / "limits.json", out) == ("limits.json", "report folder")
    # under the project root (the tests run from it, so it is also the working directory): relative to it
    text, rel = pipeline.portable_path(pipeline.PROJECT_ROOT / AZURE, out)
    assert text == AZURE and rel in ("working directory", "project root")
    # anywhere else: absolute, as given
    assert pipeline.portable_path(other, out) == (str(other), "")
    # inside strings (reasons that name files) too; other text untouched
    doc = {"reason": f"{pipeline.PROJECT_ROOT / AZURE} records no request outcome",
           "sources": [{"path": str(out / "limits.json")}], "n": 3}
    assert pipeline.portable(doc, out) == {"reason": f"{AZURE} records no request outcome",
                                           "sources": [{"path": "limits.json"}], "n": 3}


def test_report_records_portable_paths_and_keeps_the_sha256(tmp_path):
    from bearing_lib.data.provenance import sha256_of
    from tests.report.conftest import hand_made

    out = tmp_path / ".tmp-w-abcd"
    out.mkdir()
    lim_path = out / "limits.json"
    limits = hand_made("limits")
    limits["conditions"]["sources"] = [{"path": str(pipeline.PROJECT_ROOT / AZURE), "sha256": "cd" * 32}]
    lim_path.write_text(json.dumps(limits), encoding="utf-8")
    model = pipeline.report(
        limits_doc=limits, profile_doc=None, plan_doc=None, previous=None,
        parameters={"limits_json": str(lim_path), "production_trace": AZURE},
        inputs=[pipeline.input_record("limits", str(lim_path)), pipeline.input_record("production trace", AZURE)],
        output_dir=str(out))
    ins = {i["role"]: i for i in model.provenance.inputs}
    assert ins["limits"]["path"] == "limits.json" and ins["limits"]["relative_to"] == "report folder"
    assert ins["limits"]["sha256"] == sha256_of(lim_path)
    assert ins["production trace"]["path"] == AZURE
    assert model.provenance.parameters["limits_json"] == "limits.json"
    assert model.conditions.data.sources[0].path == AZURE
    assert ".tmp-w-abcd" not in json.dumps(model.to_dict())


def test_relative_load_test_paths_in_a_limits_json_are_read_from_its_folder(tmp_path, monkeypatch):
    from tests.conftest import ROOT

    lmb = ROOT / "data/loadtests/lmbenchmark-llm-d-exp2/vllm-70b-2replicas"
    monkeypatch.chdir(ROOT)  # the writer was given the load test relative to its working directory
    doc = {"conditions": {"sources": [{"path": "data/loadtests/lmbenchmark-llm-d-exp2/vllm-70b-2replicas"},
                                      {"path": "s3://bucket/x.parquet"}, {"path": str(lmb)}]}}
    out = tmp_path / "a" / "b" / "limits.json"
    out.parent.mkdir(parents=True)
    written = pipeline.limits_document(_Fake(doc), output_json=out)
    rel = written["conditions"]["sources"][0]["path"]
    assert not rel.startswith("/") and (out.parent / rel).resolve() == lmb.resolve()
    assert written["conditions"]["sources"][1]["path"] == "s3://bucket/x.parquet"  # URLs as they are
    assert written["conditions"]["sources"][2]["path"] == str(lmb)  # an absolute path means the same everywhere
    # a reader elsewhere (another working directory) finds the file from the JSON's folder
    monkeypatch.chdir(tmp_path)
    from bearing_lib.limits.sourcepaths import resolved_sources

    back = resolved_sources(json.loads(json.dumps(written)), out)
    assert back["conditions"]["sources"][0]["path"] == str(lmb.resolve())


class _Fake:
    """A result whose to_dict is the given document (limits_document's only use of it)."""

    def __init__(self, doc):
        self.doc = doc

    def to_dict(self):
        return json.loads(json.dumps(self.doc))


def test_a_limits_file_without_a_judged_step_gives_no_plan_but_the_reason_and_the_follow_up(azure):
    from tests.conftest import ROOT
    from tests.report.conftest import hand_made

    doc = hand_made("limits")
    doc["sla"][0]["kind"], doc["sla"][1]["kind"] = "percentile", "error_rate"
    for m in doc["mixes"]:  # every step left out: 8 requests each, as in a short vLLM bench run
        m["q_ult"] = {"value": None, "unit": "rps", "censored": "no_data", "statement": "no step can be judged "
                      "against the SLA: error_rate <= 1%: 8 requests cannot show a rate within 0.01 (need ≥ 100)"}
        for st in m["steps"]:
            st.update(status="undetermined", n_requests=8, n_ok=8, throughput_rps=2.0, valid=False)
    traffic = pipeline.profile(pipeline.load(ROOT / AZURE), doc, n_boot=0)
    got = pipeline.plan(doc, traffic, azure)
    assert isinstance(got, Unavailable) and got.reason.startswith("no limit can be judged: none of the")
    # error_rate <= 1% needs ceil(1 / 0.01) = 100 requests a step; a P99 368 successful ones (the smallest n whose
    # 95 % order-statistic interval exists): 368 / 2 req/s = 184 s, rounded up to 190 s
    assert "error_rate <= 1%: ≥ 100 requests per step (the test had at most 8)" in got.reason
    assert "p99(ttft_ms) <= 1000 ms: ≥ 368 successful requests per step" in got.reason
    # the loads tested (0.5 to 10 rps) and doublings up to 4 x the highest: 20, 40
    assert "Follow-up test: loads 0.5, 1, 2, 3, 4, 5, 6, 7, 8, 10, 20, 40 rps" in got.reason
    assert "each step held 190 s (368 requests at the 2 req/s" in got.reason
