"""Bad input: every case of the foundation issue, each its own test.

Files are small and written by the tests (hand-made, values invented), except where a
real bundled file is cut or re-encoded into tmp_path (the bundled originals are never
touched: the last test checks their sha256 before and after loading).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from bearing_lib import BadValueError, FormatDetectionError, InputError, SchemaError, load, load_trace

AZURE_HEADER = "TIMESTAMP,ContextTokens,GeneratedTokens"
CANON_HEADER = "request_id,start_s,end_s,latency_ms,input_tokens,output_tokens,status"


def _w(tmp_path: Path, name: str, text: str | bytes) -> Path:
    p = tmp_path / name
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text, encoding="utf-8")
    return p


# --------------------------------------------------------------------------- empty / header only


def test_empty_file(tmp_path):
    p = _w(tmp_path, "empty.csv", "")
    with pytest.raises(FormatDetectionError, match="an empty file"):
        load_trace(p)
    with pytest.raises(InputError, match=r"empty\.csv: the file is empty"):
        load_trace(p, format="azure-llm-inference")
    with pytest.raises(InputError, match="the file is empty"):
        load_trace(_w(tmp_path, "empty.jsonl", "\n\n"), format="mooncake")


def test_header_only(tmp_path):
    p = _w(tmp_path, "h.csv", AZURE_HEADER + "\n")
    with pytest.raises(InputError, match=r"h\.csv: the file has a header but no data rows"):
        load_trace(p)
    with pytest.raises(InputError, match="header but no data rows"):
        load_trace(_w(tmp_path, "c.csv", CANON_HEADER + "\r\n"))


# --------------------------------------------------------------------------- schema


def test_required_column_missing_names_column_file_and_found_columns(tmp_path):
    p = _w(tmp_path, "AzureLLMInferenceTrace_x.csv", "TIMESTAMP,ContextTokens\n2023-11-16 18:17:03.9799600,5\n")
    with pytest.raises(SchemaError) as exc:
        load_trace(p, format="azure-llm-inference")
    msg = str(exc.value)
    assert "AzureLLMInferenceTrace_x.csv" in msg
    assert "missing column(s) ['GeneratedTokens']" in msg
    assert "found columns ['TIMESTAMP', 'ContextTokens']" in msg
    assert exc.value.field == "GeneratedTokens"
    # JSON lines: a Mooncake file without output_length
    q = _w(tmp_path, "m.jsonl", '{"timestamp": 0, "input_length": 5, "hash_ids": [1]}\n')
    with pytest.raises(SchemaError, match=r"missing column\(s\) \['output_length'\]; found columns"):
        load_trace(q, format="mooncake")


def test_non_numeric_token_counts_give_the_row(tmp_path):
    p = _w(
        tmp_path,
        "a.csv",
        f"{AZURE_HEADER}\n2023-11-16 18:17:03.9799600,5,1\n2023-11-16 18:17:04.0000000,five,1\n",
    )
    with pytest.raises(BadValueError) as exc:
        load_trace(p)
    assert (exc.value.row, exc.value.field) == (3, "ContextTokens")  # line 3: the header is line 1
    assert "expected a whole number, found 'five'" in str(exc.value)
    q = _w(
        tmp_path,
        "m.jsonl",
        '{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [1]}\n'
        '{"timestamp": 1, "input_length": 5, "output_length": 2.5, "hash_ids": [1]}\n',
    )
    with pytest.raises(BadValueError, match=r"row 2, field 'output_length': expected a whole number, found 2\.5"):
        load_trace(q)


# --------------------------------------------------------------------------- impossible values


def test_negative_tokens(tmp_path):
    p = _w(tmp_path, "t.csv", f"{CANON_HEADER}\na,1.0,2.0,1000,5,1,ok\nb,2.0,3.0,1000,-5,1,ok\n")
    with pytest.raises(BadValueError) as exc:
        load_trace(p)
    assert (exc.value.row, exc.value.field) == (3, "input_tokens")
    assert "expected a non-negative number (value -5" in str(exc.value)


def test_negative_latency(tmp_path):
    p = _w(tmp_path, "t.csv", f"{CANON_HEADER}\na,1.0,,-1.5,5,1,ok\n")
    with pytest.raises(BadValueError) as exc:
        load_trace(p)
    assert (exc.value.row, exc.value.field) == (2, "latency_ms")


def test_end_before_start(tmp_path):
    p = _w(tmp_path, "t.csv", f"{CANON_HEADER}\na,10.0,11.0,1000,5,1,ok\nb,20.0,19.5,,5,1,ok\n")
    with pytest.raises(BadValueError, match=r"row 3, field 'end_s': request ends before it starts \(value 19\.5"):
        load_trace(p)


# --------------------------------------------------------------------------- recorded, not fatal


def test_timestamps_without_timezone_are_utc_and_recorded(tmp_path):
    p = _w(tmp_path, "t.csv", "when,n\n2024-05-10 00:00:01.5,7\n")
    tr = load_trace(p, format="generic", mapping={"columns": {"start_s": "when", "input_tokens": "n"},
                                                  "units": {"when": "iso8601"}})
    assert tr.frame["start_s"][0] == pytest.approx(1715299201.5)  # 2024-05-10T00:00:01.5Z
    assert tr.provenance.timezone.startswith("UTC (assumed")
    assert any(x.code == "timezone_assumed" for x in tr.provenance.findings)
    az = _w(tmp_path, "az.csv", f"{AZURE_HEADER}\n2023-11-16 18:17:03.9799600,5,1\n")
    assert "assumed" in load_trace(az).provenance.timezone


def test_unsorted_timestamps_are_sorted_and_reported(tmp_path):
    p = _w(tmp_path, "t.csv", f"{CANON_HEADER}\na,3.0,,,1,1,ok\nb,1.0,,,2,1,ok\nc,2.0,,,3,1,ok\nd,0.5,,,4,1,ok\n")
    tr = load_trace(p)
    assert tr.frame["request_id"].to_list() == ["d", "b", "c", "a"]
    assert tr.frame["source_row"].to_list() == [5, 3, 4, 2]
    f = next(x for x in tr.provenance.findings if x.code == "unsorted")
    assert f.count == 2  # 3.0 -> 1.0 and 2.0 -> 0.5 step back in time
    assert "sorted by start_s" in f.message


def test_duplicate_request_ids_are_kept_counted_reported(tmp_path):
    p = _w(tmp_path, "t.csv", f"{CANON_HEADER}\na,1,,,1,1,ok\nb,2,,,1,1,ok\na,3,,,1,1,ok\nc,4,,,1,1,ok\nb,5,,,1,1,ok\n")
    tr = load_trace(p)
    assert len(tr) == 5
    f = next(x for x in tr.provenance.findings if x.code == "duplicate_ids")
    assert f.count == 4 and "4 rows share 2 request id(s); all rows were kept" in f.message


def test_crlf_and_bom(bundled, tmp_path):
    # a real Azure file re-encoded with a UTF-8 BOM (it already has CRLF line ends)
    src = bundled("traces/azure-llm-inference-2023/AzureLLMInferenceTrace_code.csv")
    raw = src.read_bytes()
    assert b"\r\n" in raw
    bom = _w(tmp_path, "bom.csv", b"\xef\xbb\xbf" + raw)
    a, b = load_trace(src), load_trace(bom)
    assert a.frame.equals(b.frame)
    # canonical CSV and Mooncake JSONL with BOM + CRLF
    c = _w(tmp_path, "c.csv", ("\ufeff" + f"{CANON_HEADER}\r\na,1.0,2.0,1000,5,1,ok\r\n").encode())
    assert load_trace(c).frame["latency_ms"].to_list() == [1000.0]
    m = _w(
        tmp_path,
        "m.jsonl",
        ("\ufeff" + '{"timestamp": 0, "input_length": 600, "output_length": 1, "hash_ids": [1, 2]}\r\n'
         '{"timestamp": 5, "input_length": 600, "output_length": 1, "hash_ids": [1, 3]}\r\n').encode(),
    )
    tr = load_trace(m)
    assert tr.frame["cached_tokens"].to_list() == [0, 512]


# --------------------------------------------------------------------------- truncated JSONL


def _truncated(bundled, tmp_path) -> tuple[Path, list[dict]]:
    src = bundled("traces/mooncake-fast25/conversation_trace.jsonl")
    lines = src.read_text().splitlines()[:5]
    cut = lines[4][: len(lines[4]) // 2]  # the 5th line cut in the middle, no newline
    p = _w(tmp_path, "cut.jsonl", "\n".join(lines[:4] + [cut]))
    return p, [json.loads(x) for x in lines[:4]]


def test_truncated_last_jsonl_line_is_an_error_naming_the_line(bundled, tmp_path):
    p, _ = _truncated(bundled, tmp_path)
    with pytest.raises(InputError) as exc:
        load_trace(p)
    assert exc.value.row == 5
    assert "line 5 is not valid JSON" in str(exc.value) and "truncated" in str(exc.value)
    assert "skip_bad_lines=True" in str(exc.value)


def test_truncated_last_jsonl_line_skipped_on_request(bundled, tmp_path):
    p, good = _truncated(bundled, tmp_path)
    tr = load_trace(p, skip_bad_lines=True)
    assert len(tr) == 4
    assert tr.frame["input_tokens"].to_list() == [r["input_length"] for r in good]
    f = next(x for x in tr.provenance.findings if x.code == "skipped_lines")
    assert f.count == 1 and "line(s) 5" in f.message
    assert tr.provenance.options["skip_bad_lines"] is True


# --------------------------------------------------------------------------- inputs never modified


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def test_input_files_are_unchanged_after_loading(bundled, tmp_path):
    files = [
        (bundled("traces/azure-llm-inference-2023/AzureLLMInferenceTrace_conv.csv"), {}),
        (bundled("traces/mooncake-fast25/conversation_trace.jsonl"), {}),
        (_w(tmp_path, "b.csv", "Timestamp,Model,Request tokens,Response tokens\n1,GPT-4,5,0\n"), {}),  # SYNTHETIC
        (_w(tmp_path, "u.csv", f"{CANON_HEADER}\nb,2.0,,,1,1,ok\na,1.0,,,1,1,ok\n"), {}),  # unsorted: sorted in memory
        (
            _w(tmp_path, "g.csv", "t,n\n2,5\n1,6\n"),
            {"format": "generic",
             "mapping": {"columns": {"start_s": "t", "input_tokens": "n"}, "time_origin": "relative"}},
        ),
        (Path(__file__).resolve().parents[1] / "fixtures" / "servegen" / "mm-image" / "chunk-25-trace.csv.gz", {}),
    ]
    before = {p: (_sha(p), p.stat().st_mtime_ns) for p, _ in files}
    for p, opts in files:
        ds = load(p, **opts)
        assert ds.provenance.sha256 == before[p][0]  # provenance records the hash of the bytes as stored
    after = {p: (_sha(p), p.stat().st_mtime_ns) for p, _ in files}
    assert after == before


def test_load_given_a_list_of_files_says_what_it_takes() -> None:
    """A list of paths is not one input: a ParameterError saying to pass their folder, not a TypeError."""
    import pytest

    from bearing_lib import load
    from bearing_lib.common.errors import ParameterError

    with pytest.raises(ParameterError, match="takes one path .* got list .*pass the folder"):
        load(["a.csv", "b.csv"])
