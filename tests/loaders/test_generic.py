"""The generic loader: column mapping, unit declarations, status mapping, YAML mappings.

Small hand-written files; expected values are worked out by hand (and with datetime for
ISO 8601 times). One test maps the real bundled Azure trace through a YAML mapping.
"""

from __future__ import annotations

import csv
from datetime import UTC, datetime, timedelta, timezone

import polars as pl
import pytest

from bearing_lib import BadValueError, FormatDetectionError, ParameterError, SchemaError, load_trace
from bearing_lib.loaders import detect

T0 = datetime(2024, 5, 10, tzinfo=UTC).timestamp()


def test_generic_is_never_detected(tmp_path):
    p = tmp_path / "x.csv"
    p.write_text("id,sent,took\na,1,2\n")
    with pytest.raises(FormatDetectionError, match="generic"):
        detect(p)


@pytest.mark.parametrize(
    "unit,values",
    [
        ("s", ["1715299200.5", "1715299201"]),
        ("ms", ["1715299200500", "1715299201000"]),
        ("us", ["1715299200500000", "1715299201000000"]),
        ("ns", ["1715299200500000000", "1715299201000000000"]),
    ],
)
def test_generic_numeric_time_units(tmp_path, unit, values):
    p = tmp_path / "t.csv"
    p.write_text("id,sent,took_us\n" + "".join(f"r{i},{v},2500\n" for i, v in enumerate(values)))
    tr = load_trace(
        p,
        format="generic",
        mapping={"columns": {"request_id": "id", "start_s": "sent", "latency_ms": "took_us"},
                 "units": {"sent": unit, "took_us": "us"}},
    )
    f = tr.frame
    assert f["start_s"].to_list() == pytest.approx([T0 + 0.5, T0 + 1.0], abs=1e-6)
    assert f["latency_ms"].to_list() == [2.5, 2.5]
    assert f["end_s"].to_list() == pytest.approx([T0 + 0.5025, T0 + 1.0025], abs=1e-6)
    assert tr.provenance.fields["end_s"] == "derived" and tr.provenance.fields["latency_ms"] == "measured"
    assert tr.provenance.time_origin == "epoch"


def test_generic_iso8601_with_offsets_and_end_time(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text(
        '{"id": "a", "t0": "2024-05-10T02:00:00+02:00", "t1": "2024-05-10T00:00:01.250Z", "code": 200}\n'
        '{"id": "b", "t0": "2024-05-10T00:00:02Z", "t1": "2024-05-10T00:00:02.5Z", "code": 429}\n'
    )
    tr = load_trace(
        p,
        format="generic",
        mapping={
            "columns": {"request_id": "id", "start_s": "t0", "end_s": "t1", "status": "code"},
            "units": {"t0": "iso8601", "t1": "iso8601"},
            "status_map": {200: "ok", 429: "rejected"},
        },
    )
    f = tr.frame
    assert f["start_s"].to_list() == pytest.approx([T0, T0 + 2], abs=1e-6)
    assert f["latency_ms"].to_list() == pytest.approx([1250.0, 500.0])
    assert f["status"].to_list() == ["ok", "rejected"]
    assert tr.provenance.fields["latency_ms"] == "derived"
    assert "offsets in the file" in tr.provenance.timezone


def test_generic_naive_iso8601_uses_declared_timezone(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("when,n\n2024-05-10 09:00:00,5\n")
    tr = load_trace(
        p, format="generic",
        mapping={"columns": {"start_s": "when", "input_tokens": "n"}, "units": {"when": "iso8601"},
                 "timezone": "Asia/Shanghai"},
    )
    expected = datetime(2024, 5, 10, 9, tzinfo=timezone(timedelta(hours=8))).timestamp()
    assert tr.frame["start_s"][0] == pytest.approx(expected)
    assert "Asia/Shanghai" in tr.provenance.timezone
    assert any(x.code == "timezone_assumed" for x in tr.provenance.findings)


def test_generic_status_default_and_unmapped_error(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("t,code\n1,200\n2,500\n3,503\n")
    m = {"columns": {"start_s": "t", "status": "code"}, "status_map": {"200": "ok"}, "time_origin": "relative"}
    with pytest.raises(BadValueError, match=r"row 3, field 'code': status value '500' is not mapped"):
        load_trace(p, format="generic", mapping=m)
    tr = load_trace(p, format="generic", mapping={**m, "status_default": "error"})
    assert tr.frame["status"].to_list() == ["ok", "error", "error"]
    assert next(x for x in tr.provenance.findings if x.code == "status_default").count == 2
    assert tr.provenance.time_origin == "relative"


def test_generic_parquet_and_yaml_mapping_on_real_azure(bundled, tmp_path):
    src = bundled("traces/azure-llm-inference-2023/AzureLLMInferenceTrace_code.csv")
    with open(src, newline="") as fh:
        rows = list(csv.DictReader(fh))
    # the real trace, re-stored as Parquet with its own column names
    pq = tmp_path / "azure.parquet"
    pl.read_csv(src, infer_schema=False).write_parquet(pq)
    yml = tmp_path / "map.yaml"
    yml.write_text(
        "columns:\n  start_s: TIMESTAMP\n  input_tokens: ContextTokens\n  output_tokens: GeneratedTokens\n"
        "units:\n  TIMESTAMP: iso8601\nstatus_default: ok\n"
    )
    tr = load_trace(pq, format="generic", mapping=yml)
    ts = [
        datetime.strptime(r["TIMESTAMP"][:26], "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=UTC).timestamp()
        + int(r["TIMESTAMP"][26:] or 0) * 1e-7
        for r in rows
    ]
    assert len(tr) == len(rows) == 8_819
    assert tr.frame["start_s"].to_list() == pytest.approx(ts, abs=1e-6)
    assert tr.frame["input_tokens"].sum() == sum(int(r["ContextTokens"]) for r in rows)
    assert set(tr.frame["status"].to_list()) == {"ok"}
    assert tr.provenance.fields["status"] == "derived"
    assert tr.provenance.options["mapping_file"] == str(yml)


@pytest.mark.parametrize(
    "mapping,message",
    [
        (None, "needs a column mapping"),
        ({"columns": {"latency": "x"}}, r"not canonical field\(s\) \['latency'\]"),
        ({"columns": {"start_s": "t"}, "units": {"t": "minutes"}}, "unit 'minutes' for column 't'"),
        ({"columns": {"latency_ms": "d"}, "units": {"d": "iso8601"}}, "unit 'iso8601' for column 'd'"),
        ({"columns": {"start_s": "t"}, "units": {"zz": "s"}}, "'units' names column 'zz'"),
        ({"columns": {"start_s": "t"}, "status_map": {"1": "fine"}}, r"status value\(s\) \['fine'\]"),
        ({"columns": {"start_s": "t"}, "colums": {}}, r"unknown mapping key\(s\) \['colums'\]"),
    ],
)
def test_generic_bad_mappings(tmp_path, mapping, message):
    p = tmp_path / "t.csv"
    p.write_text("t,d,x\n1,2,3\n")
    with pytest.raises(ParameterError, match=message):
        load_trace(p, format="generic", mapping=mapping)


def test_generic_missing_source_column_lists_columns(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("t,d\n1,2\n")
    with pytest.raises(SchemaError, match=r"missing column\(s\) \['sent'\]; found columns \['t', 'd'\]"):
        load_trace(p, format="generic", mapping={"columns": {"start_s": "sent"}})
