"""Azure LLM inference traces (2023 Splitwise release; 2024 week-long layout).

CSV ``TIMESTAMP,ContextTokens,GeneratedTokens``. 2023 timestamps carry 7 fractional
digits and no time zone (read as UTC, recorded in provenance); 2024 timestamps end in
``+00:00`` and sometimes have no fractional part. CRLF line ends, no final newline.
Licence CC-BY-4.0; cite Patel et al., "Splitwise", ISCA 2024.
"""

from __future__ import annotations

import re

import polars as pl

from bearing_lib.common.errors import BadValueError
from bearing_lib.data.trace import RequestTrace
from bearing_lib.loaders._common import finish_trace, new_provenance, read_csv_checked
from bearing_lib.loaders.registry import FormatSpec, register
from bearing_lib.loaders.source import InputSource

NAME = "azure-llm-inference"
HEADER = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
_TS = re.compile(r"^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?$")


def sniff(source: InputSource) -> bool:
    if source.is_dir or source.suffix not in (".csv", ".txt", ""):
        return False
    cols = tuple(c.strip() for c in source.first_line.split(","))
    return cols[:3] == HEADER


def load(source: InputSource) -> RequestTrace:
    raw = read_csv_checked(
        source,
        {"TIMESTAMP": pl.String(), "ContextTokens": pl.Int64(), "GeneratedTokens": pl.Int64()},
    )
    ts = raw["TIMESTAMP"].str.strip_chars()
    bad = ~ts.str.contains(_TS.pattern)
    if bad.any():
        i = int(bad.arg_max())
        raise BadValueError(
            f"expected a timestamp like 2023-11-16 18:17:03.9799600[+00:00], found {ts[i]!r}",
            path=source.path,
            row=int(raw["source_row"][i]),
            field="TIMESTAMP",
        )
    has_tz = ts.str.contains(r"(Z|[+-]\d{2}:?\d{2})$")
    prov = new_provenance(source, format=NAME, tool="Azure LLM inference trace")
    if has_tz.all():
        version, tz_note = "2024", "UTC (offsets in the file)"
    elif not has_tz.any():
        version, tz_note = "2023", "UTC (assumed: timestamps carry no time zone)"
        prov.add(
            "timezone_assumed",
            "timestamps carry no time zone; read as UTC (the 2024 release of the same trace uses +00:00)",
            level="info",
        )
    else:
        raise BadValueError(
            "some timestamps carry a UTC offset and some do not; expected one convention",
            path=source.path,
            row=int(raw["source_row"][int((~has_tz).arg_max())]),
            field="TIMESTAMP",
        )
    # Normalise to "YYYY-MM-DD HH:MM:SS.fffffffff" and parse as naive UTC (offsets applied).
    norm = (
        ts.str.replace("T", " ")
        .str.replace(r"Z$", "+00:00")
        .str.replace(r"^(\S+ \d{2}:\d{2}:\d{2})([+-]|$)", r"${1}.0${2}")
    )
    if version == "2024":
        parsed = norm.str.to_datetime("%Y-%m-%d %H:%M:%S%.f%:z", time_unit="ns").dt.convert_time_zone("UTC")
    else:
        parsed = norm.str.to_datetime("%Y-%m-%d %H:%M:%S%.f", time_unit="ns", time_zone="UTC")
    start_s = parsed.dt.epoch("ns").cast(pl.Float64) / 1e9
    frame = pl.DataFrame(
        {
            "request_id": raw["source_row"].cast(pl.String),
            "start_s": start_s,
            "input_tokens": raw["ContextTokens"],
            "output_tokens": raw["GeneratedTokens"],
            "source_row": raw["source_row"],
        }
    )
    return finish_trace(
        frame,
        source,
        format=NAME,
        tool="Azure LLM inference trace",
        tool_version=version,
        derived=("request_id",),
        timezone=tz_note,
        provenance=prov,
    )


register(
    FormatSpec(
        name=NAME,
        tool="Azure LLM inference trace (2023/2024)",
        kind="requests",
        needs="a CSV whose header is TIMESTAMP,ContextTokens,GeneratedTokens",
        sniff=sniff,
        load=load,
    )
)
