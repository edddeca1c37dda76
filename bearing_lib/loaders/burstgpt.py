"""BurstGPT request traces (Azure OpenAI GPT service logs; HPMLL/BurstGPT, CC-BY-4.0).

Two CSV layouts, read by column name (never by position):

* v1 (``BurstGPT_1.csv``, ``_2``): ``Timestamp, Model, Request tokens, Response tokens,
  Total tokens, Log Type``;
* v3 (``BurstGPT_3.csv``, release v1.2/v2.0): the same with ``Session ID`` and
  ``Elapsed time`` inserted as columns 2-3.

``Timestamp`` is seconds from 0:00 of the trace's first day, "calibrated to the local
time zone" (which zone is not stated): bearing reads it as relative seconds
(``time_origin`` ``relative``) and says so in the findings. Failed requests have
``Response tokens`` = 0 and become ``status`` ``error``. ``Elapsed time`` (v3, seconds
from submission to the final response; not a time to first token) becomes
``latency_ms`` and ``end_s``. Cite Wang et al., "BurstGPT", KDD 2025.
"""

from __future__ import annotations

import csv

import polars as pl

from bearing_lib.data.trace import RequestTrace
from bearing_lib.loaders._common import finish_trace, new_provenance, read_csv_checked
from bearing_lib.loaders.registry import FormatSpec, register
from bearing_lib.loaders.source import InputSource

NAME = "burstgpt"
TOOL = "BurstGPT trace"
REQUIRED = ("Timestamp", "Model", "Request tokens", "Response tokens")
FAILED_MESSAGE = "zero response tokens (BurstGPT marks failed requests this way)"


def _header(source: InputSource) -> list[str]:
    line = source.first_line
    return [c.strip() for c in next(csv.reader([line]))] if line else []


def sniff(source: InputSource) -> bool:
    if source.is_dir or source.suffix not in (".csv", ".txt", ""):
        return False
    header = _header(source)
    return all(c in header for c in REQUIRED)


def load(source: InputSource) -> RequestTrace:
    """Load a BurstGPT CSV (v1 or v3 layout, chosen from the header)."""
    header = _header(source)
    columns: dict[str, pl.DataType] = {
        "Timestamp": pl.Float64(),
        "Model": pl.String(),
        "Request tokens": pl.Int64(),
        "Response tokens": pl.Int64(),
    }
    # "Elapsed time" (some copies write "Elapsed time (s)"); its unit is seconds either way
    elapsed = next((c for c in header if c == "Elapsed time" or c.startswith("Elapsed time (")), None)
    v3 = "Session ID" in header and elapsed is not None
    if v3:
        columns[elapsed] = pl.Float64()  # type: ignore[index]
    has_total = "Total tokens" in header
    if has_total:
        columns["Total tokens"] = pl.Int64()
    raw = read_csv_checked(source, columns)
    prov = new_provenance(source, format=NAME, tool=TOOL)
    prov.add(
        "relative_local_time",
        "Timestamp is seconds from 0:00 of the first day in the trace's local time zone (zone not stated); "
        "read as seconds from that midnight (time_origin relative), so hour-of-day is local time, not UTC",
        level="info",
    )
    failed = raw["Response tokens"] == 0
    n_failed = int(failed.sum())
    if n_failed:
        prov.add("failures", f"{n_failed:,} request(s) have zero response tokens: status 'error'", count=n_failed)
    if has_total:
        mismatch = raw["Total tokens"] != raw["Request tokens"] + raw["Response tokens"]
        n_mis = int(mismatch.fill_null(False).sum())
        if n_mis:
            prov.add(
                "total_tokens_mismatch",
                f"{n_mis:,} row(s) have Total tokens != Request tokens + Response tokens; token counts kept as given",
                count=n_mis,
            )
    cols: dict[str, pl.Series] = {
        "request_id": raw["source_row"].cast(pl.String),
        "start_s": raw["Timestamp"],
        "input_tokens": raw["Request tokens"],
        "output_tokens": raw["Response tokens"],
        "status": pl.select(pl.when(pl.lit(failed)).then(pl.lit("error")).otherwise(pl.lit("ok"))).to_series(),
        "error": pl.select(pl.when(pl.lit(failed)).then(pl.lit(FAILED_MESSAGE))).to_series(),
        "model": raw["Model"].str.strip_chars(),
        "source_row": raw["source_row"],
    }
    derived = ["request_id", "status", "error"]
    if v3:
        cols["latency_ms"] = raw[elapsed] * 1000.0
        cols["end_s"] = raw["Timestamp"] + raw[elapsed]
        derived.append("end_s")
        prov.add(
            "sessions_not_kept",
            "Session ID is not a canonical field and is not carried into the trace",
            level="info",
        )
    return finish_trace(
        pl.DataFrame(cols),
        source,
        format=NAME,
        tool=TOOL,
        tool_version="v3" if v3 else "v1",
        derived=tuple(derived),
        timezone="local time of the trace (zone not stated); seconds from 0:00 of the first day",
        time_origin="relative",
        provenance=prov,
    )


register(
    FormatSpec(
        name=NAME,
        tool=TOOL,
        kind="requests",
        needs="a CSV whose header names Timestamp, Model, Request tokens and Response tokens "
        "(v3 adds Session ID and Elapsed time)",
        sniff=sniff,
        load=load,
    )
)
