"""Shared steps of every load-test loader (vLLM, SGLang, LLMPerf, GenAI-Perf/AIPerf, GuideLLM,
LMBench, inference-perf, Locust, k6, Vegeta, JMeter).

What lives here: reading a JSON document leniently but only when it is small enough to
sniff, JSON lines, parsing an offered rate that may be ``"inf"`` or a bare ``Infinity``,
numbering the steps of a run by offered load (unbounded last), the step identity columns
(request rows, step rows), a tool's statistics object as ``<metric>_<stat>`` columns, and
wrapping load-point rows as a :class:`~bearing_lib.data.loadpoints.LoadPointTable` with
provenance (:func:`finish_loadpoints`, the load-point twin of
:func:`bearing_lib.loaders._common.finish_trace`). Helpers only the ramp-driven HTTP tools
need (plateaus, HTTP codes, Go durations, RFC3339) are in
:mod:`bearing_lib.loaders._http_loadtest`.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from bearing_lib.common.errors import BadValueError, InputError, Problem, raise_problems
from bearing_lib.data.loadpoints import (
    LATENCY_METRICS,
    LOADPOINT_SCHEMA,
    LoadPointTable,
    SendWindow,
    conform_loadpoints,
    window_columns,
)
from bearing_lib.data.provenance import Provenance
from bearing_lib.loaders._common import field_origins, new_provenance
from bearing_lib.loaders.source import InputSource

SNIFF_MAX_BYTES = 32 * 1024 * 1024
"""Sniffers parse a JSON file whole only up to this decompressed size (the parse is cached
on the :class:`InputSource`, so all sniffers and the loader share one parse)."""

_NOT_PARSED = object()


def json_document(source: InputSource, *, max_bytes: int = SNIFF_MAX_BYTES) -> Any:
    """The file parsed as JSON (lenient: ``Infinity``/``NaN``), or None when it is not JSON.

    For sniffers: never raises. Folders, files that do not start with ``{`` or ``[``, and
    files larger than ``max_bytes`` (on disk) give None.
    """
    if source.is_dir:
        return None
    head = source.head.lstrip()
    if not head.startswith((b"{", b"[")):
        return None
    try:
        st = source.path.stat()
        if st.st_size > max_bytes:
            return None
        return _parsed(str(source.path.resolve()), st.st_mtime_ns, st.st_size)
    except (InputError, OSError, ValueError):
        return None


@functools.lru_cache(maxsize=32)
def _parsed(path: str, mtime_ns: int, size: int) -> Any:
    """One parse per file version, shared by every sniffer and loader (folder sniffing
    would otherwise parse each file once per format). Callers must not mutate the result."""
    return InputSource(path).json


def may_hold(source: InputSource, *needles: bytes) -> bool:
    """False only when the whole file is in ``source.head`` and holds none of ``needles``.

    A cheap pre-filter for sniffers: a large file is never rejected on its head alone.
    """
    from bearing_lib.loaders.source import HEAD_BYTES

    head = source.head
    return len(head) >= HEAD_BYTES or any(n in head for n in needles)


def iter_json_lines(source: InputSource) -> Iterator[tuple[int, Any]]:
    """Every non-blank line of a JSONL file as ``(line_number, object)``, one at a time; lenient JSON.

    Raises :class:`BadValueError` naming the line when a line is not JSON.
    """
    for i, line in enumerate(source.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield i, json.loads(line)
        except json.JSONDecodeError as exc:
            raise BadValueError(f"line is not JSON: {exc.msg} (column {exc.colno})", path=source.path, row=i) from exc


def json_lines(source: InputSource) -> list[tuple[int, Any]]:
    """:func:`iter_json_lines` as a list."""
    return list(iter_json_lines(source))


def parse_rate(value: object, *, path: str | Path, field: str, row: int | None = None) -> float | None:
    """An offered request rate in req/s: numbers as they are, ``"inf"``/``Infinity`` as ``inf``.

    None stays None. Anything else (a negative rate, a word) is a :class:`BadValueError`.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        raise BadValueError(f"expected a request rate, found {value!r}", path=path, row=row, field=field)
    if isinstance(value, int | float):
        rate = float(value)
    elif isinstance(value, str) and value.strip().lower() in ("inf", "infinity", "+inf"):
        rate = math.inf
    else:
        try:
            rate = float(str(value))
        except ValueError:
            raise BadValueError(
                f"expected a request rate (a number or 'inf'), found {value!r}", path=path, row=row, field=field
            ) from None
    if math.isnan(rate) or rate < 0:
        raise BadValueError(f"expected a non-negative request rate, found {value!r}", path=path, row=row, field=field)
    return rate


def number(value: object, *, path: str | Path, field: str, row: int | None = None) -> float | None:
    """A JSON value as float (None stays None); strings like ``"550"`` are accepted (LLMPerf)."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise BadValueError(f"expected a number, found {value!r}", path=path, row=row, field=field)
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    raise BadValueError(f"expected a number, found {value!r}", path=path, row=row, field=field)


@dataclass
class StepFacts:
    """One load level of a run, before numbering: what the tool's file says about it.

    ``tiebreak`` orders repeats at the same offered load (file order, run number, date).
    ``rank`` puts closed-loop steps (synchronous = concurrency 1 in a GuideLLM sweep) before
    open-loop ones when a run mixes units; ``payload`` carries the loader's own data.
    """

    run_id: str
    offered_load: float | None
    offered_load_unit: str | None
    tiebreak: tuple = ()
    rank: int = 0
    duration_s: float | None = None
    n_requests_reported: int | None = None
    source_file: str | None = None
    payload: Any = None
    step: int | None = field(default=None)
    send_window: SendWindow | None = None
    """First send to last send of the step (drain excluded) and how it is known; None when unknown."""
    duration_includes_drain: bool | None = None
    """True when ``duration_s`` runs on until the last reply (the tool's clock stops after the drain)."""

    @property
    def send_window_s(self) -> float | None:
        return self.send_window.seconds if self.send_window is not None else None


def number_steps(steps: Sequence[StepFacts], prov: Provenance | None = None) -> list[StepFacts]:
    """Number the steps of each run 0, 1, ... by offered load (unbounded last), in place.

    A run that mixes offered-load units is split first: the unit most of its steps use keeps the
    run id, the other steps become run ``<run>/<unit>`` (finding ``mixed_offered_load_units``).
    Order within a run: ``rank``, then offered load ascending (``inf`` after every finite
    load, an unknown load after that), then ``tiebreak``. Repeats at the same load get
    consecutive numbers; a finding says so. Returns the steps sorted by (run, step).
    """
    by_run: dict[str, list[StepFacts]] = {}
    for s in steps:
        by_run.setdefault(s.run_id, []).append(s)
    for run_id, items in list(by_run.items()):
        # a load curve has one offered-load unit: a run that mixes them (a GuideLLM sweep: synchronous =
        # concurrency 1, then request rates) keeps the unit most of its steps use (rps on a tie), and the
        # other steps form their own run "<run>/<unit>", so the rate steps can still be judged
        units = [s.offered_load_unit for s in items if s.offered_load_unit]
        if len(set(units)) < 2:
            continue
        keep = max(sorted(set(units)), key=lambda u: (units.count(u), u == "rps"))
        for s in items:
            if s.offered_load_unit and s.offered_load_unit != keep:
                s.run_id = f"{run_id}/{s.offered_load_unit}"
                by_run.setdefault(s.run_id, []).append(s)
        by_run[run_id] = [s for s in items if s.run_id == run_id]
        if prov is not None:
            moved = sorted({s.run_id for s in items if s.run_id != run_id})
            prov.add(
                "mixed_offered_load_units",
                f"run {run_id!r} mixes offered-load units {sorted(set(units))}; a load curve has one unit, so "
                f"its {keep} steps stay in {run_id!r} and the others form their own run(s) "
                f"{', '.join(repr(m) for m in moved)}",
            )
    out: list[StepFacts] = []
    for run_id, items in by_run.items():

        def key(s: StepFacts) -> tuple:
            load = s.offered_load
            return (s.rank, load is None, load if load is not None else 0.0, s.tiebreak)

        items.sort(key=key)
        for i, s in enumerate(items):
            s.step = i
        loads = [(s.offered_load_unit, s.offered_load) for s in items if s.offered_load is not None]
        repeats = len(loads) - len(set(loads))
        if repeats and prov is not None:
            prov.add(
                "repeated_load_level",
                f"run {run_id!r}: {repeats} step(s) repeat an offered load already measured; "
                "each repeat is kept as its own step (ordered by file order / run number)",
                level="info",
                count=repeats,
            )
        out.extend(items)
    unknown = [s for s in out if s.offered_load is None]
    if unknown and prov is not None:
        prov.add(
            "offered_load_unknown",
            f"{len(unknown)} step(s) whose file states no offered load; numbered after the known ones",
            count=len(unknown),
        )
    inf_steps = [s for s in out if s.offered_load is not None and math.isinf(s.offered_load)]
    if inf_steps and prov is not None:
        prov.add(
            "unbounded_rate",
            f"{len(inf_steps)} step(s) sent every request at once (request rate 'inf'); offered_load is inf "
            "and these steps are numbered last in their run",
            level="info",
            count=len(inf_steps),
        )
    return sorted(out, key=lambda s: (s.run_id, s.step))


def step_row(
    run_id: str,
    step: int | None,
    offered_load: float | None,
    offered_load_unit: str | None,
    *,
    duration_s: float | None = None,
    n_requests_reported: int | None = None,
    source_file: str | None = None,
    send_window: SendWindow | None = None,
    duration_includes_drain: bool | None = None,
) -> dict[str, object]:
    """One row for ``RequestTrace.steps`` (columns of :data:`~bearing_lib.data.trace.STEP_SCHEMA`)."""
    return {
        "run_id": run_id,
        "step": step,
        "offered_load": offered_load,
        "offered_load_unit": offered_load_unit,
        "duration_s": duration_s,
        "n_requests_reported": n_requests_reported,
        "source_file": source_file,
        **window_columns(send_window, duration_includes_drain),
    }


def step_rows(steps: Iterable[StepFacts]) -> list[dict[str, object]]:
    """Rows for ``RequestTrace.steps`` (columns of ``STEP_SCHEMA``)."""
    return [
        step_row(s.run_id, s.step, s.offered_load, s.offered_load_unit, duration_s=s.duration_s,
                 n_requests_reported=s.n_requests_reported, source_file=s.source_file, send_window=s.send_window,
                 duration_includes_drain=s.duration_includes_drain)
        for s in steps
    ]


def step_exprs(run_id: str, step: int | None, offered_load: float | None, offered_load_unit: str | None
               ) -> list[pl.Expr]:
    """The step identity columns of a request frame as literals (``run_id``, ``step``, ``offered_load``,
    ``offered_load_unit``), typed as in :data:`~bearing_lib.data.trace.REQUEST_SCHEMA`."""
    return [
        pl.lit(run_id, dtype=pl.String).alias("run_id"),
        pl.lit(step, dtype=pl.Int64).alias("step"),
        pl.lit(offered_load, dtype=pl.Float64).alias("offered_load"),
        pl.lit(offered_load_unit, dtype=pl.String).alias("offered_load_unit"),
    ]


def step_columns(s: StepFacts) -> dict[str, object]:
    """The step identity columns shared by request rows and load-point rows."""
    return {
        "run_id": s.run_id,
        "step": s.step,
        "offered_load": s.offered_load,
        "offered_load_unit": s.offered_load_unit,
    }


def step_window_columns(s: StepFacts) -> dict[str, object]:
    """The send-window columns of a load-point row (:func:`~bearing_lib.data.loadpoints.window_columns`)."""
    return window_columns(s.send_window, s.duration_includes_drain)


def stats_to_columns(
    stats: Mapping[str, object] | None,
    metric: str,
    keymap: Mapping[str, str],
    *,
    scale: float = 1.0,
) -> dict[str, float]:
    """Map a tool's statistics object to ``<metric>_<stat>`` columns, scaled to ms.

    ``keymap`` maps the tool's key (``"median"``, ``"p(95)"`` ...) to a canonical stat
    (``"p50"``, ``"p95"`` ...). Missing or null keys are left out.
    """
    out: dict[str, float] = {}
    if not isinstance(stats, Mapping):
        return out
    for key, stat in keymap.items():
        v = stats.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out[f"{metric}_{stat}"] = float(v) * scale
    return out


def finish_loadpoints(
    rows: list[dict[str, object]],
    source: InputSource,
    *,
    format: str,
    tool: str,
    tool_version: str | None = None,
    derived: Iterable[str] = (),
    provenance: Provenance | None = None,
    options: Mapping[str, object] | None = None,
    files: Sequence[str | Path] = (),
) -> LoadPointTable:
    """Conform load-point rows and wrap them with provenance (load-point twin of ``finish_trace``).

    Columns with a value count as measured unless listed in ``derived``. Raises
    :class:`BadValueError` (an :class:`InputError`) when there is no row, or for the
    problems :func:`check_loadpoints` finds (all of them in one error).
    """
    if not rows:
        raise BadValueError("the input holds no load point", path=source.path)
    frame = conform_loadpoints(rows, path=str(source.path))
    prov = provenance or new_provenance(source, format=format, tool=tool)
    prov.source, prov.format, prov.tool = str(source.path), format, tool
    prov.sha256 = prov.sha256 or source.sha256
    prov.tool_version = tool_version
    prov.time_origin = "none"
    prov.timezone = "not applicable (aggregates)"
    prov.options = dict(options or {})
    prov.files = [str(f) for f in files]
    nonnull = frame.select(pl.all().is_not_null().any()).row(0, named=True)
    prov.fields = field_origins(nonnull, LOADPOINT_SCHEMA, derived, skip="source_file")
    check_loadpoints(frame, source)
    return LoadPointTable(frame=frame, provenance=prov)


def check_loadpoints(frame: pl.DataFrame, source: InputSource) -> None:
    """Plausibility of a conformed load-point frame; one error listing every problem.

    A count, rate or latency that is negative; a latency statistic that is NaN, infinite
    or over 24 h (:data:`~bearing_lib.data.trace.MAX_LATENCY_MS`); an offered load that is
    not positive (``inf`` is allowed: an unbounded rate); a step duration that is not
    positive. Each problem names the run, the step and the file.
    """
    from bearing_lib.data.trace import MAX_LATENCY_MS

    checks: list[tuple[str, pl.Expr, str]] = []
    for col, dtype in LOADPOINT_SCHEMA.items():
        if not dtype.is_numeric() or col == "step":
            continue
        c = pl.col(col)
        checks.append((col, c < 0, "expected a non-negative number"))
        if any(col.startswith(f"{m}_") for m in LATENCY_METRICS):
            checks.append((col, c.is_nan() | c.is_infinite(), "expected a finite latency in ms"))
            checks.append((col, c.is_finite() & (c > MAX_LATENCY_MS), "expected at most 86400000 ms (24 h)"))
    checks.append(("offered_load", pl.col("offered_load").is_nan() | (pl.col("offered_load") <= 0),
                   "expected a positive offered load (inf for an unbounded rate)"))
    checks.append(("duration_s", pl.col("duration_s").is_nan() | (pl.col("duration_s") <= 0),
                   "expected a positive step duration in s"))
    problems: list[Problem] = []
    path: str | None = None  # the error names the first bad row's file; others are named in their line
    for col, mask, what in checks:
        bad = frame.filter(mask.fill_null(False))
        if bad.height:
            r = bad.row(0, named=True)
            file = _full_path(source, r["source_file"])
            path = path or file
            more = f"; {bad.height} step(s) affected" if bad.height > 1 else ""
            where = f"run {r['run_id']}, step {r['step']}" + (f", file {file}" if file != path else "")
            problems.append(Problem(f"{what}, found {r[col]!r} ({where}){more}", field=col))
    raise_problems(problems, path=path)


def _full_path(source: InputSource, source_file: str | None) -> str:
    """The file a load-point row came from: ``source_file`` is relative to a loaded folder,
    or the bare name of the loaded file."""
    if not source_file:
        return str(source.path)
    if source.is_dir:
        return str(source.path / source_file)
    return str(source.path) if Path(source_file).name == source.path.name else source_file


def relpath(path: Path, base: Path) -> str:
    """``path`` relative to ``base`` when inside it, else the full path (for ``source_file``)."""
    try:
        rel = path.relative_to(base)
        return rel.as_posix() if str(rel) != "." else path.name
    except ValueError:
        return str(path)
