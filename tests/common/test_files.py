"""``bearing_lib.common.files.jsonable``: the one writer of result types (the plan's ``to_json`` is it)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np

from bearing_lib.common.files import jsonable, write_json
from bearing_lib.common.schema import NotAvailable
from bearing_lib.plan import jsonform
from bearing_lib.plan.capacity_plan import CapacityPlan
from tests.report.conftest import HAND_MADE


@dataclass
class Inner:
    _OMIT_NONE = ("note",)
    value: float
    note: str | None = None
    kept: str | None = None


@dataclass
class Outer:
    parts: tuple[Inner, ...]
    section: Inner | NotAvailable
    counts: dict[int, np.int64]


def test_one_function_writes_every_result_type():
    assert jsonform.to_json is jsonable


def test_dataclasses_omitted_nones_not_available_numpy_and_non_finite():
    obj = Outer(parts=(Inner(1.5, note="n"), Inner(math.inf)), section=NotAvailable("no trace"),
                counts={3: np.int64(4)})
    got = jsonable(obj)
    assert got == {"parts": [{"value": 1.5, "note": "n", "kept": None}, {"value": None, "kept": None}],
                   "section": {"available": False, "reason": "no trace"}, "counts": {"3": 4}}
    assert list(got["section"]) == ["available", "reason"]  # the documented key order
    assert type(got["counts"]["3"]) is int


def test_a_plan_written_and_read_back_is_the_file(tmp_path):
    """The hand-made plan JSON read and written again holds the same values (key order aside), with
    the optional keys the file leaves out still left out."""
    raw = json.loads((HAND_MADE / "plan.json").read_text())
    plan = CapacityPlan.from_dict(raw)
    back = json.loads(write_json(plan.to_dict(), tmp_path / "plan.json").read_text())
    assert "burst_buffer" not in raw["instances"] and "burst_buffer" not in back["instances"]
    for key in ("verdict", "allowable_rps", "allowable_statement", "tier", "target"):
        assert back[key] == raw[key], key
    assert back["instances"]["total"] == raw["instances"]["total"]
