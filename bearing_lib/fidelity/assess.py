"""Assess the fidelity of a load test to production: :func:`assess_fidelity` returns a :class:`Fidelity`.

Inputs are typed: the load test as loaded (a :class:`RequestTrace`, one row per request sent; or a
:class:`LoadPointTable`, statistics per step), production as loaded (a :class:`RequestTrace`; rate
windows carry no lengths, so only the rate is compared), the :class:`LimitsResult` fitted on the
test (its steps' completed rates, its model, its SLA's time scale) and production's peak (the
target load). With ``run`` only that run of the test is compared (the run the plan uses).

What the test *sent* is compared: every request of the run, failed ones included, for input
lengths and timing; output lengths over the requests that completed (a failed request's output
is what it did not generate).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from bearing_lib.fidelity.burstiness import burstiness_dimension
from bearing_lib.fidelity.cache import cache_dimension
from bearing_lib.fidelity.identity import endpoint_dimension, model_dimension
from bearing_lib.fidelity.lengths import covered_share, length_dimension
from bearing_lib.fidelity.rate import rate_dimension
from bearing_lib.fidelity.result import Dimension, Fidelity, LengthExtra

HEADLINE_ORDER = ("input_tokens", "model", "output_tokens", "prefix_cache", "burstiness", "rate")


def _column(frame: pl.DataFrame | None, col: str, *, ok_only: bool = False) -> np.ndarray | None:
    if frame is None or col not in frame.columns:
        return None
    f = frame
    if ok_only and "status" in f.columns:
        f = f.filter(pl.col("status") == "ok")
    v = f[col].drop_nulls()
    return v.to_numpy().astype(float) if v.len() else None


def _of_run(frame: pl.DataFrame, run: str | None) -> tuple[pl.DataFrame, list[str]]:
    """The rows of the run the report is about (its id, or the one id it ends with or that ends it); every row,
    with a note, when the test has no such run."""
    if not run or "run_id" not in frame.columns:
        return frame, []
    runs = set(frame["run_id"].drop_nulls().unique().to_list())
    if run in runs:
        return frame.filter(pl.col("run_id") == run), []
    short = [r for r in runs if run.endswith(str(r)) or str(r).endswith(run)]
    if len(short) == 1:
        return frame.filter(pl.col("run_id") == short[0]), []
    return frame, [f"the load test has no run {run!r} (runs {', '.join(sorted(map(str, runs)))}): every run is "
                   "compared"]


def _test_frame(test: Any, run: str | None) -> tuple[pl.DataFrame | None, list[str]]:
    frame = getattr(test, "frame", None)
    if frame is None or getattr(test, "kind", "requests") != "requests":
        return None, []
    return _of_run(frame, run)


def _mean_per_request(test: Any, col: str, run: str | None = None) -> float | None:
    """A load-point table's mean tokens per request: ``{col}_per_s / throughput_rps``, median over the steps of
    the report's run (a new user read SGLang's random run as "mean 509 tokens", the median over the file's
    ShareGPT steps too, where the run's own is 511; round 22)."""
    frame = getattr(test, "frame", None)
    if frame is None or getattr(test, "kind", "") != "loadpoints":
        return None
    frame, _ = _of_run(frame, run)
    per_s = f"{col}_per_s"
    if per_s not in frame.columns or "throughput_rps" not in frame.columns:
        return None
    f = frame.filter(pl.col(per_s).is_not_null() & (pl.col("throughput_rps") > 0))
    if f.height == 0:
        return None
    return float(np.median((f[per_s] / f["throughput_rps"]).to_numpy()))


def _step_rates(limits: Any, run: str | None) -> list[float]:
    if limits is None:
        return []
    mixes = [m for m in limits.mixes if run is None or m.run_id == run] or list(limits.mixes)
    per_step: dict[tuple[str, int], float] = {}
    for m in mixes:
        for st in m.steps:
            if st.throughput_rps is not None:
                key = (m.run_id, st.step)
                per_step[key] = per_step.get(key, 0.0) + float(st.throughput_rps)
    return list(per_step.values())


def _models(limits: Any, frame: pl.DataFrame | None) -> list[str]:
    out: list[str] = []
    if limits is not None:
        m = limits.conditions.model
        out += [m] if isinstance(m, str) and m else [x for x in (m or []) if x]
    if frame is not None and "model" in frame.columns:
        out += [str(x) for x in frame["model"].drop_nulls().unique().to_list()]
    # an analyst's statement "(stated by the analyst; ...)" names the model before the parenthesis
    return [x.split(" (stated by", 1)[0] for x in out]


def _endpoint(obj: Any) -> str | None:
    opts = getattr(getattr(obj, "provenance", None), "options", None) or {}
    v = opts.get("endpoint") or opts.get("url")
    return str(v) if v else None


def overall(dims: list[Dimension]) -> str:
    """``differs`` if any dimension differs; ``represents`` if the input length was judged and every judged one
    represents; else ``unknown``."""
    if any(d.verdict == "differs" for d in dims):
        return "differs"
    by = {d.name: d for d in dims}
    if by.get("input_tokens") is not None and by["input_tokens"].verdict == "represents":
        return "represents"
    return "unknown"


def headline(dims: list[Dimension]) -> str | None:
    """The sentence for the report's headline: the first differing dimension, in the order that moves a limit
    most (prompt length, model, output length, cache, burstiness, rate)."""
    by = {d.name: d for d in dims if d.verdict == "differs"}
    for name in HEADLINE_ORDER:
        if name in by:
            d = by[name]
            text = d.extra.headline if isinstance(d.extra, LengthExtra) and d.extra.headline else d.statement
            n_more = len(by) - 1
            return text + (f" (and {n_more} more difference(s) in the fidelity section)" if n_more else "")
    return None


def assess_fidelity(test: Any, production: Any, *, limits: Any = None, run: str | None = None,
                    peak_rps: float | None = None, peak_basis: str = "", test_source: str = "",
                    production_source: str = "") -> Fidelity:
    """The :class:`Fidelity` of ``test`` (what the load test sent) to ``production`` (module docstring)."""
    t_frame, notes = _test_frame(test, run)
    p_frame = getattr(production, "frame", None) if getattr(production, "kind", "") == "requests" else None
    if p_frame is None:
        notes.append("production is given as rates per window, not requests: lengths, cache hits and burstiness "
                     "cannot be compared")
    if t_frame is None:
        notes.append("the load test holds statistics per step, not one row per request: lengths are compared "
                     "through their means where the tool reports them, burstiness cannot be")
    t_in, t_out = _column(t_frame, "input_tokens"), _column(t_frame, "output_tokens", ok_only=True)
    p_in, p_out = _column(p_frame, "input_tokens"), _column(p_frame, "output_tokens")
    dims = [
        length_dimension("input_tokens", t_in, p_in, test_mean_only=_mean_per_request(test, "input_tokens", run)),
        length_dimension("output_tokens", t_out, p_out,
                         test_mean_only=_mean_per_request(test, "output_tokens", run)),
        cache_dimension(t_frame, p_frame),
        burstiness_dimension(t_frame, p_frame, getattr(limits, "sla", None)),
        rate_dimension(_step_rates(limits, run), peak_rps, peak_basis=peak_basis,
                       instances=getattr(getattr(limits, "conditions", None), "instances", None)),
        model_dimension(_models(limits, t_frame if t_frame is not None else getattr(test, "frame", None)),
                        p_frame["model"].drop_nulls().unique().to_list() if p_frame is not None
                        and "model" in p_frame.columns else []),
    ]
    ep = endpoint_dimension(_endpoint(test), _endpoint(production))
    if ep is not None:
        dims.append(ep)
    return Fidelity(verdict=overall(dims), dimensions=dims, headline=headline(dims),  # type: ignore[arg-type]
                    covered_share=covered_share(t_in, t_out, p_in, p_out), test_source=test_source,
                    production_source=production_source, run=run, notes=notes)


__all__ = ["assess_fidelity", "headline", "overall"]
