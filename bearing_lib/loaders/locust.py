"""Locust CSV output (``locust --csv PREFIX``): aggregates only, no per-request rows.

Files of one run share a prefix: ``PREFIX_stats.csv`` (whole run, one row per endpoint and
an ``Aggregated`` row), ``PREFIX_stats_history.csv`` (every second; per endpoint too with
``--csv-full-history``), ``PREFIX_failures.csv`` (``Method, Name, Error, Occurrences`` and,
in newer 2.x, ``First Seen, Last Seen``) and ``PREFIX_exceptions.csv`` (client-side script
errors with tracebacks). Times are in ms. Three formats are registered:

- ``locust-stats`` → one load point for the whole run (no user count: offered load null);
- ``locust-stats-history`` → one load point per **user-count plateau** (see
  :func:`~bearing_lib.loaders._http_loadtest.cut_plateaus`: a user count held for at least
  ``min_plateau_s`` seconds, 10 by default; the ramp between plateaus and 0-user periods
  are in no step). Requests, failures and the mean response time per plateau are exact,
  from differences of the cumulative ``Total ...`` columns; the max only when it rose
  during the plateau. Percentiles are **not** given per plateau: Locust's history keeps
  them only for a rolling window of the last seconds, which no plateau equals.
- ``locust-csv-set`` → a folder of Locust CSVs, or a failures/exceptions CSV (read with
  its set): history plateaus per prefix (the whole-run stats row when no plateau holds),
  with failures and exceptions summarised in findings.

Custom rows that are metrics, not requests (default: ``TTFT`` and ``E2E``, which LLM
test scripts fire as ``STREAM`` events) are **never counted as requests or throughput**:
their response times fill ``ttft_ms_*`` / ``latency_ms_*``. Locust's percentiles are
rounded (exact below 100 ms, to 10 ms below 1 s, to 100 ms below 10 s, to 1 s above):
a finding says so.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Mapping
from pathlib import Path

from bearing_lib.common.errors import InputError, InsufficientDataError, SchemaError, UnsupportedVersionError
from bearing_lib.data.loadpoints import LoadPointTable, SendWindow, window_columns
from bearing_lib.data.provenance import Provenance
from bearing_lib.loaders._common import new_provenance
from bearing_lib.loaders._http_loadtest import DEFAULT_MIN_PLATEAU_S, cut_plateaus
from bearing_lib.loaders._loadtest import finish_loadpoints
from bearing_lib.loaders.registry import FormatSpec, register
from bearing_lib.loaders.source import InputSource

TOOL = "Locust"
STATS_COLS = (
    "Type",
    "Name",
    "Request Count",
    "Failure Count",
    "Median Response Time",
    "Average Response Time",
    "Min Response Time",
    "Max Response Time",
    "Requests/s",
    "50%",
    "90%",
    "95%",
    "99%",
)
HISTORY_COLS = (
    "Timestamp",
    "User Count",
    "Type",
    "Name",
    "Total Request Count",
    "Total Failure Count",
    "Total Average Response Time",
    "Total Max Response Time",
)
FAILURES_COLS = ("Method", "Name", "Error", "Occurrences")
EXCEPTIONS_COLS = ("Count", "Message", "Traceback", "Nodes")
DEFAULT_METRIC_ROWS: dict[str, str] = {"TTFT": "ttft_ms", "E2E": "latency_ms"}
"""Row names that are custom metrics (case-insensitive) → the canonical metric they fill."""
PCT = {"50%": "p50", "90%": "p90", "95%": "p95", "99%": "p99"}
ROUNDING_NOTE = (
    "Locust percentiles are rounded (exact below 100 ms, to 10 ms below 1 s, to 100 ms below 10 s, "
    "to 1 s above), so p50..p99 carry that rounding; mean and max are exact"
)


def _cols(source: InputSource) -> list[str]:
    try:
        return next(csv.reader([source.first_line]))
    except (StopIteration, csv.Error):
        return []


def _kind(source: InputSource) -> str | None:
    """Which Locust CSV a file is: stats, history, failures, exceptions, legacy-stats, or None."""
    if source.is_dir or source.suffix != ".csv":
        return None
    cols = _cols(source)
    if cols[:4] == ["Timestamp", "User Count", "Type", "Name"]:
        return "history"
    if cols[:3] == ["Type", "Name", "Request Count"]:
        return "stats"
    if cols[:2] in (["Method", "Name"], ["Type", "Name"]) and "# requests" in cols:
        return "legacy-stats"
    if cols[:4] == list(FAILURES_COLS):
        return "failures"
    if cols == list(EXCEPTIONS_COLS):
        return "exceptions"
    return None


def sniff_stats(source: InputSource) -> bool:
    return _kind(source) in ("stats", "legacy-stats")


def sniff_history(source: InputSource) -> bool:
    return _kind(source) == "history"


def sniff_set(source: InputSource) -> bool:
    if source.is_dir:
        return any(_kind(c) in ("stats", "history") for c in source.children("*.csv*"))
    return _kind(source) in ("failures", "exceptions")


# --------------------------------------------------------------------------- reading
def _read(source: InputSource) -> list[dict[str, str]]:
    text = source.read_text()
    return list(csv.DictReader(io.StringIO(text, newline="")))


def _num(row: Mapping[str, str], col: str, src: InputSource, line: int) -> float | None:
    v = (row.get(col) or "").strip()
    if v in ("", "N/A"):
        return None
    try:
        return float(v)
    except ValueError:
        raise InputError(f"expected a number, found {v!r}", path=src.path, row=line, field=col) from None


def _require(cols: list[str], needed: tuple[str, ...], src: InputSource, what: str) -> None:
    missing = [c for c in needed if c not in cols]
    if missing:
        raise UnsupportedVersionError(
            f"a Locust {what} layout bearing does not know", tool=TOOL, version=None, missing=missing, path=src.path
        )


def _metric_map(metric_rows: Mapping[str, str] | None) -> dict[str, str]:
    m = DEFAULT_METRIC_ROWS if metric_rows is None else metric_rows
    return {k.lower(): v for k, v in m.items()}


def _stats_row(src: InputSource, metric_rows: Mapping[str, str] | None, prov: Provenance,
               run_id: str) -> dict[str, object]:
    cols = _cols(src)
    if "# requests" in cols:
        raise UnsupportedVersionError(
            "a Locust stats CSV from before 1.0 (columns '# requests', '# failures')",
            tool=TOOL,
            version="< 1.0",
            missing=[c for c in STATS_COLS if c not in cols],
            path=src.path,
        )
    _require(cols, STATS_COLS, src, "stats CSV")
    rows = _read(src)
    mm = _metric_map(metric_rows)
    counted, metrics, agg = [], {}, None
    for i, r in enumerate(rows, start=2):
        name = r["Name"]
        if name == "Aggregated" and not r["Type"]:
            agg = (i, r)
        elif name.lower() in mm:
            metrics[mm[name.lower()]] = (i, r)
        else:
            counted.append((i, r))
    if agg is None:
        raise SchemaError("no 'Aggregated' row (empty Type, Name 'Aggregated')", path=src.path, field="Name")
    n_req = sum(int(_num(r, "Request Count", src, i) or 0) for i, r in counted)
    n_err = sum(int(_num(r, "Failure Count", src, i) or 0) for i, r in counted)
    ai, ar = agg
    agg_n = _num(ar, "Request Count", src, ai) or 0
    agg_rps = _num(ar, "Requests/s", src, ai) or 0
    duration = agg_n / agg_rps if agg_rps > 0 else None
    row: dict[str, object] = {
        "run_id": run_id,
        "step": 0,  # the whole run as its one step (a limits JSON step needs a number); its load is unknown
        "offered_load": None,
        "offered_load_unit": None,
        "duration_s": duration,
        "n_requests": n_req,
        "n_ok": n_req - n_err,
        "n_errors": n_err,
        "throughput_rps": (n_req - n_err) / duration if duration else None,
        "achieved_rate_rps": n_req / duration if duration else None,
        # closed loop, users stopped without waiting (runners.py stop_users force=True): no drain; the span
        # Locust divides by (stats.py total_rps: to the last completion) is not a send window
        **window_columns(None, False),
        "source_file": str(src.path),
    }

    def stats_of(metric: str, i: int, r: Mapping[str, str]) -> None:
        row[f"{metric}_mean"] = _num(r, "Average Response Time", src, i)
        row[f"{metric}_max"] = _num(r, "Max Response Time", src, i)
        for c, s in PCT.items():
            row[f"{metric}_{s}"] = _num(r, c, src, i)

    for metric, (i, r) in metrics.items():
        stats_of(metric, i, r)
    if "latency_ms" not in metrics:
        if not metrics:
            stats_of("latency_ms", ai, ar)  # Aggregated == the counted rows
        elif len(counted) == 1:
            stats_of("latency_ms", *counted[0])
        else:
            tot = sum((_num(r, "Request Count", src, i) or 0) for i, r in counted)
            s = sum((_num(r, "Request Count", src, i) or 0) * (_num(r, "Average Response Time", src, i) or 0)
                    for i, r in counted)
            row["latency_ms_mean"] = s / tot if tot else None
            row["latency_ms_max"] = max((_num(r, "Max Response Time", src, i) or 0) for i, r in counted)
            prov.add(
                "latency_percentiles_unavailable",
                "several endpoints and custom metric rows: the Aggregated row mixes them, so only the mean and max "
                "response time of the real endpoints are given",
            )
    if metrics:
        names = [r["Name"] for _, (_, r) in metrics.items()]
        prov.add(
            "metric_rows",
            f"rows {names} are custom metrics (not requests): excluded from request counts and throughput; their "
            f"times fill {sorted(metrics)}; Locust's own Aggregated row counts them ({int(agg_n)} vs {n_req} requests)",
            level="info",
        )
    if "ttft_ms" in metrics and "latency_ms" in metrics:
        # a first-token row counting more events than the end-to-end row: requests that streamed a first token and
        # never ended, cut off when the run stopped its users (Locust stops them without waiting, runners.py
        # stop_users; a stream cut off fires no request event, so Locust counts it neither ok nor failed)
        (ti, tr), (ei, er) = metrics["ttft_ms"], metrics["latency_ms"]
        n_first, n_end = _num(tr, "Request Count", src, ti) or 0, _num(er, "Request Count", src, ei) or 0
        if n_first > n_end:
            prov.add(
                "requests_cut_off",
                f"{src.name}: {int(n_first - n_end)} requests streamed a first token ({tr['Name']}: {int(n_first)}) "
                f"but never ended ({er['Name']}: {int(n_end)}): most likely cut off when the run stopped its users, "
                f"counted by Locust neither ok nor failed and left out of {er['Name']}'s latency, which leans toward "
                "the requests that finished (run longer, or let the last requests end before stopping)",
            )
    row["_counted"] = [r["Name"] for _, r in counted]
    return row


def _history_rows(
    src: InputSource, metric_rows: Mapping[str, str] | None, min_plateau_s: float, prov: Provenance, run_id: str
) -> list[dict[str, object]]:
    cols = _cols(src)
    _require(cols, HISTORY_COLS, src, "stats history CSV")
    raw = _read(src)
    if not raw:
        raise InputError("the history CSV has a header but no rows", path=src.path)
    mm = _metric_map(metric_rows)
    ts_agg, users = [], []
    series: dict[tuple[str, str], list[tuple[float, float, float, float, float]]] = {}
    for i, r in enumerate(raw, start=2):
        t = _num(r, "Timestamp", src, i)
        u = _num(r, "User Count", src, i)
        key = (r["Type"], r["Name"])
        if r["Name"] == "Aggregated" and not r["Type"]:
            ts_agg.append(t)
            users.append(u)
        series.setdefault(key, []).append(
            (
                t,
                _num(r, "Total Request Count", src, i) or 0.0,
                _num(r, "Total Failure Count", src, i) or 0.0,
                _num(r, "Total Average Response Time", src, i) or 0.0,
                _num(r, "Total Max Response Time", src, i) or 0.0,
            )
        )
    per_name = {k: v for k, v in series.items() if not (k[1] == "Aggregated" and not k[0])}
    counted_keys = [k for k in per_name if k[1].lower() not in mm]
    metric_keys = {mm[k[1].lower()]: k for k in per_name if k[1].lower() in mm}
    if not per_name:
        counted_keys = [("", "Aggregated")]
        prov.add(
            "aggregated_only",
            "the history has only Aggregated rows (no --csv-full-history): per-plateau counts are Locust's "
            "Aggregated totals, which would include any custom metric events",
        )
    plateaus = cut_plateaus(ts_agg, users, min_hold_s=min_plateau_s, skip_levels=(0,))
    if not plateaus:
        raise InsufficientDataError(
            f"{src.path}: no user count was held for {min_plateau_s:g} s or more (the run is a continuous ramp), "
            "so there is no load step; pass min_plateau_s=... to cut shorter plateaus, or load PREFIX_stats.csv "
            "for the whole run"
        )

    def at(key: tuple[str, str], t: float) -> tuple[float, float, float, float]:
        """Cumulative (count, failures, sum of response times, max) at the last row with ts <= t."""
        s = series[key]
        import numpy as np
        times = np.fromiter((x[0] for x in s), float)
        j = int(np.searchsorted(times, t, side="right")) - 1
        if j < 0:
            return 0.0, 0.0, 0.0, 0.0
        _, n, f, avg, mx = s[j]
        return n, f, avg * n, mx

    out: list[dict[str, object]] = []
    gaps: list[str] = []
    for p in plateaus:
        t_last = p.end_s - 1  # last history row inside the plateau
        t_before = p.start_s - 1  # last row before it
        dur = p.duration_s
        before = [t for t in ts_agg if t is not None and t <= t_before]
        if before and max(before) < t_before - 0.5:
            # the history has no row for the second before the plateau (Locust skips seconds under load): the last
            # row before it lies in the ramp, and counting from it would add the ramp's requests (a 30,000-user
            # plateau read 39,412 requests where its own rows hold 39,186). Count from the plateau's first row
            # instead, over the seconds after it
            t_before = p.start_s
            dur = t_last - p.start_s
            gaps.append(f"{p.level:g} users")
        n = f = 0.0
        for k in counted_keys:
            a, b = at(k, t_last), at(k, t_before)
            n += a[0] - b[0]
            f += a[1] - b[1]
        row: dict[str, object] = {
            "run_id": run_id,
            "step": p.step,
            "offered_load": p.level,
            "offered_load_unit": "concurrency",
            "duration_s": dur,
            "n_requests": int(round(n)),
            "n_ok": int(round(n - f)),
            "n_errors": int(round(f)),
            "throughput_rps": (n - f) / dur,
            "achieved_rate_rps": n / dur,
            **window_columns(SendWindow.of(dur, "measured", "plateau of the stats history (first to last row at "
                                           "the user count)"), False),
            "source_file": str(src.path),
        }
        groups = dict(metric_keys)
        if "latency_ms" not in groups and len(counted_keys) == 1:
            groups["latency_ms"] = counted_keys[0]
        for metric, key in groups.items():
            a, b = at(key, t_last), at(key, t_before)
            dn = a[0] - b[0]
            row[f"{metric}_mean"] = (a[2] - b[2]) / dn if dn > 0 else None
            row[f"{metric}_max"] = a[3] if a[3] > b[3] else None
        out.append(row)
    prov.add(
        "plateaus",
        f"{len(plateaus)} user-count plateau(s) held ≥ {min_plateau_s:g} s became steps ("
        + ", ".join(f"{p.level:g} users for {p.duration_s:g} s" for p in plateaus)
        + "); ramp seconds and 0-user periods are in no step. Per plateau: requests, failures and mean response "
        "time exact from the cumulative totals; max only when it rose during the plateau; percentiles not "
        "available (Locust keeps them for a rolling window only)"
        + (f"; the history has no row for the second before the plateau(s) at {', '.join(gaps)} (the row before "
           "lies in the ramp): counted from the plateau's first row, its first second left out" if gaps else ""),
        level="info",
    )
    if metric_keys and not any(x.code == "metric_rows" for x in prov.findings):
        prov.add(
            "metric_rows",
            f"rows {[metric_keys[m][1] for m in sorted(metric_keys)]} are custom metrics (not requests): excluded "
            f"from request counts and throughput; their times fill {sorted(metric_keys)}",
            level="info",
        )
    return out


_CODE_RE = re.compile(r"\b([1-5]\d\d)\b(?: (?:Server|Client) Error|:)")


def _failure_class(error: str) -> str:
    m = _CODE_RE.search(error)
    if m:
        code = int(m.group(1))
        return "rejected (429)" if code == 429 else f"HTTP {code}"
    low = error.lower()
    if "timeout" in low or "timed out" in low:
        return "timeout"
    m2 = re.match(r"^([A-Za-z_][\w.]*)\(", error)
    return m2.group(1) if m2 else "other"


def _failures_finding(src: InputSource, prov: Provenance, metric_rows: Mapping[str, str] | None) -> int:
    cols = _cols(src)
    _require(cols, FAILURES_COLS, src, "failures CSV")
    rows = _read(src)
    layout = "newer (First Seen, Last Seen)" if "First Seen" in cols else "older (no First/Last Seen)"
    mm = _metric_map(metric_rows)
    by: dict[str, int] = {}
    total = 0
    for i, r in enumerate(rows, start=2):
        k = int(_num(r, "Occurrences", src, i) or 0)
        if r["Name"].lower() in mm:
            continue
        total += k
        c = _failure_class(r["Error"])
        by[c] = by.get(c, 0) + k
    detail = ", ".join(f"{k}: {v}" for k, v in sorted(by.items(), key=lambda kv: -kv[1])) or "none"
    prov.add(
        "failures",
        f"{src.name} ({layout} layout): {total} failed requests by cause: {detail}. The status code is only "
        "inside the error text",
        level="info",
        count=total,
    )
    return total


def _exceptions_finding(src: InputSource, prov: Provenance) -> None:
    cols = _cols(src)
    _require(cols, EXCEPTIONS_COLS, src, "exceptions CSV")
    rows = _read(src)
    if not rows:
        return
    total = sum(int(float(r["Count"] or 0)) for r in rows)
    top = sorted(rows, key=lambda r: -float(r["Count"] or 0))[:3]
    prov.add(
        "client_exceptions",
        f"{src.name}: {total} client-side script exceptions (errors in the test script, not requests), e.g. "
        + "; ".join(f"{r['Message'][:80]!r} ×{r['Count']}" for r in top),
        count=total,
    )


def _sibling(src: InputSource, suffix: str) -> InputSource | None:
    m = re.match(r"^(.*)_(stats|stats_history|failures|exceptions)\.csv$", src.name)
    if not m:
        return None
    for name in (f"{m.group(1)}_{suffix}.csv", f"{m.group(1)}_{suffix}.csv.gz"):
        p = src.path.parent / name
        if p.is_file():
            return InputSource(p)
    return None


def _prefix(src: InputSource) -> str:
    m = re.match(r"^(.*)_(stats|stats_history|failures|exceptions)\.csv$", src.name)
    return m.group(1) if m else Path(src.name).stem


def _add_common(prov: Provenance) -> None:
    prov.add("percentiles_rounded", ROUNDING_NOTE, level="info")


def load_stats(
    source: InputSource, *, metric_rows: Mapping[str, str] | None = None
) -> LoadPointTable:
    """``PREFIX_stats.csv`` → one whole-run load point (offered load unknown)."""
    prov = new_provenance(source, format="locust-stats", tool=TOOL)
    run_id = f"{source.path.parent.name}/{_prefix(source)}"
    row = _stats_row(source, metric_rows, prov, run_id)
    row.pop("_counted")
    prov.add(
        "no_user_count",
        "the stats CSV does not record the user count: offered load unknown; load PREFIX_stats_history.csv "
        "or the folder for user-count steps",
        level="info",
    )
    _add_common(prov)
    files = [str(source.path)]
    for suf in ("failures", "exceptions"):
        sib = _sibling(source, suf)
        if sib is not None:
            (_failures_finding(sib, prov, metric_rows) if suf == "failures" else _exceptions_finding(sib, prov))
            files.append(str(sib.path))
    return finish_loadpoints(
        [row], source, format="locust-stats", tool=TOOL, provenance=prov,
        derived=("duration_s", "throughput_rps", "achieved_rate_rps", "n_ok"), files=files,
        options={"metric_rows": dict(metric_rows or DEFAULT_METRIC_ROWS)},
    )


def load_history(
    source: InputSource,
    *,
    metric_rows: Mapping[str, str] | None = None,
    min_plateau_s: float = DEFAULT_MIN_PLATEAU_S,
) -> LoadPointTable:
    """``PREFIX_stats_history.csv`` → one load point per user-count plateau."""
    prov = new_provenance(source, format="locust-stats-history", tool=TOOL)
    run_id = f"{source.path.parent.name}/{_prefix(source)}"
    rows = _history_rows(source, metric_rows, min_plateau_s, prov, run_id)
    _add_common(prov)
    return finish_loadpoints(
        rows, source, format="locust-stats-history", tool=TOOL, provenance=prov,
        derived=("step", "offered_load", "duration_s", "n_requests", "n_ok", "n_errors", "throughput_rps",
                 "achieved_rate_rps", "latency_ms_mean", "ttft_ms_mean", "latency_ms_max", "ttft_ms_max"),
        files=[str(source.path)],
        options={"metric_rows": dict(metric_rows or DEFAULT_METRIC_ROWS), "min_plateau_s": min_plateau_s},
    )


def load_set(
    source: InputSource,
    *,
    metric_rows: Mapping[str, str] | None = None,
    min_plateau_s: float = DEFAULT_MIN_PLATEAU_S,
) -> LoadPointTable:
    """A folder of Locust CSVs (or one failures/exceptions file, read with its set) → load points."""
    prov = new_provenance(source, format="locust-csv-set", tool=TOOL)
    if source.is_dir:
        children = source.children("*.csv*")
    else:
        children = [c for c in InputSource(source.path.parent).children("*.csv*") if _prefix(c) == _prefix(source)]
        prov.add("read_with_set", f"{source.name} is part of a Locust CSV set: the set {_prefix(source)}_* was read",
                 level="info")
    by_prefix: dict[str, dict[str, InputSource]] = {}
    ignored = []
    for c in children:
        k = _kind(c)
        if k in ("stats", "history", "failures", "exceptions"):
            by_prefix.setdefault(_prefix(c), {})[k] = c
        elif k == "legacy-stats":
            _stats_row(c, metric_rows, prov, "")  # raises UnsupportedVersionError
        else:
            ignored.append(c.name)
    rows: list[dict[str, object]] = []
    files: list[str] = []
    for prefix, kinds in sorted(by_prefix.items()):
        run_id = f"{(source.path if source.is_dir else source.path.parent).name}/{prefix}"
        stats_row = None
        if "stats" in kinds:
            stats_row = _stats_row(kinds["stats"], metric_rows, prov, run_id)
            files.append(str(kinds["stats"].path))
        got: list[dict[str, object]] = []
        if "history" in kinds:
            files.append(str(kinds["history"].path))
            try:
                got = _history_rows(kinds["history"], metric_rows, min_plateau_s, prov, run_id)
            except InsufficientDataError as exc:
                prov.add("no_plateau", f"{prefix}: {exc}; the whole-run stats row is used instead")
        if got:
            if stats_row is not None:
                total = sum(int(r["n_requests"]) for r in got)
                if total > int(stats_row["n_requests"]):
                    prov.add(
                        "history_exceeds_stats",
                        f"{prefix}: plateaus count {total} requests, more than the stats CSV's "
                        f"{stats_row['n_requests']}",
                    )
            rows += got
        elif stats_row is not None:
            stats_row.pop("_counted")
            rows.append(stats_row)
        if "failures" in kinds:
            files.append(str(kinds["failures"].path))
            nf = _failures_finding(kinds["failures"], prov, metric_rows)
            if stats_row is not None:
                stats_fail = int(stats_row["n_errors"])
                if nf != stats_fail:
                    prov.add(
                        "failures_mismatch",
                        f"{prefix}: failures CSV counts {nf} failed requests, the stats CSV {stats_fail}",
                    )
        if "exceptions" in kinds:
            files.append(str(kinds["exceptions"].path))
            _exceptions_finding(kinds["exceptions"], prov)
    if not rows:
        raise InputError("no Locust stats or stats_history CSV in the set", path=source.path)
    if ignored:
        prov.add("not_read", f"files that are not Locust CSVs were not read: {', '.join(ignored)}", level="info")
    _add_common(prov)
    return finish_loadpoints(
        rows, source, format="locust-csv-set", tool=TOOL, provenance=prov,
        derived=("step", "offered_load", "duration_s", "n_requests", "n_ok", "n_errors", "throughput_rps",
                 "achieved_rate_rps"),
        files=files,
        options={"metric_rows": dict(metric_rows or DEFAULT_METRIC_ROWS), "min_plateau_s": min_plateau_s},
    )


register(
    FormatSpec(
        name="locust-stats",
        tool=TOOL,
        kind="loadpoints",
        needs="PREFIX_stats.csv: header Type,Name,Request Count,Failure Count,...",
        sniff=sniff_stats,
        load=load_stats,
    )
)
register(
    FormatSpec(
        name="locust-stats-history",
        tool=TOOL,
        kind="loadpoints",
        needs="PREFIX_stats_history.csv: header Timestamp,User Count,Type,Name,...",
        sniff=sniff_history,
        load=load_history,
    )
)
register(
    FormatSpec(
        name="locust-csv-set",
        tool=TOOL,
        kind="loadpoints",
        needs="a folder of Locust CSVs, or PREFIX_failures.csv / PREFIX_exceptions.csv beside PREFIX_stats*.csv",
        sniff=sniff_set,
        load=load_set,
    )
)
