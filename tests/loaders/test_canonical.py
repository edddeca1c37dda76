"""bearing-canonical files (what bearing writes): Parquet, CSV and JSON lines.

Expected values come from the bundled Azure conversation trace parsed with the csv and
datetime modules (19,366 requests), and from small hand-written files.
"""

from __future__ import annotations

import csv
import json
from datetime import UTC, datetime

import polars as pl
import pytest

from bearing_lib import BadValueError, ParameterError, SchemaError, load_trace
from bearing_lib.loaders import detect
from bearing_lib.loaders.canonical import write_trace

AZURE = "traces/azure-llm-inference-2023/AzureLLMInferenceTrace_conv.csv"


def _azure_truth(path):
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    ts = [
        datetime.strptime(r["TIMESTAMP"][:26], "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=UTC).timestamp()
        + int(r["TIMESTAMP"][26:] or 0) * 1e-7
        for r in rows
    ]
    return rows, ts


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".jsonl"])
def test_canonical_round_trip_of_a_real_trace(bundled, tmp_path, suffix):
    src = bundled(AZURE)
    rows, ts = _azure_truth(src)
    out = write_trace(load_trace(src), tmp_path / f"conv{suffix}")
    assert detect(out).name == "bearing-canonical"
    tr = load_trace(out)
    f = tr.frame
    assert len(tr) == len(rows) == 19_366
    assert f["start_s"].to_list() == pytest.approx(ts, abs=1e-6)
    assert f["input_tokens"].to_list() == [int(r["ContextTokens"]) for r in rows]
    assert f["output_tokens"].to_list() == [int(r["GeneratedTokens"]) for r in rows]
    assert tr.provenance.time_origin == "epoch"
    assert tr.provenance.fields["input_tokens"] == "measured"
    assert tr.provenance.fields["latency_ms"] == "absent"
    # source_row now points into the file loaded (CSV/JSONL: line; CSV header is line 1; Parquet: row)
    first = {".parquet": 1, ".csv": 2, ".jsonl": 1}[suffix]
    assert f["source_row"][0] == first


def test_canonical_parquet_keeps_relative_time_origin(bundled, tmp_path):
    tr = load_trace(bundled("traces/mooncake-fast25/conversation_trace.jsonl"))
    out = write_trace(tr, tmp_path / "mc.parquet")
    back = load_trace(out)
    assert back.provenance.time_origin == "relative"
    assert back.frame["cached_tokens"].sum() == tr.frame["cached_tokens"].sum()
    assert not [x for x in back.provenance.findings if x.code == "relative_times_assumed"]


def test_canonical_csv_small_values_read_as_relative(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text(
        "request_id,start_s,end_s,ttft_ms,latency_ms,input_tokens,output_tokens,status,error\n"
        "a,0.0,1.5,120.5,1500,100,20,ok,\n"
        "b,0.25,0.75,,500,50,0,error,http_500\n"
    )
    tr = load_trace(p)
    f = tr.frame
    assert f["latency_ms"].to_list() == [1500.0, 500.0]
    assert f["ttft_ms"].to_list() == [120.5, None]
    assert f["status"].to_list() == ["ok", "error"]
    assert f["error"].to_list() == [None, "http_500"]
    assert tr.provenance.time_origin == "relative"
    assert any(x.code == "relative_times_assumed" for x in tr.provenance.findings)
    # forcing epoch on times in 1970 is refused: outside the plausible 2000-2100 range
    with pytest.raises(BadValueError, match=r"field 'start_s': expected epoch seconds between 2000-01-01"):
        load_trace(p, time_origin="epoch")


def test_canonical_jsonl_without_per_request_times(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text("\n".join(json.dumps({"start_s": None, "latency_ms": v, "output_tokens": 10}) for v in (5, 7)) + "\n")
    tr = load_trace(p)
    assert tr.provenance.time_origin == "none"
    assert tr.frame["latency_ms"].to_list() == [5.0, 7.0]


def test_canonical_rejects_non_canonical_columns(tmp_path):
    p = tmp_path / "t.parquet"
    pl.DataFrame({"start_s": [1.0], "latency": [2.0]}).write_parquet(p)
    with pytest.raises(SchemaError, match=r"non-canonical column\(s\) \['latency'\]"):
        load_trace(p, format="bearing-canonical")


def test_canonical_parquet_with_text_numbers_names_the_row(tmp_path):
    p = tmp_path / "t.parquet"
    pl.DataFrame({"start_s": [1.7e9, 1.7e9 + 1], "input_tokens": ["12", "x"]}).write_parquet(p)
    with pytest.raises(BadValueError, match=r"row 2, field 'input_tokens': expected a whole number, found 'x'"):
        load_trace(p)


def test_write_trace_refuses_to_overwrite_its_source(bundled, tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("start_s,input_tokens\n1700000000.0,5\n")
    before = p.read_bytes()
    with pytest.raises(ParameterError, match="refusing to overwrite"):
        write_trace(load_trace(p), p)
    assert p.read_bytes() == before
