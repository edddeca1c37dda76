"""Gzip is transparent for every format: a .gz copy (written to tmp_path) loads to the same data.

Detection works on the decompressed content (magic bytes, not the file name).
"""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import polars as pl
import pytest

from bearing_lib import load, load_trace
from bearing_lib.loaders import detect
from bearing_lib.loaders.canonical import write_trace

SERVEGEN_CHUNK = Path(__file__).resolve().parents[1] / "fixtures" / "servegen" / "mm-image" / "chunk-25-trace.csv.gz"


def _gz(src: Path, dst: Path) -> Path:
    with open(src, "rb") as fh, gzip.open(dst, "wb") as out:
        shutil.copyfileobj(fh, out)
    return dst


def _same(a, b):
    assert a.frame.drop("source_row").equals(b.frame.drop("source_row"))
    assert a.frame["source_row"].to_list() == b.frame["source_row"].to_list()
    assert a.provenance.format == b.provenance.format
    assert a.provenance.sha256 != b.provenance.sha256  # sha256 is of the bytes as stored


def test_gzip_azure_csv(bundled, tmp_path):
    src = bundled("traces/azure-llm-inference-2023/AzureLLMInferenceTrace_code.csv")
    gz = _gz(src, tmp_path / "AzureLLMInferenceTrace_code.csv.gz")
    assert detect(gz).name == "azure-llm-inference"
    _same(load_trace(src), load_trace(gz))


def test_gzip_mooncake_jsonl(bundled, tmp_path):
    src = bundled("traces/mooncake-fast25/conversation_trace.jsonl")
    gz = _gz(src, tmp_path / "conversation_trace.jsonl.gz")
    _same(load_trace(src), load_trace(gz))


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".jsonl"])
def test_gzip_canonical_tables(bundled, tmp_path, suffix):
    tr = load_trace(bundled("traces/azure-llm-inference-2023/AzureLLMInferenceTrace_code.csv"))
    plain = write_trace(tr, tmp_path / f"t{suffix}")
    gz = _gz(plain, tmp_path / f"t{suffix}.gz")
    assert detect(gz).name == "bearing-canonical"
    _same(load_trace(plain), load_trace(gz))


def test_gzip_burstgpt_csv(tmp_path):
    # SYNTHETIC fixture (the real BurstGPT files are not available)
    src = tmp_path / "b.csv"
    src.write_text(
        "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
        "5,ChatGPT,472,18,490,Conversation log\n7,GPT-4,10,0,10,API log\n"
    )
    _same(load_trace(src), load_trace(_gz(src, tmp_path / "b.csv.gz")))


def test_gzip_generic_jsonl(tmp_path):
    src = tmp_path / "g.jsonl"
    src.write_text('{"t": 1, "n": 5}\n{"t": 2, "n": 7}\n')
    m = {"columns": {"start_s": "t", "input_tokens": "n"}, "time_origin": "relative"}
    _same(load_trace(src, format="generic", mapping=m), load_trace(_gz(src, tmp_path / "g.jsonl.gz"), format="generic",
                                                                    mapping=m))


def test_gzip_servegen_chunk_and_its_plain_copy(tmp_path):
    plain = tmp_path / "chunk-25-trace.csv"
    plain.write_bytes(gzip.decompress(SERVEGEN_CHUNK.read_bytes()))
    a, b = load(SERVEGEN_CHUNK), load(plain)
    assert a.frame.equals(b.frame)
    assert isinstance(a.frame, pl.DataFrame)
