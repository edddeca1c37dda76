"""The canonical request trace: one row per request, units in the column names.

Every per-request source (production logs, load-test tools) is loaded into this one
table; everything downstream (curves, limits, profiles, plans, reports) reads only it.
The frame type is polars; :meth:`RequestTrace.to_pandas` is the one edge to pandas.

Columns (all optional except ``start_s``; a source that lacks a field leaves it null):

==================  =========  =============================================================
column              dtype      meaning
==================  =========  =============================================================
request_id          String     id from the source, or ``<row>`` when the source has none
start_s             Float64    request start (send/arrival), UTC epoch seconds, or seconds
                               from the trace start when ``provenance.time_origin`` is
                               ``relative``; null for every row when the source keeps no
                               per-request times (``time_origin`` ``none``: vLLM arrays,
                               LLMPerf, SGLang details)
end_s               Float64    request end (last byte / last token), same clock as start_s
ttft_ms             Float64    time to first token, ms
latency_ms          Float64    end-to-end latency, ms
tpot_ms             Float64    time per output token after the first, ms
itl_ms              Float64    mean inter-token latency of the request, ms
input_tokens        Int64      prompt tokens
output_tokens       Int64      generated tokens
cached_tokens       Int64      prompt tokens served from a prefix/KV cache
status              String     ``ok`` | ``error`` | ``timeout`` | ``rejected`` | ``cancelled``
                               | ``unknown`` (``cancelled`` and ``unknown`` are neither success
                               nor failure: docs/canonical-trace.md, "Status values")
error               String     error code or message (null when ok)
model               String     model name as the source wrote it (untrusted text)
run_id              String     one load-test run, or one production source
step                Int64      load-level index within a run (0, 1, ...), null in production
offered_load        Float64    the step's offered load, in ``offered_load_unit``
offered_load_unit   String     ``rps`` or ``concurrency`` (null in production)
source_row          Int64      where the request is in the source: 1-based line for text
                               files (a CSV header is line 1), 1-based element for JSON arrays
==================  =========  =============================================================
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import polars as pl

from bearing_lib.common.errors import BadValueError, Problem, SchemaError, raise_problems
from bearing_lib.data.provenance import Provenance

if TYPE_CHECKING:
    import pandas as pd

REQUEST_SCHEMA: dict[str, pl.DataType] = {
    "request_id": pl.String(),
    "start_s": pl.Float64(),
    "end_s": pl.Float64(),
    "ttft_ms": pl.Float64(),
    "latency_ms": pl.Float64(),
    "tpot_ms": pl.Float64(),
    "itl_ms": pl.Float64(),
    "input_tokens": pl.Int64(),
    "output_tokens": pl.Int64(),
    "cached_tokens": pl.Int64(),
    "requested_output_tokens": pl.Int64(),
    "status": pl.String(),
    "error": pl.String(),
    "model": pl.String(),
    "run_id": pl.String(),
    "step": pl.Int64(),
    "offered_load": pl.Float64(),
    "offered_load_unit": pl.String(),
    "source_row": pl.Int64(),
}

STATUSES: tuple[str, ...] = ("ok", "error", "timeout", "rejected", "cancelled", "unknown")
OUTCOME_UNKNOWN: tuple[str, ...] = ("cancelled", "unknown")
"""Statuses that are neither success nor failure: the request's outcome is not the service's doing
(``cancelled``: the client cancelled it) or not known (``unknown``: the tool stopped waiting for it).
Error rates and percentiles leave them out (docs/canonical-trace.md, "Status values")."""
OFFERED_LOAD_UNITS: tuple[str, ...] = ("rps", "concurrency")
NON_NEGATIVE: tuple[str, ...] = (
    "ttft_ms",
    "latency_ms",
    "tpot_ms",
    "itl_ms",
    "input_tokens",
    "output_tokens",
    "cached_tokens",
    "requested_output_tokens",
)


STEP_SCHEMA: dict[str, pl.DataType] = {
    "run_id": pl.String(),
    "step": pl.Int64(),
    "offered_load": pl.Float64(),
    "offered_load_unit": pl.String(),
    "duration_s": pl.Float64(),
    "n_requests_reported": pl.Int64(),
    "source_file": pl.String(),
    "send_window_s": pl.Float64(),
    "send_window_basis": pl.String(),
    "send_window_method": pl.String(),
    "duration_includes_drain": pl.Boolean(),
}
"""Per-step facts a load-test tool reported beside its requests (``RequestTrace.steps``).

``duration_s`` is the tool's own step duration: the only time base when requests carry
no timestamps. ``offered_load`` is ``inf`` for an unbounded rate (vLLM ``"inf"``).
``send_window_s`` is the period over which the tool sent the step's requests, its drain
(waiting for the last ones to finish) excluded, when the loader can state it (vLLM bench
serve: ``num_prompts / request_rate`` on its own schedule, or its per-request send times);
null otherwise. ``n_requests_reported / send_window_s`` is the rate the tool sent at. ``send_window_basis``
and ``send_window_method`` say how it is known, ``duration_includes_drain`` whether ``duration_s`` runs on to
the last reply (:class:`~bearing_lib.data.loadpoints.SendWindow`)."""


@dataclass
class RequestTrace:
    """A canonical per-request table plus its provenance.

    ``steps`` (optional, columns :data:`STEP_SCHEMA`) holds per-step facts reported by a
    load-test tool, e.g. the step duration when requests have no timestamps.
    """

    frame: pl.DataFrame
    provenance: Provenance
    steps: pl.DataFrame | None = None
    kind: ClassVar[str] = "requests"

    def __len__(self) -> int:
        return self.frame.height

    def to_pandas(self) -> pd.DataFrame:
        """The frame as pandas (for statsmodels); the only conversion point."""
        return self.frame.to_pandas()

    def present_fields(self) -> list[str]:
        """Canonical columns that hold at least one non-null value."""
        nulls = self.frame.null_count().row(0, named=True)  # O(1): Arrow keeps null counts
        return [c for c in REQUEST_SCHEMA if c in nulls and nulls[c] < self.frame.height]

    def _repr_html_(self) -> str:  # pragma: no cover - notebook display
        return (
            f"<p><b>RequestTrace</b> {self.provenance.format} · {self.frame.height:,} requests · "
            f"source <code>{_esc(self.provenance.source)}</code></p>" + self.frame.head(10)._repr_html_()
        )


def _esc(s: str) -> str:
    import html

    return html.escape(s)


def conform(frame: pl.DataFrame | pl.LazyFrame, *, path: str | None = None) -> pl.DataFrame:
    """Return ``frame`` with exactly the canonical columns, in order and with their dtypes.

    Missing canonical columns are added as nulls; extra columns are an error (a loader
    bug, not a user error). Casting is strict: a value that does not fit raises
    :class:`BadValueError` naming the column.
    """
    lf = frame.lazy() if isinstance(frame, pl.DataFrame) else frame
    names = lf.collect_schema().names()
    extra = [c for c in names if c not in REQUEST_SCHEMA]
    if extra:
        raise SchemaError(f"internal: loader produced non-canonical columns {extra}", path=path)
    exprs = []
    for col, dtype in REQUEST_SCHEMA.items():
        if col in names:
            exprs.append(pl.col(col).cast(dtype, strict=True).alias(col))
        else:
            exprs.append(pl.lit(None, dtype=dtype).alias(col))
    try:
        return lf.select(exprs).collect()
    except pl.exceptions.InvalidOperationError as exc:  # strict cast failed
        raise BadValueError(f"a value does not fit the canonical dtype: {exc}", path=path) from exc


def _first_row(frame: pl.DataFrame, mask: pl.Expr) -> dict[str, object]:
    return frame.filter(mask).head(1).row(0, named=True)


# Plausibility bounds (docs/loaders.md, "What every loaded trace satisfies"). A value
# outside them is not a measurement of an inference request; most often a unit is off.
EPOCH_MIN_S = 946_684_800.0  # 2000-01-01 UTC
EPOCH_MAX_S = 4_102_444_800.0  # 2100-01-01 UTC
MAX_LATENCY_MS = 86_400_000.0  # 24 h: no request to an inference service takes a day
MAX_TOKENS = 100_000_000  # 10x the largest published context window (10 M tokens)
LATENCY_COLUMNS: tuple[str, ...] = ("ttft_ms", "latency_ms", "tpot_ms", "itl_ms")
TOKEN_COLUMNS: tuple[str, ...] = ("input_tokens", "output_tokens", "cached_tokens")
TIME_COLUMNS: tuple[str, ...] = ("start_s", "end_s")
_TIME_UNITS: tuple[tuple[str, float], ...] = (("milliseconds", 1e3), ("microseconds", 1e6), ("nanoseconds", 1e9))


def time_unit_hint(value: float) -> str:
    """What an epoch time out of range looks like, and the fix (``""`` when nothing fits).

    >>> time_unit_hint(1_700_000_000_000)
    'looks like epoch milliseconds (1.7e+12 / 1e3 = 2023-11-14 UTC); divide by 1e3, or load it with \
--format generic and units {column: ms}'
    """
    import datetime as _dt

    for word, factor in _TIME_UNITS:
        if EPOCH_MIN_S <= value / factor <= EPOCH_MAX_S:
            day = _dt.datetime.fromtimestamp(value / factor, tz=_dt.UTC).date().isoformat()
            short = {"milliseconds": "ms", "microseconds": "us", "nanoseconds": "ns"}[word]
            return (f"looks like epoch {word} ({value:.2g} / {factor:.0e} = {day} UTC); divide by "
                    f"{factor:.0e}, or load it with --format generic and units {{column: {short}}}").replace("e+0", "e")
    return ""


def _checks(time_origin: str, epoch_range: bool = True) -> list[tuple[str, pl.Expr, str]]:
    """(field, mask of bad rows, what was expected) for every check that raises."""
    checks: list[tuple[str, pl.Expr, str]] = []
    if time_origin == "none":
        checks.append(
            ("start_s", pl.col("start_s").is_not_null(), "internal: time_origin 'none' but start times present")
        )
    else:
        checks.append(("start_s", pl.col("start_s").is_null(), "missing request start time"))
        for col in TIME_COLUMNS:
            c = pl.col(col)
            checks.append((col, c.is_nan() | c.is_infinite(), "expected a finite time in seconds"))
            if time_origin == "epoch" and epoch_range:
                checks.append((col, c.is_finite() & ((c < EPOCH_MIN_S) | (c > EPOCH_MAX_S)),
                               "expected epoch seconds between 2000-01-01 and 2100-01-01 (946684800 to 4102444800)"))
            elif epoch_range:
                checks.append((col, c < 0, "expected seconds from the trace start, >= 0"))
    for col in LATENCY_COLUMNS:
        c = pl.col(col)
        checks.append((col, c.is_nan() | c.is_infinite(), "expected a finite latency in ms"))
        checks.append((col, c.is_finite() & (c > MAX_LATENCY_MS),
                       "expected at most 86400000 ms (24 h); a longer latency is not a measurement "
                       "(is the column in us or ns?)"))
    checks.extend((col, pl.col(col) < 0, "expected a non-negative number") for col in NON_NEGATIVE)
    checks.extend((col, pl.col(col) > MAX_TOKENS, f"expected at most {MAX_TOKENS:,} tokens per request")
                  for col in TOKEN_COLUMNS)
    checks.append(("end_s", pl.col("end_s") < pl.col("start_s"), "request ends before it starts"))
    checks.append(
        (
            "status",
            pl.col("status").is_not_null() & ~pl.col("status").is_in(STATUSES),
            f"expected one of {', '.join(STATUSES)}",
        )
    )
    checks.append(
        (
            "offered_load",
            pl.col("offered_load").is_nan() | (pl.col("offered_load") <= 0),
            "expected a positive offered load (inf for an unbounded rate)",
        )
    )
    checks.append(
        (
            "offered_load_unit",
            pl.col("offered_load_unit").is_not_null() & ~pl.col("offered_load_unit").is_in(OFFERED_LOAD_UNITS),
            f"expected one of {', '.join(OFFERED_LOAD_UNITS)}",
        )
    )
    return checks


def validate(frame: pl.DataFrame, provenance: Provenance, *, epoch_range: bool = False) -> pl.DataFrame:
    """Check a conformed frame; raise on impossible values, record findings otherwise.

    Raises :class:`BadValueError` (naming file, row and field; one error listing every
    failed check) for: negative token counts or latencies, a latency that is NaN, infinite
    or over 24 h, a token count over :data:`MAX_TOKENS`, a start/end time that is not
    finite or (epoch) outside 2000-2100 (the message says when it looks like epoch ms, µs
    or ns and how to fix it), ``end_s`` before ``start_s``, an offered load that is not
    positive, an unknown ``status`` or ``offered_load_unit``, a null ``start_s``.
    ``epoch_range`` turns on the 2000-2100 check of epoch times (and ``>= 0`` for
    relative ones): every loader does
    (:func:`~bearing_lib.loaders._common.finish_trace`, the edge where files are read);
    traces built in code (simulations) may count epoch seconds from 0. Records findings for: rows not sorted
    by ``start_s`` (they are sorted, stably), duplicate ``request_id`` values (kept and
    counted). Returns the (possibly sorted) frame; the input file is never touched.

    All checks are computed in one pass over the frame (one ``select`` of counts); the
    offending row is looked up only when a check fails.
    """
    path = provenance.source
    if frame.height == 0:
        raise BadValueError("the file holds no requests (header only, or empty)", path=path)
    checks = _checks(provenance.time_origin, epoch_range)
    timed = provenance.time_origin != "none"
    # Columns that are entirely null cannot fail a check: skip them (null_count is free).
    nulls = frame.null_count().row(0, named=True)
    all_null = {c for c, n in nulls.items() if n == frame.height}
    active = [
        (i, field, mask, what)
        for i, (field, mask, what) in enumerate(checks)
        if not (field in all_null and field != "start_s")
    ]
    aggs = [mask.sum().alias(f"c{i}") for i, _field, mask, _what in active]
    if timed:
        aggs.append((pl.col("start_s").diff() < 0).sum().alias("unsorted"))
    check_ids = "request_id" not in all_null
    if check_ids:
        # Strictly increasing ids (row numbers, zero-padded counters) cannot repeat: a cheap
        # pass that spares hashing every id on large traces.
        aggs.append((pl.col("request_id") <= pl.col("request_id").shift(1)).sum().alias("ids_not_increasing"))
    # The streaming engine evaluates the counts chunk by chunk: same numbers, no full-length
    # temporaries (a shifted copy of every id, a diff of every start); ~200 MB less at 10 M rows.
    counts = frame.lazy().select(aggs).collect(engine="streaming").row(0, named=True)
    problems: list[Problem] = []
    for i, field, mask, what in active:
        n = counts[f"c{i}"]
        if n:
            row = _first_row(frame, mask)
            value = row[field]
            hint = time_unit_hint(float(value)) if field in TIME_COLUMNS and isinstance(value, float) else ""
            problems.append(Problem(
                f"{what} (value {value!r}; {n} row(s) affected){'; ' + hint if hint else ''}",
                row=row.get("source_row"),
                field=field,
            ))
    raise_problems(problems, path=path)

    unsorted = counts.get("unsorted") or 0
    if unsorted:
        frame = frame.sort("start_s", maintain_order=True)
        provenance.add(
            "unsorted",
            f"rows were not in start-time order ({unsorted} step(s) back in time); sorted by start_s",
            level="info",
            count=int(unsorted),
        )
    if check_ids and (counts["ids_not_increasing"] or nulls.get("request_id", 0)):
        # Equal ids have equal 64-bit hashes, so "no repeated hash" proves "no repeated id";
        # only when hashes repeat (a duplicate, or a hash collision) are the strings compared.
        ids = pl.col("request_id").drop_nulls()
        excess = frame.select(ids.len() - ids.hash().n_unique()).item()
    else:
        excess = 0
    if excess > 0:
        dup_mask = pl.col("request_id").is_not_null() & pl.col("request_id").is_duplicated()
        dup, n_ids = frame.select(
            dup_mask.sum().alias("dup"), pl.col("request_id").filter(dup_mask).n_unique().alias("ids")
        ).row(0)
    if excess > 0 and dup:  # dup == 0: the hashes collided, the ids are distinct
        provenance.add(
            "duplicate_ids",
            f"{dup} rows share {n_ids} request id(s); all rows were kept",
            count=int(dup),
        )
    return frame
