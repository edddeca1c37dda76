"""Comparable or not, said (issue #25 item 4): "what changed" and the weekly comparison use one deployment
identity (``bearing_lib.compare.identity``), refuse a deployment that differs and never read an unknown field
as equal. The HAND-MADE documents of tests/fixtures/report state model, hardware, engine vllm 0.6.3 and 2
instances; the cases below change one field of the previous summary and check the sentence by hand."""

from __future__ import annotations

import json

import pytest

from bearing_lib.compare.identity import DEPLOYMENT_KEYS, comparability, from_limits, identity_fields
from bearing_lib.limits.result import LimitsResult
from bearing_lib.report.model import build_report
from tests.report.conftest import hand_made, provenance


def _back(model) -> dict:
    return json.loads(json.dumps(model.to_dict()))


def _rebuild(docs, previous):
    return build_report(limits=docs["limits"], profile=docs["profile"], plan=docs["plan"], previous=previous,
                        provenance=provenance())


def test_the_report_identity_is_the_deployment_identity_of_compare(docs, full_model):
    ident = identity_fields(from_limits(LimitsResult.from_dict(docs["limits"])))
    assert ident == {"model": "meta-llama/Llama-3-70B-Instruct", "hardware": "2 replicas, 4x H100 80GB each",
                     "engine": "vllm", "engine_version": "0.6.3", "instances": 2}
    assert {k: full_model.identity.to_dict()[k] for k in ident} == ident
    assert set(DEPLOYMENT_KEYS) <= set(full_model.identity.to_dict())


def test_the_typed_identity_writes_every_report_identity_key_in_order(full_model):
    """``summary.json``'s ``identity`` holds the keys of :data:`REPORT_IDENTITY_KEYS` in that order (read with json
    directly), and a summary without engine, version and instances reads them as unknown (None)."""
    import json

    from bearing_lib.report.identity import ReportIdentity
    from bearing_lib.report.model import REPORT_IDENTITY_KEYS

    doc = json.loads(json.dumps(full_model.to_dict()))
    assert tuple(doc["identity"]) == REPORT_IDENTITY_KEYS
    assert doc["identity"]["tier"] == "standard" and doc["identity"]["instances"] == 2
    old = {k: v for k, v in doc["identity"].items() if k not in ("engine", "engine_version", "instances")}
    back = ReportIdentity.from_dict({**old, "not_a_key": 1})
    assert (back.engine, back.engine_version, back.instances) == (None, None, None)
    assert back.model == doc["identity"]["model"] and back.tier == "standard"


def test_an_engine_change_is_refused_not_read_as_noise(docs, full_model):
    """An llm-d week against a vLLM week: refused, never "+70.8 %, within measurement noise"."""
    back = _back(full_model)
    other = {**back, "identity": {**back["identity"], "engine": "llm-d"}}
    m = _rebuild(docs, other)
    assert not m.changes.available
    assert m.changes.reason == "not comparable: engine llm-d → vllm"


def test_unknown_fields_are_unknown_not_equal(docs, full_model):
    """Model and hardware stated in neither report: the deltas are shown, but no verdict on them."""
    back = _back(full_model)
    docs["limits"]["conditions"].pop("model")
    docs["limits"]["conditions"].pop("hardware")
    prev = {**back, "identity": {**back["identity"], "model": None, "hardware": None}}
    m = _rebuild(docs, prev)
    assert m.changes.available
    c = m.changes.data
    assert c.comparability.startswith("comparability unknown: model (not stated in either), hardware (not stated "
                                      "in either) not stated")
    for item in c.items:
        assert item.significant is None, item
        assert "within measurement noise" not in item.note and "real change" not in item.note
        assert item.note.startswith("not judged: comparability unknown")
    # a summary written before engine, version and instances were in the identity: those are unknown
    old = {**back, "identity": {k: v for k, v in back["identity"].items()
                                if k not in ("engine", "engine_version", "instances")}}
    m = build_report(limits=hand_made("limits"), profile=docs["profile"], plan=docs["plan"], previous=old,
                     provenance=provenance())
    assert "engine (not stated in the previous one; now vllm)" in m.changes.data.comparability
    assert all(i.significant is None for i in m.changes.data.items)


def test_fully_stated_identities_still_judge_the_difference(full_model):
    """The hand-made pair states every deployment field: the CI overlap verdict stands (6.4 → 6.2, CIs overlap)."""
    items = {i.item: i for i in full_model.changes.data.items}
    assert items["Q_ult short-context (offered)"].significant is False
    assert full_model.changes.data.comparability == "comparable: the same deployment and question on every field"


@pytest.mark.parametrize(("prev", "cur", "differ", "unknown"), [
    ({"model": "a"}, {"model": "a"}, [], []),
    ({"model": "a"}, {"model": "b"}, ["model a → b"], []),
    ({"model": None}, {"model": None}, [], ["model (not stated in either)"]),
    ({}, {"model": "b"}, [], ["model (not stated in the previous one; now b)"]),
    ({"instances": 2}, {"instances": 1}, ["instances (replicas) 2 → 1"], []),
])
def test_comparability_by_hand(prev, cur, differ, unknown):
    c = comparability(prev, cur, ["model"] if "model" in {**prev, **cur} else ["instances"])
    assert (c.differ, c.unknown) == (differ, unknown)
    assert c.comparable == (not differ and not unknown)
