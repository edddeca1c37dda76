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


# --------------------------------------------------------------------------- plausibility (issue: bad input)

T0 = 1_700_000_000.0  # 2023-11-14 22:13:20 UTC


@pytest.mark.parametrize(
    "cols,field,row,words",
    [
        ({"start_s": [1.0, 2.0], "latency_ms": [5.0, float("nan")]}, "latency_ms", 3, "finite latency"),
        ({"start_s": [1.0, 2.0], "ttft_ms": [float("inf"), 1.0]}, "ttft_ms", 2, "finite latency"),
        ({"start_s": [1.0, 2.0], "tpot_ms": [1.0, 1e308]}, "tpot_ms", 3, r"at most 86400000 ms \(24 h\)"),
        ({"start_s": [1.0, 2.0], "itl_ms": [86_400_000.0, 86_400_000.5]}, "itl_ms", 3, "at most 86400000 ms"),
        ({"start_s": [1.0, 2.0], "input_tokens": [100_000_000, 100_000_001]}, "input_tokens", 3, "at most 100,000,000"),
        ({"start_s": [1.0, 2.0], "offered_load": [1.0, 0.0]}, "offered_load", 3, "positive offered load"),
        ({"start_s": [1.0, 2.0], "offered_load": [-3.0, 1.0]}, "offered_load", 2, "positive offered load"),
        ({"start_s": [1.0, 2.0], "offered_load": [float("nan"), 1.0]}, "offered_load", 2, "positive offered load"),
        ({"start_s": [float("inf"), 2.0]}, "start_s", 2, "finite time"),
    ],
)
def test_implausible_values_name_row_field_and_bound(cols, field, row, words):
    with pytest.raises(BadValueError, match=words) as exc:
        validate(_frame(**cols), _prov())
    assert (exc.value.field, exc.value.row) == (field, row)


def test_bounds_themselves_and_unbounded_rate_pass():
    f = _frame(start_s=[1.0, 2.0], latency_ms=[0.0, 86_400_000.0], input_tokens=[0, 100_000_000],
               offered_load=[float("inf"), 0.001])
    assert validate(f, _prov()).height == 2


@pytest.mark.parametrize("factor,word", [(1e3, "milliseconds"), (1e6, "microseconds"), (1e9, "nanoseconds")])
def test_epoch_times_off_by_a_unit_are_named_with_the_fix(factor, word):
    f = _frame(start_s=[T0 * factor, (T0 + 1) * factor])
    with pytest.raises(BadValueError) as exc:
        validate(f, _prov("epoch"), epoch_range=True)
    msg = str(exc.value)
    short = {1e3: "1e3", 1e6: "1e6", 1e9: "1e9"}[factor]
    assert f"looks like epoch {word}" in msg and f"divide by {short}" in msg
    assert "= 2023-11-14 UTC" in msg  # T0 / factor * factor, read back as a date
    assert (exc.value.field, exc.value.row) == ("start_s", 2)


def test_epoch_range_edges_and_opt_in():
    lo, hi = 946_684_800.0, 4_102_444_800.0  # 2000-01-01 and 2100-01-01 UTC
    assert validate(_frame(start_s=[lo, hi]), _prov("epoch"), epoch_range=True).height == 2
    with pytest.raises(BadValueError, match="between 2000-01-01 and 2100-01-01") as exc:
        validate(_frame(start_s=[lo - 1, hi + 1]), _prov("epoch"), epoch_range=True)
    assert "2 row(s) affected" in str(exc.value) and "looks like" not in str(exc.value)
    # traces built in code (simulations) may count epoch seconds from 0
    assert validate(_frame(start_s=[0.0, 1.0]), _prov("epoch")).height == 2
    # relative clocks must not run backwards past the start
    with pytest.raises(BadValueError, match=r"from the trace start, >= 0"):
        validate(_frame(start_s=[-1.0, 1.0]), _prov("relative"), epoch_range=True)


def test_every_problem_is_reported_at_once():
    f = _frame(start_s=[1.0, 2.0, 3.0], ttft_ms=[1.0, -2.0, -3.0], status=["ok", "ok", "lost"],
               latency_ms=[float("nan"), 1.0, 2.0])
    with pytest.raises(BadValueError) as exc:
        validate(f, _prov())
    e = exc.value
    got = [(p.field, p.row) for p in e.problems]
    assert got == [("latency_ms", 2), ("ttft_ms", 3), ("status", 4)]  # check order; first bad row of each
    assert str(e).startswith("mem: 3 problems:\n  - row 2, field 'latency_ms'")
    assert "(value -2.0; 2 row(s) affected)" in str(e)
    assert (e.row, e.field) == (2, "latency_ms")


def test_time_unit_hint_by_hand():
    from bearing_lib.data.trace import time_unit_hint

    assert time_unit_hint(1_700_000_000_000.0).startswith("looks like epoch milliseconds (1.7e+12 / 1e3 = 2023-11-14")
    assert time_unit_hint(1_700_000_000_000_000.0).startswith("looks like epoch microseconds")
    assert time_unit_hint(5e9) == ""  # 2128: no unit brings it into 2000-2100
    assert time_unit_hint(4.2e9 * 1e3) == ""  # 4.2e9 s is 2103: out of range whatever the unit


def test_every_status_value_is_accepted_and_unknown_is_one_of_them():
    from bearing_lib.data.trace import OUTCOME_UNKNOWN, STATUSES

    assert STATUSES == ("ok", "error", "timeout", "rejected", "cancelled", "unknown")
    assert OUTCOME_UNKNOWN == ("cancelled", "unknown")  # neither success nor failure
    f = _frame(start_s=[float(i) for i in range(6)], status=list(STATUSES))
    prov = Provenance(source="t", format="t", tool="t", sha256="")
    assert validate(f, prov)["status"].to_list() == list(STATUSES)
