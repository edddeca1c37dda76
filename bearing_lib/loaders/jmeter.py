"""Apache JMeter JTL results in CSV (with a header, or without one plus a column map).

Columns are configurable in JMeter (``jmeter.save.saveservice.*``), so bearing always reads
the header (``timeStamp, elapsed, label, responseCode, responseMessage, threadName, dataType,
success, failureMessage, bytes, sentBytes, grpThreads, allThreads, URL, Latency, IdleTime,
Connect``) and needs only ``timeStamp``, ``elapsed``, ``label`` and ``success``. The delimiter
is read from the header (``,``, ``;``, tab or ``|``).

Units and meaning: ``timeStamp`` epoch **ms**, the sample **start** (the shipped
``jmeter.properties`` sets ``sampleresult.timestamp.start=true``; pass ``timestamp="end"``
for a JMeter configured otherwise); ``elapsed`` (→ ``latency_ms``), ``Latency`` (time to
first byte; → ``ttft_ms`` only with ``ttfb_as_ttft=True``) and ``Connect`` in ms.

- Status: ``success`` true → ``ok``; false → 429 ``rejected``, 408/504 or a timeout text
  (``SocketTimeout``, ``timed out``) ``timeout``, else ``error`` (a 200 that failed an assertion
  is an ``error``). ``responseCode`` can be non-numeric
  (``Non HTTP response code: javax.net.ssl.SSLException``); it is kept in ``error`` with the
  failure or response message.
- Transaction Controller parent rows (``responseMessage`` "Number of samples in transaction :
  N, number of failing samples : M") duplicate their children's time: they are **not
  requests**, so they are left out (and counted in a finding).
- Load level: ``allThreads`` (active threads in all thread groups) = concurrency. Thread
  ramps are cut into steps at plateaus (see ``cut_plateaus``: the per-second modal thread
  count held ≥ ``min_plateau_s``, 10 s by default); requests outside a plateau have no step.
- Several invocations appended to one file (``jmeter -l results.jtl`` appends): a silence of at least
  ``IDLE_RUN_BREAK_S`` (120 s), and 10 times the median time between sample starts (a test's own think time does
  not split it), with no sample in flight (no sample started, none still running; ``split_runs=False`` keeps
  one run) splits the
  file into runs, ``<folder>``, ``<folder>#2``, … (a finding lists them), and each run is cut into steps on its
  own: a plateau never spans the silence, and a later invocation is not read as a recovery step of an earlier one.
- A truncated last line (a test killed mid-write) is dropped with a finding.

Files without a header (e.g. the legacy pipe-delimited layout of 2015) are recognised by
``jmeter-jtl-noheader`` and need ``columns=[...]`` (JMeter field names, in file order) and,
if not a comma, ``delimiter=``; bearing does not guess a map.

**XML JTL** (``jmeter-jtl-xml``; ``jmeter.save.saveservice.output_format=xml``):
``<testResults version="1.2">`` holding one ``<httpSample>`` or ``<sample>`` element per
sample, with the CSV fields as attributes: ``ts`` timeStamp, ``t`` elapsed, ``lt`` Latency,
``ct`` Connect, ``it`` IdleTime, ``s`` success, ``lb`` label, ``rc`` responseCode, ``rm``
responseMessage, ``tn`` threadName, ``dt`` dataType, ``by`` bytes, ``sby`` sentBytes, ``ng``
grpThreads, ``na`` allThreads, ``sc`` SampleCount, ``ec`` ErrorCount, ``hn`` Hostname; the URL
is the text of a ``<java.net.URL>`` child, a failed assertion's text the ``failureMessage`` of
an ``<assertionResult>`` child with ``<failure>true</failure>`` (or ``<error>true</error>``).
The same rules as the CSV then apply. Nesting: a Transaction Controller written as a parent
sample ("Generate parent sample") holds its requests as child samples: the parent is left
out and its children are the requests; child samples of an ordinary sample (redirects,
embedded resources) are part of that sample's time and are not requests of their own. A file
cut while JMeter wrote it (no ``</testResults>``) keeps the samples before the cut, with a
finding. The row of an error message is the sample's number in the file (1-based).
XML is parsed with the standard library's expat parser (entity expansion is bounded by
expat ≥ 2.4; external entities are not fetched), streamed so large files stay small in memory.
"""

from __future__ import annotations

import csv
import io
import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from typing import TYPE_CHECKING

import polars as pl

from bearing_lib.common.errors import BadValueError, InputError, ParameterError, UnsupportedVersionError
from bearing_lib.data.trace import RequestTrace
from bearing_lib.loaders._common import finish_trace, new_provenance
from bearing_lib.loaders._http_loadtest import (
    DEFAULT_MIN_PLATEAU_S,
    assign_steps,
    cut_plateaus,
    plateau_steps,
)
from bearing_lib.loaders.registry import FormatSpec, register
from bearing_lib.loaders.source import InputSource

if TYPE_CHECKING:
    import numpy as np

TOOL = "Apache JMeter"
IDLE_RUN_BREAK_S = 120.0
"""A silence this long with no sample in flight splits a JTL into runs (invocations appended to one file)."""
IDLE_TYPICAL_MULTIPLE = 10.0
"""... and this many times the median time between sample starts (a test's own think time or slow schedule)."""
REQUIRED = ("timeStamp", "elapsed", "label", "success")
KNOWN = (
    "timeStamp", "elapsed", "label", "responseCode", "responseMessage", "threadName", "dataType", "success",
    "failureMessage", "bytes", "sentBytes", "grpThreads", "allThreads", "URL", "Latency", "IdleTime", "Connect",
    "SampleCount", "ErrorCount", "Hostname", "Encoding", "Filename",
)
TC_RE = r"^Number of samples in transaction : \d+, number of failing samples : \d+"
TIMEOUT_RE = r"(?i)(timed? ?out|SocketTimeoutException|ConnectTimeoutException)"
DELIMS = (",", "\t", ";", "|")
LEGACY_HINT = (
    "timeStamp|elapsed|label|responseCode|threadName|success|bytes|grpThreads|allThreads|Latency|SampleCount|"
    "ErrorCount|URL"
)


def _delimiter(line: str) -> str | None:
    for d in DELIMS:
        cols = line.split(d)
        if "timeStamp" in cols and "elapsed" in cols:
            return d
    return None


def sniff_header(source: InputSource) -> bool:
    if source.is_dir or source.suffix not in (".jtl", ".csv", ".txt", ""):
        return False
    return _delimiter(source.first_line) is not None


def _noheader_delimiter(line: str) -> str | None:
    for d in DELIMS:
        cols = line.split(d)
        if (
            len(cols) >= 5
            and re.fullmatch(r"1\d{12}", cols[0] or "")
            and cols[1].isdigit()
            and any(c in ("true", "false") for c in cols)
        ):
            return d
    return None


def sniff_noheader(source: InputSource) -> bool:
    if source.is_dir or source.suffix not in (".jtl", ".csv", ".txt", ""):
        return False
    return _noheader_delimiter(source.first_line) is not None


def _truncated_last(text: str, sep: str, n_cols: int) -> bool:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if len(lines) < 2:
        return False
    try:
        last = next(csv.reader([lines[-1]], delimiter=sep))
    except csv.Error:
        return True
    return len(last) < n_cols


def _read(
    source: InputSource, *, sep: str, columns: Sequence[str] | None, has_header: bool
) -> tuple[pl.DataFrame, bool]:
    text = source.read_text()
    try:
        raw = pl.read_csv(
            io.BytesIO(text.encode()),
            separator=sep,
            has_header=has_header,
            new_columns=list(columns) if columns else None,
            infer_schema=False,
            quote_char='"',
        )
    except pl.exceptions.NoDataError as exc:
        raise InputError("the file is empty", path=source.path) from exc
    except (pl.exceptions.ComputeError, pl.exceptions.SchemaError, pl.exceptions.ShapeError) as exc:
        raise InputError(f"not a readable JTL CSV: {exc}", path=source.path) from exc
    first = 2 if has_header else 1
    raw = raw.with_columns((pl.int_range(pl.len(), dtype=pl.Int64) + first).alias("_line"))
    truncated = _truncated_last(text, sep, len(raw.columns) - 1)
    if truncated:
        raw = raw.head(raw.height - 1)
    return raw, truncated


def _ints(raw: pl.DataFrame, col: str, source: InputSource) -> pl.Series:
    s = raw[col].str.strip_chars()
    out = s.cast(pl.Int64, strict=False)
    bad = s.is_not_null() & (s != "") & out.is_null()
    if bad.any():
        i = int(bad.arg_max())
        hint = " (a formatted date: set jmeter.save.saveservice.timestamp_format=ms)" if col == "timeStamp" else ""
        raise BadValueError(
            f"expected a whole number, found {s[i]!r}{hint}", path=source.path, row=int(raw["_line"][i]), field=col
        )
    return out


def _load(
    source: InputSource,
    *,
    sep: str,
    columns: Sequence[str] | None,
    has_header: bool,
    fmt: str,
    ttfb_as_ttft: bool,
    min_plateau_s: float,
    timestamp: str,
    split_runs: bool = True,
) -> RequestTrace:
    if timestamp not in ("start", "end"):
        raise ParameterError(f"timestamp must be 'start' or 'end', got {timestamp!r}")
    raw, truncated = _read(source, sep=sep, columns=columns, has_header=has_header)
    prov = new_provenance(source, format=fmt, tool=TOOL)
    if truncated:
        prov.add("truncated_last_line", "the last line has fewer fields than the header (the file was cut while "
                 "JMeter wrote it): dropped", count=1)
    return _finish(source, raw, prov, fmt=fmt, ttfb_as_ttft=ttfb_as_ttft, min_plateau_s=min_plateau_s,
                   timestamp=timestamp, columns=columns, split_runs=split_runs)


ONE_SAMPLE_THREADS = 10
"""A step whose distinct threads number at least this many times its thread count, at about one sample each, ran
its thread group as an arrival schedule (:func:`_one_sample_threads`)."""


def _one_sample_threads(frame: pl.DataFrame, prov) -> None:  # noqa: ANN001 - the loader's Provenance
    """A thread group whose every thread sends one sample and ends (a thread per request, started on a ramp-up)
    holds about one thread at a time while it sends many requests a second: its load is an arrival rate, not the
    concurrency its ``allThreads`` reads. Said as a finding (ionninja's run: 10,000 threads of one sample each over
    59 s, about 167 req/s arriving, read "1 concurrency"); the steps stay on the thread axis."""
    if "thread_name" not in frame.columns or frame["thread_name"].is_null().all():
        return
    per = (frame.filter(pl.col("step").is_not_null() & pl.col("thread_name").is_not_null())
           .group_by("run_id", "step")
           .agg(pl.len().alias("n"), pl.col("thread_name").n_unique().alias("threads_seen"),
                pl.col("offered_load").first().alias("level"),
                (pl.col("start_s").max() - pl.col("start_s").min()).alias("span_s"))
           .sort("run_id", "step"))
    said = [f"step {r['step']} (read at {r['level']:g} thread(s)): {r['threads_seen']:,} threads sent {r['n']:,} "
            f"samples in {r['span_s']:.0f} s, about {r['n'] / r['span_s']:.3g} req/s arriving"
            for r in per.iter_rows(named=True)
            if r["level"] and r["span_s"] and r["span_s"] > 0 and r["threads_seen"] >= ONE_SAMPLE_THREADS * r["level"]
            and r["n"] <= 1.5 * r["threads_seen"]]
    if said:
        prov.add("one_sample_threads",
                 "threads that send about one sample each and end (a thread per request): the thread group is an "
                 "arrival schedule, and the step's load is its arrival rate, not the thread count it is read at: "
                 + "; ".join(said) + ". The limits stay on the thread axis; the plan reads the completed rate",
                 level="warning", count=len(said))


def _finish(
    source: InputSource,
    raw: pl.DataFrame,
    prov,
    *,
    fmt: str,
    ttfb_as_ttft: bool,
    min_plateau_s: float,
    timestamp: str,
    columns: Sequence[str] | None = None,
    split_runs: bool = True,
) -> RequestTrace:
    """Samples as JTL CSV columns (text; ``_line`` = the row or sample number) → request trace."""
    if timestamp not in ("start", "end"):
        raise ParameterError(f"timestamp must be 'start' or 'end', got {timestamp!r}")
    missing = [c for c in REQUIRED if c not in raw.columns]
    if missing:
        raise UnsupportedVersionError(
            "a JMeter JTL without the columns bearing needs (check jmeter.save.saveservice.* settings)",
            tool=TOOL, version=None, missing=missing, path=source.path,
        )
    if raw.height == 0:
        raise InputError("the JTL has no sample rows", path=source.path)
    ts = _ints(raw, "timeStamp", source)
    el = _ints(raw, "elapsed", source)
    succ = raw["success"].str.strip_chars().str.to_lowercase()
    bad = ~succ.is_in(["true", "false"])
    if bad.any():
        i = int(bad.arg_max())
        raise BadValueError(f"expected true or false, found {raw['success'][i]!r}", path=source.path,
                            row=int(raw["_line"][i]), field="success")

    def col(name: str) -> pl.Series:
        return raw[name] if name in raw.columns else pl.Series(name, [None] * raw.height, dtype=pl.String)

    msg = col("responseMessage").fill_null("")
    is_tc = msg.str.contains(TC_RE)
    n_tc = int(is_tc.sum())
    code = col("responseCode").fill_null("")
    fmsg = col("failureMessage").fill_null("")
    start_ms = ts if timestamp == "start" else ts - el
    frame = pl.DataFrame(
        {
            "request_id": raw["_line"].cast(pl.String),
            "start_s": start_ms.cast(pl.Float64) / 1000.0,
            "latency_ms": el.cast(pl.Float64),
            "ttfb_ms": _ints(raw, "Latency", source).cast(pl.Float64) if "Latency" in raw.columns else None,
            "success": succ == "true",
            "code": code,
            "text": pl.select(pl.when(fmsg != "").then(fmsg).otherwise(msg)).to_series(),
            "threads": _ints(raw, "allThreads", source) if "allThreads" in raw.columns else None,
            "thread_name": col("threadName"),
            "source_row": raw["_line"],
            "is_tc": is_tc,
            "label": raw["label"],
        }
    )
    if n_tc:
        labels = sorted(set(frame.filter(pl.col("is_tc"))["label"].to_list()))
        prov.add(
            "transaction_controller_rows",
            f"{n_tc} Transaction Controller parent rows (labels {labels[:8]}{' …' if len(labels) > 8 else ''}) "
            "duplicate their children's time and were left out: they are not requests and would double-count "
            "throughput",
            count=n_tc,
        )
    frame = frame.filter(~pl.col("is_tc"))
    status = (
        pl.when(pl.col("success"))
        .then(pl.lit("ok"))
        .when(pl.col("code").str.strip_chars() == "429")
        .then(pl.lit("rejected"))
        .when(
            pl.col("code").str.strip_chars().is_in(["408", "504"])
            | pl.col("code").str.contains(TIMEOUT_RE)
            | pl.col("text").fill_null("").str.contains(TIMEOUT_RE)
        )
        .then(pl.lit("timeout"))
        .otherwise(pl.lit("error"))
    )
    frame = frame.with_columns(
        status.alias("status"),
        pl.when(pl.col("success"))
        .then(None)
        .otherwise(pl.format("{}: {}", pl.col("code"), pl.col("text").fill_null("")))
        .alias("error"),
        (pl.col("start_s") + pl.col("latency_ms") / 1000.0).alias("end_s"),
    )
    non_numeric = frame.filter(~pl.col("success") & ~pl.col("code").str.contains(r"^\s*\d+\s*$"))
    if non_numeric.height:
        top = non_numeric["code"].value_counts(sort=True).head(3).rows()
        prov.add("non_numeric_response_code", f"{non_numeric.height} failed samples have a non-numeric responseCode, "
                 f"e.g. {top}", level="info", count=non_numeric.height)
    import numpy as np  # here, not at import: `bearing inspect` of a small file loads no numpy (tests/cli)

    # runs: invocations appended to one file, split at silences with no sample in flight
    name = source.path.parent.name
    seg = _idle_runs(frame["start_s"].to_numpy(), frame["end_s"].to_numpy()) if split_runs else \
        np.zeros(frame.height, dtype=np.int64)
    runs = [name if k == 0 else f"{name}#{k + 1}" for k in range(int(seg.max()) + 1)] if seg.size else [name]
    frame = frame.with_columns(pl.Series("run_id", [runs[k] for k in seg], dtype=pl.String))
    if len(runs) > 1:
        spans = frame.group_by("run_id", maintain_order=True).agg(pl.col("start_s").min().alias("a"),
                                                                  pl.col("end_s").max().alias("b"), pl.len())
        t0 = float(frame["start_s"].min())
        prov.add("appended_runs",
                 f"{len(runs)} runs in one file: silences of ≥ {IDLE_RUN_BREAK_S:g} s with no sample in flight "
                 "(JMeter appends each invocation to the same .jtl) split it: "
                 + "; ".join(f"{r} {a - t0:.0f}–{b - t0:.0f} s ({n} samples)" for r, a, b, n in spans.rows()),
                 count=len(runs))
    # steps from allThreads plateaus, per run
    all_steps: list[dict[str, object]] = []
    if frame["threads"].is_not_null().any():
        step = np.full(frame.height, -1, dtype=np.int64)
        lvl = np.full(frame.height, np.nan)
        said: list[str] = []
        bare: list[str] = []
        for k, run in enumerate(runs):
            m = seg == k
            plateaus = cut_plateaus(frame["start_s"].to_numpy()[m], frame["threads"].cast(pl.Float64).to_numpy()[m],
                                    min_hold_s=min_plateau_s, skip_levels=(0,))
            step[m], lvl[m] = assign_steps(frame["start_s"].to_numpy()[m], plateaus)
            all_steps += plateau_steps(plateaus, run_id=run, unit="concurrency", source_file=str(source.path))
            said += [(f"{run}: " if len(runs) > 1 else "") + f"{p.level:g} threads for {p.duration_s:g} s"
                     for p in plateaus]
            if not plateaus and len(runs) > 1:
                bare.append(run)
        frame = frame.with_columns(
            pl.Series("step", step).replace(-1, None).cast(pl.Int64),
            pl.Series("offered_load", lvl).fill_nan(None),
        )
        n_out = int(frame["step"].is_null().sum())
        prov.add(
            "steps",
            f"allThreads plateaus held ≥ {min_plateau_s:g} s: " + (", ".join(said) or "none")
            + f"; {n_out} of {frame.height} samples are in no step (ramps"
            + (f"; and the runs {', '.join(bare)}, whose thread count held no level that long)" if bare else ")"),
            level="info" if said else "warning",
        )
        _one_sample_threads(frame, prov)
    else:
        frame = frame.with_columns(pl.lit(None, dtype=pl.Int64).alias("step"), pl.lit(None, dtype=pl.Float64)
                                   .alias("offered_load"))
        prov.add("no_thread_counts", "no allThreads column: the load level is unknown")
    frame = frame.with_columns(
        pl.when(pl.col("step").is_not_null()).then(pl.lit("concurrency")).otherwise(None).alias("offered_load_unit"),
    )
    cols = ["request_id", "start_s", "end_s", "latency_ms", "status", "error", "run_id", "step", "offered_load",
            "offered_load_unit", "source_row"]
    out = frame.select(cols)
    derived = ["request_id", "end_s", "step", "offered_load", "offered_load_unit", "run_id"]
    if timestamp == "end":
        derived.append("start_s")
    if ttfb_as_ttft and "Latency" in raw.columns:
        out = out.with_columns(frame["ttfb_ms"].alias("ttft_ms"))
        derived.append("ttft_ms")
        prov.add("ttfb_as_ttft", "ttft_ms is JMeter's Latency (time to first byte), as asked (ttfb_as_ttft=True)",
                 level="info")
    prov.add("timestamp", f"timeStamp read as the sample {timestamp} (epoch ms); elapsed is latency_ms", level="info")
    prov.add("layout", f"columns: {', '.join(c for c in raw.columns if c != '_line')}", level="info")
    unknown_cols = [c for c in raw.columns if c not in KNOWN and c != "_line"]
    if unknown_cols:
        prov.add("extra_columns", f"columns bearing does not use: {unknown_cols}", level="info")
    return finish_trace(
        out, source, format=fmt, tool=TOOL, derived=tuple(derived),
        timezone="UTC (epoch ms)", provenance=prov,
        options={"ttfb_as_ttft": ttfb_as_ttft, "min_plateau_s": min_plateau_s, "timestamp": timestamp,
                 "split_runs": split_runs,
                 **({"columns": list(columns)} if columns else {})},
        steps=all_steps or None,
    )


def _idle_runs(start_s: np.ndarray, end_s: np.ndarray) -> np.ndarray:
    """Each sample's run index (in the samples' order): a new run begins where the next sample starts at least
    :data:`IDLE_RUN_BREAK_S` after every earlier sample ended (nothing in flight for that long) and at least
    :data:`IDLE_TYPICAL_MULTIPLE` times the file's median time between sample starts."""
    import numpy as np

    start = np.asarray(start_s, float)
    end = np.fmax(np.asarray(end_s, float), start)
    out = np.zeros(start.size, dtype=np.int64)
    if start.size == 0:
        return out
    order = np.argsort(start, kind="stable")
    busy = np.maximum.accumulate(np.nan_to_num(end[order], nan=-np.inf))
    gap = start[order][1:] - busy[:-1]
    # a test's own pauses (think time, a low-rate schedule) repeat: a silence splits only where it is also far
    # longer than the file's typical time between sample starts
    starts = np.diff(start[order])
    typical = float(np.median(starts[starts > 0])) if (starts > 0).any() else 0.0
    out[order] = np.concatenate([[0], np.cumsum(gap >= max(IDLE_RUN_BREAK_S, IDLE_TYPICAL_MULTIPLE * typical))])
    return out


def load_header(
    source: InputSource,
    *,
    ttfb_as_ttft: bool = False,
    min_plateau_s: float = DEFAULT_MIN_PLATEAU_S,
    timestamp: str = "start",
    split_runs: bool = True,
) -> RequestTrace:
    """A JTL CSV with a header row → request trace (see the module docstring)."""
    sep = _delimiter(source.first_line) or ","
    return _load(source, sep=sep, columns=None, has_header=True, fmt="jmeter-jtl-csv",
                 ttfb_as_ttft=ttfb_as_ttft, min_plateau_s=min_plateau_s, timestamp=timestamp, split_runs=split_runs)


def load_noheader(
    source: InputSource,
    *,
    columns: Sequence[str] | None = None,
    delimiter: str | None = None,
    ttfb_as_ttft: bool = False,
    min_plateau_s: float = DEFAULT_MIN_PLATEAU_S,
    timestamp: str = "start",
    split_runs: bool = True,
) -> RequestTrace:
    """A JTL without a header → request trace; ``columns`` (JMeter field names in file order) is required."""
    sep = delimiter or _noheader_delimiter(source.first_line) or ","
    n = len(next(csv.reader([source.first_line], delimiter=sep)))
    if not columns:
        hint = f" A likely map for this 13-column pipe layout: columns={LEGACY_HINT.split('|')}" if (
            sep == "|" and n == 13) else ""
        cli_sep, py_sep = ("", "") if sep == "," else (f" --option delimiter={sep!r}", f", delimiter={sep!r}")
        raise ParameterError(
            f"{source.path}: a JMeter JTL without a header ({n} fields separated by {sep!r}); bearing does not guess "
            "which column is which: name them in file order (JMeter field names), on the command line "
            f"`--option 'columns=[\"timeStamp\",\"elapsed\",...]'{cli_sep}`, in Python "
            f"bearing_lib.load(path, columns=[...]{py_sep})."
            + hint
        )
    if len(columns) != n:
        raise ParameterError(f"{source.path}: columns names {len(columns)} fields but the file has {n}")
    return _load(source, sep=sep, columns=columns, has_header=False, fmt="jmeter-jtl-noheader",
                 ttfb_as_ttft=ttfb_as_ttft, min_plateau_s=min_plateau_s, timestamp=timestamp, split_runs=split_runs)


# --------------------------------------------------------------------------- XML JTL

XML_ATTRS = {
    "ts": "timeStamp", "t": "elapsed", "lt": "Latency", "ct": "Connect", "it": "IdleTime", "s": "success",
    "lb": "label", "rc": "responseCode", "rm": "responseMessage", "tn": "threadName", "dt": "dataType",
    "by": "bytes", "sby": "sentBytes", "ng": "grpThreads", "na": "allThreads", "sc": "SampleCount",
    "ec": "ErrorCount", "hn": "Hostname",
}
SAMPLE_TAGS = ("httpSample", "sample")


def sniff_xml(source: InputSource) -> bool:
    if source.is_dir or source.suffix not in (".jtl", ".xml", ""):
        return False
    head = source.head_text.lstrip()
    return head.startswith("<") and re.search(r"<testResults[\s>]", head[:4096]) is not None


def _sample_row(el: ET.Element, n: int) -> dict[str, object]:
    row: dict[str, object] = {name: el.get(attr) for attr, name in XML_ATTRS.items()}
    url = el.find("java.net.URL")
    row["URL"] = url.text if url is not None else None
    failures = []
    for ar in el.findall("assertionResult"):
        if (ar.findtext("failure") or "").strip() == "true" or (ar.findtext("error") or "").strip() == "true":
            failures.append((ar.findtext("failureMessage") or ar.findtext("name") or "").strip())
    row["failureMessage"] = "; ".join(f for f in failures if f) or None
    row["_line"] = n
    return row


def _is_tc_parent(el: ET.Element) -> bool:
    return bool(re.match(TC_RE, el.get("rm") or "")) and any(c.tag in SAMPLE_TAGS for c in el)


def _read_xml(source: InputSource) -> tuple[list[dict[str, object]], int, bool]:
    """Sample rows of an XML JTL, the number of Transaction Controller parents left out, and whether
    the file was cut (no closing ``</testResults>``)."""
    rows: list[dict[str, object]] = []
    n_parents = 0
    depth = 0
    truncated = False
    root_seen = False
    with source.open_binary() as fh:
        parser = ET.iterparse(fh, events=("start", "end"))
        try:
            for event, el in parser:
                if event == "start":
                    if not root_seen:
                        root_seen = True
                        if el.tag != "testResults":
                            raise InputError(f"an XML file whose root is <{el.tag}>, not a JMeter <testResults>",
                                             path=source.path)
                    depth += 1
                    continue
                depth -= 1
                if depth != 1 or el.tag not in SAMPLE_TAGS:
                    continue
                if _is_tc_parent(el):  # "Generate parent sample": the children are the requests
                    n_parents += 1
                    for child in el:
                        if child.tag in SAMPLE_TAGS:
                            rows.append(_sample_row(child, len(rows) + 1))
                else:
                    rows.append(_sample_row(el, len(rows) + 1))
                el.clear()
        except ET.ParseError as exc:
            if not rows:
                raise InputError(f"not a readable XML JTL: {exc}", path=source.path) from None
            truncated = True
    return rows, n_parents, truncated


def load_xml(
    source: InputSource,
    *,
    ttfb_as_ttft: bool = False,
    min_plateau_s: float = DEFAULT_MIN_PLATEAU_S,
    timestamp: str = "start",
    split_runs: bool = True,
) -> RequestTrace:
    """An XML JTL (``<testResults>``) → request trace (see the module docstring)."""
    rows, n_parents, truncated = _read_xml(source)
    if not rows:
        raise InputError("the JTL has no sample elements", path=source.path)
    names = [*XML_ATTRS.values(), "URL", "failureMessage"]
    short = {v: k for k, v in XML_ATTRS.items()}
    for r in rows:
        lack = [c for c in REQUIRED if r.get(c) in (None, "")]
        if lack:
            raise BadValueError(f"a sample without the attribute(s) {[short[c] for c in lack]} "
                                f"({', '.join(lack)})", path=source.path, row=int(r["_line"]), field=short[lack[0]])
    raw = pl.DataFrame(rows, schema={**{c: pl.String for c in names}, "_line": pl.Int64})
    present = [c for c in names if raw[c].is_not_null().any()]
    raw = raw.select([*present, "_line"])
    prov = new_provenance(source, format="jmeter-jtl-xml", tool=TOOL)
    if truncated:
        prov.add("truncated_xml", f"the XML ends before </testResults> (the file was cut while JMeter wrote it): "
                 f"the {len(rows)} samples before the cut were read", count=1)
    if n_parents:
        prov.add("transaction_controller_parents",
                 f"{n_parents} Transaction Controller parent samples were left out; their child samples are the "
                 "requests", count=n_parents)
    return _finish(source, raw, prov, fmt="jmeter-jtl-xml", ttfb_as_ttft=ttfb_as_ttft, min_plateau_s=min_plateau_s,
                   timestamp=timestamp, split_runs=split_runs)


register(FormatSpec(name="jmeter-jtl-csv", tool=TOOL, kind="requests",
                    needs="a JMeter CSV JTL whose header has timeStamp, elapsed, label, success, ...",
                    sniff=sniff_header, load=load_header))
register(FormatSpec(name="jmeter-jtl-noheader", tool=TOOL, kind="requests",
                    needs="a JMeter JTL without a header (epoch-ms first field, true/false success); needs columns=",
                    sniff=sniff_noheader, load=load_noheader))
register(FormatSpec(name="jmeter-jtl-xml", tool=TOOL, kind="requests",
                    needs="a JMeter XML JTL: <testResults> with <httpSample>/<sample> elements (ts, t, lb, s, ...)",
                    sniff=sniff_xml, load=load_xml))
