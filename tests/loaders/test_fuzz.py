"""Property-based fuzzing of the loaders on real files: only bearing's own errors may escape.

Each seed is a real file bundled with the project (cut to its first lines where large, so
an example stays fast), mutated by hypothesis: truncated anywhere, bytes flipped, lines
dropped or repeated, CSV header names shuffled (values then sit under the wrong names) or
whole columns shuffled. Loading the result, by detection and with the seed's format
forced, must either succeed with a canonical dataset or raise a
:class:`~bearing_lib.common.errors.BearingError`; any other exception (a ``ValueError``
from deep inside polars, an ``IndexError``, a ``UnicodeDecodeError``) is a bug.
"""

from __future__ import annotations

import gzip
import random
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bearing_lib.common.errors import BearingError
from bearing_lib.loaders import load

ROOT = Path(__file__).resolve().parents[2]

# (path, format, lines kept: None = whole file)
SEEDS: list[tuple[str, str, int | None]] = [
    ("data/traces/azure-llm-inference-2023/AzureLLMInferenceTrace_conv.csv", "azure-llm-inference", 200),
    ("data/traces/mooncake-fast25/conversation_trace.jsonl", "mooncake", 100),
    ("data/loadtests/lmbenchmark-llm-d-exp2/vllm-70b-2replicas/LMBench_sharegpt_output_1.csv", "lmbench-csv", None),
    ("tests/fixtures/jmeter/HTMLReportTestFile.csv", "jmeter-jtl-csv", 200),
    ("tests/fixtures/servegen/mm-image/chunk-25-trace.csv.gz", "servegen", 200),
    ("tests/fixtures/vllm/llm-d-1p1d/benchmark_2025-05-11_23-00-27.json", "vllm-bench-serve", None),
    ("tests/fixtures/guidellm/guidellm_report_v2.json", "guidellm-benchmarks", None),
    ("tests/fixtures/llmperf/leaderboard/individual/lepton_7b.json", "llmperf-individual-responses", None),
]


def _seed_bytes(rel: str, lines: int | None) -> bytes:
    raw = (ROOT / rel).read_bytes()
    gz = rel.endswith(".gz")
    data = gzip.decompress(raw) if gz else raw
    if lines is not None:
        data = b"".join(data.splitlines(keepends=True)[:lines])
    return data


@st.composite
def mutations(draw: st.DrawFn, data: bytes, is_csv: bool) -> bytes:
    kind = draw(st.sampled_from(["truncate", "flip", "lines", "header", "columns"] if is_csv
                                else ["truncate", "flip", "lines"]))
    if kind == "truncate":
        return data[: draw(st.integers(0, len(data)))]
    if kind == "flip":
        out = bytearray(data)
        for _ in range(draw(st.integers(1, 8))):
            if not out:
                break
            out[draw(st.integers(0, len(out) - 1))] = draw(st.integers(0, 255))
        return bytes(out)
    lines = data.splitlines(keepends=True)
    if kind == "lines":
        i = draw(st.integers(0, max(len(lines) - 1, 0)))
        op = draw(st.sampled_from(["drop", "repeat", "swap-with-first"]))
        if not lines:
            return data
        if op == "drop":
            del lines[i]
        elif op == "repeat":
            lines.insert(i, lines[i])
        else:
            lines[0], lines[i] = lines[i], lines[0]
        return b"".join(lines)
    seed = draw(st.integers(0, 2**32 - 1))
    rng = random.Random(seed)
    rows = [ln.rstrip(b"\r\n").split(b",") for ln in lines]
    width = len(rows[0]) if rows else 0
    perm = list(range(width))
    rng.shuffle(perm)
    if kind == "header":
        rows[0] = [rows[0][j] for j in perm]
    else:
        rows = [[r[j] for j in perm] if len(r) == width else r for r in rows]
    return b"\n".join(b",".join(r) for r in rows) + b"\n"


def _check(path: Path, fmt: str) -> None:
    for kwargs in ({}, {"format": fmt}):
        try:
            ds = load(path, **kwargs)
        except BearingError:
            continue
        assert ds.kind in ("requests", "loadpoints", "rates")
        assert ds.frame.height >= 0


@pytest.mark.parametrize("rel, fmt, lines", SEEDS, ids=[Path(s[0]).name for s in SEEDS])
def test_mutated_real_files_raise_only_bearing_errors(rel, fmt, lines, tmp_path):
    data = _seed_bytes(rel, lines)
    name = Path(rel).name
    gz = name.endswith(".gz")
    is_csv = name.removesuffix(".gz").endswith(".csv")

    @settings(max_examples=40, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(mutations(data, is_csv))
    def run(mutated: bytes) -> None:
        # a fresh folder per example, kept until the test ends (the loader hashes in the background)
        p = Path(tempfile.mkdtemp(dir=tmp_path)) / name
        p.write_bytes(gzip.compress(mutated) if gz else mutated)
        _check(p, fmt)
        if gz:  # the compressed stream itself cut short
            q = p.with_name("cut-" + name)
            blob = p.read_bytes()
            q.write_bytes(blob[: len(blob) // 2])
            _check(q, fmt)

    run()


def test_seeds_load_unmutated(tmp_path):
    for rel, fmt, lines in SEEDS:
        data = _seed_bytes(rel, lines)
        name = Path(rel).name
        p = Path(tempfile.mkdtemp(dir=tmp_path)) / name
        p.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
        ds = load(p, format=fmt)
        assert ds.frame.height > 0, rel


def test_mutated_canonical_parquet_raises_only_bearing_errors(tmp_path):
    # The real Azure slice written as bearing-canonical Parquet, then truncated or byte-flipped
    # (a broken footer, a corrupt page, metadata that no longer parses).
    from bearing_lib.loaders.canonical import write_trace

    src = Path(tempfile.mkdtemp(dir=tmp_path)) / "a.csv"
    src.write_bytes(_seed_bytes(SEEDS[0][0], 300))
    data = write_trace(load(src), src.with_name("t.parquet")).read_bytes()

    @settings(max_examples=40, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(mutations(data, is_csv=False))
    def run(mutated: bytes) -> None:
        p = Path(tempfile.mkdtemp(dir=tmp_path)) / "t.parquet"
        p.write_bytes(mutated)
        _check(p, "bearing-canonical")

    run()
