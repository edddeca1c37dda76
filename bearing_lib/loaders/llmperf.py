"""Anyscale LLMPerf (``token_benchmark_ray.py``): per-request responses and run summaries.

``<name>_<in>_<out>_individual_responses.json`` is a JSON array, one object per request,
every time in **seconds** and **no timestamps** (order is completion order), so it becomes
a :class:`~bearing_lib.data.trace.RequestTrace` with ``time_origin`` ``none``. The run's
concurrency (``num_concurrent_requests``) is only in the sibling summary
(``<name>_<in>_<out>_summary.json``, or ``../summary/<same name>.json`` in the
leaderboard layout); without one, the offered load is unknown and a finding says so.

``*_summary.json`` (``version`` "2023-08-31") becomes a
:class:`~bearing_lib.data.loadpoints.LoadPointTable`. A folder of ``result_<model>_<N>/``
directories (one per concurrency) loads as one run per LLMPerf ``name``, steps ordered by
``num_concurrent_requests``; a folder of summary or individual files loads one run per file.

Traps handled: error rows carry ``error_code`` (HTTP status, or LLMPerf's own -1/-100)
with latencies of 0 (they are errors, never fast requests: their latency fields are
null); HTTP 429 rows are ``rejected``; Bedrock's ``-100`` ("Output too few tokens") rows
keep their real TTFT and E2E but their ``inter_token_latency_s`` holds the un-normalised
total (≈ the E2E latency), so their ``itl_ms`` is null; ``results_error_code_frequency``
is a Python-repr string (``'{429.0: 130}'``), parsed with :func:`ast.literal_eval`
(never ``eval``); min/max of token counts are strings (``"550"``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import polars as pl

from bearing_lib.common.errors import BadValueError, InputError, UnsupportedVersionError
from bearing_lib.data.loadpoints import LoadPointTable, window_columns
from bearing_lib.data.trace import RequestTrace
from bearing_lib.loaders._common import finish_trace, new_provenance
from bearing_lib.loaders._loadtest import (
    StepFacts,
    finish_loadpoints,
    json_document,
    may_hold,
    number,
    number_steps,
    relpath,
    step_columns,
    step_rows,
)
from bearing_lib.loaders.registry import FormatSpec, register
from bearing_lib.loaders.source import InputSource

NAME_REQUESTS = "llmperf-individual-responses"
NAME_SUMMARY = "llmperf-summary"
TOOL = "Anyscale LLMPerf"
KNOWN_VERSIONS = ("2023-08-31",)
REQUEST_KEYS = ("error_code", "error_msg", "ttft_s", "inter_token_latency_s", "end_to_end_latency_s",
                "number_input_tokens", "number_output_tokens")
SUMMARY_KEYS = ("version", "name", "model", "num_concurrent_requests", "results_num_requests_started",
                "results_number_errors", "results_num_completed_requests", "results_num_completed_requests_per_min",
                "results_mean_output_throughput_token_per_s", "results_error_code_frequency",
                "results_ttft_s_mean", "results_end_to_end_latency_s_mean")
_RESULT_DIR = re.compile(r"^result_.+_(\d+)$")
_QUANT = {"quantiles_p50": "p50", "quantiles_p90": "p90", "quantiles_p95": "p95", "quantiles_p99": "p99",
          "mean": "mean", "max": "max"}
_METRICS = {"ttft_s": "ttft_ms", "end_to_end_latency_s": "latency_ms", "inter_token_latency_s": "itl_ms"}


# ---------------------------------------------------------------- recognising files
def _is_requests_doc(doc: object) -> bool:
    return (isinstance(doc, list) and bool(doc) and isinstance(doc[0], dict)
            and all(k in doc[0] for k in ("error_code", "ttft_s", "end_to_end_latency_s")))


def _is_summary_doc(doc: object) -> bool:
    return (isinstance(doc, dict) and "num_concurrent_requests" in doc and "version" in doc
            and any(k.startswith("results_") for k in doc))


def _doc(source: InputSource) -> object:
    if source.suffix != ".json" or not may_hold(source, b'"error_code"', b'"num_concurrent_requests"'):
        return None
    return json_document(source)


def _inputs(source: InputSource, want, what: str) -> tuple[list[InputSource], Path]:
    """The files to read (the file itself, or a folder's matching files) and the folder
    ``source_file`` is relative to; :class:`InputError` when a folder holds none."""
    files = _folder(source, want) if source.is_dir else [source]
    if not files:
        raise InputError(f"no LLMPerf {what} files here", path=source.path)
    return files, (source.path if source.is_dir else source.path.parent)


def _folder(source: InputSource, want) -> list[InputSource]:
    """Matching files directly in the folder or one level down (``result_*_N/``)."""
    found = []
    for p in sorted(source.path.iterdir()):
        if p.is_file():
            cands = [p]
        elif p.is_dir():
            cands = sorted(q for q in p.iterdir() if q.is_file())
        else:
            cands = []
        for q in cands:
            s = InputSource(q)
            if want(_doc(s)):
                found.append(s)
    return found


def sniff_requests(source: InputSource) -> bool:
    if source.is_dir:
        return bool(_folder(source, _is_requests_doc))
    return _is_requests_doc(_doc(source))


def sniff_summary(source: InputSource) -> bool:
    if source.is_dir:
        return bool(_folder(source, _is_summary_doc)) and not _folder(source, _is_requests_doc)
    return _is_summary_doc(_doc(source))


def version(source: InputSource) -> str | None:
    doc = _doc(source)
    if isinstance(doc, dict):
        return str(doc.get("version")) if doc.get("version") is not None else None
    if _is_requests_doc(doc):
        summary = _sibling_summary(source.path)
        if summary is not None:
            return str(json_document(InputSource(summary)).get("version"))
    return None


def _check_summary(doc: dict[str, Any], path: Path) -> None:
    missing = [k for k in SUMMARY_KEYS if k not in doc]
    ver = doc.get("version")
    if missing or str(ver) not in KNOWN_VERSIONS:
        raise UnsupportedVersionError(
            "not an LLMPerf summary bearing can read (known summary versions: " + ", ".join(KNOWN_VERSIONS) + ")",
            tool="LLMPerf", version=None if ver is None else str(ver), missing=missing, path=path,
        )


def parse_error_codes(text: object, *, path: Path) -> dict[int, int]:
    """``results_error_code_frequency``: a Python-repr dict string such as ``'{429.0: 130}'``.

    Parsed with :func:`ast.literal_eval` (literals only, never ``eval``); codes become ints.
    """
    if isinstance(text, dict):
        value: object = text
    else:
        try:
            value = ast.literal_eval(str(text))
        except (ValueError, SyntaxError):
            raise BadValueError(f"expected a dict literal such as '{{429.0: 12}}', found {text!r}", path=path,
                                field="results_error_code_frequency") from None
    if not isinstance(value, dict) or not all(isinstance(k, int | float) and isinstance(v, int | float)
                                              for k, v in value.items()):
        raise BadValueError(f"expected {{code: count}}, found {text!r}", path=path,
                            field="results_error_code_frequency")
    return {int(k): int(v) for k, v in value.items()}


# ---------------------------------------------------------------- summaries -> load points
def _summary_run_id(path: Path, doc: dict[str, Any], base: Path) -> str:
    """``name`` (minus ``_summary``) for the ``result_*_N/`` layout; the file stem otherwise."""
    if path.parent != base and _RESULT_DIR.match(path.parent.name):
        return str(doc.get("name", path.parent.name)).removesuffix("_summary")
    return Path(path.name).stem.removesuffix("_summary")


def _summary_row(doc: dict[str, Any], path: Path) -> dict[str, object]:
    def num(key: str) -> float | None:
        return number(doc.get(key), path=path, field=key)

    completed = int(num("results_num_completed_requests") or 0)
    started = int(num("results_num_requests_started") or 0)
    errors = int(num("results_number_errors") or 0)
    per_min = num("results_num_completed_requests_per_min")
    row: dict[str, object] = {
        "model": doc.get("model"),
        "n_requests": started,
        "n_ok": completed,
        "n_errors": errors,
        "throughput_rps": per_min / 60.0 if per_min is not None else None,
        "duration_s": completed / per_min * 60.0 if per_min else None,
        "output_tokens_per_s": num("results_mean_output_throughput_token_per_s"),
        # the summary gives the mean prompt of the successful requests, not a rate: tokens/s = that mean × their
        # completed rate (what the fidelity check reads back as a mean per request; it read "input length not
        # known" beside mean_input_tokens 550: a new user's case, round 22)
        "input_tokens_per_s": (None if (m_in := num("results_number_input_tokens_mean")) is None or not per_min
                               else m_in * per_min / 60.0),
        # closed loop; at the end the threads stop polling and requests in flight are abandoned, not waited
        # for (token_benchmark_ray.py get_token_throughput_latencies): no drain; the loop's span is not stated
        **window_columns(None, False),
    }
    for src, metric in _METRICS.items():
        for suffix, stat in _QUANT.items():
            v = num(f"results_{src}_{suffix}")
            row[f"{metric}_{stat}"] = None if v is None or completed == 0 else v * 1000.0
    return row


def _load_summary(source: InputSource) -> LoadPointTable:
    prov = new_provenance(source, format=NAME_SUMMARY, tool=TOOL)
    files, base = _inputs(source, _is_summary_doc, "summary")
    steps = []
    codes_total: dict[int, int] = {}
    for f in files:
        doc = json_document(f) if source.is_dir else source.json
        if not isinstance(doc, dict):
            raise InputError("expected a JSON object (an LLMPerf summary)", path=f.path)
        _check_summary(doc, f.path)
        codes = parse_error_codes(doc["results_error_code_frequency"], path=f.path)
        if sum(codes.values()) != int(doc["results_number_errors"]):
            prov.add("error_count_mismatch", f"{f.path.name}: error codes sum to {sum(codes.values())} but "
                     f"results_number_errors is {doc['results_number_errors']}")
        for k, v in codes.items():
            codes_total[k] = codes_total.get(k, 0) + v
        conc = number(doc["num_concurrent_requests"], path=f.path, field="num_concurrent_requests")
        steps.append(StepFacts(
            run_id=_summary_run_id(f.path, doc, base), offered_load=conc, offered_load_unit="concurrency",
            tiebreak=(doc.get("timestamp") or 0, str(f.path)),
            n_requests_reported=int(doc["results_num_requests_started"]),
            source_file=relpath(f.path, base), payload=(f.path, doc),
        ))
    steps = number_steps(steps, prov)
    rows = []
    for s in steps:
        path, doc = s.payload
        row = {**step_columns(s), **_summary_row(doc, path), "source_file": s.source_file}
        s.duration_s = row["duration_s"]  # type: ignore[assignment]
        rows.append(row)
    prov.options["error_codes"] = {str(k): v for k, v in sorted(codes_total.items())}
    prov.add("summary_only", "LLMPerf summaries hold statistics of the successful requests only (p25…p99, mean, "
             "min, max; seconds converted to ms); the run duration is derived from completed requests per minute",
             level="info")
    prov.add("llmperf_itl_includes_ttft", "the summary's inter_token_latency_s statistics are of LLMPerf's per-request "
             "value, (TTFT + the gaps after it) / output tokens, about E2E / N (ray-project/llmperf "
             "openai_chat_completions_client.py: time_to_next_token starts with the TTFT): itl_ms is high by about "
             "TTFT / N; the per-request file gives the gaps alone")
    vers = sorted({str(s.payload[1].get("version")) for s in steps})
    return finish_loadpoints(rows, source, format=NAME_SUMMARY, tool=TOOL, tool_version=", ".join(vers),
                             derived={"throughput_rps", "duration_s", "input_tokens_per_s"}, provenance=prov,
                             options=prov.options,
                             files=[str(f.path) for f in files])


# ---------------------------------------------------------------- individual responses -> trace
def _sibling_summary(path: Path) -> Path | None:
    """The summary written beside an individual-responses file, in either layout."""
    name = path.name
    if name.endswith("_individual_responses.json"):
        cand = path.with_name(name.replace("_individual_responses.json", "_summary.json"))
        if cand.exists():
            return cand
    if path.parent.name == "individual":
        cand = path.parent.parent / "summary" / name
        if cand.exists():
            return cand
    return None


def status_of(code: int) -> str:
    """HTTP 429 is ``rejected``; 408/504 ``timeout``; any other code ``error``."""
    if code == 429:
        return "rejected"
    if code in (408, 504):
        return "timeout"
    return "error"


def _requests_frame(doc: list[dict[str, Any]], path: Path, prov_counts: dict[str, int]) -> pl.DataFrame:
    cols: dict[str, list] = {k: [] for k in ("request_id", "ttft_ms", "latency_ms", "itl_ms", "input_tokens",
                                              "output_tokens", "status", "error", "source_row")}
    for i, rec in enumerate(doc, start=1):
        if not isinstance(rec, dict):
            raise BadValueError("expected an object per request", path=path, row=i)
        missing = [k for k in REQUEST_KEYS if k not in rec]
        if missing:
            raise UnsupportedVersionError(f"request {i} lacks LLMPerf's per-request fields", tool="LLMPerf",
                                          version=None, missing=missing, path=path)
        code = rec["error_code"]
        ttft = number(rec["ttft_s"], path=path, field="ttft_s", row=i)
        e2e = number(rec["end_to_end_latency_s"], path=path, field="end_to_end_latency_s", row=i)
        itl = number(rec["inter_token_latency_s"], path=path, field="inter_token_latency_s", row=i)
        n_in = rec["number_input_tokens"]
        n_out = rec["number_output_tokens"]
        cols["request_id"].append(str(i))
        cols["source_row"].append(i)
        cols["input_tokens"].append(n_in)
        if code is None:
            cols["status"].append("ok")
            cols["error"].append(None)
            cols["ttft_ms"].append(ttft * 1000.0 if ttft is not None else None)
            cols["latency_ms"].append(e2e * 1000.0 if e2e is not None else None)
            # LLMPerf's inter_token_latency_s is (TTFT + the gaps after it) / N, i.e. about E2E / N: the mean gap
            # between tokens after the first is (E2E − TTFT) / (N − 1), from the row's own fields
            gaps = (e2e - ttft) / (n_out - 1) if e2e and ttft is not None and isinstance(n_out, int) and n_out > 1 \
                else None
            cols["itl_ms"].append(gaps * 1000.0 if gaps is not None and gaps >= 0 else None)
            if itl is not None:
                prov_counts["ok_rows_llmperf_itl"] += 1
            cols["output_tokens"].append(n_out)
            continue
        code_i = int(number(code, path=path, field="error_code", row=i))  # type: ignore[arg-type]
        cols["status"].append(status_of(code_i))
        cols["error"].append(f"{code_i}: {rec.get('error_msg') or ''}".strip()[:500])
        real = bool(e2e) and e2e > 0  # a response came back (Bedrock -100); zeros mean "never measured"
        if real:
            prov_counts["errors_with_latency"] += 1
        else:
            prov_counts["errors_zero_latency"] += 1
        cols["ttft_ms"].append(ttft * 1000.0 if real and ttft else None)
        cols["latency_ms"].append(e2e * 1000.0 if real else None)
        # inter_token_latency_s of an error row is not normalised by LLMPerf (≈ the E2E total): unusable
        cols["itl_ms"].append(None)
        cols["output_tokens"].append(n_out if real else None)
    return pl.DataFrame(cols, schema_overrides={"ttft_ms": pl.Float64, "latency_ms": pl.Float64,
                                                "itl_ms": pl.Float64, "input_tokens": pl.Int64,
                                                "output_tokens": pl.Int64, "error": pl.String})


def _load_requests(source: InputSource) -> RequestTrace:
    prov = new_provenance(source, format=NAME_REQUESTS, tool=TOOL)
    files, base = _inputs(source, _is_requests_doc, "individual-responses")
    counts = {"errors_with_latency": 0, "errors_zero_latency": 0, "ok_rows_llmperf_itl": 0}
    steps, frames, used, versions, no_summary = [], [], [], set(), []
    for f in files:
        doc = json_document(f) if source.is_dir else source.json
        summary_path = _sibling_summary(f.path)
        summary = json_document(InputSource(summary_path)) if summary_path else None
        if isinstance(summary, dict):
            _check_summary(summary, summary_path)  # type: ignore[arg-type]
            conc = number(summary["num_concurrent_requests"], path=summary_path, field="num_concurrent_requests")
            versions.add(str(summary["version"]))
            used.append(str(summary_path))
            per_min = summary.get("results_num_completed_requests_per_min")
            completed = summary.get("results_num_completed_requests")
            duration = float(completed) / float(per_min) * 60.0 if per_min else None
            model = summary.get("model")
            started = int(summary["results_num_requests_started"])
            if started != len(doc):
                prov.add("count_mismatch", f"{f.path.name}: {len(doc)} request rows but the summary says "
                         f"{started} requests started")
        else:
            conc, duration, model, started = None, None, None, None
            no_summary.append(f.path.name)
        run_id = Path(f.name).stem.removesuffix("_individual_responses")
        if f.path.parent != base and _RESULT_DIR.match(f.path.parent.name):
            # result_<model>_<N>/ per concurrency: one run per LLMPerf name (the file name without _<in>_<out>)
            run_id = str(summary["name"]).removesuffix("_summary") if isinstance(summary, dict) else run_id
        steps.append(StepFacts(
            run_id=run_id, offered_load=conc, offered_load_unit="concurrency" if conc is not None else None,
            tiebreak=(str(f.path),), duration_s=duration, n_requests_reported=started,
            source_file=relpath(f.path, base), payload=(f.path, doc, model),
        ))
        used.append(str(f.path))
    steps = number_steps(steps, prov)
    for s in steps:
        path, doc, model = s.payload
        frames.append(_requests_frame(doc, path, counts).with_columns(
            pl.lit(model, dtype=pl.String).alias("model"),
            *[pl.lit(v).alias(k) for k, v in step_columns(s).items()],
            (pl.lit(f"{s.source_file}#") + pl.col("request_id")).alias("request_id"),
        ))
    frame = pl.concat(frames, how="vertical_relaxed")
    if counts["errors_zero_latency"]:
        prov.add("error_rows_zero_latency", f"{counts['errors_zero_latency']} error rows carry latencies of 0 "
                 "(never measured): their latency fields are null, they are errors, not fast requests",
                 count=counts["errors_zero_latency"])
    if counts["errors_with_latency"]:
        prov.add("error_rows_unnormalised_itl", f"{counts['errors_with_latency']} error rows (e.g. Bedrock -100 "
                 "'Output too few tokens') have real TTFT/E2E, kept; their inter_token_latency_s is LLMPerf's "
                 "un-normalised total, so itl_ms is null for them", count=counts["errors_with_latency"])
    if counts["ok_rows_llmperf_itl"]:
        prov.add("llmperf_itl_includes_ttft", "LLMPerf's inter_token_latency_s is the sum of its time_to_next_token "
                 "list, whose first entry is the TTFT, divided by the output tokens (about E2E / N; "
                 "ray-project/llmperf src/llmperf/ray_clients/openai_chat_completions_client.py, "
                 "token_benchmark_ray.py): itl_ms is the mean gap after the first token, (E2E − TTFT) / (N − 1), "
                 f"computed from each row's own fields for {counts['ok_rows_llmperf_itl']} successful row(s)",
                 level="info", count=counts["ok_rows_llmperf_itl"])
    if no_summary:
        prov.add("no_summary", f"no sibling summary for {', '.join(no_summary)}: the concurrency (offered load), "
                 "model and duration are unknown", count=len(no_summary))
    prov.add("no_request_times", "LLMPerf keeps no per-request timestamps (rows are in completion order): start_s "
             "is null (time_origin 'none'); step durations are derived from the summary's completed requests per "
             "minute", level="info")
    trace = finish_trace(frame, source, format=NAME_REQUESTS, tool=TOOL,
                         tool_version=", ".join(sorted(versions)) or None, derived=("request_id",),
                         time_origin="none", provenance=prov, options={}, steps=step_rows(steps))
    trace.provenance.files = used
    return trace


register(FormatSpec(
    name=NAME_REQUESTS, tool=TOOL, kind="requests",
    needs="an LLMPerf *_individual_responses.json (a JSON array of objects with error_code, ttft_s, "
          "end_to_end_latency_s), or a folder of them",
    sniff=sniff_requests, load=_load_requests, version=version,
))
register(FormatSpec(
    name=NAME_SUMMARY, tool=TOOL, kind="loadpoints",
    needs="an LLMPerf *_summary.json (version, num_concurrent_requests, results_*), or a folder of them "
          "(e.g. result_<model>_<N>/ per concurrency)",
    sniff=sniff_summary, load=_load_summary, version=version,
))
