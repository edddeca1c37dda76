"""GuideLLM results: ``benchmarks.json`` (0.5.x, metadata version 1), the report schema v2
(0.8.x, metadata version 2), and a DERIVED sweep table (``all-benchmarks.csv``).

One file holds a run; each entry of ``benchmarks[]`` is one step (a sweep runs
synchronous, then throughput, then constant rates in between). A step's load comes from
``config.strategy``: ``synchronous`` is concurrency 1, ``concurrent`` is its ``streams``,
``constant``/``poisson`` are their ``rate`` in req/s, ``throughput`` is an unbounded rate
(``inf``). Steps are ordered closed-loop (concurrency) first, then rates ascending,
unbounded last.

``guidellm-benchmarks-requests``
    Files whose ``requests.{successful, errored, incomplete}`` lists hold records become a
    :class:`~bearing_lib.data.trace.RequestTrace` with epoch-second start/end times. **Units
    are mixed**: ``request_latency`` is in seconds, ``time_to_first_token_ms``,
    ``time_per_output_token_ms`` and ``inter_token_latency_ms`` in milliseconds.
    ``incomplete`` requests (cut off by the duration limit) are ``cancelled``.
``guidellm-benchmarks``
    Files whose request lists are empty (report v2 fixtures, ``--sample-requests 0``)
    become a :class:`~bearing_lib.data.loadpoints.LoadPointTable` from ``metrics.*.successful``.
``guidellm-csv``
    GuideLLM's own ``benchmarks.csv`` (``--outputs csv``), one row per benchmark, in either
    of the layouts GuideLLM has written: one header row (``Type, Run Id, Id, Name, Start Time,
    End Time, Duration``, then per status ``Successful Requests`` and ``<Status> <Metric>
    mean|median|std dev|[min, 0.1, 1, 5, 10, 25, 75, 90, 95, 99, max]``, then ``Profile,
    Backend, Generator Data``), or three header rows (group, field, unit/statistic:
    ``Benchmark/Strategy``, ``Timings/Duration/Sec``, ``Request Counts/Successful``,
    ``Time to First Token/Successful ms/Mean|Median|Std Dev|Percentiles`` ...). Units as
    labelled: request latency in s, token latencies in ms. The load of a step comes from its
    ``Name`` (``constant@2.60``, ``concurrent@4``, ``synchronous``, ``throughput``) in the
    first layout; the second layout names only the strategy type, so rates and streams come
    from the ``Profile`` JSON (its ``measured_rates``/``rate``/``streams`` lists, in benchmark
    order) and are left unknown, with a finding, when it does not list them. Statistics are of
    successful requests (GuideLLM's own).
``guidellm-derived-csv``
    A sweep table written by someone's post-processing (not by GuideLLM), one row per
    benchmark: ``source_file, profile, rate, duration_s, total_requests, error_requests,
    ttft_*_ms, itl_*_ms, req_latency_*_s, rps_mean, concurrency_mean, …`` with ``-`` for
    missing. Rows ``sweep[i]`` form one run; every other row is its own run.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from pathlib import Path
from typing import Any

import polars as pl

from bearing_lib.common.errors import BadValueError, InputError, UnsupportedVersionError
from bearing_lib.data.loadpoints import LoadPointTable, SendWindow, window_columns
from bearing_lib.data.provenance import Provenance
from bearing_lib.data.trace import RequestTrace
from bearing_lib.loaders._common import finish_trace, new_provenance, read_csv_checked
from bearing_lib.loaders._loadtest import (
    StepFacts,
    finish_loadpoints,
    json_document,
    number,
    number_steps,
    parse_rate,
    step_columns,
    step_rows,
)
from bearing_lib.loaders.registry import FormatSpec, register
from bearing_lib.loaders.source import InputSource

NAME_REQUESTS = "guidellm-benchmarks-requests"
NAME_AGGREGATE = "guidellm-benchmarks"
NAME_CSV = "guidellm-derived-csv"
TOOL = "GuideLLM"
SCHEMAS = (0, 1, 2)  # 0: before 0.5, converted by _from_legacy
BENCH_KEYS = ("config", "metrics", "requests", "duration")
LISTS = {"successful": "ok", "errored": "error", "incomplete": "cancelled"}


# ---------------------------------------------------------------- recognising files
def _is_guidellm(doc: object) -> bool:  # a pre-0.5 file is converted first (_doc)
    return (isinstance(doc, dict) and isinstance(doc.get("benchmarks"), list)
            and isinstance(doc.get("metadata"), dict) and "guidellm_version" in doc["metadata"])


def _has_records(doc: dict[str, Any]) -> bool:
    for b in doc.get("benchmarks") or []:
        reqs = b.get("requests") if isinstance(b, dict) else None
        if isinstance(reqs, dict) and any(isinstance(reqs.get(k), list) and reqs[k] for k in LISTS):
            return True
    return False


def _doc(source: InputSource) -> object:
    doc = json_document(source) if source.suffix == ".json" else None
    return _from_legacy(doc) if _is_legacy(doc) else doc


# ---------------------------------------------------------------- before 0.5: no metadata
LEGACY_VERSION = "before 0.5 (v0.2-v0.3 report schema, no metadata)"
"""``tool_version`` of a pre-0.5 file: it states no version."""


def _whole(source: InputSource) -> object:
    """The whole file (any size), a pre-0.5 report converted."""
    doc = source.json
    return _from_legacy(doc) if _is_legacy(doc) else doc  # type: ignore[arg-type]


def _is_legacy(doc: object) -> bool:
    """A GuideLLM report from before 0.5: ``{"benchmarks": [...]}`` and nothing else at the top, each benchmark
    ``type_`` ``generative_benchmark`` with ``args.strategy`` (vllm-project/guidellm at tag v0.3.0, commit
    ad9513fd: ``src/guidellm/benchmark/output.py`` ``GenerativeBenchmarksReport.save_json`` dumps the model,
    whose only field is ``benchmarks``; ``src/guidellm/benchmark/benchmark.py`` ``GenerativeBenchmark``)."""
    if not isinstance(doc, dict) or "metadata" in doc or not isinstance(doc.get("benchmarks"), list):
        return False
    bs = doc["benchmarks"]
    return bool(bs) and all(isinstance(b, dict) and b.get("type_") == "generative_benchmark"
                            and isinstance(b.get("args"), dict) and isinstance(b["args"].get("strategy"), dict)
                            for b in bs)


def _legacy_record(rec: object) -> object:
    """One pre-0.5 request record in the 0.5 shape the loader reads.

    ``GenerativeTextResponseStats`` (v0.3.0 ``benchmark.py``) has ``start_time``/``end_time`` (epoch s) and
    computed fields ``request_latency`` (s), ``time_to_first_token_ms``, ``time_per_output_token_ms`` =
    (last − first token) / **output_tokens** and ``inter_token_latency_ms`` = (last − first token) /
    (output_tokens − 1). bearing's ``tpot_ms`` is the time per output token *after the first*: the old
    ``inter_token_latency_ms``, not the old ``time_per_output_token_ms``. ``GenerativeTextErrorStats`` adds
    ``error``.
    """
    if not isinstance(rec, dict):
        return rec
    out = dict(rec)
    out["request_start_time"] = rec.get("start_time")
    out["request_end_time"] = rec.get("end_time")
    out["time_per_output_token_ms"] = rec.get("inter_token_latency_ms")
    out["info"] = {"error": rec.get("error")}
    return out


def _from_legacy(doc: dict[str, Any]) -> dict[str, Any]:
    """A pre-0.5 report in the 0.5 (metadata version 1) shape; the parsed file is not modified."""
    benches = []
    model = None
    for b in doc["benchmarks"]:
        nb = dict(b)
        nb["config"] = {"strategy": b["args"]["strategy"]}
        nb["scheduler_metrics"] = {"requests_made": (b.get("run_stats") or {}).get("requests_made") or
                                   b.get("request_totals") or {}}
        metrics = dict(b.get("metrics") or {})
        if "inter_token_latency_ms" in metrics:  # the old per-token mean divides by all tokens (_legacy_record)
            metrics["time_per_output_token_ms"] = metrics["inter_token_latency_ms"]
        nb["metrics"] = metrics
        reqs = b.get("requests") or {}
        nb["requests"] = {k: [_legacy_record(r) for r in (reqs.get(k) or [])] for k in LISTS}
        if "duration" not in nb and isinstance(b.get("start_time"), int | float) and isinstance(
                b.get("end_time"), int | float):
            nb["duration"] = b["end_time"] - b["start_time"]
        model = model or ((b.get("worker") or {}).get("backend_model"))
        benches.append(nb)
    return {"metadata": {"version": 0, "guidellm_version": LEGACY_VERSION}, "args": {"model": model},
            "benchmarks": benches}


def sniff_requests(source: InputSource) -> bool:
    doc = _doc(source)
    return _is_guidellm(doc) and _has_records(doc)  # type: ignore[arg-type]


def sniff_aggregate(source: InputSource) -> bool:
    doc = _doc(source)
    return _is_guidellm(doc) and not _has_records(doc)  # type: ignore[arg-type]


def version(source: InputSource) -> str | None:
    doc = _doc(source)
    if isinstance(doc, dict) and isinstance(doc.get("metadata"), dict):
        v = doc["metadata"].get("guidellm_version")
        return str(v) if v is not None else None
    return None


def _check(doc: object, path: Path) -> dict[str, Any]:
    meta = doc.get("metadata") if isinstance(doc, dict) else None
    found = str(meta.get("guidellm_version")) if isinstance(meta, dict) and meta.get("guidellm_version") else None
    schema = meta.get("version") if isinstance(meta, dict) else None
    missing = [] if isinstance(meta, dict) else ["metadata"]
    if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list):
        missing.append("benchmarks")
    if schema not in SCHEMAS:
        missing.append("metadata.version (1 or 2)")
    if not missing:
        for i, b in enumerate(doc["benchmarks"]):
            lack = [k for k in BENCH_KEYS if k not in b]
            strat = (b.get("config") or {}).get("strategy") if isinstance(b, dict) else None
            if not isinstance(strat, dict) or "type_" not in strat:
                lack.append("config.strategy.type_")
            missing.extend(f"benchmarks[{i}].{k}" for k in lack)
    if missing:
        raise UnsupportedVersionError(
            "not a GuideLLM benchmarks file bearing can read (known: the pre-0.5 report without metadata, "
            "metadata.version 1 = 0.5.x, 2 = report schema v2 of 0.8.x)", tool="GuideLLM", version=found,
            missing=missing, path=path)
    return doc  # type: ignore[return-value]


def strategy_load(kind: str, strategy: dict[str, Any], *, path: Path, where: str) -> tuple[float | None, str, int]:
    """(offered load, unit, rank) of a GuideLLM strategy; rank 0 = closed loop, 1 = open loop."""
    if kind == "synchronous":
        return 1.0, "concurrency", 0
    if kind == "concurrent":
        streams = strategy.get("streams", strategy.get("max_concurrency"))
        return number(streams, path=path, field=f"{where}.streams"), "concurrency", 0
    if kind == "throughput":
        return math.inf, "rps", 1
    if kind in ("constant", "poisson", "async"):
        return parse_rate(strategy.get("rate"), path=path, field=f"{where}.rate"), "rps", 1
    raise BadValueError(f"unknown GuideLLM strategy {kind!r}; expected synchronous, concurrent, throughput, "
                        "constant or poisson", path=path, field=f"{where}.type_")


def _note_legacy(doc: dict[str, Any], prov: Provenance) -> None:
    if doc["metadata"].get("version") == 0:
        prov.add("legacy_schema", "GuideLLM before 0.5 wrote no metadata (report = {benchmarks}); read with that "
                 "schema (vllm-project/guidellm v0.3.0 src/guidellm/benchmark/benchmark.py GenerativeBenchmark): "
                 "strategy from args.strategy, requests made from run_stats, request times start_time/end_time, "
                 "tpot_ms from inter_token_latency_ms (its time_per_output_token_ms divides by all output tokens), "
                 "model from worker.backend_model", level="info")


def _steps(doc: dict[str, Any], path: Path, prov: Provenance) -> list[StepFacts]:
    run_id = Path(path.name).stem
    steps = []
    for i, b in enumerate(doc["benchmarks"]):
        strat = b["config"]["strategy"]
        load, unit, rank = strategy_load(str(strat["type_"]), strat, path=path,
                                         where=f"benchmarks[{i}].config.strategy")
        made = (b.get("scheduler_metrics") or {}).get("requests_made") or {}
        steps.append(StepFacts(run_id=run_id, offered_load=load, offered_load_unit=unit, rank=rank, tiebreak=(i,),
                               duration_s=number(b.get("duration"), path=path, field=f"benchmarks[{i}].duration"),
                               n_requests_reported=made.get("total"), source_file=f"{path.name}:benchmarks[{i}]",
                               payload=(i, b)))
    return number_steps(steps, prov)


def _model(doc: dict[str, Any]) -> str | None:
    args = doc.get("args") or {}
    if args.get("model"):
        return str(args["model"])
    spec = ((doc.get("config") or {}).get("spec") or {}).get("backend") or {}
    return str(spec["model"]) if spec.get("model") else None


# ---------------------------------------------------------------- requests
_HTTP_429 = re.compile(r"\b429\b|too many requests", re.IGNORECASE)
_TIMEOUT = re.compile(r"timeout|timed out", re.IGNORECASE)


def _status(list_name: str, info: dict[str, Any]) -> str:
    """Canonical status of one record. ``incomplete`` (and ``info.status`` ``cancelled``) is ``cancelled``:
    GuideLLM itself cancelled the request when the step hit its duration or request limit, not the server
    (vllm-project/guidellm: ``scheduler/constraints/request.py`` ``MaxDurationConstraint.__call__`` returns
    ``request_processing="stop_local"`` once ``elapsed >= max_duration``; ``scheduler/worker_group.py`` then
    sets the shutdown event, ``scheduler/worker.py`` ``WorkerProcess.run_async`` cancels the request task, and
    ``_process_next_graph_node`` catches the ``CancelledError`` and sends status ``cancelled`` with error
    "Request was cancelled"; ``benchmark/schemas/accumulator.py`` files a cancelled request that had started
    (``timings.resolve_start`` set) under ``incomplete`` and drops one that had not). So it is neither a
    success nor a failure (docs/canonical-trace.md, "Status values"), never ``error``."""
    if list_name == "successful":
        return "ok"
    if list_name == "incomplete" or info.get("status") == "cancelled":
        return "cancelled"
    text = str(info.get("error") or "")
    if _HTTP_429.search(text):
        return "rejected"
    if _TIMEOUT.search(text):
        return "timeout"
    return "error"


def _max_tokens(args: object) -> int | None:
    """The ``max_tokens`` the request asked for: ``request_args`` is the request as a JSON string
    (``{"body": {"max_tokens": 1024, ...}}``) or already an object; None when absent or not a count."""
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            return None
    body = args.get("body") if isinstance(args, dict) else None
    v = body.get("max_tokens", body.get("max_completion_tokens")) if isinstance(body, dict) else None
    return int(v) if isinstance(v, int | float) and not isinstance(v, bool) and v >= 0 and v == int(v) else None


def _load_requests(source: InputSource) -> RequestTrace:
    path = source.path
    doc = _check(_whole(source), path)
    prov = new_provenance(source, format=NAME_REQUESTS, tool=TOOL)
    _note_legacy(doc, prov)
    steps = _steps(doc, path, prov)
    cols: dict[str, list] = {k: [] for k in (
        "request_id", "start_s", "end_s", "ttft_ms", "latency_ms", "tpot_ms", "itl_ms", "input_tokens",
        "output_tokens", "requested_output_tokens", "status", "error", "run_id", "step", "offered_load",
        "offered_load_unit", "source_row")}
    counted = 0
    for s in steps:
        i, b = s.payload
        element = 0
        for list_name in LISTS:
            records = (b.get("requests") or {}).get(list_name) or []
            for rec in records:
                element += 1
                where = f"benchmarks[{i}].requests.{list_name}[{element - 1}]"
                info = rec.get("info") or {}
                timings = info.get("timings") or {}
                status = _status(list_name, info)
                start = rec.get("request_start_time", timings.get("request_start"))
                end = rec.get("request_end_time", timings.get("request_end"))
                lat_s = number(rec.get("request_latency"), path=path, field=f"{where}.request_latency")
                cols["request_id"].append(rec.get("request_id") or info.get("request_id") or where)
                cols["start_s"].append(number(start, path=path, field=f"{where}.request_start_time"))
                cols["end_s"].append(number(end, path=path, field=f"{where}.request_end_time"))
                cols["latency_ms"].append(lat_s * 1000.0 if lat_s is not None else None)  # seconds -> ms
                cols["ttft_ms"].append(number(rec.get("time_to_first_token_ms"), path=path, field=where))
                cols["tpot_ms"].append(number(rec.get("time_per_output_token_ms"), path=path, field=where))
                cols["itl_ms"].append(number(rec.get("inter_token_latency_ms"), path=path, field=where))
                cols["input_tokens"].append(rec.get("prompt_tokens"))
                cols["output_tokens"].append(rec.get("output_tokens"))
                cols["requested_output_tokens"].append(_max_tokens(rec.get("request_args")))
                cols["status"].append(status)
                cols["error"].append(None if status == "ok" else str(info.get("error") or list_name)[:500])
                for k, v in step_columns(s).items():
                    cols[k].append(v)
                cols["source_row"].append(element)
        counted += element
        made = s.n_requests_reported
        if made is not None and made != element:
            prov.add("sampled_requests", f"{s.source_file}: the file lists {element} request records but GuideLLM "
                     f"reports {made} requests made (sampled or capped lists); statistics over the listed records "
                     "may differ from GuideLLM's", level="info")
    frame = pl.DataFrame(cols, schema_overrides={"start_s": pl.Float64, "end_s": pl.Float64, "ttft_ms": pl.Float64,
                                                 "latency_ms": pl.Float64, "tpot_ms": pl.Float64,
                                                 "itl_ms": pl.Float64, "input_tokens": pl.Int64,
                                                 "output_tokens": pl.Int64, "error": pl.String,
                                                 "requested_output_tokens": pl.Int64,
                                                 "offered_load": pl.Float64}
                         ).with_columns(pl.lit(_model(doc), dtype=pl.String).alias("model"))
    n_cancelled = cols["status"].count("cancelled")
    if n_cancelled:
        per = frame.filter(pl.col("status") == "cancelled").group_by("run_id", "step").len().sort("run_id", "step")
        prov.add("cancelled_at_step_end", f"{n_cancelled} request(s) were cancelled by GuideLLM when their step "
                 "reached its duration or request limit (its 'incomplete' list): status cancelled, neither success "
                 "nor failure, left out of error rates and percentiles. Per step: "
                 + ", ".join(f"{r} step {s_}: {n}" for r, s_, n in per.iter_rows()), level="info", count=n_cancelled)
    prov.add("warmup_included", "every listed request is kept, including those GuideLLM's own statistics exclude "
             "as warm-up/cool-down; steps.duration_s is GuideLLM's measured window ('duration')", level="info")
    meta = doc["metadata"]
    return finish_trace(frame, source, format=NAME_REQUESTS, tool=TOOL, tool_version=str(meta["guidellm_version"]),
                        time_origin="epoch", provenance=prov, options={"schema_version": meta.get("version")},
                        steps=step_rows(steps))


# ---------------------------------------------------------------- aggregates from metrics
_STATS = {"mean": "mean", "median": "p50", "max": "max"}
_PCTS = {"p90": "p90", "p95": "p95", "p99": "p99"}
_LAT = {"request_latency": ("latency_ms", 1000.0), "time_to_first_token_ms": ("ttft_ms", 1.0),
        "time_per_output_token_ms": ("tpot_ms", 1.0), "inter_token_latency_ms": ("itl_ms", 1.0)}


def _metric(b: dict[str, Any], name: str) -> dict[str, Any] | None:
    m = (b.get("metrics") or {}).get(name)
    if isinstance(m, dict) and isinstance(m.get("successful"), dict):
        return m["successful"]
    return None


def _guidellm_window(duration_s: float | None) -> dict[str, object]:
    """The send window of a GuideLLM benchmark: its ``duration``, the scheduler's measured window
    (``GenerativeBenchmark.duration``; ``MaxDurationConstraint`` stops queuing and cancels the requests still in
    flight at its end, so no drain follows), measured."""
    return window_columns(SendWindow.of(duration_s, "measured", "benchmark duration: the scheduler's measured "
                                        "window (requests in flight at its end are cancelled)"), False)


def _load_aggregate(source: InputSource) -> LoadPointTable:
    path = source.path
    doc = _check(_whole(source), path)
    prov = new_provenance(source, format=NAME_AGGREGATE, tool=TOOL)
    _note_legacy(doc, prov)
    steps = _steps(doc, path, prov)
    rows = []
    for s in steps:
        i, b = s.payload
        made = (b.get("scheduler_metrics") or {}).get("requests_made") or {}
        row: dict[str, object] = {
            **step_columns(s), "model": _model(doc), "duration_s": s.duration_s, **_guidellm_window(s.duration_s),
            "n_requests": made.get("total"), "n_ok": made.get("successful"), "n_errors": made.get("errored"),
            "source_file": s.source_file,
        }
        # GuideLLM's request_concurrency: requests in flight (request_start_time to request_end_time) weighted by
        # time over the benchmark (guidellm 0.8.1 schemas/base/statistics.py concurrency_distribution_from_timings;
        # metrics.py builds it from each request's start and end); its "total" status counts every request in flight,
        # as GuideLLM's own HTML report reads it (benchmark/outputs/html.py: _mean(metrics.request_concurrency,
        # status="total")): the step's measured mean in flight, canonical concurrency_mean
        conc = ((b.get("metrics") or {}).get("request_concurrency") or {}).get("total")
        row["concurrency_mean"] = (number(conc.get("mean"), path=path,
                                          field=f"benchmarks[{i}].metrics.request_concurrency.total.mean")
                                   if isinstance(conc, dict) else None)
        for name, col in (("requests_per_second", "throughput_rps"), ("prompt_tokens_per_second",
                                                                         "input_tokens_per_s"),
                          ("output_tokens_per_second", "output_tokens_per_s")):
            m = _metric(b, name)
            row[col] = number(m.get("mean"), path=path, field=f"benchmarks[{i}].metrics.{name}") if m else None
        for name, (metric, scale) in _LAT.items():
            m = _metric(b, name)
            if not m or not m.get("count"):
                continue
            for k, stat in _STATS.items():
                v = number(m.get(k), path=path, field=f"benchmarks[{i}].metrics.{name}.{k}")
                row[f"{metric}_{stat}"] = None if v is None else v * scale
            pct = m.get("percentiles") or {}
            for k, stat in _PCTS.items():
                v = number(pct.get(k), path=path, field=f"benchmarks[{i}].metrics.{name}.percentiles.{k}")
                row[f"{metric}_{stat}"] = None if v is None else v * scale
        rows.append(row)
    prov.add("no_request_records", "the request lists are empty: steps come from GuideLLM's own statistics of "
             "successful requests (request_latency converted from s to ms; token latencies already in ms), and the "
             "mean in flight from its request_concurrency over every status",
             level="info")
    meta = doc["metadata"]
    return finish_loadpoints(rows, source, format=NAME_AGGREGATE, tool=TOOL,
                             tool_version=str(meta["guidellm_version"]), provenance=prov,
                             options={"schema_version": meta.get("version")}, files=[str(path)])


# ---------------------------------------------------------------- DERIVED sweep table
CSV_COLUMNS = ("source_file", "profile", "rate", "duration_s", "total_requests", "error_requests", "ttft_mean_ms",
               "ttft_median_ms", "ttft_p99_ms", "itl_mean_ms", "itl_median_ms", "itl_p99_ms", "req_latency_mean_s",
               "req_latency_median_s", "req_latency_p99_s", "rps_mean", "concurrency_mean")


def sniff_csv(source: InputSource) -> bool:
    if source.is_dir or source.suffix != ".csv":
        return False
    header = [c.strip() for c in source.first_line.split(",")]
    return header[:3] == ["source_file", "profile", "rate"] and "req_latency_mean_s" in header


def load_csv(source: InputSource) -> LoadPointTable:
    path = source.path
    raw = read_csv_checked(source, {c: pl.String() for c in CSV_COLUMNS})
    prov = new_provenance(source, format=NAME_CSV, tool="GuideLLM (DERIVED table)")
    prov.add("statistics_of_every_status", "the table's latency and token statistics are GuideLLM's over every "
             "request status ('total' in its parse_benchmarks.py), the incomplete requests cancelled at a "
             "benchmark's end included, which GuideLLM records with their time so far and the tokens they got: its "
             "means and low percentiles read lower than the successful requests' (bearing reads every other tool's "
             "successful requests); its counts leave the incomplete requests out")
    prov.add("derived_file", "this table was written by post-processing of GuideLLM runs, not by GuideLLM; its "
             "columns are read as its writer made them (nirjhar17/guidellm-pd-disaggregation reports/"
             "parse_benchmarks.py): total_requests is the successful requests and error_requests the errored ones "
             "(incomplete requests are not counted); latencies and token counts are GuideLLM's statistics over every "
             "request status ('total'), concurrency_mean its time-weighted mean of requests in flight; '-' = "
             "missing; latencies *_ms in ms, req_latency_*_s in s")
    steps, unknown = [], []
    for r in raw.iter_rows(named=True):
        line = int(r["source_row"])

        def num(col: str, r: dict[str, Any] = r, line: int = line) -> float | None:
            v = (r.get(col) or "").strip()
            return None if v in ("", "-") else number(v, path=path, field=col, row=line)

        label = str(r["source_file"]).strip()
        m = re.match(r"^(.*)\[(\d+)\]$", label)
        run_id, order = (m.group(1), int(m.group(2))) if m else (label, 0)
        profile = str(r["profile"]).strip()
        if profile == "concurrent":
            load, unit, rank = None, "concurrency", 0
            unknown.append(label)
        else:
            rate = (r.get("rate") or "").strip()
            strategy = {"rate": None if rate in ("", "-") else rate}
            load, unit, rank = strategy_load(profile, strategy, path=path, where=f"row {line}")
        steps.append(StepFacts(run_id=run_id, offered_load=load, offered_load_unit=unit, rank=rank,
                               tiebreak=(order, line), duration_s=num("duration_s"),
                               n_requests_reported=int((num("total_requests") or 0) + (num("error_requests") or 0)),
                               source_file=f"{path.name}:{line}",
                               payload=(r, num)))
    if unknown:
        prov.add("concurrency_not_in_table", f"rows {unknown}: concurrent profile but the table has no stream "
                 "count (rate '-'); offered load left unknown (the achieved concurrency_mean is not an offered load)",
                 count=len(unknown))
    steps = number_steps(steps, prov)
    rows = []
    for s in steps:
        r, num = s.payload
        total, errors = num("total_requests"), num("error_requests")
        rows.append({
            **step_columns(s), "duration_s": s.duration_s, **_guidellm_window(s.duration_s),
            # the table's writer counts total_requests = len(requests.successful) and error_requests =
            # len(requests.errored) (nirjhar17/guidellm-pd-disaggregation@2ff1575 reports/parse_benchmarks.py):
            # "total" is the successful requests, the step sent both (incomplete requests, cancelled at the window's
            # end, are not in the table). Before round 23 bearing read total − errors as successful (1,080 of 1,081).
            # an error count the table does not give ('-') leaves the sent count unknown (review, round 23: it read
            # total + 0, and the curve then derived 0 errors)
            "n_requests": int(total + errors) if total is not None and errors is not None else None,
            "n_errors": int(errors) if errors is not None else None,
            "n_ok": int(total) if total is not None else None,
            "throughput_rps": num("rps_mean"),
            # the run's measured mean in flight, as labelled (GuideLLM's request concurrency), not Little's law
            "concurrency_mean": num("concurrency_mean"),
            # the table gives mean tokens per request; tokens/s = that mean × the successful requests' rate
            # (both over the same successful requests in GuideLLM's report), what the fidelity check and the plan read
            **{f"{side}_tokens_per_s": (None if (tok := num(col)) is None or (rps := num("rps_mean")) is None
                                        else tok * rps)
               for side, col in (("input", "prompt_tokens_mean"), ("output", "output_tokens_mean"))},
            "ttft_ms_mean": num("ttft_mean_ms"), "ttft_ms_p50": num("ttft_median_ms"),
            "ttft_ms_p99": num("ttft_p99_ms"),
            "itl_ms_mean": num("itl_mean_ms"), "itl_ms_p50": num("itl_median_ms"), "itl_ms_p99": num("itl_p99_ms"),
            **{f"latency_ms_{k}": (None if (v := num(c)) is None else v * 1000.0)
               for k, c in (("mean", "req_latency_mean_s"), ("p50", "req_latency_median_s"),
                            ("p99", "req_latency_p99_s"))},
            "source_file": s.source_file,
        })
    if not rows:
        raise InputError("the table has no rows", path=path)
    return finish_loadpoints(rows, source, format=NAME_CSV, tool="GuideLLM (DERIVED table)", tool_version=None,
                             derived={"n_ok", "input_tokens_per_s", "output_tokens_per_s"}, provenance=prov,
                             options={}, files=[str(path)])


# ---------------------------------------------------------------- GuideLLM's own benchmarks.csv
NAME_NATIVE_CSV = "guidellm-csv"
_PCT_LIST = ("min", "p001", "p01", "p05", "p10", "p25", "p75", "p90", "p95", "p99", "max")
_NATIVE_LAT = {  # canonical metric: (single-header metric words, three-row group, unit word, scale to ms)
    "latency_ms": ("Request latency", "Request Latency", "Sec", 1000.0),
    "ttft_ms": ("Time to first token ms", "Time to First Token", "ms", 1.0),
    "tpot_ms": ("Time per output token ms", "Time per Output Token", "ms", 1.0),
    "itl_ms": ("Inter token latency ms", "Inter Token Latency", "ms", 1.0),
}
_NAME_LOAD = re.compile(r"^\s*(?P<kind>[a-z_]+)\s*(?:@\s*(?P<value>[0-9.]+|inf))?\s*$")


def _csv_rows(source: InputSource, limit: int | None = None) -> list[list[str]]:
    text = source.head_text if limit else source.read_text()
    rows = list(csv.reader(io.StringIO(text)))
    return rows[:limit] if limit else rows


def _native_layout(source: InputSource) -> str | None:
    if source.is_dir or source.suffix != ".csv":
        return None
    try:
        rows = _csv_rows(source, limit=3)
    except csv.Error:
        return None
    if not rows:
        return None
    first = [c.strip() for c in rows[0]]
    if first[:4] == ["Type", "Run Id", "Id", "Name"] and "Successful Requests" in first:
        return "single"
    if len(rows) >= 3 and "Request Counts" in first and "Benchmark" in first and "Timings" in first:
        return "three-row"
    return None


def sniff_native_csv(source: InputSource) -> bool:
    return _native_layout(source) is not None


def _cell_number(text: str, *, path: Path, field: str, row: int) -> float | None:
    t = (text or "").strip()
    if t in ("", "None", "null", "nan", "-"):
        return None
    return parse_rate(t, path=path, field=field, row=row) if t.lower() in ("inf", "infinity") else \
        number(t, path=path, field=field, row=row)


def _pct_list(text: str, *, path: Path, field: str, row: int) -> dict[str, float | None]:
    t = (text or "").strip()
    if not t:
        return {}
    try:
        values = json.loads(t.replace("None", "null").replace("nan", "null"))
    except json.JSONDecodeError:
        raise BadValueError(f"expected a list of {len(_PCT_LIST)} numbers [min, 0.1, 1, ..., 99, max], found "
                            f"{t[:80]!r}", path=path, field=field, row=row) from None
    if not isinstance(values, list) or len(values) != len(_PCT_LIST):
        raise BadValueError(f"expected a list of {len(_PCT_LIST)} numbers [min, 0.1, 1, ..., 99, max], found "
                            f"{t[:80]!r}", path=path, field=field, row=row)
    return {k: number(v, path=path, field=field, row=row) for k, v in zip(_PCT_LIST, values, strict=True)}


def _json_cell(text: str) -> dict[str, Any]:
    try:
        v = json.loads(text) if text else None
    except json.JSONDecodeError:
        return {}
    return v if isinstance(v, dict) else {}


def _name_load(name: str, *, path: Path, row: int) -> tuple[str, dict[str, Any]]:
    """Strategy kind and its parameters from a benchmark's ``Name`` (``constant@2.60``, or the
    strategy's field list ``type_='constant' rate=2.6 ...``)."""
    m = _NAME_LOAD.match(name or "")
    if m:
        kind, value = m.group("kind"), m.group("value")
        key = "streams" if kind == "concurrent" else "rate"
        return kind, ({key: value} if value is not None else {})
    fields = dict(re.findall(r"(\w+)=('[^']*'|[^\s]+)", name or ""))
    kind = fields.get("type_", "").strip("'")
    if not kind:
        raise BadValueError(f"expected a strategy name like constant@2.60 or concurrent@4, found {name!r}",
                            path=path, field="Name", row=row)
    return kind, {k: v.strip("'") for k, v in fields.items() if k in ("rate", "streams")}


def _profile_values(profile: dict[str, Any], kind: str) -> list[float] | None:
    """Rates (or streams) of a profile's open-loop (or concurrent) strategies, in order."""
    keys = ("streams",) if kind == "concurrent" else ("measured_rates", "async_rates", "rate", "rates")
    for where in (profile, profile.get("args") if isinstance(profile.get("args"), dict) else {}):
        for k in keys:
            v = where.get(k)
            if isinstance(v, int | float) and not isinstance(v, bool):
                return [float(v)]
            if isinstance(v, list) and v and all(isinstance(x, int | float) for x in v):
                return [float(x) for x in v]
    return None


def load_native_csv(source: InputSource) -> LoadPointTable:
    """GuideLLM's own ``benchmarks.csv`` (either layout) → load points, one per benchmark."""
    path = source.path
    layout = _native_layout(source)
    rows = [r for r in _csv_rows(source) if any(c.strip() for c in r)]
    n_head = 1 if layout == "single" else 3
    head, body = rows[:n_head], rows[n_head:]
    if not body:
        raise InputError("the GuideLLM CSV has a header but no benchmark row", path=path)
    width = len(head[0])
    if layout == "single":
        keys = [c.strip() for c in head[0]]
    else:
        keys = ["/".join(x.strip() for x in col) for col in zip(*(h + [""] * (width - len(h)) for h in head),
                                                                  strict=True)]
    prov = new_provenance(source, format=NAME_NATIVE_CSV, tool=TOOL)
    prov.add("layout", f"GuideLLM benchmarks.csv, {'one header row' if layout == 'single' else 'three header rows'}",
             level="info")
    run_id = Path(path.name).stem
    steps: list[StepFacts] = []
    pending: dict[str, list[StepFacts]] = {}
    for i, r in enumerate(body):
        line = n_head + i + 1
        if len(r) != width:
            raise BadValueError(
                f"this benchmark row has {len(r)} fields but the header has {width}: GuideLLM takes the header from "
                "the first benchmark, and a benchmark with errored or incomplete requests writes more columns, so "
                "the columns of this row cannot be trusted; read the run's benchmarks.json instead",
                path=path, row=line)
        cell = dict(zip(keys, r, strict=True))
        if layout == "single":
            kind, params = _name_load(cell.get("Name", ""), path=path, row=line)
            profile = _json_cell(cell.get("Profile", ""))
        else:
            kind = cell.get("Benchmark/Strategy/", "").strip()
            params = {}
            profile = _json_cell(cell.get("Run Info/Profile/", ""))
        if layout == "three-row" and kind in ("concurrent", "constant", "poisson"):
            load, unit, rank = (None, "concurrency", 0) if kind == "concurrent" else (None, "rps", 1)
        else:
            load, unit, rank = strategy_load(kind, params, path=path, where=f"row {line}")
        duration = cell.get("Duration") if layout == "single" else cell.get("Timings/Duration/Sec")
        fact = StepFacts(run_id=run_id, offered_load=load, offered_load_unit=unit, rank=rank, tiebreak=(i,),
                         duration_s=_cell_number(duration or "", path=path, field="Duration", row=line),
                         source_file=f"{path.name}:{line}", payload=(cell, line, profile))
        steps.append(fact)
        if load is None and kind in ("concurrent", "constant", "poisson"):
            pending.setdefault(kind, []).append(fact)
    unknown = []
    for kind, facts in pending.items():
        values = _profile_values(facts[0].payload[2], kind)
        if values is not None and len(values) == len(facts):
            for f, v in zip(facts, values, strict=True):
                f.offered_load = v
            what = "streams" if kind == "concurrent" else "rates"
            prov.add("offered_load_from_profile", f"the {kind} benchmarks' {what} come from the Profile JSON, in "
                     f"benchmark order: {', '.join(f'{v:g}' for v in values)}", level="info")
        else:
            unknown.extend(f.payload[1] for f in facts)
    if unknown:
        prov.add("offered_load_unknown", f"rows {unknown}: this CSV layout names only the strategy type and the "
                 "Profile JSON does not list the rates/streams; their offered load is unknown (GuideLLM's "
                 "benchmarks.json has it)", count=len(unknown))
    out = []
    for s in number_steps(steps, prov):
        cell, line, _ = s.payload

        def num(key: str, cell: dict[str, str] = cell, line: int = line) -> float | None:
            return _cell_number(cell.get(key, ""), path=path, field=key, row=line)

        row: dict[str, object] = {**step_columns(s), "duration_s": s.duration_s, **_guidellm_window(s.duration_s),
                                  "source_file": s.source_file}
        if layout == "single":
            ok, err, inc = num("Successful Requests"), num("Errored Requests"), num("Incomplete Requests")
            total = num("Total Requests")
            row["throughput_rps"] = num("Successful Requests per second mean")
            row["output_tokens_per_s"] = num("Successful Output tokens per second mean")
            for metric, (words, _, _, scale) in _NATIVE_LAT.items():
                base = f"Successful {words}"
                stats = {"mean": num(f"{base} mean"), "p50": num(f"{base} median")}
                pk = f"{base} [min, 0.1, 1, 5, 10, 25, 75, 90, 95, 99, max]"
                stats |= {k: v for k, v in _pct_list(cell.get(pk, ""), path=path, field=pk, row=line).items()
                          if k in ("p90", "p95", "p99", "max")}
                row |= {f"{metric}_{k}": None if v is None else v * scale for k, v in stats.items()}
            backend = _json_cell(cell.get("Backend", ""))
        else:
            ok, err, inc = (num(f"Request Counts/{k}/") for k in ("Successful", "Errored", "Incomplete"))
            total = num("Request Counts/Total/")
            row["throughput_rps"] = num("Server Throughput/Successful Requests/Sec/Mean")
            row["output_tokens_per_s"] = num("Token Throughput/Successful Output Tokens/Sec/Mean")
            for metric, (_, group, unit_word, scale) in _NATIVE_LAT.items():
                base = f"{group}/Successful {unit_word}"
                stats = {"mean": num(f"{base}/Mean"), "p50": num(f"{base}/Median")}
                pk = f"{base}/Percentiles"
                stats |= {k: v for k, v in _pct_list(cell.get(pk, ""), path=path, field=pk, row=line).items()
                          if k in ("p90", "p95", "p99", "max")}
                row |= {f"{metric}_{k}": None if v is None else v * scale for k, v in stats.items()}
            backend = _json_cell(cell.get("Run Info/Backend/", ""))
        if total is None and ok is not None:
            total = ok + (err or 0) + (inc or 0)
        row |= {"n_requests": None if total is None else int(total), "n_ok": None if ok is None else int(ok),
                "n_errors": None if err is None else int(err)}
        model = backend.get("model") if isinstance(backend.get("model"), str) else None
        row["model"] = model
        out.append(row)
    prov.add("successful_statistics", "latency statistics are GuideLLM's own, over successful requests; request "
             "latency converted from s to ms, token latencies already in ms", level="info")
    return finish_loadpoints(out, source, format=NAME_NATIVE_CSV, tool=TOOL, tool_version=None, provenance=prov,
                             options={"layout": layout}, files=[str(path)])


register(FormatSpec(
    name=NAME_REQUESTS, tool=TOOL, kind="requests",
    needs="a GuideLLM benchmarks.json (metadata.guidellm_version, benchmarks[]) whose request lists hold records",
    sniff=sniff_requests, load=_load_requests, version=version,
))
register(FormatSpec(
    name=NAME_AGGREGATE, tool=TOOL, kind="loadpoints",
    needs="a GuideLLM benchmarks.json / report v2 (metadata.guidellm_version, benchmarks[]) with empty request lists",
    sniff=sniff_aggregate, load=_load_aggregate, version=version,
))
register(FormatSpec(
    name=NAME_CSV, tool="GuideLLM (DERIVED table)", kind="loadpoints",
    needs="a CSV whose header starts source_file,profile,rate and has req_latency_mean_s",
    sniff=sniff_csv, load=load_csv,
))
register(FormatSpec(
    name=NAME_NATIVE_CSV, tool=TOOL, kind="loadpoints",
    needs="GuideLLM's own benchmarks.csv: a header starting Type,Run Id,Id,Name, or three header rows with "
    "Run Info, Benchmark, Timings, Request Counts",
    sniff=sniff_native_csv, load=load_native_csv,
))
