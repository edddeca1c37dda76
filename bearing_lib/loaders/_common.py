"""Shared steps of the loaders: provenance, checked CSV/JSONL reading and finishing a trace.

The load-point twin of :func:`finish_trace` and the other load-test helpers are in
:mod:`bearing_lib.loaders._loadtest`.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Mapping
from pathlib import Path

import polars as pl

from bearing_lib.common.errors import (
    MAX_LISTED,
    BadValueError,
    InputError,
    Problem,
    SchemaError,
    StructureError,
    raise_problems,
)
from bearing_lib.data.provenance import FieldOrigin, Provenance
from bearing_lib.data.trace import REQUEST_SCHEMA, STEP_SCHEMA, RequestTrace, conform, validate
from bearing_lib.loaders.source import InputSource


def read_csv_checked(
    source: InputSource,
    columns: Mapping[str, pl.DataType],
    *,
    separator: str = ",",
    has_header: bool = True,
    new_columns: list[str] | None = None,
) -> pl.DataFrame:
    """Read a CSV, requiring ``columns`` with their dtypes; adds ``source_row`` (line number).

    Errors name the file and, for a bad value, the line and column: an empty file, a
    header with no rows, NUL bytes (a binary or UTF-16 file), a duplicated column name, a
    missing column (listing the columns found), rows with fewer or more fields than the
    header, a value that does not parse as the column's type. Every bad column and every
    ragged row is reported in one error (:func:`~bearing_lib.common.errors.raise_problems`).
    CRLF, a UTF-8 BOM and gzip are handled.
    """
    if not source.head.strip():
        raise InputError("the file is empty", path=source.path)
    _check_no_nul(source.head, source)
    if has_header and new_columns is None:
        _check_header(source, separator)
    with source.open_binary() as fh:
        has_bom = fh.read(3) == b"\xef\xbb\xbf"  # InputSource.head has the BOM removed already
    data = source.read_bytes() if (source.is_gzip or has_bom) else source.path
    n_fields = len(new_columns) if new_columns is not None else None
    if has_header and new_columns is None:
        fast = _read_csv_typed(data, columns, separator)
        if fast is not None:
            _check_ragged(fast, data, source, separator, len(_header_fields(source, separator)), first_line=2)
            _check_text_columns(fast, columns, source)
            return fast
    # Read everything as text: it lets a bad value be located exactly (row and column).
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
    except (pl.exceptions.ComputeError, pl.exceptions.SchemaError, pl.exceptions.ShapeError) as exc:
        # more fields than the header (ComputeError), or fewer than new_columns names (SchemaError)
        width = n_fields or len(_header_fields(source, separator))
        _raise_ragged(_ragged_lines(data, separator, width, first_line=2 if has_header else 1), source, width)
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
    _check_ragged(raw, data, source, separator, len(raw.columns), first_line=first_line)
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
    problems: list[Problem] = []
    for col in columns:
        if columns[col] == pl.String():
            continue
        bad = raw[col].is_not_null() & (raw[col].str.strip_chars() != "") & typed[col].is_null()
        n_bad = int(bad.sum())
        if n_bad:
            idx = int(bad.arg_max())
            more = f" ({n_bad} row(s) affected)" if n_bad > 1 else ""
            problems.append(
                Problem(f"expected {_type_word(columns[col])}, found {raw[col][idx]!r}{more}", idx + first_line, col)
            )
    raise_problems(problems, path=source.path)
    typed = typed.with_columns((pl.int_range(pl.len(), dtype=pl.Int64) + first_line).alias("source_row"))
    _check_text_columns(typed, columns, source)
    return typed


# --------------------------------------------------------------------------- CSV structure


def _check_no_nul(head: bytes, source: InputSource) -> None:
    """NUL bytes in the head: a binary file, or text in UTF-16/UTF-32 (bearing reads UTF-8)."""
    pos = head.find(b"\x00")
    if pos < 0:
        return
    line = head[:pos].count(b"\n") + 1
    raise StructureError(
        "the file holds NUL bytes (a binary file, or text encoded as UTF-16/UTF-32); expected UTF-8 text. "
        "Re-save it as UTF-8 (e.g. iconv -f UTF-16 -t UTF-8)",
        path=source.path,
        row=line,
    )


def _header_fields(source: InputSource, separator: str) -> list[str]:
    line = source.first_line
    return [c.strip() for c in next(csv.reader([line], delimiter=separator))] if line else []


def _check_header(source: InputSource, separator: str) -> None:
    """A column name given twice (polars would silently rename the second to ``x_duplicated_0``)."""
    names = _header_fields(source, separator)
    seen: dict[str, int] = {}
    dups: list[Problem] = []
    for i, name in enumerate(names, start=1):
        if name in seen:
            dups.append(Problem(f"column {name!r} appears twice (columns {seen[name]} and {i}); expected "
                                "unique column names", 1, name))
        else:
            seen[name] = i
    raise_problems(dups, path=source.path, cls=SchemaError)


def _ragged_lines(
    data: bytes | Path, separator: str, width: int, *, rows: pl.Series | None = None, first_line: int = 2
) -> list[tuple[int, int]]:
    """``(line, fields)`` of the lines whose field count differs from ``width``.

    ``rows`` (0-based data-row positions) limits the check to those rows; without it every
    data line is checked. The file is re-read by polars as one text column (no quoting,
    a separator that never occurs) and separators are counted per line; a line holding a
    quote is counted with the csv module, which knows quoting. Hand-written because
    polars fills a short row with nulls without saying so and reports a long one without
    its line. Rows map to lines as ``source_row`` does (multi-line quoted fields are not
    supported by bearing's CSV readers).
    """
    try:
        lines = pl.read_csv(data, has_header=False, separator="\x1f", quote_char=None, new_columns=["line"],
                            infer_schema=False, truncate_ragged_lines=True)
    except pl.exceptions.PolarsError:
        return []
    offset = first_line - 1  # 0-based line index of data row 0
    body = lines.with_row_index("i").slice(offset)
    if rows is not None:
        body = body.filter(pl.col("i").is_in((rows + offset).implode()))
    body = body.filter(pl.col("line").is_not_null() & (pl.col("line").str.strip_chars() != ""))
    counted = body.with_columns(
        (pl.col("line").str.count_matches(separator, literal=True) + 1).alias("n"),
        pl.col("line").str.contains('"', literal=True).alias("quoted"),
    )
    out = [(int(i) + 1, int(n)) for i, n in counted.filter(~pl.col("quoted") & (pl.col("n") != width))
           .select("i", "n").iter_rows()]
    for i, text in counted.filter(pl.col("quoted")).select("i", "line").iter_rows():
        try:
            fields = len(next(csv.reader([text], delimiter=separator)))
        except (csv.Error, StopIteration):
            continue
        if fields != width:
            out.append((int(i) + 1, fields))
    return sorted(out)


def _count_bytes(data: bytes | Path, separator: str) -> tuple[int, bool]:
    """How many ``separator`` bytes the (decompressed) CSV holds, and whether it holds a quote
    (one chunked pass, memory bounded)."""
    sep = separator.encode()
    if isinstance(data, bytes):
        return data.count(sep), b'"' in data
    n, quoted = 0, False
    with Path(data).open("rb") as fh:
        while chunk := fh.read(16 << 20):
            n += chunk.count(sep)
            quoted = quoted or b'"' in chunk
    return n, quoted


def _raise_ragged(lines: list[tuple[int, int]], source: InputSource, width: int) -> None:
    if lines:
        shown = lines[:MAX_LISTED]
        problems = [
            Problem(f"{'too few' if n < width else 'too many'} fields: found {n}, expected {width} "
                    "(as many as the header)", row=line)
            for line, n in shown
        ]
        if len(lines) > len(shown):
            problems.append(Problem(f"... {len(lines)} ragged row(s) in all"))
        raise_problems(problems, path=source.path, cls=StructureError)


def _check_ragged(
    frame: pl.DataFrame, data: bytes | Path, source: InputSource, separator: str, width: int, *, first_line: int
) -> None:
    """Rows with fewer fields than the header (polars fills them with nulls): a null in the
    last column is the only sign, so the line scan runs only then."""
    last = frame.columns[width - 1] if 0 < width <= len(frame.columns) else None
    if last is None or frame[last].null_count() == 0:
        return
    # Cheap proof that no row is short: without quotes, a file whose separators number
    # exactly (width - 1) per line (header included) has no short row (a long one would
    # have failed the read). One chunked byte count, cheaper than re-reading the lines.
    n_sep, quoted = _count_bytes(data, separator)
    if not quoted and n_sep == (width - 1) * (frame.height + first_line - 1):
        return
    rows = frame.select(pl.arg_where(pl.col(last).is_null())).to_series()
    _raise_ragged(_ragged_lines(data, separator, width, rows=rows, first_line=first_line), source, width)


def _check_text_columns(frame: pl.DataFrame, columns: Mapping[str, pl.DataType], source: InputSource) -> None:
    """NUL characters inside text values (past the head, which :func:`_check_no_nul` covers)."""
    problems = []
    for col, dtype in columns.items():
        if dtype != pl.String() or col not in frame.columns:
            continue
        bad = frame[col].str.contains("\x00", literal=True).fill_null(False)
        if bad.any():
            idx = int(bad.arg_max())
            problems.append(Problem("the value holds a NUL byte; expected text", int(frame["source_row"][idx]), col))
    raise_problems(problems, path=source.path, cls=StructureError)


def _read_csv_typed(data: bytes | Path, columns: Mapping[str, pl.DataType], separator: str) -> pl.DataFrame | None:
    """Fast path: parse with the target dtypes directly; None when anything is unusual.

    Any parse failure, missing column, stray whitespace in the header or empty body
    returns None, and the caller takes the text path, which locates the bad value.
    """
    try:
        typed = pl.read_csv(
            data,
            separator=separator,
            schema_overrides=dict(columns),
            infer_schema=False,
            truncate_ragged_lines=False,
        )
    except Exception:  # noqa: BLE001 - every failure means "take the careful path"
        return None
    if typed.height == 0 or any(c not in typed.columns for c in columns):
        return None
    if any(typed.schema[c] != t for c, t in columns.items()):
        return None
    stripped = {c: c.strip() for c in typed.columns}
    if len(set(stripped.values())) != len(stripped):
        return None
    typed = typed.rename(stripped)  # same column names as the careful path
    return typed.with_columns((pl.int_range(pl.len(), dtype=pl.Int64) + 2).alias("source_row"))


def _type_word(dtype: pl.DataType) -> str:
    if dtype.is_integer():
        return "a whole number"
    if dtype.is_float():
        return "a number"
    return str(dtype)


def new_provenance(source: InputSource, *, format: str, tool: str) -> Provenance:
    """An empty provenance for ``source``.

    ``sha256`` stays empty here: :func:`finish_trace` / ``finish_loadpoints`` fill it at the
    end, so the hash (which :class:`InputSource` may compute in the background) does not block
    the parse.
    """
    return Provenance(source=str(source.path), format=format, tool=tool, sha256="")


def field_origins(
    nonnull: Mapping[str, bool], schema: Mapping[str, object], derived: Iterable[str], *, skip: str
) -> dict[str, FieldOrigin]:
    """``absent`` / ``derived`` / ``measured`` for every column of ``schema`` but ``skip``.

    A column with no value is absent; one with values is derived when listed in
    ``derived``, else measured.
    """
    derived = set(derived)
    return {
        col: ("absent" if not nonnull[col] else "derived" if col in derived else "measured")
        for col in schema
        if col != skip
    }


def finish_trace(
    frame: pl.DataFrame | pl.LazyFrame,
    source: InputSource,
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
    facts the tool reported (columns of :data:`~bearing_lib.data.trace.STEP_SCHEMA`;
    missing ones become null).
    """
    df = conform(frame, path=str(source.path))
    prov = provenance or new_provenance(source, format=format, tool=tool)
    prov.source, prov.format, prov.tool = str(source.path), format, tool
    prov.sha256 = prov.sha256 or source.sha256
    prov.tool_version = tool_version
    prov.timezone = timezone
    prov.time_origin = time_origin  # type: ignore[assignment]
    prov.options = dict(options or {})
    nulls = df.null_count().row(0, named=True)  # O(1): Arrow keeps null counts
    nonnull = {c: nulls[c] < df.height for c in df.columns}
    prov.fields = field_origins(nonnull, REQUEST_SCHEMA, derived, skip="source_row")
    df = validate(df, prov, epoch_range=True)
    _note_failed_output(df, prov)
    return RequestTrace(frame=df, provenance=prov,
                        steps=conform_steps(steps, path=source.path) if steps is not None else None)


def _note_failed_output(df: pl.DataFrame, prov: Provenance) -> None:
    """Say how mixes will place failed requests that produced no output (``data.mixes.mix_output_expr``).

    Only for a trace that records output tokens at all: without them no mix can bound the output."""
    if df.height == 0 or df["output_tokens"].null_count() == df.height:
        return
    failed = (pl.col("status") != "ok") & (pl.col("output_tokens").is_null() | (pl.col("output_tokens") == 0))
    n_failed, n_unknown = df.select(failed.sum().alias("f"), (failed & pl.col("requested_output_tokens").is_null())
                                    .sum().alias("u")).row(0)
    if n_unknown:
        prov.add("failed_output_unknown",
                 f"{n_unknown:,} of {n_failed:,} failed request(s) produced no output (cancelled and unknown-outcome "
                 "ones counted with them) and the source gives no "
                 "requested output length (requested_output_tokens): a mix with output bounds places them by "
                 "their input tokens (and cache hit) only, in the first mix whose other bounds hold them, not by "
                 "the 0 output they never produced", level="info")


def conform_steps(steps: pl.DataFrame | list[dict[str, object]], *, path: str | Path | None = None) -> pl.DataFrame:
    """A per-step frame with exactly the :data:`STEP_SCHEMA` columns, sorted by run and step.

    Raises :class:`BadValueError` for an offered load that is not positive or a step
    duration that is not positive and finite."""
    frame = pl.DataFrame(steps, infer_schema_length=None) if isinstance(steps, list) else steps
    extra = [c for c in frame.columns if c not in STEP_SCHEMA]
    if extra:
        raise SchemaError(f"internal: non-canonical step columns {extra}")
    exprs = [
        (pl.col(c).cast(t, strict=True) if c in frame.columns else pl.lit(None, dtype=t)).alias(c)
        for c, t in STEP_SCHEMA.items()
    ]
    out = frame.select(exprs).sort(["run_id", "step"], nulls_last=True)
    problems = []
    for col, mask, what in (
        ("offered_load", pl.col("offered_load").is_nan() | (pl.col("offered_load") <= 0),
         "expected a positive offered load (inf for an unbounded rate)"),
        ("duration_s", pl.col("duration_s").is_nan() | (pl.col("duration_s") <= 0) | pl.col("duration_s").is_infinite(),
         "expected a positive, finite step duration in s"),
    ):
        bad = out.filter(mask.fill_null(False))
        if bad.height:
            r = bad.row(0, named=True)
            problems.append(Problem(f"{what}, found {r[col]!r} (run {r['run_id']}, step {r['step']})", field=col))
    raise_problems(problems, path=path)
    return out


# --------------------------------------------------------------------------- JSON lines


def read_jsonl_checked(
    source: InputSource,
    *,
    skip_bad_lines: bool = False,
    provenance: Provenance | None = None,
) -> pl.DataFrame:
    """Read JSON lines (one object per line); adds ``source_row`` (1-based line number).

    A line that is not a JSON object (typically a truncated last line) raises
    :class:`InputError` naming the line, unless ``skip_bad_lines`` is true: then such
    lines are dropped and a ``skipped_lines`` finding (with the count and the first line
    numbers) is added to ``provenance``. Blank lines are ignored. Gzip, CRLF and a UTF-8
    BOM are handled. Values keep the types JSON gave them; cast with :func:`cast_checked`.
    """
    data = source.read_bytes()
    if not data.strip():
        raise InputError("the file is empty", path=source.path)
    # Fast path: polars parses the whole file. It ignores blank lines, which would shift
    # line numbers, so blank lines (rare) take the slow path too.
    has_blank = data.startswith((b"\n", b"\r\n")) or b"\n\n" in data or b"\n\r\n" in data
    if not has_blank:
        try:
            frame = pl.read_ndjson(data, infer_schema_length=None)
        except (pl.exceptions.ComputeError, pl.exceptions.SchemaError, ValueError):
            frame = None
        if frame is not None and frame.height:
            return frame.with_columns((pl.int_range(pl.len(), dtype=pl.Int64) + 1).alias("source_row"))
    # Slow path: find the bad lines with the json module, then parse the good ones.
    good: list[bytes] = []
    rows: list[int] = []
    bad: list[tuple[int, str]] = []
    for lineno, line in enumerate(data.split(b"\n"), start=1):
        text = line.strip()
        if not text:
            continue
        try:
            obj = json.loads(text)
        except UnicodeDecodeError as exc:
            bad.append((lineno, f"not UTF-8 text (byte {exc.start} of the line: {exc.reason})"))
            continue
        except ValueError as exc:
            bad.append((lineno, f"not valid JSON ({exc.msg} at column {exc.colno})"))  # type: ignore[attr-defined]
            continue
        if not isinstance(obj, dict):
            bad.append((lineno, f"expected a JSON object, found {type(obj).__name__}"))
            continue
        good.append(text)
        rows.append(lineno)
    if bad and not skip_bad_lines:
        lineno, why = bad[0]
        last_line = data.rstrip(b"\r\n").count(b"\n") + 1
        hint = " (the last line looks truncated)" if lineno == last_line else ""
        more = f"; {len(bad)} bad line(s) in all" if len(bad) > 1 else ""
        raise InputError(
            f"line {lineno} is {why}{hint}{more}. Pass skip_bad_lines=True (CLI: --skip-bad-lines) "
            "to drop such lines and report how many were skipped",
            path=source.path,
            row=lineno,
        )
    if bad and provenance is not None:
        shown = ", ".join(str(n) for n, _ in bad[:10]) + (" ..." if len(bad) > 10 else "")
        provenance.add(
            "skipped_lines",
            f"{len(bad)} line(s) were not JSON objects and were skipped (skip_bad_lines): line(s) {shown}",
            count=len(bad),
        )
    if not good:
        raise InputError("no line holds a JSON object", path=source.path)
    try:
        frame = pl.read_ndjson(b"\n".join(good), infer_schema_length=None)
    except (pl.exceptions.ComputeError, pl.exceptions.SchemaError) as exc:
        raise InputError(f"JSON lines whose values do not share one type per key: {exc}", path=source.path) from exc
    return frame.with_columns(pl.Series("source_row", rows, dtype=pl.Int64))


# --------------------------------------------------------------------------- typed columns


def cast_checked(
    frame: pl.DataFrame,
    columns: Mapping[str, pl.DataType],
    *,
    path: str | Path,
    row_column: str = "source_row",
) -> pl.DataFrame:
    """Cast ``columns`` of an already-read frame (JSON, Parquet) to their dtypes, locating bad values.

    Numbers written as strings are accepted; a whole-number column accepts ``550.0`` but
    not ``550.5``. A value that does not convert raises :class:`BadValueError` naming
    the file, the row (``row_column``) and the column. Missing columns raise
    :class:`SchemaError` listing the columns found.
    """
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise SchemaError(
            f"missing column(s) {missing}; found columns {frame.columns}", path=path, field=missing[0]
        )
    casts = []
    for col, dtype in columns.items():
        have = frame.schema[col]
        if have == dtype:
            continue
        src = pl.col(col)
        if have == pl.String():
            src = src.str.strip_chars()
        if dtype.is_integer() and not have.is_integer():
            as_float = src.cast(pl.Float64, strict=False)
            casts.append(pl.when(as_float == as_float.round(0)).then(as_float).otherwise(None).cast(dtype).alias(col))
        elif dtype == pl.String() and have.is_nested():
            raise BadValueError(f"expected text, found {have}", path=path, field=col)
        else:
            casts.append(src.cast(dtype, strict=False).alias(col))
    if not casts:
        return frame
    typed = frame.with_columns(casts)
    for expr in casts:
        col = expr.meta.output_name()
        bad = frame[col].is_not_null() & typed[col].is_null()
        if frame.schema[col] == pl.String():
            bad = bad & (frame[col].str.strip_chars() != "")
        if bad.any():
            idx = int(bad.arg_max())
            row = frame[row_column][idx] if row_column in frame.columns else idx + 1
            raise BadValueError(
                f"expected {_type_word(columns[col])}, found {frame[col][idx]!r}",
                path=path,
                row=int(row),
                field=col,
            )
    return typed


# --------------------------------------------------------------------------- tables (CSV / Parquet / JSONL)

TableKind = str  # "csv" | "parquet" | "jsonl"


def table_kind(source: InputSource) -> TableKind:
    """What a single-file table holds, by content: Parquet magic, a JSON object line, else CSV."""
    if source.is_dir:
        raise InputError("expected a file (CSV, Parquet or JSON lines), found a folder", path=source.path)
    if source.is_parquet:
        return "parquet"
    if source.looks_like_jsonl or source.suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    return "csv"


def table_columns(source: InputSource) -> list[str]:
    """Column names of a table without reading its rows (Parquet footer, CSV header, first JSON line)."""
    kind = table_kind(source)
    if kind == "parquet":
        target = io.BytesIO(source.read_bytes()) if source.is_gzip else source.path
        return list(pl.read_parquet_schema(target))
    if kind == "jsonl":
        obj = source.first_json_line
        return list(obj) if isinstance(obj, dict) else []
    line = source.first_line
    return [c.strip() for c in next(csv.reader([line]))] if line else []


def scan_parquet(source: InputSource) -> pl.LazyFrame:
    """A lazy scan of a Parquet file (gzip: decompressed in memory first)."""
    if source.is_gzip:
        return pl.read_parquet(io.BytesIO(source.read_bytes())).lazy()
    try:
        pl.read_parquet_schema(source.path)
    except Exception as exc:  # noqa: BLE001 - polars raises several kinds for a bad footer
        raise InputError(f"not a readable Parquet file: {exc}", path=source.path) from exc
    return pl.scan_parquet(source.path)


def parquet_metadata(source: InputSource) -> dict[str, str]:
    """Key-value metadata of a Parquet file ({} when unreadable)."""
    try:
        target = io.BytesIO(source.read_bytes()) if source.is_gzip else source.path
        return dict(pl.read_parquet_metadata(target))
    except Exception:  # noqa: BLE001
        return {}


def read_table(
    source: InputSource,
    columns: Mapping[str, pl.DataType],
    *,
    skip_bad_lines: bool = False,
    provenance: Provenance | None = None,
) -> pl.DataFrame | pl.LazyFrame:
    """Read a CSV, Parquet or JSON-lines table (by content; gzip transparent) with typed ``columns``.

    Returns the table with ``columns`` cast to their dtypes (other columns as read) and
    ``source_row`` (1-based line for CSV and JSONL, where a CSV header is line 1; 1-based
    row for Parquet). A Parquet file whose columns already have the wanted dtypes comes
    back as a :class:`polars.LazyFrame` so the caller can collect it once.
    ``skip_bad_lines`` applies to JSON lines only (see :func:`read_jsonl_checked`).
    """
    kind = table_kind(source)
    if kind == "csv":
        return read_csv_checked(source, columns)
    if kind == "jsonl":
        raw = read_jsonl_checked(source, skip_bad_lines=skip_bad_lines, provenance=provenance)
        return cast_checked(raw, columns, path=source.path)
    lf = scan_parquet(source)
    schema = lf.collect_schema()
    missing = [c for c in columns if c not in schema]
    if missing:
        raise SchemaError(
            f"missing column(s) {missing}; found columns {schema.names()}", path=source.path, field=missing[0]
        )
    row = (pl.int_range(pl.len(), dtype=pl.Int64) + 1).alias("source_row")
    if all(schema[c] == t for c, t in columns.items()):
        return lf.with_columns(row)
    raw = lf.with_columns(row).collect()
    if raw.height == 0:
        raise InputError("the file holds no rows", path=source.path)
    return cast_checked(raw, columns, path=source.path)
