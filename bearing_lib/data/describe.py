"""Describe a loaded dataset: format, rows, time span, fields present, findings.

:func:`describe_dataset` turns a loaded :class:`~bearing_lib.data.trace.RequestTrace`,
:class:`~bearing_lib.data.loadpoints.LoadPointTable` or
:class:`~bearing_lib.data.ratewindows.RateWindows` into a :class:`DatasetDescription`:
plain values (``to_dict()`` for JSON) and ``lines()``, the text ``bearing inspect`` prints.

It never fails on odd values: a time that is no calendar date (for example epoch
*milliseconds* in a column meant to hold seconds) is reported as found, and a finding
says which unit the values look like and how to load them right.

>>> from bearing_lib.data.describe import guess_epoch_unit
>>> guess_epoch_unit(1_700_000_000_000.0)
'ms'
>>> guess_epoch_unit(1_700_000_000.0) is None
True
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import Any

from bearing_lib.data.provenance import Finding

# Epoch seconds a trace can plausibly start at: 2001-09-09 (the canonical loader's floor for
# "epoch") to 2100-01-01. Outside it, the values are checked as ms, µs and ns.
EPOCH_MIN_S = 1e9
EPOCH_MAX_S = 4_102_444_800.0
EPOCH_UNITS: tuple[tuple[str, float, str], ...] = (
    ("ms", 1e3, "milliseconds"),
    ("us", 1e6, "microseconds"),
    ("ns", 1e9, "nanoseconds"),
)


def guess_epoch_unit(value: float) -> str | None:
    """``ms``, ``us`` or ``ns`` when ``value`` is no plausible epoch second but is one in that unit; else None."""
    if not math.isfinite(value) or EPOCH_MIN_S <= value <= EPOCH_MAX_S:
        return None
    for unit, per_second, _ in EPOCH_UNITS:
        if EPOCH_MIN_S <= value / per_second <= EPOCH_MAX_S:
            return unit
    return None


TOP_ERRORS = 3
ERROR_TEXT_MAX = 80


def _printable(text: str) -> str:
    """A tool's error text for a terminal: control characters dropped, cut to :data:`ERROR_TEXT_MAX`."""
    clean = "".join(ch if ch.isprintable() else " " for ch in text).strip()
    return clean if len(clean) <= ERROR_TEXT_MAX else clean[: ERROR_TEXT_MAX - 1] + "…"


def _load_text(s: StepSummary) -> str:
    """A step's offered load in words ("offered load unknown" where the file states none)."""
    if s.offered_load is None or math.isnan(s.offered_load):  # inf stays "inf" (an unbounded rate)
        return "offered load unknown"
    return f"{s.offered_load:g} {s.offered_load_unit or ''}".rstrip()


def utc_iso(seconds: float | None) -> str | None:
    """ISO 8601 (UTC, whole seconds) of an epoch time, or None when it is no calendar date."""
    if seconds is None or not math.isfinite(seconds):
        return None
    try:
        return datetime.fromtimestamp(seconds, tz=UTC).isoformat(timespec="seconds")
    except (OverflowError, OSError, ValueError):  # beyond year 9999 / the platform's time_t
        return None


@dataclass(frozen=True)
class TimeSpan:
    """When the data runs, as found in the file.

    ``start_s``/``end_s`` are the smallest start and the largest start-or-end, in the file's
    own numbers; ``first_utc``/``last_utc`` their dates (epoch clock only, None when not a
    date); ``unit_guess`` is ``ms``/``us``/``ns`` when epoch times look like that unit.
    ``steps_total_s`` is the sum of step durations a tool reported when requests carry no
    times; ``window_s`` the window length of rate data.
    """

    time_origin: str
    timezone: str
    start_s: float | None = None
    end_s: float | None = None
    first_utc: str | None = None
    last_utc: str | None = None
    unit_guess: str | None = None
    steps_total_s: float | None = None
    window_s: float | None = None

    @property
    def seconds(self) -> float | None:
        """``end_s - start_s`` in the file's own unit (None without times)."""
        if self.start_s is None or self.end_s is None:
            return None
        return self.end_s - self.start_s

    def is_date(self) -> bool:
        """Epoch times that read as calendar dates in seconds (False when they look like ms/us/ns)."""
        return self.unit_guess is None and self.first_utc is not None and self.last_utc is not None


@dataclass(frozen=True)
class StepSummary:
    """One step of a stepped load test: requests seen (traces) or ok/requests (load points)."""

    run_id: str | None
    step: int | None
    offered_load: float | None
    offered_load_unit: str | None
    requests: int | None
    n_ok: int | None = None


@dataclass(frozen=True)
class DatasetDescription:
    """What bearing sees in one loaded dataset (see the module docstring)."""

    source: str
    format: str
    tool: str
    tool_version: str | None
    kind: str
    rows: int
    sha256: str
    span: TimeSpan | None = None
    fields: tuple[str, ...] = ()
    derived: tuple[str, ...] = ()
    absent: tuple[str, ...] = ()
    status_counts: tuple[tuple[str, int], ...] = ()
    error_counts: tuple[tuple[str, int], ...] = ()
    """The most frequent error texts of the failed requests (not the cancelled or unknown; at most
    :data:`TOP_ERRORS`, ties in text order), each cut to
    :data:`ERROR_TEXT_MAX` printable characters: the tool's own text, quoted, never interpreted."""
    steps: tuple[StepSummary, ...] = ()
    clients: int | None = None
    rate_mean_rps: float | None = None
    rate_peak_rps: float | None = None
    rate_min_rps: float | None = None
    length_pmf_clients: int | None = None
    length_fields: tuple[str, ...] = ()
    findings: tuple[Finding, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (tuples become lists; ``span`` gains ``seconds``)."""
        out = asdict(self)
        if self.span is not None:
            out["span"]["seconds"] = self.span.seconds
        out["status_counts"] = {status: n for status, n in self.status_counts}
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def lines(self) -> list[str]:
        """The text ``bearing inspect`` prints, one line each."""
        lines = [
            f"format:   {self.format} ({self.tool}, version {self.tool_version or 'not stated in the file'})",
            f"kind:     {self.kind}",
            f"rows:     {self.rows:,}",
        ]
        if self.kind == "requests" and self.rows:
            lines.append(_span_line(self.span))
            lines.append(f"fields:   {', '.join(self.fields)}")
            if self.derived:
                lines.append(f"derived:  {', '.join(self.derived)}")
            lines.append(f"absent:   {', '.join(self.absent) or '-'}")
            if self.status_counts:
                lines.append("status:   " + ", ".join(f"{s} {n:,}" for s, n in self.status_counts))
            if self.error_counts:
                lines.append("errors:   " + "; ".join(f"{n:,}× {t!r}" for t, n in self.error_counts))
            if self.steps:
                lines.append(f"steps:    {len(self.steps)} (run, step, offered load, requests):")
                lines.extend(
                    f"          {s.run_id} #{s.step}: {_load_text(s)}, {s.requests} requests" for s in self.steps
                )
        elif self.kind == "loadpoints":
            lines.append(f"columns:  {', '.join(self.fields)}")
            lines.append(f"steps:    {len(self.steps)} (run, step, offered load, ok/requests):")
            for s in self.steps:
                n = f"{s.n_ok}/{s.requests if s.requests is not None else '?'}"
                lines.append(f"          {s.run_id} #{s.step}: {_load_text(s)}, {n}")
        elif self.kind == "rates" and self.rows and self.span is not None:
            seconds = self.span.seconds or 0.0
            lines.append(
                f"span:     {seconds:,.0f} s ({seconds / 86400:,.2f} days) in {self.span.window_s:g} s windows, "
                f"clock {self.span.time_origin}"
            )
            if self.clients is not None:
                lines.append(f"clients:  {self.clients:,}")
            lines.append(
                f"rate:     aggregate req/s per window: mean {self.rate_mean_rps:,.2f}, "
                f"peak {self.rate_peak_rps:,.2f}, min {self.rate_min_rps:,.2f}"
            )
            lines.append(f"fields:   {', '.join(self.fields)}")
            if self.length_pmf_clients:
                lines.append(f"lengths:  PMFs for {self.length_pmf_clients} client(s): {', '.join(self.length_fields)}")
        if self.findings:
            lines.append("findings:")
            lines.extend(f"  - {finding}" for finding in self.findings)
        else:
            lines.append("findings: none")
        lines.append(f"sha256:   {self.sha256}")
        return lines


def _span_line(span: TimeSpan | None) -> str:
    if span is None or span.start_s is None:
        total = span.steps_total_s if span is not None else None
        return "span:     no per-request times in the source (time_origin none)" + (
            f"; step durations reported by the tool sum to {total:,.1f} s" if total else ""
        )
    seconds = span.seconds or 0.0
    clock = f"clock {span.time_origin}, {span.timezone}"
    if span.time_origin == "epoch":
        if not span.is_date():
            return (f"span:     {seconds:,.1f} as found (start_s {span.start_s:,.0f} .. {span.end_s:,.0f}), {clock}; "
                    "not epoch seconds (see findings)")
        clock += f"; {span.first_utc} .. {span.last_utc}"
    return f"span:     {seconds:,.1f} s ({seconds / 60:,.1f} min), {clock}"


def _unit_finding(span: TimeSpan, fmt: str) -> Finding:
    """Why the epoch times are no dates, and how to load them right."""
    if span.unit_guess is None:
        return Finding(
            "implausible_epoch_times",
            f"start_s runs from {span.start_s:,.6g} to {span.end_s:,.6g}, which is no epoch time in seconds, "
            "milliseconds, microseconds or nanoseconds (2001-2100); check the time column and its unit",
        )
    unit, per_second, word = next(u for u in EPOCH_UNITS if u[0] == span.unit_guess)
    first = utc_iso(span.start_s / per_second)  # type: ignore[operator]
    last = utc_iso(span.end_s / per_second)  # type: ignore[operator]
    if fmt == "bearing-canonical":
        how = (
            "a bearing-canonical trace holds start_s/end_s in seconds: divide those columns by "
            f"{per_second:,.0f}, or read the file with --format generic --mapping map.yaml whose columns map "
            f"start_s (and end_s) and whose units say '<column>: {unit}'"
        )
    elif fmt == "generic":
        how = f"declare the time column's unit as {unit} in the mapping's units ('<column>: {unit}')"
    else:
        how = f"the {fmt} loader read these times as seconds; check the file's time column and unit"
    return Finding(
        f"epoch_times_look_like_{unit}",
        f"start_s runs from {span.start_s:,.0f} to {span.end_s:,.0f}, no date in epoch seconds; read as epoch "
        f"{word} it is {first} .. {last}. {how[0].upper()}{how[1:]}",
    )


def _num(v: Any) -> float | None:
    return None if v is None else float(v)


def _request_span(ds: Any) -> TimeSpan:
    f, prov = ds.frame, ds.provenance
    if prov.time_origin == "none" or f["start_s"].null_count() == f.height:
        steps_frame = getattr(ds, "steps", None)
        total = steps_frame["duration_s"].sum() if steps_frame is not None else None
        return TimeSpan(time_origin="none", timezone=prov.timezone, steps_total_s=_num(total))
    lo, hi = _num(f["start_s"].min()), _num(f["start_s"].max())
    end = _num(f["end_s"].max())
    if end is not None and hi is not None:
        hi = max(hi, end)
    guess, first, last = None, None, None
    if prov.time_origin == "epoch" and lo is not None and hi is not None:
        guess = guess_epoch_unit(lo)
        if guess is None:
            first, last = utc_iso(lo), utc_iso(hi)
    return TimeSpan(time_origin=prov.time_origin, timezone=prov.timezone, start_s=lo, end_s=hi,
                    first_utc=first, last_utc=last, unit_guess=guess)


def describe_dataset(ds: Any) -> DatasetDescription:
    """Describe a loaded dataset (requests, load points or rates); never raises on odd values."""
    prov = ds.provenance
    f = ds.frame
    describe = partial(DatasetDescription, source=str(prov.source), format=prov.format, tool=prov.tool,
                       tool_version=prov.tool_version, kind=ds.kind, rows=f.height, sha256=prov.sha256)
    findings = list(prov.findings)
    if ds.kind == "requests" and f.height:
        span = _request_span(ds)
        if span.time_origin == "epoch" and span.start_s is not None and not span.is_date():
            findings.append(_unit_finding(span, prov.format))
        status: tuple[tuple[str, int], ...] = ()
        if f["status"].is_not_null().any():
            counts = f.group_by("status").len().sort(["len", "status"], descending=[True, False])
            status = tuple((str(r["status"]), int(r["len"])) for r in counts.iter_rows(named=True))
        errors: tuple[tuple[str, int], ...] = ()
        if "error" in f.columns:
            import polars as pl

            from bearing_lib.data.trace import OUTCOME_UNKNOWN

            # the failed requests, as the limits count them (limits.sla.FAILED_EXPR): not the cancelled or unknown
            failed = pl.col("status").is_not_null() & (pl.col("status") != "ok") & ~pl.col("status").is_in(
                list(OUTCOME_UNKNOWN))
            texts = f.filter(pl.col("error").is_not_null() & failed)["error"]
            top = (texts.value_counts().sort(["count", "error"], descending=[True, False]).head(TOP_ERRORS)
                   if texts.len() else None)
            errors = tuple((_printable(str(r[0])), int(r[1])) for r in top.iter_rows()) if top is not None else ()
        steps: tuple[StepSummary, ...] = ()
        if f["step"].is_not_null().any():
            grouped = f.group_by("run_id", "step", "offered_load", "offered_load_unit").len().sort("run_id", "step")
            steps = tuple(
                StepSummary(r["run_id"], r["step"], r["offered_load"], r["offered_load_unit"], int(r["len"]))
                for r in grouped.iter_rows(named=True)
            )
        return describe(
            span=span,
            fields=tuple(c for c, o in prov.fields.items() if o != "absent"),
            derived=tuple(c for c, o in prov.fields.items() if o == "derived"),
            absent=tuple(c for c, o in prov.fields.items() if o == "absent"),
            status_counts=status,
            error_counts=errors,
            steps=steps,
            findings=tuple(findings),
        )
    if ds.kind == "loadpoints":
        return describe(
            fields=tuple(c for c in f.columns if f[c].is_not_null().any()),
            steps=tuple(
                StepSummary(r["run_id"], r["step"], r["offered_load"], r["offered_load_unit"], r["n_requests"],
                            n_ok=r["n_ok"])
                for r in f.iter_rows(named=True)
            ),
            findings=tuple(findings),
        )
    if ds.kind == "rates" and f.height:
        lo = _num(f["window_start_s"].min())
        hi = _num((f["window_start_s"] + f["window_s"]).max())
        agg = ds.aggregate()
        pmfs = getattr(ds, "length_pmfs", None) or {}
        return describe(
            span=TimeSpan(time_origin=prov.time_origin, timezone=prov.timezone, start_s=lo, end_s=hi,
                          window_s=_num(f["window_s"][0])),
            fields=tuple(c for c in f.columns if f[c].is_not_null().any()),
            clients=int(f["client"].n_unique()) if "client" in f.columns else None,
            rate_mean_rps=_num(agg["rate_rps"].mean()),
            rate_peak_rps=_num(agg["rate_rps"].max()),
            rate_min_rps=_num(agg["rate_rps"].min()),
            length_pmf_clients=len(pmfs) or None,
            length_fields=tuple(sorted({n for c in pmfs.values() for w in c.values() for n in w})),
            findings=tuple(findings),
        )
    return describe(findings=tuple(findings))


__all__ = [
    "EPOCH_MAX_S",
    "EPOCH_MIN_S",
    "DatasetDescription",
    "StepSummary",
    "TimeSpan",
    "describe_dataset",
    "guess_epoch_unit",
    "utc_iso",
]
