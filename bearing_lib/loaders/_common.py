"""Shared steps of the request loaders: checked CSV reading and finishing a trace."""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from bearing_lib.errors import BadValueError, InputError, SchemaError
from bearing_lib.loaders.source import Source
from bearing_lib.provenance import FieldOrigin, Provenance
from bearing_lib.trace import REQUEST_SCHEMA, STEP_SCHEMA, RequestTrace, conform, validate


def read_csv_checked(
    source: Source,
    columns: Mapping[str, pl.DataType],
    *,
    separator: str = ",",
    has_header: bool = True,
    new_columns: list[str] | None = None,
) -> pl.DataFrame:
    """Read a CSV, requiring ``columns`` with their dtypes; adds ``source_row`` (line number).

    Errors name the file and, for a bad value, the line and column: an empty file, a
    header with no rows, a missing column (listing the columns found), a value that
    does not parse as the column's type. CRLF, a UTF-8 BOM and gzip are handled.
    """
    if not source.head.strip():
        raise InputError("the file is empty", path=source.path)
    data = source.read_bytes() if (source.is_gzip or source.head.startswith(b"\xef\xbb\xbf")) else source.path
    # Read everything as text first: cheap, and it lets a bad value be located exactly.
    try:
        raw = pl.read_csv(
            data,
            separator=separator,
            has_header=has_header,
            new_columns=new_columns,
            infer_schema=False,
            truncate_ragged_lines=False,
        )
    except pl.exceptions.NoDataError as exc:
        raise InputError("the file is empty", path=source.path) from exc
    except pl.exceptions.ComputeError as exc:
        raise InputError(f"not a readable CSV: {exc}", path=source.path) from exc
    raw = raw.rename({c: c.strip() for c in raw.columns})
    missing = [c for c in columns if c not in raw.columns]
    if missing:
        raise SchemaError(
            f"missing column(s) {missing}; found columns {raw.columns}", path=source.path, field=missing[0]
        )
    if raw.height == 0:
        raise InputError("the file has a header but no data rows", path=source.path)
    first_line = 2 if has_header else 1
    casts = []
    for col, dtype in columns.items():
        text = pl.col(col).str.strip_chars()
        if dtype.is_integer():
            # accept "550" and "550.0", reject "550.5" and "abc"
            as_float = text.cast(pl.Float64, strict=False)
            casts.append(
                pl.when(as_float == as_float.round(0)).then(as_float).otherwise(None).cast(dtype).alias(col)
            )
        else:
            casts.append(text.cast(dtype, strict=False).alias(col))
    typed = raw.with_columns(casts)
    for col in columns:
        if columns[col] == pl.String():
            continue
        bad = raw[col].is_not_null() & (raw[col].str.strip_chars() != "") & typed[col].is_null()
        if bad.any():
            idx = int(bad.arg_max())
            raise BadValueError(
                f"expected {_type_word(columns[col])}, found {raw[col][idx]!r}",
                path=source.path,
                row=idx + first_line,
                field=col,
            )
    return typed.with_columns((pl.int_range(pl.len(), dtype=pl.Int64) + first_line).alias("source_row"))


def _type_word(dtype: pl.DataType) -> str:
    if dtype.is_integer():
        return "a whole number"
    if dtype.is_float():
        return "a number"
    return str(dtype)


def finish_trace(
    frame: pl.DataFrame | pl.LazyFrame,
    source: Source,
    *,
    format: str,
    tool: str,
    tool_version: str | None = None,
    derived: tuple[str, ...] = (),
    timezone: str = "UTC",
    time_origin: str = "epoch",
    provenance: Provenance | None = None,
    options: Mapping[str, object] | None = None,
    steps: pl.DataFrame | list[dict[str, object]] | None = None,
) -> RequestTrace:
    """Conform, validate and wrap a loader's frame as a :class:`RequestTrace`.

    Fields present in ``frame`` count as measured unless listed in ``derived``.
    Pass ``provenance`` to keep findings recorded while reading, ``steps`` for per-step
    facts the tool reported (columns of :data:`~bearing_lib.trace.STEP_SCHEMA`;
    missing ones become null).
    """
    df = conform(frame, path=str(source.path))
    prov = provenance or Provenance(source=str(source.path), format=format, tool=tool, sha256="")
    prov.source, prov.format, prov.tool = str(source.path), format, tool
    prov.sha256 = prov.sha256 or source.sha256
    prov.tool_version = tool_version
    prov.timezone = timezone
    prov.time_origin = time_origin  # type: ignore[assignment]
    prov.options = dict(options or {})
    nonnull = df.select(pl.all().is_not_null().any()).row(0, named=True)
    fields: dict[str, FieldOrigin] = {}
    for col in REQUEST_SCHEMA:
        if col == "source_row":
            continue
        if not nonnull[col]:
            fields[col] = "absent"
        else:
            fields[col] = "derived" if col in derived else "measured"
    prov.fields = fields
    df = validate(df, prov)
    return RequestTrace(frame=df, provenance=prov, steps=conform_steps(steps) if steps is not None else None)


def conform_steps(steps: pl.DataFrame | list[dict[str, object]]) -> pl.DataFrame:
    """A per-step frame with exactly the :data:`STEP_SCHEMA` columns, sorted by run and step."""
    frame = pl.DataFrame(steps, infer_schema_length=None) if isinstance(steps, list) else steps
    extra = [c for c in frame.columns if c not in STEP_SCHEMA]
    if extra:
        raise SchemaError(f"internal: non-canonical step columns {extra}")
    exprs = [
        (pl.col(c).cast(t, strict=True) if c in frame.columns else pl.lit(None, dtype=t)).alias(c)
        for c, t in STEP_SCHEMA.items()
    ]
    return frame.select(exprs).sort(["run_id", "step"], nulls_last=True)
