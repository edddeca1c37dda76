"""Service-level agreements: a small language, parsed with errors that point at the problem.

Grammar (case-insensitive; whitespace free; several clauses combine with AND)::

    sla       := clause ( ("and" | ";" | "&&") clause )*
    clause    := "p" PCT "(" metric ")" upper DURATION          e.g.  p99(ttft) <= 500ms
               | "error_rate" upper FRACTION                    e.g.  error_rate <= 0.5%
               | "goodput" "(" bound ("," bound)* ")" lower FRACTION
                                                                e.g.  goodput(ttft<=500ms, tpot<=50ms) >= 95%
    bound     := metric upper DURATION
    metric    := "ttft" | "latency" | "e2e" | "tpot" | "itl"
    upper     := "<=" | "<"
    lower     := ">=" | ">"
    PCT       := a number in (0, 100), e.g. 50, 95, 99, 99.9
    DURATION  := NUMBER ("ms" | "s" | "us")
    FRACTION  := NUMBER "%"  |  NUMBER in [0, 1]

Metrics map to canonical columns: ``ttft`` → ``ttft_ms``, ``latency``/``e2e`` →
``latency_ms``, ``tpot`` → ``tpot_ms``, ``itl`` → ``itl_ms``. Thresholds are stored in
milliseconds (durations) or as fractions in [0, 1] (rates).

Semantics (the same in every part of bearing):

* A percentile clause is evaluated over the **successful** requests (``status`` ok or
  null) that carry the metric, like every load-test tool reports it. Failed requests
  count only through an ``error_rate`` or ``goodput`` clause; :meth:`SLA.notes` says so
  when an SLA has neither.
* ``error_rate`` = requests whose status is not ok / all requests.
* ``goodput`` = requests that succeeded AND meet every bound / all requests.
* The **margin** of a clause is ``1 − observed / allowed``: > 0 passes, < 0 fails, 0 is
  on the line (passes for ``<=``/``>=``, fails for ``<``/``>``). For a percentile clause
  ``allowed`` is the threshold; for ``error_rate`` it is the allowed error fraction; for
  ``goodput ≥ g`` it is the allowed bad fraction ``1 − g`` and ``observed`` the bad
  fraction. A zero allowance (``error_rate <= 0%``) uses 0.001 as the denominator.

Before anything is fitted, :func:`check_sla_against` refuses an SLA whose metrics the
data lacks, or has only for some steps (one error naming every clause, file and step).

Examples
--------
>>> sla = parse_sla(["p99(ttft) <= 500ms and error_rate <= 0.5%"])
>>> [c.text for c in sla.clauses]
['p99(ttft) <= 500ms', 'error_rate <= 0.5%']
>>> sla.clauses[0].metric, sla.clauses[0].q, sla.clauses[0].threshold
('ttft_ms', 0.99, 500.0)
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import polars as pl

from bearing_lib.common.errors import SLAParseError
from bearing_lib.common.quantiles import quantile_expr
from bearing_lib.common.yamlfile import read_yaml

GRAMMAR = """SLA grammar (clauses combine with AND: 'and', ';' or '&&', or one --sla per clause):
  pNN(metric) <= DURATION        e.g. p99(ttft) <= 500ms, p95(latency) < 3s   (NN in (0, 100))
  error_rate <= FRACTION         e.g. error_rate <= 0.5%
  goodput(metric<=DURATION, ...) >= FRACTION   e.g. goodput(ttft<=500ms, tpot<=50ms) >= 95%
  metric: ttft | latency | e2e | tpot | itl;  DURATION: number + ms | s | us;  FRACTION: 0.5% or 0.005"""

METRICS: dict[str, str] = {
    "ttft": "ttft_ms",
    "latency": "latency_ms",
    "e2e": "latency_ms",
    "tpot": "tpot_ms",
    "itl": "itl_ms",
}
_SHORT = {"ttft_ms": "ttft", "latency_ms": "latency", "tpot_ms": "tpot", "itl_ms": "itl"}
_UNIT_MS = {"ms": 1.0, "s": 1000.0, "us": 0.001}
ZERO_ALLOWANCE = 1e-3

_NUM = r"[0-9]+(?:\.[0-9]*)?|\.[0-9]+"
_PCT_RE = re.compile(rf"^p\s*(?P<pct>{_NUM})\s*\(\s*(?P<metric>[A-Za-z_0-9]*)\s*\)\s*(?P<rest>.*)$", re.I | re.S)
_ERR_RE = re.compile(r"^error_rate\b\s*(?P<rest>.*)$", re.I | re.S)
_GOOD_RE = re.compile(r"^goodput\s*\((?P<inner>[^()]*)\)\s*(?P<rest>.*)$", re.I | re.S)
_OP_RE = re.compile(r"^(?P<op><=|>=|<|>|=<|=>|==|=)\s*(?P<value>.*)$", re.S)
_DUR_RE = re.compile(rf"^(?P<num>{_NUM})\s*(?P<unit>[A-Za-z]*)$")
_FRAC_RE = re.compile(rf"^(?P<num>{_NUM})\s*(?P<pct>%?)$")
_SPLIT_RE = re.compile(r"\s+and\s+|\s*;\s*|\s*&&\s*", re.I)

OK_EXPR = pl.col("status").is_null() | (pl.col("status") == "ok")
UNSETTLED = ("cancelled", "unknown")
"""Outcomes that are neither success nor failure: the client cancelled the request (e.g. at a step's end) or
stopped waiting for it; they are left out of error rates, goodput and percentiles (docs/canonical-trace.md)."""
KNOWN_EXPR = pl.col("status").is_null() | ~pl.col("status").is_in(UNSETTLED)
FAILED_EXPR = KNOWN_EXPR & ~OK_EXPR
"""Polars expression: the request succeeded (status ``ok``, or no status recorded)."""


def _fail(clause: str, problem: str, at: str | None = None) -> SLAParseError:
    pointer = ""
    if at is not None and at in clause:
        pos = clause.index(at)
        pointer = f"\n    {clause}\n    {' ' * pos}^"
    return SLAParseError(f"SLA clause {clause!r}: {problem}{pointer}\n{GRAMMAR}")


@dataclass(frozen=True)
class Bound:
    """One goodput bound: ``metric`` (canonical column) ``op`` ``threshold_ms``."""

    metric: str
    op: str
    threshold_ms: float

    def holds(self) -> pl.Expr:
        """Per request: the metric meets the bound (null metric → unknown, treated as met)."""
        col = pl.col(self.metric)
        ok = (col < self.threshold_ms) if self.op == "<" else (col <= self.threshold_ms)
        return ok.fill_null(True)

    def text(self) -> str:
        return f"{_SHORT[self.metric]}{self.op}{_fmt_ms(self.threshold_ms)}"


@dataclass(frozen=True, kw_only=True)
class Clause:
    """One parsed SLA clause, and one entry of the limits JSON's ``sla`` list (its fields, in this order).

    ``kind`` is ``percentile`` | ``error_rate`` | ``goodput``; ``metric`` the canonical column of a
    percentile clause (None for the rates); ``stat`` is ``p99`` etc., ``error_rate`` or ``goodput``;
    ``threshold`` is in ms for percentiles and a fraction for the rates (``unit`` ``ms`` | ``fraction``);
    ``op`` as written; ``bounds`` a goodput clause's bounds (None for the other kinds).
    """

    text: str
    kind: Literal["percentile", "error_rate", "goodput"]
    metric: str | None = None
    stat: str
    op: str
    threshold: float
    unit: str
    bounds: tuple[Bound, ...] | None = None

    @property
    def q(self) -> float | None:
        """The quantile level of a percentile clause (``p99`` → 0.99); None for the other kinds."""
        if self.kind != "percentile" or self.stat[:1] not in ("p", "P"):
            return None
        try:
            return float(self.stat[1:]) / 100.0
        except ValueError:
            return None

    @property
    def strict(self) -> bool:
        return self.op in ("<", ">")

    @property
    def allowed(self) -> float:
        """The allowance the margin divides by (threshold ms, error fraction, or 1 − goodput)."""
        if self.kind == "percentile":
            return self.threshold
        a = self.threshold if self.kind == "error_rate" else 1.0 - self.threshold
        return a if a > 0 else ZERO_ALLOWANCE

    def observed_to_margin(self, observed: float | np.ndarray) -> float | np.ndarray:
        """Margin ``1 − bad/allowed`` from the clause's observed value.

        ``observed`` is the percentile in ms, the error rate, or the goodput fraction.
        """
        bad = (1.0 - np.asarray(observed, dtype=float)) if self.kind == "goodput" else np.asarray(observed, float)
        m = 1.0 - bad / self.allowed
        return float(m) if np.ndim(m) == 0 else m

    def passes(self, margin: float) -> bool:
        """Whether a margin meets the clause (0 passes for ``<=``/``>=``, fails for ``<``/``>``)."""
        if margin is None or (isinstance(margin, float) and math.isnan(margin)):
            return False
        return margin > 0 if self.strict else margin >= 0

    def request_bad(self) -> pl.Expr:
        """Per request: the request counts against this clause.

        Failed requests count against every clause. For a percentile clause a successful
        request counts when its metric exceeds the threshold; for goodput when it
        breaks any bound. Null metrics are unknown and do not count.
        """
        failed = FAILED_EXPR
        if self.kind == "percentile":
            col = pl.col(self.metric)
            over = (col >= self.threshold) if self.strict else (col > self.threshold)
            return failed | over.fill_null(False)
        if self.kind == "goodput":
            good = pl.lit(True)
            for b in self.bounds or ():
                good = good & b.holds()
            return failed | ~good
        return failed

    def observed_expr(self) -> pl.Expr:
        """Aggregation expression: the clause's observed value over a group of requests."""
        if self.kind == "percentile":
            return quantile_expr(pl.col(self.metric).filter(OK_EXPR).drop_nulls(), self.q)
        if self.kind == "error_rate":
            return FAILED_EXPR.cast(pl.Float64).filter(KNOWN_EXPR).mean()
        good = OK_EXPR
        for b in self.bounds or ():
            good = good & b.holds()
        return good.cast(pl.Float64).filter(KNOWN_EXPR).mean()

    def to_dict(self) -> dict[str, object]:
        """The clause as the limits JSON writes it (its fields in order; ``bounds`` null but for goodput)."""
        from bearing_lib.common.files import jsonable

        return jsonable(self)


@dataclass(frozen=True)
class SLA:
    """A conjunction of clauses (all must hold)."""

    clauses: tuple[Clause, ...]

    def __post_init__(self) -> None:
        if not self.clauses:
            raise SLAParseError(f"the SLA has no clauses\n{GRAMMAR}")

    @property
    def text(self) -> str:
        return " and ".join(c.text for c in self.clauses)

    def metrics(self) -> list[str]:
        """Canonical latency columns the SLA reads (percentile clauses and goodput bounds)."""
        out: list[str] = []
        for c in self.clauses:
            for m in ([c.metric] if c.metric else []) + [b.metric for b in c.bounds or ()]:
                if m not in out:
                    out.append(m)
        return out

    def percentile_clauses(self) -> list[Clause]:
        return [c for c in self.clauses if c.kind == "percentile"]

    def latency_bounds(self) -> dict[str, tuple[str, float]]:
        """Tightest per-request latency bound per metric from every clause: ``{metric: (op, ms)}``."""
        out: dict[str, tuple[str, float]] = {}
        for c in self.clauses:
            pairs = [(c.metric, c.op, c.threshold)] if c.kind == "percentile" else [
                (b.metric, b.op, b.threshold_ms) for b in c.bounds or ()
            ]
            for m, op, thr in pairs:
                if m not in out or thr < out[m][1] or (thr == out[m][1] and op == "<"):
                    out[m] = (op, thr)
        return out

    def request_violates(self) -> pl.Expr:
        """Per request: failed (status not ok), or above any latency bound of any clause.

        This is the per-request view used by the cost anomaly index: a request that
        failed, timed out, or was slower than a threshold of any percentile clause or
        outside a goodput bound. Null metrics are unknown and do not count.
        """
        bad = ~OK_EXPR
        for m, (op, thr) in self.latency_bounds().items():
            col = pl.col(m)
            over = (col >= thr) if op == "<" else (col > thr)
            bad = bad | over.fill_null(False)
        return bad

    def evaluate(self, frame: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
        """One row per clause: ``clause``, ``observed``, ``n`` (requests used), ``margin``, ``passes``.

        ``frame`` holds requests (canonical columns) of one window or step. A percentile
        over no successful request is null (margin null, fails).
        """
        lf = frame.lazy() if isinstance(frame, pl.DataFrame) else frame
        names = lf.collect_schema().names()
        aggs = []
        for i, c in enumerate(self.clauses):
            needed = [m for m in ([c.metric] if c.metric else []) + [b.metric for b in c.bounds or ()]]
            missing = [m for m in needed + ["status"] if m not in names]
            if missing:
                from bearing_lib.common.errors import SchemaError

                raise SchemaError(f"SLA clause {c.text!r} needs column(s) {missing}")
            aggs.append(c.observed_expr().alias(f"v{i}"))
            if c.kind == "percentile":
                aggs.append(pl.col(c.metric).filter(OK_EXPR).drop_nulls().len().alias(f"n{i}"))
            else:
                aggs.append(pl.len().alias(f"n{i}"))
        row = lf.select(aggs).collect().row(0, named=True)
        rows = []
        for i, c in enumerate(self.clauses):
            v = row[f"v{i}"]
            m = None if v is None else c.observed_to_margin(v)
            rows.append(
                {"clause": c.text, "observed": v, "n": int(row[f"n{i}"] or 0), "margin": m,
                 "passes": bool(m is not None and c.passes(m))}
            )
        return pl.DataFrame(rows, schema={"clause": pl.String, "observed": pl.Float64, "n": pl.Int64,
                                          "margin": pl.Float64, "passes": pl.Boolean})

    def evaluate_window(self, frame: pl.DataFrame | pl.LazyFrame) -> bool:
        """Whether every clause holds over the requests in ``frame`` (an empty window fails)."""
        ev = self.evaluate(frame)
        return bool(ev["passes"].all()) and ev.height > 0

    def margin(self, frame: pl.DataFrame | pl.LazyFrame) -> float | None:
        """The SLA margin over ``frame``: the smallest clause margin (null if any is unknown)."""
        ev = self.evaluate(frame)
        if ev["margin"].null_count():
            return None
        return float(ev["margin"].min())

    def notes(self) -> list[str]:
        """Plain statements about what this SLA does and does not check."""
        kinds = {c.kind for c in self.clauses}
        if not kinds & {"error_rate", "goodput"}:
            return [
                "the SLA has no error_rate or goodput clause: failed requests are left out of the latency "
                "percentiles and cannot make a step fail; add e.g. 'error_rate <= 1%'"
            ]
        return []

    def to_list(self) -> list[dict[str, object]]:
        """The parsed clauses, JSON-ready (the ``sla`` entry of the limits JSON)."""
        return [c.to_dict() for c in self.clauses]

    def _repr_html_(self) -> str:  # pragma: no cover - notebook display
        import html

        items = "".join(f"<li><code>{html.escape(c.text)}</code></li>" for c in self.clauses)
        return f"<p><b>SLA</b> (all must hold)</p><ul>{items}</ul>"


def _fmt_ms(ms: float) -> str:
    return f"{ms / 1000:g}s" if ms >= 1000 and (ms / 1000).is_integer() else f"{ms:g}ms"


def _parse_duration(clause: str, text: str) -> float:
    m = _DUR_RE.match(text.strip())
    if not m:
        raise _fail(clause, f"expected a duration such as 500ms or 3s, found {text.strip()!r}", text.strip() or None)
    unit = m["unit"].lower()
    if unit not in _UNIT_MS:
        if unit == "":
            raise _fail(clause, f"the duration {text.strip()!r} has no unit; write e.g. {m['num']}ms or {m['num']}s",
                        text.strip())
        raise _fail(clause, f"unknown time unit {m['unit']!r}; expected ms, s or us", m["unit"])
    return float(m["num"]) * _UNIT_MS[unit]


def _parse_fraction(clause: str, text: str) -> float:
    t = text.strip()
    m = _FRAC_RE.match(t)
    if not m:
        raise _fail(clause, f"expected a fraction such as 0.5% or 0.005, found {t!r}", t or None)
    v = float(m["num"]) / (100.0 if m["pct"] else 1.0)
    if not 0.0 <= v <= 1.0:
        raise _fail(clause, f"{t!r} is not a fraction between 0 and 1 (0% to 100%)", t)
    return v


def _parse_op(clause: str, rest: str, allowed: tuple[str, ...], what: str) -> tuple[str, str]:
    m = _OP_RE.match(rest.strip())
    if not m:
        raise _fail(clause, f"expected a comparison {' or '.join(allowed)} after {what}, found {rest.strip()!r}",
                    rest.strip() or None)
    op = {"=<": "<=", "=>": ">="}.get(m["op"], m["op"])
    if op not in allowed:
        hint = "an upper limit (<= or <)" if "<=" in allowed else "a lower limit (>= or >)"
        raise _fail(clause, f"{what} takes {hint}; found {m['op']!r}", m["op"])
    return op, m["value"]


def _metric(clause: str, name: str) -> str:
    key = name.strip().lower()
    if key not in METRICS:
        raise _fail(clause, f"unknown metric {name.strip()!r}; expected one of {', '.join(METRICS)}",
                    name.strip() or None)
    return METRICS[key]


def parse_clause(text: str) -> Clause:
    """Parse one clause (see the module grammar); :class:`SLAParseError` on any problem."""
    clause = " ".join(text.split())
    if not clause:
        raise _fail(text, "the clause is empty")
    if m := _PCT_RE.match(clause):
        pct = float(m["pct"])
        if not 0.0 < pct < 100.0:
            raise _fail(clause, f"percentile p{m['pct']} is outside (0, 100)", m["pct"])
        metric = _metric(clause, m["metric"])
        op, value = _parse_op(clause, m["rest"], ("<=", "<"), f"p{m['pct']}({m['metric']})")
        thr = _parse_duration(clause, value)
        stat = f"p{m['pct']}"
        return Clause(text=clause, kind="percentile", stat=stat, op=op, threshold=thr, unit="ms",
                      metric=metric)
    if m := _ERR_RE.match(clause):
        op, value = _parse_op(clause, m["rest"], ("<=", "<"), "error_rate")
        return Clause(text=clause, kind="error_rate", stat="error_rate", op=op,
                      threshold=_parse_fraction(clause, value), unit="fraction")
    if m := _GOOD_RE.match(clause):
        parts = [p for p in m["inner"].split(",")]
        if not any(p.strip() for p in parts):
            raise _fail(clause, "goodput() needs at least one bound such as ttft<=500ms", "goodput")
        bounds = []
        for p in parts:
            bm = re.match(r"^\s*(?P<metric>[A-Za-z_][A-Za-z_0-9]*)\s*(?P<rest>.*)$", p)
            if not bm or not p.strip():
                raise _fail(clause, f"expected a bound such as ttft<=500ms inside goodput(), found {p.strip()!r}",
                            p.strip() or None)
            metric = _metric(clause, bm["metric"])
            op, value = _parse_op(clause, bm["rest"], ("<=", "<"), f"goodput bound {bm['metric']}")
            bounds.append(Bound(metric=metric, op=op, threshold_ms=_parse_duration(clause, value)))
        op, value = _parse_op(clause, m["rest"], (">=", ">"), "goodput(...)")
        return Clause(text=clause, kind="goodput", stat="goodput", op=op,
                      threshold=_parse_fraction(clause, value), unit="fraction", bounds=tuple(bounds))
    head = re.match(r"^[A-Za-z_]+", clause)
    word = head.group(0) if head else clause[:1]
    raise _fail(clause, f"unknown clause start {word!r}; expected pNN(metric), error_rate or goodput(...)", word)


def parse_sla(texts: str | Iterable[str]) -> SLA:
    """Parse one string or several (each may hold clauses joined by 'and', ';' or '&&')."""
    items = [texts] if isinstance(texts, str) else list(texts)
    clauses: list[Clause] = []
    for t in items:
        if not isinstance(t, str):
            raise SLAParseError(f"an SLA clause must be text, found {t!r}\n{GRAMMAR}")
        for piece in _SPLIT_RE.split(t.strip()):
            if piece.strip():
                clauses.append(parse_clause(piece))
            elif t.strip():
                raise _fail(t, "an empty clause between separators")
    if not clauses:
        raise SLAParseError(f"the SLA is empty: give at least one clause\n{GRAMMAR}")
    seen = set()
    for c in clauses:
        if c.text in seen:
            raise SLAParseError(f"SLA clause {c.text!r} is given twice\n{GRAMMAR}")
        seen.add(c.text)
    return SLA(tuple(clauses))


def load_sla_file(path: str | Path) -> SLA:
    """Read an SLA from YAML: a list of clause strings, or ``{sla: [...]}`` / ``{sla: "..."}``."""
    p = Path(path)
    doc = read_yaml(p, "the SLA file", error=SLAParseError)
    if isinstance(doc, dict):
        if "sla" not in doc:
            raise SLAParseError(
                f"{p}: expected a key 'sla' holding a list of clauses, found keys {list(doc)}\n{GRAMMAR}"
            )
        doc = doc["sla"]
    if isinstance(doc, str):
        doc = [doc]
    if not isinstance(doc, list) or not doc:
        raise SLAParseError(f"{p}: expected a list of SLA clauses, found {type(doc).__name__}\n{GRAMMAR}")
    try:
        return parse_sla(doc)
    except SLAParseError as exc:
        raise SLAParseError(f"{p}: {exc}") from None


def combine(*slas: SLA) -> SLA:
    """All clauses of several SLAs (AND), duplicates rejected."""
    return parse_sla([c.text for s in slas for c in s.clauses])



# --------------------------------------------------------------------------------------
# The SLA against the data it will be evaluated on (called once, at the start of fit_limits)


def check_sla_against(sla: SLA, datasets: Iterable[object], *, mixes: object = None) -> None:
    """Refuse an SLA whose metrics the data lacks, or has only for some steps; one error lists them all.

    For a request trace, a percentile clause (or goodput bound) on ``ttft`` needs a
    ``ttft_ms`` value on at least one successful request of **every** (run, step) that
    has successful requests; a step where every request failed is not counted against
    it (its percentile is rightly undefined). For a load-point table, a percentile clause
    needs some statistic of its metric (``<metric>_p99``, ``_max``, ...) on every step. ``error_rate`` reads ``status``,
    which every trace has (null = ok), so it is never refused here.

    ``mixes`` (a :class:`~bearing_lib.data.mixes.MixSpec`) is checked too: a spec whose
    mixes hold none of the requests is an error (:func:`~bearing_lib.data.mixes.check_spec_matches`).

    Raises
    ------
    SchemaError
        Naming each clause, the file, the metric column and the steps without it.
    ParameterError
        When ``mixes`` matches no request.

    Examples
    --------
    >>> import polars as pl
    >>> from bearing_lib.data.provenance import Provenance
    >>> from bearing_lib.data.trace import RequestTrace, conform
    >>> f = conform(pl.DataFrame({"start_s": [1.0, 2.0], "latency_ms": [5.0, 6.0], "step": [0, 1]}))
    >>> tr = RequestTrace(f, Provenance(source="t.csv", format="x", tool="x", sha256=""))
    >>> check_sla_against(parse_sla("p99(latency) <= 1s"), [tr])
    >>> check_sla_against(parse_sla("p99(ttft) <= 1s"), [tr])
    Traceback (most recent call last):
    ...
    bearing_lib.common.errors.SchemaError: SLA clause 'p99(ttft) <= 1s': t.csv has no ttft_ms value on any \
successful request; expected TTFT on every step (the SLA cannot be evaluated: pick a metric the file records, \
e.g. latency)
    """
    from bearing_lib.common.errors import Problem, SchemaError, raise_problems
    from bearing_lib.data.loadpoints import LoadPointTable

    datasets = list(datasets)
    problems: list[Problem] = []
    for ds in datasets:
        source = getattr(getattr(ds, "provenance", None), "source", "the data")
        frame: pl.DataFrame = ds.frame  # type: ignore[attr-defined]
        tables = isinstance(ds, LoadPointTable)
        keys = [k for k in ("run_id", "step") if k in frame.columns]
        for c in sla.clauses:
            needed = ([c.metric] if c.metric else []) + [b.metric for b in c.bounds or ()]
            for metric in dict.fromkeys(needed):
                # a table without the exact percentile may still bound it (a max over enough
                # requests): any statistic of the metric counts as having it
                cols = [x for x in frame.columns if x.startswith(f"{metric}_")] if tables else [metric]
                problems.extend(_metric_problems(frame, c.text, metric, cols, keys, source, tables))
    if problems:
        # one location per problem is the clause; the file is in each message
        raise_problems(problems, path=None, cls=SchemaError)
    if mixes is not None:
        from bearing_lib.data.mixes import check_spec_matches

        check_spec_matches(mixes, datasets)  # type: ignore[arg-type]


def _metric_problems(frame: pl.DataFrame, clause: str, metric: str, cols: list[str], keys: list[str],
                     source: str, tables: bool) -> list:
    from bearing_lib.common.errors import Problem

    short = _SHORT.get(metric, metric)
    word = "TTFT" if short == "ttft" else short
    present = [c for c in cols if c in frame.columns]
    has = pl.any_horizontal([pl.col(c).is_not_null() for c in present]) if present else pl.lit(False)
    if not tables:
        per = (frame.lazy().group_by(keys or [pl.lit(0).alias("_k")])
               .agg(OK_EXPR.sum().alias("n_ok"), (has & OK_EXPR).sum().alias("n_has"))
               .filter(pl.col("n_ok") > 0).collect())
    else:
        per = frame.group_by(keys or [pl.lit(0).alias("_k")]).agg(pl.len().alias("n_ok"), has.sum().alias("n_has"))
    if per.height == 0:
        return []
    what = f"{' or '.join(cols) if tables else metric}"
    lacking = per.filter(pl.col("n_has") == 0)
    if lacking.height == 0:
        return []
    alt = "latency" if short != "latency" else "ttft"
    if lacking.height == per.height:
        where = "on any step" if tables else "on any successful request"
        return [Problem(f"SLA clause {clause!r}: {source} has no {what} value {where}; expected {word} on every "
                        f"step (the SLA cannot be evaluated: pick a metric the file records, e.g. {alt})")]
    steps = [
        "/".join(str(r[k]) for k in keys) for r in lacking.sort(keys or pl.first()).head(10).iter_rows(named=True)
    ] if keys else []
    more = f" (and {lacking.height - 10} more)" if lacking.height > 10 else ""
    label = "/".join(keys) or "group"
    return [Problem(f"SLA clause {clause!r}: {source} has {what} for only {per.height - lacking.height} of "
                    f"{per.height} steps; {label} {', '.join(steps)}{more} have none; expected {word} on every step "
                    "(a limit from some steps only would be silently wrong)")]


__all__ = ["GRAMMAR", "METRICS", "OK_EXPR", "SLA", "Bound", "Clause", "check_sla_against", "combine",
           "load_sla_file", "parse_clause", "parse_sla"]
