"""The sources' traffic-light scorecard and health checklist, computed where the data allows.

Scorecard (green / yellow / red), per docs/domain.md:

* **compute**: single-path memory headroom ``1 - need / GPU memory`` at the planned
  concurrency and the P99 sequence length: ≥ 30 % green, 10–30 % yellow, < 10 % red;
* **business**: peak curve known and headroom ``Q_ult / Q_target - 1`` ≥ 50 % green;
  only a mean rate yellow; no traffic model red (a known peak with less headroom is
  yellow, a peak above the limit red);
* **data**, **engineering**, **budget**: user-supplied inputs (see :func:`scorecard`);
  when absent the row says "not assessed" and why.

Health checklist: single-path P95 < SLA/3; error rate at peak < 0.1 % (danger > 1 %);
GPU utilisation 60–85 % (danger > 95 % or < 20 %); cost per request ≤ 5 % of the monthly
budget; no error change during a rolling release; data freshness. Each item is computed
from the limits/profile where possible and otherwise marked ``not measured`` with the reason.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from bearing_lib.plan.fos import UNTESTED_BASIS
from bearing_lib.plan.jsonform import STRICT, to_json

if TYPE_CHECKING:
    from bearing_lib.plan.plan_step import PlanStep

Status = Literal["green", "yellow", "red", "not assessed"]
Health = Literal["healthy", "warning", "danger", "not measured"]
Value = float | str | bool | dict[str, Any] | None
"""A row's value: a number, a word, a flag, the user's inputs (engineering) or nothing."""
LATENCY_METRICS = ("latency_ms", "ttft_ms", "tpot_ms", "itl_ms")


@dataclass
class ScoreRow:
    """One row of the traffic-light scorecard: a dimension, its status, the value judged and why."""

    __pydantic_config__ = STRICT
    dimension: str
    status: Status
    value: Value
    reason: str

    def to_dict(self) -> dict[str, object]:
        return to_json(self)


@dataclass
class CheckItem:
    """One item of the health checklist: the metric, the healthy rule, its status, the value and why."""

    __pydantic_config__ = STRICT
    metric: str
    healthy_rule: str
    status: Health
    value: Value
    reason: str

    def to_dict(self) -> dict[str, object]:
        return to_json(self)


@dataclass
class Scorecards:
    """The scorecard and the health checklist (the plan's ``scorecards``)."""

    __pydantic_config__ = STRICT
    scorecard: list[ScoreRow]
    checklist: list[CheckItem]

    def to_dict(self) -> dict[str, object]:
        return to_json(self)

    def _repr_html_(self) -> str:  # pragma: no cover - notebook display
        a = "".join(f"<tr><td>{r.dimension}</td><td>{r.status}</td><td>{html.escape(r.reason)}</td></tr>"
                    for r in self.scorecard)
        b = "".join(f"<tr><td>{c.metric}</td><td>{c.status}</td><td>{html.escape(c.reason)}</td></tr>"
                    for c in self.checklist)
        return (f"<table><tr><th>dimension</th><th>status</th><th>why</th></tr>{a}</table>"
                f"<table><tr><th>metric</th><th>status</th><th>why</th></tr>{b}</table>")


# --------------------------------------------------------------------------- scorecard rows
def compute_row(headroom: float | None, why_missing: str = "") -> ScoreRow:
    """Compute dimension from the memory headroom (fraction of GPU memory left)."""
    if headroom is None:
        return ScoreRow("compute", "not assessed", None,
                        why_missing or "no memory plan: give a model preset and the GPU memory")
    if headroom >= 0.30:
        return ScoreRow("compute", "green", headroom, f"single-path memory headroom {headroom:.0%} ≥ 30%")
    if headroom >= 0.10:
        return ScoreRow("compute", "yellow", headroom, f"memory headroom {headroom:.0%} is 10–30%")
    if headroom < 0:
        return ScoreRow("compute", "red", headroom, f"does not fit: needs {-headroom:.0%} more than the GPU memory")
    return ScoreRow("compute", "red", headroom, f"near OOM: memory headroom {headroom:.0%} < 10%")


def business_row(peak_known: bool, mean_known: bool, fos_value: float | None, fos_bound: str = "none",
                 fos_lo: float | None = None, *, blended: bool = False) -> ScoreRow:
    """Business dimension: peak curve known and headroom (FOS − 1) ≥ 50 %. ``fos_lo``: the FOS's 95 % lower end,
    which shows the headroom of an upper bound closed below (a limit capped at the saturated throughput);
    ``blended``: the limit blends several mixes (the words for an untested peak, :data:`~bearing_lib.plan.fos.
    UNTESTED_BASIS`)."""
    if not peak_known:
        if mean_known:
            return ScoreRow("business", "yellow", None, "only a mean rate is known, no peak curve")
        return ScoreRow("business", "red", None, "no traffic model (no production profile)")
    if fos_value is None:
        return ScoreRow("business", "not assessed", None, "peak curve known, but no bounded limit to compare with")
    head = fos_value - 1.0
    rel = {"lower": "≥ ", "upper": "< "}.get(fos_bound, "")
    if fos_bound == "lower" and head >= 0.5 or fos_bound == "none" and head >= 0.5:
        return ScoreRow("business", "green", head, f"peak curve known and headroom {rel}{head:.0%} ≥ 50%")
    if fos_bound == "upper" and fos_lo is not None and fos_lo - 1.0 >= 0.5:
        return ScoreRow("business", "green", fos_lo - 1.0, f"peak curve known and headroom {rel}{head:.0%}, at least "
                        f"{fos_lo - 1.0:.0%} (95% CI) ≥ 50%")
    if fos_bound == "upper" and head <= 0 or fos_bound == "none" and head < 0:
        return ScoreRow("business", "red", head, f"the planned peak exceeds the limit (headroom {rel}{head:.0%})")
    if fos_bound == "lower" and head < 0:
        # a lower bound below 1: the peak lies above the limit the test showed, as the verdict's "untested at the peak"
        # (JMeter's fakestore run read "headroom ≥ -28% is not shown ≥ 50%" in yellow beside a red verdict; round 22),
        # in the verdict's words (round 62)
        return ScoreRow("business", "red", head, f"the planned peak lies above {UNTESTED_BASIS[blended]} (headroom "
                        f"{rel}{head:.0%}): untested there")
    return ScoreRow("business", "yellow", head, f"peak curve known but headroom {rel}{head:.0%} is not shown ≥ 50%")


def data_row(inputs: Mapping[str, object] | None) -> ScoreRow:
    """Data dimension from user input ``{"coverage": 0.93, "bad_label_rate": 0.01}`` (fractions)."""
    if not inputs or inputs.get("coverage") is None:
        return ScoreRow("data", "not assessed", None, "user input: give data coverage (and bad-label rate)")
    cov = float(inputs["coverage"])  # type: ignore[arg-type]
    bad = inputs.get("bad_label_rate")
    if cov >= 0.9 and bad is not None and float(bad) < 0.02:  # type: ignore[arg-type]
        return ScoreRow("data", "green", cov, f"coverage {cov:.0%} ≥ 90%, bad labels {float(bad):.1%} < 2%")  # type: ignore[arg-type]
    if cov >= 0.7:
        extra = "" if bad is not None else " (bad-label rate not given)"
        return ScoreRow("data", "yellow", cov, f"coverage {cov:.0%}{extra}; green needs ≥ 90% and bad labels < 2%")
    return ScoreRow("data", "red", cov, f"coverage {cov:.0%} < 70%")


def engineering_row(inputs: Mapping[str, object] | None) -> ScoreRow:
    """Engineering dimension from user input ``{"canary": bool, "monitoring": bool, "rollback": bool}``."""
    if not inputs:
        return ScoreRow("engineering", "not assessed", None, "user input: canary / monitoring / rollback in place?")
    c, m, r = (bool(inputs.get(k)) for k in ("canary", "monitoring", "rollback"))
    if c and m and r:
        return ScoreRow("engineering", "green", inputs, "canary, monitoring and rollback in place")
    if m:
        missing = ", ".join(k for k, v in (("canary", c), ("rollback", r)) if not v)
        return ScoreRow("engineering", "yellow", inputs, f"monitoring in place; missing: {missing}")
    return ScoreRow("engineering", "red", inputs, "no monitoring")


def budget_row(inputs: Mapping[str, object] | None) -> ScoreRow:
    """Budget dimension from user input ``{"cost_model": "clear" | "tight" | "none"}``."""
    if not inputs or inputs.get("cost_model") is None:
        return ScoreRow("budget", "not assessed", None, "user input: is there a cost model with headroom?")
    v = str(inputs["cost_model"]).lower()
    table = {"clear": ("green", "clear cost model with headroom"), "tight": ("yellow", "computable but tight"),
             "none": ("red", "the running cost was never computed")}
    if v not in table:
        return ScoreRow("budget", "not assessed", v, f"unknown cost_model {v!r}; expected clear, tight or none")
    s, why = table[v]
    return ScoreRow("budget", s, v, why)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- checklist
def _sla_latency(sla: Sequence[Any]) -> tuple[str, float] | None:
    """The first latency bound of the SLA's clauses (:class:`~bearing_lib.limits.sla.Clause` of the limits result)."""
    for c in sla or []:
        if c.metric in LATENCY_METRICS and c.op in ("<", "<=") and c.threshold is not None:
            return str(c.metric), float(c.threshold)
    return None


_METRIC_SAID = {"ttft_ms": "TTFT", "latency_ms": "end-to-end latency", "tpot_ms": "TPOT",
                "itl_ms": "inter-token latency"}
"""The canonical latency columns in words (the report's own words for them, ``report.model._METRIC_WORDS``)."""


def single_path_p95(steps: Sequence[PlanStep], sla: Sequence[Any]) -> CheckItem:
    """P95 at the lowest measured load vs a third of the SLA's latency threshold."""
    rule = "single-path P95 < SLA / 3 (danger: near or over the SLA)"
    found = _sla_latency(sla)
    if not found:
        return CheckItem("single-path P95 latency", rule, "not measured", None,
                         "the limits file has no latency SLA clause to compare with")
    metric, thr = found
    # the metric in words, as the report's other sentences say it ("ttft_ms P95 592 ms" read as an internal key: a
    # new user's case, round 22)
    said = _METRIC_SAID.get(metric, metric)
    usable = [s for s in steps if s.stat(f"{metric}_p95") is not None and s.offered_load is not None]
    if not usable:
        return CheckItem("single-path P95 latency", rule, "not measured", None,
                         f"no load step reports a {said} P95")
    low = min(usable, key=lambda s: float(s.offered_load))  # type: ignore[arg-type]
    p95 = float(low.stat(f"{metric}_p95"))  # type: ignore[arg-type]
    at = lowest_load_text(steps, low)
    if "p95" in low.too_few:
        # the limits left this P95 unsupported (a new user saw it called healthy beside "too few requests for a p95
        # (60 successful)" in the limits; round 22): it is still the only single-path figure, said as what it is
        at += (f" (from {low.n_ok:,} requests, too few for a supported P95: an indication only)" if low.n_ok
               else " (from too few requests for a supported P95: an indication only)")
    name = "single-path P95 latency"
    if p95 < thr / 3:
        why = f"{said} P95 {p95:,.0f} ms < {thr / 3:,.0f} ms (SLA {thr:,g} / 3) {at}"
        return CheckItem(name, rule, "healthy", p95, why)
    if p95 >= 0.9 * thr:
        why = f"{said} P95 {p95:,.0f} ms is near or over the SLA {thr:,g} ms {at}"
        return CheckItem(name, rule, "danger", p95, why)
    return CheckItem(name, rule, "warning", p95, f"{said} P95 {p95:,.0f} ms ≥ SLA/3 ({thr / 3:,.0f} ms) {at}")


def _load(step: PlanStep) -> float | None:
    v = step.offered_load
    try:
        f = float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def lowest_load_text(steps: Sequence[PlanStep], judged: PlanStep) -> str:
    """Where a single-path figure was read: "at the lowest tested load X" when ``judged`` is the test's
    lowest step, else "at the lowest judged load X (the test started at Y; ...)": the lowest *tested*
    load (every step) and the lowest *judged* one (the lowest step with the statistic) are two numbers
    and the text never calls one by the other's name."""
    unit = f" {judged.offered_load_unit}" if judged.offered_load_unit else ""
    x = _load(judged)
    tested = [v for v in (_load(s) for s in steps) if v is not None]
    lowest = min(tested) if tested else x
    if x is None or lowest is None or lowest >= x:
        return f"at the lowest tested load {x:g}{unit}" if x is not None else "at the lowest tested load"
    return (f"at the lowest judged load {x:g}{unit} (the test started at {lowest:g}{unit}; the steps below "
            "have no value for it)")


def error_rate_at_peak(steps: Sequence[PlanStep], target_rps: float) -> CheckItem:
    """Error rate at the lowest load step whose throughput reaches the planned peak."""
    rule = "error rate at peak < 0.1% (danger > 1% sustained)"
    usable = [s for s in steps if s.error_rate is not None and s.throughput_rps is not None]
    reach = [s for s in usable if float(s.throughput_rps) >= target_rps]  # type: ignore[arg-type]
    if not reach:
        return CheckItem("error rate at peak", rule, "not measured", None,
                         f"no load step reached the planned peak {target_rps:,.2f} req/s with an error rate")
    s = min(reach, key=lambda s: float(s.throughput_rps))  # type: ignore[arg-type]
    e = float(s.error_rate)  # type: ignore[arg-type]
    at = f"at step {s.step} ({float(s.throughput_rps):,.2f} req/s)"  # type: ignore[arg-type]
    if e < 0.001:
        return CheckItem("error rate at peak", rule, "healthy", e, f"{e:.3%} < 0.1% {at}")
    if e > 0.01:
        return CheckItem("error rate at peak", rule, "danger", e, f"{e:.2%} > 1% {at}")
    return CheckItem("error rate at peak", rule, "warning", e, f"{e:.2%} between 0.1% and 1% {at}")


def _user_check(metric: str, rule: str, value: object, judge, missing: str) -> CheckItem:
    if value is None:
        return CheckItem(metric, rule, "not measured", None, missing)
    status, why = judge(value)
    return CheckItem(metric, rule, status, value, why)


def _gpu(v: object) -> tuple[Health, str]:
    u = float(v)  # type: ignore[arg-type]
    if 0.60 <= u <= 0.85:
        return "healthy", f"GPU utilisation {u:.0%} within 60–85%"
    if u > 0.95 or u < 0.20:
        return "danger", f"GPU utilisation {u:.0%} (> 95% or < 20%)"
    return "warning", f"GPU utilisation {u:.0%} outside 60–85%"


def _cost(v: object) -> tuple[Health, str]:
    share = float(v)  # type: ignore[arg-type]
    return ("healthy", f"{share:.1%} of the monthly budget ≤ 5%") if share <= 0.05 else (
        "danger", f"{share:.1%} of the monthly budget > 5%")


def _release(v: object) -> tuple[Health, str]:
    delta = float(v)  # type: ignore[arg-type]
    return ("healthy", "no error change during a release") if delta <= 0 else (
        "danger", f"error rate rose by {delta:.2%} during a release")


def _fresh(v: object) -> tuple[Health, str]:
    h = float(v)  # type: ignore[arg-type]
    return ("healthy", f"data {h:g} h behind") if h <= 1 else (
        ("danger", f"index {h:g} h behind (> 24 h)") if h > 24 else ("warning", f"data {h:g} h behind"))


def checklist(
    *,
    steps: Sequence[PlanStep] = (),
    sla: Sequence[Any] = (),
    target_rps: float | None = None,
    user: Mapping[str, object] | None = None,
) -> list[CheckItem]:
    """The sources' health checklist. ``user`` may give ``gpu_utilisation`` (fraction),
    ``cost_share_of_monthly_budget`` (fraction), ``release_error_delta`` (fraction),
    ``data_lag_hours``."""
    user = user or {}
    items = [single_path_p95(steps, sla)]
    if target_rps is None:
        items.append(CheckItem("error rate at peak", "error rate at peak < 0.1% (danger > 1% sustained)",
                               "not measured", None, "no planned peak"))
    else:
        items.append(error_rate_at_peak(steps, target_rps))
    items += [
        _user_check("GPU utilisation", "60–85% (danger > 95% or < 20% for long)", user.get("gpu_utilisation"), _gpu,
                    "no GPU telemetry in the inputs (give gpu_utilisation)"),
        _user_check("cost per request", "≤ 5% of the monthly budget", user.get("cost_share_of_monthly_budget"), _cost,
                    "no cost inputs (give cost_share_of_monthly_budget)"),
        _user_check("cold start / rolling release", "no error change during a release", user.get("release_error_delta"),
                    _release, "needs a rolling release during a load test (give release_error_delta)"),
        _user_check("data freshness", "new data visible in real time (danger > 24 h behind)",
                    user.get("data_lag_hours"), _fresh, "not measurable from traces (give data_lag_hours)"),
    ]
    return items


def scorecard(
    *,
    headroom: float | None,
    headroom_missing: str = "",
    peak_known: bool,
    mean_known: bool,
    fos_value: float | None,
    fos_bound: str = "none",
    user: Mapping[str, Mapping[str, object]] | None = None,
    fos_lo: float | None = None,
    blended: bool = False,
) -> list[ScoreRow]:
    """The five-row traffic-light table (``user`` keys: ``data``, ``engineering``, ``budget``); ``blended`` as in
    :func:`business_row`."""
    user = user or {}
    return [
        compute_row(headroom, headroom_missing),
        data_row(user.get("data")),
        business_row(peak_known, mean_known, fos_value, fos_bound, fos_lo, blended=blended),
        engineering_row(user.get("engineering")),
        budget_row(user.get("budget")),
    ]


__all__ = [
    "CheckItem",
    "ScoreRow",
    "Scorecards",
    "budget_row",
    "business_row",
    "checklist",
    "compute_row",
    "data_row",
    "engineering_row",
    "error_rate_at_peak",
    "lowest_load_text",
    "scorecard",
    "single_path_p95",
]
