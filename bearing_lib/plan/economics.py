"""Tokens and money, and the staged plan in instances: the plan's ``economics`` section.

Nothing here reads files or builds the plan: :func:`plan_economics` takes the plan's typed
results (the FOS, the tier, the target, the instance plan) and the profile's typed view, and
returns :class:`PlanEconomics`, whose four parts (:class:`Tokens`, :class:`Money`,
:class:`Staged`, :class:`~bearing_lib.plan.memory.KvMetricsCheck`) are each the part or
:class:`~bearing_lib.common.schema.NotAvailable` with the reason; ``to_dict()`` is the JSON.

Tokens
    A limit in req/s becomes tokens/s with the mix's mean token counts:
    ``input = rps × mean input tokens``, ``output = rps × mean output tokens``, total = both.
    The two factors come from different sides: the req/s is the load test's limit (measured on the
    requests the test sent), the tokens per request are production's. The product is what the
    limit carries only if production's requests cost what the tested ones did; the rule and the
    money's ``token_basis`` say so (:data:`TWO_SIDES`), and the report's fidelity section says
    whether the test represents production (``bearing_lib.fidelity``).
Money (``price_per_hour`` = one instance)
    ``$/1M output tokens at the allowable load = price_per_hour / (A × mean output × 3600) × 10^6``
    with ``A`` the per-instance allowable req/s; ``$/request = price_per_hour / (A × 3600)``;
    ``monthly cost of the fleet = instances × price × 730 h`` (8,760 h / 12);
    the burst buffer costs ``buffer × price × 730 h`` when fixed, and ``buffer × price × bursts
    per month × burst hours`` when elastic (it runs only during bursts).
Budget scorecard row (docs/domain.md: green "clear cost model with headroom", yellow "computable
    but tight", red "never computed"): red without a cost or without a budget to judge it
    against, green when the monthly cost leaves at least ``headroom`` (20 %) of the budget, yellow
    when it fits with less, red when it exceeds the budget.
Staged plan (docs/domain.md: near term = current peak × 1.5; mid term = 6-month forecast × 1.5)
    The current peak is :attr:`bearing_lib.plan.fos.Target.current_peak_rps` (the target's quantile of the
    per-minute rate before growth; the traffic section's near term is the same number).
    ``instances = ceil(rps × 1.5 / A)`` (and, with failure domains, the instances that still carry
    that with the largest domain(s) lost, :mod:`bearing_lib.plan.domains`). The forecast is the
    profile's (:func:`bearing_lib.traffic.targets.trend_forecast`, one function for both): the daily
    peak of the per-minute series (needs >= 28 complete days), its trend used only when significant
    (the slope's 95 % CI excludes 0), else the flat level and "no trend detected"; never below 0.
    :func:`weeks_until_exhausted` is the first week the significant trend exceeds the fleet's
    allowable capacity (None without a trend: no exhaustion date is made up).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

from bearing_lib.common.errors import ParameterError
from bearing_lib.common.estimate import derived_qualifiers
from bearing_lib.common.schema import NotAvailable
from bearing_lib.plan.capacity import InstancePlan
from bearing_lib.plan.domains import FailureDomains
from bearing_lib.plan.fos import FosResult, Target, TierBands
from bearing_lib.plan.inputs import ProfileInput
from bearing_lib.plan.interval import (
    Interval,
    ci_text,
    count_range_text,
    inverted,
    is_open,
    mapped,
    open_end,
    scaled,
)
from bearing_lib.plan.jsonform import STRICT, available, section, to_json
from bearing_lib.plan.memory import KvMetricsCheck, kv_metrics_check
from bearing_lib.plan.scorecards import ScoreRow
from bearing_lib.servers.kv_check import KvGauge
from bearing_lib.traffic.targets import MIN_FORECAST_DAYS, TrendForecast, daily_peaks, trend_forecast

HOURS_PER_MONTH = 730.0
TWO_SIDES = ("the req/s is the load test's limit, measured on the requests the test sent; the tokens per request "
             "are production's: the product holds only where the test's requests are like production's (see the "
             "report's fidelity section)")
STAGE_FACTOR = 1.5


def _positive(**values: float | None) -> None:
    for name, v in values.items():
        if v is None or not math.isfinite(v) or v <= 0:
            raise ParameterError(f"{name} must be a positive number (got {v})")


@dataclass(frozen=True)
class TokenRates:
    """A request rate as tokens per second; with the limit's 95 % CI carried (``*_ci95``, an end ``None`` where
    the limit's CI is open) when the rate is made from a limit that has one."""

    __pydantic_config__ = STRICT
    _OMIT_NONE = ("rps_ci95", "input_tokens_per_s_ci95", "output_tokens_per_s_ci95", "total_tokens_per_s_ci95")
    rps: float
    input_tokens_per_s: float
    output_tokens_per_s: float
    total_tokens_per_s: float
    rps_ci95: Interval | None = None
    input_tokens_per_s_ci95: Interval | None = None
    output_tokens_per_s_ci95: Interval | None = None
    total_tokens_per_s_ci95: Interval | None = None

    def to_dict(self) -> dict[str, float]:
        return to_json(self)


def token_rates(rps: float, *, mean_input_tokens: float, mean_output_tokens: float,
                ci95: Interval | None = None) -> TokenRates:
    """``rps`` in input, output and total tokens per second; ``ci95`` (of ``rps``) scaled the same way.

    >>> token_rates(2.0, mean_input_tokens=100, mean_output_tokens=50, ci95=(1.5, None)).total_tokens_per_s_ci95
    (225.0, None)
    """
    if rps < 0 or mean_input_tokens < 0 or mean_output_tokens < 0:
        raise ParameterError("rates and token counts must be >= 0")
    i, o = rps * mean_input_tokens, rps * mean_output_tokens
    if ci95 is None or ci95 == (None, None):
        return TokenRates(rps, i, o, i + o)
    return TokenRates(rps, i, o, i + o, ci95, _times(ci95, mean_input_tokens), _times(ci95, mean_output_tokens),
                      _times(ci95, mean_input_tokens + mean_output_tokens))


def _times(ci: Interval, k: float) -> Interval:
    return (None if ci[0] is None else ci[0] * k, None if ci[1] is None else ci[1] * k)


def cost_per_million_output_tokens(price_per_hour: float, *, rps: float, mean_output_tokens: float) -> float:
    """Dollars per 10^6 output tokens for one instance serving ``rps`` (its allowable load)."""
    _positive(price_per_hour=price_per_hour, rps=rps, mean_output_tokens=mean_output_tokens)
    return price_per_hour / (rps * mean_output_tokens * 3600.0) * 1e6


def cost_per_request(price_per_hour: float, *, rps: float) -> float:
    """Dollars per request for one instance serving ``rps``."""
    _positive(price_per_hour=price_per_hour, rps=rps)
    return price_per_hour / (rps * 3600.0)


def monthly_cost(instances: int, price_per_hour: float, *, hours: float = HOURS_PER_MONTH) -> float:
    """``instances`` running all month."""
    _positive(price_per_hour=price_per_hour)
    if instances < 0:
        raise ParameterError(f"instances must be >= 0 (got {instances})")
    return instances * price_per_hour * hours


def burst_buffer_monthly_cost(
    buffer: int,
    price_per_hour: float,
    *,
    mode: str,
    bursts_per_month: float | None = None,
    burst_hours: float | None = None,
) -> float:
    """The burst buffer's monthly cost: all month when ``fixed``, only during bursts when ``elastic``."""
    if mode == "fixed":
        return monthly_cost(buffer, price_per_hour)
    if mode != "elastic":
        raise ParameterError(f"buffer mode must be 'fixed' or 'elastic' (got {mode!r})")
    if bursts_per_month is None or burst_hours is None or bursts_per_month < 0 or burst_hours < 0:
        raise ParameterError("an elastic buffer needs bursts_per_month and burst_hours (>= 0)")
    return monthly_cost(buffer, price_per_hour, hours=bursts_per_month * burst_hours)


def budget_row(monthly: float | None, budget: float | None, *, headroom: float = 0.20) -> ScoreRow:
    """The budget scorecard row, computed from the monthly cost and the budget."""
    if monthly is None:
        return ScoreRow("budget", "red", None, "the running cost was never computed")
    if budget is None or budget <= 0:
        return ScoreRow("budget", "red", monthly, f"monthly cost ${monthly:,.0f} with no budget to judge it against")
    share = monthly / budget
    if share <= 1 - headroom:
        status = "green"
        why = f"${monthly:,.0f}/month is {share:.0%} of the ${budget:,.0f} budget (headroom ≥ {headroom:.0%})"
    elif share <= 1:
        status, why = "yellow", f"${monthly:,.0f}/month is {share:.0%} of the ${budget:,.0f} budget: tight"
    else:
        status, why = "red", f"${monthly:,.0f}/month exceeds the ${budget:,.0f} budget ({share:.0%})"
    return ScoreRow("budget", status, share, why)  # type: ignore[arg-type]


@dataclass
class Money:
    """What the fleet costs: $/1M output tokens and $/request at the per-instance allowable load, the monthly
    cost of the base, the burst buffer (fixed: all month; elastic: its burst hours) and the fleet, and the
    budget row. An elastic buffer with unknown burst hours is costed as ``monthly_cost_range``."""

    __pydantic_config__ = STRICT
    _OMIT_NONE = ("monthly_cost_range", "limit_bound", "bound_note", "usd_per_million_output_tokens_ci95",
                  "usd_per_request_ci95", "monthly_cost_all_instances_always_on_ci95", "open_reason")
    available: Literal[True] = field(default=True, kw_only=True)
    price_per_hour: float
    per_instance_allowable: TokenRates
    usd_per_million_output_tokens: float
    usd_per_request: float
    monthly_cost_all_instances_always_on: float
    monthly_cost_base: float
    monthly_cost_burst_buffer: float | None
    monthly_cost_recommended: float | None
    buffer: str
    budget_row: ScoreRow
    budget_per_month: float | None = None
    monthly_cost_range: tuple[float, float] | None = None
    limit_bound: str | None = None
    bound_note: str | None = None
    token_basis: str = TWO_SIDES
    """Where the allowable load and the output tokens per request come from (two sides: :data:`TWO_SIDES`)."""
    usd_per_million_output_tokens_ci95: Interval | None = None
    """Over the limit's 95 % CI (a cost divides by the limit: a limit open above leaves the cost open below)."""
    usd_per_request_ci95: Interval | None = None
    monthly_cost_all_instances_always_on_ci95: Interval | None = None
    """The fleet always on over the instance count's 95 % CI (its low end open where the count's is)."""
    open_reason: str | None = None


def money_for(
    instances: InstancePlan,
    *,
    price_per_hour: float,
    mean_input_tokens: float,
    mean_output_tokens: float,
    monthly_budget: float | None = None,
    burst_hours: float | None = None,
) -> Money:
    """Tokens and money at the plan's per-instance allowable load, from its instance plan: ``total``,
    ``buffer``, how the buffer is held (``buffer_plan.mode``, fixed without one) and the burst model's
    ``per_month`` and ``duration_min`` (``burst_hours`` overrides the duration)."""
    a = instances.per_instance_allowable_rps
    a_ci = instances.per_instance_allowable_ci95
    total, buffer = instances.total, instances.buffer
    mode = instances.buffer_plan.mode if instances.buffer_plan is not None else "fixed"
    burst = instances.burst
    per_month = burst.per_month if burst is not None else None
    hours = burst_hours if burst_hours is not None else (
        burst.duration_min / 60.0 if burst is not None and burst.duration_min is not None else None)
    fleet = monthly_cost(total, price_per_hour)
    if mode == "elastic" and (per_month is None or hours is None):
        buffer_cost = None
        buffer_note = ("elastic buffer: the plan gives no burst frequency and duration (no burst in the profile), so "
                       "the hours it runs are unknown")
    else:
        buffer_cost = burst_buffer_monthly_cost(buffer, price_per_hour, mode=mode, bursts_per_month=per_month,
                                                burst_hours=hours)
        buffer_note = f"{mode} buffer of {buffer}"
    base_cost = monthly_cost(total - buffer, price_per_hour)
    recommended = base_cost + buffer_cost if buffer_cost is not None else None
    money = Money(
        price_per_hour=price_per_hour,
        per_instance_allowable=token_rates(a, mean_input_tokens=mean_input_tokens,
                                           mean_output_tokens=mean_output_tokens, ci95=a_ci),
        usd_per_million_output_tokens=cost_per_million_output_tokens(price_per_hour, rps=a,
                                                                     mean_output_tokens=mean_output_tokens),
        usd_per_request=cost_per_request(price_per_hour, rps=a),
        monthly_cost_all_instances_always_on=fleet, monthly_cost_base=base_cost,
        monthly_cost_burst_buffer=buffer_cost, monthly_cost_recommended=recommended, buffer=buffer_note,
        budget_row=budget_row(recommended, monthly_budget), budget_per_month=monthly_budget,
    )
    if a_ci is not None and a_ci != (None, None):
        money.usd_per_million_output_tokens_ci95 = inverted(a_ci, price_per_hour * 1e6 / (mean_output_tokens * 3600.0))
        money.usd_per_request_ci95 = inverted(a_ci, price_per_hour / 3600.0)
        if instances.total_ci95 is not None:
            money.monthly_cost_all_instances_always_on_ci95 = mapped(
                instances.total_ci95, lambda n: monthly_cost(n, price_per_hour))
        if instances.open_reason:  # a cost divides by the limit: its open end is on the other side
            side = "above" if a_ci[1] is None else "below"
            money.open_reason = f"the limit's 95% CI is open {side}: {instances.open_reason}"
    if recommended is None:
        _bounded_budget(money, monthly_budget)
    return money


# --------------------------------------------------------------------------- staged plan
def instances_for(rps: float, per_instance_allowable_rps: float, *, factor: float = STAGE_FACTOR) -> int:
    """``ceil(rps × factor / A)``."""
    _positive(per_instance_allowable_rps=per_instance_allowable_rps)
    if rps < 0:
        raise ParameterError(f"rps must be >= 0 (got {rps})")
    return math.ceil(rps * factor / per_instance_allowable_rps - 1e-9)


Forecast = TrendForecast
"""The plan's forecast is the profile's (:class:`bearing_lib.traffic.targets.TrendForecast`)."""


def growth_forecast(starts_s: list[float], requests_per_min: list[float], *, horizon_days: float = 182.5,
                    level: float = 0.95) -> TrendForecast:
    """The forecast of the daily peak of a per-minute series (:func:`daily_peaks_of` then
    :func:`~bearing_lib.traffic.targets.trend_forecast`, the profile's function)."""
    days, peaks = daily_peaks_of(starts_s, requests_per_min)
    return trend_forecast(days, peaks, horizon_days=horizon_days, level=level)


def daily_peaks_of(starts_s: list[float], requests_per_min: list[float]) -> tuple[Any, Any]:
    """(day index, peak req/s) of each complete day of a per-minute series, as the profile computes them
    (:func:`~bearing_lib.traffic.targets.daily_peaks`): epoch starts are days from UTC midnight, other starts
    days from the first minute."""
    import numpy as np

    if len(starts_s) != len(requests_per_min):
        raise ParameterError("daily peaks: starts and requests differ in length")
    t = np.asarray(starts_s, dtype=float)
    if t.size == 0:
        return np.empty(0), np.empty(0)
    step = float(np.median(np.diff(np.sort(t)))) if t.size > 1 else 60.0
    return daily_peaks(t, np.asarray(requests_per_min, dtype=float) / 60.0, step or 60.0,
                       aligned=float(t.min()) > EPOCH_2001)


EPOCH_2001 = 978_307_200.0
"""Starts after 2001-01-01 are taken as epoch seconds (the profile's aligned clock)."""


def weeks_until_exhausted(forecast: TrendForecast, capacity_rps: float, *, max_weeks: int = 520) -> int | None:
    """Weeks after the last data day until the significant trend first exceeds ``capacity_rps`` (0 when it
    already does; None when not within ``max_weeks``, when the trend is flat or falling, and when there is
    no significant trend: no exhaustion date is extrapolated from noise)."""
    if not forecast.significant:
        return None
    for k in range(max_weeks + 1):
        if forecast.at(forecast.last_day + 7 * k) > capacity_rps:
            return k
    return None


@dataclass
class NearTerm:
    """Instances for the current peak × 1.5 (``instances_with_domains``: with the largest domain(s) lost)."""

    __pydantic_config__ = STRICT
    _OMIT_NONE = ("instances_with_domains", "instances_ci95")
    rps: float
    instances: int
    rule: str
    instances_with_domains: int | None = None
    instances_ci95: tuple[int | None, int | None] | None = None
    """``instances`` over the limit's 95 % CI; the low end open (None) where the limit's is open above."""


@dataclass
class MidTerm:
    """Instances for the 6-month forecast × 1.5 (and for its prediction interval's upper end); with failure
    domains, the same with the largest domain(s) lost."""

    __pydantic_config__ = STRICT
    _OMIT_NONE = ("instances_with_domains", "instances_upper_with_domains")
    rps: float
    instances: int
    instances_upper: int
    forecast: TrendForecast
    rule: str
    instances_with_domains: int | None = None
    instances_upper_with_domains: int | None = None


@dataclass
class FleetRunsOut:
    """When the forecast's significant trend first exceeds the current fleet's allowable capacity (None: no
    significant trend, or not within 10 years)."""

    __pydantic_config__ = STRICT
    capacity_rps: float
    weeks_after_last: int | None
    statement: str


@dataclass
class Staged:
    """The staged plan in instances: near term (current peak × 1.5), mid term (6-month forecast × 1.5 of the
    daily peaks, ``daily_peaks_rps``; the weekly peaks are shown for reading) and when the current fleet runs
    out."""

    __pydantic_config__ = STRICT
    _OMIT_NONE = ("mid_term_reason", "limit_bound", "bound_note", "daily_peaks_rps", "open_reason")
    available: Literal[True] = field(default=True, kw_only=True)
    per_instance_allowable_rps: float
    near_term: NearTerm
    mid_term: MidTerm | None = None
    fleet_runs_out: FleetRunsOut | None = None
    mid_term_reason: str | None = None
    weekly_peaks_rps: list[float] | None = None
    weekly_peak_statistic: str = ""
    limit_bound: str | None = None
    bound_note: str | None = None
    daily_peaks_rps: list[float] | None = None
    open_reason: str | None = None
    """Why the near term's ``instances_ci95`` has an open end."""


def staged_for(
    per_instance_allowable_rps: float, fleet: int, current_peak_rps: float, *,
    weekly_peaks: list[float] | None = None, forecast: TrendForecast | None = None,
    domains: FailureDomains | None = None, peak_name: str = "",
    allowable_ci95: Interval | None = None, open_reason: str | None = None,
) -> Staged:
    """Near and mid term in instances for a fleet of ``fleet`` instances at ``per_instance_allowable_rps``
    each; mid term only with a ``forecast`` (:func:`growth_forecast`); with ``domains`` each stage also in
    instances that carry it with the largest domain(s) lost, and the fleet is the domains' total."""
    a, peak = per_instance_allowable_rps, current_peak_rps

    def dom(n: int) -> int | None:
        return domains.instances_for(n) if domains is not None else None

    near = instances_for(peak, a)
    out = Staged(per_instance_allowable_rps=a,
                 near_term=NearTerm(peak * STAGE_FACTOR, near,
                                    f"current peak {peak:.4g} req/s{f' ({peak_name})' if peak_name else ''} × "
                                    f"{STAGE_FACTOR}", dom(near)),
                 weekly_peaks_rps=weekly_peaks)
    if allowable_ci95 is not None and allowable_ci95 != (None, None):
        # more allowable load per instance, fewer instances: the ends swap, an open high end opens the low one
        lo_a, hi_a = allowable_ci95
        out.near_term.instances_ci95 = (None if hi_a is None else instances_for(peak, hi_a),
                                        None if lo_a is None else instances_for(peak, lo_a))
        if open_end(allowable_ci95):
            out.open_reason = open_reason
    if forecast is None:
        out.mid_term_reason = f"a forecast needs >= 4 weeks ({MIN_FORECAST_DAYS} complete days) of traffic"
        return out
    fc = forecast
    mid, mid_hi = instances_for(fc.value, a), instances_for(fc.upper, a)
    out.mid_term = MidTerm(fc.value * STAGE_FACTOR, mid, mid_hi, fc,
                           f"{fc.horizon_days:g}-day forecast of the daily peak {fc.value:.4g} req/s "
                           f"({fc.level:.0%} PI {fc.lower:.4g}–{fc.upper:.4g}"
                           + ("" if fc.significant else f"; no trend detected over {fc.n_days} days")
                           + f") × {STAGE_FACTOR}", dom(mid), dom(mid_hi))
    if domains is not None:
        n, cap = domains.total, domains.total * a
        who = f"the current fleet ({n} × {a:.4g} req/s, in {domains.zones} zone(s))"
    else:
        n, cap = fleet, fleet * a
        who = f"the current fleet ({fleet} × {a:.4g} req/s)"
    if not fc.significant:
        lo, hi = fc.slope_ci95
        where = "above" if fc.value > cap else "below"
        statement = (f"no trend detected over {fc.n_days} days (slope 95% CI {lo:+.3g}…{hi:+.3g} req/s per day "
                     f"includes 0): no date at which {who} runs out; the level {fc.value:.4g} req/s is {where} its "
                     f"capacity {cap:.4g} req/s")
        out.fleet_runs_out = FleetRunsOut(cap, None, statement)
        return out
    k = weeks_until_exhausted(fc, cap)
    out.fleet_runs_out = FleetRunsOut(cap, k, f"{who} runs out in {k} week(s) on the trend "
                                              f"({fc.slope_rps_per_day:+.3g} req/s per day)"
                                      if k is not None else "the forecast does not reach the fleet's capacity")
    return out


# --------------------------------------------------------------------------- the plan's economics section
WEEK_S = 7 * 86400.0


def weekly_peaks(starts_s: list[float], requests_per_min: list[float], *, quantile: float = 0.99) -> list[float]:
    """The peak of each *complete* week of a per-minute series, in req/s.

    Weeks are counted from the first minute (``floor((t - t0) / 7 days)``); a week is complete
    when the series reaches its end (the last, partial week is left out). The peak is the
    ``quantile`` of the week's per-minute rates (linear interpolation), the same statistic the
    plan's target is (P99 by default), divided by 60.
    """
    from bearing_lib.common.quantiles import quantile as q_of

    if len(starts_s) != len(requests_per_min):
        raise ParameterError("weekly_peaks: starts and requests differ in length")
    if not starts_s:
        return []
    t0, t_end = min(starts_s), max(starts_s) + 60.0
    n_full = int((t_end - t0) // WEEK_S + 1e-9)
    weeks: list[list[float]] = [[] for _ in range(n_full)]
    for t, r in zip(starts_s, requests_per_min, strict=True):
        k = int((t - t0) // WEEK_S)
        if k < n_full:
            weeks[k].append(float(r))
    return [float(q_of(w, quantile)) / 60.0 if w else 0.0 for w in weeks]


def _series(profile: ProfileInput) -> tuple[list[float], list[float]] | None:
    """(minute starts, requests per minute) of the profile's per-minute series, if it has one."""
    if profile.series is None or profile.series_start_s is None:
        return None
    return list(profile.series_start_s), [float(x) for x in profile.series]


@dataclass(frozen=True)
class MeanTokens:
    """Mean input / output tokens per request of the production traffic, overall and per mix
    (``per_mix``: mix → (mean input, mean output)), and where they come from."""

    mean_input_tokens: float
    mean_output_tokens: float
    basis: str
    per_mix: dict[str, tuple[float, float]]
    per_mix_basis: str


def mean_tokens(profile: ProfileInput, trace: Any = None) -> MeanTokens | NotAvailable:
    """Mean input and output tokens per request of the production traffic, overall and per mix.

    Overall: the profile's ``seq_len.input_tokens.mean`` / ``output_tokens.mean``, else the
    trace's. Per mix: the trace's requests assigned to the profile's ``mix_spec`` (the profile
    JSON carries no per-mix token counts); without a trace every mix gets the overall means,
    and ``per_mix_basis`` says so.
    """
    mi, mo = profile.mean_input_tokens, profile.mean_output_tokens
    basis = "the profile's seq_len input/output token means"
    frame = getattr(trace, "frame", None)
    has_tokens = frame is not None and {"input_tokens", "output_tokens"} <= set(frame.columns)
    if (mi is None or mo is None) and has_tokens:
        import polars as pl

        f = frame.filter(pl.col("input_tokens").is_not_null() & pl.col("output_tokens").is_not_null())
        if f.height:
            mi, mo = float(f["input_tokens"].mean()), float(f["output_tokens"].mean())
            basis = f"the trace's {f.height:,} requests with token counts"
    if mi is None or mo is None:
        return NotAvailable("no token counts: the profile has no seq_len token means and no trace with "
                            "input_tokens and output_tokens was given")
    per_mix: dict[str, tuple[float, float]] = {}
    per_mix_basis = "no per-mix token counts (no trace with a mix spec): each mix uses the overall means"
    spec = profile.mix_spec
    if has_tokens and spec is not None:
        import polars as pl

        f = spec.assign(frame.filter(pl.col("input_tokens").is_not_null()
                                                        & pl.col("output_tokens").is_not_null()))
        for r in f.group_by("mix").agg(pl.col("input_tokens").mean().alias("i"), pl.col("output_tokens").mean()
                                       .alias("o"), pl.len().alias("n")).iter_rows(named=True):
            if r["mix"] is not None:
                per_mix[str(r["mix"])] = (float(r["i"]), float(r["o"]))
        per_mix_basis = "the trace's requests assigned to the profile's mix spec"
    return MeanTokens(mi, mo, basis, per_mix, per_mix_basis)


def _rates(rps: float | None, mi: float, mo: float, ci95: Interval | None = None) -> TokenRates | None:
    return None if rps is None else token_rates(rps, mean_input_tokens=mi, mean_output_tokens=mo, ci95=ci95)


@dataclass
class MixTokens:
    """One mix's limit and allowable load in tokens/s, with the mix's mean tokens per request."""

    __pydantic_config__ = STRICT
    mix: str
    mean_input_tokens: float
    mean_output_tokens: float
    q_ult: TokenRates | None
    allowable: TokenRates | None


@dataclass
class Tokens:
    """The limits in tokens/s: at the blended Q_ult, at the allowable load, per instance, and per mix."""

    __pydantic_config__ = STRICT
    _OMIT_NONE = ("limit_bound", "bound_note", "open_reason")
    available: Literal[True] = field(default=True, kw_only=True)
    mean_input_tokens: float
    mean_output_tokens: float
    basis: str
    per_mix: list[MixTokens]
    per_mix_basis: str
    at_q_ult: TokenRates | None
    at_allowable: TokenRates | None
    per_instance_allowable: TokenRates | None
    rule: str
    limit_bound: str | None = None
    bound_note: str | None = None
    open_reason: str | None = None
    """Why an end of the token rates' ``*_ci95`` is open (the limit's CI is open there)."""


TokensPart = section(Tokens)
MoneyPart = section(Money)
StagedPart = section(Staged)
KvPart = section(KvMetricsCheck)


@dataclass
class PlanEconomics:
    """The plan's economics section: tokens/s, money, the staged plan in instances, and the
    KV-cache check against the engine's metrics (``plan/memory.py``), each its part or
    :class:`NotAvailable` with the reason."""

    __pydantic_config__ = STRICT
    tokens: TokensPart
    money: MoneyPart
    staged: StagedPart
    kv_metrics_check: KvPart

    def to_dict(self) -> dict[str, Any]:
        return to_json(self)

    def summary_lines(self) -> list[str]:
        """What ``bearing plan`` prints for this section."""
        out: list[str] = []
        parts = [x for x in (self.tokens, self.money, self.staged) if available(x)]
        note = next((x.bound_note for x in parts if x.bound_note), None)
        if note:
            out.append(f"bound:       {note}")
        t = self.tokens
        if isinstance(t, Tokens):
            for r, what in ((t.at_q_ult, "Q_ult"), (t.at_allowable, "allowable")):
                if r:
                    ci = ci_text(r.total_tokens_per_s_ci95, t.open_reason if is_open(r.total_tokens_per_s_ci95)
                                 else None, digits=0, label="total 95% CI ")
                    out.append(f"tokens/s:    at {what} {r.rps:,.3f} req/s: input {r.input_tokens_per_s:,.0f}, "
                               f"output {r.output_tokens_per_s:,.0f}, total {r.total_tokens_per_s:,.0f} "
                               f"(mean {t.mean_input_tokens:,.1f} in / {t.mean_output_tokens:,.1f} out)"
                               + (f"; {ci}" if ci else ""))
            for pm in t.per_mix:
                q, a = pm.q_ult, pm.allowable
                if q:
                    out.append(f"  mix {pm.mix}: Q_ult {q.rps:,.3f} req/s = {q.total_tokens_per_s:,.0f} tok/s "
                               f"({q.input_tokens_per_s:,.0f} in + {q.output_tokens_per_s:,.0f} out)"
                               + (f"; allowable {a.rps:,.3f} req/s = {a.total_tokens_per_s:,.0f} tok/s" if a
                                  else ""))
        else:
            out.append(f"tokens/s:    not available: {t.reason}")
        m = self.money
        if isinstance(m, Money):
            rec, buf, rng = m.monthly_cost_recommended, m.monthly_cost_burst_buffer, m.monthly_cost_range
            out.append(f"cost:        ${m.usd_per_million_output_tokens:,.2f} per 1M output tokens at the allowable "
                       f"load (${m.price_per_hour:,.2f}/instance-hour); fleet "
                       + (f"${rec:,.0f}/month" if rec is not None else
                          f"${rng[0]:,.0f}–${rng[1]:,.0f}/month" if rng else "not computed")
                       + (f", of which burst buffer ${buf:,.2f}/month ({m.buffer})" if buf is not None
                          else f" ({m.buffer})"))
            if m.usd_per_million_output_tokens_ci95 is not None:
                out.append("             over the limit's CI: " + ci_text(
                    m.usd_per_million_output_tokens_ci95, m.open_reason, label="$ per 1M output tokens 95% CI ",
                    digits=3))
            out.append(f"budget:      {m.budget_row.status}: {m.budget_row.reason}")
        else:
            out.append(f"cost:        not available: {m.reason}")
        s = self.staged
        if isinstance(s, Staged):
            nt = s.near_term
            least = derived_qualifiers(str(s.limit_bound))[0]
            nd = (f" ({nt.instances_with_domains} with the largest domain(s) lost)"
                  if nt.instances_with_domains is not None else "")
            out.append(f"near term:   {least}{nt.instances} instance(s){nd} for {nt.rps:,.3f} req/s ({nt.rule})"
                       + (f"; {count_range_text(nt.instances_ci95, s.open_reason)}" if nt.instances_ci95 else ""))
            if s.mid_term is not None and s.fleet_runs_out is not None:
                mt = s.mid_term
                md = (f"; {mt.instances_with_domains} (upper {mt.instances_upper_with_domains}) with the largest "
                      "domain(s) lost" if mt.instances_with_domains is not None else "")
                out.append(f"mid term:    {mt.instances} instance(s) (upper {mt.instances_upper}){md} for "
                           f"{mt.rps:,.3f} req/s ({mt.rule}); {s.fleet_runs_out.statement}")
            else:
                out.append(f"mid term:    not available: {s.mid_term_reason}")
        else:
            out.append(f"staged plan: not available: {s.reason}")
        k = self.kv_metrics_check
        out.append(f"KV metrics:  {k.statement}" if isinstance(k, KvMetricsCheck) else f"KV metrics:  {k.reason}")
        return out


def _tokens(fos: FosResult, tier: TierBands, allowable_rps: float | None, instances: InstancePlan | NotAvailable,
            tok: MeanTokens) -> Tokens:
    """Tokens/s at the blended Q_ult, the allowable load and per instance (production means), and per mix at
    its Q_ult and Q_ult / design FOS (the mix's means)."""
    mi, mo = tok.mean_input_tokens, tok.mean_output_tokens
    design = tier.target_fos
    rows = []
    for m in fos.per_mix:
        pi, po = tok.per_mix.get(m.mix, (mi, mo))
        rows.append(MixTokens(m.mix, pi, po, _rates(m.q_ult_rps, pi, po, m.q_ult_ci95),
                              _rates(m.q_ult_rps / design, pi, po, scaled(m.q_ult_ci95, 1 / design))))
    inst = instances if isinstance(instances, InstancePlan) else None
    b = fos.blended
    reasons = [b.open_reason, *(m.fos.open_reason for m in fos.per_mix)]
    return Tokens(mean_input_tokens=mi, mean_output_tokens=mo, basis=tok.basis, per_mix=rows,
                  per_mix_basis=tok.per_mix_basis, at_q_ult=_rates(b.q_blend_rps, mi, mo, b.q_blend_ci95),
                  at_allowable=_rates(allowable_rps, mi, mo, scaled(b.q_blend_ci95, 1 / design)),
                  per_instance_allowable=_rates(inst.per_instance_allowable_rps if inst else None, mi, mo,
                                                inst.per_instance_allowable_ci95 if inst else None),
                  rule="tokens/s = req/s × mean tokens per request (input, output; total = both); per mix at its "
                       f"Q_ult and at Q_ult / design FOS {design:g}, each with the limit's 95% CI; {TWO_SIDES}",
                  open_reason="; ".join(dict.fromkeys(r for r in reasons if r)) or None)


def _staged(instances: InstancePlan, target_rps: float, quantile: float | None, profile: ProfileInput,
            domains: FailureDomains | None = None, peak_name: str = "") -> Staged:
    """The staged plan with the profile's forecast (the daily peaks of its per-minute series, as the profile
    forecasts them) and, for reading, its weekly peaks (the target's statistic of each complete week)."""
    series = _series(profile)
    q = quantile or 0.99
    peaks = weekly_peaks(*series, quantile=q) if series else None
    days, daily = daily_peaks_of(*series) if series else ([], [])
    # one forecast: the profile's own when it made one, else the same function on its series
    fc = profile.forecast if profile.forecast is not None else (
        growth_forecast(*series) if series and len(days) >= MIN_FORECAST_DAYS else None)
    staged = staged_for(instances.per_instance_allowable_rps, instances.total, target_rps, weekly_peaks=peaks,
                        forecast=fc, domains=domains, peak_name=peak_name,
                        allowable_ci95=instances.per_instance_allowable_ci95, open_reason=instances.open_reason)
    if fc is not None:
        if series is not None and len(days) >= MIN_FORECAST_DAYS:
            staged.daily_peaks_rps = [float(v) for v in daily]
    elif series is None:
        staged.mid_term_reason = "the profile has no per-minute series to forecast from"
    else:
        span_d = (max(series[0]) + 60 - min(series[0])) / 86400 if series[0] else 0
        staged.mid_term_reason = (f"a growth forecast needs >= 4 complete weeks of traffic; the profile spans "
                                  f"{span_d:,.2f} day(s) ({len(peaks or [])} complete week(s))")
        if len(peaks or []) >= 4:  # four weeks from the first minute, but fewer complete (UTC) days
            staged.mid_term_reason += f", {len(days)} complete day(s) of the {MIN_FORECAST_DAYS} the forecast needs"
    staged.weekly_peak_statistic = f"P{q * 100:g} of the week's per-minute rate / 60"
    return staged


def plan_economics(
    fos: FosResult,
    tier: TierBands,
    target_rps: float,
    allowable_rps: float | None,
    instances: InstancePlan | NotAvailable,
    profile: ProfileInput,
    *,
    quantile: float | None = None,
    trace: Any = None,
    price_per_hour: float | None = None,
    budget_per_month: float | None = None,
    kv_gauge: KvGauge | None = None,
    domains: FailureDomains | None = None,
    current_peak: Target | None = None,
) -> PlanEconomics:
    """The economics section from the plan's typed results and the profile.

    Tokens/s at Q_ult (``fos.blended.q_blend_rps``) and at the allowable load (``allowable_rps``)
    with the production mean tokens, per mix at its Q_ult and Q_ult / design FOS with that
    mix's mean tokens; money with ``price_per_hour`` (:func:`money_for`); the staged plan
    (:func:`staged_for`) with the profile's forecast when it spans >= 28 complete days, in failure-domain
    units with ``domains``; with ``kv_gauge`` (what the engine reported, ``bearing_lib.servers.kv_check.kv_gauge``)
    the memory section's KV arithmetic checked against the engine's gauge
    (:func:`bearing_lib.plan.memory.kv_metrics_check`). A bound on the limit is said in each part.
    ``current_peak`` (the plan's :class:`~bearing_lib.plan.fos.Target`) gives the staged plan its current
    peak (:attr:`Target.current_peak_rps`, the one definition); without it ``target_rps`` is the peak.
    """
    if price_per_hour is not None:
        _positive(price_per_hour=price_per_hour)
    if budget_per_month is not None:
        _positive(budget_per_month=budget_per_month)
    tok = mean_tokens(profile, trace)
    tokens: Tokens | NotAvailable = (NotAvailable(tok.reason) if isinstance(tok, NotAvailable)
                                     else _tokens(fos, tier, allowable_rps, instances, tok))
    no_inst = None if isinstance(instances, InstancePlan) else f"no instance plan: {instances.reason or 'not computed'}"
    money: Money | NotAvailable
    if price_per_hour is None:
        money = NotAvailable("no instance price given (bearing plan --price-per-hour, or the report parameter "
                             "price_per_hour)")
    elif no_inst is not None:
        money = NotAvailable(no_inst)
    elif isinstance(tok, NotAvailable):
        money = NotAvailable(f"$/1M output tokens needs token counts: {tok.reason}")
    else:
        money = money_for(instances, price_per_hour=price_per_hour, mean_input_tokens=tok.mean_input_tokens,  # type: ignore[arg-type]
                          mean_output_tokens=tok.mean_output_tokens, monthly_budget=budget_per_month)
    staged: Staged | NotAvailable = (NotAvailable(no_inst) if no_inst is not None
                                     else _staged(instances,  # type: ignore[arg-type]
                                                  current_peak.current_peak_rps if current_peak else target_rps,
                                                  quantile, profile, domains,
                                                  current_peak.peak_name if current_peak else ""))
    kv: KvMetricsCheck | NotAvailable
    if kv_gauge is None:
        kv = NotAvailable("no server metrics given: the KV estimate is not checked against the engine's gauge")
    elif isinstance(tok, NotAvailable):
        kv = NotAvailable(f"server metrics given, but the KV check needs token counts: {tok.reason}")
    else:
        kv = kv_metrics_check(kv_gauge, mean_input_tokens=tok.mean_input_tokens,
                              mean_output_tokens=tok.mean_output_tokens)
    bound = fos.blended.bound
    if bound in ("upper", "lower"):
        # every figure here is computed from the limit: a bound on it bounds them all, the other way for costs
        for part in (tokens, money, staged):
            if not isinstance(part, NotAvailable):
                part.limit_bound = bound
                part.bound_note = BOUND_NOTES[bound].format(why=fos.blended.upper_reason)
    return PlanEconomics(tokens, money, staged, kv)


BOUND_NOTES = {
    "upper": ("the plan's limit is an upper bound ({why}): token rates are at most "
              "these, $ per 1M output tokens at least this, instance counts at least these"),
    "lower": ("the plan's limit is a lower bound (the load test never failed): token rates are at least these, "
              "$ per 1M output tokens at most this, instance counts at most these"),
}


def _bounded_budget(money: Money, budget: float | None) -> None:
    """An elastic buffer whose burst hours are unknown: the fleet costs between the base (buffer never
    on) and all instances always on. The budget row judges that range: green when even the upper bound
    leaves the headroom, red when even the base exceeds the budget, yellow in between."""
    lo, hi = money.monthly_cost_base, money.monthly_cost_all_instances_always_on
    why = f"{money.buffer}: the fleet costs ${lo:,.0f} (buffer never on) to ${hi:,.0f}/month (always on)"
    upper, base = budget_row(hi, budget), budget_row(lo, budget)
    if budget is None or budget <= 0 or upper.status == "green" or base.status == "red":
        row = upper if (budget is None or budget <= 0 or upper.status == "green") else base
        row = ScoreRow(row.dimension, row.status, row.value,
                       f"{why}; at {'most' if row is upper else 'least'}: {row.reason}")
    else:
        row = ScoreRow("budget", "yellow", hi / budget, f"{why}: the base fits the ${budget:,.0f} budget, the buffer "
                                                        "always on would not leave the headroom")
    money.monthly_cost_range = (lo, hi)
    money.budget_row = row


def apply_budget_row(scorecard: list[ScoreRow], money: Money | NotAvailable) -> None:
    """Replace the scorecard's budget row with the computed one when a cost was computed and either a
    budget was given or the user gave no budget input (a user's "clear/tight/none" stays otherwise)."""
    if not isinstance(money, Money):
        return
    br = money.budget_row
    for i, row in enumerate(scorecard):
        if row.dimension == "budget":
            if money.budget_per_month is None and row.status != "not assessed":
                return
            scorecard[i] = ScoreRow("budget", br.status, br.value, br.reason)


__all__ = [
    "BOUND_NOTES",
    "TWO_SIDES",
    "FleetRunsOut",
    "Forecast",
    "MeanTokens",
    "MidTerm",
    "MixTokens",
    "Money",
    "NearTerm",
    "PlanEconomics",
    "Staged",
    "TokenRates",
    "Tokens",
    "apply_budget_row",
    "budget_row",
    "burst_buffer_monthly_cost",
    "cost_per_million_output_tokens",
    "cost_per_request",
    "daily_peaks_of",
    "growth_forecast",
    "instances_for",
    "mean_tokens",
    "money_for",
    "monthly_cost",
    "plan_economics",
    "staged_for",
    "token_rates",
    "weekly_peaks",
    "weeks_until_exhausted",
]
