"""Predict the SLA limit of a mix through the calibrated twin (a search over Poisson rates).

For one parameter set and one seed, the limit is the highest offered Poisson rate at which
the twin's **steady-state** requests (arriving after ``warmup_s``, over ``duration_s``) meet
the SLA, with at most 1 % of them timed out or rejected (the oracle's definition of a true
limit, docs/oracle.md). Common random numbers (the same unit-rate gaps and request lengths
at every rate) make the margin nearly monotone in the rate; bisection on log(rate) stops at
``rel_tol`` (±1 % by default, within the issue's ±2 %).

Uncertainty: the search is repeated for ``n_draws`` bootstrap draws of the calibrated
parameters (docs/twin.md "Calibration"), each with its own seed, so the spread holds both
parameter uncertainty and simulation noise. Value = mean of the point-parameter run and the
draws; 95 % CI = value ± 1.96 × SD of the draws, widened by the search tolerance.

Instances: requests spread at random over ``N`` identical instances split a Poisson stream
into ``N`` Poisson streams of rate / N, so the fleet's limit is ``N ×`` one instance's (for
percentile SLAs over all requests). A scaled prompt length multiplies every prompt.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from bearing_lib.common.errors import ParameterError
from bearing_lib.common.estimate import Estimate
from bearing_lib.common.progress import Progress
from bearing_lib.twin.calibrate import server_params
from bearing_lib.twin.mix import RequestMix
from bearing_lib.twin.result import Prediction, Reach, Twin
from bearing_lib.twin.search import DEFAULT_DRAWS, SearchOptions, decode_batch, margin_at, search_limit
from bearing_lib.twin.simulate import ServerParams
from bearing_lib.twin.timeout import KEEP, parse_request_timeout

HELD_SHARE = 0.01  # a ceiling that holds back more than this share of requests may shape the limit
INSENSITIVE = 0.03  # lifting an unseen ceiling moves the limit by less than this: it does not shape it
RATE_EXTRAPOLATION = 2.0  # a limit above this multiple of the highest request rate the test completed is flagged
OUTSIDE_SHARE = 0.01  # a target dimension with more than this share of requests outside the tested range is flagged
CONTEXT_GROWTH = 1.25  # a target whose mean context per request is this much the test's leans on the context cost
BATCH_GROWTH = 1.25  # a median batch at the limit this much above the test's median (or below it / this) leans on
# the decode cost per sequence, when the test did not identify it
PROMPT_GROWTH = 1.25  # a target whose mean uncached prompt is this much the test's (or its inverse) leans on the
# prefill cost per token, when the test did not identify it


def _guess(twin: Twin, mix: RequestMix, params: ServerParams) -> float:
    """A starting rate: the twin's throughput ceiling for this mix, halved."""
    o = float(np.mean(mix.output_tokens))
    u = float(np.mean(np.maximum(mix.input_tokens - mix.cached_tokens, 0)))
    slots = params.max_num_seqs or 64
    if params.kv_budget_tokens:
        slots = min(slots, max(1.0, params.kv_budget_tokens / float(np.mean(mix.input_tokens + mix.output_tokens))))
    it = (params.decode_base_ms + params.decode_ms_per_seq * slots) / 1000.0
    service = (o - 1) * it + (params.prefill_base_ms + params.prefill_ms_per_token * u) / 1000.0
    return max(0.5 * slots / max(service, 1e-3), 0.01)


DISPATCH = ("random", "round_robin")


def predict(twin: Twin, mix: RequestMix, sla, *, instances: int | None = None, prompt_scale: float = 1.0,
            options: SearchOptions | None = None, request_timeout: float | str | None = KEEP,
            dispatch: str | None = None, progress: Progress | None = None) -> Prediction:
    """The predicted SLA limit (offered rps) of ``mix`` on ``instances`` instances of the twin's server.

    ``instances``: by default the replicas the twin's test ran against (``twin.replicas``; 1 for a twin of one
    server). ``dispatch``: ``"random"`` (a Poisson stream split at random: every instance sees Poisson arrivals
    at rate / N) or ``"round_robin"`` (every N-th arrival); by default round-robin for a twin calibrated on
    replicas behind a router, random otherwise. Either way the fleet's limit is N × one instance's.
    ``request_timeout``: the what-if of another deadline in front of the engine: seconds, ``None`` (no
    deadline), or ``"keep"`` (the twin's, from its test). ``progress``: a terminal bar
    (:class:`bearing_lib.common.progress.Progress`) advanced per limit search, or None."""
    from bearing_lib.limits.sla import SLA, parse_sla

    opt = options or SearchOptions()
    if instances is None:
        instances = max(int(twin.replicas or 1), 1)
    if dispatch is None:
        dispatch = "round_robin" if (twin.replicas or 1) > 1 else "random"
    if dispatch not in DISPATCH:
        raise ParameterError(f"dispatch must be one of {', '.join(DISPATCH)}, got {dispatch!r}")
    rr = instances if dispatch == "round_robin" else 1
    if instances < 1:
        raise ParameterError(f"--instances must be at least 1, got {instances}")
    sla_obj = sla if isinstance(sla, SLA) else parse_sla(sla)
    target = mix.scaled_prompts(prompt_scale)
    vals = _for_target(twin, target)
    what_if = []
    rto = parse_request_timeout(request_timeout)
    if rto != KEEP:
        was = vals.get("request_timeout_s")
        vals["request_timeout_s"] = rto
        if rto is None:
            what_if.append(f"what-if: the request timeout of the test ({was:.1f} s) lifted" if was is not None
                           else "what-if: no request timeout")
        else:
            what_if.append(f"what-if: request timeout {rto:g} s" + (f" (the test's: {was:.1f} s)" if was is not None
                                                                    else ""))
    point = server_params(vals)
    guess = _guess(twin, target, point)
    draws = np.asarray(twin.draws, dtype=float)
    if progress is not None:
        progress.start(1 + min(opt.n_draws, draws.shape[0]), "searching the limit (point, then parameter draws)")
    v0, info0, cens = search_limit(point, target, sla_obj, opt, seed=opt.seed, guess=guess, rr=rr)
    if progress is not None:
        progress.advance(1)
    rng = np.random.default_rng(opt.seed + 7)
    limits = []
    infos = [info0]
    if cens == "none" and draws.shape[0] and opt.n_draws > 0:
        pick = rng.choice(draws.shape[0], min(opt.n_draws, draws.shape[0]), replace=False)
        for k, row in enumerate(draws[pick]):
            pv = dict(vals)
            # twins written before the context term have four columns: zip stops at the row's length
            pv.update(dict(zip(Twin.DRAW_PARAMS[:len(row)], (max(float(x), 0.0) for x in row), strict=True)))
            v, inf, c = search_limit(server_params(pv), target, sla_obj, opt, seed=opt.seed + 1 + k,
                                     guess=v0, lo=v0 / 1.25, hi=v0 * 1.25, rr=rr)
            if progress is not None:
                progress.advance(1)
            if c == "none":
                limits.append(v)
                infos.append(inf)
    flags = what_if + _flags(twin, target, point, infos) + _deadline_flags(target, point)
    bracket = None
    if cens == "none" and any(f.startswith("regime:") for f in flags):
        # the same search with the unseen ceilings lifted: if the limit hardly moves, the cap does not shape
        # it and the value stands; else the truth lies between the capped and the uncapped limit
        lifted = replace(point, **{k: None for k in _unseen_ceilings(twin)})
        if progress is not None:
            progress.step("the limit with the ceilings the test never reached lifted")
        v_up, _, c_up = search_limit(lifted, target, sla_obj, opt, seed=opt.seed, guess=v0 * 1.5, rr=rr)
        if c_up == "none" and v_up <= v0 * (1.0 + INSENSITIVE):
            flags = [f for f in flags if not f.startswith("regime:")]
            flags.append(f"insensitive: lifting the ceilings the test never reached moves the limit by "
                         f"{v_up / v0 - 1.0:+.1%} ({v_up:.3g} rps), within ±{INSENSITIVE:.0%}: the value stands")
        else:
            bracket = (v0 * instances, (v_up if c_up == "none" else math.inf) * instances)
            flags.append(f"bracket: with those ceilings lifted the twin predicts "
                         f"{'no limit below the rates tried' if c_up != 'none' else f'{v_up:.3g} rps'}; "
                         "the truth lies between (which end depends on the real ceiling)")
    if cens != "none":
        est = Estimate(v0 * instances if v0 else None, bound="lower" if cens == "above" else "upper",
                       unit="rps", basis="offered")
        flags.append(f"the search did not bracket the limit ({cens} the rates tried)")
    else:
        allv = np.array([v0, *limits])
        value = float(allv.mean())
        sd = float(np.std(limits, ddof=1)) if len(limits) >= 2 else 0.0
        half = 1.96 * sd + opt.rel_tol * value
        bound = "lower" if any(f.startswith("regime:") for f in flags) else "none"
        # the bracket runs from this (capped) value to the limit with the unseen ceilings lifted
        br = None if bracket is None else (value * instances, None if math.isinf(bracket[1]) else bracket[1])
        est = Estimate(value * instances, ci95=(max(value - half, 0.0) * instances, (value + half) * instances),
                       bracket=br, bound=bound, unit="rps", basis="offered")
    if cens == "none":
        # a target that leans on a parameter the test did not identify carries that parameter's prior range: the
        # search at the other end of the range widens the CI (docs/twin.md "Reach")
        for name, why, p_alt, mix_alt in _unidentified_alternatives(twin, target, point, decode_batch(info0)):
            if progress is not None:
                progress.step(f"the limit at the other end of {name}'s prior range")
            v_alt, _, c_alt = search_limit(p_alt, mix_alt, sla_obj, opt, seed=opt.seed, guess=v0, rr=rr)
            lo_ci, hi_ci = est.ci95 if est.ci95 else (est.value, est.value)
            if c_alt == "none":
                a = v_alt * instances
                est = replace(est, ci95=(min(lo_ci, a), max(hi_ci, a)))
                what = f"{v_alt * instances:.3g} rps"
            else:
                est = replace(est, ci95=(0.0 if c_alt == "below" else lo_ci, hi_ci if c_alt == "below" else None))
                what = "not bracketed (" + c_alt + " the rates tried)"
            flags.append(f"unidentified: {name}: {why}; at the other end of its prior range the limit is {what}, "
                         "carried into the 95% CI")
    top = _test_top_rate(twin)
    top = top / max(int(twin.replicas or 1), 1) if top else top  # per replica of the test
    per_instance = (est.value or 0.0) / instances
    if top and per_instance > RATE_EXTRAPOLATION * top:
        flags.append(f"rate: the predicted limit is {per_instance / top:.1f}× the highest request rate the test "
                     f"completed ({top:.3g} rps); a per-request cost outside the engine (router, gateway, tokenizer, "
                     "API server) that the test's rates could not show would bind before it, unseen")
    flags += _load_flags(twin, per_instance, est.value is not None and cens == "none")
    flags += _speed_flags(twin, info0)
    if not twin.trusted:
        flags.insert(0, "untrusted: the twin failed its own validation; do not quote this prediction")
    method = (f"twin search: Poisson rates ({'round-robin' if rr > 1 else 'random'} dispatch to {instances} "
              f"instance(s)), steady state after {opt.warmup_s:g} s over ≥ {opt.duration_s:g} s, "
              f"bisection to ±{opt.rel_tol:.0%}, {len(limits)} parameter draws; value = mean, CI = ±1.96 SD")
    return Prediction(
        target=target.name, sla=sla_obj.text, q_ult=est, instances=instances, prompt_scale=prompt_scale,
        trusted=twin.trusted, flags=flags, draws_rps=[float(x) * instances for x in [v0, *limits]], method=method,
        regime={k: max(i.get(k, 0.0) for i in infos) for k in ("peak_running", "peak_kv_tokens", "slot_held",
                                                                  "kv_held")},
    )


def _test_top_rate(twin: Twin) -> float | None:
    """The highest completed request rate of any step of the calibration test (its validation rows), else the
    highest offered load."""
    rates = [r.measured.get("throughput_rps") for r in (twin.validation.rows if twin.validation else [])
             if not r.held_out]
    rates = [float(x) for x in rates if x]
    return max(rates) if rates else twin.highest_load


def _for_target(twin: Twin, mix: RequestMix) -> dict[str, float | None]:
    """The twin's values for replaying ``mix``: a KV budget the test never reached (a lower bound) is raised to
    the target's largest request, which a real server would admit, rather than rejecting it."""
    vals = twin.values()
    kv = twin.param("kv_budget_tokens")
    if not kv.identified and kv.value is not None:
        vals["kv_budget_tokens"] = max(kv.value, float(np.max(mix.input_tokens + mix.output_tokens)))
    return vals


def _unseen_ceilings(twin: Twin) -> list[str]:
    return [n for n in ("max_num_seqs", "kv_budget_tokens") if not twin.param(n).identified]


def _flags(twin: Twin, mix: RequestMix, point: ServerParams, infos: list[dict]) -> list[str]:
    """Where the prediction leaves what the test showed."""
    out = []
    slot_held = max(i.get("slot_held", 0.0) for i in infos)
    kv_held = max(i.get("kv_held", 0.0) for i in infos)
    ms, kv = twin.param("max_num_seqs"), twin.param("kv_budget_tokens")
    if not ms.identified and ms.value is not None and slot_held > HELD_SHARE:
        out.append(f"regime: at the limit {slot_held:.0%} of requests wait for a slot, but the test never showed "
                   f"the slot ceiling (the twin caps it at the most seen at once, {ms.value:.0f}): the prediction is "
                   "a lower bound")
    if not kv.identified and kv.value is not None and kv_held > HELD_SHARE:
        out.append(f"regime: at the limit {kv_held:.0%} of requests wait for KV memory, but the test never reached "
                   f"the KV budget (the twin caps it at the most seen running, {kv.value:,.0f} tokens): the "
                   "prediction is a lower bound")
    return out + outside_flags(twin, mix)


def tested_ranges(twin: Twin) -> Reach:
    """The ranges the calibration test covered: the twin's ``reach``, or for a twin written before it, what its
    kept requests (``test_mix``) and validation rows show (a copy: the twin is not changed)."""
    r = replace(twin.reach) if twin.reach is not None else Reach()
    m = twin.test_mix or {}
    if r.input_tokens is None and m.get("input_tokens"):
        i, o = np.asarray(m["input_tokens"], float), np.asarray(m["output_tokens"], float)
        c = np.asarray(m.get("cached_tokens") or np.zeros(i.size), float)
        r = replace(r, input_tokens=[float(i.min()), float(i.max())], output_tokens=[float(o.min()), float(o.max())],
                    total_tokens_max=float((i + o).max()), cache_hit_share=float(np.mean(c > 0)))
    if not r.offered_load or r.offered_load[0] is None:
        loads = [x.offered_load for x in (twin.validation.rows if twin.validation else []) if x.offered_load]
        r.offered_load = [min(loads), max(loads)] if loads else [None, twin.highest_load]
    return r


def outside_shares(twin: Twin, mix: RequestMix) -> dict[str, float]:
    """Share of the target's requests outside what the test covered, per dimension: prompts longer / shorter
    than any tested, outputs longer / shorter, and the cache-hit share beyond the test's."""
    r = tested_ranges(twin)
    out: dict[str, float] = {}
    if r.input_tokens is not None and r.output_tokens is not None:
        lo, hi = r.input_tokens
        out["prompt_longer"] = float(np.mean(mix.input_tokens > hi))
        out["prompt_shorter"] = float(np.mean(mix.input_tokens < lo))
        lo, hi = r.output_tokens
        out["output_longer"] = float(np.mean(mix.output_tokens > hi))
        out["output_shorter"] = float(np.mean(mix.output_tokens < lo))
        out["cache_hit_beyond"] = max(float(np.mean(mix.cached_tokens > 0)) - float(r.cache_hit_share or 0.0), 0.0)
    return out


def outside_flags(twin: Twin, mix: RequestMix) -> list[str]:
    """``extrapolation:`` flags with the real shares (more than :data:`OUTSIDE_SHARE` of the target outside)."""
    r = tested_ranges(twin)
    sh = outside_shares(twin, mix)
    out = []
    if not sh:
        return out
    (ilo, ihi), (olo, ohi) = r.input_tokens or (0.0, 0.0), r.output_tokens or (0.0, 0.0)
    if sh["prompt_longer"] > OUTSIDE_SHARE:
        out.append(f"extrapolation: {sh['prompt_longer']:.1%} of the prompts are longer than any in the test "
                   f"({ihi:,.0f} tokens; the longest here {float(np.max(mix.input_tokens)):,.0f}): the prefill cost "
                   "is extrapolated linearly")
    if sh["prompt_shorter"] > OUTSIDE_SHARE:
        out.append(f"extrapolation: {sh['prompt_shorter']:.1%} of the prompts are shorter than any in the test "
                   f"({ilo:,.0f} tokens)")
    if sh["output_longer"] > OUTSIDE_SHARE:
        out.append(f"extrapolation: {sh['output_longer']:.1%} of the outputs are longer than any in the test "
                   f"({ohi:,.0f} tokens; the longest here {float(np.max(mix.output_tokens)):,.0f}): decode time and "
                   "KV held are extrapolated")
    if sh["output_shorter"] > OUTSIDE_SHARE:
        out.append(f"extrapolation: {sh['output_shorter']:.1%} of the outputs are shorter than any in the test "
                   f"({olo:,.0f} tokens)")
    if sh["cache_hit_beyond"] > OUTSIDE_SHARE:
        hit, hit_t = float(np.mean(mix.cached_tokens > 0)), r.cache_hit_share or 0.0
        out.append(f"extrapolation: {hit:.1%} of the requests hit the prefix cache against {hit_t:.1%} "
                   "in the test: the cache-hit discount was not measured (the twin takes cached tokens as free)")
    return out


def _load_flags(twin: Twin, per_instance: float, have: bool) -> list[str]:
    """The predicted limit (per instance) below the lowest or above the highest load the test ran."""
    lo, hi = tested_ranges(twin).offered_load or (None, None)
    if not have or per_instance <= 0:
        return []
    k = max(int(twin.replicas or 1), 1)  # the test's loads were offered to k replicas: per replica
    lo, hi = (None if lo is None else lo / k), (None if hi is None else hi / k)
    if lo is not None and per_instance < lo:
        return [f"load: the predicted limit ({per_instance:.3g} rps per instance) lies below the lowest load the test "
                f"ran ({lo:.3g} rps): the batch sizes there were never measured"]
    if hi is not None and per_instance > hi:
        return [f"load: the predicted limit ({per_instance:.3g} rps per instance) lies above the highest load the "
                f"test ran ({hi:.3g} rps)"]
    return []


def _speed_flags(twin: Twin, info: dict) -> list[str]:
    """The twin's median time per output token at the predicted limit outside what the test measured (P25 at
    its lowest-load step to P75 at its highest)."""
    r = twin.reach or Reach()
    v = info.get("tpot_p50_ms")
    low, high = r.tpot_lowest_load_ms, r.tpot_highest_load_ms
    if v is None or not math.isfinite(v) or not low:
        return []
    loads = r.offered_load or [None, None]
    if low[0] is not None and v < low[0]:
        return [f"speed: at the predicted limit the twin decodes at {v:.1f} ms/token, faster than the test measured "
                f"at its lowest load ({low[0]:.1f}–{low[2]:.1f} ms/token, P25–P75, at {loads[0]:.3g} rps): the "
                "prediction rests on the fitted iteration cost below the batch sizes tested"]
    if high and high[2] is not None and v > high[2]:
        return [f"speed: at the predicted limit the twin decodes at {v:.1f} ms/token, slower than the test measured "
                f"at its highest load ({high[0]:.1f}–{high[2]:.1f} ms/token, P25–P75, at {loads[1]:.3g} rps)"]
    return []


def _unidentified_alternatives(twin: Twin, mix: RequestMix, point: ServerParams, batch: float | None = None):
    """(parameter, why, parameters, mix) at the other end of the prior range of each unidentified parameter the
    target leans on: the decode cost per sequence when the batch at the limit (``batch``, the median time-average
    batch per request of the point search, :func:`~bearing_lib.twin.search.decode_batch`) lies outside the
    test's, the context cost when its requests hold more context than the test's, the cache-hit discount when it
    hits the cache more than the test did."""
    out = []
    ident = {e.parameter: e for e in (twin.identification or [])}
    r = tested_ranges(twin)
    sq = ident.get("decode_ms_per_seq")
    bp = r.batch_p5_p95 or [None, None]
    if (sq and not sq.identified and sq.prior and sq.decode_ms_at_batch and batch
            and bp[0] is not None and bp[1] is not None):
        it, n_med = (float(v) for v in sq.decode_ms_at_batch)
        lo_b, hi_b = float(bp[0]), float(bp[1])
        if batch > BATCH_GROWTH * n_med or batch < n_med / BATCH_GROWTH:
            why = (f"at the limit the batch is {batch:.3g} requests against a median {n_med:.3g} ({lo_b:.3g}–"
                   f"{hi_b:.3g}, P5–P95) in the test, which hardly varied it, so the decode cost per sequence was "
                   f"not identified (prior "
                   f"0–{it / n_med:.3g} ms/seq: the {it:.3g} ms decode iteration at a batch of {n_med:.3g} all per "
                   "iteration or all per sequence); all per sequence")
            # the point is at the all-per-iteration end (the regression folded the batch into the base)
            alt = replace(point, decode_base_ms=0.0, decode_ms_per_seq=it / n_med)
            if abs(alt.decode_ms_per_seq - point.decode_ms_per_seq) > 0.05 * it / n_med:
                out.append(("decode_ms_per_seq", why, alt, mix))
    k = ident.get("decode_ms_per_kctx")
    if k and not k.identified and k.prior and twin.test_mix.get("input_tokens"):
        hi = float(k.prior[1])
        ti, to = np.asarray(twin.test_mix["input_tokens"], float), np.asarray(twin.test_mix["output_tokens"], float)
        ctx_t = float(np.mean(ti + 0.5 * to))
        ctx_m = float(np.mean(mix.input_tokens + 0.5 * mix.output_tokens))
        top = np.inf if r.total_tokens_max is None else float(r.total_tokens_max)
        beyond = float(np.mean(mix.input_tokens + mix.output_tokens > top))
        if hi > 0 and (ctx_m > CONTEXT_GROWTH * ctx_t or beyond > OUTSIDE_SHARE):
            why = (f"{beyond:.1%} of the requests hold more tokens than any in the test and their mean context is "
                   f"{ctx_m:,.0f} tokens against {ctx_t:,.0f}; the decode cost per context token was not identified "
                   f"(prior 0–{hi:.3g} ms/1k tokens, the batch cost read as context cost)")
            out.append(("decode_ms_per_kctx", why, replace(point, decode_ms_per_seq=0.0, decode_ms_per_kctx=hi), mix))
    pt = ident.get("prefill_ms_per_token")
    if (pt and not pt.identified and pt.prior and pt.prefill_ms_at_tokens
            and twin.test_mix.get("input_tokens")):
        total, tok = (float(v) for v in pt.prefill_ms_at_tokens)
        ti = np.asarray(twin.test_mix["input_tokens"], float)
        tc = np.asarray(twin.test_mix.get("cached_tokens") or np.zeros(ti.size), float)
        u_t = float(np.mean(np.maximum(ti - tc, 0.0)))
        u_m = float(np.mean(np.maximum(mix.input_tokens - mix.cached_tokens, 0.0)))
        lo_p, hi_p = r.input_tokens or (float(ti.min()), float(ti.max()))
        outside = float(np.mean((mix.input_tokens > hi_p) | (mix.input_tokens < lo_p)))
        if u_t > 0 and (u_m > PROMPT_GROWTH * u_t or u_m < u_t / PROMPT_GROWTH or outside > OUTSIDE_SHARE):
            why = (f"the mean uncached prompt is {u_m:,.0f} tokens against {u_t:,.0f} in the test ({outside:.1%} "
                   f"outside the tested {lo_p:,.0f}–{hi_p:,.0f}), but the test hardly varied the prompt, so the "
                   f"prefill cost per token was not identified (prior 0–{total / tok:.3g} ms/token: the "
                   f"{total:.3g} ms of prefill at {tok:,.0f} tokens all per batch or all per token)")
            # each end of the prior the point is not already at (within 5 % of the per-token cost's range)
            ends = (("all per token", replace(point, prefill_base_ms=0.0, prefill_ms_per_token=total / tok)),
                     ("all per batch", replace(point, prefill_base_ms=total, prefill_ms_per_token=0.0)))
            for label, alt in ends:
                if abs(alt.prefill_ms_per_token - point.prefill_ms_per_token) > 0.05 * total / tok:
                    out.append(("prefill_ms_per_token", f"{why}; {label}", alt, mix))
    hit_t = float(r.cache_hit_share or 0.0)
    hit_m = float(np.mean(mix.cached_tokens > 0))
    if hit_m > hit_t + OUTSIDE_SHARE:
        why = (f"{hit_m:.1%} of the requests hit the prefix cache against {hit_t:.1%} in the test; the discount of a "
               "cached token was not measured (prior 0–1: a full prefill to free)")
        out.append(("cache_hit_discount", why, point, RequestMix(mix.name, mix.input_tokens, mix.output_tokens,
                                                                  np.zeros(mix.size))))
    return out


def idle_timeout_share(mix: RequestMix, params: ServerParams) -> float:
    """Share of ``mix`` that outlives the request timeout even alone on an idle server (closed form: its
    prefill, then ``o − 1`` decode iterations of a batch of one, plus the client-side overhead)."""
    if params.request_timeout_s is None:
        return 0.0
    inp, out, cac = mix.input_tokens, mix.output_tokens, mix.cached_tokens
    unc = np.maximum(inp - cac, 0.0)
    o1 = np.maximum(out - 1.0, 0.0)
    # context grows from input + 1 by one token per iteration: Σ over the o − 1 iterations
    ctx_sum = o1 * (inp + 1.0) + o1 * (o1 - 1.0) / 2.0
    t = (params.ttft_overhead_ms + params.prefill_base_ms + params.prefill_ms_per_token * unc
         + o1 * (params.decode_base_ms + params.decode_ms_per_seq) + params.decode_ms_per_kctx * ctx_sum / 1000.0)
    return float(np.mean(t / 1000.0 >= params.request_timeout_s))


def _deadline_flags(mix: RequestMix, params: ServerParams) -> list[str]:
    share = idle_timeout_share(mix, params)
    if share <= 0:
        return []
    return [f"deadline: {share:.1%} of this mix would outlive the request timeout ({params.request_timeout_s:.1f} s) "
            "even on an idle server (long outputs): timeouts put a floor under the error rate at any load, and an "
            "error-rate clause at or below it cannot hold (the what-if without the timeout shows the limit the "
            "engine itself sets)"]


def calibration_mix(twin: Twin) -> RequestMix:
    """The calibration test's own mix (for a changed SLA or instance count on the tested mix)."""
    from bearing_lib.twin.mix import from_arrays

    m = twin.test_mix
    return from_arrays("the tested mix", m["input_tokens"], m["output_tokens"], m.get("cached_tokens"))


__all__ = [
    "DEFAULT_DRAWS",
    "KEEP",
    "SearchOptions",
    "calibration_mix",
    "idle_timeout_share",
    "margin_at",
    "outside_flags",
    "outside_shares",
    "parse_request_timeout",
    "predict",
    "search_limit",
    "tested_ranges",
]
