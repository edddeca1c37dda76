"""SGLang ``bench_serving`` result lines (``--output-file``, JSONL, one line appended per run).

A sweep is several lines of one file, one per ``request_rate`` (or per
``max_concurrency`` with an unbounded rate); lines may mix datasets, so lines are grouped
into runs by their argument fields (backend, dataset and its length arguments, and the
concurrency cap when the rate is the load variable). Each group is one run whose steps
are ordered by offered load, unbounded last.

``request_rate`` is written as a **bare** ``Infinity`` token for an unbounded rate
(invalid strict JSON; Python's json module reads it). The late-2024 line has 18 keys and
only the mean/median E2E latency and the median TTFT/ITL (ms); current versions add
``request_throughput`` and ``{mean,median,std,p90,p95,p99}_{e2e_latency,ttft,tpot,itl}_ms``.
Both load as a :class:`~bearing_lib.data.loadpoints.LoadPointTable`. Failed requests are
absent from SGLang's statistics and ``completed`` counts successes only, so the error
count is unknown (null) unless the line states it.

**Send window.** ``duration`` includes the drain: ``benchmark`` (sgl-project/sglang
``python/sglang/bench_serving.py``) takes ``benchmark_duration`` after ``asyncio.gather`` of every request task
(and a ``/get_server_info`` call), and ``calculate_metrics`` sets ``request_throughput = completed / dur_s``.
Requests are sent by ``get_request``: it yields a request, then sleeps an exponential interval of mean
``1 / request_rate`` (no rescaling to a fixed end), creating each task without waiting for replies. The lines
state no prompt count and no send times, so the window is **estimated**: ``n / request_rate`` (the Poisson
schedule's expected span, scaled so that ``n / window`` is the rate) with ``n`` the line's ``num_prompts`` when
stated (``config``), else ``completed`` (assumes no request failed: SGLang counts successes only). Unknown for an
unbounded rate or a ``max_concurrency`` cap (the semaphore may hold sends back).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from bearing_lib.common.errors import InputError, UnsupportedVersionError
from bearing_lib.data.loadpoints import LoadPointTable, SendWindow
from bearing_lib.loaders._common import new_provenance
from bearing_lib.loaders._loadtest import (
    StepFacts,
    finish_loadpoints,
    json_lines,
    number,
    number_steps,
    parse_rate,
    step_columns,
    step_window_columns,
)
from bearing_lib.loaders.registry import FormatSpec, register
from bearing_lib.loaders.source import InputSource

NAME = "sglang-bench-serving"
TOOL = "SGLang bench_serving"
SNIFF_KEYS = ("backend", "dataset_name", "request_rate", "completed")
REQUIRED = ("backend", "dataset_name", "request_rate", "max_concurrency", "duration", "completed",
            "total_input_tokens", "total_output_tokens", "output_throughput")
GROUP_FIELDS = ("backend", "dataset_name", "sharegpt_output_len", "random_input_len", "random_output_len",
                "random_range_ratio")
_STAT = re.compile(r"^(mean|median|p90|p95|p99|max)_(e2e_latency|ttft|tpot|itl)_ms$")
_METRIC = {"e2e_latency": "latency_ms", "ttft": "ttft_ms", "tpot": "tpot_ms", "itl": "itl_ms"}
_STAT_NAME = {"mean": "mean", "median": "p50", "p90": "p90", "p95": "p95", "p99": "p99", "max": "max"}


def sniff(source: InputSource) -> bool:
    if source.is_dir or source.suffix not in (".jsonl", ".json", ".ndjson"):
        return False
    obj = source.first_json_line
    return isinstance(obj, dict) and all(k in obj for k in SNIFF_KEYS) and "model_id" not in obj


def layout_of(line: dict[str, Any]) -> str:
    if "request_throughput" in line:
        return "bench_serving layout with request_throughput and percentiles (2025+)"
    return "bench_serving late-2024 layout (18 keys: medians and mean E2E only)"


def version(source: InputSource) -> str | None:
    obj = source.first_json_line
    return layout_of(obj) if isinstance(obj, dict) else None


def _run_key(line: dict[str, Any], unit: str) -> tuple:
    base = tuple((k, line.get(k)) for k in GROUP_FIELDS)
    return base + ((("max_concurrency", line.get("max_concurrency")),) if unit == "rps" else (("sweep", "conc"),))


def _run_name(stem: str, line: dict[str, Any], unit: str) -> str:
    ds = str(line.get("dataset_name"))
    parts = [f"{stem}/{ds}"]
    if ds == "random":
        ratio = line.get("random_range_ratio")
        parts.append(f"in{line.get('random_input_len')}-out{line.get('random_output_len')}-ratio{ratio:g}"
                     if isinstance(ratio, int | float) else
                     f"in{line.get('random_input_len')}-out{line.get('random_output_len')}")
    elif line.get("sharegpt_output_len") is not None:
        parts.append(f"out{line.get('sharegpt_output_len')}")
    if unit == "rps" and line.get("max_concurrency") is not None:
        parts.append(f"maxconc{line['max_concurrency']}")
    return "-".join(parts)


def send_window(obj: dict[str, Any], rate: float | None) -> SendWindow | None:
    """The step's send window (module docstring): ``num_prompts / request_rate`` from the line's own prompt count
    (``config``), else ``completed / request_rate`` (``estimated``), None for an unbounded or capped rate."""
    if rate is None or not math.isfinite(rate) or not rate > 0 or obj.get("max_concurrency") is not None:
        return None
    n = obj.get("num_prompts")
    if isinstance(n, int) and n > 0:
        return SendWindow.of(n / rate, "config", "num_prompts / request_rate (Poisson schedule, expected span)")
    c = obj.get("completed")
    if isinstance(c, int) and c > 0:
        return SendWindow.of(c / rate, "estimated", "completed / request_rate (the line states no num_prompts: "
                             "assumes no request failed; Poisson schedule, expected span)")
    return None


def load(source: InputSource) -> LoadPointTable:
    lines = json_lines(source)
    if not lines:
        raise InputError("the file holds no result lines", path=source.path)
    prov = new_provenance(source, format=NAME, tool=TOOL)
    stem = Path(source.name).stem
    steps: list[StepFacts] = []
    names: dict[tuple, str] = {}
    details = 0
    for lineno, obj in lines:
        if not isinstance(obj, dict):
            raise InputError(f"expected a JSON object per line, found {type(obj).__name__}", path=source.path,
                             row=lineno)
        missing = [k for k in REQUIRED if k not in obj]
        if missing:
            raise UnsupportedVersionError(
                f"line {lineno} is not an SGLang bench_serving result bearing can read",
                tool="SGLang bench_serving", version=layout_of(obj), missing=missing, path=source.path,
            )
        rate = parse_rate(obj["request_rate"], path=source.path, field="request_rate", row=lineno)
        conc = obj.get("max_concurrency")
        if rate is not None and math.isinf(rate) and conc is not None:
            load_value, unit = float(conc), "concurrency"
        else:
            load_value, unit = rate, "rps"
        key = _run_key(obj, unit)
        if key not in names:
            candidate = _run_name(stem, obj, unit)
            while candidate in names.values():
                candidate += "+"
            names[key] = candidate
        if "ttfts" in obj:
            details += 1
        steps.append(StepFacts(
            run_id=names[key], offered_load=load_value, offered_load_unit=unit, tiebreak=(lineno,),
            duration_s=number(obj["duration"], path=source.path, field="duration", row=lineno),
            n_requests_reported=obj.get("num_prompts") if isinstance(obj.get("num_prompts"), int) else None,
            source_file=f"{source.path.name}:{lineno}", payload=(lineno, obj),
            send_window=send_window(obj, rate), duration_includes_drain=True,
        ))
    steps = number_steps(steps, prov)
    rows = []
    derived: set[str] = set()
    for s in steps:
        lineno, obj = s.payload
        duration = s.duration_s
        completed = int(obj["completed"])

        def num(key: str, obj: dict[str, Any] = obj, lineno: int = lineno) -> float | None:
            return number(obj.get(key), path=source.path, field=key, row=lineno)

        row: dict[str, object] = {
            **step_columns(s),
            "model": obj.get("model_id") or obj.get("model"),
            "duration_s": duration,
            "n_ok": completed,
            "n_requests": s.n_requests_reported,
            "output_tokens_per_s": num("output_throughput"),
            **step_window_columns(s),
            "source_file": s.source_file,
        }
        if obj.get("request_throughput") is not None:
            row["throughput_rps"] = num("request_throughput")
        elif duration:
            row["throughput_rps"] = completed / duration
            derived.add("throughput_rps")
        if obj.get("input_throughput") is not None:
            row["input_tokens_per_s"] = num("input_throughput")
        elif duration:
            row["input_tokens_per_s"] = float(obj["total_input_tokens"]) / duration
            derived.add("input_tokens_per_s")
        if s.n_requests_reported is not None:
            row["n_errors"] = s.n_requests_reported - completed
            derived.add("n_errors")
        for key in obj:
            m = _STAT.match(key)
            if m:
                stat, metric = m.groups()
                row[f"{_METRIC[metric]}_{_STAT_NAME[stat]}"] = None if completed == 0 else num(key)
        rows.append(row)
    if all(r.get("n_errors") is None for r in rows):
        prov.add("errors_unknown", "SGLang counts only completed requests and these lines state no prompt count: "
                 "the number of failed requests is unknown (n_errors null)", level="info")
    if details:
        prov.add("per_request_arrays_ignored", f"{details} line(s) carry --output-details arrays; bearing reads the "
                 "statistics of SGLang lines only", level="info", count=details)
    layouts = sorted({layout_of(obj) for _, obj in lines})
    prov.add("version_not_stated", f"SGLang writes no version number; layout seen: {'; '.join(layouts)}",
             level="info")
    return finish_loadpoints(rows, source, format=NAME, tool=TOOL, tool_version=None, derived=derived,
                             provenance=prov, options={"layout": layouts}, files=[str(source.path)])


register(
    FormatSpec(
        name=NAME,
        tool=TOOL,
        kind="loadpoints",
        needs="a JSONL file whose lines have backend, dataset_name, request_rate, completed (no model_id)",
        sniff=sniff,
        load=load,
        version=version,
    )
)
