"""Input and output length: the test's distribution against production's.

Quantiles are linear (``numpy.quantile(method="linear")``, bearing's one definition); the
two-sample distances are scipy's: ``scipy.stats.ks_2samp`` (Kolmogorov-Smirnov statistic,
Smirnov 1948) and ``scipy.stats.wasserstein_distance`` (the earth mover's distance, in
tokens: the mean shift needed to turn one distribution into the other). The verdict rule is
in :mod:`bearing_lib.fidelity.thresholds`.
"""

from __future__ import annotations

import numpy as np

from bearing_lib.common.format import fmt_number
from bearing_lib.fidelity.result import Dimension, LengthExtra, Mean, Quantiles
from bearing_lib.fidelity.thresholds import KS_DIFFERS, LENGTH_RULE, MIN_TEST_REQUESTS, OUTSIDE_DIFFERS

WORDS = {"input_tokens": ("input length", "prompts", "prompt"), "output_tokens": ("output length", "outputs", "output")}


def quantiles(values: np.ndarray) -> Quantiles:
    """P50/P90/P99 with linear interpolation, min, max, mean."""
    v = np.asarray(values, dtype=float)
    p50, p90, p99 = (float(x) for x in np.quantile(v, [0.5, 0.9, 0.99], method="linear"))
    return Quantiles(int(v.size), p50, p90, p99, float(v.min()), float(v.max()), float(v.mean()))


def _tok(x: float) -> str:
    return f"{fmt_number(x, 0)}"


def _share(x: float) -> str:
    """A share as a percentage with one decimal; a non-zero share below 0.05 % is "< 0.1%", never "0.0%"."""
    return "< 0.1%" if 0 < x < 0.0005 else f"{x:.1%}"


def _test_text(q: Quantiles, noun: str, adj: str) -> str:
    if q.min == q.max:
        return f"{_tok(q.min)}-token {noun}"
    return f"{noun} of median {_tok(q.p50)} tokens ({_tok(q.min)}–{_tok(q.max)})"


def _ratio_text(r: float) -> str:
    """A ratio in two significant digits, more (up to five) where fewer would print one of the rule's edges 0.5 and
    2 it was compared with (129 / 263.4 = 0.49 read "0.5× the tested mean" against "outside 0.5–2×"; round 22), and
    never "0.0" for a small one."""
    t = f"{r:.2g}"
    for sig in (2, 3, 4, 5):
        t = f"{r:.{sig}g}"
        if not any(r != e and float(t) == e for e in (0.5, 2.0)):
            break
    return t


def length_dimension(name: str, test: np.ndarray | None, production: np.ndarray | None, *,
                     test_mean_only: float | None = None) -> Dimension:
    """The ``input_tokens`` or ``output_tokens`` dimension. ``test_mean_only``: the test gives only a mean
    per request (a load-point table), no per-request lengths."""
    label, noun, adj = WORDS[name]
    t = None if test is None else np.asarray(test, dtype=float)
    p = None if production is None else np.asarray(production, dtype=float)
    if p is None or p.size == 0:
        return Dimension(name, label, "unknown", f"production gives no {label}", LENGTH_RULE, unit="tokens",
                         test=quantiles(t) if t is not None and t.size else None)
    pq = quantiles(p)
    if t is None or t.size < MIN_TEST_REQUESTS:
        if test_mean_only is not None:
            ratio = pq.p50 / test_mean_only if test_mean_only > 0 else float("inf")
            verdict = "differs" if not 0.5 <= ratio <= 2.0 else "unknown"
            return Dimension(name, label, verdict,
                             f"the test reports only a mean of {_tok(test_mean_only)} tokens per {adj}; production's "
                             f"median is {_tok(pq.p50)} (P99 {_tok(pq.p99)})"
                             + ("" if verdict == "unknown" else f": {_ratio_text(ratio)}× the tested mean"),
                             LENGTH_RULE + "; with only a tested mean: differs when production's median is outside "
                             "0.5–2× it", test=Mean(test_mean_only), production=pq, unit="tokens")
        n = 0 if t is None else int(t.size)
        have = (f"only {n} request(s) with a {label} (< {MIN_TEST_REQUESTS})" if n else f"no per-request {label} "
                "(and no mean per request)")
        return Dimension(name, label, "unknown", f"the test gives {have}; production's median is {_tok(pq.p50)} tokens",
                         LENGTH_RULE, production=pq, unit="tokens")
    from scipy.stats import ks_2samp, wasserstein_distance

    tq = quantiles(t)
    ks = float(ks_2samp(t, p).statistic)
    w = float(wasserstein_distance(t, p))
    longer, shorter = float(np.mean(p > tq.max)), float(np.mean(p < tq.min))
    outside = longer + shorter
    differs = ks > KS_DIFFERS or outside > OUTSIDE_DIFFERS
    head = f"the limit was measured on {_test_text(tq, noun, adj)}; production's median is {_tok(pq.p50)}"
    head += f" (P99 {_tok(pq.p99)})"
    tail = []
    if longer > 0:
        tail.append(f"{_share(longer)} of production's {noun} are longer than any tested ({_tok(tq.max)})")
    if shorter > 0:
        tail.append(f"{_share(shorter)} are shorter than any tested ({_tok(tq.min)})")
    statement = head + (": " + "; ".join(tail) if tail else "") + f" (KS D {ks:.2f})"
    short = head + (f"; {longer:.0%} of its {noun} are longer than any tested" if longer >= 0.005 else "")
    return Dimension(name, label, "differs" if differs else "represents", statement, LENGTH_RULE, test=tq,
                     production=pq, distance={"ks": ks, "wasserstein": w}, unit="tokens",
                     extra=LengthExtra(headline=short, longer_than_tested=longer, shorter_than_tested=shorter,
                                       ks_threshold=KS_DIFFERS, outside_threshold=OUTSIDE_DIFFERS))


def covered_share(test_in: np.ndarray | None, test_out: np.ndarray | None, prod_in: np.ndarray | None,
                  prod_out: np.ndarray | None) -> float | None:
    """Share of production requests whose input and output lengths both lie inside the tested ranges
    ([min, max] of what the test sent); None when either side lacks a length."""
    arrays = (test_in, test_out, prod_in, prod_out)
    if any(a is None or np.asarray(a).size == 0 for a in arrays):
        return None
    ti, to, pi, po = (np.asarray(a, dtype=float) for a in arrays)
    inside = (pi >= ti.min()) & (pi <= ti.max()) & (po >= to.min()) & (po <= to.max())
    return float(np.mean(inside))


__all__ = ["covered_share", "length_dimension", "quantiles"]
