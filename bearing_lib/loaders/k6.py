"""Grafana k6 output: ``--out json`` samples, ``--summary-export`` and ``handleSummary`` JSON.

Three formats:

- ``k6-ndjson`` → request trace. ``--out json`` writes one JSON object per line: ``Metric``
  declarations and ``Point`` samples. One HTTP request emits ``http_reqs``,
  ``http_req_duration``, ``http_req_blocked/connecting/tls_handshaking/sending/waiting/receiving``
  and ``http_req_failed`` Points that share the same time and tags; bearing joins them into
  one row (the k-th Point of a metric at one (time, tags) goes to the k-th request there).
  k6 stamps these Points with the request's **end** time (``Trail.EndTime``), in RFC3339
  with the machine's **local offset** (``+05:30``) or ``Z``: ``end_s`` is that instant in
  UTC; ``start_s`` = end − (``http_req_blocked`` + ``http_req_duration``), derived
  (blocked spans GetConn → GotConn, so it contains DNS, connecting and TLS).
  ``latency_ms`` = ``http_req_duration`` (k6's definition: sending + waiting + receiving, no
  connection set-up). ``http_req_waiting`` is time to first byte: it becomes ``ttft_ms``
  only with ``ttfb_as_ttft=True`` (right for a streaming endpoint that sends the first
  token with the headers; wrong otherwise). Status: ``http_req_failed`` 1 → failed (k6's
  ``expected_response``), then HTTP 429 → ``rejected``, k6 error code 1050 (request timeout)
  or HTTP 408/504 → ``timeout``, status 0 with the error "context canceled" (an iteration k6
  interrupted at ``gracefulStop``) → ``cancelled`` (neither success nor failure), else
  ``error``; without ``http_req_failed`` (k6 < 0.31) the status code decides.
  The load level is the ``vus`` gauge (sampled each second): VU plateaus held at least
  ``min_plateau_s`` (10 s) become steps (unit ``concurrency``); ``setup``/``teardown``
  requests are in no step.
- ``k6-summary-export`` (legacy ``--summary-export``) and ``k6-handle-summary``
  (``handleSummary(data)`` JSON) → one load point: the summary has no per-stage breakdown.
  ``http_req_failed`` is a Rate whose ``passes`` count the **failed** requests (non-zero
  samples). Threshold results are inverted between the two: legacy ``{expr: true}`` means
  the threshold was **crossed** (failed); handleSummary ``{expr: {"ok": false}}`` means failed.
"""

from __future__ import annotations

import json
from collections import defaultdict

import polars as pl

from bearing_lib.common.errors import BadValueError, InputError, UnsupportedVersionError
from bearing_lib.data.loadpoints import LoadPointTable
from bearing_lib.data.provenance import Provenance
from bearing_lib.data.trace import RequestTrace
from bearing_lib.loaders._common import finish_trace, new_provenance
from bearing_lib.loaders._http_loadtest import (
    DEFAULT_MIN_PLATEAU_S,
    assign_steps,
    cut_plateaus,
    plateau_steps,
    rfc3339_to_epoch_s,
)
from bearing_lib.loaders._loadtest import finish_loadpoints, iter_json_lines, stats_to_columns
from bearing_lib.loaders.registry import FormatSpec, register
from bearing_lib.loaders.source import InputSource

TOOL = "Grafana k6"
HTTP_METRICS = (
    "http_reqs",
    "http_req_duration",
    "http_req_blocked",
    "http_req_connecting",
    "http_req_tls_handshaking",
    "http_req_sending",
    "http_req_waiting",
    "http_req_receiving",
    "http_req_failed",
)
TIMEOUT_CODES = {"1050"}
"""k6 error codes meaning the request timed out (1050: request timeout)."""
FIRST_TICK_S = 1.5
"""How far before the first ``vus`` sample the first plateau reaches (the gauge ticks every 1 s)."""
TREND_STATS = {"avg": "mean", "med": "p50", "p(90)": "p90", "p(95)": "p95", "p(99)": "p99", "max": "max"}
SUMMARY_MAX_BYTES = 50 * 1024 * 1024


# --------------------------------------------------------------------------- sniffing
def sniff_ndjson(source: InputSource) -> bool:
    if source.is_dir:
        return False
    obj = source.first_json_line
    if not isinstance(obj, dict):
        return False
    return obj.get("type") in ("Metric", "Point") and "metric" in obj and isinstance(obj.get("data"), dict)


def _whole_json(source: InputSource) -> dict | None:
    if source.is_dir or not source.head_text.lstrip().startswith("{"):
        return None
    if source.path.stat().st_size > SUMMARY_MAX_BYTES or sniff_ndjson(source):
        return None  # NDJSON, or too big to be a summary
    try:
        doc = source.json
    except InputError:
        return None
    return doc if isinstance(doc, dict) else None


def _summary_kind(source: InputSource) -> str | None:
    doc = _whole_json(source)
    if not doc or not isinstance(doc.get("metrics"), dict) or "root_group" not in doc:
        return None
    metrics = doc["metrics"]
    if any(isinstance(v, dict) and "values" in v and "type" in v for v in metrics.values()):
        return "handle"
    return "legacy"


def sniff_summary_export(source: InputSource) -> bool:
    return _summary_kind(source) == "legacy"


def sniff_handle_summary(source: InputSource) -> bool:
    return _summary_kind(source) == "handle"


# --------------------------------------------------------------------------- per-sample NDJSON
def _error_text(tags: dict) -> str:
    text = f"status {tags.get('status', '?')}"
    text += f", k6 error {tags['error_code']}" if tags.get("error_code") else ""
    return text + (f": {tags['error']}" if tags.get("error") else "")


CANCELLED_TEXT = "context canceled"
"""k6's ``error`` tag of a request its own iteration's context cancelled: an iteration interrupted at the end of
``gracefulStop`` (or the test) ends its in-flight request with Go's ``context.Canceled``, whose Points the transport
still emits with status 0 and the default error code 1000 (``lib/netext/httpext/transport.go``
``measureAndEmitMetrics``, ``error_codes.go``)."""


def _status(failed: float | None, status: str | None, error_code: str | None, error: str | None = None) -> str:
    code = int(status) if status and status.isdigit() else None
    if failed != 0 and not code and error and CANCELLED_TEXT in error.lower():
        return "cancelled"
    if failed is None:  # k6 < 0.31: no http_req_failed, judge by the status code
        if code and 200 <= code < 400:
            return "ok"
    elif failed == 0:
        return "ok"
    if code == 429:
        return "rejected"
    if error_code in TIMEOUT_CODES or code in (408, 504):
        return "timeout"
    return "error"


def load_ndjson(
    source: InputSource, *, ttfb_as_ttft: bool = False, min_plateau_s: float = DEFAULT_MIN_PLATEAU_S
) -> RequestTrace:
    """k6 ``--out json`` samples → one row per HTTP request, steps from VU plateaus."""
    prov = new_provenance(source, format="k6-ndjson", tool=TOOL)
    groups: dict[tuple[str, str], dict[str, list[tuple[float, int]]]] = defaultdict(lambda: defaultdict(list))
    first_line: dict[tuple[str, str], int] = {}
    tags_of: dict[tuple[str, str], dict] = {}
    vus_t: list[float] = []
    vus_v: list[float] = []
    offsets: set[str] = set()
    declared: set[str] = set()
    for ln, obj in iter_json_lines(source):
        typ = obj.get("type")
        if typ == "Metric":
            declared.add(str(obj.get("metric")))
            continue
        if typ != "Point":
            raise UnsupportedVersionError(
                f"line {ln}: expected type 'Metric' or 'Point', found {typ!r}",
                tool=TOOL,
                version=None,
                missing=["type"],
                path=source.path,
            )
        data = obj.get("data") or {}
        metric = obj.get("metric")
        if "time" not in data or "value" not in data:
            raise UnsupportedVersionError(
                f"line {ln}: a Point without data.time / data.value",
                tool=TOOL,
                version=None,
                missing=[k for k in ("data.time", "data.value") if k.split(".")[1] not in data],
                path=source.path,
            )
        t_text = str(data["time"])
        if metric == "vus":
            vus_t.append(rfc3339_to_epoch_s(t_text, source.path, ln))
            vus_v.append(float(data["value"]))
            continue
        if metric not in HTTP_METRICS:
            continue
        offsets.add("Z" if t_text.endswith("Z") else t_text[-6:])
        tags = data.get("tags") or {}
        key = (t_text, json.dumps(tags, sort_keys=True))
        groups[key][metric].append((float(data["value"]), ln))
        first_line.setdefault(key, ln)
        tags_of[key] = tags
    recs = []
    for key, by_metric in groups.items():
        n = len(by_metric.get("http_reqs", []))
        if n == 0:
            raise BadValueError(
                "HTTP timing Points without an http_reqs Point at the same time and tags",
                path=source.path,
                row=first_line[key],
            )
        tags = tags_of[key]
        end = rfc3339_to_epoch_s(key[0], source.path, first_line[key])
        for k in range(n):
            def val(m: str, k: int = k, by_metric: dict = by_metric) -> float | None:
                xs = by_metric.get(m, [])
                return xs[k][0] if k < len(xs) else None

            dur = val("http_req_duration")
            # http_req_blocked (GetConn -> GotConn) already contains DNS, connecting and TLS
            blocked = val("http_req_blocked")
            if blocked is None:
                blocked = sum(v for v in (val("http_req_connecting"), val("http_req_tls_handshaking")) if v is not None)
            failed = val("http_req_failed")
            st = _status(failed, tags.get("status"), tags.get("error_code"), tags.get("error"))
            group = tags.get("group") or ""
            recs.append(
                {
                    "source_row": by_metric["http_reqs"][k][1],
                    "end_s": end,
                    "start_s": end - ((dur or 0.0) + blocked) / 1000.0,
                    "latency_ms": dur,
                    "ttfb_ms": val("http_req_waiting"),
                    "status": st,
                    "error": None if st == "ok" else _error_text(tags),
                    "group": group,
                    "name": tags.get("name"),
                }
            )
    if not recs:
        raise InputError("the file holds no http_reqs Points (no HTTP request)", path=source.path)
    df = pl.DataFrame(recs, infer_schema_length=None).sort("source_row")
    # steps from VU plateaus
    plateaus = cut_plateaus(vus_t, vus_v, min_hold_s=min_plateau_s, skip_levels=(0,))
    if plateaus and vus_t and plateaus[0].start_s <= min(vus_t):
        # k6 samples the gauge on a 1 s ticker, first one tick after the test starts: when the first
        # sample opens a plateau, the requests of that first tick belong to it (1.5 s: a tick plus slack
        # for the reconstructed start times)
        p0 = plateaus[0]
        plateaus[0] = type(p0)(step=p0.step, level=p0.level, start_s=p0.start_s - FIRST_TICK_S, end_s=p0.end_s)
    step, lvl = assign_steps(df["start_s"].to_numpy(), plateaus)
    in_setup = df["group"].str.starts_with("::setup") | df["group"].str.starts_with("::teardown")
    import numpy as np
    step = np.where(in_setup.to_numpy(), -1, step)
    lvl = np.where(in_setup.to_numpy(), np.nan, lvl)
    df = df.with_columns(
        pl.Series("step", step).replace(-1, None).cast(pl.Int64),
        pl.Series("offered_load", lvl).fill_nan(None),
    ).with_columns(
        pl.when(pl.col("step").is_not_null()).then(pl.lit("concurrency")).otherwise(None).alias("offered_load_unit"),
        pl.lit(source.path.parent.name).alias("run_id"),
        pl.col("source_row").cast(pl.String).alias("request_id"),
    )
    n_out = int(df["step"].is_null().sum())
    prov.add(
        "steps",
        f"VU plateaus held ≥ {min_plateau_s:g} s: "
        + (", ".join(f"{p.level:g} VUs for {p.duration_s:g} s" for p in plateaus) or "none")
        + f"; {n_out} of {df.height} requests are in no step (ramps"
        + (f", {int(in_setup.sum())} setup/teardown" if in_setup.any() else "")
        + ")",
        level="info" if n_out < df.height else "warning",
    )
    prov.add(
        "timestamps",
        f"Point times carry offset(s) {sorted(offsets)}; converted to UTC. k6 stamps a request's Points at its end: "
        "start_s = end − (blocked + duration); blocked includes DNS, connect and TLS",
        level="info",
    )
    if "http_req_failed" not in declared and df.height:
        prov.add("no_http_req_failed", "no http_req_failed metric (k6 < 0.31): status judged from the status code")
    cols = [
        "request_id",
        "start_s",
        "end_s",
        "latency_ms",
        "status",
        "error",
        "run_id",
        "step",
        "offered_load",
        "offered_load_unit",
        "source_row",
    ]
    frame = df.select(cols)
    derived = ["request_id", "start_s", "step", "offered_load", "offered_load_unit", "run_id"]
    if ttfb_as_ttft:
        frame = frame.with_columns(df["ttfb_ms"].alias("ttft_ms"))
        derived.append("ttft_ms")
        prov.add(
            "ttfb_as_ttft",
            "ttft_ms is k6's http_req_waiting (time to first byte), as asked (ttfb_as_ttft=True)",
            level="info",
        )
    return finish_trace(
        frame,
        source,
        format="k6-ndjson",
        tool=TOOL,
        derived=tuple(derived),
        timezone="UTC (converted from the RFC3339 offsets in the file)",
        provenance=prov,
        options={"ttfb_as_ttft": ttfb_as_ttft, "min_plateau_s": min_plateau_s},
        steps=plateau_steps(plateaus, run_id=source.path.parent.name, unit="concurrency",
                            source_file=str(source.path)) or None,
    )


# --------------------------------------------------------------------------- summaries
def _metric(doc: dict, name: str, handle: bool) -> dict:
    m = doc["metrics"].get(name)
    if not isinstance(m, dict):
        return {}
    return (m.get("values") or {}) if handle else m


def _no_samples(m: dict, handle: bool, name: str = "") -> bool:
    """A metric that saw no sample (a submetric whose tag never matched). k6 still runs its thresholds at the end of
    the test (``evaluateThresholds(false, …)`` in metrics/engine/engine.go) on the empty sink, which formats as zeros
    (metrics/sink.go): a rate as passes 0, fails 0, rate 0 (``checks{step:…}``, ``rate>0.95`` ok); a counter as
    count 0; a trend as min = max = avg = med = p(90) = p(95) = 0 (``http_req_duration{step:…}``, ``p(95)<1500``
    ok). A trend whose every statistic is 0 is read as empty only for a submetric (a name with ``{…}``, a tag that
    may never match): the summary has no count to tell it from samples that were all exactly 0, which a whole
    metric's can be (``http_req_tls_handshaking`` against a plain-HTTP target)."""
    v = (m.get("values") or {}) if handle else m
    if not isinstance(v, dict):
        return False
    if "passes" in v and "fails" in v:
        return (v.get("passes") or 0) + (v.get("fails") or 0) == 0
    kind = m.get("type")
    if kind == "counter" or (kind is None and "count" in v and "rate" in v):  # the legacy export names no type
        return v.get("count") == 0
    stats = [v.get(k) for k in ("min", "max", "avg", "med")]
    if "{" in name and kind in (None, "trend") and all(isinstance(x, int | float) for x in stats):
        return all(x == 0 for k, x in v.items() if k != "thresholds" and isinstance(x, int | float))
    return False


def _thresholds(doc: dict, handle: bool, prov: Provenance) -> None:
    failed, passed, empty = [], [], []
    for name, m in doc["metrics"].items():
        th = (m or {}).get("thresholds") if isinstance(m, dict) else None
        if not isinstance(th, dict):
            continue
        for expr, v in th.items():
            if handle:
                bad = isinstance(v, dict) and v.get("ok") is False  # ok: false = failed
            else:
                bad = v is True  # legacy: true = crossed (failed)
            (failed if bad else empty if _no_samples(m, handle, name) else passed).append(f"{name}: {expr}")
    if failed or passed or empty:
        how = "handleSummary ({'ok': false} = failed)" if handle else "legacy summary-export (true = crossed/failed)"
        prov.add(
            "thresholds",
            f"k6 thresholds read as {how}: failed {failed or 'none'}; passed {passed or 'none'}"
            + (f"; not evaluated (no sample: k6 marks them ok) {empty}" if empty else ""),
            level="warning" if failed else "info",
            count=len(failed),
        )


def _load_summary(source: InputSource, handle: bool) -> LoadPointTable:
    fmt = "k6-handle-summary" if handle else "k6-summary-export"
    doc = source.json
    prov = new_provenance(source, format=fmt, tool=TOOL)
    reqs = _metric(doc, "http_reqs", handle)
    missing = [k for k in ("http_reqs.count", "http_reqs.rate") if k.split(".")[1] not in reqs]
    if "http_req_duration" not in doc["metrics"]:
        missing.append("http_req_duration")
    if missing:
        raise UnsupportedVersionError(
            "a k6 summary without the HTTP metrics bearing needs", tool=TOOL, version=None, missing=missing,
            path=source.path,
        )
    n = int(reqs["count"])
    rate = float(reqs["rate"])
    derived = ["n_ok", "throughput_rps"]
    run_ms = (doc.get("state") or {}).get("testRunDurationMs") if handle else None
    if isinstance(run_ms, (int, float)):
        duration = float(run_ms) / 1000.0
    else:
        duration = n / rate if rate > 0 else None
        derived.append("duration_s")
    failed = _metric(doc, "http_req_failed", handle)
    if "passes" in failed:
        n_err = int(failed["passes"])  # passes = non-zero samples = FAILED requests
        if "fails" in failed and int(failed["passes"]) + int(failed["fails"]) != n:
            prov.add(
                "failed_count_mismatch",
                f"http_req_failed passes+fails = {int(failed['passes']) + int(failed['fails'])}, http_reqs = {n}",
            )
        prov.add(
            "http_req_failed_passes",
            f"http_req_failed is a Rate whose 'passes' count FAILED requests: {n_err} of {n} failed",
            level="info",
        )
    else:
        n_err = None
        prov.add("no_http_req_failed", "no http_req_failed metric: error count unknown")
    vus = _metric(doc, "vus", handle)
    peak = vus.get("max")
    row: dict[str, object] = {
        "run_id": source.path.parent.name,
        "step": 0 if peak is not None else None,
        "offered_load": peak,
        "offered_load_unit": "concurrency" if peak is not None else None,
        "duration_s": duration,
        "n_requests": n,
        "n_ok": n - n_err if n_err is not None else None,
        "n_errors": n_err,
        "throughput_rps": (n - n_err) / duration if (n_err is not None and duration) else None,
        "achieved_rate_rps": rate,
        "source_file": str(source.path),
    }
    # the latency percentiles of successful requests, as bearing reads every tool: k6's own sub-metric
    # http_req_duration{expected_response:true} (added with http_req_failed for "the http timing metrics for
    # successful requests", grafana/k6#1828; printed under http_req_duration in every end-of-test summary since
    # v0.31). The whole trend counts failed requests too (a 60 s timeout pushed p95 to 60,000 ms where the
    # successful requests' was 47,021: mn1809's cfc3091, a new user's case, round 23); it is read only when the
    # summary has no sub-metric, and said so.
    ok_only = _metric(doc, "http_req_duration{expected_response:true}", handle)
    ok_empty = (bool(ok_only) and _no_samples(doc["metrics"].get("http_req_duration{expected_response:true}")
                                              or {}, handle, "http_req_duration{expected_response:true}")) \
        or (n_err is not None and n > 0 and n_err >= n)  # every request failed (aicube's legacy export: 20 of 20)
    ok_trend = bool(ok_only) and not ok_empty
    whole = _metric(doc, "http_req_duration", handle)
    if ok_empty:
        # the sub-metric saw no sample: no request succeeded, so there is no latency of a successful request (the
        # whole trend is the failed requests' own; review finding, round 23)
        prov.add("no_successful_latency", "no request succeeded (http_req_failed, or an empty "
                 "http_req_duration{expected_response:true}), so the latency columns are empty: the failed "
                 "requests' durations (http_req_duration) are not a latency of the service")
    else:
        row |= stats_to_columns(ok_only if ok_trend else whole, "latency_ms", TREND_STATS)
    if peak is not None:
        prov.add(
            "offered_load_peak_vus",
            f"offered_load is the peak VU count ({peak:g}); the summary has no per-stage breakdown, so a ramped "
            "run is one load point",
            level="info",
        )
    else:
        prov.add("no_vus", "the summary has no vus metric: offered load unknown")
    if ok_trend:
        shown = ", ".join(f"{k} {v:.6g} ms" for k, v in whole.items() if isinstance(v, (int, float)))
        prov.add(
            "latency_successful_only",
            "latency_ms_* is k6's http_req_duration{expected_response:true}: successful requests only, as bearing "
            f"reads every tool; over all requests, failed ones included (http_req_duration): {shown}",
            level="info",
        )
    elif n_err and not ok_empty:
        prov.add(
            "latency_includes_failures",
            f"latency_ms_* is k6's http_req_duration over ALL requests, the {n_err:,} failed ones included (fast "
            "errors pull its percentiles down, timeouts push them up): the summary has no "
            "http_req_duration{expected_response:true} trend of the successful requests alone, so a latency "
            "clause is judged on both",
        )
    _thresholds(doc, handle, prov)
    if handle:
        unit = (doc.get("options") or {}).get("summaryTimeUnit")
        if unit not in (None, "", "ms"):
            raise UnsupportedVersionError(
                f"summaryTimeUnit {unit!r}: bearing reads handleSummary trends in ms only",
                tool=TOOL, version=None, missing=[], path=source.path,
            )
    return finish_loadpoints([row], source, format=fmt, tool=TOOL, provenance=prov, derived=derived)


def load_summary_export(source: InputSource) -> LoadPointTable:
    """Legacy ``--summary-export`` JSON → one load point."""
    return _load_summary(source, handle=False)


def load_handle_summary(source: InputSource) -> LoadPointTable:
    """``handleSummary(data)`` JSON → one load point."""
    return _load_summary(source, handle=True)


register(
    FormatSpec(
        name="k6-ndjson",
        tool=TOOL,
        kind="requests",
        needs="k6 --out json lines: {\"type\": \"Metric\"|\"Point\", \"metric\", \"data\"}",
        sniff=sniff_ndjson,
        load=load_ndjson,
    )
)
register(
    FormatSpec(
        name="k6-summary-export",
        tool=TOOL,
        kind="loadpoints",
        needs="k6 --summary-export JSON: {metrics: {name: {count, rate | avg, med, ...}}, root_group}",
        sniff=sniff_summary_export,
        load=load_summary_export,
    )
)
register(
    FormatSpec(
        name="k6-handle-summary",
        tool=TOOL,
        kind="loadpoints",
        needs="k6 handleSummary JSON: {metrics: {name: {type, contains, values}}, root_group, state, options}",
        sniff=sniff_handle_summary,
        load=load_handle_summary,
    )
)
