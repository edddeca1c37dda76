"""Build a :class:`~bearing_lib.compare.result.Comparison` from load tests or limits (``docs/compare.md``).

The steps, each a function: read every input as limits (:func:`read_inputs`: a limits JSON as
it is, a load test through the loaders and :func:`~bearing_lib.limits.fit.fit_limits`, one
deployment per run), describe each deployment (:func:`describe`: identity, limit, per-GPU and
per-user throughput, cost, fleet), compare every pair (:func:`pair_difference`), mark the Pareto
front (:mod:`bearing_lib.compare.front`) and write the ranked answer (:func:`answer_lines`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bearing_lib.common.errors import ParameterError
from bearing_lib.common.estimate import Estimate
from bearing_lib.compare import identity as idn
from bearing_lib.compare.front import mark_front
from bearing_lib.compare.result import (
    Basis,
    Comparison,
    Deployment,
    FleetPlan,
    Identity,
    PairDifference,
    Ratio,
    StepPoint,
)
from bearing_lib.compare.uncertainty import (
    LimitDraws,
    bound_verdict,
    interval_of_bound,
    limit_draws,
    ratio_interval,
    verdict_of,
)
from bearing_lib.limits.result import DEFAULT_ESTIMATOR, LimitsResult, MixLimit

WORKLOAD_TOLERANCE = 0.25
"""Deployments whose mean output tokens per request differ by more than this share were tested with different
workloads: their limits are not ranked (a limit in req/s depends on the request mix)."""

BASES: tuple[Basis, ...] = ("cost per 1M output tokens", "output tokens/s per GPU", "req/s per instance")
NOT_DISTINGUISHABLE = "not distinguishable at this test length"


OWN_FIT = ("load test not fitted again, its limits being the report's own (the same files by sha256, with the "
           "report's resamples and any earlier shape):")
"""The origin of a load test whose limits are reused (``compare(own=...)``) rather than fitted again."""


@dataclass
class _Input:
    """One deployment as read: its limits, the chosen mix's limit and where it came from."""

    name: str
    result: LimitsResult
    limit: MixLimit
    paths: list[str]
    origin: str  # "limits JSON" | "limits (in process)" | "load test" | OWN_FIT
    input_tokens_per_request: float | None = None
    """Mean input tokens per successful request of the run (load tests read here only)."""
    group: str | None = None
    """The input's own name when it gave several deployments (one per run): statements given for it apply to each."""


@dataclass
class _Side:
    """What the pair comparison needs of one deployment (in process only)."""

    dep: Deployment
    draws: LimitDraws
    k_gpu: float | None  # per-instance req/s -> output tok/s per GPU
    k_cost: float | None  # per-instance req/s -> $ per 1M output tokens (cost = k_cost / rps)
    sla_key: tuple[str, ...] = field(default_factory=tuple)


# ------------------------------------------------------------------ reading inputs
def _split_name(item: str) -> tuple[str | None, str]:
    name, sep, rest = item.partition("=")
    if sep and name and "/" not in name and Path(rest).exists():
        return name, rest
    return None, item


def _is_limits_json(path: Path) -> dict | None:
    if path.is_file() and path.suffix == ".json":
        from bearing_lib.common.files import read_json

        doc = read_json(path, "limits or load-test JSON")
        if str(doc.get("schema", "")).startswith("bearing.limits") or {"mixes", "sla", "conditions"} <= set(doc):
            return doc
    return None


def read_inputs(items: Sequence[Any], *, sla: Any, mix: str | None, n_boot: int, seed: int,
                format: str | None = None, estimator: str = DEFAULT_ESTIMATOR, own: LimitsResult | None = None
                ) -> list[_Input]:
    """Each input as one deployment per run: a limits JSON read as it is, a load test fitted here (or, when ``own``
    stands for its one-mix fit, :meth:`LimitsResult.stands_for_one_mix_fit_of`, those limits)."""
    out: list[_Input] = []
    for item in items:
        name, res, paths, origin, inputs_by_run = None, None, [], "limits", {}
        if isinstance(item, tuple):
            name, item = item
        if isinstance(item, LimitsResult):
            res, origin = item, "limits (in process)"
            paths = [s.path for s in item.conditions.sources]
        else:
            if name is None:
                name, item = _split_name(str(item))
            path = Path(item)
            if not path.exists():
                raise ParameterError(f"{item}: no such file or folder (expected a load test or a limits JSON)")
            paths = [str(path)]
            doc = _is_limits_json(path)
            if doc is not None:
                res, origin = LimitsResult.from_dict(doc, source=str(path)), "limits JSON"
            else:
                res, inputs_by_run, reused = _fit(path, sla, n_boot=n_boot, seed=seed, format=format,
                                                  estimator=estimator, own=own)
                origin = OWN_FIT if reused else "load test"
            name = name or (path.name.removesuffix(".json").removesuffix(".gz") if path.is_file() else path.name)
        for run in res.runs:
            lim = _choose_mix(res.for_run(run), mix, f"{name or run}")
            dname = (name or run) if len(res.runs) == 1 else f"{name}:{_run_part(run)}" if name else run
            # the limits' own source paths, each file once (a reused fit names it as the report resolved it)
            given = {Path(p).resolve() for p in paths}
            sources = [s.path for s in res.conditions.sources if Path(s.path).resolve() not in given]
            out.append(_Input(dname, res, lim, paths + sources, origin, inputs_by_run.get(run),
                              group=name if len(res.runs) > 1 else None))
    names = [i.name for i in out]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ParameterError(f"two deployments are named {', '.join(dup)}: name them with NAME=PATH")
    if len(out) < 2:
        raise ParameterError(f"a comparison needs at least two deployments, got {len(out)}")
    return out


def _run_part(run: str) -> str:
    """A run id without the file or folder part the deployment's name already says (``file/dataset`` → ``dataset``).

    >>> _run_part("llama_405b_online_output/sharegpt")
    'sharegpt'
    """
    return run.rsplit("/", 1)[-1]


def _fit(path: Path, sla: Any, *, n_boot: int, seed: int, format: str | None, estimator: str = DEFAULT_ESTIMATOR,
         own: LimitsResult | None = None) -> tuple[LimitsResult, dict[str, float], bool]:
    """The limits of a load test (one mix), its mean input tokens per successful request by run, and whether the
    limits are ``own`` (fitted before on the same files under the same SLA, one mix per run) rather than a new fit."""
    from bearing_lib.limits.fit import fit_limits
    from bearing_lib.loaders import load

    if sla is None:
        raise ParameterError(f"{path}: a load test needs an SLA to find its limit: pass --sla 'p90(ttft) <= 500ms' "
                             "(limits JSON files carry their own)")
    ds = load(path, format=format)
    if ds.kind not in ("requests", "loadpoints"):
        raise ParameterError(f"{path}: a {ds.kind} dataset holds no load test")
    items = ds if isinstance(ds, list) else [ds]
    if (own is not None and own.sla_text == _sla_text(sla)
            and own.stands_for_one_mix_fit_of([it.provenance.sha256 for it in items],
                                              [str(r) for it in items for r in it.frame["run_id"].unique()],
                                              estimator)):
        return own, _input_tokens(ds), True
    return fit_limits(ds, sla, mixes="none", n_boot=n_boot, seed=seed, estimator=estimator), _input_tokens(ds), False


def _sla_text(sla: Any) -> str:
    """The SLA as the limits JSON writes it (its clauses' text joined by ``and``)."""
    from bearing_lib.limits.sla import SLA, parse_sla

    return " and ".join(c.text for c in (sla if isinstance(sla, SLA) else parse_sla(sla)).clauses)


def _input_tokens(ds: Any) -> dict[str, float]:
    """Mean input tokens per successful request by run: per-request data directly, a load-point table as
    input tokens/s over req/s (the workload check's second dimension; absent when the tool does not say)."""
    import polars as pl

    f = ds.frame
    if ds.kind == "requests" and "input_tokens" in f.columns:
        g = f.filter(pl.col("status") == "ok").group_by("run_id").agg(pl.col("input_tokens").mean().alias("v"))
    elif {"input_tokens_per_s", "throughput_rps"} <= set(f.columns):
        g = f.group_by("run_id").agg((pl.col("input_tokens_per_s").sum() / pl.col("throughput_rps").sum()).alias("v"))
    else:
        return {}
    return {str(r["run_id"]): float(r["v"]) for r in g.iter_rows(named=True) if r["v"] is not None and r["v"] > 0}


def _choose_mix(limits: list[MixLimit], mix: str | None, where: str) -> MixLimit:
    if mix is not None:
        hit = [m for m in limits if m.mix.name == mix]
        if not hit:
            raise ParameterError(f"{where}: no mix {mix!r}; mixes: {', '.join(m.mix.name for m in limits)}")
        return hit[0]
    if len(limits) == 1:
        return limits[0]
    raise ParameterError(f"{where}: the limits hold {len(limits)} mixes ({', '.join(m.mix.name for m in limits)}); "
                         "choose the one to compare with --mix")


# ------------------------------------------------------------------ one deployment
def _for(name: str, value: Any, group: str | None = None) -> Any:
    """A per-deployment value from a scalar (all deployments) or a mapping by name (or by the input's name, for
    every deployment of an input with several runs)."""
    if isinstance(value, Mapping):
        return value.get(name, value.get(group) if group else None)
    return value


def identify(inp: _Input, labels: Mapping[str, Mapping[str, str]] | None, hardware: Any, gpus: Any) -> Identity:
    cond = inp.result.conditions
    ident = Identity(name=inp.name, sources=list(inp.paths))
    models = cond.model if isinstance(cond.model, list) else [cond.model]
    models = sorted({str(m) for m in models if m})
    if len(models) == 1:
        ident.model, ident.stated["model"] = models[0], "files"
    if cond.hardware:
        ident.hardware, ident.stated["hardware"] = cond.hardware, "files"
    if cond.instances:
        ident.instances, ident.stated["instances"] = int(cond.instances), "files"
    idn.from_names(ident, inp.paths)
    hw, ng = _for(inp.name, hardware, inp.group), _for(inp.name, gpus, inp.group)
    if hw:
        idn.apply_label(ident, {"hardware": str(hw)}, flag="--hardware")
    if ng is not None:
        idn.apply_label(ident, {"gpus": str(ng)}, flag="--gpus")
    label = _for(inp.name, labels or {}, inp.group)
    if label:
        idn.apply_label(ident, dict(label))
    if "instances" not in ident.stated:
        ident.stated["instances"] = "not stated: taken as 1 (one serving instance under test)"
    idn.derive_gpus(ident)
    return ident


def _interp(x: float | None, xs: list[float], ys: list[float]) -> float | None:
    """A per-user speed (tokens a second each user sees) at load ``x``, held at the end steps beyond them: not a
    rate of the whole server, which :func:`bearing_lib.limits.curves.rate_at` reads (it scales with the load)."""
    pts = sorted((a, b) for a, b in zip(xs, ys, strict=True) if a is not None and b is not None
                 and math.isfinite(a) and math.isfinite(b))
    if x is None or not pts:
        return None
    return float(np.interp(x, [p[0] for p in pts], [p[1] for p in pts]))


def step_points(name: str, lim: MixLimit, gpus: int | None) -> list[StepPoint]:
    out = []
    for s in lim.steps:
        tps = s.output_tokens_per_s
        tpot = s.stats.get("tpot_ms_p50") if s.stats else None
        if tpot and tpot > 0:
            user = 1000.0 / tpot
        elif tps and s.concurrency_mean and s.concurrency_mean > 0:
            user = tps / s.concurrency_mean
        else:
            user = None
        out.append(StepPoint(deployment=name, offered_load=s.offered_load, throughput_rps=s.throughput_rps,
                             output_tokens_per_s=tps, per_gpu_tps=tps / gpus if tps is not None and gpus else None,
                             per_user_tps=user, status=str(s.status), feasible=s.status == "pass"))
    return out


def _tokens_per_request(lim: MixLimit) -> float | None:
    q = lim.q_ult
    if q and q.tokens_per_s and q.throughput_rps and q.throughput_rps > 0:
        return q.tokens_per_s / q.throughput_rps
    tok = sum(s.output_tokens_per_s or 0 for s in lim.steps if s.throughput_rps)
    rps = sum(s.throughput_rps or 0 for s in lim.steps if s.output_tokens_per_s)
    return tok / rps if rps > 0 and tok > 0 else None


def _inverse(est: Estimate, numerator: float, unit: str) -> Estimate:
    """``numerator / est``: the interval inverted, a bound's sign flipped (a cost from a rate)."""
    def inv(x: float | None) -> float | None:
        return None if x is None or not x > 0 else numerator / x

    flip = {"lower": "upper", "upper": "lower"}.get(est.bound, est.bound)
    ci = (inv(est.hi), inv(est.lo)) if est.ci95 else None
    return Estimate(inv(est.value), ci95=ci, bound=flip, unit=unit, basis="none")  # type: ignore[arg-type]


def describe(inp: _Input, ident: Identity, *, price: float | None, rng: np.random.Generator,
             fleet_inputs: tuple[Any, Any] | None) -> _Side:
    """One deployment's limit and what follows from it, and the draws its comparisons use."""
    lim, q = inp.limit, inp.limit.q_ult
    notes: list[str] = []
    limit = q.estimate if q else Estimate(None, unit="")
    achieved = q.achieved if q else Estimate(None, unit="rps", basis="achieved")
    per_inst = achieved.scaled(1.0 / ident.instances) if achieved.available else achieved
    tokens = _tokens_per_request(lim)
    k_gpu = tokens * ident.instances / ident.gpus if tokens and ident.gpus else None
    per_gpu = per_inst.scaled(k_gpu, unit="output tok/s per GPU", basis="achieved") \
        if k_gpu and per_inst.available else None
    k_cost = None
    cost = None
    if price is not None:
        if not price > 0:
            raise ParameterError(f"--price-per-hour {inp.name}: expected a positive price, got {price}")
        if tokens:
            k_cost = price / (tokens * 3600.0) * 1e6
            cost = _inverse(per_inst, k_cost, "$ per 1M output tokens") if per_inst.available else None
    steps = step_points(inp.name, lim, ident.gpus)
    per_user = _interp(limit.value, [s.offered_load for s in steps], [s.per_user_tps for s in steps]) \
        if limit.available else None
    draws = LimitDraws(None, "none", "no draws: the deployment has no limit")
    # a limit is drawn whenever its 95 % interval is closed at both ends, a bound included: a limit capped at the
    # saturated throughput is an upper bound whose interval runs from the SLA crossing's lower end to the cap's own
    # upper end (docs/limits.md, "The saturation cap"). A bound's draws are held on its side of the interval (an
    # upper bound's at the interval's top, a lower bound's at its bottom); an open end gives no draws at all
    closed = q is not None and all(e is not None and math.isfinite(e) for e in q.ci95)
    if q is not None and achieved.available and limit.available and (limit.bound == "none" or closed):
        scale = achieved.value / limit.value / ident.instances
        reps = lim.replicates
        if reps is not None and limit.bound == "upper":
            reps = np.minimum(np.asarray(reps, dtype=float), float(q.ci95[1]))
        elif reps is not None and limit.bound == "lower":
            reps = np.maximum(np.asarray(reps, dtype=float), float(q.ci95[0]))
        if q.throughput_ci95_rps is not None and achieved.ci95 is not None and limit.bound == "none":
            # the completed CI read off the steps (limits.fit._completed_ci), as the sides show it, not the offered
            # CI times the value's ratio (review finding, round 22); the estimator's draws are scaled as before and
            # used only where they agree with it
            ratio = achieved.value / limit.value
            draws = limit_draws(achieved.value, tuple(achieved.ci95),
                                None if reps is None else np.asarray(reps, dtype=float) * ratio, rng,
                                scale=1.0 / ident.instances)
        else:
            draws = limit_draws(limit.value, tuple(q.ci95), reps, rng, scale=scale)
    if draws.draws is None and limit.available:
        what = "is a bound" if limit.is_bound else "has a 95% interval open at one end"
        draws = LimitDraws(None, "none", f"no draws: the limit {what} ({limit.text(3)}); compared by where it can "
                           "lie, not by a ratio")
    if not ident.gpus:
        notes.append("GPU count unknown: no per-GPU throughput (state it with --gpus or --label NAME=gpus=N)")
    dep = Deployment(identity=ident, sla=inp.result.sla_text, mix=lim.mix.name, limit=limit,
                     limit_statement=q.statement if q else "no limit in the file",
                     per_instance_rps=per_inst, output_tokens_per_request=tokens,
                     input_tokens_per_request=inp.input_tokens_per_request, per_gpu_tps=per_gpu,
                     per_user_tps=per_user, price_per_hour=price, cost_per_1m_output_tokens=cost,
                     uncertainty=draws.method, steps=steps, notes=notes)
    if fleet_inputs is not None and per_inst.available:
        dep.fleet = fleet_plan(dep, *fleet_inputs)
    return _Side(dep, draws, k_gpu, k_cost, tuple(sorted(c.text.replace(" ", "") for c in inp.result.sla)))


def fleet_plan(dep: Deployment, target: Any, tier: Any) -> FleetPlan:
    """``ceil(target × FOS / per-instance limit)`` instances, at the limit and at its interval's ends."""
    from bearing_lib.plan.economics import monthly_cost

    fos, t = tier.target_fos, target.rps
    est = dep.per_instance_rps

    def need(rate: float | None) -> int | None:
        return None if rate is None or not rate > 0 else max(1, math.ceil(t * fos / rate - 1e-9))

    n = need(est.value)
    ci = (need(est.hi), need(est.lo)) if est.ci95 and not est.is_bound else None
    word = {"upper": "at least ", "lower": "at most "}.get(est.bound, "")
    gpus_per = dep.identity.gpus // dep.identity.instances if dep.identity.gpus else None
    price = dep.price_per_hour
    cost = monthly_cost(n, price) if n and price else None
    cost_ci = (monthly_cost(ci[0], price), monthly_cost(ci[1], price)) if ci and price and ci[0] and ci[1] else None
    text = f"{word}{n} instance{'s' if n != 1 else ''}"
    if gpus_per and n:
        text += f" ({word}{n * gpus_per} GPU{'s' if n * gpus_per != 1 else ''})"
    if cost is not None:
        text += f" at ${cost:,.0f}/month"
    if ci and ci[0] != ci[1]:
        text += f" (95% CI {ci[0]}–{ci[1]} instances)"
    return FleetPlan(target_rps=t, target_basis=target.basis, tier=tier.name, target_fos=fos, instances=n,
                     instances_ci95=ci, gpus=n * gpus_per if n and gpus_per else None, monthly_cost=cost,
                     monthly_cost_ci95=cost_ci, statement=text)


# ------------------------------------------------------------------ pairs
def unlike(a: _Side, b: _Side, tolerance: float) -> list[str]:
    """Why A and B must not be ranked against each other (empty when they may be)."""
    da, db = a.dep, b.dep
    why = []
    if a.sla_key != b.sla_key:
        why.append(f"different SLAs ({da.sla!r} vs {db.sla!r})")
    ma, mb = da.identity.model, db.identity.model
    for d, m in ((da, ma), (db, mb)):
        if m is None:
            why.append(f"the model of {d.name} is unknown (state it with --label {d.name}=model=...)")
    if ma and mb and ma != mb:
        why.append(f"different models ({ma} vs {mb})")
    for what, ta, tb in (("output", da.output_tokens_per_request, db.output_tokens_per_request),
                         ("input", da.input_tokens_per_request, db.input_tokens_per_request)):
        if ta and tb and abs(ta - tb) / min(ta, tb) > tolerance:
            why.append(f"different workloads ({ta:.0f} vs {tb:.0f} {what} tokens per request; a limit in req/s "
                       "holds only for the request mix it was tested with)")
    for d in (da, db):
        if not d.per_instance_rps.available:
            why.append(f"{d.name} has no limit ({d.limit_statement or d.limit.text(3)})")
    return why


def pair_basis(a: _Side, b: _Side) -> Basis:
    if a.k_cost and b.k_cost:
        return "cost per 1M output tokens"
    if a.k_gpu and b.k_gpu:
        return "output tokens/s per GPU"
    ha, hb = a.dep.identity.hardware, b.dep.identity.hardware
    if ha and hb and ha == hb:
        return "req/s per instance"
    return "none"


def _ratio(a: _Side, b: _Side, ka: float, kb: float, method: str, *, invert: bool = False) -> Ratio | None:
    if a.draws.draws is None or b.draws.draws is None:
        return None
    xa, xb = a.draws.draws * ka, b.draws.draws * kb
    med, lo, hi = ratio_interval(xb, xa) if invert else ratio_interval(xa, xb)
    return Ratio(med, (lo, hi), method)


def pair_difference(a: _Side, b: _Side, tolerance: float) -> PairDifference:
    """A against B: ratios with 95 % intervals and the verdict on the best basis both support."""
    why = unlike(a, b, tolerance)
    basis = pair_basis(a, b) if not why else "none"
    if not why and basis == "none":
        why.append("the hardware is unknown or differs and neither a GPU count nor a price is given for both, so "
                   "per-instance limits are not comparable (give --gpus or --price-per-hour)")
    src = {a.draws.source, b.draws.source} - {"none"}
    method = ("percentile interval of independently paired draws of the two limits ("
              + " and ".join(sorted(src)) + ")") if src else ""
    lr = _ratio(a, b, 1.0, 1.0, method) if not why or basis != "none" else None
    gr = _ratio(a, b, a.k_gpu, b.k_gpu, method) if a.k_gpu and b.k_gpu else None
    cr = _ratio(a, b, 1.0 / a.k_cost, 1.0 / b.k_cost, method, invert=True) if a.k_cost and b.k_cost else None
    if lr is None and not why:
        lr = _ratio(a, b, 1.0, 1.0, method)
    na, nb = a.dep.name, b.dep.name
    if why:
        return PairDifference(na, nb, False, "none", "not ranked", f"{na} and {nb} are not ranked: " + "; ".join(why),
                              limit_ratio=None, reasons=why)
    chosen = {"cost per 1M output tokens": cr, "output tokens/s per GPU": gr, "req/s per instance": lr}[basis]
    if chosen is not None:
        v = verdict_of(*chosen.ci95)
        if basis == "cost per 1M output tokens":  # a lower cost is better
            v = {"better": "worse", "worse": "better"}.get(v, v)
        shown = f"ratio {chosen.value:.3g} (95% CI {chosen.ci95[0]:.3g}–{chosen.ci95[1]:.3g})"
    else:
        v = bound_verdict(_range(a, basis), _range(b, basis))
        shown = (f"{_value_text(a.dep, basis)} vs {_value_text(b.dep, basis)} (no ratio: "
                 f"{a.draws.method if a.draws.draws is None else b.draws.method})")
    word = {"better": "better than", "worse": "worse than"}.get(v, NOT_DISTINGUISHABLE + " from")
    statement = f"on {basis}, {na} is {word} {nb}: {shown}"
    qa, qb = (s.dep.identity.options.get("quantisation") or s.dep.identity.options.get("quantization") for s in (a, b))
    if qa != qb:
        statement += " (quantisation differs: this compares capacity, not the quality of the answers)"
    return PairDifference(na, nb, True, basis, v, statement, limit_ratio=lr, per_gpu_ratio=gr, cost_ratio=cr)


def _basis_estimate(d: Deployment, basis: Basis) -> Estimate | None:
    return {"cost per 1M output tokens": d.cost_per_1m_output_tokens, "output tokens/s per GPU": d.per_gpu_tps,
            "req/s per instance": d.per_instance_rps}.get(basis)


def _range(s: _Side, basis: Basis) -> tuple[float, float]:
    """Where the basis value can lie; for cost, as a negative so that larger is better throughout."""
    e = _basis_estimate(s.dep, basis)
    lo, hi = interval_of_bound(e.value, e.bound, (e.lo, e.hi))
    return (-hi, -lo) if basis == "cost per 1M output tokens" else (lo, hi)


def _value_text(d: Deployment, basis: Basis) -> str:
    e = _basis_estimate(d, basis)
    return e.text(3) if e is not None else "not available"


# ------------------------------------------------------------------ ranking and the answer
def common_basis(sides: list[_Side]) -> Basis:
    live = [s for s in sides if s.dep.per_instance_rps.available]
    for basis in BASES[:2]:
        if live and all(_basis_estimate(s.dep, basis) is not None for s in live):
            return basis
    hw = {s.dep.identity.hardware for s in live}
    return "req/s per instance" if live and None not in hw and len(hw) == 1 else "none"


def rank(sides: list[_Side], basis: Basis, pairs: list[PairDifference]) -> list[str]:
    """Best first on ``basis``: the best deployment, then those ranked against it, by point value."""
    if basis == "none":
        return []
    live = [s for s in sides if _basis_estimate(s.dep, basis) is not None and _basis_estimate(s.dep, basis).available]
    sign = 1.0 if basis == "cost per 1M output tokens" else -1.0
    live.sort(key=lambda s: sign * _basis_estimate(s.dep, basis).value)
    if not live:
        return []
    best = live[0].dep.name
    ok = {p.b if p.a == best else p.a for p in pairs if best in (p.a, p.b) and p.comparable}
    if not ok:  # one deployment is no ranking
        return []
    return [best] + [s.dep.name for s in live[1:] if s.dep.name in ok]


def _pair_between(pairs: list[PairDifference], a: str, b: str) -> PairDifference | None:
    return next((p for p in pairs if {p.a, p.b} == {a, b}), None)


_REASON_KINDS = (
    ("different SLAs", "different SLAs"),
    ("the model of ", "a model is unknown"),
    ("different models", "different models"),
    ("different workloads", "different workloads (tokens per request)"),
    (" has no limit", "a deployment has no limit"),
    ("the hardware is unknown", "no GPU count, price or shared hardware to compare on"),
)


def unranked_summary(deps: list[Deployment], pairs: list[PairDifference]) -> str:
    """Why nothing is ranked, in one readable line: each kind of reason with the pairs it stops (each pair's own
    reasons stay in :attr:`PairDifference.reasons`).

    >>> p = PairDifference("a", "b", False, "none", "not ranked", "", reasons=["different models (x vs y)"])
    >>> unranked_summary([], [p]).split("; ")[0]
    'no two deployments could be ranked: different models (1 of 1 pair: a–b)'
    """
    if not pairs:
        return "no two deployments could be ranked: " + ("no deployment has a limit" if not deps else
                                                          "one deployment only")
    kinds: dict[str, list[str]] = {}
    for p in pairs:
        if p.comparable:
            continue
        for why in p.reasons:
            kind = next((k for key, k in _REASON_KINDS if key in why), why)
            kinds.setdefault(kind, [])
            if f"{p.a}–{p.b}" not in kinds[kind]:
                kinds[kind].append(f"{p.a}–{p.b}")
    n = len(pairs)
    parts = []
    for kind, which in kinds.items():
        shown = ", ".join(which[:4]) + (f", … {len(which) - 4} more" if len(which) > 4 else "")
        parts.append(f"{kind} ({len(which)} of {n} pair{'s' if n != 1 else ''}: {shown})")
    hint = ""
    if "a model is unknown" in kinds:
        hint = "; state the model with --label NAME=model=..."
    return ("no two deployments could be ranked: " + "; ".join(parts) + hint
            + "; each pair's reasons are under the differences")


def answer_lines(deps: list[Deployment], ranking: list[str], basis: Basis, pairs: list[PairDifference]) -> list[str]:
    """The ranked answer: the best deployment and what each other needs, with whether it is distinguishable."""
    if not ranking:
        return [unranked_summary(deps, pairs)]
    by = {d.name: d for d in deps}
    best = by[ranking[0]]
    lines = []
    if best.fleet is not None:
        f = best.fleet
        head = (f"For the production mix at its peak ({f.target_rps:,.3g} req/s; {f.target_basis}) and the {f.tier} "
                f"tier (design FOS {f.target_fos:g}), {best.name} carries it with {f.statement}")
    else:
        head = f"{best.name} is best on {basis}: {_value_text(best, basis)}"
    rest = []
    for name in ranking[1:]:
        d, p = by[name], _pair_between(pairs, best.name, name)
        what = f"{name} needs {d.fleet.statement}" if d.fleet is not None and best.fleet is not None \
            else f"{name}: {_value_text(d, basis)}"
        if p is not None:
            ratio = {"cost per 1M output tokens": p.cost_ratio, "output tokens/s per GPU": p.per_gpu_ratio,
                     "req/s per instance": p.limit_ratio}[p.basis]
            ratio_text = (f"; ratio {name}/{best.name} {1 / ratio.value:.3g} (95% CI {1 / ratio.ci95[1]:.3g}–"
                          f"{1 / ratio.ci95[0]:.3g})" if ratio is not None and p.a == best.name else
                          f"; ratio {name}/{best.name} {ratio.value:.3g} (95% CI {ratio.ci95[0]:.3g}–"
                          f"{ratio.ci95[1]:.3g})" if ratio is not None else "")
            dist = "not distinguishable at this test length" if p.verdict == "not distinguishable" \
                else "distinguishable"
            what += f" — the difference on {p.basis} is {dist}{ratio_text}"
        rest.append(what)
    lines.append(head + ("; " + "; ".join(rest) if rest else "") + ".")
    for d in deps:
        if d.name not in ranking:
            p = _pair_between(pairs, best.name, d.name)
            why = "; ".join(p.reasons) if p is not None and p.reasons else "no limit on the ranking basis"
            lines.append(f"{d.name} is not ranked against {best.name}: {why}.")
    return lines


# ------------------------------------------------------------------ the entry point
def compare(
    inputs: Sequence[Any],
    *,
    sla: Any = None,
    mix: str | None = None,
    labels: Mapping[str, Mapping[str, str]] | None = None,
    hardware: str | Mapping[str, str] | None = None,
    gpus: int | Mapping[str, int] | None = None,
    price_per_hour: float | Mapping[str, float] | None = None,
    profile: Any = None,
    tier: str = "standard",
    n_boot: int = 200,
    seed: int = 0,
    workload_tolerance: float = WORKLOAD_TOLERANCE,
    format: str | None = None,
    estimator: str = DEFAULT_ESTIMATOR,
    own: LimitsResult | None = None,
) -> Comparison:
    """Compare deployments under one SLA: limits, per-GPU and per-user throughput, cost, fleet, verdicts.

    Parameters
    ----------
    inputs
        Load-test files or folders (each fitted with ``sla``, one mix), limits JSON files,
        :class:`LimitsResult` objects, or ``(name, any of these)`` pairs; a string ``NAME=PATH`` names it.
        A source with several runs gives one deployment per run.
    sla
        The SLA for load tests (limits JSON files carry their own; deployments under different SLAs are
        not ranked).
    mix
        The mix to compare when a limits JSON holds several.
    labels, hardware, gpus, price_per_hour
        The analyst's statements: per deployment name (a mapping) or for all (a scalar). ``labels``
        values are ``{field: value}`` (model, engine, engine_version, hardware, gpus, instances, tp, pp,
        or an option name such as ``quantization``). ``price_per_hour`` is per serving instance.
    profile
        A profile JSON (path or document): the fleet that carries its target at the ``tier``'s design FOS.
    n_boot, seed
        Bootstrap resamples for load tests fitted here, and the seed of every random draw.
    estimator
        The estimator of request traces fitted here (``pooled`` or ``model``, as ``fit_limits``); limits JSON
        files carry their own.
    own
        Limits fitted before under ``sla`` (a report's own): a load test whose files and runs they were fitted on, with
        ``estimator``, one mix per run (:meth:`LimitsResult.stands_for_one_mix_fit_of`), takes them instead of a new
        fit, and a note says so (their resamples and any earlier shape are the report's: the interval may be narrower
        than a new fit's).

    Examples
    --------
    >>> from bearing_lib.compare import compare                       # doctest: +SKIP
    >>> c = compare(["a=runs/a", "b=runs/b"], sla="p90(ttft) <= 500ms", gpus=8)  # doctest: +SKIP
    >>> c.answer[0]                                                   # doctest: +SKIP
    """
    from bearing_lib.limits.fit import ESTIMATORS

    if estimator not in ESTIMATORS:
        raise ParameterError(f"estimator (--estimator): expected {' or '.join(ESTIMATORS)}, got {estimator!r}")
    rng = np.random.default_rng(seed)
    read = read_inputs(inputs, sla=sla, mix=mix, n_boot=n_boot, seed=seed, format=format, estimator=estimator,
                       own=own)
    names = {i.name for i in read} | {i.group for i in read if i.group}
    for flag, m in (("--label", labels), ("--hardware", hardware), ("--gpus", gpus), ("--price-per-hour",
                                                                                       price_per_hour)):
        if isinstance(m, Mapping):
            unknown = sorted(set(m) - names)
            if unknown:
                raise ParameterError(f"{flag}: no deployment named {', '.join(unknown)}; deployments: "
                                     f"{', '.join(sorted(names))}")
    fleet_inputs, prof = _fleet_inputs(profile, tier) if profile is not None else (None, None)
    sides = [describe(i, identify(i, labels, hardware, gpus), price=_for(i.name, price_per_hour, i.group), rng=rng,
                      fleet_inputs=fleet_inputs) for i in read]
    pairs = [pair_difference(a, b, workload_tolerance) for k, a in enumerate(sides) for b in sides[k + 1:]]
    deps = [s.dep for s in sides]
    mark_front(deps, groups={s.dep.name: (s.sla_key, s.dep.identity.model) for s in sides})
    basis = common_basis(sides)
    ranking = rank(sides, basis, pairs)
    notes = _notes(read, fleet_inputs) + _estimator_notes(read, estimator) + _workload_notes(deps, prof,
                                                                                               workload_tolerance)
    if sla is not None:
        notes += [f"{i.name}: a limits JSON under its own SLA ({i.result.sla_text}); --sla applies to load tests only"
                  for i in read if i.origin == "limits JSON"]
    return Comparison(deployments=deps, pairs=pairs, answer=answer_lines(deps, ranking, basis, pairs),
                      ranking=ranking, basis=basis, tier=fleet_inputs[1].name if fleet_inputs else None, notes=notes)


def _fleet_inputs(profile: Any, tier: str) -> tuple[tuple[Any, Any], Any]:
    from bearing_lib.common.files import read_json
    from bearing_lib.plan.fos import get_tier
    from bearing_lib.plan.inputs import plan_target, profile_input_from_dict

    doc = profile if isinstance(profile, dict) else read_json(profile, "profile")
    p = profile_input_from_dict(doc, source=str(profile) if not isinstance(profile, dict) else "profile")
    return (plan_target(p), get_tier(tier)), p


def _workload_notes(deps: list[Deployment], prof: Any, tolerance: float) -> list[str]:
    """Where the tested workload does not stand for the production mix the profile describes."""
    if prof is None:
        return []
    out = []
    for d in deps:
        for what, tested, prod in (("output", d.output_tokens_per_request, prof.mean_output_tokens),
                                   ("input", d.input_tokens_per_request, prof.mean_input_tokens)):
            if tested and prod and abs(tested - prod) / min(tested, prod) > tolerance:
                out.append(f"{d.name}: tested with {tested:.0f} {what} tokens per request, production has {prod:.0f}: "
                           "the limit is the tested workload's, not the production mix's")
    return out


def _notes(read: list[_Input], fleet_inputs: Any) -> list[str]:
    notes = []
    for i in read:
        shas = ", ".join(f"{Path(x.path).name} sha256 {x.sha256[:12]}" for x in i.result.conditions.sources if x.sha256)
        notes.append(f"{i.name}: {i.origin} {', '.join(i.paths)}, mix {i.limit.mix.name!r}, run {i.limit.run_id!r}"
                     + (f" ({shas})" if shas else ""))
    if fleet_inputs is not None:
        notes.append("fleet: instances = ceil(target × design FOS / per-instance achieved limit), without the plan's "
                     "burst buffer; monthly cost = instances × price × 730 h")
    return notes


def _estimator_notes(read: list[_Input], estimator: str) -> list[str]:
    """A note when the deployments' limits come from different estimators (limits JSON files carry their own,
    ``conditions.estimator``; load tests fitted here use ``estimator``): compared as given, said."""
    used = {i.name: (i.result.conditions.estimator if i.origin != "load test" else estimator) for i in read}
    known = {n: e for n, e in used.items() if e}
    if len(set(known.values())) <= 1:
        return []
    return [f"the limits come from different estimators ({', '.join(f'{n}: {e}' for n, e in known.items())}): "
            "compared as given; the model's and the pooled estimator's values of one test can differ by a few %, "
            "and their intervals are made differently (docs/limits.md, \"The estimator\")"]


__all__ = ["BASES", "NOT_DISTINGUISHABLE", "WORKLOAD_TOLERANCE", "answer_lines", "compare", "describe", "identify",
           "pair_difference", "read_inputs", "unranked_summary"]
