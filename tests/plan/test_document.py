"""The plan is its document (CapacityPlan.to_dict/from_dict, ``bearing.plan/1``); the typed profile hop (ProfileInput).

Plans are built in the test from the bundled REAL inputs (LMBenchmark llm-d sweep, Azure
LLM inference 2023 conversation trace) and, with ``BEARING_SHARED_DATA``, from the shared
Mooncake conversation trace; the HAND-MADE report fixture plan is read too. Expected values
are the plan's own JSON (json module), so the round trip is checked leaf for leaf.
"""

from __future__ import annotations

import copy
import json

import jsonschema
import pytest
from typer.testing import CliRunner

from bearing_lib import load_trace
from bearing_lib.cli.main import app
from bearing_lib.common.errors import SchemaError
from bearing_lib.common.schema import NotAvailable
from bearing_lib.limits.fit import fit_limits
from bearing_lib.plan.capacity import InstancePlan
from bearing_lib.plan.capacity_plan import SCHEMA, CapacityPlan, profile_input, profile_input_from_dict, schema_document
from bearing_lib.plan.memory import MemoryPlan
from bearing_lib.traffic.document import TrafficProfile, profile_schema_document
from bearing_lib.traffic.profile import profile_traffic
from tests.conftest import BUNDLED
from tests.report.conftest import hand_made

LMB = "loadtests/lmbenchmark-llm-d-exp2/llm-d-70b-2replicas"
CONV = "traces/azure-llm-inference-2023/AzureLLMInferenceTrace_conv.csv"
RUN = "llm-d-70b-2replicas/sharegpt"


@pytest.fixture(scope="module")
def limits():
    return fit_limits(load_trace(BUNDLED / LMB), ["p95(ttft) <= 1s", "error_rate <= 1%"], n_boot=40, seed=1)


@pytest.fixture(scope="module")
def azure(limits):
    from bearing_lib.data.mixes import MixSpec

    spec = MixSpec.from_dict(limits.to_dict()["mix_spec"])
    return profile_traffic(load_trace(BUNDLED / CONV), mix_spec=spec, n_boot=50)


def _json(x):
    return json.loads(json.dumps(x, allow_nan=False))


def test_round_trip_of_a_real_plan_is_exact_and_matches_the_schema(limits, azure):
    # four 80 GiB GPUs: the 17 sequences in flight at Q_ult need 176.5 GiB at the P99 length (two GPUs hold only
    # 5 of them, and a model that does not fit gets no instance count: tests/plan/test_memory.py)
    plan = CapacityPlan.build(limits, azure, run=RUN, model="llama-3.1-70b", gpu_mem_gib=80, gpu_count=4)
    doc = _json(plan.to_dict())
    assert doc["schema"] == SCHEMA == "bearing.plan/1"
    jsonschema.Draft202012Validator(schema_document()).validate(doc)
    back = CapacityPlan.from_dict(doc)
    assert _json(back.to_dict()) == doc
    # the builder's result and the document read back are the same object, field for field
    assert back == plan
    # typed objects come back, with the Estimates the readers use
    assert isinstance(back.instances, InstancePlan) and isinstance(back.memory, MemoryPlan)
    assert back.instances.total == doc["instances"]["total"]
    b = back.blended.estimate
    assert (b.value, b.ci95, b.bound, b.basis) == (doc["fos"]["blended"]["value"],
                                                   tuple(doc["fos"]["blended"]["ci95"]),
                                                   doc["fos"]["blended"]["bound"], "ratio")
    m = back.per_mix[0]
    assert m.q_ult.value == doc["fos"]["per_mix"][0]["q_ult_rps"] and m.q_ult.basis == "achieved"
    assert back.memory.row("p99").total_gib == next(r["total_gib"] for r in doc["memory"]["rows"]
                                                     if r["basis"] == "p99")


def test_unavailable_sections_round_trip(limits, azure):
    # no model: memory is {"available": false, "reason": ...}; the document keeps it as NotAvailable
    doc = _json(CapacityPlan.build(limits, azure, run=RUN).to_dict())
    back = CapacityPlan.from_dict(doc)
    assert isinstance(back.memory, NotAvailable) and back.memory.reason.startswith("not assessed: model unknown")
    assert _json(back.to_dict()) == doc


@pytest.mark.shared_data
def test_round_trip_on_the_shared_mooncake_trace(limits, shared_data):
    from bearing_lib.data.mixes import MixSpec

    tr = load_trace(shared_data("traces/mooncake-fast25/conversation_trace.jsonl"))
    prof = profile_traffic(tr, mix_spec=MixSpec.from_dict(limits.to_dict()["mix_spec"]), n_boot=30)
    doc = _json(CapacityPlan.build(limits, prof, run=RUN, tier="critical").to_dict())
    assert _json(CapacityPlan.from_dict(doc).to_dict()) == doc


def test_the_hand_made_plan_reads_and_older_files_without_schema_too():
    d = hand_made("plan")
    assert "schema" not in d
    p = CapacityPlan.from_dict(d)
    assert p.schema == SCHEMA and p.verdict == "yellow" and p.blended.value == 1.63
    assert p.instances.buffer_plan is None  # a key newer than the file: its default


def test_renamed_missing_and_mistyped_keys_are_reported_together_with_their_paths():
    d = hand_made("plan")
    d["fos"]["blended"]["valu"] = d["fos"]["blended"].pop("value")
    del d["target"]["rps"]
    d["instances"]["total"] = "twelve"
    d["verdict"] = "purple"
    with pytest.raises(SchemaError) as e:
        CapacityPlan.from_dict(d, source="plan.json")
    msg = str(e.value)
    assert "plan.json: 5 problem(s)" in msg
    for line in ("target.rps: Field required", "fos.blended.value: Field required",
                 "fos.blended.valu: unknown key", "instances.total: Input should be a valid integer",
                 "verdict: Input should be 'green', 'yellow' or 'red'"):
        assert line in msg
    with pytest.raises(SchemaError, match="is not 'bearing.plan/1'"):
        CapacityPlan.from_dict({**hand_made("plan"), "schema": "bearing.plan/9"})


def test_the_input_document_is_not_modified():
    d = hand_made("plan")
    before = copy.deepcopy(d)
    CapacityPlan.from_dict(d)
    assert d == before


@pytest.mark.parametrize(("kind", "read"), [("plan", CapacityPlan.from_dict), ("profile", profile_input_from_dict)])
def test_a_document_of_another_kind_is_refused_as_such(kind, read):
    with pytest.raises(SchemaError, match=rf"not a bearing {kind} document \(no `schema`\); "
                                          rf"expected 'bearing\.{kind}/1'.*found keys: hello"):
        read({"hello": [1, 2, 3]})
    with pytest.raises(SchemaError, match=rf"a bearing limits document \(schema 'bearing.limits/2'\), not a {kind} "
                                          "document"):
        read({"schema": "bearing.limits/2", "mixes": []})


def test_limits_of_another_kind_are_refused_at_the_plans_edge():
    with pytest.raises(SchemaError, match=r"not a bearing limits document \(no `schema`\); "
                                          r"expected 'bearing.limits/2'"):
        CapacityPlan.build({"hello": [1, 2, 3]}, hand_made("profile"))


def test_profile_input_from_the_object_and_from_its_json_agree(azure):
    j = _json(azure.to_dict())
    a = profile_input(azure, source="p")
    b = profile_input_from_dict(j, source="p")
    assert a == b
    # what the plan reads, by hand from the JSON text (json.loads, no bearing reader)
    t = j["targets"]["target"]
    assert a.target.rps == t["rps"] and a.target.ci95 == tuple(t["ci95"])
    assert a.series == [float(x) for x in j["per_minute"]["series"]["requests"]]
    assert a.shares == {r["mix"]: r["share"] for r in j["mix_shares"]}
    assert a.seq_len.p99 == j["seq_len"]["p99"] and a.peak_known and a.mean_known


def test_profile_document_paths_and_schema(azure):
    doc = _json(azure.to_dict())
    assert doc["schema"] == "bearing.profile/1"
    jsonschema.Draft202012Validator(profile_schema_document()).validate(doc)
    bad = {**doc, "targets": {"target": {"rps": "many"}}, "mix_shares": [{"mix": "all", "share": None},
                                                                        {"mix": 3, "share": "half"}]}
    with pytest.raises(SchemaError) as e:
        TrafficProfile.from_dict(bad, source="prof.json")
    assert "prof.json: 3 problem(s)" in str(e.value)
    assert "mix_shares.1.mix: Input should be a valid string" in str(e.value)
    assert "targets.target.rps: Input should be a valid number" in str(e.value)
    assert "mix_shares.1.share: Input should be a valid number" in str(e.value)


def test_schema_command_prints_plan_and_profile():
    for name, sid in (("plan", "bearing.plan/1"), ("profile", "bearing.profile/1")):
        res = CliRunner().invoke(app, ["schema", name])
        assert res.exit_code == 0, res.output
        s = json.loads(res.output)
        assert s["$id"] == sid and s["$schema"].endswith("2020-12/schema")
    plan = json.loads(CliRunner().invoke(app, ["schema", "plan"]).output)
    assert {"tier", "target", "fos", "verdict", "cbu", "instances"} <= set(plan["required"])
    assert plan["additionalProperties"] is False


def test_a_profile_without_resamples_gives_a_point_target() -> None:
    """A profile made with n_boot=0 has a target CI of (nan, nan): the plan takes the target as a point.

    By hand: the target is the profile's figure times growth 1.5 / 1.5 = 1, so 8.25 req/s, with no CI.
    """
    from bearing_lib.plan.inputs import ProfileInput, ProfileTarget, plan_target

    nan = float("nan")
    p = ProfileInput(source="profile.json", target=ProfileTarget(8.25, (nan, nan), 0.99, 1.5, "P99 × 1.5"))
    t = plan_target(p)
    assert t.rps == 8.25
    assert t.ci95 is None
    assert "no CI for the target" in t.basis
