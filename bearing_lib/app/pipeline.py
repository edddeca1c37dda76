"""The steps the report notebooks run, so that the notebooks hold no logic.

Each function takes paths and parameters as a notebook's ``parameters`` cell gives them
and returns a library object or a contract document (dict). When a step cannot be done
(an input without the fields it needs, a part of bearing that this build lacks) it
returns :class:`~bearing_lib.report.model.Unavailable` with the reason, which the report
shows as "not available: <reason>", instead of raising, so that one missing part does
not hide the others. Bad parameters and unreadable files still raise bearing errors.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import altair as alt
import polars as pl

from bearing_lib.app.loader_options import LOADTEST, PRODUCTION, LoaderOptions, ParameterNames
from bearing_lib.app.weeks import iso_week, week_bounds
from bearing_lib.common.errors import BadValueError, BearingError, InputError, ParameterError
from bearing_lib.common.files import read_json, write_json
from bearing_lib.common.unavailable import Unavailable
from bearing_lib.data.provenance import sha256_of
from bearing_lib.data.trace import RequestTrace
from bearing_lib.report.charts import report_charts
from bearing_lib.report.compare_section import compare_section
from bearing_lib.report.fidelity_section import fidelity_section
from bearing_lib.report.model import Flag, MinuteCount, ReportModel, build_report, make_provenance
from bearing_lib.report.ops_section import load_metrics, ops_section
from bearing_lib.report.paths import PROJECT_ROOT, portable, portable_path, resolve
from bearing_lib.report.plan_section import passive_part
from bearing_lib.report.summary import ReportSummary
from bearing_lib.report.views import elapsed

Doc = dict[str, Any] | Unavailable


# ------------------------------------------------------------------ small I/O helpers


def input_record(role: str, path: str | Path) -> dict[str, Any]:
    """``{"role", "path", "sha256"}`` for provenance (a folder hashes its files)."""
    p = resolve(path)
    return {"role": role, "path": str(path), "sha256": sha256_of(p) if p.exists() else None}


def sla_texts(sla: str | list[str]) -> list[str]:
    """SLA parameter as a list of clause texts (a string may join clauses with 'and' or ';')."""
    texts = [sla] if isinstance(sla, str) else [str(s) for s in sla]
    texts = [t for t in texts if t.strip()]
    if not texts:
        raise ParameterError("sla: give at least one clause, e.g. 'p99(ttft) <= 1s and error_rate <= 1%'")
    return texts


# ------------------------------------------------------------------ traces and windows


def require(value: Any, name: str, what: str) -> Any:
    """``value``, or :class:`ParameterError` when a required notebook parameter is empty."""
    if value is None or (isinstance(value, str) and not value.strip()):
        raise ParameterError(f"parameter {name!r} is required: {what} (papermill: -p {name} VALUE)")
    return value


# A text table (CSV, JSON lines, compressed or not) is parsed whole into memory by the
# loaders (they build one polars frame per trace), so the report refuses one this large
# rather than risk an out-of-memory kill half-way through a run. Parquet is read
# column-wise and is not limited here. 2 GB = 2 * 10**9 bytes.
MAX_TEXT_INPUT_BYTES = 2_000_000_000


def _is_parquet(p: Path) -> bool:
    if p.suffix.lower() == ".parquet":
        return True
    try:
        with p.open("rb") as fh:
            return fh.read(4) == b"PAR1"
    except OSError:
        return False


def check_input_size(path: str | Path, what: str = "input", *, limit: int | None = None) -> None:
    """Refuse a text input (a file, or a folder's files together) of ``limit`` bytes or more.

    Raises :class:`InputError` naming the file, its size and the fix (convert to Parquet, or
    cut the trace to the window the report uses). Only file sizes are read, never contents
    (apart from 4 bytes to recognise Parquet), so the check is instant on any size.
    """
    limit = MAX_TEXT_INPUT_BYTES if limit is None else limit
    p = resolve(path)
    files = [p] if p.is_file() else sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else []
    sizes = [(f, f.stat().st_size) for f in files]
    if sum(n for _, n in sizes) < limit:  # the common case: no file is even opened
        return
    text = [(f, n) for f, n in sizes if not _is_parquet(f)]
    total = sum(n for _, n in text)
    if total < limit:
        return
    biggest = max(text, key=lambda x: x[1])
    where = f"{len(text)} text files together hold {total / 1e9:.2f} GB (the largest, {biggest[0].name}, " \
            f"{biggest[1] / 1e9:.2f} GB)" if p.is_dir() else f"{total / 1e9:.2f} GB of text"
    raise InputError(
        f"the {what} is too large to read into memory: {where}; bearing report reads CSV / JSON-lines inputs "
        f"whole and refuses {limit / 1e9:g} GB or more rather than risk an out-of-memory kill. Convert it to "
        f"Parquet (read column-wise), e.g. python -c \"import polars as pl; pl.scan_csv('{p}')"
        f".sink_parquet('{p.with_suffix('.parquet')}')\", with bearing's canonical column names or "
        "-p production_format generic, or keep only the weeks the report needs",
        path=p,
    )


def read_input(path: str | Path, how: LoaderOptions | None = None) -> Any:
    """Any supported input read as ``how`` says (default: format detected, no mapping, no option); relative
    paths as :func:`resolve`. A CSV / JSON-lines input of 2 GB or more is refused (:func:`check_input_size`)."""
    from bearing_lib.loaders import load as _load

    how = how or LoaderOptions()
    check_input_size(path)
    return _load(resolve(path), format=how.format, **how.loader_kwargs())


def load(path: str | Path, format: str = "", *, mapping: str | Path = "", options: Mapping[str, object] | None = None,
         ) -> Any:
    """Any supported input (``format`` empty = detect); relative paths as :func:`resolve`.

    ``format``, ``mapping`` and ``options`` are a notebook's load-test parameters, checked once into a
    :class:`~bearing_lib.app.loader_options.LoaderOptions` (a wrong one is a :class:`ParameterError` naming
    it); then :func:`read_input`.
    """
    return read_input(path, LoaderOptions.from_parameters(format, mapping, options, names=LOADTEST))


def load_production(path: str | Path, format: str = "", *, mapping: str | Path = "",
                    options: Mapping[str, object] | None = None) -> Any:
    """The production trace (the notebook's ``production_format``, ``production_mapping`` and
    ``production_options``, checked once), its clock checked to be in seconds
    (:func:`bearing_lib.data.timeunit.require_seconds`: a trace whose start times are milliseconds from zero
    is refused, naming the file and the column, never profiled as a 972-hour trace)."""
    return read_production(path, LoaderOptions.from_parameters(format, mapping, options, names=PRODUCTION))


def read_production(path: str | Path, how: LoaderOptions) -> Any:
    """:func:`read_input`, then the clock checked to be in seconds (see :func:`load_production`)."""
    from bearing_lib.data.timeunit import require_seconds

    return require_seconds(read_input(path, how), what="production trace")


def load_test(path: str | Path, format: str = "", engine: str = "", *, mapping: str | Path = "",
              options: Mapping[str, object] | None = None) -> Any:
    """A load test for :func:`limits`: loaded (:func:`load`, with ``mapping`` and loader ``options``) when
    ``engine`` is empty, else named as a Parquet dataset (:func:`bearing_lib.data.engine.open_dataset`:
    nothing read but the footers) for ``fit_limits(..., engine=engine)``; ``format``, ``mapping`` and
    ``options`` must then be empty."""
    how = LoaderOptions.from_parameters(format, mapping, options, names=LOADTEST)
    if not engine:
        return read_input(path, how)
    from bearing_lib.data.engine import ENGINES, open_dataset

    if engine not in ENGINES:
        raise ParameterError(f"engine: expected '', {' or '.join(ENGINES)}, got {engine!r}")
    if how.given:
        raise ParameterError("engine reads a Parquet dataset of canonical columns; leave format, mapping and "
                             "options empty with it")
    return open_dataset(path if "://" in str(path) else resolve(path))


# Notebook parameters that name inputs: (kind, what it is, the parameter giving its format).
INPUT_PARAMETERS: dict[str, tuple[str, str, str | None]] = {
    "limits_json": ("json", "limits JSON", None),
    "shape_from": ("json", "limits JSON of an earlier test", None),
    "plan_json": ("json", "plan JSON", None),
    "profile_json": ("json", "profile JSON", None),
    "production_trace": ("data", "production trace", "production_format"),
    "loadtest": ("data", "load-test output", "format"),
    "mixes": ("mixes", "mix file", None),
    "server_metrics": ("data", "server metrics", "metrics_format"),
    "metrics_trace": ("data", "load-test trace for the server metrics", None),
    "mapping": ("mapping", "column mapping of the load test", None),
    "production_mapping": ("mapping", "column mapping of the production trace", None),
}
# The parameters saying how each data input with a mapping and loader options is read (named by INPUT_PARAMETERS).
LOADER_PARAMETERS: dict[str, ParameterNames] = {
    "loadtest": LOADTEST,
    "production_trace": PRODUCTION,
}


def loader_of(parameters: Mapping[str, Any], name: str) -> LoaderOptions:
    """How the input named by parameter ``name`` (``loadtest``, ``production_trace``, ``server_metrics``) is
    read, from a notebook's ``parameters``, checked once (:meth:`LoaderOptions.from_parameters`); an input
    without mapping and options parameters has only its format."""
    names = LOADER_PARAMETERS.get(name)
    if names is not None:
        return LoaderOptions.from_parameters(*(parameters.get(k) for k in names), names=names)
    key = INPUT_PARAMETERS[name][2]
    return LoaderOptions.from_parameters(parameters.get(key), names=ParameterNames(key, "", "")) if key else \
        LoaderOptions()


# Formats whose clock is always relative (no wall-clock anchor): a week cannot cut them.
RELATIVE_CLOCK_FORMATS = frozenset({"mooncake", "servegen", "burstgpt"})
# Formats whose clock is always a calendar one (Azure's TIMESTAMP is a date and time): not read twice.
EPOCH_CLOCK_FORMATS = frozenset({"azure-llm-inference"})


def check_inputs(parameters: dict[str, Any], *, notebook: str = "") -> None:
    """Read what can be read of a notebook's inputs **before** its kernel starts.

    Files named by :data:`INPUT_PARAMETERS` must exist and be readable (JSON documents
    must parse to an object; traces must not be too large, :func:`check_input_size`, and
    their format must be detected when none is given); each data input's format, mapping and
    loader options are checked once into a :class:`~bearing_lib.app.loader_options.LoaderOptions`
    (:func:`loader_of`: a wrong one names its parameter); ``sla`` must parse; ``tier`` must be
    a known tier; ``week`` must be an ISO week. Values holding ``{output_dir}`` are made
    by the run itself and skipped. Raises the same :class:`BearingError` the notebook would,
    so bad input exits 1 with nothing run.
    """
    where = f" ({notebook})" if notebook else ""
    loaders = {name: loader_of(parameters, name) for name in INPUT_PARAMETERS if INPUT_PARAMETERS[name][0] == "data"}
    for name, (kind, what, _) in INPUT_PARAMETERS.items():
        value = parameters.get(name)
        if not isinstance(value, str) or not value.strip() or "{output_dir}" in value:
            continue
        if kind == "mixes" and value in ("auto", "none"):
            continue
        if name == "shape_from" and value.strip() == SHAPE_FROM_PREVIOUS:
            if parameters.get("shape_required", True) is not False:
                raise ParameterError(_PREVIOUS_UNRESOLVED)
            continue  # bearing report / weekly resolved it to none found: pipeline.limits says so
        p = resolve(value)
        if not p.exists():
            raise InputError(f"the {what} (parameter {name}{where}) does not exist", path=p)
        if kind == "json":
            doc = read_json(p, what)
            if name == "plan_json":  # the typed plan document: a renamed or missing key fails here, naming it
                from bearing_lib.plan.capacity_plan import CapacityPlan

                CapacityPlan.from_dict(doc, source=f"{what} {p}")
            if name == "shape_from" and parameters.get("shape_required", True) is not False:
                from bearing_lib.limits.shapes import ShapePriors  # no shape in it: refused before the run

                ShapePriors.of(p)
        elif kind == "mixes":
            mix_spec(str(p))
        elif kind == "mapping":
            from bearing_lib.loaders.generic import read_mapping

            read_mapping(p)
        else:
            if not os.access(p, os.R_OK) or (p.is_dir() and not os.access(p, os.X_OK)):
                raise InputError(f"the {what} (parameter {name}{where}) is not readable", path=p)
            check_input_size(p, what)
            if loaders[name].format is None:
                from bearing_lib.loaders.registry import detect

                detect(p)
    if isinstance(parameters.get("sla"), str | list):
        from bearing_lib.limits.sla import parse_sla

        parse_sla(sla_texts(parameters["sla"]))
    if isinstance(parameters.get("estimator"), str) and parameters["estimator"]:
        from bearing_lib.limits.fit import ESTIMATORS

        if parameters["estimator"] not in ESTIMATORS:
            raise ParameterError(f"estimator (--estimator): expected {' or '.join(ESTIMATORS)}, got "
                                 f"{parameters['estimator']!r}")
    if str(parameters.get("shape_from") or "").strip() and str(parameters.get("engine") or "").strip():
        raise ParameterError("shape_from (--shape-from) informs the model, which runs in memory; it does not combine "
                             "with engine (the load test read as a Parquet dataset): leave one of them empty")
    if isinstance(parameters.get("tier"), str) and parameters["tier"]:
        from bearing_lib.plan.fos import get_tier

        get_tier(parameters["tier"])
    if isinstance(parameters.get("week"), str) and parameters["week"]:
        iso_week(parameters["week"])
    week, span, trace = (str(parameters.get(k) or "").strip() for k in ("week", "window", "production_trace"))
    production = _production_clock(parameters, loaders["production_trace"]) if trace and "{output_dir}" not in trace \
        else None
    if week and not span and production is not None:
        fmt, origin = production
        if origin != "epoch":
            raise ParameterError(f"week {week!r}: the production trace ({fmt}) has a relative clock (seconds from "
                                 "its start, no calendar dates), so no ISO week applies to it; give a window in "
                                 "elapsed time instead, e.g. -p window 0h..1h (bearing weekly --window 0h..1h)")
    if isinstance(parameters.get("window"), str) and parameters["window"].strip():
        text = parameters["window"].strip()
        if text.count("..") != 1:
            raise ParameterError(f"window: expected START..END (e.g. 0h..2h), got {text!r}")
        for side, what in zip(text.split(".."), ("window start", "window end"), strict=True):
            side = side.strip()
            if side and not ("-" in side[1:] and "t" in side.lower()):
                parse_elapsed(side, what)


# Formats whose clock the user declares (bearing cannot know the unit from the tool): their start times are
# checked to be seconds (data/timeunit.py) before the notebook runs.
USER_CLOCK_FORMATS = frozenset({"bearing-canonical", "generic"})


def _production_clock(parameters: Mapping[str, Any], how: LoaderOptions) -> tuple[str, str]:
    """``(format, time origin)`` of the production trace, read before the notebook where it must be.

    The clock, not the format, decides: a format that is always relative is not read, nor one that is always
    a calendar clock; a trace whose unit the user declares (canonical, generic) is loaded and its start times
    checked to be seconds (:func:`load_production`); any other format is loaded only when a week asks for
    its clock. ``how`` is how the trace is read (its format, mapping and loader options, checked)."""
    from bearing_lib.loaders.registry import detect

    trace = str(parameters["production_trace"]).strip()
    if how.format is None:
        how = dataclasses.replace(how, format=detect(resolve(trace)).name)
    fmt = str(how.format)
    if fmt in RELATIVE_CLOCK_FORMATS:
        return fmt, "relative"
    if fmt in EPOCH_CLOCK_FORMATS:
        return fmt, "epoch"
    week = str(parameters.get("week") or "").strip() and not str(parameters.get("window") or "").strip()
    if fmt in USER_CLOCK_FORMATS:
        return fmt, read_production(trace, how).provenance.time_origin
    if week:
        return fmt, read_input(trace, how).provenance.time_origin
    return fmt, "unknown"


def runs_of(parameters: dict[str, Any]) -> list[str] | None:
    """The load-test runs the report's limits will hold, read before any notebook: from ``limits_json``, or by
    loading ``loadtest`` (with its format, mapping and options); None when they cannot be known beforehand
    (a Parquet dataset on an engine, or no load-test input)."""
    limits_json = str(parameters.get("limits_json") or "")
    if limits_json and "{output_dir}" not in limits_json:
        from bearing_lib.limits.result import LimitsResult

        p = resolve(limits_json)
        return LimitsResult.from_dict(read_json(p, "limits JSON"), source=f"limits JSON {p}").runs
    test = str(parameters.get("loadtest") or "")
    if not test or str(parameters.get("engine") or ""):
        return None
    ds = read_input(test, loader_of(parameters, "loadtest"))
    frame = getattr(ds, "frame", None)
    if frame is None or "run_id" not in frame.columns:
        return None
    return sorted({str(r) for r in frame["run_id"].drop_nulls().unique().to_list()})


def check_run(parameters: dict[str, Any]) -> None:
    """Before any notebook: the ``run`` parameter names one of the limits' runs, and is given when they hold
    several (the plan covers one run). Raises :class:`ParameterError` listing the runs and the flag."""
    runs = runs_of(parameters)
    if not runs:
        return
    run = str(parameters.get("run") or "")
    source = "the limits JSON" if parameters.get("limits_json") else "the load test"
    if run and run not in runs:
        raise ParameterError(f"run {run!r}: {source} holds no such run; its runs: {', '.join(runs)}")
    if not run and len(runs) > 1:
        raise ParameterError(f"{source} holds {len(runs)} runs ({', '.join(runs)}), i.e. different deployments or "
                             f"tests, and a plan covers one: choose it with --run NAME (or -p run NAME), e.g. "
                             f"--run {runs[0]}")


def window(trace: Any, week: str = "", start: str = "", end: str = "", span: str = "") -> Any:
    """The requests of one ISO ``week`` (UTC), of ``[start, end)`` (ISO times), of ``span``, or all.

    ``span`` is ``START..END`` (either side may be empty): durations on the trace's own
    clock (``0..2h``, ``30m..90m``, ``1:00:00..``; a bare number is seconds) for a trace
    with a relative clock, which has no calendar dates, or ISO times for a wall-clock one.
    A relative clock counts from the trace's origin (Mooncake's ``timestamp`` 0, ServeGen's
    first window), so ``0..1h`` is the first hour. Works on request traces and on rate
    windows (a window is kept when it starts inside the span).

    Raises :class:`ParameterError` for a week or ISO times asked of a trace without epoch
    times (naming ``window``), and :class:`BadValueError` when the window holds no
    request (naming the trace's own time span).
    """
    if not (week or start or end or span):
        return trace
    relative = trace.provenance.time_origin != "epoch"
    col = "window_start_s" if "window_start_s" in trace.frame.columns else "start_s"
    if span:
        lo_s, hi_s, text = _span(span, relative)
    elif relative:
        raise ParameterError(f"{trace.provenance.source}: a week or ISO start/end needs wall-clock times; this "
                             f"trace has a relative clock (time origin {trace.provenance.time_origin!r}, no "
                             "calendar dates). Give a window in elapsed time instead, e.g. -p window 0h..1h "
                             "(bearing weekly --window 0h..1h), or leave week/start/end empty")
    else:
        if week:
            lo, hi = week_bounds(week)
        else:
            lo = _parse_time(start, "start") if start else _dt.datetime.min.replace(tzinfo=_dt.UTC)
            hi = _parse_time(end, "end") if end else _dt.datetime.max.replace(tzinfo=_dt.UTC)
        lo_s, hi_s = lo.timestamp() if lo.year > 1 else -math.inf, hi.timestamp() if hi.year < 9999 else math.inf
        text = f"[{lo.isoformat()}, {hi.isoformat()})"
    frame = trace.frame.filter((pl.col(col) >= lo_s) & (pl.col(col) < hi_s))
    if frame.height == 0:
        t0, t1 = trace.frame[col].min(), trace.frame[col].max()
        if relative:
            have = f"{elapsed_text(t0)} to {elapsed_text(t1)} on its relative clock"
        else:
            have = (f"{_dt.datetime.fromtimestamp(t0, _dt.UTC).isoformat()} to "
                    f"{_dt.datetime.fromtimestamp(t1, _dt.UTC).isoformat()}")
        raise BadValueError(f"no request in the window {text}; the trace spans {have}", path=trace.provenance.source)
    prov = trace.provenance
    what = "windows" if col == "window_start_s" else "requests"
    prov.add("window", f"kept {frame.height:,} of {trace.frame.height:,} {what} in {text}", level="info",
             count=frame.height)
    if col == "window_start_s":
        return dataclasses.replace(trace, frame=frame)
    return RequestTrace(frame, prov, trace.steps)


_UNITS = {"s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}


def parse_elapsed(text: str, what: str = "window") -> float:
    """Seconds in a duration: ``90`` (seconds), ``90s``, ``30m``/``30min``, ``2h``, ``1d``, ``1h30m``, ``1:30:00``.

    Raises :class:`ParameterError` naming ``what`` and the accepted forms.
    """
    import re

    t = text.strip().lower()
    bad = ParameterError(f"{what}: expected an elapsed time such as 90s, 30m, 2h, 1h30m, 1d or 1:30:00 (a bare "
                         f"number is seconds), got {text!r}")
    if not t:
        raise bad
    if ":" in t:
        parts = t.split(":")
        if len(parts) > 3 or not all(re.fullmatch(r"\d+(\.\d+)?", x) for x in parts):
            raise bad
        return sum(float(x) * 60 ** i for i, x in enumerate(reversed(parts)))
    try:
        v = float(t)
    except ValueError:
        pass
    else:
        if not math.isfinite(v) or v < 0:
            raise bad
        return v
    pieces = re.findall(r"(\d+(?:\.\d+)?)\s*(min|sec|[smhd])", t)
    if not pieces or re.sub(r"(\d+(?:\.\d+)?)\s*(min|sec|[smhd])", "", t).strip():
        raise bad
    return sum(float(n) * _UNITS[u] for n, u in pieces)


def elapsed_text(seconds: float) -> str:
    """``+1 h 30 min``-style text of a time on a relative clock (``+0 s`` at the origin)."""
    return elapsed(seconds)


def _span(text: str, relative: bool) -> tuple[float, float, str]:
    """``(lo_s, hi_s, description)`` of a ``START..END`` window (see :func:`window`)."""
    if text.count("..") != 1:
        raise ParameterError(f"window: expected START..END (e.g. 0h..2h; either side may be empty), got {text!r}")
    a, b = (x.strip() for x in text.split(".."))
    if not relative and any("-" in x[1:] and "t" in x.lower() for x in (a, b) if x):
        lo = _parse_time(a, "window start") if a else None
        hi = _parse_time(b, "window end") if b else None
        lo_s = lo.timestamp() if lo else -math.inf
        hi_s = hi.timestamp() if hi else math.inf
        return lo_s, hi_s, f"[{lo.isoformat() if lo else '…'}, {hi.isoformat() if hi else '…'})"
    lo_s = parse_elapsed(a, "window start") if a else 0.0
    hi_s = parse_elapsed(b, "window end") if b else math.inf
    if hi_s <= lo_s:
        raise ParameterError(f"window: the end must come after the start, got {text!r}")
    if not relative:
        raise ParameterError(f"window {text!r}: this trace has a wall-clock (UTC) time; give ISO times, e.g. "
                             "2023-11-16T00:00Z..2023-11-17T00:00Z, or -p week")
    end = "the end" if math.isinf(hi_s) else elapsed_text(hi_s)
    return lo_s, hi_s, f"[{elapsed_text(lo_s)}, {end}) on the trace's relative clock"


def _parse_time(text: str, what: str) -> _dt.datetime:
    try:
        t = _dt.datetime.fromisoformat(text)
    except ValueError:
        raise ParameterError(f"{what}: expected an ISO time such as 2026-11-23T00:00:00Z, got {text!r}") from None
    return t if t.tzinfo else t.replace(tzinfo=_dt.UTC)


def findings(dataset: Any, source: str) -> list[Flag]:
    """A dataset's loader findings as report flags."""
    prov = getattr(dataset, "provenance", None)
    return [Flag(source, f.level, f.code, f.message) for f in (prov.findings if prov else [])]


# ------------------------------------------------------------------ mixes and curves


def mix_spec(spec: str, trace: RequestTrace | None = None) -> Any:
    """``"auto"`` (from ``trace``), ``"none"`` (one mix), or a YAML/JSON mix file path."""
    from bearing_lib.data.mixes import MixSpec, auto_mixes, load_mix_spec

    if spec in ("", "none"):
        return MixSpec.single()
    if spec == "auto":
        if trace is None:
            raise ParameterError("mixes 'auto' needs a trace to segment")
        return auto_mixes(trace.frame)
    return load_mix_spec(spec)


def mix_shares(trace: RequestTrace, spec: Any) -> pl.DataFrame:
    """Requests per mix and share of all requests (a small polars frame)."""
    return (spec.assign(trace.frame).group_by("mix").len("requests")
            .with_columns((pl.col("requests") / pl.col("requests").sum()).alias("share"))
            .sort("requests", descending=True))


def curve(trace: Any, spec: Any = None) -> pl.DataFrame:
    """The load curve (one row per run × step × mix), see ``bearing_lib.limits.curves``."""
    from bearing_lib.limits.curves import load_curve

    return load_curve(trace, spec)


def curve_chart(frame: pl.DataFrame, metric: str = "ttft_ms_p99", sla_ms: float | None = None) -> alt.Chart:
    """A quick notebook chart of one curve column against offered load, one line per run and mix."""
    cols = ["run_id", "mix", "offered_load", metric, "valid"]
    data = frame.select([c for c in cols if c in frame.columns]).drop_nulls("offered_load").to_dicts()
    color = alt.Color("series:N", title="run · mix")
    base = alt.Chart(alt.Data(values=[{**r, "series": f"{r.get('run_id')} · {r.get('mix')}"} for r in data]))
    chart = base.mark_line(point=True).encode(x=alt.X("offered_load:Q", title="offered load"),
                                              y=alt.Y(f"{metric}:Q", title=metric), color=color)
    if sla_ms is not None:
        chart = chart + alt.Chart(alt.Data(values=[{"y": sla_ms}])).mark_rule(color="#c62828",
                                                                             strokeDash=[6, 3]).encode(y="y:Q")
    return chart.properties(width=560, height=280)


# ------------------------------------------------------------------ limits, profile, plan


_PREVIOUS_UNRESOLVED = ("shape_from 'previous' is resolved by bearing report / bearing weekly (the limits.json of the "
                        "newest earlier report); in a notebook run give the earlier limits JSON's path")
SHAPE_FROM_PREVIOUS = "previous"
"""``shape_from``'s word for the limits JSON of the newest earlier report (``bearing report`` / ``weekly`` resolve
it, :func:`bearing_lib.app.runner.previous_limits`; it reaches :func:`limits` only when there was none)."""


def limits(trace: Any, sla: str | list[str], mixes: str = "auto", n_boot: int = 1000, seed: int = 0, *,
           engine: str = "", scheduler: str = "", estimator: str = "", shape_from: str = "",
           shape_required: bool = True) -> Any:
    """Per-mix limits with 95% CIs: :func:`bearing_lib.limits.fit.fit_limits` (a ``LimitsResult``).

    ``mixes`` is ``auto``, ``none`` or a YAML/JSON mix file (relative paths as :func:`resolve`).
    ``engine`` (``embedded`` or ``dask``, with ``scheduler``) fits a Parquet dataset from
    :func:`load_test` on that engine; empty: the loaded ``trace`` in this process.
    ``estimator`` is a request trace's (``model``, the default when empty, or ``pooled``; load-point tables always
    use the model).
    ``shape_from`` is the limits JSON of an earlier test of the same service, whose shape the model may take
    (docs/limits.md, "An earlier test's shape"); with ``shape_required`` False one that offers none (no shape in it,
    this test's own files) is left out with a note, and :data:`SHAPE_FROM_PREVIOUS` here means no earlier report
    held a limits JSON (said in a note too).
    """
    from bearing_lib.limits.fit import DEFAULT_ESTIMATOR, check_shape_from, fit_limits

    spec = mixes if mixes in ("auto", "none") else resolve(mixes)
    shape_from = (shape_from or "").strip()
    if shape_from:  # whether or not an earlier report was found: a run that passes once passes every week
        check_shape_from(trace, estimator or DEFAULT_ESTIMATOR, engine or None)
    none_found = shape_from == SHAPE_FROM_PREVIOUS
    if none_found and shape_required:
        raise ParameterError(_PREVIOUS_UNRESOLVED)
    earlier = resolve(shape_from) if shape_from and not none_found else None
    result = fit_limits(trace, sla_texts(sla), mixes=spec, n_boot=n_boot, seed=seed, engine=engine or None,
                        scheduler=scheduler or None, estimator=estimator or DEFAULT_ESTIMATOR, shape_from=earlier,
                        shape_required=shape_required)
    if none_found:
        result.notes.append("no earlier shape was used: shape_from 'previous' asked for the limits of the newest "
                            "earlier report (for bearing weekly, of an earlier ISO week), and none in the reports "
                            "folder fitted limits (holds a limits.json); every limit's interval is this test's own")
    return result


def limits_chart(result: Any) -> alt.Chart | str:
    """The load curve of the SLA's first percentile clause, with its threshold, per run and mix."""
    clauses = [c for c in result.sla_spec.clauses if c.kind == "percentile"]
    if not clauses:
        return "the SLA has no percentile clause to chart"
    c = clauses[0]
    from bearing_lib.limits.curves import qname

    return curve_chart(result.curve, f"{c.metric}_{qname(c.q)}", sla_ms=c.threshold)


STATED = " (stated by the analyst; not in the load-test files)"
"""What marks a condition the analyst stated (``model``, ``hardware``) in a limits document."""


def _state_conditions(doc: dict[str, Any], *, model: str = "", hardware: str = "", tested_instances: int = 0,
                      ) -> dict[str, Any]:
    cond = doc.setdefault("conditions", {})
    for key, value in (("model", model), ("hardware", hardware)):
        if value and not cond.get(key):
            cond[key] = f"{value}{STATED}"
    if tested_instances and tested_instances > 0 and cond.get("instances") is None:
        cond["instances"] = int(tested_instances)
        cond["instances_basis"] = "stated by the analyst (parameter tested_instances)"
    return doc


def limits_document(result: Any, *, model: str = "", hardware: str = "", tested_instances: int = 0,
                    output_json: str | Path = "") -> dict[str, Any]:
    """``LimitsResult.to_dict()`` (contract §4); for an :class:`Unavailable`,
    ``{"available": false, "reason": ...}`` so the weekly report can say why.

    ``model`` and ``hardware`` fill conditions the load-test files do not state (a limit
    without its conditions is not comparable); they are marked as stated by the analyst
    and never overwrite what the files say. ``tested_instances`` (> 0) is the number of
    instances (replicas) the load test drove: the plan's per-instance capacity and its
    instance count are in that unit. With ``output_json`` (where the document will be written)
    the load-test paths are written relative to its folder
    (:func:`bearing_lib.limits.sourcepaths.relative_sources`).
    """
    if isinstance(result, Unavailable):
        return {"available": False, "reason": result.reason}
    doc = _state_conditions(result.to_dict(), model=model, hardware=hardware, tested_instances=tested_instances)
    if str(output_json):
        from bearing_lib.limits.sourcepaths import relative_sources

        relative_sources(doc, output_json)
    return doc


def read_limits(path: str | Path, *, model: str = "", hardware: str = "") -> Doc:
    """The limits JSON at ``path``; :class:`Unavailable` when the path is empty.

    Relative load-test paths in it are read from the JSON's own folder, not from the working directory
    (:func:`bearing_lib.limits.sourcepaths.resolved_sources`). ``model`` and ``hardware`` fill the
    conditions the document does not state, as :func:`limits_document` does.
    """
    if not str(path):
        return Unavailable("no limits JSON was given (parameter limits_json is empty)")
    from bearing_lib.limits.sourcepaths import resolved_sources

    p = resolve(path)
    doc = read_json(p, "limits JSON")
    if doc.get("available") is False:
        return doc
    return _state_conditions(resolved_sources(doc, p), model=model, hardware=hardware)


def limits_table(limits_doc: Doc) -> pl.DataFrame | Unavailable:
    """One row per run × mix of a limits JSON: Q_ult, its CI, censoring and statement."""
    if isinstance(limits_doc, Unavailable):
        return limits_doc
    if limits_doc.get("available") is False:
        return Unavailable(str(limits_doc.get("reason")))
    rows = [{"run_id": m.get("run_id"), "mix": (m.get("mix") or {}).get("name"), "share": m.get("share"),
             "q_ult": (m.get("q_ult") or {}).get("value"), "unit": (m.get("q_ult") or {}).get("unit"),
             "censored": (m.get("q_ult") or {}).get("censored"), "binding": m.get("binding"),
             "statement": (m.get("q_ult") or {}).get("statement")} for m in limits_doc.get("mixes") or []]
    schema = {"run_id": pl.String, "mix": pl.String, "share": pl.Float64, "q_ult": pl.Float64, "unit": pl.String,
              "censored": pl.String, "binding": pl.String, "statement": pl.String}
    return pl.DataFrame(rows, schema=schema)


def profile(trace: RequestTrace, limits_doc: Doc | None = None, *, quantile: float = 0.99, growth: float = 1.0,
            n_boot: int = 1000) -> Any:
    """Production traffic profile (:func:`bearing_lib.traffic.profile.profile_traffic`), with the mixes
    of ``limits_doc`` when it has them (so FOS blends the same mixes the limits measured).

    Returns :class:`Unavailable` when the trace cannot support a profile (no arrival
    times, or load-test steps rather than production traffic), with bearing's reason.
    """
    from bearing_lib.common.errors import InsufficientDataError
    from bearing_lib.data.mixes import MixSpec
    from bearing_lib.traffic.profile import profile_traffic

    spec = None
    if isinstance(limits_doc, dict) and limits_doc.get("mix_spec"):
        spec = MixSpec.from_dict(limits_doc["mix_spec"])
    try:
        return profile_traffic(trace, mix_spec=spec, quantile_level=quantile, growth=growth, n_boot=n_boot)
    except (InsufficientDataError, ParameterError) as exc:  # e.g. a load test given as production traffic
        return Unavailable(str(exc))


def plan(limits_doc: Doc, traffic: Any, trace: RequestTrace | None = None, *, tier: str = "standard",
         run: str = "", memory_preset: str = "", model: str = "", gpu_mem_gib: float = 0.0, gpu_count: int = 1,
         concurrency: int = 0, tested_instances: int = 0, price_per_hour: float = 0.0,
         budget_per_month: float = 0.0, server_metrics: Any = None, zones: int = 0, replicas_per_node: int = 0,
         domains_lost: int = 1, tenant_column: str = "") -> Any:
    """Capacity plan (:meth:`bearing_lib.plan.capacity_plan.CapacityPlan.build`); :class:`Unavailable` when an input is.

    ``run`` picks the load-test run when the limits hold several; ``memory_preset`` a model
    preset of ``bearing_lib.plan.memory``; empty: the preset of ``model`` (the model the analyst says the
    test served), else of the model the limits name, else none ("not assessed: model unknown"; never a
    default model); ``gpu_mem_gib`` and
    ``concurrency`` 0 = not given (the plan then says what it could not compute);
    ``tested_instances`` > 0 overrides the instances the limits file says the test drove;
    ``price_per_hour``/``budget_per_month`` 0 = not given; ``server_metrics`` loaded metrics
    (``bearing_lib.report.ops_section.load_metrics``) for the KV check; ``zones`` / ``replicas_per_node`` (0 = not
    given) and ``domains_lost`` the failure domains, ``tenant_column`` (empty: none) the per-tenant quotas.
    """
    if isinstance(limits_doc, Unavailable):
        return Unavailable(f"no limits: {limits_doc.reason}")
    if isinstance(limits_doc, dict) and limits_doc.get("available") is False:
        return Unavailable(f"no limits: {limits_doc.get('reason')}")
    if isinstance(traffic, Unavailable):
        return Unavailable(f"no production profile: {traffic.reason}")
    unjudged = no_limit_reason(limits_doc, run)
    if unjudged is not None:
        return unjudged
    from bearing_lib.plan.capacity_plan import CapacityPlan, PlanOptions
    from bearing_lib.servers.kv_check import kv_gauge

    options = PlanOptions(tier=tier, run=run or None, model=memory_preset or None, served_model=model or None,
                          gpu_mem_gib=gpu_mem_gib or None,
                          gpu_count=gpu_count, concurrency=concurrency or None,
                          tested_instances=tested_instances or None, price_per_hour=price_per_hour or None,
                          budget_per_month=budget_per_month or None, zones=zones or None,
                          replicas_per_node=replicas_per_node or None, domains_lost=domains_lost,
                          tenant_column=tenant_column or None)
    return CapacityPlan.build(limits_doc, traffic, options, trace=trace,
                              kv_gauge=kv_gauge(server_metrics) if server_metrics is not None else None)


def no_limit_reason(limits_doc: Doc, run: str = "") -> Unavailable | None:
    """:class:`Unavailable` saying "no limit can be judged", why, what would support a limit and the follow-up
    test (:func:`bearing_lib.limits.unjudged.no_limit`) when no mix of ``run`` (or of any run) has a judged
    step; None when one has a limit. The report is then written with no verdict (grey) instead of failing."""
    if not isinstance(limits_doc, dict) or limits_doc.get("available") is False:
        return None
    from bearing_lib.limits.result import LimitsResult
    from bearing_lib.limits.unjudged import no_limit

    answer = no_limit(LimitsResult.from_dict(limits_doc, source="limits JSON"), run=run or None)
    return Unavailable(answer.statement) if answer is not None else None


def per_minute_series(traffic: Any) -> list[MinuteCount]:
    """The production requests per minute of a ``TrafficProfile`` (empty for anything else), for the peak chart.

    A profile of rate windows (ServeGen) has no per-minute counts: its windows are given as
    :class:`~bearing_lib.report.model.MinuteCount` rows with ``minute_start_s`` the window start, ``requests``
    the requests in the window and ``bin_s`` its length, so that the chart draws their rate (requests / ``bin_s``).
    """
    from bearing_lib.traffic.document import TrafficProfile

    if not isinstance(traffic, TrafficProfile):
        return []
    windows = traffic.per_window is not None
    return [MinuteCount(t, n, b if windows else None) for t, n, b in traffic.minute_counts()]


def document(obj: Any) -> Doc:
    """``obj.to_dict()`` for a library result, or the :class:`Unavailable` itself."""
    if obj is None or isinstance(obj, Unavailable | dict):
        return obj
    return obj.to_dict()


def read_previous(path: str | Path) -> ReportSummary | Unavailable | None:
    """The previous report's ``summary.json`` as a :class:`ReportSummary`; ``None`` when ``path`` is empty,
    :class:`Unavailable` (the reason, naming the file and the field) when it cannot be read."""
    if not str(path):
        return None
    p = Path(path)
    if not p.is_file():
        return Unavailable(f"the previous summary {p} does not exist")
    try:
        return ReportSummary.read(p)
    except (BearingError, OSError) as exc:
        return Unavailable(str(exc))


# ------------------------------------------------------------------ the report


def report(
    *,
    limits_doc: Doc | None,
    profile_doc: Doc | None,
    plan_doc: Doc | None,
    previous: ReportSummary | Unavailable | None,
    parameters: dict[str, Any],
    inputs: list[dict[str, Any]],
    flags: list[Flag] | None = None,
    name: str = "report",
    title: str = "Capacity report",
    run: str = "",
    traffic: Any = None,
    output_dir: str | Path = "",
    twin: Any = None,
    metrics: Any = None,
    metrics_path: str = "",
    write_exports: bool = True,
    compare: list[str] | None = None,
    tier: str = "standard",
    production: Any = None,
) -> ReportModel:
    """Build the report model with this run's provenance (see ``build_report``).

    ``run`` is the load-test run the plan used; ``traffic`` the ``TrafficProfile`` object
    (its per-minute series feeds the peak chart). The bottleneck and operational settings
    section is built here too (:func:`bearing_lib.report.ops_section.ops_section`, from
    ``metrics`` loaded from ``metrics_path``; the exports are written into ``output_dir``
    unless ``write_exports`` is false). ``output_dir`` is the folder the report
    is written to: paths in it are recorded relative to it (the runner renames its
    temporary folder to ``reports/<name>/`` after the run), paths under the working
    directory or the project root relative to those (:func:`portable_path`); sha256 sums
    are computed before and unchanged. ``compare`` lists deployments to compare under the
    report's SLA, production profile and ``tier`` (or one comparison JSON):
    :func:`bearing_lib.report.compare_section.compare_section`. ``production`` (the production trace as
    loaded) holds the load test against production
    (:func:`bearing_lib.report.fidelity_section.fidelity_section`); None: not assessed. The passive limit is the
    profile document's when it carries one (:func:`passive_of`), else computed from ``production``.
    """
    recs = []
    for i in inputs:
        rec = dict(i)
        if rec.get("path"):
            rec["path"], rec["relative_to"] = portable_path(rec["path"], output_dir)
        recs.append(rec)
    # without a report folder there is nowhere to write the exports: the section is then not built
    ops = (ops_section(plan_doc=plan_doc, limits_doc=limits_doc, output_dir=output_dir, metrics=metrics,
                       metrics_path=metrics_path, run=run or None, write_exports=write_exports,
                       profile_doc=profile_doc)
           if str(output_dir) else None)
    fid = None
    if production is not None:
        prod_path = next((str(i.get("path")) for i in recs if i.get("role") == "production trace"), "")
        fid = fidelity_section(limits_doc=limits_doc, production=production, traffic=traffic, run=run,
                               production_source=prod_path, output_dir=str(output_dir))
    return build_report(
        limits=portable(limits_doc, output_dir), profile=portable(profile_doc, output_dir),
        plan=portable(plan_doc, output_dir), previous=previous,
        provenance=make_provenance(parameters=portable(parameters, output_dir), inputs=recs),
        findings=[Flag(*portable([f.source, f.level, f.code, f.message], output_dir)) for f in flags or []],
        name=name, title=title, plan_run=run or None,
        per_minute_series=per_minute_series(traffic), twin=twin, ops=ops, fidelity=fid,
        compare=compare_section(compare or [], limits_doc=limits_doc, profile_doc=profile_doc, tier=tier),
        passive=passive_of(profile_doc, production, limits_doc),
    )


def passive_of(profile_doc: Any, production: Any, limits_doc: Any) -> Any:
    """The passive limit the report shows: the profile's own (``passive_limit``, written by ``bearing profile
    --passive-sla``, read back as a :class:`~bearing_lib.traffic.document.PassiveLimit`) when the profile document
    carries one, else the production trace's under the limits' SLA
    (:func:`bearing_lib.report.plan_section.passive_part`), else None (not computed)."""
    given = profile_doc.get("passive_limit") if isinstance(profile_doc, dict) else None
    if given is not None:
        from bearing_lib.traffic.document import PassiveLimit

        return PassiveLimit.from_dict(given, source="the production profile's passive_limit")
    return passive_part(production, limits_doc) if production is not None else None


def twin(limits_doc: Doc, production: RequestTrace, *, run: str = "") -> Any:
    """The digital twin's section for the production mix (``bearing_lib.twin.section``), or
    :class:`Unavailable` with the reason (no per-request load test, a twin that cannot be fitted).

    The load test is the limits' own source file (``conditions.sources``); the SLA is theirs.
    """
    from bearing_lib.common.errors import BearingError
    from bearing_lib.limits.result import LimitsResult

    if isinstance(limits_doc, Unavailable):
        return Unavailable(f"no limits: {limits_doc.reason}")
    if not isinstance(production, RequestTrace):
        return Unavailable("the twin replays the production requests; this production input holds rates per "
                           f"window ({type(production).__name__}), not requests")
    lim = limits_doc if isinstance(limits_doc, LimitsResult) else LimitsResult.from_dict(limits_doc)
    sources = [s for s in lim.conditions.sources if s.kind in (None, "requests")]
    if not sources:
        fmts = ", ".join(sorted({str(s.format) for s in lim.conditions.sources})) or "unknown"
        return Unavailable(f"the twin calibrates on per-request timing; this load test ({fmts}) holds load points "
                           "(statistics per step), not one row per request")
    if len(sources) != 1:
        return Unavailable("the twin calibrates on one per-request load test; the limits came from "
                           f"{len(sources)} per-request sources: run the report on one of them")
    path = resolve(sources[0].path)
    if not path.exists():
        return Unavailable(f"the load test the limits came from is not here ({sources[0].path})")
    runs = lim.runs
    if not run and len(runs) > 1:
        return Unavailable(f"the limits hold {len(runs)} runs; name the run the twin should calibrate on (run)")
    try:
        from bearing_lib.twin.replay import tested_replicas
        from bearing_lib.twin.section import production_section

        # the replicas the test ran against, as `bearing twin fit --limits` reads them: one number for both
        sec, _, _ = production_section(path, production, lim.sla_text, run=run or (runs[0] if runs else None),
                                       replicas=tested_replicas(lim.conditions.instances), router_known=False)
    except BearingError as exc:
        return Unavailable(f"the digital twin could not be calibrated: {exc}")
    return sec


def notebook_charts(model: ReportModel) -> alt.VConcatChart | str:
    """The report's charts stacked for display in a notebook (svg renderer survives export)."""
    # Sub-charts of a concatenation may not carry their own top-level config.
    specs = [{k: v for k, v in c.spec.items() if k != "config"} for c in report_charts(model)]
    if not specs:
        return "no charts: the sections that carry charts are not available"
    return alt.vconcat(*[alt.Chart.from_dict(s) if "mark" in s else alt.LayerChart.from_dict(s) for s in specs])


__all__ = [
    "INPUT_PARAMETERS",
    "LOADER_PARAMETERS",
    "MAX_TEXT_INPUT_BYTES",
    "PROJECT_ROOT",
    "SHAPE_FROM_PREVIOUS",
    "STATED",
    "check_input_size",
    "check_inputs",
    "check_run",
    "curve",
    "curve_chart",
    "document",
    "findings",
    "input_record",
    "limits",
    "limits_chart",
    "limits_document",
    "limits_table",
    "load",
    "load_metrics",
    "load_production",
    "load_test",
    "loader_of",
    "mix_shares",
    "mix_spec",
    "no_limit_reason",
    "notebook_charts",
    "passive_of",
    "per_minute_series",
    "plan",
    "portable",
    "portable_path",
    "profile",
    "read_input",
    "read_json",
    "read_limits",
    "read_previous",
    "read_production",
    "report",
    "require",
    "resolve",
    "runs_of",
    "sla_texts",
    "window",
    "write_json",
]
