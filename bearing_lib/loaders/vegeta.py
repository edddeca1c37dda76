"""Vegeta results and reports.

- ``vegeta-json`` → request trace: ``vegeta encode --to json`` lines
  ``{attack, seq, code, timestamp (RFC3339Nano, request START), latency (NANOSECONDS), bytes_out,
  bytes_in, error, body, method, url, headers}``; a file or a folder of them (one attack per rate).
- ``vegeta-csv`` → request trace: ``vegeta encode --to csv``, **no header**:
  ``timestamp (unix ns), code, latency (ns), bytes_out, bytes_in, error, base64 body, attack, seq,
  method, url, base64 headers`` (v12.8; older versions stop after ``seq``).
- ``vegeta-text-report`` → load points: ``vegeta report`` text (``Requests [total, rate,
  throughput]`` ...), a file or a folder of them. Latencies are Go durations.
- ``vegeta-jaggr`` → one load point: per-second rows of a ``vegeta encode | jaggr`` pipeline
  (a **DERIVED** file, not Vegeta output): ``{rps, code.hist, latency.{p25,p50,p99} (ns), bytes_*}``.
- ``vegeta-gob``: the native binary ``results.bin`` (a Go gob stream) is recognised only to say
  how to convert it (``vegeta encode --to json``); bearing does not decode gob.

Status: ``code`` 0 is a transport error (client timeout, refused connection), the text is in
``error``; a timeout text (``Client.Timeout``, ``deadline exceeded``, ``timeout``) gives
``timeout``, otherwise ``error``; HTTP 2xx/3xx ``ok`` (Vegeta's own success rule), 429
``rejected``, 408/504 ``timeout``, other codes ``error``. Requests that time out carry latency ≈ the client timeout.

Vegeta writes the attack rate nowhere in its results: bearing reads it from the file name
(``tgi_4qps_60duration_results.json`` → 4 rps, run ``<folder>/tgi``), says so in a finding and
cross-checks it against the rate measured from the timestamps, and against the text report
beside the results when there is one (request and status-code counts).
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import polars as pl

from bearing_lib.common.errors import BadValueError, InputError, UnsupportedVersionError
from bearing_lib.data.loadpoints import LoadPointTable, SendWindow, window_columns
from bearing_lib.data.trace import RequestTrace
from bearing_lib.loaders._common import finish_trace, new_provenance
from bearing_lib.loaders._http_loadtest import (
    parse_go_duration,
    rate_from_name,
    rfc3339_to_epoch_s,
    status_expr,
)
from bearing_lib.loaders._loadtest import finish_loadpoints, iter_json_lines, step_exprs, step_row
from bearing_lib.loaders.registry import FormatSpec, register
from bearing_lib.loaders.source import InputSource

TOOL = "Vegeta"
JSON_KEYS = ("code", "timestamp", "latency", "error")
RATE_PATTERNS = (r"(\d+(?:\.\d+)?)\s*qps", r"(\d+(?:\.\d+)?)\s*rps", r"rate[_-]?(\d+(?:\.\d+)?)")
RATE_TOLERANCE = 0.10
TIMEOUT_WORDS = ("client.timeout", "deadline exceeded", "timeout", "timed out")
REPORT_HEAD = "Requests"


# --------------------------------------------------------------------------- sniffing
def _is_json_results(source: InputSource) -> bool:
    if source.is_dir:
        return False
    obj = source.first_json_line
    return isinstance(obj, dict) and all(k in obj for k in JSON_KEYS) and "seq" in obj


def _is_csv_results(source: InputSource) -> bool:
    if source.is_dir or source.first_json_line is not None:
        return False
    try:
        row = next(csv.reader([source.first_line]))
    except (StopIteration, csv.Error):
        return False
    if len(row) not in (9, 12):
        return False
    return bool(re.fullmatch(r"\d{15,20}", row[0]) and row[1].isdigit() and re.fullmatch(r"\d+", row[2]))


def _is_report(source: InputSource) -> bool:
    if source.is_dir:
        return False
    first = source.first_line
    return first.startswith(REPORT_HEAD) and "[total, rate, throughput]" in first


def _is_jaggr(source: InputSource) -> bool:
    if source.is_dir:
        return False
    obj = source.first_json_line
    return (
        isinstance(obj, dict)
        and "rps" in obj
        and isinstance(obj.get("code"), dict)
        and "hist" in obj["code"]
        and isinstance(obj.get("latency"), dict)
    )


def _is_gob(source: InputSource) -> bool:
    if source.is_dir:
        return False
    head = source.head[:4096]
    return b"Result" in head and b"Attack" in head and b"Latency" in head and b"Timestamp" in head


def _results_in(folder: InputSource) -> list[InputSource]:
    return [c for c in folder.children() if _is_json_results(c) or _is_csv_results(c)]


def sniff_json(source: InputSource) -> bool:
    if source.is_dir:
        kids = [c for c in source.children() if c.suffix in (".json", ".jsonl", ".ndjson")]
        return bool(kids) and all(_is_json_results(c) for c in kids)
    return _is_json_results(source)


def sniff_csv(source: InputSource) -> bool:
    if source.is_dir:
        kids = [c for c in source.children() if c.suffix == ".csv"]
        return bool(kids) and all(_is_csv_results(c) for c in kids) and not any(
            _is_json_results(c) for c in source.children()
        )
    return _is_csv_results(source)


def sniff_report(source: InputSource) -> bool:
    if source.is_dir:
        return any(_is_report(c) for c in source.children("*.txt*")) and not _results_in(source)
    return _is_report(source)


# --------------------------------------------------------------------------- helpers
def _run_and_rate(path: Path) -> tuple[str, float | None]:
    name = path.name
    rate = rate_from_name(name, RATE_PATTERNS)
    prefix = name
    for pat in RATE_PATTERNS:
        m = re.search(pat, name)
        if m:
            prefix = name[: m.start()].rstrip("_-. ") or Path(name).stem
            break
    else:
        prefix = Path(name).stem
    return f"{path.parent.name}/{prefix}", rate


def _status_expr() -> pl.Expr:
    """Status of a result: code 0 by its error text (timeout or error), else by the HTTP code."""
    code = pl.col("code")
    timeout_text = pl.col("error").str.to_lowercase().str.contains("|".join(re.escape(w) for w in TIMEOUT_WORDS))
    return (
        pl.when(code == 0)
        .then(pl.when(timeout_text).then(pl.lit("timeout")).otherwise(pl.lit("error")))
        .otherwise(status_expr(code))
    )


def _read_json_results(src: InputSource) -> list[dict[str, object]]:
    rows = []
    for ln, o in iter_json_lines(src):
        missing = [k for k in JSON_KEYS if k not in o]
        if missing:
            raise UnsupportedVersionError(
                f"line {ln}: a Vegeta JSON result without {missing}", tool=TOOL, version=None, missing=missing,
                path=src.path,
            )
        start = rfc3339_to_epoch_s(str(o["timestamp"]), src.path, ln)
        rows.append(
            {
                "seq": o.get("seq"),
                "start_s": start,
                "latency_ns": int(o["latency"]),
                "code": int(o["code"]),
                "error": str(o.get("error") or ""),
                "source_row": ln,
            }
        )
    return rows


def _read_csv_results(src: InputSource) -> list[dict[str, object]]:
    rows = []
    reader = csv.reader(io.StringIO(src.read_text(), newline=""))
    for ln, r in enumerate(reader, start=1):
        if not r:
            continue
        if len(r) not in (9, 12):
            raise UnsupportedVersionError(
                f"line {ln}: {len(r)} columns, expected 12 (v12.8) or 9 (older)",
                tool=TOOL, version=None, missing=["timestamp..seq"], path=src.path,
            )
        try:
            ts_ns, code, lat_ns = int(r[0]), int(r[1]), int(r[2])
        except ValueError:
            raise BadValueError(
                f"expected integers (unix ns, code, latency ns), found {r[:3]}", path=src.path, row=ln
            ) from None
        rows.append(
            {
                "seq": int(r[8]) if r[8].isdigit() else None,
                "start_s": ts_ns / 1e9,
                "latency_ns": lat_ns,
                "code": code,
                "error": r[5],
                "source_row": ln,
            }
        )
    return rows


def _find_report(results: Path) -> Path | None:
    stem = re.sub(r"_results$", "", Path(results.name).stem)
    cands = [results.parent / f"{stem}.txt", results.parent / f"{Path(results.name).stem}.txt"]
    cands += sorted(results.parent.parent.glob(f"*/{stem}.txt"))
    for c in cands:
        if c.is_file() and _is_report(InputSource(c)):
            return c
    return None


def _load_results(source: InputSource, fmt: str, reader) -> RequestTrace:
    files = (
        [c for c in source.children() if (_is_json_results(c) if fmt == "vegeta-json" else _is_csv_results(c))]
        if source.is_dir
        else [source]
    )
    if not files:
        raise InputError("no Vegeta results in the folder", path=source.path)
    prov = new_provenance(source, format=fmt, tool=TOOL)
    meta = []
    for f in files:
        run_id, rate = _run_and_rate(f.path)
        meta.append((run_id, rate if rate is not None else float("inf"), rate, f))
    meta.sort(key=lambda m: (m[0], m[1], m[3].name))
    parts, steps = [], []
    step_of: dict[str, int] = {}
    name_rates, mismatch, checks, unknown = [], [], [], []
    for run_id, _, rate, f in meta:
        recs = reader(f)
        if not recs:
            raise InputError("the file holds no results", path=f.path)
        step = step_of.get(run_id, 0)
        step_of[run_id] = step + 1
        df = pl.DataFrame(recs, infer_schema_length=None)
        n = df.height
        span = df["start_s"].max() - df["start_s"].min()
        measured = (n - 1) / span if n > 1 and span > 0 else None
        if rate is None:
            unknown.append(f.name)
        else:
            name_rates.append(f.name)
            if measured is not None and abs(measured / rate - 1) > RATE_TOLERANCE:
                mismatch.append(f"{f.name}: name {rate:g} rps, measured {measured:.3g} rps")
        rep = _find_report(f.path)
        reported_n = attack_s = None
        unit = "rps" if rate is not None else None
        if rep is not None:
            r = _parse_report(InputSource(rep))
            reported_n, attack_s = r["total"], r["attack_s"]
            codes = df.group_by("code").len()
            ours = {int(c): int(k) for c, k in codes.iter_rows()}
            ok = ours == r["codes"] and n == r["total"]
            checks.append(
                f"{f.name} vs {rep.name}: {'requests and status codes match' if ok else 'MISMATCH'} "
                f"({n} vs {r['total']} requests; codes {ours} vs {r['codes']})"
            )
            if not ok:
                prov.add("report_mismatch", checks[-1])
        parts.append(
            df.select(
                (pl.lit(f.name + ":") + pl.col("seq").cast(pl.String).fill_null(pl.col("source_row").cast(pl.String)))
                .alias("request_id"),
                pl.col("start_s"),
                (pl.col("start_s") + pl.col("latency_ns") / 1e9).alias("end_s"),
                (pl.col("latency_ns") / 1e6).alias("latency_ms"),
                _status_expr().alias("status"),
                pl.when((pl.col("code") >= 200) & (pl.col("code") < 400))
                .then(None)
                .otherwise(pl.format("{}: {}", pl.col("code"), pl.col("error")))
                .alias("error"),
                *step_exprs(run_id, step, rate, unit),
                pl.col("source_row"),
            )
        )
        steps.append(step_row(run_id, step, rate, unit, duration_s=attack_s, n_requests_reported=reported_n,
                              source_file=str(f.path)))
    if name_rates:
        prov.add(
            "offered_load_from_file_name",
            "Vegeta records the attack rate nowhere in its results: offered_load was read from the file name(s) "
            "and cross-checked against the rate measured from the request timestamps",
            level="info",
        )
    if mismatch:
        prov.add("offered_load_mismatch", "; ".join(mismatch), count=len(mismatch))
    if unknown:
        prov.add("offered_load_unknown", f"no rate in the file name of: {', '.join(unknown)}", count=len(unknown))
    if checks:
        prov.add("report_cross_check", "; ".join(checks), level="info", count=len(checks))
    prov.add("units", "latency read in nanoseconds, converted to ms; timestamp = request start", level="info")
    prov.files = [str(f.path) for *_, f in meta]
    frame = pl.concat(parts, how="vertical_relaxed")
    return finish_trace(
        frame,
        source,
        format=fmt,
        tool=TOOL,
        derived=("end_s", "step", "offered_load", "offered_load_unit", "run_id", "status"),
        timezone="UTC (RFC3339 offsets / unix ns in the file)",
        provenance=prov,
        steps=steps,
    )


def load_json(source: InputSource) -> RequestTrace:
    """``vegeta encode --to json`` results (file or folder) → request trace."""
    return _load_results(source, "vegeta-json", _read_json_results)


def load_csv(source: InputSource) -> RequestTrace:
    """``vegeta encode --to csv`` results (file or folder) → request trace."""
    return _load_results(source, "vegeta-csv", _read_csv_results)


# --------------------------------------------------------------------------- text report
_LINE = re.compile(r"^(?P<label>[A-Za-z][A-Za-z ]*?)\s+\[(?P<keys>[^\]]*)\]\s*(?P<vals>.*)$")
_LAT_KEYS = {"mean": "mean", "50": "p50", "90": "p90", "95": "p95", "99": "p99", "max": "max"}


def _parse_report(src: InputSource) -> dict[str, object]:
    text = src.read_text()
    fields: dict[str, tuple[list[str], str]] = {}
    for line in text.splitlines():
        m = _LINE.match(line.strip())
        if m:
            fields[m.group("label").strip()] = ([k.strip() for k in m.group("keys").split(",")], m.group("vals"))
    need = ["Requests", "Duration", "Latencies", "Success", "Status Codes"]
    missing = [k for k in need if k not in fields]
    if missing:
        raise UnsupportedVersionError(
            "a Vegeta text report layout bearing does not know", tool=TOOL, version=None, missing=missing,
            path=src.path,
        )

    def vals(label: str) -> dict[str, str]:
        keys, v = fields[label]
        parts = [p.strip() for p in v.split(",")]
        if len(parts) != len(keys):
            raise BadValueError(f"{label}: {len(keys)} names but {len(parts)} values ({v!r})", path=src.path,
                                field=label)
        return dict(zip(keys, parts, strict=True))

    try:
        req = vals("Requests")
        dur = vals("Duration")
        lat = vals("Latencies")
        total = int(req["total"])
        out = {
            "total": total,
            "rate": float(req["rate"]),
            "throughput": float(req["throughput"]),
            "total_s": parse_go_duration(dur["total"]),
            "attack_s": parse_go_duration(dur["attack"]),
            "wait_s": parse_go_duration(dur["wait"]),
            "latency_ms": {_LAT_KEYS[k]: parse_go_duration(v) * 1000 for k, v in lat.items() if k in _LAT_KEYS},
            "latency_keys": list(lat),
            "success": float(fields["Success"][1].strip().rstrip("%")) / 100,
        }
    except (KeyError, ValueError) as exc:
        raise BadValueError(f"unreadable report value: {exc}", path=src.path) from None
    codes: dict[int, int] = {}
    for tok in fields["Status Codes"][1].split():
        c, _, k = tok.partition(":")
        codes[int(c)] = int(k)
    out["codes"] = codes
    err = text.split("Error Set:", 1)
    out["errors"] = [e.strip() for e in err[1].splitlines() if e.strip()] if len(err) == 2 else []
    return out


def load_report(source: InputSource) -> LoadPointTable:
    """``vegeta report`` text (file or folder of them) → one load point per report."""
    files = [c for c in source.children("*.txt*") if _is_report(c)] if source.is_dir else [source]
    prov = new_provenance(source, format="vegeta-text-report", tool=TOOL)
    meta = []
    for f in files:
        run_id, rate = _run_and_rate(f.path)
        meta.append((run_id, rate if rate is not None else float("inf"), rate, f))
    meta.sort(key=lambda m: (m[0], m[1], m[3].name))
    rows: list[dict[str, object]] = []
    step_of: dict[str, int] = {}
    layouts, notes, mismatch = set(), [], []
    for run_id, _, rate, f in meta:
        r = _parse_report(f)
        step = step_of.get(run_id, 0)
        step_of[run_id] = step + 1
        total = int(r["total"])
        n_ok = sum(k for c, k in r["codes"].items() if 200 <= c < 400)
        if sum(r["codes"].values()) != total:
            notes.append(f"{f.name}: status codes add up to {sum(r['codes'].values())}, not {total}")
        if total and abs(n_ok / total - r["success"]) > 0.00005:
            notes.append(f"{f.name}: success ratio {r['success']:.2%} but 2xx/3xx codes give {n_ok / total:.2%}")
        if rate is not None and abs(r["rate"] / rate - 1) > RATE_TOLERANCE:
            mismatch.append(f"{f.name}: name {rate:g} rps, report rate {r['rate']:g} rps")
        layouts.add(", ".join(r["latency_keys"]))
        row: dict[str, object] = {
            "run_id": run_id,
            "step": step,
            "offered_load": rate,
            "offered_load_unit": "rps" if rate is not None else None,
            "duration_s": r["total_s"],
            "n_requests": total,
            "n_ok": n_ok,
            "n_errors": total - n_ok,
            "throughput_rps": r["throughput"],
            "achieved_rate_rps": r["rate"],
            # Duration (attack) = latest - earliest start, Wait after it (lib/metrics.go Close): total = drain incl.
            # n starts span n - 1 intervals: the send window is Duration × n / (n − 1), so that n / window is the
            # rate sent at (Vegeta's own Rate, n / Duration, reads 1.017 for 60 requests at 1 rps)
            **window_columns(SendWindow.of(
                r["attack_s"] * total / (total - 1) if r["attack_s"] is not None and total > 1 else r["attack_s"],
                "measured", "Duration (attack) × n / (n − 1): latest − earliest request start over n − 1 intervals"),
                True),
            "source_file": str(f.path),
        }
        row |= {f"latency_ms_{k}": v for k, v in r["latency_ms"].items()}
        rows.append(row)
    prov.add("offered_load_from_file_name",
             "offered_load read from the file name (Vegeta's report has only the measured rate, kept as "
             "achieved_rate_rps); throughput_rps as written is Vegeta's (successes / (Duration + Wait): the drain "
             "included); the limits read the successes over the send window (Duration × n / (n − 1)) where no queue "
             "built up, else over the duration less the unloaded latency (limits.curves.completion_span)",
             level="info")
    if mismatch:
        prov.add("offered_load_mismatch", "; ".join(mismatch), count=len(mismatch))
    if notes:
        prov.add("report_inconsistent", "; ".join(notes), count=len(notes))
    version = None
    if layouts == {"mean, 50, 95, 99, max"}:
        version = "< 12.8 (latency set mean, 50, 95, 99, max)"
    elif layouts == {"min, mean, 50, 90, 95, 99, max"}:
        version = "12.8+ (latency set min, mean, 50, 90, 95, 99, max)"
    prov.add("latency_layout", f"Latencies [{'; '.join(sorted(layouts))}]", level="info")
    read = {f.path for f in files}
    ignored = [c.name for c in source.children() if c.path not in read] if source.is_dir else []
    if ignored:
        prov.add("not_read", f"not read: {', '.join(ignored)} (gob .bin results need `vegeta encode`)", level="info")
    return finish_loadpoints(
        rows, source, format="vegeta-text-report", tool=TOOL, tool_version=version, provenance=prov,
        derived=("offered_load", "n_ok", "n_errors"), files=[str(m[3].path) for m in meta],
    )


# --------------------------------------------------------------------------- jaggr (DERIVED)
def load_jaggr(source: InputSource) -> LoadPointTable:
    """Per-second ``jaggr`` rows of a Vegeta pipeline (DERIVED) → one pooled load point."""
    prov = new_provenance(source, format="vegeta-jaggr", tool="Vegeta | jaggr (derived)")
    recs = []
    for ln, line in enumerate(source.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        o = json.loads(line)
        hist = (o.get("code") or {}).get("hist")
        if "rps" not in o or not isinstance(hist, dict):
            raise UnsupportedVersionError(
                f"line {ln}: not a jaggr row of the expected shape", tool="jaggr", version=None,
                missing=[k for k in ("rps", "code.hist") if (k == "rps" and "rps" not in o) or k == "code.hist"],
                path=source.path,
            )
        recs.append((ln, float(o["rps"]), {int(k): int(v) for k, v in hist.items()}, o.get("latency") or {}))
    n = int(sum(r[1] for r in recs))
    in_hist = sum(sum(h.values()) for _, _, h, _ in recs)
    ok = sum(v for _, _, h, _ in recs for k, v in h.items() if 200 <= k < 400)
    dur = float(len(recs))
    p99 = [lat["p99"] / 1e6 for *_, lat in recs if "p99" in lat]
    prov.add(
        "derived_file",
        "a jaggr aggregation of `vegeta encode` output (DERIVED, not written by Vegeta): one row per second; "
        "duration = number of rows (s); requests = sum of rps",
        level="info",
    )
    prov.add(
        "percentiles_not_poolable",
        f"per-second latency percentiles cannot be pooled into run percentiles; per-second p99 ranges "
        f"{min(p99):.3g}–{max(p99):.3g} ms (latency in ns in the file)" if p99 else "no latency percentiles",
    )
    if in_hist != n:
        prov.add("codes_outside_hist", f"{n - in_hist} requests are in no code bucket (code 0 = transport error)",
                 count=n - in_hist)
    row = {
        "run_id": source.path.parent.name,
        "step": 0,
        "offered_load": None,
        "duration_s": dur,
        "n_requests": n,
        "n_ok": ok,
        "n_errors": n - ok,
        "throughput_rps": ok / dur if dur else None,
        "achieved_rate_rps": n / dur if dur else None,
        **window_columns(SendWindow.of(dur, "measured", "seconds with a jaggr row (requests counted per second)"),
                         False),
        "source_file": str(source.path),
    }
    return finish_loadpoints(
        [row], source, format="vegeta-jaggr", tool="Vegeta | jaggr (derived)", provenance=prov,
        derived=("duration_s", "n_requests", "n_ok", "n_errors", "throughput_rps", "achieved_rate_rps"),
    )


def load_gob(source: InputSource) -> None:
    """Refuse Vegeta's binary gob results with the command that converts them."""
    raise InputError(
        "this is Vegeta's binary results file (a Go gob stream), which bearing does not decode; convert it with "
        f"`vegeta encode --to json {source.name} > {Path(source.name).stem}.json` and load the JSON",
        path=source.path,
    )


register(FormatSpec(name="vegeta-json", tool=TOOL, kind="requests",
                    needs="vegeta encode --to json lines {attack, seq, code, timestamp, latency, ...}, or a folder",
                    sniff=sniff_json, load=load_json))
register(FormatSpec(name="vegeta-csv", tool=TOOL, kind="requests",
                    needs="vegeta encode --to csv (no header): unix-ns timestamp, code, latency-ns, ...",
                    sniff=sniff_csv, load=load_csv))
register(FormatSpec(name="vegeta-text-report", tool=TOOL, kind="loadpoints",
                    needs="vegeta report text starting 'Requests [total, rate, throughput]', or a folder",
                    sniff=sniff_report, load=load_report))
register(FormatSpec(name="vegeta-jaggr", tool="Vegeta | jaggr (derived)", kind="loadpoints",
                    needs="jaggr lines {rps, code: {hist}, latency: {p25, p50, p99}}",
                    sniff=_is_jaggr, load=load_jaggr))
register(FormatSpec(name="vegeta-gob", tool=TOOL, kind="requests",
                    needs="Vegeta binary results (gob); recognised only to explain the conversion",
                    sniff=_is_gob, load=load_gob))
