"""Any per-request CSV / Parquet / JSON-lines table, with a column mapping and unit declarations.

Never auto-detected: choose it with ``format="generic"`` (CLI ``--format generic
--mapping map.yaml``). The mapping says which source column holds each canonical field,
and in which unit; bearing converts and records what it did in the provenance.

A mapping (Python dict or YAML file)::

    columns:                 # canonical name: source column
      request_id: id
      start_s: sent_at
      latency_ms: duration
      input_tokens: prompt_tokens
      output_tokens: completion_tokens
      status: http_status
    units:                   # source column: unit
      sent_at: iso8601       # times: s, ms, us, ns (numbers) or iso8601 (text)
      duration: s            # durations: s, ms, us, ns
    time_origin: epoch       # numeric times: epoch (default) or relative
    timezone: UTC            # for ISO 8601 text without an offset (default UTC, recorded)
    status_map:              # source value -> ok | error | timeout | rejected | cancelled | unknown
      "200": ok
      "429": rejected
      "504": timeout
    status_default: error    # for values not in status_map (default: unmapped values are an error)

``end_s`` given without ``latency_ms`` derives it, and ``latency_ms`` without ``end_s``
derives ``end_s``; both are marked derived. Without a ``status`` column every request is
``ok`` only if ``status_default`` says so; otherwise status stays null.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl

from bearing_lib.common.errors import BadValueError, ParameterError
from bearing_lib.common.yamlfile import read_yaml
from bearing_lib.data.provenance import Provenance
from bearing_lib.data.trace import REQUEST_SCHEMA, STATUSES, RequestTrace
from bearing_lib.loaders._common import finish_trace, new_provenance, read_table
from bearing_lib.loaders.registry import FormatSpec, register
from bearing_lib.loaders.source import InputSource

NAME = "generic"
TOOL = "generic table (column mapping)"
TIME_FIELDS = ("start_s", "end_s")
DURATION_FIELDS = ("ttft_ms", "latency_ms", "tpot_ms", "itl_ms")
TIME_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}  # -> seconds
DURATION_UNITS = {"s": 1e3, "ms": 1.0, "us": 1e-3, "ns": 1e-6}  # -> milliseconds
MAPPING_KEYS = ("columns", "units", "time_origin", "timezone", "status_map", "status_default")
_TZ_SUFFIX = r"(Z|z|[+-]\d{2}:?\d{2})$"


def sniff(source: InputSource) -> bool:
    """Never matches: the generic loader is chosen explicitly, with a mapping."""
    return False


def read_mapping(path: str | Path) -> dict[str, Any]:
    """Read a mapping from a YAML (or JSON) file; see the module docstring for the keys."""
    p = Path(path)
    if not p.is_file():
        raise ParameterError(f"mapping file {p} does not exist")
    doc = read_yaml(p, "the mapping file")
    if not isinstance(doc, dict):
        raise ParameterError(f"mapping file {p}: expected a mapping with a 'columns' key, found {type(doc).__name__}")
    return doc


def _check_mapping(m: Mapping[str, Any]) -> None:
    unknown = [k for k in m if k not in MAPPING_KEYS]
    if unknown:
        raise ParameterError(f"unknown mapping key(s) {unknown}; known keys: {', '.join(MAPPING_KEYS)}")
    cols = m.get("columns")
    if not isinstance(cols, Mapping) or not cols:
        raise ParameterError("the mapping needs 'columns': {canonical_name: source_column, ...}")
    bad = [c for c in cols if c not in REQUEST_SCHEMA or c == "source_row"]
    if bad:
        names = ", ".join(c for c in REQUEST_SCHEMA if c != "source_row")
        raise ParameterError(f"not canonical field(s) {bad} in 'columns'; canonical fields: {names}")
    units = m.get("units") or {}
    mapped_sources = {str(v): k for k, v in cols.items()}
    for src, unit in units.items():
        target = mapped_sources.get(str(src))
        if target is None:
            raise ParameterError(f"'units' names column {src!r}, which 'columns' does not map")
        allowed = (*TIME_UNITS, "iso8601") if target in TIME_FIELDS else tuple(DURATION_UNITS)
        if target not in (*TIME_FIELDS, *DURATION_FIELDS):
            raise ParameterError(f"column {src!r} maps to {target}, which takes no unit")
        if unit not in allowed:
            raise ParameterError(f"unit {unit!r} for column {src!r} ({target}); expected one of {', '.join(allowed)}")
    if m.get("time_origin", "epoch") not in ("epoch", "relative"):
        raise ParameterError(f"time_origin must be epoch or relative, got {m.get('time_origin')!r}")
    smap = m.get("status_map") or {}
    bad_st = sorted({str(v) for v in smap.values()} - set(STATUSES))
    default = m.get("status_default")
    if default is not None and default not in STATUSES:
        bad_st.append(str(default))
    if bad_st:
        raise ParameterError(f"status value(s) {bad_st} in the mapping; expected one of {', '.join(STATUSES)}")


def _parse_iso(series: pl.Series, *, path: Path, rows: pl.Series, column: str, tz: str, prov: Provenance) -> pl.Series:
    text = series.str.strip_chars()
    has_tz = text.str.contains(_TZ_SUFFIX)
    nonnull = text.is_not_null()
    n_tz, n = int((has_tz & nonnull).sum()), int(nonnull.sum())
    if 0 < n_tz < n:
        i = int((nonnull & ~has_tz).arg_max())
        raise BadValueError(
            "some timestamps carry a UTC offset and some do not; expected one convention",
            path=path,
            row=int(rows[i]),
            field=column,
        )
    parsed = text.str.to_datetime(time_unit="ns", strict=False)
    bad = nonnull & parsed.is_null()
    if bad.any():
        i = int(bad.arg_max())
        raise BadValueError(
            f"expected an ISO 8601 timestamp like 2024-05-10T00:00:00.123Z, found {series[i]!r}",
            path=path,
            row=int(rows[i]),
            field=column,
        )
    if n_tz:
        parsed = parsed.dt.convert_time_zone("UTC")
    else:
        try:
            parsed = parsed.dt.replace_time_zone(tz, ambiguous="earliest", non_existent="null")
        except Exception as exc:  # noqa: BLE001 - polars raises several kinds for an unknown zone
            raise ParameterError(f"unknown time zone {tz!r}: {exc}") from None
        prov.add(
            "timezone_assumed",
            f"column {column!r} holds timestamps without a time zone; read as {tz}",
            level="info",
        )
    return parsed.dt.epoch("ns").cast(pl.Float64) / 1e9


def load(
    source: InputSource,
    *,
    mapping: Mapping[str, Any] | str | Path | None = None,
    skip_bad_lines: bool = False,
) -> RequestTrace:
    """Load a table through a column mapping (dict, or a YAML file path); see the module docstring."""
    if mapping is None:
        raise ParameterError(
            "the generic format needs a column mapping: load(path, format='generic', mapping={...} or 'map.yaml') "
            "(CLI: --format generic --mapping map.yaml)"
        )
    m = read_mapping(mapping) if isinstance(mapping, str | Path) else dict(mapping)
    _check_mapping(m)
    cols: dict[str, str] = {k: str(v) for k, v in m["columns"].items()}
    units: dict[str, str] = {str(k): str(v) for k, v in (m.get("units") or {}).items()}
    tz = str(m.get("timezone") or "UTC")
    time_origin = str(m.get("time_origin") or "epoch")
    smap = {str(k): str(v) for k, v in (m.get("status_map") or {}).items()}
    default = m.get("status_default")

    # Source dtypes: text for ISO times and status/ids, numbers otherwise.
    wanted: dict[str, pl.DataType] = {}
    for target, src in cols.items():
        if target in TIME_FIELDS and units.get(src) == "iso8601":
            dtype: pl.DataType = pl.String()
        elif target in TIME_FIELDS or target in DURATION_FIELDS:
            dtype = pl.Float64()
        else:
            dtype = REQUEST_SCHEMA[target]
        if src in wanted and wanted[src] != dtype:
            raise ParameterError(f"source column {src!r} is mapped to fields needing different types")
        wanted[src] = dtype
    prov = new_provenance(source, format=NAME, tool=TOOL)
    table = read_table(source, wanted, skip_bad_lines=skip_bad_lines, provenance=prov)
    raw = table.collect() if isinstance(table, pl.LazyFrame) else table
    rows = raw["source_row"]
    out: dict[str, pl.Series] = {"source_row": rows}
    iso_used = False
    for target, src in cols.items():
        s = raw[src]
        if target in TIME_FIELDS:
            unit = units.get(src, "s")
            if unit == "iso8601":
                s = _parse_iso(s, path=source.path, rows=rows, column=src, tz=tz, prov=prov)
                iso_used = True
            else:
                s = s * TIME_UNITS[unit]
        elif target in DURATION_FIELDS:
            s = s * DURATION_UNITS[units.get(src, "ms")]
        elif target == "status":
            s = s.cast(pl.String).str.strip_chars()
            mapped = s.replace_strict(smap, default=None, return_dtype=pl.String) if smap else s
            unmapped = s.is_not_null() & mapped.is_null() if smap else s.is_not_null() & ~s.is_in(STATUSES)
            if unmapped.any():
                if default is None:
                    i = int(unmapped.arg_max())
                    known = f"status_map keys {sorted(smap)}" if smap else f"statuses {', '.join(STATUSES)}"
                    raise BadValueError(
                        f"status value {s[i]!r} is not mapped (expected one of the {known}); "
                        "add it to status_map or set status_default",
                        path=source.path,
                        row=int(rows[i]),
                        field=src,
                    )
                fill = pl.when(pl.lit(unmapped)).then(pl.lit(default)).otherwise(pl.lit(mapped))
                mapped = pl.select(fill).to_series()
                prov.add(
                    "status_default",
                    f"{int(unmapped.sum()):,} status value(s) not in status_map read as {default!r}",
                    level="info",
                    count=int(unmapped.sum()),
                )
            s = mapped
        out[target] = s.alias(target)
    derived: list[str] = []
    if "status" not in cols and default is not None:
        out["status"] = pl.Series("status", [default] * raw.height, dtype=pl.String)
        derived.append("status")
    if "start_s" in out and "end_s" in out and "latency_ms" not in out:
        out["latency_ms"] = (out["end_s"] - out["start_s"]) * 1000.0
        derived.append("latency_ms")
    elif "start_s" in out and "latency_ms" in out and "end_s" not in out:
        out["end_s"] = out["start_s"] + out["latency_ms"] / 1000.0
        derived.append("end_s")
    if "request_id" not in out:
        out["request_id"] = rows.cast(pl.String).alias("request_id")
        derived.append("request_id")
    if "start_s" not in out:
        origin = "none"
    elif iso_used:
        origin = "epoch"
    else:
        origin = time_origin
    if origin == "relative":
        timezone = "none (seconds from the trace start)"
    elif origin == "none":
        timezone = "none (no per-request times)"
    elif iso_used and not any(f.code == "timezone_assumed" for f in prov.findings):
        timezone = "UTC (offsets in the file)"
    elif iso_used:
        timezone = f"{tz} (assumed: timestamps carry no time zone)"
    else:
        timezone = "UTC (epoch seconds)"
    options = {"mapping": m, "skip_bad_lines": skip_bad_lines}
    if isinstance(mapping, str | Path):
        options["mapping_file"] = str(mapping)
    return finish_trace(
        pl.DataFrame(out),
        source,
        format=NAME,
        tool=TOOL,
        derived=tuple(derived),
        timezone=timezone,
        time_origin=origin,
        provenance=prov,
        options=options,
    )


register(
    FormatSpec(
        name=NAME,
        tool=TOOL,
        kind="requests",
        needs="never detected: pass format='generic' and mapping={canonical_name: source_column} "
        "(CLI --format generic --mapping map.yaml)",
        sniff=sniff,
        load=load,
    )
)
