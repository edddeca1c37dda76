"""The limit search of one parameter set: the twin's steady state at a Poisson rate, judged by the SLA, and the
bisection on log(rate) for the highest rate that passes (docs/twin.md "Prediction", "Speed").

Common random numbers (the same unit-rate gaps and request lengths at every rate, :class:`RequestStream`) make the
margin nearly monotone in the rate. The simulated window is held in seconds: ``warmup_s`` of warm-up, then
``duration_s`` of steady state holding at least ``min_requests`` requests. ``max_requests`` and ``warmup_requests``
(off by default) hold it by requests instead where the rate is high; that is faster but moves the limit beyond its
Monte-Carlo error on the bundled short_input twins (+2.7 % to +2.9 % at the point parameters, 2.0–2.4 standard
errors over 8 seeds; +34 % with the unseen ceilings lifted: ``bench/twin_window_mc.py``, docs/twin.md "Speed"), so
predictions keep the fixed window and get their speed from the compiled event loop (``simulate.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import polars as pl

from bearing_lib.twin.mix import RequestMix
from bearing_lib.twin.simulate import OK, STATUS, ServerParams, SimResult, simulate

MAX_BAD_FRACTION = 0.01
DEFAULT_DRAWS = 12  # parameter draws of a prediction: one default for the CLI, the notebook and the report


@dataclass
class SearchOptions:
    duration_s: float = 1200.0
    warmup_s: float = 300.0
    rel_tol: float = 0.01
    n_draws: int = DEFAULT_DRAWS
    seed: int = 0
    min_requests: int = 3000  # a run holds at least this many steady requests (long enough for a P99)
    # opt-in, off by default (module docstring): at most this many steady requests (never under min_requests) ...
    max_requests: int | None = None
    warmup_requests: int | None = None  # ... and a warm-up of at most this many arrivals ...
    warmup_min_s: float = 60.0  # ... lasting at least this long (or warmup_s, if shorter)

    def window(self, rate: float) -> tuple[float, float]:
        """(warm-up, steady duration) in seconds of the twin's run at ``rate`` rps."""
        dur = max(self.duration_s, self.min_requests / rate)
        if self.max_requests is not None:
            dur = min(dur, max(self.max_requests, self.min_requests) / rate)
        warm = self.warmup_s
        if self.warmup_requests is not None:
            warm = min(warm, max(self.warmup_requests / rate, self.warmup_min_s))
        return warm, dur


class RequestStream:
    """Common random numbers: unit-rate gaps and request lengths, extended on demand."""

    def __init__(self, mix: RequestMix, seed: int, rr: int = 1) -> None:
        self.mix = mix
        self.rr = rr  # round-robin over rr replicas: one replica sees every rr-th arrival (Gamma(rr) gaps)
        self._rg = np.random.default_rng([seed, 1])
        self._rl = np.random.default_rng([seed, 2])
        self.cum = np.empty(0)
        self.inp = self.out = self.cac = np.empty(0)

    def take(self, horizon_units: float) -> int:
        """Requests whose unit-rate arrival time is below ``horizon_units`` (extends the stream)."""
        while self.cum.size == 0 or self.cum[-1] < horizon_units:
            n = max(1000, int(horizon_units - (self.cum[-1] if self.cum.size else 0.0)) + 1000)
            base = self.cum[-1] if self.cum.size else 0.0
            gaps = (self._rg.standard_exponential(n) if self.rr == 1 else
                    self._rg.gamma(self.rr, 1.0 / self.rr, n))  # unit mean either way
            self.cum = np.concatenate([self.cum, base + np.cumsum(gaps)])
            i, o, c = self.mix.sample(self._rl, n)
            self.inp, self.out, self.cac = (np.concatenate([a, b]) for a, b in
                                            ((self.inp, i), (self.out, o), (self.cac, c)))
        return int(np.searchsorted(self.cum, horizon_units, side="left"))


def steady_frame(arr: np.ndarray, out: np.ndarray, res: SimResult, keep: np.ndarray,
                 columns: tuple[str, ...] = ("ttft_ms", "latency_ms", "tpot_ms", "itl_ms")) -> pl.DataFrame:
    """The requests ``keep`` selects (the steady state) as the SLA reads them: ``status`` and the latency
    ``columns`` asked for (a latency of a request that did not succeed is null, as in a test's rows)."""
    arr, out = arr[keep], out[keep]
    first, end, status_code = res.first_token_s[keep], res.end_s[keep], res.status[keep]
    ok = status_code == OK
    cols = {}
    with np.errstate(invalid="ignore", divide="ignore"):
        for c in columns:
            if c == "ttft_ms":
                v = np.where(ok, (first - arr) * 1000.0, np.nan)
            elif c == "latency_ms":
                v = (end - arr) * 1000.0
            elif c in ("tpot_ms", "itl_ms"):
                v = np.where(ok & (out > 1), (end - first) * 1000.0 / (out - 1), np.nan)
            else:
                raise ValueError(f"the twin gives no {c!r} (ttft_ms, latency_ms, tpot_ms, itl_ms)")
            cols[c] = v
    # the status as the words the SLA reads, mapped in polars (a numpy array of strings costs ~10× more)
    return pl.DataFrame({**cols, "status": status_code}).with_columns(
        *(pl.col(c).fill_nan(None) for c in cols if c != "latency_ms"),
        pl.col("status").replace_strict([OK, 1, 2], list(STATUS), return_dtype=pl.String))


def margin_at(params: ServerParams, stream: RequestStream, rate: float, sla,
              opt: SearchOptions) -> tuple[float, dict]:
    """SLA margin (and the run's peak occupancy) of the twin's steady state at ``rate`` rps."""
    warm, dur = opt.window(rate)
    n = stream.take((warm + dur) * rate)
    arr = stream.cum[:n] / rate
    res = simulate(params, arr, stream.inp[:n], stream.out[:n], stream.cac[:n])
    steady = arr >= warm
    st = res.status[steady]
    info = {"peak_running": float(res.peak_running), "peak_kv_tokens": float(res.peak_kv_tokens),
            "kv_held": float(np.mean(res.kv_held[steady])) if steady.any() else 0.0,
            "slot_held": float(np.mean(res.slot_held[steady])) if steady.any() else 0.0}
    if st.size == 0:
        return -1.0, info
    if float(np.mean(st != OK)) > MAX_BAD_FRACTION:
        return -1.0, info
    out = stream.out[:n]
    with np.errstate(invalid="ignore", divide="ignore"):
        tp = ((res.end_s - res.first_token_s) * 1000.0 / (out - 1))[steady & (res.status == OK) & (out > 1)]
    info["tpot_p50_ms"] = float(np.median(tp)) if tp.size else math.nan
    # every request's decode span (first token, end): the batch at this rate (:func:`decode_batch`), computed only
    # for the limit the search returns (a view, not a copy)
    info["decode_spans"] = (res.first_token_s, res.end_s, steady & (res.status == OK))
    m = sla.margin(steady_frame(arr, out, res, steady, tuple(sla.metrics())))
    return (-1.0 if m is None else float(m)), info


def decode_batch(info: dict) -> float | None:
    """Median over the steady requests of the time-average number of requests decoding beside each over its own
    decode interval (itself included): the batch its time per token reflects, as the calibration's ``n̄``
    (``calibrate._features``) measures it on the test. None without spans."""
    spans = info.get("decode_spans")
    if spans is None:
        return None
    first, end, keep = spans
    ok = np.isfinite(first) & np.isfinite(end)
    f, e = first[ok], end[ok]
    sel = keep[ok] & (e > f)
    if not sel.any():
        return None
    ev_t = np.concatenate([f, e])
    ev_d = np.concatenate([np.ones(f.size), -np.ones(e.size)])
    order = np.argsort(ev_t, kind="stable")
    ev_t, ev_d = ev_t[order], ev_d[order]
    area = np.concatenate([[0.0], np.cumsum(np.cumsum(ev_d)[:-1] * np.diff(ev_t))])
    fs, es = f[sel], e[sel]
    return float(np.median((np.interp(es, ev_t, area) - np.interp(fs, ev_t, area)) / (es - fs)))


def search_limit(params: ServerParams, mix: RequestMix, sla, opt: SearchOptions, seed: int,
                 guess: float, lo: float | None = None, hi: float | None = None,
                 rr: int = 1) -> tuple[float, dict, str]:
    """Bisection on log(rate) for the highest passing rate of one server; returns (rate, peak info at it,
    censoring). ``rr``: the server is one of ``rr`` replicas behind a round-robin router (every rr-th arrival of
    a Poisson stream: Gamma-distributed gaps); the rate is the server's own."""
    stream = RequestStream(mix, seed, rr)
    info: dict = {}
    lo_r, hi_r = lo, hi
    if hi_r is not None and margin_at(params, stream, hi_r, sla, opt)[0] >= 0:  # a given top that passes
        return search_limit(params, mix, sla, opt, seed, guess=hi_r * 1.5, rr=rr)
    r = guess
    # bracket: grow or shrink by 1.5× from the guess
    for _ in range(40):
        if lo_r is not None and hi_r is not None:
            break
        m, inf = margin_at(params, stream, r, sla, opt)
        if m >= 0:
            lo_r, info = r, inf
            r = r * 1.5 if hi_r is None else math.sqrt(r * hi_r)
        else:
            hi_r = r
            r = r / 1.5 if lo_r is None else math.sqrt(r * lo_r)
        if r < 1e-4:
            return 0.0, info, "below"
        if r > 1e5:
            return r, info, "above"
    if lo_r is None or hi_r is None:
        return (lo_r or 0.0), info, "above" if hi_r is None else "below"
    if not info:
        m, info = margin_at(params, stream, lo_r, sla, opt)
        if m < 0:  # a given bracket that does not hold: widen downwards
            return search_limit(params, mix, sla, opt, seed, lo_r / 1.5, rr=rr)
    while hi_r / lo_r > 1.0 + 2.0 * opt.rel_tol:
        mid = math.sqrt(lo_r * hi_r)
        m, inf = margin_at(params, stream, mid, sla, opt)
        if m >= 0:
            lo_r, info = mid, inf
        else:
            hi_r = mid
    return math.sqrt(lo_r * hi_r), info, "none"


__all__ = ["DEFAULT_DRAWS", "MAX_BAD_FRACTION", "RequestStream", "SearchOptions", "decode_batch", "margin_at",
           "search_limit", "steady_frame"]
