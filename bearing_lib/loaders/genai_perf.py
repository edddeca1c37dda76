"""NVIDIA GenAI-Perf and AIPerf exports: per-run summaries and the AIPerf sweep CSV.

All three become a :class:`~bearing_lib.data.loadpoints.LoadPointTable` (none holds requests):

``genai-perf-export``
    ``profile_export_genai_perf.json``: one object per metric with ``unit`` and ``avg``,
    ``p1`` … ``p99``, ``min``, ``max``, ``std``; the load level in ``input_config``
    (``concurrency`` / ``request_rate``; the newer nested config keeps it in
    ``input_config.perf_analyzer.stimulus``).
``aiperf-export``
    ``profile_export_aiperf.json``: the same metric objects plus ``benchmark_duration``,
    ``error_request_count``, ``error_summary``, ``was_cancelled``, ``inter_chunk_latency``;
    the load level in ``input_config.loadgen`` (0.1.x) or, from 0.13, in the profiling phase of
    ``input_config.phases`` (``type``, ``rate`` or ``concurrency``), the version in
    ``aiperf_version``. Its per-request ``profile_export.jsonl`` is read by
    :mod:`bearing_lib.loaders.aiperf` (preferred: detection picks it for an artefact folder).
``aiperf-sweep-csv``
    ``profile_export_aiperf_sweep.csv``: a multi-section CSV (CRLF, sections separated by
    blank lines: the per-level table, then ``Best Configurations``, ``Pareto Optimal
    Points``, ``Metadata``). One row per concurrency with ``<metric>_{mean,std,min,max,cv}``;
    ``min``/``max`` are per-request extremes, ``std``/``cv`` are across trials.

Units are read from each metric's ``unit`` (ms, s, ns are converted to ms; anything else
is an error), never guessed from magnitudes. GenAI-Perf's and AIPerf's
``inter_token_latency`` is per request ``(latency − TTFT) / (output tokens − 1)``, what
bearing calls TPOT, so it fills ``tpot_ms``; AIPerf's ``inter_chunk_latency`` (gaps between
streamed chunks) fills ``itl_ms``. GenAI-Perf and AIPerf before 0.13 write no version.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from bearing_lib.common.errors import BadValueError, InputError, ParameterError, UnsupportedVersionError
from bearing_lib.data.loadpoints import LoadPointTable, SendWindow, window_columns
from bearing_lib.loaders._common import new_provenance
from bearing_lib.loaders._loadtest import (
    StepFacts,
    finish_loadpoints,
    json_document,
    number,
    number_steps,
    parse_rate,
    step_columns,
)
from bearing_lib.loaders.registry import FormatSpec, register
from bearing_lib.loaders.source import InputSource

NAME_GENAI = "genai-perf-export"
NAME_AIPERF = "aiperf-export"
NAME_SWEEP = "aiperf-sweep-csv"
TOOL_GENAI = "NVIDIA GenAI-Perf"
TOOL_AIPERF = "NVIDIA AIPerf"

METRIC_KEYS = ("request_throughput", "request_latency", "request_count", "time_to_first_token")
AIPERF_MARKERS = ("benchmark_duration", "was_cancelled", "error_summary")
_TO_MS = {"ms": 1.0, "s": 1000.0, "sec": 1000.0, "ns": 1e-6, "us": 1e-3}
_STATS = {"avg": "mean", "p50": "p50", "p90": "p90", "p95": "p95", "p99": "p99", "max": "max"}
_LAT = {"request_latency": "latency_ms", "time_to_first_token": "ttft_ms", "inter_token_latency": "tpot_ms",
        "inter_chunk_latency": "itl_ms"}


# ---------------------------------------------------------------- recognising files
def _is_export(doc: object) -> bool:
    return (isinstance(doc, dict) and "input_config" in doc
            and all(isinstance(doc.get(k), dict) and "unit" in doc[k] for k in METRIC_KEYS))


def _doc(source: InputSource) -> object:
    return json_document(source) if source.suffix == ".json" else None


def sniff_genai(source: InputSource) -> bool:
    doc = _doc(source)
    return _is_export(doc) and not any(k in doc for k in AIPERF_MARKERS)  # type: ignore[operator]


def sniff_aiperf(source: InputSource) -> bool:
    doc = _doc(source)
    return _is_export(doc) and any(k in doc for k in AIPERF_MARKERS)  # type: ignore[operator]


def _layout(doc: dict[str, Any]) -> str:
    cfg = doc.get("input_config") or {}
    if "phases" in cfg:
        return f"AIPerf profile export (input_config.phases, schema {doc.get('schema_version', '?')})"
    if "loadgen" in cfg:
        return "AIPerf profile export (input_config.loadgen)"
    if "perf_analyzer" in cfg:
        per_user = "output_token_throughput_per_user" in doc
        return "GenAI-Perf export, nested config (input_config.perf_analyzer.stimulus" + (
            ", output_token_throughput_per_user)" if per_user else ")")
    return "GenAI-Perf export, flat config (input_config.concurrency/request_rate" + (
        ", output_token_throughput_per_request)" if "output_token_throughput_per_request" in doc else ")")


def version(source: InputSource) -> str | None:
    """AIPerf ≥ 0.13 writes ``aiperf_version``; GenAI-Perf and older AIPerf write none."""
    doc = _doc(source)
    v = doc.get("aiperf_version") if isinstance(doc, dict) else None
    return str(v) if v else None


# ---------------------------------------------------------------- per-run exports
def _avg(doc: dict[str, Any], key: str, path: Path) -> float | None:
    obj = doc.get(key)
    if not isinstance(obj, dict):
        return None
    return number(obj.get("avg"), path=path, field=f"{key}.avg")


def _ms_stats(doc: dict[str, Any], key: str, metric: str, path: Path) -> dict[str, float | None]:
    obj = doc.get(key)
    if not isinstance(obj, dict):
        return {}
    unit = str(obj.get("unit", "")).strip().lower()
    if unit not in _TO_MS:
        raise BadValueError(f"expected a time unit (ms, s, ns), found {obj.get('unit')!r}", path=path,
                            field=f"{key}.unit")
    scale = _TO_MS[unit]
    out = {}
    for src, stat in _STATS.items():
        v = number(obj.get(src), path=path, field=f"{key}.{src}")
        out[f"{metric}_{stat}"] = None if v is None else v * scale
    return out


def profiling_phase(doc: dict[str, Any]) -> dict[str, Any] | None:
    """AIPerf ≥ 0.13's load: the (first) profiling phase of ``input_config.phases`` (``type`` poisson,
    constant, …, with ``rate``; or ``concurrency``), the warm-up phases left out."""
    cfg = doc.get("input_config") if isinstance(doc.get("input_config"), dict) else {}
    phases = [p for p in (cfg.get("phases") or []) if isinstance(p, dict)]
    prof = [p for p in phases if p.get("kind", "profiling") == "profiling"]
    return prof[0] if prof else None


def _offered(doc: dict[str, Any], path: Path, tool: str) -> tuple[float | None, str | None]:
    cfg = doc.get("input_config") or {}
    places = [profiling_phase(doc) or {}, cfg.get("loadgen") or {},
              (cfg.get("perf_analyzer") or {}).get("stimulus") or {}, cfg]
    places = [p for p in places if isinstance(p, dict)]
    for place in places:
        conc, rate = place.get("concurrency"), place.get("request_rate", place.get("rate"))
        if rate is not None:
            return parse_rate(rate, path=path, field="input_config.request_rate"), "rps"
        if conc is not None:
            return number(conc, path=path, field="input_config.concurrency"), "concurrency"
    raise UnsupportedVersionError(
        "the file states no load level", tool=tool, version=None,
        missing=["input_config.phases[kind=profiling].rate|concurrency (AIPerf ≥ 0.13)",
                 "input_config.loadgen.concurrency|request_rate", "input_config.perf_analyzer.stimulus",
                 "input_config.concurrency|request_rate"], path=path)


def _export_window(doc: dict[str, Any], load: float | None, unit: str | None) -> SendWindow | None:
    """AIPerf ≥ 0.13's profiling phase at a request rate with a request count: ``requests / rate`` (config).
    Otherwise unknown: GenAI-Perf's perf_analyzer measures in time windows it does not write out."""
    phase = profiling_phase(doc) or {}
    n = phase.get("requests")
    if unit != "rps" or load is None or not isinstance(n, int | float) or isinstance(n, bool):
        return None
    return SendWindow.of(float(n) / load if load > 0 else None, "config",
                         "input_config.phases[profiling].requests / rate")


def _model(doc: dict[str, Any]) -> str | None:
    cfg = doc.get("input_config") or {}
    endpoint = cfg.get("endpoint") if isinstance(cfg.get("endpoint"), dict) else {}
    for cand in (cfg.get("model"), cfg.get("model_names"), endpoint.get("model_names")):
        if isinstance(cand, list) and cand:
            return str(cand[0])
        if isinstance(cand, str):
            return cand
    return None


def _run_id(path: Path) -> str:
    return path.parent.name or Path(path.name).stem


TTFT_CHOICES = {"first_token": "time_to_first_token", "first_output": "time_to_first_output_token"}
"""The ``ttft`` option of AIPerf's export: its ``time_to_first_token`` (the first token of any kind: a reasoning
model's first thinking token) or ``time_to_first_output_token`` (the first answer token)."""


def _reasoning_note(doc: dict[str, Any], path: Path, ttft: str) -> str | None:
    """Said when the run's output holds reasoning tokens: which first token ``ttft_ms`` is, with both medians."""
    total = _avg(doc, "total_reasoning_tokens", path) or _avg(doc, "reasoning_token_count", path)
    if not total or total <= 0:
        return None
    first, answer = (_ms_stats(doc, k, "t", path).get("t_p50") for k in TTFT_CHOICES.values())
    per = _avg(doc, "reasoning_token_count", path)
    osl = _avg(doc, "output_sequence_length", path)
    share = f"{per / osl:.0%} of the output tokens are reasoning tokens (mean {per:,.0f} of {osl:,.0f})" if (
        per and osl) else "the output holds reasoning tokens"
    what = {"first_token": "the first token of any kind (time_to_first_token)",
            "first_output": "the first answer token (time_to_first_output_token)"}[ttft]
    medians = "; ".join(f"{k} P50 {v:,.0f} ms" for k, v in zip(TTFT_CHOICES.values(), (first, answer), strict=True)
                        if v is not None)
    other = "first_output" if ttft == "first_token" else "first_token"
    # output_token_count counts answer tokens per request that produced any; its total over its mean is how many did
    # (wellflat gpt-oss-20b: 2,781 / 69.525 = 40 of 100): the answer's first token is measured on those only
    answered = _avg(doc, "total_output_tokens", path)
    per_answer = _avg(doc, "output_token_count", path)
    n_all = _avg(doc, "request_count", path)
    n_ans = round(answered / per_answer) if answered and per_answer else None
    some = (f"; about {n_ans} of {n_all:.0f} requests produced an answer token (total_output_tokens / mean "
            f"output_token_count), and time_to_first_output_token describes those only"
            if n_ans is not None and n_all and n_ans < n_all else "")
    return (f"a reasoning model: {share}; ttft_ms is {what} ({medians}){some}; an SLA on the "
            f"{'answer' if other == 'first_output' else 'first token of any kind'} reads --option ttft={other}")


def _load_export(source: InputSource, *, name: str, tool: str, ttft: str = "first_token") -> LoadPointTable:
    doc = source.json
    path = source.path
    if ttft not in TTFT_CHOICES:
        raise ParameterError(f"option ttft={ttft!r}: expected one of {', '.join(TTFT_CHOICES)} (time_to_first_token "
                             "or AIPerf's time_to_first_output_token)")
    missing = [k for k in METRIC_KEYS if not isinstance(doc.get(k) if isinstance(doc, dict) else None, dict)]
    if missing:
        raise UnsupportedVersionError("not a profile export bearing can read", tool=tool, version=None,
                                      missing=missing, path=path)
    prov = new_provenance(source, format=name, tool=tool)
    load_value, unit = _offered(doc, path, tool)
    derived = {"input_tokens_per_s"}
    n_ok = _avg(doc, "request_count", path)
    rps = _avg(doc, "request_throughput", path)
    duration = _avg(doc, "benchmark_duration", path)
    if duration is not None:
        unit_d = str(doc["benchmark_duration"].get("unit", "sec")).lower()
        duration = duration * _TO_MS.get(unit_d, 1000.0) / 1000.0
    elif n_ok and rps:
        duration = n_ok / rps
        derived.add("duration_s")
    if name != NAME_AIPERF and n_ok and rps and "duration_s" in derived:
        # GenAI-Perf writes no duration. Its request_throughput is len(requests) / benchmark_duration, every request
        # in the export, while request_count is len(request_latencies) and output_token_throughput is
        # sum(output_sequence_lengths) / benchmark_duration, both over the requests whose response carried content
        # (perf_analyzer genai-perf, profile_data_parser/llm_profile_data_parser.py: _parse_requests skips a request
        # whose responses are all empty, _calculate_throughput_metrics; metrics/metrics.py). So the duration is the
        # content's tokens over their rate, and the sent count the request rate times it. wellflat's gpt-oss run: 35 x
        # 73.51 / 12.096 = 212.7 s and 0.4701 x 212.7 = 100 sent (its config's 100), not 35 / 0.4701 = 74.45 s
        osl, ott = _avg(doc, "output_sequence_length", path), _avg(doc, "output_token_throughput", path)
        if osl and ott and osl > 0 and ott > 0:
            duration = n_ok * osl / ott
            sent = round(rps * duration)
            if sent > n_ok:
                prov.add("requests_without_content",
                         f"GenAI-Perf sent {sent} requests (request_throughput {rps:.4g}/s x {duration:.4g} s, the "
                         f"duration from output_sequence_length x request_count / output_token_throughput); "
                         f"request_count, {n_ok:.0f}, counts those whose response carried content, which the "
                         f"latency, token and completed-rate figures describe; the other {sent - n_ok:.0f} returned "
                         "none (failed, or, for a reasoning model, answered in reasoning content only): the export "
                         "cannot tell: they are in the throughput (request_throughput) and in no latency or error "
                         "figure")
    n_errors: int | None = None
    if name == NAME_AIPERF:
        err = _avg(doc, "error_request_count", path)
        if err is not None:
            n_errors = int(err)
        elif isinstance(doc.get("error_summary"), list):
            n_errors = sum(int(e.get("count", 0)) for e in doc["error_summary"] if isinstance(e, dict))
            derived.add("n_errors")
        if doc.get("was_cancelled"):
            prov.add("run_cancelled", "AIPerf marks this run as cancelled (was_cancelled true)")
    else:
        prov.add("errors_unknown", "GenAI-Perf's export counts completed requests only: n_errors is unknown",
                 level="info")
    isl = _avg(doc, "input_sequence_length", path)
    row: dict[str, object] = {
        "run_id": _run_id(path),
        "offered_load": load_value,
        "offered_load_unit": unit,
        "model": _model(doc),
        "duration_s": duration,
        "n_ok": int(n_ok) if n_ok is not None else None,
        "n_errors": n_errors,
        # the sent count stays out of the table (n_requests) even where the finding gives it: a table's requests
        # beyond its ok ones count as failed (curves), and these may have answered in reasoning content only
        "n_requests": int(n_ok) + n_errors if n_ok is not None and n_errors is not None else None,
        # GenAI-Perf's request_throughput: every request that ended, with content or not, over the duration (the
        # closed loop's Little's law reads it against the mean latency: concurrency 1 -> 0.98)
        "throughput_rps": rps,
        "input_tokens_per_s": isl * rps if isl is not None and rps is not None else None,
        "output_tokens_per_s": _avg(doc, "output_token_throughput", path),
        # benchmark_duration = last response − first request: the drain is in it (GenAI-Perf
        # llm_profile_data_parser.py; AIPerf benchmark_duration_metric.py)
        **window_columns(_export_window(doc, load_value, unit), True),
        "source_file": path.name,
    }
    if row["n_requests"] is not None:
        derived.add("n_requests")
    for key, metric in _LAT.items():
        row.update(_ms_stats(doc, key, metric, path))
    if ttft != "first_token":
        key = TTFT_CHOICES[ttft]
        if not isinstance(doc.get(key), dict):
            raise BadValueError(f"option ttft={ttft} reads {key}, which this export does not hold", path=path,
                                field=key)
        row.update(_ms_stats(doc, key, "ttft_ms", path))
    said = _reasoning_note(doc, path, ttft)
    if said:
        prov.add("reasoning_tokens", said)
    step = StepFacts(run_id=str(row["run_id"]), offered_load=load_value, offered_load_unit=unit)
    number_steps([step], prov)
    row.update(step_columns(step))
    options: dict[str, object] = {"layout": _layout(doc)}
    if name == NAME_AIPERF:
        options["ttft"] = ttft
        good = _avg(doc, "goodput", path)
        options["goodput_rps"] = good
        options["start_time"], options["end_time"] = doc.get("start_time"), doc.get("end_time")
    if doc.get("telemetry_stats") or (doc.get("telemetry_data") or {}).get("endpoints"):
        fmt = "genai-perf-gpu-telemetry" if name == NAME_GENAI else "aiperf-gpu-telemetry"
        prov.add("gpu_telemetry", "the file carries GPU telemetry (DCGM): read it as server metrics with "
                 f"--format {fmt} (e.g. bearing bottleneck FILE --format {fmt})", level="info")
    tool_version = str(doc["aiperf_version"]) if doc.get("aiperf_version") else None
    if tool_version is None:
        prov.add("version_not_stated", f"{tool} writes no version number into this file; layout: {options['layout']}",
                 level="info")
    prov.add("summary_only", "one summary per run: no per-request data, so no bootstrap or re-computed percentiles",
             level="info")
    return finish_loadpoints([row], source, format=name, tool=tool, tool_version=tool_version, derived=derived,
                             provenance=prov, options=options, files=[str(path)])


def load_genai(source: InputSource) -> LoadPointTable:
    return _load_export(source, name=NAME_GENAI, tool=TOOL_GENAI)


def load_aiperf(source: InputSource, *, ttft: str = "first_token") -> LoadPointTable:
    """AIPerf's ``profile_export_aiperf.json``; ``ttft="first_output"`` reads its ``time_to_first_output_token`` (a
    reasoning model's first answer token) as ``ttft_ms`` instead of ``time_to_first_token``."""
    return _load_export(source, name=NAME_AIPERF, tool=TOOL_AIPERF, ttft=ttft)


# ---------------------------------------------------------------- AIPerf sweep CSV
SWEEP_REQUIRED = ("request_count_mean", "request_throughput_mean", "request_latency_mean",
                  "time_to_first_token_mean", "benchmark_duration_mean")
SWEEP_VARS = {"concurrency": "concurrency", "request_rate": "rps"}


def _sections(text: str) -> list[list[str]]:
    """Blank-line separated sections of lines (CRLF or LF)."""
    sections: list[list[str]] = [[]]
    for line in text.splitlines():
        if line.strip():
            sections[-1].append(line)
        elif sections[-1]:
            sections.append([])
    return [s for s in sections if s]


def sniff_sweep(source: InputSource) -> bool:
    if source.is_dir or source.suffix != ".csv":
        return False
    header = source.first_line.split(",")
    return bool(header) and header[0].strip() in SWEEP_VARS and "request_throughput_mean" in header


def load_sweep(source: InputSource) -> LoadPointTable:
    path = source.path
    sections = _sections(source.read_text())
    if not sections:
        raise InputError("the file is empty", path=path)
    table = list(csv.DictReader(io.StringIO("\n".join(sections[0]))))
    header = sections[0][0].split(",")
    var = header[0].strip()
    missing = [c for c in SWEEP_REQUIRED if c not in header]
    if var not in SWEEP_VARS or missing:
        raise UnsupportedVersionError("not an AIPerf sweep table bearing can read", tool="AIPerf sweep CSV",
                                      version=None, missing=missing or ["concurrency|request_rate"], path=path)
    if not table:
        raise InputError("the sweep table has a header but no rows", path=path)
    extra: dict[str, object] = {}
    for sec in sections[1:]:
        title, rows = sec[0].strip(), sec[1:]
        if title == "Metadata":
            parsed = list(csv.reader(rows))
            extra["metadata"] = {r[0]: r[1] for r in parsed[1:] if len(r) >= 2}
        else:
            extra[title] = rows
    prov = new_provenance(source, format=NAME_SWEEP, tool=TOOL_AIPERF)
    meta = extra.get("metadata") or {}
    if isinstance(meta, dict) and meta.get("Sweep Parameters") not in (None, var):
        raise BadValueError(f"the Metadata section says the sweep parameter is {meta['Sweep Parameters']!r} but "
                            f"the table's first column is {var!r}", path=path, field="Sweep Parameters")
    run_id = path.parent.parent.name if path.parent.name == "sweep_aggregate" else path.parent.name
    steps = []
    for i, r in enumerate(table, start=2):
        def num(col: str, r: dict[str, str] = r, i: int = i) -> float | None:
            v = r.get(col)
            if v is None or v.strip() in ("", "N/A", "None"):
                return None
            return number(v, path=path, field=col, row=i)

        load_value = parse_rate(r[var], path=path, field=var, row=i) if var == "request_rate" else num(var)
        steps.append(StepFacts(run_id=run_id, offered_load=load_value, offered_load_unit=SWEEP_VARS[var],
                               tiebreak=(i,), duration_s=num("benchmark_duration_mean"),
                               source_file=f"{path.name}:{i}", payload=(i, r, num)))
    steps = number_steps(steps, prov)
    rows, goodput = [], {}
    for s in steps:
        i, r, num = s.payload
        n_ok = num("request_count_mean")
        row: dict[str, object] = {
            **step_columns(s),
            "duration_s": s.duration_s,
            "n_ok": int(round(n_ok)) if n_ok is not None else None,
            "throughput_rps": num("request_throughput_mean"),
            "output_tokens_per_s": num("output_token_throughput_mean"),
            **window_columns(None, True),  # benchmark_duration: max response − min request, drain included
            "source_file": s.source_file,
        }
        for key, metric in _LAT.items():
            row[f"{metric}_mean"] = num(f"{key}_mean")
            row[f"{metric}_max"] = num(f"{key}_max")
        rows.append(row)
        goodput[str(s.offered_load)] = num("goodput_mean")
    trials = meta.get("Number of Profile Runs") if isinstance(meta, dict) else None
    prov.add("sweep_csv_statistics", "AIPerf's sweep table keeps per level the mean over trials of each run's "
             "average, and per-request min/max; no percentiles, no error counts (n_errors null). Units are AIPerf's "
             "defaults (ms for latencies, req/s, tokens/s, s for duration): the CSV does not state them",
             level="info")
    prov.add("sections", f"sections read: the sweep table ({len(table)} rows), then "
             + ", ".join(k for k in extra), level="info")
    return finish_loadpoints(rows, source, format=NAME_SWEEP, tool=TOOL_AIPERF, tool_version=None,
                             provenance=prov, options={**extra, "goodput_rps": goodput, "profile_runs": trials},
                             files=[str(path)])


register(FormatSpec(
    name=NAME_GENAI, tool=TOOL_GENAI, kind="loadpoints",
    needs="profile_export_genai_perf.json: metric objects (request_throughput, request_latency, request_count, "
          "time_to_first_token with 'unit') and input_config, without AIPerf's benchmark_duration/was_cancelled",
    sniff=sniff_genai, load=load_genai, version=version,
))
register(FormatSpec(
    name=NAME_AIPERF, tool=TOOL_AIPERF, kind="loadpoints",
    needs="profile_export_aiperf.json: GenAI-Perf-style metric objects plus benchmark_duration / was_cancelled / "
          "error_summary",
    sniff=sniff_aiperf, load=load_aiperf, version=version,
))
register(FormatSpec(
    name=NAME_SWEEP, tool=TOOL_AIPERF, kind="loadpoints",
    needs="profile_export_aiperf_sweep.csv: a CSV whose header starts with concurrency (or request_rate) and has "
          "request_throughput_mean, followed by blank-line separated sections",
    sniff=sniff_sweep, load=load_sweep, version=version,
))
