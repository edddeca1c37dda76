"""bearing's own request-trace files: CSV, Parquet or JSON lines with canonical column names.

A file whose every column is a canonical name (:data:`~bearing_lib.data.trace.REQUEST_SCHEMA`)
and which has ``start_s`` is read as is: no renaming, no unit conversion. This is what
:func:`write_trace` writes and what the benchmarks use. ``start_s`` is epoch seconds,
seconds from the trace start, or null on every row; which one is read from the Parquet
metadata key ``bearing.time_origin`` when present, else decided from the values
(``time_origin="auto"``; see :func:`load`).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from bearing_lib.common.errors import ParameterError, SchemaError
from bearing_lib.data.trace import REQUEST_SCHEMA, RequestTrace
from bearing_lib.loaders._common import (
    finish_trace,
    new_provenance,
    parquet_metadata,
    read_table,
    table_columns,
    table_kind,
)
from bearing_lib.loaders.registry import FormatSpec, register
from bearing_lib.loaders.source import InputSource

NAME = "bearing-canonical"
TOOL = "bearing canonical trace"
TIME_ORIGINS = ("auto", "epoch", "relative", "none")
METADATA_KEY = "bearing.time_origin"
EPOCH_FLOOR_S = 1e9  # 2001-09-09: smaller start times are read as relative in "auto" mode


def sniff(source: InputSource) -> bool:
    if source.is_dir:
        return False
    cols = table_columns(source)
    return bool(cols) and "start_s" in cols and all(c in REQUEST_SCHEMA for c in cols)


TIME_UNITS = {"auto": 1.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}  # -> seconds


def load(source: InputSource, *, time_origin: str = "auto", skip_bad_lines: bool = False,
         time_unit: str = "auto") -> RequestTrace:
    """Load a canonical CSV / Parquet / JSONL trace.

    Parameters
    ----------
    time_origin
        ``auto`` (default): the Parquet metadata key ``bearing.time_origin`` if present;
        else ``none`` when ``start_s`` is null on every row, ``epoch`` when the smallest
        ``start_s`` is at least 1e9 s (2001-09-09), and ``relative`` otherwise (recorded
        as a finding). ``epoch``, ``relative`` or ``none`` force that reading.
    skip_bad_lines
        JSON lines only: drop lines that are not JSON objects and report how many.
    time_unit
        The unit of ``start_s``/``end_s`` in the file: ``auto`` (default: seconds, as the column names
        say; a production trace is then checked, ``bearing_lib.data.timeunit``), ``s`` (seconds, declared:
        not checked), or ``ms``/``us``/``ns`` (converted to seconds, recorded as a finding).
    """
    if time_origin not in TIME_ORIGINS:
        raise ParameterError(f"time_origin must be one of {', '.join(TIME_ORIGINS)}, got {time_origin!r}")
    if time_unit not in TIME_UNITS:
        raise ParameterError(f"time_unit must be one of {', '.join(TIME_UNITS)}, got {time_unit!r}")
    cols = table_columns(source)
    extra = [c for c in cols if c not in REQUEST_SCHEMA]
    if extra or "start_s" not in cols:
        why = f"non-canonical column(s) {extra}" if extra else "no start_s column"
        raise SchemaError(
            f"{why}; found columns {cols}. A bearing-canonical file has only columns named in "
            f"{list(REQUEST_SCHEMA)} and always start_s; use format 'generic' with a column mapping otherwise",
            path=source.path,
            field=extra[0] if extra else "start_s",
        )
    prov = new_provenance(source, format=NAME, tool=TOOL)
    wanted = {c: REQUEST_SCHEMA[c] for c in cols if c != "source_row"}
    table = read_table(source, wanted, skip_bad_lines=skip_bad_lines, provenance=prov)
    if "source_row" in cols:
        prov.add(
            "source_row_replaced",
            "the file's own source_row column was replaced by row positions in this file",
            level="info",
        )
    keep = [*wanted, "source_row"]
    # Column indexing, not an eager select: an eager select rechunks a multi-chunk CSV read
    # into one chunk per column, which doubled the peak memory (2.6 GiB at 10 M rows).
    frame = table.select(keep).collect() if isinstance(table, pl.LazyFrame) else table[keep]
    if TIME_UNITS[time_unit] != 1.0:
        times = [c for c in ("start_s", "end_s") if c in frame.columns]
        frame = frame.with_columns(pl.col(c) * TIME_UNITS[time_unit] for c in times)
        prov.add("time_unit_declared", f"{' and '.join(times)} read in {time_unit} as declared (time_unit="
                 f"{time_unit}) and converted to seconds", level="info")
    origin = time_origin
    if origin == "auto":
        meta = parquet_metadata(source).get(METADATA_KEY) if table_kind(source) == "parquet" else None
        if meta in ("epoch", "relative", "none"):
            origin = meta
        elif frame.height and frame["start_s"].null_count() == frame.height:
            origin = "none"
        else:
            lo = frame["start_s"].min()
            origin = "epoch" if lo is not None and lo >= EPOCH_FLOOR_S else "relative"
            if origin == "relative":
                prov.add(
                    "relative_times_assumed",
                    f"the smallest start_s is {lo} s, before 2001: read as seconds from the trace start",
                    level="info",
                )
    return finish_trace(
        frame,
        source,
        format=NAME,
        tool=TOOL,
        timezone="UTC" if origin == "epoch" else "none",
        time_origin=origin,
        provenance=prov,
        options={"time_origin": time_origin, "skip_bad_lines": skip_bad_lines, "time_unit": time_unit},
    )


def write_trace(trace: RequestTrace, path: str | Path) -> Path:
    """Write a trace as bearing-canonical Parquet (by default) or CSV / JSONL (by suffix).

    Parquet files carry ``bearing.time_origin`` in their metadata so a reload keeps it.
    Never overwrites the trace's own source file.
    """
    out = Path(path)
    if out.resolve() == Path(trace.provenance.source).resolve():
        raise ParameterError(f"refusing to overwrite the trace's source file {out}")
    frame = trace.frame
    suffix = out.suffix.lower()
    if suffix == ".csv":
        frame.write_csv(out)
    elif suffix in (".jsonl", ".ndjson"):
        frame.write_ndjson(out)
    else:
        frame.write_parquet(out, metadata={METADATA_KEY: trace.provenance.time_origin})
    return out


register(
    FormatSpec(
        name=NAME,
        tool=TOOL,
        kind="requests",
        needs="a CSV, Parquet or JSON-lines table whose columns are all canonical names "
        "(request_id, start_s, end_s, ttft_ms, latency_ms, ..., source_row), start_s among them",
        sniff=sniff,
        load=load,
    )
)
