"""vLLM serving benchmark results: ``benchmark_serving.py`` (~v0.8) and ``vllm bench serve``.

One JSON object per run (``--save-result``); a sweep is a folder of such files (one per
request rate or concurrency), or the ``vllm bench sweep serve`` layout: one folder per
combination ``SERVE--<server args>-BENCH--<bench args>/`` holding ``run=N.json`` (one per
repeat) and ``summary.json`` (a JSON array of the repeats).

Two formats are registered:

``vllm-bench-serve-requests``
    Files that carry the per-request arrays (``input_lens``, ``output_lens``, ``ttfts``,
    ``itls``, ``errors``; ~v0.8 wrote them by default, later builds with
    ``--save-detailed``) become a :class:`~bearing_lib.data.trace.RequestTrace`. The arrays
    are in **seconds** (the statistics are in ms). They hold no send times, so
    ``time_origin`` is ``none``; each request's end-to-end latency is rebuilt as
    ``ttft + sum(itls)`` and marked derived, as are its mean ITL and its TPOT.
``vllm-bench-serve``
    Files without arrays (llm-d exp-7, v0.25.1, sweep layout) become a
    :class:`~bearing_lib.data.loadpoints.LoadPointTable` from the statistics (``*_ms``).

Traps handled: ``request_rate`` written as the string ``"inf"``; the key
``request_goodput:`` with a trailing colon (~v0.8); arbitrary ``--metadata`` keys merged
into the top level (kept in ``provenance.options['extra_keys']``); an all-failed run
whose statistics are all ``0.0`` (read as missing, never as fast).
"""

from __future__ import annotations

import functools
import json
import math
import re
from pathlib import Path
from typing import Any

import polars as pl

from bearing_lib.common.errors import BadValueError, InputError, UnsupportedVersionError
from bearing_lib.data.loadpoints import LoadPointTable, SendWindow
from bearing_lib.data.provenance import Provenance
from bearing_lib.data.trace import RequestTrace
from bearing_lib.loaders._common import finish_trace, new_provenance
from bearing_lib.loaders._loadtest import (
    SNIFF_MAX_BYTES,
    StepFacts,
    finish_loadpoints,
    json_document,
    may_hold,
    number_steps,
    parse_rate,
    relpath,
    step_columns,
    step_rows,
    step_window_columns,
)
from bearing_lib.loaders.registry import FormatSpec, register
from bearing_lib.loaders.source import HEAD_BYTES, InputSource

NAME_REQUESTS = "vllm-bench-serve-requests"
NAME_AGGREGATE = "vllm-bench-serve"
TOOL = "vLLM benchmark_serving / vllm bench serve"

SNIFF_KEYS = ("backend", "model_id", "tokenizer_id", "request_rate")
REQUIRED = (
    "date",
    "backend",
    "model_id",
    "num_prompts",
    "request_rate",
    "duration",
    "completed",
    "total_input_tokens",
    "total_output_tokens",
    "request_throughput",
    "output_throughput",
    "mean_ttft_ms",
)
ARRAYS = ("input_lens", "output_lens", "ttfts", "itls", "errors")
KNOWN = set(REQUIRED) | set(ARRAYS) | {
    "tokenizer_id",
    "burstiness",
    "max_concurrency",
    "failed",
    "endpoint_type",
    "label",
    "request_goodput",
    "request_goodput:",
    "total_token_throughput",
    "max_output_tokens_per_s",
    "max_concurrent_requests",
    "rtfx",
    "generated_texts",
    "start_times",
    "run_number",
}
_STAT = re.compile(r"^(mean|median|std|p\d+(?:\.\d+)?)_(ttft|tpot|itl|e2el)_ms$")
_METRIC = {"ttft": "ttft_ms", "tpot": "tpot_ms", "itl": "itl_ms", "e2el": "latency_ms"}
_STAT_NAME = {"mean": "mean", "median": "p50", "p50": "p50", "p90": "p90", "p95": "p95", "p99": "p99"}
_COMBO = re.compile(r"^SERVE--.*-BENCH--.*$")
_RUN_FILE = re.compile(r"^run=(\d+)\.json(\.gz)?$")


# ---------------------------------------------------------------- recognising files
def _is_result(obj: object) -> bool:
    return isinstance(obj, dict) and all(k in obj for k in SNIFF_KEYS)


def _result_doc(source: InputSource) -> dict[str, Any] | list[dict[str, Any]] | None:
    """The file as one vLLM result dict, or a list of them (``summary.json``, or an ``--append-result``
    file: one result per line), else None."""
    if source.suffix not in (".json", ".jsonl") or not may_hold(source, b'"tokenizer_id"'):
        return None
    doc = json_document(source)
    if doc is None:
        doc = _appended(source)
    if _is_result(doc):
        return doc
    if isinstance(doc, list) and doc and all(_is_result(x) for x in doc):
        return doc
    return None


def _appended(source: InputSource) -> list[Any] | None:
    """The results of an ``--append-result`` file, or None.

    ``vllm bench serve --append-result`` (vllm-project/vllm ``vllm/benchmarks/serve.py``, ``main``) opens
    the result file in ``a+`` mode, writes ``"\\n"`` when the file is not empty, then ``json.dump``s the
    new result: one JSON object per line, one line per run (e.g. per request rate of a sweep script).
    The whole file is then not one JSON document; its lines are.
    """
    if source.is_dir or source.head.lstrip()[:1] != b"{":
        return None
    try:
        if source.path.stat().st_size > SNIFF_MAX_BYTES:
            return None
        st = source.path.stat()
        return _appended_parsed(str(source.path.resolve()), st.st_mtime_ns, st.st_size)
    except (InputError, OSError, ValueError):
        return None


@functools.lru_cache(maxsize=16)
def _appended_parsed(path: str, mtime_ns: int, size: int) -> list[Any] | None:
    lines = [ln for ln in InputSource(path).read_text().splitlines() if ln.strip()]
    if len(lines) < 2:
        return None
    return [json.loads(ln) for ln in lines]


def _has_arrays(doc: object) -> bool:
    return isinstance(doc, dict) and "ttfts" in doc and isinstance(doc["ttfts"], list)


def _dir_files(d: Path) -> list[InputSource]:
    """Result files directly in ``d``: ``run=N.json`` when present (``summary.json`` is their copy)."""
    children = [InputSource(p) for p in sorted(d.iterdir()) if p.is_file()]
    runs = [c for c in children if _RUN_FILE.match(c.name)]
    picked = runs if runs else [c for c in children if c.name != "benchmark_results.json"]
    return [f for f in picked if _result_doc(f) is not None]


def _folder_files(source: InputSource) -> list[InputSource]:
    """Result files of a folder, one run per folder that holds them.

    Every level bearing knows is read: the folder's own ``*.json[.gz]`` (one run, named after the
    folder), its ``SERVE--…`` combination folders (``vllm bench sweep serve``), its other sub-folders'
    own result files (e.g. one per deployment) and the combination folders of a sweep root one level
    down; each folder holding results is one run. In a combination folder ``run=N.json`` files are used
    and ``summary.json`` (their copy) is skipped; a combination folder holding only ``summary.json``
    uses that. Sub-folders where none of this finds a result are named by :func:`_skipped_folders`.
    """
    return [f for d in _result_folders(source.path) for f in _dir_files(d)]


def _result_folders(root: Path) -> list[Path]:
    """The folders :func:`_folder_files` reads: ``root`` itself, its sub-folders, their combination folders."""
    out = [root]
    for d in sorted(p for p in root.iterdir() if p.is_dir()):
        out.append(d)
        if not _COMBO.match(d.name):
            out += sorted(c for c in d.iterdir() if c.is_dir() and _COMBO.match(c.name))
    return out


def _skipped_folders(root: Path) -> list[str]:
    """Sub-folders (relative names) holding no result file at the levels read: what a finding names."""
    read = {d for d in _result_folders(root) if _dir_files(d)}
    return [d.name for d in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
            if not any(r == d or d in r.parents for r in read)]


def _quick_has_arrays(source: InputSource) -> bool:
    if b'"ttfts"' in source.head:
        return True
    if len(source.head) < HEAD_BYTES:
        return False
    return _has_arrays(_result_doc(source))


def sniff_requests(source: InputSource) -> bool:
    if source.is_dir:
        files = _folder_files(source)
        return bool(files) and all(_quick_has_arrays(f) for f in files)
    doc = _result_doc(source)
    if isinstance(doc, list):  # an --append-result file (or summary.json) whose every run kept its arrays
        return source.name != "summary.json" and all(_has_arrays(d) for d in doc)
    return isinstance(doc, dict) and _has_arrays(doc)


def sniff_aggregate(source: InputSource) -> bool:
    if source.is_dir:
        files = _folder_files(source)
        return bool(files) and not all(_quick_has_arrays(f) for f in files)
    doc = _result_doc(source)
    return doc is not None and not sniff_requests(source)


# ---------------------------------------------------------------- versions and checks
def layout_of(doc: dict[str, Any]) -> str | None:
    """The layout the keys reveal (the files do not state a version number)."""
    if "request_goodput:" in doc:
        return "benchmark_serving.py ~v0.8 layout ('request_goodput:' key)"
    if "failed" in doc and "endpoint_type" in doc:
        return "vllm bench serve layout ('failed', 'endpoint_type'; as v0.25.1)"
    return None


def version(source: InputSource) -> str | None:
    doc = _result_doc(source)
    if isinstance(doc, list):
        doc = doc[0]
    return layout_of(doc) if isinstance(doc, dict) else None


def _check(doc: dict[str, Any], path: Path, *, arrays: bool) -> None:
    needed = list(REQUIRED) + (list(ARRAYS) if arrays else [])
    missing = [k for k in needed if k not in doc]
    if missing:
        raise UnsupportedVersionError(
            "not a vLLM benchmark result bearing can read",
            tool="vLLM bench serve",
            version=layout_of(doc),
            missing=missing,
            path=path,
        )


def _offered(doc: dict[str, Any], path: Path, prov: Provenance) -> tuple[float | None, str | None]:
    """Offered load from the file: a finite request rate (rps), else ``max_concurrency``, else inf rps."""
    rate = parse_rate(doc.get("request_rate"), path=path, field="request_rate")
    conc = doc.get("max_concurrency")
    if conc is not None and not (isinstance(conc, int) and conc > 0):
        raise BadValueError(f"expected a positive whole number or null, found {conc!r}", path=path,
                            field="max_concurrency")
    if rate is not None and math.isinf(rate) and conc is not None:
        return float(conc), "concurrency"
    if rate is not None and conc is not None:
        prov.add(
            "concurrency_cap",
            f"{path.name}: request rate {rate:g} req/s with max_concurrency {conc}; the rate is the offered load, "
            "the concurrency cap may have throttled it",
            level="info",
        )
    return rate, "rps" if rate is not None else None


def send_window(doc: dict[str, Any]) -> SendWindow | None:
    """The period over which the run sent its requests (first send to last send, drain excluded), or None.

    vLLM's ``duration`` is not it: ``benchmark`` (vllm-project/vllm ``vllm/benchmarks/serve.py``, formerly
    ``benchmarks/benchmark_serving.py``) sets ``benchmark_duration`` after ``asyncio.gather`` of every
    request task, so it includes the drain (the wait for the last requests), and ``request_throughput`` is
    ``completed / duration``: below the request rate even for a healthy server, by the last requests'
    latency. The send window is:

    * ``measured`` from ``start_times`` (``--save-detailed``, newer builds: each request's send time,
      ``time.perf_counter()``): ``(max − min) × n / (n − 1)``, so that ``n / window`` is the measured send
      rate ``(n − 1) / (max − min)`` (the clock's origin does not matter, only its differences);
    * else ``config``: a finite ``request_rate`` with no ``max_concurrency`` and no ramp-up gives
      ``num_prompts / request_rate``. ``get_request`` schedules request ``i`` at the cumulative sum of
      gamma(burstiness) intervals of mean ``1 / rate`` and (since 2025) rescales them so that the last is sent
      at exactly ``num_prompts / request_rate`` (``target_total_delay_s``); older builds leave the sum
      unscaled, which is that value in expectation. The generator sleeps until each scheduled time and sends
      without waiting for replies, so it does not fall behind;
    * else unknown (None): a ``max_concurrency`` semaphore may hold sends back, and an unbounded or ramped
      rate has no fixed window.
    """
    n = doc.get("num_prompts")
    st = doc.get("start_times")
    if isinstance(st, list):
        t = [float(x) for x in st if isinstance(x, int | float) and math.isfinite(x)]
        if len(t) >= 2 and max(t) > min(t):
            return SendWindow((max(t) - min(t)) * len(t) / (len(t) - 1), "measured",
                              "start_times: (last send − first send) × n / (n − 1)")
    rate = doc.get("request_rate")
    rate = float(rate) if isinstance(rate, int | float) else None
    if (rate is not None and math.isfinite(rate) and rate > 0 and isinstance(n, int) and n > 0
            and doc.get("max_concurrency") is None and not doc.get("ramp_up_strategy")):
        return SendWindow(n / rate, "config", "num_prompts / request_rate (vLLM's own schedule)")
    return None


def _extra_keys(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if k not in KNOWN and not _STAT.match(k)}


def sweep_parameters(path: Path) -> dict[str, str]:
    """``key=value`` pairs of a ``SERVE--<server args>-BENCH--<bench args>`` folder name (empty otherwise)."""
    name = path.parent.name
    if not _COMBO.match(name):
        return {}
    serve, _, bench = name.removeprefix("SERVE--").partition("-BENCH--")
    out: dict[str, str] = {}
    for part in (serve, bench):
        for item in re.split(r"-(?=[A-Za-z_][A-Za-z0-9_]*=)", part):
            key, eq, value = item.partition("=")
            if eq:
                out[key] = value
    return out


def _record_extras(docs: list[tuple[Path, dict[str, Any]]], prov: Provenance) -> None:
    extras: dict[str, dict[str, Any]] = {}
    swept: dict[str, dict[str, str]] = {}
    for path, doc in docs:
        params = sweep_parameters(path)
        if params:
            swept[path.parent.name] = params
        ex = {k: v for k, v in _extra_keys(doc).items() if k not in params}
        if ex:
            extras[path.name] = {k: (v if isinstance(v, str | int | float | bool) or v is None else repr(v)[:200])
                                 for k, v in ex.items()}
    if swept:
        prov.options["sweep_parameters"] = swept
        prov.add(
            "sweep_parameters",
            "vllm bench sweep serve: each SERVE--…-BENCH--… folder is one run; its parameters (and the swept server "
            "parameter copied into each result, e.g. max_num_seqs) are in provenance.options['sweep_parameters']",
            level="info",
        )
    if extras:
        keys = sorted({k for e in extras.values() for k in e})
        prov.options["extra_keys"] = extras
        prov.add(
            "extra_metadata_keys",
            f"keys not written by vLLM itself (--metadata merged into the result) were ignored: {keys}; "
            "their values are kept in provenance.options['extra_keys']",
            level="info",
            count=len(keys),
        )


# ---------------------------------------------------------------- collecting steps
def _collect(source: InputSource) -> tuple[list[tuple[Path, dict[str, Any], int | None]], str, list[str]]:
    """``[(file, result dict, element)]``, the run id, and the file list, for a file or folder."""
    if source.is_dir:
        files = _folder_files(source)
        if not files:
            raise InputError("the folder holds no vLLM result files", path=source.path)
        out: list[tuple[Path, dict[str, Any], int | None]] = []
        for f in files:
            doc = _result_doc(f)
            if isinstance(doc, list):
                out.extend((f.path, d, i + 1) for i, d in enumerate(doc))
            else:
                out.append((f.path, doc, None))  # type: ignore[arg-type]
        return out, source.path.name, [str(f.path) for f in files]
    doc = _result_doc(source)
    if doc is None:
        raise InputError("not a vLLM benchmark result (a JSON object with backend, model_id, tokenizer_id, "
                         "request_rate)", path=source.path)
    if isinstance(doc, list):
        run_id = source.path.parent.name if source.name == "summary.json" else Path(source.name).stem
        return [(source.path, d, i + 1) for i, d in enumerate(doc)], run_id, [str(source.path)]
    return [(source.path, doc, None)], Path(source.name).stem, [str(source.path)]


def _run_of(path: Path, default: str, base: Path) -> str:
    """A sweep root holds several combination (or deployment) folders: each is its own run; a result file
    loose beside them belongs to the run named after the folder."""
    if path.parent != base:
        return path.parent.name
    return default


def _note_folders(source: InputSource, entries, prov: Provenance) -> None:
    """Findings for a folder read at several levels, and for sub-folders skipped (what and why)."""
    if not source.is_dir:
        return
    loose = sorted({p.name for p, _, _ in entries if p.parent == source.path})
    deeper = sorted({p.parent.relative_to(source.path).as_posix() for p, _, _ in entries if p.parent != source.path})
    if loose and deeper:
        prov.add("folder_levels", f"the folder holds result files of its own ({', '.join(loose[:8])}"
                 f"{' …' if len(loose) > 8 else ''}: run {source.path.name}) and in sub-folders "
                 f"({', '.join(deeper[:8])}{' …' if len(deeper) > 8 else ''}: one run each); every level was read",
                 level="info")
    skipped = _skipped_folders(source.path)
    if skipped:
        prov.add("folders_skipped", f"sub-folder(s) {', '.join(skipped[:8])}{' …' if len(skipped) > 8 else ''} hold "
                 "no vLLM result file where bearing looks (the folder, its sub-folders, and the SERVE--…-BENCH--… "
                 "folders of a sweep root one level down) and were not read; load one of them on its own",
                 count=len(skipped))


def _steps(source: InputSource, entries, run_id: str, prov: Provenance, *, arrays: bool) -> list[StepFacts]:
    base = source.path if source.is_dir else source.path.parent
    steps = []
    for path, doc, element in entries:
        where = f"{path}" + (f" element {element}" if element else "")
        _check(doc, Path(where), arrays=arrays)
        load, unit = _offered(doc, path, prov)
        rid = _run_of(path, run_id, base) if source.is_dir else run_id
        steps.append(
            StepFacts(
                run_id=rid,
                offered_load=load,
                offered_load_unit=unit,
                tiebreak=(doc.get("run_number", -1) if doc.get("run_number") is not None else -1,
                          str(doc.get("date")), str(path), element or 0),
                duration_s=float(doc["duration"]),
                n_requests_reported=int(doc["num_prompts"]),
                source_file=relpath(path, base) + (f"[{element - 1}]" if element else ""),
                payload=(path, doc, element),
                send_window=send_window(doc),
                duration_includes_drain=True,
            )
        )
    how = [w.basis if (w := send_window(e[1])) is not None else "unknown" for e in entries]
    if any(h != "unknown" for h in how):
        prov.add(
            "send_window",
            "vLLM's 'duration' includes the drain (it ends when the last request returns), so completed / duration "
            "is below the request rate even for a healthy server; each step's send window (send_window_s, "
            "drain excluded) is " + "; ".join(f"{k}: {v} step(s)" for k, v in (
                ("num_prompts / request_rate (vLLM's own schedule)", how.count("config")),
                ("from the per-request send times", how.count("measured")),
                ("unknown (max_concurrency, an unbounded or ramped rate)", how.count("unknown"))) if v),
            level="info",
        )
    return number_steps(steps, prov)


# ---------------------------------------------------------------- aggregate load points
def _stats_row(doc: dict[str, Any], path: Path, prov: Provenance) -> dict[str, object]:
    completed = int(doc["completed"])
    row: dict[str, object] = {}
    dropped: set[str] = set()
    for key, value in doc.items():
        m = _STAT.match(key)
        if not m:
            continue
        stat, metric = m.groups()
        if stat == "std":
            continue
        name = _STAT_NAME.get(stat)
        if name is None:
            dropped.add(stat)
            continue
        if value is not None and not isinstance(value, int | float):
            raise BadValueError(f"expected a number in ms, found {value!r}", path=path, field=key)
        row[f"{_METRIC[metric]}_{name}"] = None if value is None or completed == 0 else float(value)
    if dropped:
        prov.add("percentiles_not_kept", f"{path.name}: percentiles {sorted(dropped)} have no load-point column",
                 level="info")
    return row


def _load_aggregate(source: InputSource) -> LoadPointTable:
    prov = new_provenance(source, format=NAME_AGGREGATE, tool=TOOL)
    entries, run_id, files = _collect(source)
    steps = _steps(source, entries, run_id, prov, arrays=False)
    rows = []
    derived = {"input_tokens_per_s"}
    all_failed = []
    ignored_arrays = 0
    for s in steps:
        path, doc, _ = s.payload
        completed = int(doc["completed"])
        n = int(doc["num_prompts"])
        failed = doc.get("failed")
        if failed is None:
            derived.add("n_errors")
            failed = n - completed
        if completed == 0:
            all_failed.append(s.source_file)
        if _has_arrays(doc):
            ignored_arrays += 1
        duration = float(doc["duration"])
        rows.append(
            {
                **step_columns(s),
                "model": doc["model_id"],
                "duration_s": duration,
                "n_requests": n,
                "n_ok": completed,
                "n_errors": int(failed),
                "throughput_rps": float(doc["request_throughput"]),
                "input_tokens_per_s": float(doc["total_input_tokens"]) / duration if duration > 0 else None,
                "output_tokens_per_s": float(doc["output_throughput"]),
                **_stats_row(doc, path, prov),
                **step_window_columns(s),
                "source_file": s.source_file,
            }
        )
    if all_failed:
        prov.add(
            "all_requests_failed",
            f"{len(all_failed)} step(s) completed no request ({', '.join(all_failed)}): vLLM writes 0.0 for every "
            "latency statistic there; read as missing, not as fast",
            count=len(all_failed),
        )
    if ignored_arrays:
        prov.add(
            "per_request_arrays_ignored",
            f"{ignored_arrays} file(s) carry per-request arrays but the folder mixes them with summary-only files; "
            "loaded as load points (load the detailed files on their own for per-request rows)",
            level="info",
            count=ignored_arrays,
        )
    _record_extras([(p, d) for p, d, _ in entries], prov)
    _note_folders(source, entries, prov)
    layouts = {layout_of(d) for _, d, _ in entries}
    return finish_loadpoints(
        rows, source, format=NAME_AGGREGATE, tool=TOOL, tool_version=_one_layout(layouts, prov),
        derived=derived, provenance=prov, options=prov.options, files=files,
    )


def _one_layout(layouts: set[str | None], prov: Provenance) -> str | None:
    known = sorted(x for x in layouts if x)
    if len(known) > 1:
        prov.add("mixed_versions", f"the files come from different vLLM layouts: {known}")
        return "; ".join(known)
    if not known:
        prov.add("version_not_stated", "vLLM writes no version number and the keys match no known layout "
                 "(all required fields are present, so the file was read)", level="info")
    return known[0] if known else None


# ---------------------------------------------------------------- per-request trace
_HTTP_429 = re.compile(r"\b429\b|too many requests", re.IGNORECASE)
_TIMEOUT = re.compile(r"timeout|timed out", re.IGNORECASE)


def status_of_error(text: str) -> str:
    """``rejected`` for HTTP 429, ``timeout`` for a client/server timeout, else ``error``."""
    if _HTTP_429.search(text):
        return "rejected"
    if _TIMEOUT.search(text):
        return "timeout"
    return "error"


def _request_rows(s: StepFacts, prov: Provenance) -> dict[str, list]:
    path, doc, _ = s.payload
    n = int(doc["num_prompts"])
    for key in ARRAYS:
        if not isinstance(doc[key], list) or len(doc[key]) != n:
            found = len(doc[key]) if isinstance(doc[key], list) else type(doc[key]).__name__
            raise BadValueError(f"expected an array of num_prompts={n} entries, found {found}", path=path, field=key)
    cols: dict[str, list] = {k: [] for k in (
        "request_id", "ttft_ms", "latency_ms", "tpot_ms", "itl_ms", "input_tokens", "output_tokens",
        "status", "error", "source_row")}
    stem = Path(path.name.removesuffix(".gz")).stem
    for i in range(n):
        err = doc["errors"][i]
        ok = err in ("", None)
        itls = doc["itls"][i] or []
        ttft_s = doc["ttfts"][i]
        out_len = doc["output_lens"][i]
        cols["request_id"].append(f"{stem}:{i}")
        cols["source_row"].append(i + 1)
        cols["input_tokens"].append(doc["input_lens"][i])
        if ok:
            if not isinstance(ttft_s, int | float) or not all(isinstance(x, int | float) for x in itls):
                raise BadValueError("expected seconds as numbers", path=path, row=i + 1, field="ttfts/itls")
            e2e_s = ttft_s + math.fsum(itls)
            cols["ttft_ms"].append(ttft_s * 1000.0)
            cols["latency_ms"].append(e2e_s * 1000.0)
            cols["itl_ms"].append(math.fsum(itls) / len(itls) * 1000.0 if itls else None)
            cols["tpot_ms"].append((e2e_s - ttft_s) / (out_len - 1) * 1000.0 if out_len and out_len > 1 else None)
            cols["output_tokens"].append(out_len)
            cols["status"].append("ok")
            cols["error"].append(None)
        else:
            # failed requests carry ttft 0 and output_len 0: unknown, never fast
            for k in ("ttft_ms", "latency_ms", "itl_ms", "tpot_ms", "output_tokens"):
                cols[k].append(None)
            cols["status"].append(status_of_error(str(err)))
            cols["error"].append(str(err)[:500])
    if "start_times" in doc:
        prov.add("start_times_not_read", f"{s.source_file}: 'start_times' (newer --save-detailed) is present but its "
                 "clock is not verified on real data; requests are kept without start times", level="info")
    completed = int(doc["completed"])
    n_ok = cols["status"].count("ok")
    if n_ok != completed:
        prov.add("count_mismatch", f"{s.source_file}: {n_ok} requests without error but 'completed' is {completed}")
    return cols


def _load_requests(source: InputSource) -> RequestTrace:
    prov = new_provenance(source, format=NAME_REQUESTS, tool=TOOL)
    entries, run_id, files = _collect(source)
    steps = _steps(source, entries, run_id, prov, arrays=True)
    frames = []
    for s in steps:
        cols = _request_rows(s, prov)
        _, doc, _ = s.payload
        frames.append(
            pl.DataFrame(cols, schema_overrides={"ttft_ms": pl.Float64, "latency_ms": pl.Float64,
                                                 "tpot_ms": pl.Float64, "itl_ms": pl.Float64,
                                                 "input_tokens": pl.Int64, "output_tokens": pl.Int64,
                                                 "error": pl.String, "source_row": pl.Int64})
            .with_columns(
                pl.lit(doc["model_id"]).alias("model"),
                *[pl.lit(v).alias(k) for k, v in step_columns(s).items()],
            )
        )
    frame = pl.concat(frames, how="vertical_relaxed")
    prov.add(
        "no_request_times",
        "vLLM's per-request arrays hold no send or end times: start_s is null (time_origin 'none'); latency_ms is "
        "rebuilt as ttft + sum(itls), itl_ms as mean(itls) and tpot_ms as (latency - ttft)/(output_tokens - 1); "
        "the step durations come from the file's 'duration'",
        level="info",
    )
    _record_extras([(p, d) for p, d, _ in entries], prov)
    _note_folders(source, entries, prov)
    layouts = {layout_of(d) for _, d, _ in entries}
    prov.files = files
    tv = _one_layout(layouts, prov)
    trace = finish_trace(
        frame, source, format=NAME_REQUESTS, tool=TOOL, tool_version=tv,
        derived=("request_id", "latency_ms", "tpot_ms", "itl_ms"), time_origin="none",
        provenance=prov, options=prov.options, steps=step_rows(steps),
    )
    trace.provenance.files = files
    return trace


register(
    FormatSpec(
        name=NAME_REQUESTS,
        tool=TOOL,
        kind="requests",
        needs="a vLLM --save-result JSON (backend, model_id, tokenizer_id, request_rate) WITH per-request arrays "
        "ttfts/itls/input_lens/output_lens/errors, or a folder of them (one file per rate)",
        sniff=sniff_requests,
        load=_load_requests,
        version=version,
    )
)
register(
    FormatSpec(
        name=NAME_AGGREGATE,
        tool=TOOL,
        kind="loadpoints",
        needs="a vLLM --save-result JSON (backend, model_id, tokenizer_id, request_rate) without per-request "
        "arrays, a sweep summary.json array, or a folder of them (incl. SERVE--…-BENCH--…/run=N.json)",
        sniff=sniff_aggregate,
        load=_load_aggregate,
        version=version,
    )
)
