"""Shared reading steps (bearing_lib.loaders._common) and loader-option checking.

Hand-written files; expected values are the literal values written.
"""

from __future__ import annotations

import gzip

import polars as pl
import pytest

from bearing_lib import BadValueError, InputError, ParameterError
from bearing_lib.data.provenance import Provenance
from bearing_lib.loaders import get_format
from bearing_lib.loaders._common import cast_checked, read_csv_checked, read_jsonl_checked, read_table
from bearing_lib.loaders.registry import call_loader
from bearing_lib.loaders.source import InputSource

COLS = {"t": pl.Float64(), "n": pl.Int64(), "s": pl.String()}


def test_csv_clean_and_untidy_files_read_the_same(tmp_path):
    clean = tmp_path / "a.csv"
    clean.write_text("t,n,s\n1.5,550,x\n2,7,\n")
    untidy = tmp_path / "b.csv"  # whitespace, "550.0" for a whole number, CRLF: the careful path
    untidy.write_text("t , n,s\r\n 1.5,550.0,x\r\n2, 7 ,\r\n")
    a = read_csv_checked(InputSource(clean), COLS)
    b = read_csv_checked(InputSource(untidy), COLS)
    assert a.select(list(COLS)).to_dicts() == [{"t": 1.5, "n": 550, "s": "x"}, {"t": 2.0, "n": 7, "s": None}]
    assert b.select("t", "n").to_dicts() == a.select("t", "n").to_dicts()
    assert a["source_row"].to_list() == b["source_row"].to_list() == [2, 3]


def test_csv_fractional_whole_number_names_row(tmp_path):
    p = tmp_path / "a.csv"
    p.write_text("t,n,s\n1,2,x\n1,2.5,x\n")
    with pytest.raises(BadValueError) as exc:
        read_csv_checked(InputSource(p), COLS)
    assert (exc.value.row, exc.value.field) == (3, "n")


def test_jsonl_blank_lines_keep_true_line_numbers(tmp_path):
    p = tmp_path / "a.jsonl"
    p.write_text('{"n": 1}\n\n{"n": 2}\n   \n{"n": 3}\n')
    f = read_jsonl_checked(InputSource(p))
    assert f["n"].to_list() == [1, 2, 3]
    assert f["source_row"].to_list() == [1, 3, 5]


def test_jsonl_non_object_line_and_skip(tmp_path):
    p = tmp_path / "a.jsonl"
    p.write_text('{"n": 1}\n[1, 2]\n{"n": 3}\n{"n": 4\n')
    with pytest.raises(InputError, match=r"line 2 is expected a JSON object, found list; 2 bad line\(s\) in all"):
        read_jsonl_checked(InputSource(p))
    prov = Provenance(source=str(p), format="x", tool="x", sha256="")
    f = read_jsonl_checked(InputSource(p), skip_bad_lines=True, provenance=prov)
    assert f["n"].to_list() == [1, 3] and f["source_row"].to_list() == [1, 3]
    assert prov.findings[0].count == 2 and "line(s) 2, 4" in prov.findings[0].message


def test_cast_checked_reports_the_source_row():
    f = pl.DataFrame({"n": ["1", " 2 ", "3.0", "four"], "source_row": [10, 11, 12, 13]})
    with pytest.raises(BadValueError) as exc:
        cast_checked(f, {"n": pl.Int64()}, path="mem")
    assert (exc.value.row, exc.value.field) == (13, "n")
    assert cast_checked(f.head(3), {"n": pl.Int64()}, path="mem")["n"].to_list() == [1, 2, 3]


def test_read_table_parquet_lazy_and_gzip(tmp_path):
    p = tmp_path / "a.parquet"
    pl.DataFrame({"t": [1.0, 2.0], "n": [5, 6], "s": ["a", "b"]}).write_parquet(p)
    lazy = read_table(InputSource(p), COLS)
    assert isinstance(lazy, pl.LazyFrame)
    g = tmp_path / "a.parquet.gz"
    g.write_bytes(gzip.compress(p.read_bytes()))
    eager = read_table(InputSource(g), COLS)
    eager = eager.collect() if isinstance(eager, pl.LazyFrame) else eager
    assert lazy.collect().equals(eager)
    assert eager["source_row"].to_list() == [1, 2]


def test_unknown_loader_option_is_a_parameter_error(bundled):
    src = InputSource(bundled("traces/mooncake-fast25/conversation_trace.jsonl"))
    with pytest.raises(ParameterError, match=r"does not take option\(s\) \['block_size'\]; it takes: block_tokens"):
        call_loader(get_format("mooncake"), src, {"block_size": 512})


def test_several_formats_fitting_is_an_error_listing_them(bundled, monkeypatch):
    from bearing_lib import FormatDetectionError
    from bearing_lib.loaders import registry

    greedy = registry.FormatSpec(
        name="greedy-test",
        tool="a test format that claims every file",
        kind="requests",
        needs="anything at all",
        sniff=lambda source: True,
        load=lambda source: None,
    )
    monkeypatch.setitem(registry._REGISTRY, greedy.name, greedy)
    path = bundled("traces/azure-llm-inference-2023/AzureLLMInferenceTrace_code.csv")
    with pytest.raises(FormatDetectionError) as exc:
        registry.detect(path)
    msg = str(exc.value)
    assert "several formats fit" in msg and "TIMESTAMP,ContextTokens,GeneratedTokens" in msg
    assert "- azure-llm-inference (" in msg
    assert "- greedy-test (a test format that claims every file): anything at all" in msg
