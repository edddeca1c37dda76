"""Validation of the canonical trace (bearing_lib.data.trace.validate), on hand-made frames.

Each expected count is worked out by hand from the few rows written here.
"""

from __future__ import annotations

import polars as pl
import pytest

from bearing_lib import BadValueError, SchemaError
from bearing_lib.data.provenance import Provenance
from bearing_lib.data.trace import REQUEST_SCHEMA, conform, validate


def _prov(origin="relative"):
    p = Provenance(source="mem", format="test", tool="test", sha256="")
    p.time_origin = origin
    return p


def _frame(**cols):
    n = len(next(iter(cols.values())))
    cols.setdefault("source_row", list(range(2, n + 2)))
    return conform(pl.DataFrame(cols))


def test_conform_adds_every_canonical_column_in_order():
    f = _frame(start_s=[1.0], input_tokens=[5])
    assert f.columns == list(REQUEST_SCHEMA)
    assert dict(f.schema) == REQUEST_SCHEMA
    assert f["latency_ms"].to_list() == [None]


def test_conform_rejects_non_canonical_columns():
    with pytest.raises(SchemaError, match=r"non-canonical columns \['latency'\]"):
        conform(pl.DataFrame({"start_s": [1.0], "latency": [1.0]}))


def test_increasing_ids_are_not_duplicates():
    prov = _prov()
    validate(_frame(start_s=[1.0, 2.0, 3.0], request_id=["a", "b", "c"]), prov)
    assert not prov.findings


def test_unordered_unique_ids_are_not_duplicates():
    prov = _prov()
    validate(_frame(start_s=[1.0, 2.0, 3.0, 4.0], request_id=["9", "10", "2", "x"]), prov)
    assert not prov.findings


def test_duplicates_counted_once_per_row_sharing():
    prov = _prov()
    f = validate(_frame(start_s=[1.0, 2.0, 3.0, 4.0, 5.0], request_id=["b", "a", "b", "b", "c"]), prov)
    assert f.height == 5
    (d,) = prov.findings
    assert d.code == "duplicate_ids" and d.count == 3 and "3 rows share 1 request id(s)" in d.message


def test_null_ids_are_not_duplicates_but_real_ones_among_them_are():
    prov = _prov()
    validate(_frame(start_s=[1.0, 2.0, 3.0], request_id=[None, None, "a"]), prov)
    assert not prov.findings
    validate(_frame(start_s=[1.0, 2.0, 3.0, 4.0], request_id=[None, "a", None, "a"]), prov)
    assert [(x.code, x.count) for x in prov.findings] == [("duplicate_ids", 2)]


def test_unsorted_rows_are_sorted_stably():
    prov = _prov()
    f = validate(_frame(start_s=[2.0, 1.0, 1.0, 0.5], request_id=["a", "b", "c", "d"]), prov)
    assert f["request_id"].to_list() == ["d", "b", "c", "a"]  # ties (b, c) keep file order
    assert [(x.code, x.count) for x in prov.findings] == [("unsorted", 2)]


@pytest.mark.parametrize(
    "cols,field,row",
    [
        ({"start_s": [1.0, 2.0], "cached_tokens": [0, -1]}, "cached_tokens", 3),
        ({"start_s": [1.0, 2.0], "ttft_ms": [-0.5, 1.0]}, "ttft_ms", 2),
        ({"start_s": [1.0, 2.0], "end_s": [1.5, 1.0]}, "end_s", 3),
        ({"start_s": [1.0, 2.0], "status": ["ok", "failed"]}, "status", 3),
        ({"start_s": [1.0, None]}, "start_s", 3),
        ({"start_s": [1.0], "offered_load_unit": ["qps"]}, "offered_load_unit", 2),
    ],
)
def test_impossible_values_name_row_and_field(cols, field, row):
    with pytest.raises(BadValueError) as exc:
        validate(_frame(**cols), _prov())
    assert (exc.value.field, exc.value.row) == (field, row)


def test_time_origin_none_requires_null_start_times():
    f = _frame(start_s=[None, None], latency_ms=[1.0, 2.0])
    assert validate(f, _prov("none")).height == 2
    with pytest.raises(BadValueError, match="missing request start time"):
        validate(f, _prov("relative"))


def test_empty_frame_is_an_error():
    with pytest.raises(BadValueError, match="holds no requests"):
        validate(conform(pl.DataFrame(schema={"start_s": pl.Float64})), _prov())
