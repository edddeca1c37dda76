"""The limit of a weighted mix of request mixes: production's weights applied to the per-mix limits.

``fit_limits(..., weights=...)`` (``bearing limits --weights``) gives ``LimitsResult.blended``. The value is
the weighted harmonic mean of the mixes' limits (``common.blend.blended_capacity``: each mix's share of the
requests takes its share of the capacity); its 95 % interval is the equal-tailed interval of the same blend
over the mixes' replicates, drawn together.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from bearing_lib.common.blend import blended_capacity
from bearing_lib.common.errors import ParameterError
from bearing_lib.common.yamlfile import read_yaml
from bearing_lib.limits.interval import equal_tailed
from bearing_lib.limits.result import BlendedLimit, MixLimit


def load_weights(weights: Mapping[str, float] | str | Path) -> dict[str, float]:
    """Production weights per mix from a mapping or a YAML/JSON file (``{mix: w}``, ``weights:``, or a profile's
    ``[{mix, share}]``): shares (every weight ≤ 1) must sum to 1; relative weights (any above 1) are normalised."""
    if isinstance(weights, (str, Path)):
        p = Path(weights)
        doc = read_yaml(p, "the weights file")
        if isinstance(doc, dict) and "weights" in doc:
            doc = doc["weights"]
        if isinstance(doc, list):  # [{mix, share}] as in a profile's mix_shares
            try:
                doc = {str(d["mix"]): d.get("share", d.get("weight")) for d in doc}
            except (KeyError, TypeError) as exc:
                raise ParameterError(f"{p}: expected a list of {{mix, share}} entries") from exc
        weights = doc
    if not isinstance(weights, Mapping) or not weights:
        raise ParameterError(f"weights: expected a mapping mix -> weight, got {weights!r}")
    out = {}
    for k, v in weights.items():
        try:
            fv = float(v)
        except (TypeError, ValueError):
            raise ParameterError(f"weights: the weight of {k!r} must be a number, got {v!r}") from None
        if fv < 0 or not math.isfinite(fv):
            raise ParameterError(f"weights: the weight of {k!r} must be ≥ 0, got {v!r}")
        out[str(k)] = fv
    if sum(out.values()) <= 0:
        raise ParameterError("weights: all weights are zero")
    total = sum(out.values())
    if max(out.values()) <= 1 and abs(total - 1) > WEIGHT_SUM_TOLERANCE:
        # All weights <= 1 read as shares: a sum off 1 is a forgotten mix or a typo, and
        # renormalising would hide it. Weights above 1 (counts) are relative: normalised.
        listed = ", ".join(f"{k}: {v:g}" for k, v in out.items())
        raise ParameterError(
            f"weights: shares must sum to 1 (within {WEIGHT_SUM_TOLERANCE:g}), found {total:.4g} ({listed}); add the "
            "missing mix, fix the typo, or give relative weights such as request counts (any weight > 1), which "
            "are normalised"
        )
    return out


WEIGHT_SUM_TOLERANCE = 0.01


def blended_limit(limits: list[MixLimit], weights: Mapping[str, float] | str | Path, level: float) -> BlendedLimit:
    """The weighted mix's limit (``common.blend.blended_capacity``: the weighted harmonic mean of the mixes'
    limits), its interval from the mixes' replicates taken together, and its censoring."""
    wts = load_weights(weights)
    chosen: list[tuple[MixLimit, float]] = []
    for key, wv in wts.items():
        if wv == 0:
            continue
        if "/" in key and any(f"{m.run_id}/{m.mix.name}" == key for m in limits):
            hits = [m for m in limits if f"{m.run_id}/{m.mix.name}" == key]
        else:
            hits = [m for m in limits if m.mix.name == key]
        if not hits:
            known = sorted({m.mix.name for m in limits})
            raise ParameterError(f"weights: no limit for mix {key!r}; mixes with a limit: {known}")
        if len(hits) > 1:
            raise ParameterError(f"weights: mix {key!r} has a limit in several runs "
                                 f"({[m.run_id for m in hits]}); key the weight as 'run/mix'")
        chosen.append((hits[0], wv))
    units = {m.unit for m, _ in chosen}
    if len(units) != 1 or None in units:
        raise ParameterError(f"weights: the weighted mixes' limits use different units {sorted(map(str, units))}")
    total = sum(w for _, w in chosen)
    norm = {f"{m.run_id}/{m.mix.name}": w / total for m, w in chosen}
    cens = {m.q_ult.censored for m, _ in chosen}
    if any(m.q_ult.value is None for m, _ in chosen) or "no_data" in cens:
        return BlendedLimit(value=None, ci95=(None, None), weights=norm, censored="no_data",
                            statement="not available: a weighted mix has no limit")
    qs = [float(m.q_ult.value) for m, _ in chosen]
    value = blended_capacity(qs, [w for _, w in chosen])
    ci: list[float | None] = [None, None]
    reps = [m.replicates for m, _ in chosen]
    if all(r is not None for r in reps):
        n = min(len(r) for r in reps)
        wv = np.array([w for _, w in chosen]) / total
        mat = np.vstack([np.asarray(r[:n], float) for r in reps])  # (M, R)
        with np.errstate(divide="ignore", invalid="ignore"):
            inv = np.where(np.isposinf(mat), 0.0, wv[:, None] / mat)
            b = 1.0 / inv.sum(axis=0)
        b[np.any(np.isneginf(mat) | (mat <= 0), axis=0)] = -math.inf
        ci = equal_tailed(b, level)
    unit = units.pop()
    # each weighted mix's limit as a value or a bound: QUlt.estimate decides upper, lower or unbounded (a capped
    # limit, held at the most its run completed, is an upper bound there whatever its censoring, as one censored
    # below is); censored and capped choose the words, and censored also marks a not-monotone limit (a value to
    # Estimate) as neither a value nor a bound for the blend. The blend grows with every mix's limit, so a blend of
    # values and upper bounds is an upper bound, of values and lower bounds a lower bound; the statement names the
    # mixes that make it so
    why: dict[str, list[str]] = {"upper": [], "lower": [], "neither": []}
    for m, _ in chosen:
        key, q = f"{m.run_id}/{m.mix.name}", m.q_ult
        bound = q.estimate.bound
        if bound == "upper":
            why["upper"].append(f"{key} failed at its lowest load" if q.censored == "below"
                                else f"{key} is capped at the most its run completed")
        elif bound == "lower":
            why["lower"].append(f"{key} never failed")
        elif bound == "unbounded" or q.censored == "not_monotone":
            why["neither"].append(f"{key} is {q.censored.replace('_', ' ')}")
    reasons = "; ".join(why["upper"] + why["lower"] + why["neither"])
    if not reasons:
        censored, statement = "none", f"{value:.4g} {unit}"
    elif not why["neither"] and not why["lower"]:
        censored, statement = "below", f"< {value:.4g} {unit} ({reasons})"
    elif not why["neither"] and not why["upper"]:
        censored, statement = "above", f"≥ {value:.4g} {unit} ({reasons})"
    else:
        censored, statement = "mixed", f"{value:.4g} {unit}, neither a value nor a one-sided bound ({reasons})"
    return BlendedLimit(value=value, unit=unit, ci95=tuple(ci), weights=norm, censored=censored, statement=statement)


__all__ = ["WEIGHT_SUM_TOLERANCE", "blended_limit", "load_weights"]
