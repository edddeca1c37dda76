"""The typed limits result: JSON round trip, schema, every problem at once, version-1 files, bases."""

from __future__ import annotations

import copy
import json

import jsonschema
import pytest

from bearing_lib.common.errors import SchemaError
from bearing_lib.limits.fit import fit_limits
from bearing_lib.limits.result import SCHEMA, LimitsResult, QUlt, schema_document
from bearing_lib.loaders import load
from tests.conftest import BUNDLED

LMB = BUNDLED / "loadtests/lmbenchmark-llm-d-exp2/llm-d-70b-2replicas"


@pytest.fixture(scope="module")
def result() -> LimitsResult:
    return fit_limits(load(LMB), "p95(ttft) <= 1s and error_rate <= 1%", n_boot=50, seed=3)


def test_round_trip_is_exact_and_validates_against_the_exported_schema(result):
    doc = json.loads(json.dumps(result.to_dict()))
    assert doc["schema"] == SCHEMA
    jsonschema.Draft202012Validator(schema_document()).validate(doc)
    back = LimitsResult.from_dict(doc)
    assert back.to_dict() == doc
    # the objects, not dicts, come back: attributes and the derived estimates work
    m = back.mixes[0]
    assert m.q_ult.estimate.basis == "offered" and m.q_ult.achieved.basis == "achieved"
    assert m.steps[0].status in ("pass", "fail", "undetermined", "excluded")


def test_in_process_only_parts_say_so_after_a_round_trip(result):
    assert result.curve.height > 0
    back = LimitsResult.from_dict(result.to_dict())
    with pytest.raises(Exception, match="load-curve frame is not part of a limits JSON"):
        back.curve  # noqa: B018
    assert back.mixes[0].replicates is None and result.mixes[0].replicates is not None


def test_coerce_passes_a_result_reads_a_document_and_names_the_source(result):
    """One entry for what a caller holds: the result itself, a limits JSON (read back equal), or a stand-in."""
    from bearing_lib.common.unavailable import Unavailable

    assert LimitsResult.coerce(result) is result
    doc = json.loads(json.dumps(result.to_dict()))
    back = LimitsResult.coerce(doc, source="limits.json")
    assert back is not None and back.to_dict() == doc
    assert [m.q_ult.value for m in back.mixes] == [m["q_ult"]["value"] for m in doc["mixes"]]
    for absent in (None, Unavailable("no load test"), {"available": False, "reason": "no load test"}):
        assert LimitsResult.coerce(absent) is None
    with pytest.raises(SchemaError, match=r"^my-limits\.json: expected a limits JSON object, found list"):
        LimitsResult.coerce([1, 2], source="my-limits.json")
    with pytest.raises(SchemaError, match=r"my-limits\.json"):
        LimitsResult.coerce({"hello": [1, 2, 3]}, source="my-limits.json")


def test_every_problem_is_reported_at_once(result):
    doc = copy.deepcopy(result.to_dict())
    doc["mixes"][0]["q_ult"]["value"] = "fast"
    doc["mixes"][0]["steps"][1]["status"] = "maybe"
    del doc["mixes"][1]["mix"]
    with pytest.raises(SchemaError) as err:
        LimitsResult.from_dict(doc, source="limits.json")
    text = str(err.value)
    assert "limits.json: 3 problem(s)" in text
    assert "mixes.0.q_ult.value" in text and "mixes.0.steps.1.status" in text and "mixes.1.mix: Field required" in text


def test_the_sla_reads_back_as_the_parsed_clauses_and_an_unknown_kind_is_refused_by_its_path(result):
    back = LimitsResult.from_dict(result.to_dict())
    assert back.sla == list(result.sla_spec.clauses)
    assert back.sla[0].q == 0.95 and back.sla[0].threshold == 1000.0 and back.sla[1].bounds is None
    doc = copy.deepcopy(result.to_dict())
    doc["sla"][0]["kind"] = "ratio"
    doc["sla"][0]["threshold"] = None
    with pytest.raises(SchemaError) as err:
        LimitsResult.from_dict(doc, source="limits.json")
    assert err.value.field == "sla.0.kind"
    assert "sla.0.kind: Input should be 'percentile', 'error_rate' or 'goodput' (found 'ratio')" in str(err.value)
    assert "sla.0.threshold" in str(err.value)


def test_a_version_1_clause_without_a_kind_is_an_error_rate_when_its_metric_says_so():
    doc = {"mixes": [], "sla": [{"text": "error_rate <= 1%", "metric": "error_rate", "stat": "mean",
                                 "threshold": 0.01},
                                {"text": "p99(ttft) <= 1s", "metric": "ttft_ms", "stat": "p99", "threshold": 1000.0}]}
    sla = LimitsResult.from_dict(doc).sla
    assert [(c.kind, c.op, c.unit) for c in sla] == [("error_rate", "<=", ""), ("percentile", "<=", "")]


def test_a_version_1_file_reads_and_is_not_modified():
    doc = {"mixes": [{"mix": {"name": "a"}, "q_ult": {"value": 2.0, "unit": "rps", "ci95": [1.5, 2.5],
                                                       "throughput_rps": 1.8, "censored": "none"},
                      "steps": [{"step": 0, "offered_load": 1.0, "offered_load_unit": "rps", "ttft_ms_p99": 300.0,
                                 "ttft_ms_p99_ci95_lo": 250.0}]}],
           "conditions": {"offered_load_unit": "rps", "client": "fmperf"},
           "sla": [{"text": "p99(ttft) <= 1s", "metric": "ttft_ms", "stat": "p99", "threshold": 1000.0}]}
    before = copy.deepcopy(doc)
    r = LimitsResult.from_dict(doc)
    assert doc == before
    st = r.mixes[0].steps[0]
    assert st.stats == {"ttft_ms_p99": 300.0, "ttft_ms_p99_ci95_lo": 250.0}
    assert r.conditions.offered_load_unit == ["rps"] and r.conditions.extra == {"client": "fmperf"}
    assert r.sla[0].kind == "percentile"


def test_achieved_basis_scales_the_offered_estimate_by_the_throughput_at_the_limit():
    # offered 2.0 rps (CI 1.5-2.5); the server completed 1.8 req/s there: ratio 0.9
    q = QUlt(2.0, "rps", (1.5, 2.5), (1.5, 2.5), "none", "2 rps", throughput_rps=1.8)
    a = q.achieved
    assert (a.value, a.ci95, a.bound, a.basis, a.unit) == (pytest.approx(1.8), pytest.approx((1.35, 2.25)), "none",
                                                            "achieved", "rps")
    never = QUlt(3.0, "rps", (None, None), (3.0, None), "above", "≥ 3 rps", throughput_rps=2.7)
    assert never.estimate.text() == "≥ 3.00 rps" and never.achieved.text() == "≥ 2.70 rps"
    # a concurrency-axis limit with no measured throughput has no achieved value (never invented)
    conc = QUlt(16.0, "concurrency", (12.0, 20.0), (12.0, 20.0), "none", "16")
    assert conc.achieved.value is None


def test_schema_command_prints_the_versioned_schema():
    from typer.testing import CliRunner

    from bearing_lib.cli.main import app

    res = CliRunner().invoke(app, ["schema", "limits"])
    assert res.exit_code == 0, res.output
    s = json.loads(res.output)
    assert s["$id"] == SCHEMA and s["title"] == "bearing limits JSON"
    bad = CliRunner().invoke(app, ["schema", "nope"])
    assert bad.exit_code == 1 and "documents with a schema: compare, estimate, limits" in bad.output
