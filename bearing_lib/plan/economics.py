"""Tokens and money, and the staged plan in instances: pure functions over plain numbers.

Nothing here reads files or builds the plan; :func:`economics_from_plan` and
:func:`staged_from_plan` read the plan's public JSON (docs/interfaces.md §6) so the plan
(``plan/capacity_plan.py``) can call them and carry the result.

Tokens
    A limit in req/s becomes tokens/s with the mix's mean token counts:
    ``input = rps × mean input tokens``, ``output = rps × mean output tokens``, total = both.
Money (``price_per_hour`` = one instance)
    ``$/1M output tokens at the allowable load = price_per_hour / (A × mean output × 3600) × 10^6``
    with ``A`` the per-instance allowable req/s; ``$/request = price_per_hour / (A × 3600)``;
    ``monthly cost of the fleet = instances × price × 730 h`` (8,760 h / 12);
    the burst buffer costs ``buffer × price × 730 h`` when fixed, and ``buffer × price × bursts
    per month × burst hours`` when elastic (it runs only during bursts).
Budget scorecard row (DOMAIN.md: green "clear cost model with headroom", yellow "computable
    but tight", red "never computed"): red without a cost or without a budget to judge it
    against, green when the monthly cost leaves at least ``headroom`` (20 %) of the budget, yellow
    when it fits with less, red when it exceeds the budget.
Staged plan (DOMAIN.md: near term = current peak × 1.5; mid term = 6-month forecast × 1.5)
    ``instances = ceil(rps × 1.5 / A)``. The forecast (:func:`growth_forecast`) is a straight
    line through the weekly peaks (statsmodels OLS, needs >= 4 weeks) with its prediction
    interval; :func:`weeks_until_exhausted` is the first week the forecast (or its upper bound)
    exceeds the fleet's allowable capacity.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from bearing_lib.common.errors import InsufficientDataError, ParameterError, SchemaError
from bearing_lib.common.estimate import derived_qualifiers

if TYPE_CHECKING:  # pragma: no cover
    from bearing_lib.plan.capacity_plan import ProfileInput

HOURS_PER_MONTH = 730.0
STAGE_FACTOR = 1.5
MIN_WEEKS = 4


def _positive(**values: float | None) -> None:
    for name, v in values.items():
        if v is None or not math.isfinite(v) or v <= 0:
            raise ParameterError(f"{name} must be a positive number (got {v})")


@dataclass(frozen=True)
class TokenRates:
    """A request rate as tokens per second."""

    rps: float
    input_tokens_per_s: float
    output_tokens_per_s: float
    total_tokens_per_s: float

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


def token_rates(rps: float, *, mean_input_tokens: float, mean_output_tokens: float) -> TokenRates:
    """``rps`` in input, output and total tokens per second."""
    if rps < 0 or mean_input_tokens < 0 or mean_output_tokens < 0:
        raise ParameterError("rates and token counts must be >= 0")
    i, o = rps * mean_input_tokens, rps * mean_output_tokens
    return TokenRates(rps, i, o, i + o)


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


def budget_row(monthly: float | None, budget: float | None, *, headroom: float = 0.20) -> dict[str, Any]:
    """The budget scorecard row (same keys as the plan's scorecard rows)."""
    if monthly is None:
        return {"dimension": "budget", "status": "red", "value": None, "reason": "the running cost was never computed"}
    if budget is None or budget <= 0:
        return {"dimension": "budget", "status": "red", "value": monthly,
                "reason": f"monthly cost ${monthly:,.0f} with no budget to judge it against"}
    share = monthly / budget
    if share <= 1 - headroom:
        status = "green"
        why = f"${monthly:,.0f}/month is {share:.0%} of the ${budget:,.0f} budget (headroom ≥ {headroom:.0%})"
    elif share <= 1:
        status, why = "yellow", f"${monthly:,.0f}/month is {share:.0%} of the ${budget:,.0f} budget: tight"
    else:
        status, why = "red", f"${monthly:,.0f}/month exceeds the ${budget:,.0f} budget ({share:.0%})"
    return {"dimension": "budget", "status": status, "value": share, "reason": why}


def _get(doc: dict, dotted: str, path: str) -> Any:
    cur: Any = doc
    for part in dotted.split("."):
        if not isinstance(cur, dict) or part not in cur:
            raise SchemaError(f"the plan JSON has no {dotted}", path=path, field=dotted)
        cur = cur[part]
    return cur


def economics_from_plan(
    plan: dict[str, Any],
    *,
    price_per_hour: float,
    mean_input_tokens: float,
    mean_output_tokens: float,
    monthly_budget: float | None = None,
    burst_hours: float | None = None,
    path: str = "plan JSON",
) -> dict[str, Any]:
    """Tokens and money at the plan's allowable load, from the plan's public JSON (§6).

    Reads ``instances.{per_instance_allowable_rps, base, buffer, total, buffer_plan.mode,
    burst.per_month, burst.duration_min}``; ``burst_hours`` overrides the burst duration.
    """
    a = float(_get(plan, "instances.per_instance_allowable_rps", path))
    total = int(_get(plan, "instances.total", path))
    buffer = int(_get(plan, "instances.buffer", path))
    inst = plan["instances"]
    mode = ((inst.get("buffer_plan") or {}).get("mode")) or "fixed"
    burst = inst.get("burst") or {}
    per_month = burst.get("per_month")
    hours = burst_hours if burst_hours is not None else (
        burst["duration_min"] / 60.0 if burst.get("duration_min") is not None else None)
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
    recommended = base_cost + (buffer_cost if buffer_cost is not None else 0.0)
    return {
        "price_per_hour": price_per_hour,
        "per_instance_allowable": token_rates(a, mean_input_tokens=mean_input_tokens,
                                              mean_output_tokens=mean_output_tokens).to_dict(),
        "usd_per_million_output_tokens": cost_per_million_output_tokens(price_per_hour, rps=a,
                                                                        mean_output_tokens=mean_output_tokens),
        "usd_per_request": cost_per_request(price_per_hour, rps=a),
        "monthly_cost_all_instances_always_on": fleet,
        "monthly_cost_base": base_cost,
        "monthly_cost_burst_buffer": buffer_cost,
        "monthly_cost_recommended": recommended if buffer_cost is not None else None,
        "buffer": buffer_note,
        "budget_row": budget_row(recommended if buffer_cost is not None else None, monthly_budget),
    }


# --------------------------------------------------------------------------- staged plan
def instances_for(rps: float, per_instance_allowable_rps: float, *, factor: float = STAGE_FACTOR) -> int:
    """``ceil(rps × factor / A)``."""
    _positive(per_instance_allowable_rps=per_instance_allowable_rps)
    if rps < 0:
        raise ParameterError(f"rps must be >= 0 (got {rps})")
    return math.ceil(rps * factor / per_instance_allowable_rps - 1e-9)


@dataclass(frozen=True)
class Forecast:
    """A straight-line forecast of the weekly peak: at ``horizon_weeks`` after the last week."""

    n_weeks: int
    slope_per_week: float
    intercept: float
    horizon_weeks: int
    value: float
    lower: float
    upper: float
    level: float
    method: str

    def at(self, week: float) -> float:
        """The fitted line at week index ``week`` (0 = the first data week)."""
        return self.intercept + self.slope_per_week * week

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def growth_forecast(weekly_peaks: list[float], *, horizon_weeks: int = 26, level: float = 0.95) -> Forecast:
    """OLS line through the weekly peaks (week index 0, 1, ...) and its prediction interval at
    ``horizon_weeks`` after the last week (statsmodels; 26 weeks = the sources' six months)."""
    import numpy as np
    import statsmodels.api as sm

    y = np.asarray(weekly_peaks, dtype=float)
    if y.size < MIN_WEEKS:
        raise InsufficientDataError(f"a growth forecast needs >= {MIN_WEEKS} weeks of peaks (got {y.size})")
    if not np.isfinite(y).all():
        raise ParameterError("weekly peaks must be finite numbers")
    w = np.arange(y.size, dtype=float)
    fit = sm.OLS(y, sm.add_constant(w)).fit()
    at = float(y.size - 1 + horizon_weeks)
    frame = fit.get_prediction(np.array([[1.0, at]])).summary_frame(alpha=1 - level)
    return Forecast(
        n_weeks=int(y.size), slope_per_week=float(fit.params[1]), intercept=float(fit.params[0]),
        horizon_weeks=horizon_weeks, value=float(frame["mean"].iloc[0]),
        lower=float(frame["obs_ci_lower"].iloc[0]), upper=float(frame["obs_ci_upper"].iloc[0]), level=level,
        method="statsmodels OLS of weekly peak on week index; prediction interval (obs_ci) at the horizon",
    )


def weeks_until_exhausted(forecast: Forecast, capacity_rps: float, *, max_weeks: int = 520) -> int | None:
    """Weeks after the last data week until the forecast line first exceeds ``capacity_rps``
    (None: not within ``max_weeks``, e.g. flat or falling traffic); 0 when it already does."""
    last = forecast.n_weeks - 1
    for k in range(max_weeks + 1):
        if forecast.at(last + k) > capacity_rps:
            return k
    return None


def staged_from_plan(
    plan: dict[str, Any], *, current_peak_rps: float | None = None, weekly_peaks: list[float] | None = None,
    horizon_weeks: int = 26, path: str = "plan JSON",
) -> dict[str, Any]:
    """Near and mid term in instances from the plan JSON (``target.rps`` is the current peak unless
    ``current_peak_rps`` is given); mid term only with >= 4 weekly peaks."""
    a = float(_get(plan, "instances.per_instance_allowable_rps", path))
    fleet = int(_get(plan, "instances.total", path))
    peak = current_peak_rps if current_peak_rps is not None else float(_get(plan, "target.rps", path))
    out: dict[str, Any] = {
        "per_instance_allowable_rps": a,
        "near_term": {"rps": peak * STAGE_FACTOR, "instances": instances_for(peak, a),
                      "rule": f"current peak {peak:.4g} req/s × {STAGE_FACTOR}"},
        "mid_term": None,
        "fleet_runs_out": None,
    }
    if weekly_peaks is None or len(weekly_peaks) < MIN_WEEKS:
        out["mid_term_reason"] = f"a forecast needs >= {MIN_WEEKS} weeks of peaks (got {len(weekly_peaks or [])})"
        return out
    fc = growth_forecast(weekly_peaks, horizon_weeks=horizon_weeks)
    out["mid_term"] = {"rps": fc.value * STAGE_FACTOR, "instances": instances_for(fc.value, a),
                       "instances_upper": instances_for(fc.upper, a), "forecast": fc.to_dict(),
                       "rule": f"{horizon_weeks}-week forecast {fc.value:.4g} req/s "
                               f"({fc.level:.0%} PI {fc.lower:.4g}–{fc.upper:.4g}) × {STAGE_FACTOR}"}
    cap = fleet * a
    k = weeks_until_exhausted(fc, cap)
    out["fleet_runs_out"] = {"capacity_rps": cap, "weeks_after_last": k,
                             "statement": (f"the current fleet ({fleet} × {a:.4g} req/s) runs out in {k} week(s)"
                                           if k is not None else "the forecast does not reach the fleet's capacity")}
    return out


# --------------------------------------------------------------------------- the plan's economics section
WEEK_S = 7 * 86400.0


def _unavailable(reason: str) -> dict[str, Any]:
    return {"available": False, "reason": reason}


def _f(x: Any) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


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


def mean_tokens(profile: ProfileInput, trace: Any = None) -> dict[str, Any]:
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
        return {"available": False, "reason": "no token counts: the profile has no seq_len token means and no trace "
                                              "with input_tokens and output_tokens was given"}
    per_mix: dict[str, dict[str, float]] = {}
    per_mix_basis = "no per-mix token counts (no trace with a mix spec): each mix uses the overall means"
    spec = profile.mix_spec
    if has_tokens and spec is not None:
        import polars as pl

        f = spec.assign(frame.filter(pl.col("input_tokens").is_not_null()
                                                        & pl.col("output_tokens").is_not_null()))
        for r in f.group_by("mix").agg(pl.col("input_tokens").mean().alias("i"), pl.col("output_tokens").mean()
                                       .alias("o"), pl.len().alias("n")).iter_rows(named=True):
            if r["mix"] is not None:
                per_mix[str(r["mix"])] = {"mean_input_tokens": float(r["i"]), "mean_output_tokens": float(r["o"]),
                                          "n": int(r["n"])}
        per_mix_basis = "the trace's requests assigned to the profile's mix spec"
    return {"available": True, "mean_input_tokens": mi, "mean_output_tokens": mo, "basis": basis,
            "per_mix": per_mix, "per_mix_basis": per_mix_basis}


def _rates(rps: float | None, mi: float, mo: float) -> dict[str, float] | None:
    return None if rps is None else token_rates(rps, mean_input_tokens=mi, mean_output_tokens=mo).to_dict()


@dataclass
class PlanEconomics:
    """The plan's economics section: tokens/s, money, the staged plan in instances, and the
    KV-cache check against the engine's metrics (``plan/memory.py``), each a dict or
    ``{"available": false, "reason"}``."""

    tokens: dict[str, Any]
    money: dict[str, Any]
    staged: dict[str, Any]
    kv_metrics_check: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"tokens": self.tokens, "money": self.money, "staged": self.staged,
                "kv_metrics_check": self.kv_metrics_check}

    def summary_lines(self) -> list[str]:
        """What ``bearing plan`` prints for this section."""
        out: list[str] = []
        note = next((p["bound_note"] for p in (self.tokens, self.money, self.staged) if p.get("bound_note")), None)
        if note:
            out.append(f"bound:       {note}")
        t = self.tokens
        if t.get("available"):
            for key, what in (("at_q_ult", "Q_ult"), ("at_allowable", "allowable")):
                r = t.get(key)
                if r:
                    out.append(f"tokens/s:    at {what} {r['rps']:,.3f} req/s: input {r['input_tokens_per_s']:,.0f}, "
                               f"output {r['output_tokens_per_s']:,.0f}, total {r['total_tokens_per_s']:,.0f} "
                               f"(mean {t['mean_input_tokens']:,.1f} in / {t['mean_output_tokens']:,.1f} out)")
            for pm in t.get("per_mix") or []:
                q, a = pm.get("q_ult"), pm.get("allowable")
                if q:
                    out.append(f"  mix {pm['mix']}: Q_ult {q['rps']:,.3f} req/s = {q['total_tokens_per_s']:,.0f} tok/s "
                               f"({q['input_tokens_per_s']:,.0f} in + {q['output_tokens_per_s']:,.0f} out)"
                               + (f"; allowable {a['rps']:,.3f} req/s = {a['total_tokens_per_s']:,.0f} tok/s" if a
                                  else ""))
        else:
            out.append(f"tokens/s:    not available: {t.get('reason')}")
        m = self.money
        if m.get("available"):
            rec = m.get("monthly_cost_recommended")
            buf = m.get("monthly_cost_burst_buffer")
            rng = m.get("monthly_cost_range")
            out.append(f"cost:        ${m['usd_per_million_output_tokens']:,.2f} per 1M output tokens at the allowable "
                       f"load (${m['price_per_hour']:,.2f}/instance-hour); fleet "
                       + (f"${rec:,.0f}/month" if rec is not None else
                          f"${rng[0]:,.0f}–${rng[1]:,.0f}/month" if rng else "not computed")
                       + (f", of which burst buffer ${buf:,.2f}/month ({m['buffer']})" if buf is not None
                          else f" ({m['buffer']})"))
            br = m["budget_row"]
            out.append(f"budget:      {br['status']}: {br['reason']}")
        else:
            out.append(f"cost:        not available: {m.get('reason')}")
        s = self.staged
        if s.get("available"):
            nt = s["near_term"]
            least = derived_qualifiers(str(s.get("limit_bound")))[0]
            out.append(f"near term:   {least}{nt['instances']} instance(s) for {nt['rps']:,.3f} req/s ({nt['rule']})")
            if s.get("mid_term"):
                mt = s["mid_term"]
                out.append(f"mid term:    {mt['instances']} instance(s) (upper {mt['instances_upper']}) for "
                           f"{mt['rps']:,.3f} req/s ({mt['rule']}); {s['fleet_runs_out']['statement']}")
            else:
                out.append(f"mid term:    not available: {s.get('mid_term_reason')}")
        else:
            out.append(f"staged plan: not available: {s.get('reason')}")
        k = self.kv_metrics_check
        out.append(f"KV metrics:  {k['statement']}" if k.get("available") else f"KV metrics:  {k.get('reason')}")
        return out


def plan_economics(
    plan: dict[str, Any],
    profile: ProfileInput | dict[str, Any],
    *,
    trace: Any = None,
    price_per_hour: float | None = None,
    budget_per_month: float | None = None,
    server_metrics: Any = None,
) -> PlanEconomics:
    """The economics section from the plan JSON (§6) and the profile JSON (§5).

    Tokens/s at Q_ult (``fos.blended.q_blend_rps``) and at the allowable load (``allowable_rps``)
    with the production mean tokens, per mix at its Q_ult and Q_ult / design FOS with that
    mix's mean tokens; money with ``price_per_hour`` (:func:`economics_from_plan`); the staged
    plan (:func:`staged_from_plan`) with the profile's weekly peaks when it spans >= 4 weeks;
    with ``server_metrics`` (``ServerMetrics`` with steps) the memory section's KV arithmetic
    checked against the engine's gauge (:func:`bearing_lib.plan.memory.kv_metrics_check`).
    """
    if isinstance(profile, dict):  # a profile JSON document: validated once at this edge
        from bearing_lib.plan.capacity_plan import profile_input_from_dict

        profile = profile_input_from_dict(profile)
    if price_per_hour is not None:
        _positive(price_per_hour=price_per_hour)
    if budget_per_month is not None:
        _positive(budget_per_month=budget_per_month)
    tok = mean_tokens(profile, trace)
    fos = plan.get("fos") or {}
    blended = fos.get("blended") or {}
    tier_fos = _f((plan.get("tier") or {}).get("target_fos"))
    if tok.get("available"):
        mi, mo = tok["mean_input_tokens"], tok["mean_output_tokens"]
        inst = plan.get("instances") or {}
        rows = []
        for m in fos.get("per_mix") or []:
            pm = tok["per_mix"].get(str(m.get("mix")), {"mean_input_tokens": mi, "mean_output_tokens": mo})
            q = _f(m.get("q_ult_rps"))
            allow = q / tier_fos if q is not None and tier_fos else None
            rows.append({"mix": m.get("mix"), "mean_input_tokens": pm["mean_input_tokens"],
                         "mean_output_tokens": pm["mean_output_tokens"],
                         "q_ult": _rates(q, pm["mean_input_tokens"], pm["mean_output_tokens"]),
                         "allowable": _rates(allow, pm["mean_input_tokens"], pm["mean_output_tokens"])})
        tokens = {**tok, "available": True,
                  "at_q_ult": _rates(_f(blended.get("q_blend_rps")), mi, mo),
                  "at_allowable": _rates(_f(plan.get("allowable_rps")), mi, mo),
                  "per_instance_allowable": _rates(_f(inst.get("per_instance_allowable_rps")), mi, mo),
                  "per_mix": rows,
                  "rule": "tokens/s = req/s × mean tokens per request (input, output; total = both); per mix at its "
                          f"Q_ult and at Q_ult / design FOS {tier_fos:g}" if tier_fos else "tokens/s = req/s × mean"}
    else:
        tokens = _unavailable(tok["reason"])
    inst = plan.get("instances") or {}
    has_inst = inst.get("available") is not False and inst.get("per_instance_allowable_rps") is not None
    if price_per_hour is None:
        money = _unavailable("no instance price given (bearing plan --price-per-hour, or the report parameter "
                             "price_per_hour)")
    elif not has_inst:
        money = _unavailable(f"no instance plan: {inst.get('reason') or 'not computed'}")
    elif not tok.get("available"):
        money = _unavailable(f"$/1M output tokens needs token counts: {tok['reason']}")
    else:
        money = {"available": True, **economics_from_plan(
            plan, price_per_hour=price_per_hour, mean_input_tokens=tok["mean_input_tokens"],
            mean_output_tokens=tok["mean_output_tokens"], monthly_budget=budget_per_month)}
        money["budget_per_month"] = budget_per_month
        if money["monthly_cost_recommended"] is None:
            money.update(_bounded_budget(money, budget_per_month))
    if not has_inst:
        staged = _unavailable(f"no instance plan: {inst.get('reason') or 'not computed'}")
    else:
        series = _series(profile)
        q = _f((plan.get("target") or {}).get("quantile")) or 0.99
        peaks = weekly_peaks(*series, quantile=q) if series else None
        staged = {"available": True, **staged_from_plan(plan, weekly_peaks=peaks)}
        if peaks is None:
            staged["mid_term_reason"] = "the profile has no per-minute series to forecast from"
        elif len(peaks) < MIN_WEEKS:
            span_d = (max(series[0]) + 60 - min(series[0])) / 86400 if series and series[0] else 0
            staged["mid_term_reason"] = (f"a growth forecast needs >= {MIN_WEEKS} complete weeks of traffic; the "
                                         f"profile spans {span_d:,.2f} day(s) ({len(peaks)} complete week(s))")
        staged["weekly_peaks_rps"] = peaks
        staged["weekly_peak_statistic"] = f"P{q * 100:g} of the week's per-minute rate / 60"
    if server_metrics is None:
        kv = _unavailable("no server metrics given: the KV estimate is not checked against the engine's gauge")
    elif not tok.get("available"):
        kv = _unavailable(f"server metrics given, but the KV check needs token counts: {tok['reason']}")
    else:
        from bearing_lib.plan.memory import kv_metrics_check

        kv = kv_metrics_check(server_metrics, mean_input_tokens=tok["mean_input_tokens"],
                              mean_output_tokens=tok["mean_output_tokens"])
    bound = str(blended.get("bound") or "none")
    if bound in ("upper", "lower"):
        # every figure here is computed from the limit: a bound on it bounds them all, the other way for costs
        note = BOUND_NOTES[bound]
        for part in (tokens, money, staged):
            if part.get("available"):
                part["limit_bound"] = bound
                part["bound_note"] = note
    return PlanEconomics(tokens, money, staged, kv)


BOUND_NOTES = {
    "upper": ("the plan's limit is an upper bound (the load test failed at its first step): token rates are at most "
              "these, $ per 1M output tokens at least this, instance counts at least these"),
    "lower": ("the plan's limit is a lower bound (the load test never failed): token rates are at least these, "
              "$ per 1M output tokens at most this, instance counts at most these"),
}


def _bounded_budget(money: dict[str, Any], budget: float | None) -> dict[str, Any]:
    """An elastic buffer whose burst hours are unknown: the fleet costs between the base (buffer never
    on) and all instances always on. The budget row judges that range: green when even the upper bound
    leaves the headroom, red when even the base exceeds the budget, yellow in between."""
    lo, hi = money["monthly_cost_base"], money["monthly_cost_all_instances_always_on"]
    why = f"{money['buffer']}: the fleet costs ${lo:,.0f} (buffer never on) to ${hi:,.0f}/month (always on)"
    upper, base = budget_row(hi, budget), budget_row(lo, budget)
    if budget is None or budget <= 0 or upper["status"] == "green" or base["status"] == "red":
        row = upper if (budget is None or budget <= 0 or upper["status"] == "green") else base
        row = {**row, "reason": f"{why}; at {'most' if row is upper else 'least'}: {row['reason']}"}
    else:
        row = {"dimension": "budget", "status": "yellow", "value": hi / budget,
               "reason": f"{why}: the base fits the ${budget:,.0f} budget, the buffer always on would not leave "
                         "the headroom"}
    return {"monthly_cost_range": [lo, hi], "budget_row": row}


def apply_budget_row(scorecard: list[Any], money: dict[str, Any]) -> None:
    """Replace the scorecard's budget row with the computed one when a cost was computed and either a
    budget was given or the user gave no budget input (a user's "clear/tight/none" stays otherwise)."""
    if not money.get("available"):
        return
    br = money["budget_row"]
    for i, row in enumerate(scorecard):
        if getattr(row, "dimension", None) == "budget":
            if money.get("budget_per_month") is None and row.status != "not assessed":
                return
            scorecard[i] = type(row)("budget", br["status"], br["value"], br["reason"])


def attach_economics(plan: Any, profile: ProfileInput, **kw: Any) -> PlanEconomics:
    """The one call ``CapacityPlan.build`` makes: :func:`plan_economics` of the plan's JSON, and the
    computed budget row put into its scorecard (:func:`apply_budget_row`)."""
    econ = plan_economics(plan.to_dict(), profile, **kw)
    if getattr(plan, "scorecards", None) is not None:
        apply_budget_row(plan.scorecards.scorecard, econ.money)
    return econ
