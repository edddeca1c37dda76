"""``bearing_lib.common.schema.read_document``: the one ``from_dict`` of bearing's JSON documents (the plan's
and the comparison's go through it): another kind refused as such, then every problem named by file, field
and expected type."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field

import pytest

from bearing_lib.common.errors import SchemaError
from bearing_lib.common.schema import read_document
from bearing_lib.compare.result import Comparison
from bearing_lib.plan.capacity_plan import CapacityPlan
from tests.report.conftest import HAND_MADE, hand_made


@dataclass
class Row:
    name: str
    rps: float


@dataclass
class Doc:
    rows: list[Row]
    tier: str
    schema: str = "bearing.demo/1"
    notes: list[str] = field(default_factory=list)


KIND = {"kind": "demo", "schema": "bearing.demo/1", "keys": ("rows", "tier"), "writer": "demo --json OUT"}


def test_every_problem_is_named_by_file_field_and_expected_type():
    doc = {"rows": [{"name": "a", "rps": 1.5}, {"name": 7, "rps": "fast"}], "tier": ["standard"]}
    with pytest.raises(SchemaError) as e:
        read_document(Doc, doc, source="demo JSON /tmp/d.json", **KIND)
    err = e.value
    assert str(err).startswith("demo JSON /tmp/d.json: 3 problem(s):")
    assert [p.field for p in err.problems] == ["rows.1.name", "rows.1.rps", "tier"]
    assert err.field == "rows.1.name"
    text = str(err)
    assert "rows.1.name: Input should be a valid string (found 7)" in text
    assert "rows.1.rps: Input should be a valid number" in text and "(found 'fast')" in text
    assert "tier: Input should be a valid string (found list)" in text


def test_a_good_document_reads_and_prepare_works_on_a_copy():
    doc = {"rows": [{"name": "a", "rps": 2}], "tier": "critical", "old_key": 1}
    before = copy.deepcopy(doc)
    got = read_document(Doc, doc, source="d.json", prepare=lambda d: {k: v for k, v in d.items() if k != "old_key"},
                        **KIND)
    assert got == Doc(rows=[Row("a", 2.0)], tier="critical")
    assert doc == before


@pytest.mark.parametrize(("doc", "message"), [
    ({"hello": [1, 2, 3]}, "not a bearing demo document (no `schema`); expected 'bearing.demo/1' with the keys "
                           "rows, tier (found keys: hello); write one with `demo --json OUT`"),
    ({"schema": "bearing.limits/2", "mixes": []}, "a bearing limits document (schema 'bearing.limits/2'), not a "
                                                  "demo document"),
    ({"schema": "bearing.demo/7", "rows": [], "tier": "x"}, "schema 'bearing.demo/7' is not 'bearing.demo/1'"),
    ([1, 2], "expected a bearing demo JSON object, found list"),
])
def test_another_kind_of_document_is_refused_as_such(doc, message):
    with pytest.raises(SchemaError) as e:
        read_document(Doc, doc, source="d.json", **KIND)
    assert str(e.value).startswith("d.json") and message in str(e.value)
    if isinstance(doc, dict) and "schema" in doc:  # the file and the field that says which document it is
        assert str(e.value).startswith("d.json, field 'schema': ") and e.value.field == "schema"


def test_the_plan_reader_names_the_file_the_field_and_the_type(tmp_path):
    """The plan JSON as the report runner checks it before any notebook (``app.pipeline.check_inputs``)."""
    from bearing_lib.app.pipeline import check_inputs

    d = hand_made("plan")
    d["instances"]["total"] = "twelve"
    d["fos"]["blended"]["value"] = [1.63]
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(d))
    with pytest.raises(SchemaError) as e:
        check_inputs({"plan_json": str(path)})
    text = str(e.value)
    assert text.startswith(f"plan JSON {path}: 2 problem(s):")
    assert sorted(p.field for p in e.value.problems) == ["fos.blended.value", "instances.total"]
    assert "instances.total: Input should be a valid integer" in text and "(found 'twelve')" in text
    assert "fos.blended.value: Input should be a valid number (found list)" in text
    with pytest.raises(SchemaError, match="not a bearing plan document"):
        CapacityPlan.from_dict({"hello": [1, 2, 3]}, source=str(path))
    # the hand-made plan itself reads, to the values written in the file
    raw = json.loads((HAND_MADE / "plan.json").read_text())
    p = CapacityPlan.from_dict(raw)
    assert (p.verdict, p.allowable_rps, p.instances.total) == (raw["verdict"], raw["allowable_rps"],
                                                               raw["instances"]["total"])


def test_the_comparison_reader_goes_the_same_way():
    with pytest.raises(SchemaError) as e:
        Comparison.from_dict({"hello": [1, 2, 3]}, source="cmp.json")
    assert "cmp.json: not a bearing compare document (no `schema`)" in str(e.value)
    assert "write one with `bearing compare --json`" in str(e.value)
    with pytest.raises(SchemaError) as e:
        Comparison.from_dict({"schema": "bearing.compare/1", "deployments": "all"}, source="cmp.json")
    assert "deployments: Input should be a valid list (found 'all')" in str(e.value)
    assert e.value.field == "deployments"
