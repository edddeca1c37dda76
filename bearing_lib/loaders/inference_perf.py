"""kubernetes-sigs inference-perf reports.

A report folder holds ``stage_<N>_lifecycle_metrics.json`` (one per load stage: the sweep's
steps), ``summary_lifecycle_metrics.json`` (whole run), optionally
``per_request_lifecycle_metrics.json``, server-side ``*_prometheus_metrics.json`` and
``config.yaml``. Four formats are registered:

- ``inference-perf-stages`` → load-point table: a stage file, a report folder without a
  per-request file, or a folder of report folders (one run each). ``requested_rate`` is the
  offered load (rps), ``achieved_rate`` is kept as ``achieved_rate_rps``; every latency is in
  **seconds** in the file and converted to ms.
- ``inference-perf-summary`` → load-point table with one row and no step (the summary has
  no requested rate).
- ``inference-perf-requests`` → request trace from ``per_request_lifecycle_metrics.json``
  (or its folder). Times come from a monotonic clock: start/end are rebased to the first
  request (``time_origin`` ``relative``). Requests are put in stages by ``stage_id`` when the
  file has it, else by the stage files' request counts in start order.
- ``inference-perf-lifecycle-yaml`` → the llm-d-benchmark YAML rendering of one lifecycle
  report (one load point).

``config.yaml`` beside the reports (or one folder up) gives the model name. The server-side
Prometheus files load as server metrics with :mod:`bearing_lib.loaders.inference_perf_prometheus`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

import polars as pl

from bearing_lib.common.errors import InputError, UnsupportedVersionError
from bearing_lib.data.loadpoints import LoadPointTable, SendWindow, window_columns
from bearing_lib.data.trace import RequestTrace
from bearing_lib.loaders._common import finish_trace, new_provenance
from bearing_lib.loaders._loadtest import finish_loadpoints, stats_to_columns, step_row
from bearing_lib.loaders.registry import FormatSpec, register
from bearing_lib.loaders.source import InputSource

TOOL = "kubernetes-sigs inference-perf"
STAGE_RE = re.compile(r"^stage_(\d+)_lifecycle_metrics\.json$")
PER_REQUEST = "per_request_lifecycle_metrics.json"
SATURATION_TOLERANCE = 0.10
"""achieved_rate below requested_rate by more than this fraction earns a finding."""

LATENCY = {
    "request_latency": "latency_ms",
    "time_to_first_token": "ttft_ms",
    "time_per_output_token": "tpot_ms",
    "inter_token_latency": "itl_ms",
}
STATS = {"mean": "mean", "median": "p50", "p90": "p90", "p95": "p95", "p99": "p99", "max": "max"}


# --------------------------------------------------------------------------- sniffing
def _json_head_has(source: InputSource, *keys: str) -> bool:
    head = source.head_text
    return head.lstrip().startswith("{") and all(f'"{k}"' in head for k in keys)


def _is_lifecycle_json(source: InputSource) -> bool:
    if source.is_dir or source.suffix != ".json":
        return False
    # schedule_delay is in every lifecycle report and in no Prometheus report
    return _json_head_has(source, "load_summary", "successes", "schedule_delay")


def _is_stage(source: InputSource) -> bool:
    # stage reports carry requested_rate in load_summary; the summary report does not
    return _is_lifecycle_json(source) and '"requested_rate"' in source.head_text


def _is_summary(source: InputSource) -> bool:
    return _is_lifecycle_json(source) and '"requested_rate"' not in source.head_text


def _is_per_request_file(source: InputSource) -> bool:
    if source.is_dir or source.suffix != ".json":
        return False
    head = source.head_text.lstrip()
    return head.startswith("[") and all(f'"{k}"' in head for k in ("start_time", "end_time", "info", "error"))


def _stage_dirs(root: Path) -> list[Path]:
    """Report folders: ``root`` itself or its direct sub-folders (not deeper: a collection of
    unrelated results is not one sweep)."""
    found = [p.parent for p in root.glob("stage_*_lifecycle_metrics.json") if STAGE_RE.match(p.name)]
    found += [p.parent for p in root.glob("*/stage_*_lifecycle_metrics.json") if STAGE_RE.match(p.name)]
    return sorted(set(found))


def sniff_stages(source: InputSource) -> bool:
    if not source.is_dir:
        return _is_stage(source)
    if (source.path / PER_REQUEST).exists():
        return False
    return bool(_stage_dirs(source.path))


def sniff_summary(source: InputSource) -> bool:
    return _is_summary(source)


def sniff_requests(source: InputSource) -> bool:
    if source.is_dir:
        return (source.path / PER_REQUEST).is_file()
    return _is_per_request_file(source)


def sniff_yaml(source: InputSource) -> bool:
    if source.is_dir or source.suffix not in (".yaml", ".yml"):
        return False
    text = source.head_text
    return all(re.search(rf"(?m)^{k}:", text) for k in ("load_summary", "successes", "failures"))


# --------------------------------------------------------------------------- reading
def _model_near(folder: Path) -> str | None:
    """``server.model_name`` from a config.yaml in ``folder`` or its parent."""
    import yaml

    for cand in (folder / "config.yaml", folder.parent / "config.yaml"):
        if cand.is_file():
            try:
                cfg = yaml.safe_load(cand.read_text())
            except yaml.YAMLError:
                return None
            if isinstance(cfg, Mapping):
                server = cfg.get("server")
                if isinstance(server, Mapping) and isinstance(server.get("model_name"), str):
                    return server["model_name"]
    return None


def _check_layout(doc: object, path: Path, *, stage: bool) -> dict:
    if not isinstance(doc, dict):
        raise UnsupportedVersionError(
            "expected a JSON object (lifecycle report)", tool=TOOL, version=None, missing=["load_summary"], path=path
        )
    missing = []
    ls = doc.get("load_summary")
    succ = doc.get("successes")
    if not isinstance(ls, dict):
        missing.append("load_summary")
    else:
        missing += [f"load_summary.{k}" for k in ("count",) if k not in ls]
        if stage:
            missing += [f"load_summary.{k}" for k in ("requested_rate", "achieved_rate") if k not in ls]
    if not isinstance(succ, dict):
        missing.append("successes")
    else:
        missing += [f"successes.{k}" for k in ("count", "latency") if k not in succ]
    if "failures" not in doc:
        missing.append("failures")
    if missing:
        raise UnsupportedVersionError(
            "an inference-perf lifecycle report layout bearing does not know",
            tool=TOOL,
            version=None,
            missing=missing,
            path=path,
        )
    return doc


def _layout_note(doc: dict) -> str:
    if "benchmark_time_seconds" in doc:
        return "newer lifecycle layout (benchmark_time_seconds, request_size_bytes, failures.by_label)"
    return "older lifecycle layout (no benchmark_time_seconds)"


def _row_from_report(
    doc: dict, *, run_id: str, step: int | None, source_file: str, model: str | None
) -> tuple[dict[str, object], list[str]]:
    """One load-point row from a lifecycle report; also the names of derived columns."""
    ls, succ, fail = doc["load_summary"], doc["successes"], doc.get("failures") or {}
    n_ok = int(succ.get("count") or 0)
    n_err = int(fail.get("count") or 0)
    thr = succ.get("throughput") or {}
    derived: list[str] = []
    rps = thr.get("requests_per_sec")
    bench_t = doc.get("benchmark_time_seconds")
    if isinstance(bench_t, (int, float)):
        duration = float(bench_t)
    elif isinstance(rps, (int, float)) and rps > 0 and n_ok:
        duration = n_ok / float(rps)  # inference-perf divides successes by the benchmark time
        derived.append("duration_s")
    else:
        duration = ls.get("send_duration")
    # load_summary.send_duration is first -> last send (reportgen/base.py summarize_requests); the benchmark time
    # runs until every queued request finished (load_generator.py run_stage): the drain is in it
    sd = ls.get("send_duration")
    window = SendWindow.of(float(sd) if isinstance(sd, (int, float)) else None, "measured",
                           "load_summary.send_duration (first send -> last send)")
    row: dict[str, object] = {
        "run_id": run_id,
        "step": step,
        "offered_load": ls.get("requested_rate"),
        "offered_load_unit": "rps" if ls.get("requested_rate") is not None else None,
        "model": model,
        "duration_s": duration,
        "n_requests": n_ok + n_err,
        "n_ok": n_ok,
        "n_errors": n_err,
        "throughput_rps": rps,
        "achieved_rate_rps": ls.get("achieved_rate"),
        **window_columns(window, duration is not None and duration != sd),
        "input_tokens_per_s": thr.get("input_tokens_per_sec"),
        "output_tokens_per_s": thr.get("output_tokens_per_sec"),
        "source_file": source_file,
    }
    lat = succ.get("latency") or {}
    for key, metric in LATENCY.items():
        row |= stats_to_columns(lat.get(key), metric, STATS, scale=1000.0)
    return row, derived


def _failure_labels(doc: dict) -> dict[str, int]:
    by = (doc.get("failures") or {}).get("by_label") or {}
    return {str(k): int((v or {}).get("count") or 0) for k, v in by.items() if isinstance(v, dict)}


def _read_json(src: InputSource) -> object:
    return src.json


def load_stages(source: InputSource) -> LoadPointTable:
    """Stage reports (one file, a report folder, or a folder of report folders) → load points."""
    prov = new_provenance(source, format="inference-perf-stages", tool=TOOL)
    if source.is_dir:
        dirs = _stage_dirs(source.path)
        groups = [(d, sorted((p for p in d.iterdir() if STAGE_RE.match(p.name)), key=_stage_no)) for d in dirs]
    else:
        groups = [(source.path.parent, [source.path])]
    rows: list[dict[str, object]] = []
    derived: set[str] = set()
    files: list[str] = []
    layouts: set[str] = set()
    saturated: list[str] = []
    labels: dict[str, int] = {}
    ignored: list[str] = []
    unaccounted: list[str] = []
    for folder, stage_files in groups:
        run_id = folder.name
        model = _model_near(folder)
        for p in stage_files:
            doc = _check_layout(_read_json(InputSource(p)), p, stage=True)
            layouts.add(_layout_note(doc))
            m = STAGE_RE.match(p.name)
            step = int(m.group(1)) if m else None
            row, d = _row_from_report(doc, run_id=run_id, step=step, source_file=str(p), model=model)
            rows.append(row)
            derived |= set(d)
            files.append(str(p))
            req, ach = row["offered_load"], row["achieved_rate_rps"]
            numbers = isinstance(req, (int, float)) and isinstance(ach, (int, float))
            if numbers and ach < req * (1 - SATURATION_TOLERANCE):
                saturated.append(f"{run_id} stage {step}: requested {req:g} rps, achieved {ach:.4g} rps")
            for k, v in _failure_labels(doc).items():
                labels[k] = labels.get(k, 0) + v
            sent = doc["load_summary"].get("count")
            if isinstance(sent, int) and sent != row["n_requests"]:
                unaccounted.append(f"{run_id} stage {step}: {sent} sent, {row['n_requests']} succeeded or failed")
        if source.is_dir:
            ignored += [q.name for q in folder.iterdir() if q.is_file() and q not in stage_files]
    if any(r["step"] is None for r in rows):
        prov.add("stage_index_unknown", "a stage file name has no stage number; its step is null")
    prov.add("layout", "; ".join(sorted(layouts)), level="info")
    prov.add(
        "offered_load",
        "offered_load = load_summary.requested_rate (rps); achieved_rate_rps = load_summary.achieved_rate; "
        "throughput_rps = successes.throughput.requests_per_sec, the tool's successes over first send -> last "
        "completion (drain included, reportgen/base.py); the limits read completions over the span without the "
        "drain where a queue built up (limits.curves.completion_span: the stage's duration less the run's unloaded "
        "latency), else over load_summary.send_duration; latencies converted from s to ms",
        level="info",
    )
    if saturated:
        prov.add(
            "achieved_below_requested",
            f"the load generator could not send at the requested rate (achieved < requested by more than "
            f"{SATURATION_TOLERANCE:.0%}) in {len(saturated)} stage(s): " + "; ".join(saturated),
            count=len(saturated),
        )
    if unaccounted:
        prov.add(
            "requests_unaccounted",
            "load_summary.count differs from successes + failures (requests still running when the stage "
            "report was written?): " + "; ".join(unaccounted),
            count=len(unaccounted),
        )
    if labels:
        prov.add("failures_by_label", ", ".join(f"{k}: {v}" for k, v in sorted(labels.items())), level="info")
    if ignored:
        prov.add(
            "not_read",
            "files beside the stage reports that this loader does not read (summary, config, server-side "
            "Prometheus metrics: load those with format=inference-perf-prometheus): "
            f"{', '.join(sorted(set(ignored)))}",
            level="info",
        )
    return finish_loadpoints(
        rows,
        source,
        format="inference-perf-stages",
        tool=TOOL,
        provenance=prov,
        derived=sorted(derived),
        files=files,
    )


def _stage_no(p: Path) -> int:
    m = STAGE_RE.match(p.name)
    return int(m.group(1)) if m else 1 << 30


def load_summary(source: InputSource) -> LoadPointTable:
    """The whole-run summary report → one load point without a step or offered load."""
    doc = _check_layout(source.json, source.path, stage=False)
    prov = new_provenance(source, format="inference-perf-summary", tool=TOOL)
    folder = source.path.parent
    row, derived = _row_from_report(
        doc, run_id=folder.name, step=None, source_file=str(source.path), model=_model_near(folder)
    )
    prov.add("layout", _layout_note(doc), level="info")
    prov.add(
        "whole_run",
        "the summary pools every stage: it has no requested rate, so the row has no step or offered load; "
        "load the stage files (or the folder) for the sweep",
        level="info",
    )
    return finish_loadpoints(
        [row], source, format="inference-perf-summary", tool=TOOL, provenance=prov, derived=derived
    )


def load_yaml(source: InputSource) -> LoadPointTable:
    """The llm-d-benchmark YAML rendering of one lifecycle report → one load point."""
    import yaml

    try:
        doc = yaml.safe_load(source.read_text())
    except yaml.YAMLError as exc:
        raise InputError(f"not valid YAML: {exc}", path=source.path) from exc
    doc = _check_layout(doc, source.path, stage=True)
    prov = new_provenance(source, format="inference-perf-lifecycle-yaml", tool=TOOL)
    row, derived = _row_from_report(doc, run_id=source.path.stem, step=0, source_file=str(source.path), model=None)
    prov.add("layout", _layout_note(doc) + "; rendered as YAML by llm-d-benchmark", level="info")
    return finish_loadpoints(
        [row], source, format="inference-perf-lifecycle-yaml", tool=TOOL, provenance=prov, derived=derived
    )


# --------------------------------------------------------------------------- per request
_HTTP_RE = re.compile(r"\b([1-5]\d\d)\b")


def _status_of(err: object) -> tuple[str, str | None]:
    if err is None:
        return "ok", None
    if isinstance(err, dict):
        etype = str(err.get("error_type") or "")
        msg = str(err.get("error_msg") or "")
        text = f"{etype}: {msg}" if msg else etype
    else:
        etype, text = str(err), str(err)
    low = etype.lower()
    if "timeout" in low or "timed out" in low:
        return "timeout", text
    if "cancel" in low:
        return "cancelled", text
    m = _HTTP_RE.search(etype)
    if m and int(m.group(1)) == 429:
        return "rejected", text
    return "error", text


def load_requests(source: InputSource) -> RequestTrace:
    """``per_request_lifecycle_metrics.json`` (or its folder) → request trace with stage steps."""
    file = InputSource(source.path / PER_REQUEST) if source.is_dir else source
    folder = file.path.parent
    data = file.json
    if not isinstance(data, list):
        raise UnsupportedVersionError(
            "expected a JSON array of request records", tool=TOOL, version=None, missing=["[...]"], path=file.path
        )
    prov = new_provenance(source, format="inference-perf-requests", tool=TOOL)
    recs = []
    for i, r in enumerate(data, start=1):
        if not isinstance(r, dict) or "start_time" not in r or "end_time" not in r:
            missing = [k for k in ("start_time", "end_time") if not (isinstance(r, dict) and k in r)]
            raise UnsupportedVersionError(
                f"request record {i} lacks fields bearing needs",
                tool=TOOL,
                version=None,
                missing=missing,
                path=file.path,
            )
        info = r.get("info") or {}
        rm = info.get("response_metrics") or {}
        times = rm.get("output_token_times") or []
        out_tok = rm.get("output_tokens")
        in_tok = info.get("input_tokens")
        if in_tok is None:
            in_tok = ((info.get("request_metrics") or {}).get("text") or {}).get("input_tokens")
        status, err = _status_of(r.get("error"))
        start, end = float(r["start_time"]), float(r["end_time"])
        ttft = (float(times[0]) - start) * 1000 if times else None
        # as inference-perf computes it: first to last token time over (output tokens - 1)
        span_ms = (float(times[-1]) - float(times[0])) * 1000 if times else None
        tpot = span_ms / (out_tok - 1) if span_ms is not None and out_tok and out_tok > 1 else None
        itl = span_ms / (len(times) - 1) if span_ms is not None and len(times) > 1 else None
        recs.append(
            {
                "request_id": str(i),
                "start": start,
                "end": end,
                "ttft_ms": ttft,
                "latency_ms": (end - start) * 1000,
                "tpot_ms": tpot,
                "itl_ms": itl,
                "input_tokens": in_tok,
                "output_tokens": out_tok if status == "ok" else None,
                "status": status,
                "error": err,
                "stage_id": r.get("stage_id"),
                "source_row": i,
            }
        )
    if not recs:
        raise InputError("the file holds no requests (empty array)", path=file.path)
    df = pl.DataFrame(recs, infer_schema_length=None)
    t0 = df["start"].min()
    df = df.with_columns((pl.col("start") - t0).alias("start_s"), (pl.col("end") - t0).alias("end_s"))
    prov.add(
        "monotonic_clock",
        f"request times come from a monotonic clock (no calendar time); rebased so the first request starts at 0 "
        f"(offset {t0:g} s)",
        level="info",
    )
    # stages
    stage_files = sorted((p for p in folder.iterdir() if STAGE_RE.match(p.name)), key=_stage_no)
    stage_docs = [(_stage_no(p), _check_layout(InputSource(p).json, p, stage=True), p) for p in stage_files]
    run_id = folder.name
    model = _model_near(folder)
    steps: list[dict[str, object]] = []
    for no, doc, p in stage_docs:
        row, _ = _row_from_report(doc, run_id=run_id, step=no, source_file=str(p), model=model)
        steps.append(step_row(run_id, no, row["offered_load"], row["offered_load_unit"], duration_s=row["duration_s"],
                              n_requests_reported=doc["load_summary"]["count"], source_file=str(p)))
    rate_of = {s["step"]: s["offered_load"] for s in steps}
    if df["stage_id"].is_not_null().any():
        df = df.with_columns(pl.col("stage_id").cast(pl.Int64).alias("step"))
        prov.add("stages", "requests put in stages by their stage_id", level="info")
    elif steps and sum(int(s["n_requests_reported"]) for s in steps) == df.height:
        order = df.with_row_index("_i").sort("start", maintain_order=True)["_i"].to_list()
        step_col = [0] * df.height
        k = 0
        for s in steps:
            for _ in range(int(s["n_requests_reported"])):
                step_col[order[k]] = int(s["step"])
                k += 1
        df = df.with_columns(pl.Series("step", step_col, dtype=pl.Int64))
        prov.add(
            "stages_by_count",
            "the per-request file has no stage_id: requests were put in stages in start-time order using each "
            "stage report's load_summary.count (they add up to the number of requests)",
            level="info",
        )
    else:
        df = df.with_columns(pl.lit(None, dtype=pl.Int64).alias("step"))
        if steps:
            prov.add(
                "stages_unassigned",
                f"the stage reports count {sum(int(s['n_requests_reported']) for s in steps)} requests, the "
                f"per-request file {df.height}: requests were left without a step",
            )
    df = df.with_columns(
        pl.col("step").replace_strict(rate_of, default=None, return_dtype=pl.Float64).alias("offered_load")
        if rate_of
        else pl.lit(None, dtype=pl.Float64).alias("offered_load"),
    ).with_columns(
        pl.when(pl.col("offered_load").is_not_null()).then(pl.lit("rps")).otherwise(None).alias("offered_load_unit"),
        pl.lit(run_id).alias("run_id"),
        pl.lit(model, dtype=pl.String).alias("model"),
    )
    frame = df.select(
        "request_id",
        "start_s",
        "end_s",
        "ttft_ms",
        "latency_ms",
        "tpot_ms",
        "itl_ms",
        "input_tokens",
        "output_tokens",
        "status",
        "error",
        "model",
        "run_id",
        "step",
        "offered_load",
        "offered_load_unit",
        "source_row",
    )
    prov.files = [str(file.path)] + [str(p) for p in stage_files]
    return finish_trace(
        frame,
        file,
        format="inference-perf-requests",
        tool=TOOL,
        derived=("request_id", "ttft_ms", "tpot_ms", "itl_ms", "latency_ms", "step", "offered_load"),
        time_origin="relative",
        timezone="none (monotonic clock, rebased to the first request)",
        provenance=prov,
        steps=steps or None,
    )


register(
    FormatSpec(
        name="inference-perf-stages",
        tool=TOOL,
        kind="loadpoints",
        needs="stage_<N>_lifecycle_metrics.json (load_summary with requested_rate, successes, failures), "
        "or a folder of them",
        sniff=sniff_stages,
        load=load_stages,
    )
)
register(
    FormatSpec(
        name="inference-perf-summary",
        tool=TOOL,
        kind="loadpoints",
        needs="summary_lifecycle_metrics.json (load_summary without requested_rate, successes, failures)",
        sniff=sniff_summary,
        load=load_summary,
    )
)
register(
    FormatSpec(
        name="inference-perf-requests",
        tool=TOOL,
        kind="requests",
        needs="per_request_lifecycle_metrics.json (array of {start_time, end_time, info, error}) or its folder",
        sniff=sniff_requests,
        load=load_requests,
    )
)
register(
    FormatSpec(
        name="inference-perf-lifecycle-yaml",
        tool=TOOL,
        kind="loadpoints",
        needs="a YAML lifecycle report with top-level load_summary, successes, failures",
        sniff=sniff_yaml,
        load=load_yaml,
    )
)

