"""LMCache LMBenchmark per-request CSVs (also as run by fmperf in llm-d-benchmark).

One CSV per QPS level; one row per *completed* request. Two layouts:

- ``sharegpt``: ``prompt_tokens, generation_tokens, ttft, generation_time, launch_time, finish_time``;
- multi-round (``short_input``): the same plus ``user_id, question_id`` before the times
  (token counts written as ``76.0``).

Units: ``ttft`` and ``generation_time`` (first to last token) in seconds, ``launch_time``
and ``finish_time`` in epoch seconds. The QPS level is written **only in the file name**
(``LMBench_sharegpt_output_<qps>.csv``, ``LMBench_short_input_qps<qps>.csv``): bearing reads
it from there, says so in a finding and cross-checks it against the measured launch rate.
There is **no error column**: failed requests are simply absent, so an error rate cannot be
known from these files (a finding says so on every load).

A folder of such CSVs (and its direct sub-folders) loads as runs with ordered steps: one run per
folder and workload (``<folder>/<workload>``), steps ordered by QPS.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from bearing_lib.common.errors import InputError, UnsupportedVersionError
from bearing_lib.data.trace import RequestTrace
from bearing_lib.loaders._common import finish_trace, new_provenance, read_csv_checked
from bearing_lib.loaders._loadtest import step_exprs, step_row
from bearing_lib.loaders.registry import FormatSpec, register
from bearing_lib.loaders.source import Source

NAME = "lmbench-csv"
TOOL = "LMCache LMBenchmark"
BASE = ("prompt_tokens", "generation_tokens", "ttft", "generation_time", "launch_time", "finish_time")
MULTI = ("user_id", "question_id")
SIGNATURE = ("generation_time", "launch_time")
RATE_TOLERANCE = 0.10
"""Relative difference between the file-name QPS and the measured launch rate that earns a warning."""

_NAME_RE = re.compile(r"^LMBench_(?P<workload>.+?)_(?:output_|qps)(?P<qps>\d+(?:\.\d+)?)\.csv$")
_LOOSE_RE = re.compile(r"(?P<qps>\d+(?:\.\d+)?)\.csv$")


def _header(source: Source) -> list[str]:
    return [c.strip() for c in source.first_line.split(",")]


def _is_lmbench_file(source: Source) -> bool:
    if source.is_dir or source.suffix != ".csv":
        return False
    cols = _header(source)
    return all(c in cols for c in SIGNATURE)


def _files(source: Source) -> list[Source]:
    if not source.is_dir:
        return [source]
    # the folder itself and its direct sub-folders (one per deployment), not deeper
    paths = [p for pat in ("*.csv", "*.csv.gz", "*/*.csv", "*/*.csv.gz") for p in source.path.glob(pat)]
    return [Source(p) for p in sorted(paths) if p.is_file()]


def sniff(source: Source) -> bool:
    if not source.is_dir:
        return _is_lmbench_file(source)
    files = _files(source)
    return bool(files) and all(_is_lmbench_file(f) for f in files)


def parse_name(name: str) -> tuple[str, float | None]:
    """Workload and QPS written in an LMBench file name (``("sharegpt", 0.5)``); QPS None if absent."""
    m = _NAME_RE.match(name)
    if m:
        return m.group("workload"), float(m.group("qps"))
    m2 = _LOOSE_RE.search(name)
    stem = Path(name).stem
    return stem, (float(m2.group("qps")) if m2 else None)


def _read_one(src: Source) -> tuple[pl.DataFrame, str]:
    cols = _header(src)
    missing = [c for c in BASE if c not in cols]
    if missing:
        raise UnsupportedVersionError(
            "an LMBenchmark CSV layout bearing does not know",
            tool=TOOL,
            version=None,
            missing=missing,
            path=src.path,
        )
    layout = "multi-round" if all(c in cols for c in MULTI) else "sharegpt"
    types: dict[str, pl.DataType] = {
        "prompt_tokens": pl.Int64(),
        "generation_tokens": pl.Int64(),
        "ttft": pl.Float64(),
        "generation_time": pl.Float64(),
        "launch_time": pl.Float64(),
        "finish_time": pl.Float64(),
    }
    if layout == "multi-round":
        types |= {"user_id": pl.String(), "question_id": pl.String()}
    return read_csv_checked(src, types), layout


def load(source: Source) -> RequestTrace:
    """Load one LMBench CSV or a folder of them into a request trace with steps."""
    files = _files(source)
    if not files:
        raise InputError("the folder holds no LMBenchmark CSV", path=source.path)
    prov = new_provenance(source, format=NAME, tool=TOOL)
    prov.files = [str(f.path) for f in files]
    parts: list[pl.DataFrame] = []
    steps: list[dict[str, object]] = []
    meta = []
    layouts: set[str] = set()
    for f in files:
        raw, layout = _read_one(f)
        layouts.add(layout)
        workload, qps = parse_name(f.name)
        rel_parent = f.path.parent.name
        run_id = f"{rel_parent}/{workload}"
        meta.append((run_id, qps, f, raw, layout))
    # order steps by QPS inside each run (files without a QPS last, by name)
    meta.sort(key=lambda m: (m[0], m[1] is None, m[1] if m[1] is not None else 0.0, m[2].name))
    step_of: dict[str, int] = {}
    mismatches: list[str] = []
    no_rate: list[str] = []
    for run_id, qps, f, raw, layout in meta:
        step = step_of.get(run_id, 0)
        step_of[run_id] = step + 1
        n = raw.height
        launch = raw["launch_time"]
        span = float(launch.max() - launch.min()) if n > 1 else 0.0
        measured = (n - 1) / span if span > 0 else None
        if qps is None:
            no_rate.append(f.name)
        elif measured is not None and abs(measured / qps - 1) > RATE_TOLERANCE:
            mismatches.append(f"{f.name}: name says {qps:g} rps, measured launch rate {measured:.3g} rps ({n} rows)")
        rel = f.path.parent.name
        if layout == "multi-round":
            rid = pl.format("{}:u{}-q{}", pl.lit(f"{rel}/{f.name}"), pl.col("user_id"), pl.col("question_id"))
        else:
            rid = pl.format("{}:{}", pl.lit(f"{rel}/{f.name}"), pl.col("source_row"))
        out_tok = pl.col("generation_tokens")
        unit = "rps" if qps is not None else None
        parts.append(
            raw.select(
                rid.alias("request_id"),
                pl.col("launch_time").alias("start_s"),
                pl.col("finish_time").alias("end_s"),
                (pl.col("ttft") * 1000.0).alias("ttft_ms"),
                ((pl.col("finish_time") - pl.col("launch_time")) * 1000.0).alias("latency_ms"),
                pl.when(out_tok > 1)
                .then(pl.col("generation_time") * 1000.0 / (out_tok - 1))
                .otherwise(None)
                .alias("tpot_ms"),
                pl.col("prompt_tokens").alias("input_tokens"),
                out_tok.alias("output_tokens"),
                pl.lit("ok").alias("status"),
                *step_exprs(run_id, step, qps, unit),
                pl.col("source_row"),
            )
        )
        steps.append(step_row(run_id, step, qps, unit, source_file=str(f.path)))
    prov.add(
        "offered_load_from_file_name",
        "LMBenchmark writes the QPS level only in the file name; offered_load was read from the name "
        "and cross-checked against the measured launch rate ((n-1) / launch span)",
        level="info",
    )
    prov.add(
        "no_error_column",
        "LMBenchmark CSVs have no error column: failed requests are absent, so every row is 'ok' and the "
        "error rate cannot be known from these files",
        level="warning",
    )
    if mismatches:
        prov.add(
            "offered_load_mismatch",
            f"measured launch rate differs from the file name's QPS by more than {RATE_TOLERANCE:.0%} in "
            f"{len(mismatches)} file(s) (missing rows may be failed requests): " + "; ".join(mismatches),
            count=len(mismatches),
        )
    if no_rate:
        prov.add("offered_load_unknown", f"no QPS in the file name of: {', '.join(no_rate)}", count=len(no_rate))
    prov.add("layout", f"layout(s): {', '.join(sorted(layouts))}", level="info")
    frame = pl.concat(parts, how="vertical_relaxed")
    return finish_trace(
        frame,
        source,
        format=NAME,
        tool=TOOL,
        tool_version=None,
        derived=("request_id", "tpot_ms", "step", "offered_load", "offered_load_unit", "run_id", "status"),
        provenance=prov,
        options={},
        steps=steps,
    )


register(
    FormatSpec(
        name=NAME,
        tool=TOOL,
        kind="requests",
        needs="a CSV with columns prompt_tokens, generation_tokens, ttft, generation_time, launch_time, "
        "finish_time (+ user_id, question_id), or a folder of them",
        sniff=sniff,
        load=load,
    )
)
