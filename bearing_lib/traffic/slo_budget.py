"""SLO error budget from a trace's status column: budget, consumption, burn rate, fastest burns.

Definitions (Google SRE workbook, "Alerting on SLOs"; the seed's "30 min/month budget,
10 % burned within 1 h -> open a ticket"):

* objective ``o`` (e.g. 0.999) over a period of ``period_days`` (30): the request budget
  is ``(1 - o) x`` the requests of a period at the trace's mean rate; the time budget is
  ``(1 - o) x period`` minutes (43.2 min for 99.9 % over 30 days).
* a request is **bad** when its status is in ``bad_statuses`` (``error``, ``timeout``,
  ``rejected``); ``cancelled`` (the client's doing) and ``unknown`` (nobody saw the outcome)
  are neither good nor bad and are left out of the ratio, numerator and denominator
  (``bearing_lib.data.trace.OUTCOME_UNKNOWN``, docs/canonical-trace.md); rows with no
  status are left out and counted.
* consumption: bad requests / request budget; bad minutes / time budget, where a minute
  is bad when its share of bad requests exceeds ``bad_minute_ratio`` (default ``1 - o``).
* **burn rate** = error ratio / (1 - o): 1 spends the budget exactly over the period.
* fastest burn per window length ``w``: the ``w``-long stretch (sliding by one minute)
  with the most bad requests; its budget share = its bad requests / request budget.
* alert rules: e.g. ``10 % of the budget within 1 h -> ticket``; a rule fires when some
  window of its length consumed at least its share.

Minutes here cover every request (the partial first and last minutes are kept: a
budget counts every request), aligned to UTC minutes or, for relative clocks, from the
first request.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from bearing_lib.common.errors import ParameterError
from bearing_lib.common.unavailable import Unavailable
from bearing_lib.data.trace import OUTCOME_UNKNOWN, STATUSES, RequestTrace
from bearing_lib.traffic.document import AlertCheck, BudgetConsumed, BurnWindow, ErrorBudget, SLOBudget

DEFAULT_BAD_STATUSES: tuple[str, ...] = ("error", "timeout", "rejected")
DEFAULT_WINDOWS_S: tuple[float, ...] = (300.0, 3600.0, 6 * 3600.0, 86_400.0)


@dataclass(frozen=True)
class BurnAlertRule:
    """Fire ``action`` when ``budget_fraction`` of the period's budget burns within ``window_s``."""

    window_s: float
    budget_fraction: float
    action: str = "ticket"

    @property
    def burn_rate_threshold(self) -> float:
        """The equivalent burn-rate threshold for a period of 30 days."""
        return self.budget_fraction * 30 * 86_400 / self.window_s


DEFAULT_ALERT_RULES: tuple[BurnAlertRule, ...] = (BurnAlertRule(3600.0, 0.10, "ticket"),)


def slo_budget(
    trace: RequestTrace,
    *,
    objective: float = 0.999,
    period_days: float = 30.0,
    bad_statuses: Sequence[str] = DEFAULT_BAD_STATUSES,
    windows_s: Sequence[float] = DEFAULT_WINDOWS_S,
    alert_rules: Sequence[BurnAlertRule] = DEFAULT_ALERT_RULES,
    bad_minute_ratio: float | None = None,
) -> SLOBudget | Unavailable:
    """Error-budget accounting from ``trace``'s status column, or why it cannot be made.

    Returns :class:`Unavailable` when the trace has no status (every value null) or no
    per-request times.
    """
    if not (0 < objective < 1):
        raise ParameterError(f"objective must be in (0, 1), e.g. 0.999; got {objective!r}")
    if not period_days > 0:
        raise ParameterError(f"period_days must be > 0, got {period_days!r}")
    unknown = [b for b in bad_statuses if b not in STATUSES]
    if unknown:
        raise ParameterError(f"bad_statuses {unknown} are not statuses; expected some of {', '.join(STATUSES)}")
    prov = trace.provenance
    f = trace.frame
    if f["status"].null_count() == f.height:
        return Unavailable(
            f"{prov.source} records no request outcome (no status column), so no error budget can be computed"
        )
    if prov.time_origin == "none":
        return Unavailable(f"{prov.source} keeps no per-request times, so budget burn over time cannot be computed")
    origin = 0.0 if prov.time_origin == "epoch" else float(f["start_s"].min())
    t_first = float(f["start_s"].min())
    k0 = math.floor((t_first - origin) / 60.0)
    per_min = pl.collect_all(status_minute_partials(f.lazy(), origin, k0, bad_statuses))[0]
    b = budget_from_minutes(per_min, origin=origin, k0=k0, t_last=float(f["start_s"].max()),
                            n_no_status=int(f["status"].null_count()), objective=objective,
                            period_days=period_days, bad_statuses=bad_statuses, windows_s=windows_s,
                            alert_rules=alert_rules, bad_minute_ratio=bad_minute_ratio)
    n_out = int(f["status"].is_in(no_outcome_statuses(bad_statuses)).sum())
    if n_out:
        b.notes.append(f"{n_out} request(s) have no outcome (status {' / '.join(no_outcome_statuses(bad_statuses))}): "
                       "neither good nor bad, left out")
    return b


def no_outcome_statuses(bad_statuses: Sequence[str]) -> list[str]:
    """The statuses left out of the ratio: cancelled / unknown, unless the caller counts them as bad."""
    return [s for s in OUTCOME_UNKNOWN if s not in bad_statuses]


def status_minute_partials(lf: pl.LazyFrame, origin: float, k0: int,
                           bad_statuses: Sequence[str] = DEFAULT_BAD_STATUSES) -> list[pl.LazyFrame]:
    """Requests with a status and bad ones per minute ``k`` (from ``k0``): a partial that sums
    across partitions of one trace (the Dask engine's tasks)."""
    return [
        lf.filter(pl.col("status").is_not_null() & ~pl.col("status").is_in(no_outcome_statuses(bad_statuses)))
        .select(
            (((pl.col("start_s") - origin) / 60.0).floor().cast(pl.Int64) - k0).alias("k"),
            pl.col("status").is_in(list(bad_statuses)).alias("bad"),
        )
        .group_by("k")
        .agg(pl.len().alias("n"), pl.col("bad").sum().alias("bad"))
    ]


def budget_from_minutes(
    per_min: pl.DataFrame,
    *,
    origin: float,
    k0: int,
    t_last: float,
    n_no_status: int,
    objective: float = 0.999,
    period_days: float = 30.0,
    bad_statuses: Sequence[str] = DEFAULT_BAD_STATUSES,
    windows_s: Sequence[float] = DEFAULT_WINDOWS_S,
    alert_rules: Sequence[BurnAlertRule] = DEFAULT_ALERT_RULES,
    bad_minute_ratio: float | None = None,
) -> SLOBudget:
    """The budget from per-minute counts (``k``, ``n``, ``bad``; several partitions' rows are summed)."""
    ratio = (1 - objective) if bad_minute_ratio is None else bad_minute_ratio
    per_min = per_min.group_by("k").agg(pl.col("n", "bad").sum())
    n_min = int(math.floor((t_last - origin) / 60.0)) - k0 + 1
    total = np.zeros(n_min, dtype=np.int64)
    bad = np.zeros(n_min, dtype=np.int64)
    k = per_min["k"].to_numpy()
    total[k] = per_min["n"].to_numpy()
    bad[k] = per_min["bad"].to_numpy()
    n_req, n_bad = int(total.sum()), int(bad.sum())
    span_s = n_min * 60.0
    budget_requests = (1 - objective) * (n_req / span_s) * period_days * 86_400
    with np.errstate(divide="ignore", invalid="ignore"):
        minute_ratio = np.where(total > 0, bad / np.maximum(total, 1), 0.0)
    n_bad_minutes = int((minute_ratio > ratio).sum())
    c_bad = np.concatenate([[0], np.cumsum(bad)])
    c_tot = np.concatenate([[0], np.cumsum(total)])
    fastest: list[BurnWindow] = []
    by_window: dict[float, BurnWindow] = {}
    for w_s in sorted({float(w) for w in windows_s} | {float(r.window_s) for r in alert_rules}):
        w = int(round(w_s / 60.0))
        if w < 1 or w > n_min:
            fastest.append(BurnWindow(
                window_s=w_s, available=False,
                reason=f"the trace covers {n_min} minute(s); a {w_s / 60:g}-minute window does not fit"))
            continue
        wb = c_bad[w:] - c_bad[:-w]
        wt = c_tot[w:] - c_tot[:-w]
        i = int(np.argmax(wb))
        burn = (wb[i] / wt[i]) / (1 - objective) if wt[i] else 0.0
        start = origin + (k0 + i) * 60.0
        bw = BurnWindow(window_s=w_s, start_s=start, end_s=start + w_s, n_requests=int(wt[i]), n_bad=int(wb[i]),
                        error_ratio=int(wb[i]) / int(wt[i]) if int(wt[i]) else 0.0, burn_rate=float(burn),
                        budget_fraction=float(wb[i] / budget_requests) if budget_requests > 0 else math.inf)
        by_window[w_s] = bw
        fastest.append(bw)
    alerts: list[AlertCheck] = []
    for rule in alert_rules:
        text = f"{rule.budget_fraction:.0%} of the budget within {rule.window_s / 3600:g} h -> {rule.action}"
        got = by_window.get(float(rule.window_s))
        if got is None:
            alerts.append(AlertCheck(rule=text, fired=None, reason="the trace is shorter than the rule's window"))
        else:
            frac = float(got.budget_fraction)  # type: ignore[arg-type]
            alerts.append(AlertCheck(rule=text, fired=frac >= rule.budget_fraction, worst_budget_fraction=frac,
                                     window_start_s=got.start_s))
    notes = []
    if n_no_status:
        notes.append(f"{n_no_status} request(s) carry no status and are left out")
    if span_s < period_days * 86_400:
        notes.append(
            f"the trace covers {span_s / 3600:.2f} h of a {period_days:g}-day period: consumption is what this "
            "stretch spent; the request budget assumes the trace's mean rate holds over the period"
        )
    error_ratio = n_bad / n_req if n_req else 0.0
    burn_rate = error_ratio / (1 - objective)
    budget_minutes = (1 - objective) * period_days * 1440
    return SLOBudget(
        objective=objective, period_days=period_days, bad_statuses=list(bad_statuses), n_requests=n_req, n_bad=n_bad,
        n_no_status=n_no_status, span_s=span_s, error_ratio=error_ratio, burn_rate=burn_rate,
        budget=ErrorBudget(minutes=budget_minutes, request_fraction=1 - objective, requests=budget_requests,
                         requests_basis="(1 - objective) x the period's requests at the trace's mean rate"),
        consumed=BudgetConsumed(requests=n_bad, fraction=n_bad / budget_requests if budget_requests > 0 else math.inf,
                             bad_minutes=n_bad_minutes, bad_minute_ratio=ratio,
                             minutes_fraction=n_bad_minutes / budget_minutes),
        days_to_exhaust_at_this_burn=(period_days / burn_rate) if burn_rate > 0 else None,
        fastest_burn=fastest, alerts=alerts, notes=notes,
    )
