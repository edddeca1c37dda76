"""openshift-psap llm-load-test output: one JSON per concurrency level, one row per request.

Layout (``src/llm_load_test/utils.py`` ``write_output`` and ``result.py``; docs/formats-loadtests-llm.md):

- ``results``: per-request objects ``user_id, input_id, input_tokens, output_text,
  output_tokens, output_tokens_before_timeout, start_time, ack_time, first_token_time,
  end_time`` (epoch **seconds**), ``response_time, tt_ack, ttft, itl, tpot`` (**ms**),
  ``stop_reason, error_code, error_text``;
- ``config``: the YAML config echoed back, with ``load_options.concurrency`` set to this
  file's level and ``load_options.duration`` in seconds (``plugin_options.model_name``
  names the model);
- ``summary``: statistics over the successful requests (not read: bearing recomputes them).

Mapping: ``start_s``/``end_s`` from ``start_time``/``end_time``; ``ttft_ms`` from ``ttft``;
``latency_ms`` from ``response_time`` (for failed requests, which the tool leaves without
one, ``1000 · (end_time − start_time)`` when both are there). The tool's
``itl`` is ``(end − first token) / (output_tokens − 1)``, which is bearing's ``tpot_ms``
(time per output token after the first) and the mean ``itl_ms``; the tool's own ``tpot``
(``response_time / output_tokens``, first token included) is not a canonical field and is
not read. A request with ``error_text`` or ``error_code`` failed: status ``rejected`` for
HTTP 429, ``timeout`` when the text says it timed out, else ``error``.

The offered load is the concurrency (``offered_load_unit = "concurrency"``): from
``config.load_options.concurrency``, else from the default file name ``output-NNN.json``.
A folder of such files (llm-load-test writes one per level when ``concurrency`` is a
list) is one run, steps numbered by concurrency.

The tool's **older layout** (late 2023: ``results`` and ``config``, no ``summary``) keeps per
request ``start``, ``end`` (epoch s), ``TT_ack``, ``TTFT``, ``TPOT`` (ms), ``response_time``
(**seconds**, = end − start), ``output_tokens``, ``input_tokens``, ``worker_id`` and the
texts, and no error field. It is read too: ``latency_ms`` = 1000 · ``response_time``
(checked against end − start), ``ttft_ms`` = ``TTFT``, ``tpot_ms`` derived as
``(latency − TTFT) / (output tokens − 1)`` (the file's ``TPOT`` has no documented
definition and is not read). With no error field every recorded request is ``ok`` and a
warning says failed requests may be absent, so the error rate cannot be known.
"""

from __future__ import annotations

import re
from typing import Any

import polars as pl

from bearing_lib.common.errors import BadValueError, InputError, SchemaError
from bearing_lib.data.trace import RequestTrace
from bearing_lib.loaders._common import finish_trace, new_provenance
from bearing_lib.loaders._loadtest import (
    StepFacts,
    json_document,
    may_hold,
    number,
    number_steps,
    step_exprs,
    step_rows,
)
from bearing_lib.loaders.registry import FormatSpec, register
from bearing_lib.loaders.source import InputSource

NAME = "llm-load-test"
TOOL = "openshift-psap llm-load-test"
SIGNATURE = ("output_tokens_before_timeout", "first_token_time")
"""Keys of a request object no other tool writes together."""
OLD_SIGNATURE = ("start", "end", "TTFT", "response_time", "worker_id")
"""Keys of a request object in the older (2023) layout."""
OLD_TOLERANCE_S = 0.001
"""Largest difference between ``response_time`` and ``end − start`` the older layout may show."""

_NAME_RE = re.compile(r"(\d+)(?=\D*\.json(?:\.gz)?$)")
_TIMEOUT_RE = re.compile(r"time(?:d)?[ _-]?out", re.IGNORECASE)


def _layout(doc: Any) -> str | None:
    """``"current"``, ``"2023"`` or None (not llm-load-test output)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
        return None
    if not isinstance(doc.get("config"), dict):
        return None
    first = next((r for r in doc["results"] if isinstance(r, dict)), None)
    if "summary" in doc:
        if first is None:
            return "current" if isinstance(doc["config"].get("load_options"), dict) else None
        return "current" if all(k in first for k in SIGNATURE) else None
    if first is not None and all(k in first for k in OLD_SIGNATURE):
        return "2023"
    return None


def _is_document(doc: Any) -> bool:
    return _layout(doc) is not None


def _is_file(source: InputSource) -> bool:
    if source.is_dir or source.suffix != ".json":
        return False
    if not may_hold(source, b'"output_tokens_before_timeout"', b'"load_options"', b'"worker_id"'):
        return False
    return _is_document(json_document(source))


def _files(source: InputSource) -> list[InputSource]:
    if not source.is_dir:
        return [source]
    return [c for c in source.children("*.json*") if c.suffix == ".json"]


def sniff(source: InputSource) -> bool:
    if not source.is_dir:
        return _is_file(source)
    files = _files(source)
    return bool(files) and all(_is_file(f) for f in files)


def _concurrency(doc: dict, src: InputSource) -> tuple[float | None, str]:
    opts = doc["config"].get("load_options")
    value = opts.get("concurrency") if isinstance(opts, dict) else None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value), "config"
    m = _NAME_RE.search(src.path.name)
    if m:
        return float(m.group(1)), "file name"
    return None, "unknown"


def _duration(doc: dict, src: InputSource) -> float | None:
    opts = doc["config"].get("load_options")
    if not isinstance(opts, dict):
        return None
    return number(opts.get("duration"), path=src.path, field="config.load_options.duration")


def _model(doc: dict) -> str | None:
    opts = doc["config"].get("plugin_options")
    name = opts.get("model_name") if isinstance(opts, dict) else None
    return str(name) if name else None


_NUM = ("start_time", "end_time", "first_token_time", "response_time", "ttft", "itl")
_INT = ("input_tokens", "output_tokens", "output_tokens_before_timeout")
_IDS = ("user_id", "input_id")


def _rows(doc: dict, src: InputSource) -> pl.DataFrame:
    rows: list[dict[str, object]] = []
    for i, r in enumerate(doc["results"]):
        where = f"results[{i}]"
        if not isinstance(r, dict):
            raise SchemaError(f"expected a request object, found {type(r).__name__}", path=src.path, field=where)
        row: dict[str, object] = {"source_row": i + 1}
        for k in _NUM:
            row[k] = number(r.get(k), path=src.path, field=f"{where}.{k}")
        for k in _INT:
            v = number(r.get(k), path=src.path, field=f"{where}.{k}")
            row[k] = None if v is None else int(v)
        for k in _IDS:  # identifiers: only part of request_id
            row[k] = None if r.get(k) is None else str(r.get(k))
        code = r.get("error_code")
        text = r.get("error_text")
        row["error_code"] = None if code is None else str(code)
        row["error_text"] = None if text is None else str(text)
        rows.append(row)
    schema = {**{k: pl.Float64 for k in _NUM}, **{k: pl.Int64 for k in _INT}, **{k: pl.String for k in _IDS},
              "error_code": pl.String, "error_text": pl.String, "source_row": pl.Int64}
    return pl.DataFrame(rows, schema=schema)


def _old_rows(doc: dict, src: InputSource) -> pl.DataFrame:
    """The 2023 layout as the current layout's columns (times in s, durations in ms)."""
    rows: list[dict[str, object]] = []
    for i, r in enumerate(doc["results"]):
        where = f"results[{i}]"
        if not isinstance(r, dict):
            raise SchemaError(f"expected a request object, found {type(r).__name__}", path=src.path, field=where)
        start = number(r.get("start"), path=src.path, field=f"{where}.start")
        end = number(r.get("end"), path=src.path, field=f"{where}.end")
        rt = number(r.get("response_time"), path=src.path, field=f"{where}.response_time")
        if rt is not None and start is not None and end is not None and abs(rt - (end - start)) > OLD_TOLERANCE_S:
            raise BadValueError(f"response_time {rt!r} is not end − start ({end - start:.6f} s): this older "
                                "llm-load-test layout keeps response_time in seconds", path=src.path,
                                field=f"{where}.response_time")
        out_tok = number(r.get("output_tokens"), path=src.path, field=f"{where}.output_tokens")
        in_tok = number(r.get("input_tokens"), path=src.path, field=f"{where}.input_tokens")
        worker = number(r.get("worker_id"), path=src.path, field=f"{where}.worker_id")
        rows.append({
            "start_time": start, "end_time": end, "first_token_time": None,
            "response_time": None if rt is None else rt * 1000.0,
            "ttft": number(r.get("TTFT"), path=src.path, field=f"{where}.TTFT"), "itl": None,
            "input_tokens": None if in_tok is None else int(in_tok),
            "output_tokens": None if out_tok is None else int(out_tok),
            "output_tokens_before_timeout": None, "user_id": None if worker is None else str(int(worker)),
            "input_id": str(i), "error_code": None, "error_text": None, "source_row": i + 1,
        })
    schema = {**{k: pl.Float64 for k in _NUM}, **{k: pl.Int64 for k in _INT}, **{k: pl.String for k in _IDS},
              "error_code": pl.String, "error_text": pl.String, "source_row": pl.Int64}
    frame = pl.DataFrame(rows, schema=schema)
    n = pl.col("output_tokens")
    return frame.with_columns(  # TPOT after the first token, from the response time and TTFT
        pl.when(n > 1).then((pl.col("response_time") - pl.col("ttft")) / (n - 1)).otherwise(None).alias("itl"))


def _status() -> pl.Expr:
    failed = pl.col("error_text").is_not_null() | pl.col("error_code").is_not_null()
    text = pl.col("error_text").fill_null("")
    return (
        pl.when(~failed).then(pl.lit("ok"))
        .when(pl.col("error_code") == "429").then(pl.lit("rejected"))
        .when(text.str.contains(_TIMEOUT_RE.pattern)).then(pl.lit("timeout"))
        .otherwise(pl.lit("error"))
    )


def load(source: InputSource) -> RequestTrace:
    """Load one llm-load-test output JSON, or a folder of them (one run, one step per concurrency)."""
    files = _files(source)
    if not files:
        raise InputError("the folder holds no llm-load-test output JSON", path=source.path)
    prov = new_provenance(source, format=NAME, tool=TOOL)
    prov.files = [str(f.path) for f in files]
    run_id = source.path.name if source.is_dir else source.path.parent.name
    facts: list[StepFacts] = []
    from_name: list[str] = []
    models: set[str] = set()
    late = 0
    layouts: dict[str, list[str]] = {}
    for order, f in enumerate(files):
        doc = f.json
        layout = _layout(doc)
        if layout is None:
            raise SchemaError("not an llm-load-test output: expected 'results' (a list of requests), 'config' and "
                              "'summary'", path=f.path)
        layouts.setdefault(layout, []).append(f.name)
        conc, origin = _concurrency(doc, f)
        if origin == "file name":
            from_name.append(f.name)
        raw = _rows(doc, f) if layout == "current" else _old_rows(doc, f)
        late += raw.filter(pl.col("output_tokens_before_timeout") < pl.col("output_tokens")).height
        model = _model(doc)
        if model:
            models.add(model)
        facts.append(StepFacts(run_id=run_id, offered_load=conc, offered_load_unit="concurrency",
                               tiebreak=(order,), duration_s=_duration(doc, f), n_requests_reported=raw.height,
                               source_file=str(f.path), payload=(f, raw, model)))
    parts = []
    for s in number_steps(facts, prov):
        f, raw, model = s.payload
        latency = pl.coalesce(pl.col("response_time"), (pl.col("end_time") - pl.col("start_time")) * 1000.0)
        parts.append(raw.select(
            pl.format("{}:{}-{}-{}", pl.lit(f.name), pl.col("user_id").fill_null("-"),
                      pl.col("input_id").fill_null("-"), pl.col("source_row"))
            .alias("request_id"),
            pl.col("start_time").alias("start_s"),
            pl.col("end_time").alias("end_s"),
            pl.col("ttft").alias("ttft_ms"),
            latency.alias("latency_ms"),
            pl.col("itl").alias("tpot_ms"),
            pl.col("itl").alias("itl_ms"),
            pl.col("input_tokens"),
            pl.col("output_tokens"),
            _status().alias("status"),
            pl.coalesce(pl.col("error_text"), pl.col("error_code")).alias("error"),
            pl.lit(model, dtype=pl.String).alias("model"),
            *step_exprs(s.run_id, s.step, s.offered_load, s.offered_load_unit),
            pl.col("source_row"),
        ))
    if from_name:
        prov.add("offered_load_from_file_name",
                 f"config.load_options.concurrency is not a number in {', '.join(from_name)}; the concurrency was "
                 "read from the file name", count=len(from_name))
    if late:
        prov.add("completed_after_duration",
                 f"{late} request(s) finished after the test duration (output_tokens_before_timeout < output_tokens); "
                 "kept as completed requests (llm-load-test leaves them out of its TTFT/ITL summaries)",
                 level="info", count=late)
    if "2023" in layouts:
        prov.add("no_error_field",
                 f"the older llm-load-test layout ({', '.join(layouts['2023'])}) records no error: every recorded "
                 "request is 'ok', failed requests may be absent, so the error rate cannot be known from these files; "
                 "tpot_ms is derived as (latency − TTFT) / (output tokens − 1)")
    prov.add("layout", "llm-load-test layout(s): " + "; ".join(
        f"{'results/config/summary' if k == 'current' else '2023 (results/config, no summary)'}: {len(v)} file(s)"
        for k, v in layouts.items()), level="info")
    if "current" in layouts:
        prov.add("tpot_from_itl",
                 "tpot_ms and itl_ms are the tool's 'itl' ((end − first token) / (output tokens − 1)); its own 'tpot' "
                 "(response time / output tokens, first token included) is not read", level="info")
    if len(models) > 1:
        prov.add("several_models", f"the files name several models: {', '.join(sorted(models))}")
    frame = pl.concat(parts, how="vertical_relaxed")
    return finish_trace(
        frame,
        source,
        format=NAME,
        tool=TOOL,
        tool_version=None,
        derived=("request_id", "status", "step", "offered_load", "offered_load_unit", "run_id",
                 *(("tpot_ms", "itl_ms") if "2023" in layouts else ())),
        provenance=prov,
        steps=step_rows(facts),
    )


register(
    FormatSpec(
        name=NAME,
        tool=TOOL,
        kind="requests",
        needs="an llm-load-test output JSON (keys results, config, summary; requests with start_time, "
        "first_token_time, end_time, output_tokens_before_timeout), or a folder of them (one per concurrency)",
        sniff=sniff,
        load=load,
    )
)
