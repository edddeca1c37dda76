"""Calibrate the twin's server model from an ordinary per-request load test.

What each parameter is fitted from (docs/twin.md "Calibration"):

* **Decode iteration** ``decode_base_ms + decode_ms_per_seq × n (+ decode_ms_per_kctx × context)``:
  median regression (statsmodels ``QuantReg``, coefficients ≥ 0) of each
  request's time per output token, ``(end − first_token) / (o − 1)``, on the time-average
  number of requests decoding beside it (``n̄``, from the trace's own first-token and end
  times) and on the prefill work that interrupted it (other requests' first tokens inside its
  decode interval: their count over ``o − 1`` and their uncached tokens over ``o − 1``). The per-sequence cost is
  identified only where the batch varies (``n̄`` P95 ≥ 1.5 × P5 and a request apart); a test that kept its slots
  full measures the iteration at its batch, and the per-sequence cost gets a prior range (0 to that iteration over
  the median batch) that a prediction at another batch carries.
* **Prefill** ``prefill_base_ms + prefill_ms_per_token × tokens``: the same regression's coefficients
  on the interrupting prefill batches and their tokens (a decode stalls for every prefill
  iteration inside it). Where too few decodes were interrupted (fewer than 30, e.g. one slot),
  a median regression (statsmodels ``QuantReg``) of TTFT, less half the decode iteration it
  arrived in, on the uncached tokens of its prefill batch (requests sharing its first-token
  time), over requests that arrived with free slots (no queue). The split into a per-batch and a
  per-token cost is identified only where the prompts vary (uncached tokens per prefill batch, P95 ≥
  1.5 × P5); a fixed-length test measures their sum at its prompt, and the per-token cost gets a prior
  range (0 to that sum over the prompt) that a prediction for other prompt lengths carries.
* **Slots** ``max_num_seqs``: the most requests ever decoding at once, *identified* only if
  requests arriving at that ceiling waited (a queue formed there); else a lower bound.
* **KV budget**: the most reserved tokens (``input + output``; under paged KV the tokens present)
  ever running, *identified*
  only if requests queued while slots were free; else a lower bound.
* **Batch-token limit**: not identifiable from request rows; the largest prefill batch seen
  (a lower bound) is used.
* **TTFT overhead**: the median TTFT the engine model leaves unexplained over requests that
  found a free slot (network, tokenizer, API server); added to TTFT and end, no capacity used.
* **Queue timeout**: the median time-to-failure of requests with status ``timeout``; none if
  none timed out.
* **Request timeout** (a deadline in front of the engine that aborts a request wherever it is):
  identified when at least :data:`MIN_ABSENT` failed requests have no end time (the test lost
  them, e.g. LMBenchmark's absent requests) *and* the completed requests' latencies pile up under
  a sharp ceiling (≥ 1 % of them within 5 % below the highest): the highest completed latency,
  a lower bound of the real deadline by at most that 5 %. Else none.
* **KV policy**: ``reserve`` or ``paged``, whichever replays the test closer when a KV budget was
  reached under either; else ``reserve``. Settings the operator knows can be given (``known``).

CIs: the regressions are refitted on steps resampled with replacement (a cluster bootstrap over
steps); each parameter lists the steps that identified it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import polars as pl

from bearing_lib.common.errors import InsufficientDataError, ParameterError
from bearing_lib.common.progress import Progress
from bearing_lib.twin.replay import (
    REPLICA,
    assign_replicas,
    prepare_rows,
    replay,
    replay_lengths,
    replayable,
    server_groups,
    step_figures,
)
from bearing_lib.twin.result import ParamIdentification, Reach, Twin, TwinParam
from bearing_lib.twin.simulate import ServerParams, simulate
from bearing_lib.twin.timeout import KEEP, parse_request_timeout

MIN_REQUESTS = 50
MIN_QUEUED = 20
MIN_INTERRUPTED = 30
MAX_MIX_ROWS = 20_000  # the tested mix kept in the twin (a sample beyond this)
MAX_QUANTREG_ROWS = 20_000
BOOT_QUANTREG_ROWS = 2_000
BOOT_DECODE_ROWS = 1_500  # rows of each bootstrap refit of the decode median regression
BOOT_MAX_ITER = 200  # IRLS iterations of a bootstrap refit (it starts from the point fit's columns)
PREFILL_GROUP_S = 0.0005  # first tokens closer than this belong to one prefill batch


@dataclass
class RequestFeatures:
    """Per-request quantities the regressions use (all ok requests of the trace)."""

    step: np.ndarray
    cluster: np.ndarray  # one id per (run, step): the bootstrap's resampling unit
    load: np.ndarray
    start_s: np.ndarray
    ttft_ms: np.ndarray
    tpot_ms: np.ndarray  # (end − first) / (o − 1), NaN for o ≤ 1
    o1: np.ndarray  # o − 1
    nbar: np.ndarray  # time-average decoding count over the request's decode interval
    cbar: np.ndarray  # time-average context (thousand tokens: input + half the output of each running request)
    n_at_start: np.ndarray  # decoding count at the request's arrival
    prefills_in: np.ndarray  # prefill batches inside its decode interval
    tokens_in: np.ndarray  # uncached tokens prefilled inside its decode interval
    batch_tokens: np.ndarray  # uncached tokens of its own prefill batch
    kv_at_start: np.ndarray  # reserved tokens running at its arrival
    need: np.ndarray  # input + output
    n_at_first: np.ndarray  # decoding count just after its first token (itself included)
    kv_at_first: np.ndarray  # reserved tokens running just after its first token
    held_at_start: np.ndarray  # tokens present (input + generated so far) over the running requests at its arrival
    held_peak: np.ndarray  # tokens present over the running requests just before its end (where they peak)


def _step_count(t: np.ndarray, starts: np.ndarray, ends: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """Σ weights of intervals [start, end) holding each time in ``t``."""
    w = np.ones(starts.size) if weights is None else weights
    so, eo = np.argsort(starts, kind="stable"), np.argsort(ends, kind="stable")
    cs = np.concatenate([[0.0], np.cumsum(w[so])])
    ce = np.concatenate([[0.0], np.cumsum(w[eo])])
    return cs[np.searchsorted(starts[so], t, side="right")] - ce[np.searchsorted(ends[eo], t, side="right")]


def _features(group: pl.DataFrame, lost: pl.DataFrame | None = None) -> RequestFeatures:
    """Per-request regressors of one run's completed requests; ``lost``: requests the test dropped
    (``first_s``, ``end_s``, ``input_tokens``, ``output_tokens`` as the twin's own replay placed them),
    which decoded beside the completed ones and count in the batch and context averages."""
    start = group["start_s"].to_numpy().astype(float)
    ttft = group["ttft_ms"].to_numpy().astype(float)
    first = start + ttft / 1000.0
    end = group["end_s"].to_numpy().astype(float)
    o = group["output_tokens"].to_numpy().astype(float)
    inp = group["input_tokens"].to_numpy().astype(float)
    cached = group["cached_tokens"].fill_null(0).to_numpy().astype(float)
    unc = np.maximum(inp - cached, 0.0)
    need = inp + o
    # decoding count n(t): intervals [first, end) (also the lost requests'); its integral A(t) is piecewise linear
    lf, le, li, lo_ = (np.empty(0),) * 4
    if lost is not None and lost.height:
        lf, le = lost["first_s"].to_numpy().astype(float), lost["end_s"].to_numpy().astype(float)
        li, lo_ = lost["input_tokens"].to_numpy().astype(float), lost["output_tokens"].to_numpy().astype(float)
    ev_t = np.concatenate([first, lf, end, le])
    ev_d = np.concatenate([np.ones(first.size + lf.size), -np.ones(end.size + le.size)])
    order = np.argsort(ev_t, kind="stable")
    ev_t, ev_d = ev_t[order], ev_d[order]
    level = np.cumsum(ev_d)  # count just after each event
    area = np.concatenate([[0.0], np.cumsum(level[:-1] * np.diff(ev_t))])
    dur = end - first
    with np.errstate(invalid="ignore", divide="ignore"):
        nbar = (np.interp(end, ev_t, area) - np.interp(first, ev_t, area)) / dur
    nbar = np.where(dur > 0, nbar, np.nan)
    # the same time average weighted by each running request's mean context over its life (input + o / 2)
    w = np.concatenate([inp + 0.5 * o, li + 0.5 * lo_]) / 1000.0
    ev_w = np.concatenate([w, -w])[order]
    carea = np.concatenate([[0.0], np.cumsum(np.cumsum(ev_w)[:-1] * np.diff(ev_t))])
    with np.errstate(invalid="ignore", divide="ignore"):
        cbar = (np.interp(end, ev_t, carea) - np.interp(first, ev_t, carea)) / dur
    cbar = np.where(dur > 0, cbar, np.nan)
    # prefill batches: distinct first-token times
    fo = np.argsort(first, kind="stable")
    fs = first[fo]
    new_batch = np.concatenate([[True], np.diff(fs) > PREFILL_GROUP_S])
    batch_id = np.cumsum(new_batch) - 1
    batch_tok = np.bincount(batch_id, weights=unc[fo])
    own = np.empty(first.size)
    own[fo] = batch_tok[batch_id]
    bstart = fs[new_batch]
    cum_tok = np.concatenate([[0.0], np.cumsum(batch_tok)])
    lo = np.searchsorted(bstart, first + PREFILL_GROUP_S, side="left")
    hi = np.searchsorted(bstart, end, side="left")
    hi = np.maximum(hi, lo)
    o1 = o - 1
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = np.where(o1 > 0, (end - first) * 1000.0 / o1, np.nan)
    # occupancy (slots, KV) counts the lost requests too: they held their place until the deadline
    af, ae = np.concatenate([first, lf]), np.concatenate([end, le])
    ainp, ao = np.concatenate([inp, li]), np.concatenate([o, lo_])
    aneed = ainp + ao
    return RequestFeatures(
        step=group["step"].to_numpy(),
        cluster=group["_cluster"].to_numpy(),
        load=group["offered_load"].to_numpy().astype(float),
        start_s=start,
        ttft_ms=ttft,
        tpot_ms=tpot,
        o1=o1,
        nbar=nbar,
        cbar=cbar,
        n_at_start=_step_count(start, af, ae),
        prefills_in=(hi - lo).astype(float),
        tokens_in=cum_tok[hi] - cum_tok[lo],
        batch_tokens=own,
        kv_at_start=_step_count(start, af, ae, aneed),
        need=need,
        n_at_first=_step_count(first, af, ae),
        kv_at_first=_step_count(first, af, ae, aneed),
        held_at_start=_held(start, af, ae, ainp, ao),
        held_peak=_held(end - 1e-9, af, ae, ainp, ao),
    )


def _held(t: np.ndarray, first: np.ndarray, end: np.ndarray, inp: np.ndarray, o: np.ndarray) -> np.ndarray:
    """Σ over requests running at each ``t`` of the tokens they hold (paged KV): input plus the output generated
    so far, taken as growing linearly from the first token to the end (1 + (o − 1)·(t − first)/(end − first))."""
    dur = np.maximum(end - first, 1e-9)
    r = np.maximum(o - 1.0, 0.0) / dur
    base = _step_count(t, first, end, inp + 1.0 - r * first)
    return base + t * _step_count(t, first, end, r)


def _concat(fs: list[RequestFeatures]) -> RequestFeatures:
    return RequestFeatures(**{k: np.concatenate([getattr(f, k) for f in fs]) for k in RequestFeatures.__annotations__})


def _decode_design(f: RequestFeatures, with_seq: bool, with_int: bool,
                   with_ctx: bool = False, fixed_pt: float | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rows used, X, y) of the TPOT regression. ``fixed_pt``: the prefill cost per token, known from the
    TTFT regression (:func:`_ttft_prefill`): its stall ``fixed_pt × tokens_in / (o − 1)`` is taken off ``y``
    and only the per-batch prefill cost is fitted."""
    m = np.isfinite(f.tpot_ms) & np.isfinite(f.nbar) & np.isfinite(f.cbar) & (f.o1 > 0)
    cols = [np.ones(m.sum())]
    y = f.tpot_ms[m]
    if with_seq:
        cols.append(f.nbar[m])
    if with_ctx:
        cols.append(f.cbar[m])
    if with_int:
        cols.append(f.prefills_in[m] / f.o1[m])
        if fixed_pt is None:
            cols.append(f.tokens_in[m] / f.o1[m])
        else:
            y = y - fixed_pt * f.tokens_in[m] / f.o1[m]
    return m, np.column_stack(cols), y


def _full(b: np.ndarray, with_seq: bool, with_int: bool, with_ctx: bool = False,
          fixed_pt: float | None = None) -> np.ndarray:
    """(d0, d1, per prefill batch, per prefilled token, per 1k context tokens); zeros for the regressors left out."""
    b = list(b)
    d0 = b.pop(0)
    d1 = b.pop(0) if with_seq else 0.0
    dk = b.pop(0) if with_ctx else 0.0
    if with_int:
        pb, pt = (b[0], b[1]) if fixed_pt is None else (b[0], fixed_pt)
    else:
        pb, pt = math.nan, math.nan
    return np.array([d0, d1, pb, pt, dk])


def _decode_fit(f: RequestFeatures, with_seq: bool, with_int: bool, with_ctx: bool = False,
                rng: np.random.Generator | None = None, fixed_pt: float | None = None) -> np.ndarray:
    """(d0, d1, prefill cost per batch, per token, per 1k context) by median regression of TPOT (module docstring)."""
    _, x, y = _decode_design(f, with_seq, with_int, with_ctx, fixed_pt)
    return _full(_median_fit(x, y, rng or np.random.default_rng(0), MAX_QUANTREG_ROWS), with_seq, with_int, with_ctx,
                 fixed_pt)


def _median_fit(x: np.ndarray, y: np.ndarray, rng: np.random.Generator, max_rows: int,
                active: list[int] | None = None, max_iter: int = 1000) -> np.ndarray:
    """Median regression (statsmodels QuantReg) with every coefficient ≥ 0: a cost that comes out negative is
    not physical, so its column is dropped (coefficient 0) and the rest refitted, most negative first.

    The median, not the mean: a request a real engine preempted (or queued inside) carries its wait in its
    time per token, an outlier above the iteration cost; the twin's own preemption reproduces that wait.
    """
    import warnings

    import statsmodels.api as sm

    if y.size > max_rows:
        pick = rng.choice(y.size, max_rows, replace=False)
        x, y = x[pick], y[pick]
    active = list(range(x.shape[1])) if active is None else list(active)
    b = np.zeros(x.shape[1])
    while active:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # IterationLimitWarning: the IRLS median is close enough by then
            est = np.asarray(sm.QuantReg(y, x[:, active]).fit(q=0.5, max_iter=max_iter).params)
        if np.all(est >= 0):
            b[:] = 0.0
            b[active] = est
            break
        active.pop(int(np.argmin(est)))
    return b


CTX_MIN_T = 5.0  # the context coefficient must stand this many standard errors above zero


def _ctx_identified(f: RequestFeatures, with_seq: bool, with_int: bool) -> bool:
    """Does the running context explain time per token beyond the batch size (a positive, clear coefficient)?"""
    import statsmodels.api as sm

    _, x, y = _decode_design(f, with_seq, with_int, True)
    if x.shape[0] < 100 or np.linalg.matrix_rank(x) < x.shape[1]:
        return False
    res = sm.OLS(y, x).fit()
    j = 1 + int(with_seq)
    return bool(res.params[j] > 0 and res.tvalues[j] >= CTX_MIN_T)


def _prefill_y(f: RequestFeatures, rows: np.ndarray, d0: float, d1: float) -> tuple[np.ndarray, np.ndarray]:
    n = f.n_at_start[rows]
    return f.batch_tokens[rows], f.ttft_ms[rows] - 0.5 * np.maximum(d0 + d1 * n, 0.0) * (n > 0)


def _prefill_fit(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(p0, p1) by median regression (statsmodels QuantReg) of TTFT less half a decode iteration."""
    import warnings

    import statsmodels.api as sm

    if x.size < 10 or np.ptp(x) <= 0:
        return float(np.median(y)), 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # IterationLimitWarning: the IRLS median is close enough by then
        res = sm.QuantReg(y, np.column_stack([np.ones(x.size), x])).fit(q=0.5, max_iter=500)
    p0, p1 = (float(v) for v in res.params)
    return p0, p1


LOW_LOAD_MIN_ROWS = 200  # the TTFT regression takes the lowest-load steps until it holds this many free requests


def _low_load_rows(f: RequestFeatures, free: np.ndarray) -> np.ndarray:
    """Free requests (no wait) of the lowest offered loads, taken in order of load until they hold
    :data:`LOW_LOAD_MIN_ROWS`: where TTFT is prefill plus overhead, not queue. Without offered loads, the
    steps in order of their median decoding count."""
    idx = np.flatnonzero(free & np.isfinite(f.ttft_ms))
    if idx.size == 0:
        return idx
    ld = f.load[idx]
    if np.isfinite(ld).all():
        keys, groups = np.unique(ld), [idx[ld == v] for v in np.unique(ld)]
    else:
        cl = np.unique(f.cluster[idx])
        groups = [idx[f.cluster[idx] == c] for c in cl]
        keys = np.array([float(np.median(f.n_at_start[g])) for g in groups])
    out: list[np.ndarray] = []
    n = 0
    for k in np.argsort(keys, kind="stable"):
        out.append(groups[k])
        n += groups[k].size
        if n >= LOW_LOAD_MIN_ROWS:
            break
    return np.sort(np.concatenate(out))


@dataclass
class TtftPrefill:
    """The prefill cost per token read off TTFT at low load (median regression, its 95 % CI, Theil–Sen check)."""

    rows: np.ndarray
    p0: float
    p1: float
    ci: tuple[float, float]
    theil: tuple[float, float, float]  # slope, low, high

    @property
    def clear(self) -> bool:
        """A slope the data shows: the median regression's 95 % CI and the Theil–Sen CI both lie above zero."""
        return bool(self.ci[0] > 0 and self.theil[1] > 0)


def _ttft_prefill(f: RequestFeatures, rows: np.ndarray, d0: float, d1: float) -> TtftPrefill | None:
    """Median regression (statsmodels QuantReg) of TTFT, less half the decode iteration it arrived in, on the
    uncached tokens of its prefill batch, over ``rows`` (low-load free requests); its 95 % CI, and scipy's
    Theil–Sen slope with its 95 % CI as a distribution-free check."""
    import warnings

    import statsmodels.api as sm
    from scipy.stats import theilslopes

    if rows.size < 30:
        return None
    x, y = _prefill_y(f, rows, d0, d1)
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    if x.size < 30 or np.ptp(x) <= 0:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = sm.QuantReg(y, np.column_stack([np.ones(x.size), x])).fit(q=0.5, max_iter=2000)
    p0, p1 = (float(v) for v in res.params)
    lo, hi = (float(v) for v in np.asarray(res.conf_int(0.05))[1])
    if x.size > 3000:  # Theil–Sen is O(n²)
        pick = np.random.default_rng(0).choice(x.size, 3000, replace=False)
        x, y = x[pick], y[pick]
    ts = theilslopes(y, x, 0.95)
    return TtftPrefill(rows, p0, p1, (lo, hi), (float(ts[0]), float(ts[2]), float(ts[3])))


def _steps_list(steps: np.ndarray) -> list[int]:
    return sorted(int(s) for s in np.unique(steps))


KNOWN = ("max_num_seqs", "kv_budget_tokens", "max_batched_tokens", "kv_policy", "request_timeout_s")
_NO_LOST = pl.DataFrame(schema={"run_id": pl.String, "step": pl.Int64, "first_s": pl.Float64, "end_s": pl.Float64,
                                "input_tokens": pl.Float64, "output_tokens": pl.Float64})
"""The first calibration pass: no lost request placed yet (and no second pass from it)."""
MIN_ABSENT = 5  # failed requests without an end time that, with a latency ceiling, identify a request timeout
CEILING_BAND = 0.05  # completed latencies within this share below the highest count as piled at a ceiling
CEILING_SHARE = 0.01  # ... and at least this share of them must be there


def _given_timeout(value: object) -> TwinParam:
    """The request timeout an operator gave (``--engine request_timeout_s=30|none``)."""
    v = parse_request_timeout(value, what="engine setting request_timeout_s")  # type: ignore[arg-type]
    if v == KEEP:
        raise ParameterError("engine setting request_timeout_s: give seconds or none ('keep' is a what-if of "
                             "bearing twin predict, not an engine setting)")
    if v is None:
        return TwinParam("request_timeout_s", None, (None, None), "s", True, "none", [],
                         "given: no deadline in front of the engine")
    return TwinParam("request_timeout_s", float(v), (None, None), "s", True, "none", [],
                     "given: the deadline configured in front of the engine (gateway or client)")


def _request_timeout(frame: pl.DataFrame, ok: pl.DataFrame) -> TwinParam:
    """The deadline a test's lost requests ran into (module docstring), or none."""
    # evidence of a deadline: certain failures only (a cancelled or unknown request did not fail)
    lost = frame.filter(pl.col("status").is_in(("error", "timeout", "rejected")) & pl.col("end_s").is_null()) \
        if "status" in frame.columns else frame.clear()
    lat = (ok["end_s"] - ok["start_s"]).to_numpy()
    top = float(np.max(lat)) if lat.size else 0.0
    piled = float(np.mean(lat >= (1.0 - CEILING_BAND) * top)) if lat.size else 0.0
    if lost.height >= MIN_ABSENT and piled >= CEILING_SHARE:
        return TwinParam("request_timeout_s", top, (top, top / (1.0 - CEILING_BAND)), "s", True, "none",
                         _steps_list(lost["step"].to_numpy()),
                         f"{lost.height} failed request(s) have no end time and {piled:.1%} of the completed ones "
                         f"ended within {CEILING_BAND:.0%} below the highest latency ({top:.1f} s): a deadline in "
                         "front of the engine (gateway or client) aborts requests there; the twin aborts at it")
    why = (f"{lost.height} failed request(s) without an end time" if lost.height else "no request was lost")
    return TwinParam("request_timeout_s", None, (None, None), "s", False, "unbounded", [],
                     f"no deadline seen ({why}; completed latencies not piled under a ceiling): the twin lets "
                     "requests run")


@dataclass
class _Prepared:
    """The test's rows as the calibration reads them: every row (steps numbered, replicas assigned), the
    successful rows with every field the fits need, the timed-out rows and the engine settings given."""

    source: str
    frame: pl.DataFrame
    ok: pl.DataFrame
    timeouts: pl.DataFrame
    given: dict


def _prepare(trace, exclude_steps: list | None, known: dict | None, replicas: int) -> _Prepared:
    """Check the test and the settings given, and put the rows in the calibration's shape."""
    frame = trace.frame if hasattr(trace, "frame") else trace
    source = getattr(getattr(trace, "provenance", None), "source", "trace")
    required = ("start_s", "end_s", "ttft_ms", "input_tokens", "output_tokens")
    missing = [c for c in required if c not in frame.columns or frame[c].null_count() == frame.height]
    given = dict(known or {})
    bad = sorted(set(given) - set(KNOWN))
    if bad:
        raise ParameterError(f"unknown engine setting(s) {', '.join(bad)}; known: {', '.join(KNOWN)}")
    if given.get("kv_policy", "reserve") not in ("reserve", "paged"):
        raise ParameterError(f"kv_policy must be 'reserve' or 'paged', got {given['kv_policy']!r}")
    if missing:
        per_request = all(c in frame.columns and frame[c].null_count() < frame.height for c in ("start_s", "end_s"))
        tool = getattr(getattr(trace, "provenance", None), "tool", None)
        # a per-request file without these fields is not "aggregate-only" (Vegeta records each request's latency
        # and bytes only: a new user's case, round 21)
        if per_request:
            raise InsufficientDataError(
                f"{source}: the twin needs each request's {', '.join(missing)}, and the requests carry none"
                f"{f' ({tool} does not record them)' if tool else ''}; a load test that records each request's time "
                "to first token and token counts can calibrate it")
        raise InsufficientDataError(f"{source}: the twin needs per-request {', '.join(missing)} (found none); "
                                    "an aggregate-only load test cannot calibrate it")
    frame = frame.with_columns(
        pl.col("step").fill_null(0) if "step" in frame.columns else pl.lit(0).alias("step"),
        pl.col("offered_load") if "offered_load" in frame.columns else pl.lit(None, pl.Float64).alias("offered_load"),
        pl.col("cached_tokens") if "cached_tokens" in frame.columns else pl.lit(0).alias("cached_tokens"),
        pl.col("run_id").fill_null("run") if "run_id" in frame.columns else pl.lit("run").alias("run_id"),
    )
    if not (isinstance(replicas, int) and replicas >= 1):
        raise ParameterError(f"replicas must be a whole number ≥ 1, got {replicas!r}")
    frame = assign_replicas(frame, replicas)
    for ex in exclude_steps or []:
        if isinstance(ex, tuple):
            frame = frame.filter(~((pl.col("run_id") == ex[0]) & (pl.col("step") == ex[1])))
        else:
            frame = frame.filter(pl.col("step") != ex)
    frame = frame.with_columns(pl.struct("run_id", "step").rank("dense").cast(pl.Int64).alias("_cluster"))
    is_ok = pl.col("status").is_null() | (pl.col("status") == "ok") if "status" in frame.columns else pl.lit(True)
    timeouts = frame.filter(pl.col("status") == "timeout") if "status" in frame.columns else frame.clear()
    ok = frame.filter(is_ok & pl.col("ttft_ms").is_not_null() & pl.col("end_s").is_not_null()
                      & pl.col("start_s").is_not_null() & pl.col("input_tokens").is_not_null()
                      & pl.col("output_tokens").is_not_null())
    if ok.height < MIN_REQUESTS:
        raise InsufficientDataError(
            f"{source}: the twin needs at least {MIN_REQUESTS} successful requests with start, end, TTFT and "
            f"token counts; found {ok.height}"
        )
    return _Prepared(str(source), frame, ok, timeouts, given)


def _lost_of(lost: pl.DataFrame | None, g: pl.DataFrame) -> pl.DataFrame | None:
    """The lost requests placed (by a first pass) beside one group's rows, or none in a first pass."""
    if lost is None:
        return None
    sel = (pl.col("run_id") == g["run_id"][0]) & pl.col("step").is_in(g["step"].unique().to_list())
    if REPLICA in g.columns and REPLICA in lost.columns:
        sel = sel & (pl.col(REPLICA) == g[REPLICA][0])
    return lost.filter(sel)


@dataclass
class _Ceilings:
    """Slots and KV: the peaks seen and the requests that waited at them (identified only where a queue formed)."""

    n_max: int
    kv_max: float
    held_max: float
    waited: np.ndarray
    slot_q: np.ndarray
    kv_q: np.ndarray
    kv_q_paged: np.ndarray
    slots_identified: bool
    kv_identified: bool
    kv_paged_identified: bool


def _ceilings(f: RequestFeatures, dec: np.ndarray) -> _Ceilings:
    """The slot and KV ceilings and the queues at them, given the decode fit (a wait is long against its iteration)."""
    n_max = int(round(np.nanmax(f.n_at_first)))  # the peak follows some first token
    kv_max = float(np.nanmax(f.kv_at_first))
    iter_ms = max(dec[0] + dec[1] * n_max, 1.0)
    low = f.n_at_start <= np.nanpercentile(f.n_at_start, 25)
    waited = f.ttft_ms > 4.0 * iter_ms + np.nanmedian(f.ttft_ms[low])
    # a slot ceiling admits a queued request exactly when one leaves: most waited requests then start
    # decoding beside the same count (the mode), whatever the timing noise; a KV ceiling admits at varying counts
    if int(waited.sum()) >= MIN_QUEUED:
        counts = np.rint(f.n_at_first[waited]).astype(np.int64)
        mode = int(np.bincount(counts).argmax())
        if np.mean(np.abs(counts - mode) <= max(1, round(0.02 * mode))) >= 0.5:
            n_max = mode
    slot_q = waited & (f.n_at_start >= n_max - 1)
    kv_q = waited & (f.n_at_start < n_max - 1) & (f.kv_at_start >= 0.75 * kv_max)
    n_wait = max(int(waited.sum()), 1)
    # the same under paged KV (tokens present, not reserved): its peak and the waits near it
    held_max = float(np.nanmax(f.held_peak))
    kv_q_paged = waited & (f.n_at_start < n_max - 1) & (f.held_at_start >= 0.75 * held_max)
    return _Ceilings(
        n_max=n_max, kv_max=kv_max, held_max=held_max, waited=waited, slot_q=slot_q, kv_q=kv_q,
        kv_q_paged=kv_q_paged,
        slots_identified=bool(int(slot_q.sum()) >= MIN_QUEUED and slot_q.sum() >= 0.5 * n_wait),
        kv_identified=bool(int(kv_q.sum()) >= MIN_QUEUED and kv_q.sum() >= 0.25 * n_wait),
        kv_paged_identified=bool(int(kv_q_paged.sum()) >= MIN_QUEUED and kv_q_paged.sum() >= 0.25 * n_wait),
    )


@dataclass
class _PointFit:
    """The point fits: which decode columns the test identifies, the decode and prefill coefficients, the
    requests that found a free slot, and the low-load TTFT slope (``fixed_pt`` when it replaced a zero)."""

    with_seq: bool
    with_int: bool
    with_ctx: bool
    dec: np.ndarray
    pre: tuple[float, float]
    free: np.ndarray
    ttft_pre: TtftPrefill | None
    fixed_pt: float | None
    ceil: _Ceilings


def _point_fit(f: RequestFeatures, seed: int, rng: np.random.Generator) -> _PointFit:
    """The decode median regression, the ceilings it implies, then the prefill cost (``rng`` draws the
    prefill regression's subsample and is handed on to the bootstrap)."""
    with_seq = _batch_varied(f)
    # decode intervals interrupted by other requests' prefills identify the prefill cost directly
    with_int = int(((f.prefills_in > 0) & np.isfinite(f.tpot_ms)).sum()) >= MIN_INTERRUPTED
    if with_int:  # batches and their tokens must vary apart (one prompt length makes them collinear)
        _, xi, _ = _decode_design(f, with_seq, True)
        with_int = bool(np.linalg.matrix_rank(xi) == xi.shape[1])
    with_ctx = _ctx_identified(f, with_seq, with_int)
    dec = _decode_fit(f, with_seq, with_int, with_ctx, np.random.default_rng([seed, 3]))
    ceil = _ceilings(f, dec)
    # ---- prefill regression over requests that found a free slot and did not wait
    free = ~ceil.waited & (f.n_at_start < max(ceil.n_max - 1, 1)) & np.isfinite(f.ttft_ms)
    free_idx = np.flatnonzero(free)
    if free_idx.size > MAX_QUANTREG_ROWS:
        free_idx = np.sort(rng.choice(free_idx, MAX_QUANTREG_ROWS, replace=False))
    # ---- the prefill cost per token read off TTFT at low load: where the decode regression puts it at zero
    # (its column dropped) but TTFT clearly rises with the prompt, the TTFT slope is used and the decode
    # regression refitted with it fixed (only the per-batch cost fitted beside it): a slope the data shows is
    # never fitted as zero (docs/twin.md "Calibration")
    ttft_pre = _ttft_prefill(f, _low_load_rows(f, free), dec[0], dec[1])
    fixed_pt = None
    if with_int and dec[3] <= 0 and ttft_pre is not None and ttft_pre.clear:
        fixed_pt = ttft_pre.p1
        dec = _decode_fit(f, with_seq, with_int, with_ctx, np.random.default_rng([seed, 3]), fixed_pt)
    pre = (dec[2], dec[3]) if with_int else _prefill_fit(*_prefill_y(f, free_idx, dec[0], dec[1]))
    return _PointFit(with_seq, with_int, with_ctx, dec, pre, free, ttft_pre, fixed_pt, ceil)


def _bootstrap(f: RequestFeatures, fit: _PointFit, n_boot: int, seed: int, rng: np.random.Generator,
               progress: Progress | None = None) -> np.ndarray:
    """Cluster bootstrap over steps: the median regression on a subsample of the resampled steps' rows; one row
    per draw (prefill base, prefill per token, decode base, decode per sequence, decode per 1k context)."""
    with_seq, with_int, with_ctx, dec, fixed_pt = fit.with_seq, fit.with_int, fit.with_ctx, fit.dec, fit.fixed_pt
    m, x, y = _decode_design(f, with_seq, with_int, with_ctx, fixed_pt)
    st = f.cluster[m]
    steps = np.unique(f.cluster)
    rows_by_step = {int(s): np.flatnonzero(st == s) for s in steps}
    free_by_step = {int(s): np.flatnonzero(fit.free & (f.cluster == s)) for s in steps}
    # the point fit's non-zero columns: a cost the whole test puts at zero starts at zero in every resample
    dec_design = np.array([dec[0], dec[1], dec[4], dec[2], dec[3]])[
        [True, with_seq, with_ctx, with_int, with_int and fixed_pt is None]]
    rng_t = np.random.default_rng([seed, 5])  # the TTFT slope's own resampling (requests of the low-load steps)
    act0 = [j for j in range(dec_design.size) if j == 0 or dec_design[j] > 0]
    draws = []
    n_runs = n_boot if steps.size > 1 else 0
    if progress is not None:
        progress.start(n_runs, "bootstrap over steps")
    for _ in range(n_runs):
        if progress is not None:
            progress.advance(1)
        pick = [int(s) for s in rng.choice(steps, steps.size, replace=True)]
        rows_d = np.concatenate([rows_by_step[s] for s in pick])
        if rows_d.size < x.shape[1] + 5:
            continue
        if fixed_pt is None:
            db = _full(_median_fit(x[rows_d], y[rows_d], rng, BOOT_DECODE_ROWS, act0, BOOT_MAX_ITER),
                       with_seq, with_int, with_ctx)
        else:
            # the TTFT slope on the low-load requests resampled (they are nearly independent at low load), then the
            # decode regression on the resampled steps with that slope's stalls taken off
            rt = rng_t.choice(fit.ttft_pre.rows, fit.ttft_pre.rows.size, replace=True)
            pt_b = max(_prefill_fit(*_prefill_y(f, rt, dec[0], dec[1]))[1], 0.0)
            _, xb, yb = _decode_design(f, with_seq, with_int, with_ctx, pt_b)
            db = _full(_median_fit(xb[rows_d], yb[rows_d], rng, BOOT_DECODE_ROWS, act0, BOOT_MAX_ITER),
                       with_seq, with_int, with_ctx, pt_b)
        if with_int:
            pb = (db[2], db[3])
        else:
            rows = np.concatenate([free_by_step[s] for s in pick])
            if rows.size > BOOT_QUANTREG_ROWS:
                rows = rng.choice(rows, BOOT_QUANTREG_ROWS, replace=False)
            if rows.size < 10:
                continue
            pb = _prefill_fit(*_prefill_y(f, rows, db[0], db[1]))
        draws.append([pb[0], pb[1], db[0], db[1], db[4]])
    return np.array(draws) if draws else np.empty((0, 5))


BATCH_SPREAD = 1.5  # the time-average batch's P95 must be this multiple of its P5 (and a request more) for the
# decode cost per sequence to be identified


def _batch_varied(f: RequestFeatures) -> bool:
    """Did the test vary the running batch enough to split the decode iteration into a per-iteration and a
    per-sequence cost? The time-average batch per request (``n̄``) must spread by a request or more between its
    P5 and P95 (timing noise alone does not) and by :data:`BATCH_SPREAD` × (a test that kept the slots full, as a
    fixed-concurrency benchmark does, measures the iteration at that batch only; the prefill cost's rule,
    :data:`PROMPT_SPREAD`, is the same)."""
    x = f.nbar[np.isfinite(f.nbar)]
    if not x.size:
        return False
    p5, p95 = (float(v) for v in np.percentile(x, [5, 95]))
    return bool(p95 - p5 >= 1.0 and p95 >= BATCH_SPREAD * max(p5, 1.0))


def _batch_spread(f: RequestFeatures) -> str:
    x = f.nbar[np.isfinite(f.nbar)]
    return "–" if not x.size else "{:.3g}–{:.3g}".format(*np.percentile(x, [5, 95]))


PROMPT_SPREAD = 1.5  # the uncached prompt's P95 must be this multiple of its P5 for the per-token cost to be identified


def _prompts_varied(f: RequestFeatures) -> tuple[bool, str]:
    """Did the test vary the prompt enough to split the prefill time into a per-batch and a per-token cost? The
    uncached tokens of the prefill batches must spread by :data:`PROMPT_SPREAD` between their P5 and P95 (one
    prompt length, as a fixed-length benchmark sends, makes the two costs collinear)."""
    x = f.batch_tokens[np.isfinite(f.batch_tokens)]
    if x.size < 10:
        return False, f"{x.size} prefill batches"
    p5, p95 = (float(v) for v in np.percentile(x, [5, 95]))
    return bool(p95 >= PROMPT_SPREAD * max(p5, 1.0)), f"uncached tokens per prefill batch P5–P95 {p5:,.0f}–{p95:,.0f}"


def _cost_params(f: RequestFeatures, fit: _PointFit, draws: np.ndarray) -> list[TwinParam]:
    """The fitted costs (prefill, decode) with their bootstrap CIs, then the slot, KV and batch ceilings."""
    with_seq, with_int, with_ctx, dec, pre, ceil = fit.with_seq, fit.with_int, fit.with_ctx, fit.dec, fit.pre, fit.ceil

    def ci(j: int, v: float) -> tuple[float | None, float | None]:
        if draws.shape[0] < 20:
            return (None, None)
        lo, hi = np.percentile(draws[:, j], [2.5, 97.5], method="linear")
        return (float(min(lo, v)), float(max(hi, v)))

    all_steps = _steps_list(f.step)
    int_steps = _steps_list(f.step[(f.prefills_in > 0) & np.isfinite(f.tpot_ms)])
    pre_steps = int_steps if with_int else _steps_list(f.step[fit.free])
    how = ("coefficient of the prefill batches that interrupted other requests' decoding" if with_int else
           "median regression of TTFT over requests that found a free slot")
    how_pt = how
    if fit.ttft_pre is not None:
        tp = fit.ttft_pre
        low_steps = _steps_list(f.step[tp.rows])
        seen = (f"TTFT at low load (steps {low_steps}, {tp.rows.size} requests that found a free slot) rises "
                f"{tp.p1:.4g} ms/token (median regression, 95% CI {tp.ci[0]:.4g}–{tp.ci[1]:.4g}; "
                f"Theil–Sen {tp.theil[0]:.4g}, {tp.theil[1]:.4g}–{tp.theil[2]:.4g})")
        if fit.fixed_pt is not None:
            how_pt = (f"{seen}: used, since the decode stalls alone put it at zero; the decode regression refitted "
                      "with it fixed")
        elif with_int:
            how_pt = f"{how}; check: {seen}"
    varied, spread = _prompts_varied(f)
    if not varied:
        how_pt = (f"not identified: the test hardly varied the prompt ({spread}), so the prefill time cannot be "
                  f"split into a per-batch and a per-token cost; fitted {how} (per uncached token)")
    return [
        TwinParam("prefill_base_ms", max(pre[0], 0.0), ci(0, max(pre[0], 0.0)) if varied else (None, None), "ms",
                  varied, "none", pre_steps if varied else [],
                  f"{how} (per batch)" if varied else
                  f"not identified apart from the per-token cost ({spread}): their sum at the test's prompt is "
                  f"measured; {how} (per batch)"),
        TwinParam("prefill_ms_per_token", max(pre[1], 0.0), ci(1, max(pre[1], 0.0)) if varied else (None, None),
                  "ms/token", varied, "none",
                  [] if not varied else pre_steps if fit.fixed_pt is None else _steps_list(f.step[fit.ttft_pre.rows]),
                  how_pt if not varied else f"{how_pt} (per uncached token)"),
        TwinParam("decode_base_ms", max(dec[0], 0.0), ci(2, max(dec[0], 0.0)), "ms", True, "none", all_steps,
                  "median-regression intercept of time per output token"),
        TwinParam("decode_ms_per_seq", max(dec[1], 0.0), ci(3, max(dec[1], 0.0)) if with_seq else (None, None),
                  "ms/seq", with_seq, "none", all_steps if with_seq else [],
                  "median-regression slope of time per output token on the running batch" if with_seq else
                  f"not identified: the running batch hardly varied (time-average batch per request P5–P95 "
                  f"{_batch_spread(f)}); folded into decode_base_ms"),
        TwinParam("decode_ms_per_kctx", max(dec[4], 0.0), ci(4, max(dec[4], 0.0)) if with_ctx else (None, None),
                  "ms/1k tokens", with_ctx, "none", all_steps if with_ctx else [],
                  "median-regression slope of time per output token on the running context (Σ input + generated tokens)"
                  if with_ctx else f"not identified: the context term did not stand {CTX_MIN_T:g} SE above zero "
                  "beside the batch size; the twin uses 0 (long-context mixes are predicted optimistic)"),
        TwinParam("max_num_seqs", float(ceil.n_max), (None, None), "requests", ceil.slots_identified,
                  "none" if ceil.slots_identified else "lower", _steps_list(f.step[ceil.slot_q]),
                  "most requests decoding at once; requests queued at it" if ceil.slots_identified else
                  "never reached with a queue: the twin uses the most seen at once, a lower bound"),
        TwinParam("kv_budget_tokens", ceil.kv_max, (None, None), "tokens", ceil.kv_identified,
                  "none" if ceil.kv_identified else "lower", _steps_list(f.step[ceil.kv_q]),
                  "most reserved (input + output) tokens running; requests queued with free slots"
                  if ceil.kv_identified
                  else "never reached: the twin uses the most reserved tokens seen running, a lower bound"),
        TwinParam("max_batched_tokens", float(np.nanmax(f.batch_tokens)), (None, None), "tokens", False, "lower",
                  [], "not identifiable from request rows: the largest prefill batch seen, a lower bound"),
    ]


def _client_params(f: RequestFeatures, fit: _PointFit, timeouts: pl.DataFrame, rto: TwinParam) -> list[TwinParam]:
    """What the engine model does not explain (TTFT overhead) and the timeouts: in the queue and in front."""
    # client-visible TTFT the engine model does not explain, over requests that found a free slot
    fx, fy = _prefill_y(f, np.flatnonzero(fit.free), fit.dec[0], fit.dec[1])
    overhead = float(np.median(fy - fit.pre[0] - fit.pre[1] * fx)) if fx.size else 0.0
    out = [TwinParam("ttft_overhead_ms", max(overhead, 0.0), (None, None), "ms", bool(fx.size >= 10), "none",
                     _steps_list(f.step[fit.free]), "median TTFT beyond the modelled prefill (and half an iteration) "
                     "over requests that found a free slot: network, tokenizer, API server")]
    if timeouts.height:
        tt = (timeouts["end_s"] - timeouts["start_s"]).drop_nulls().to_numpy()
        out.append(TwinParam("queue_timeout_s", float(np.median(tt)), (float(tt.min()), float(tt.max())), "s",
                             True, "none", _steps_list(timeouts["step"].to_numpy()),
                             "median time to failure of timed-out requests"))
    else:
        out.append(TwinParam("queue_timeout_s", None, (None, None), "s", False, "unbounded", [],
                             "no request timed out: the twin lets requests wait"))
    out.append(rto)
    return out


def _replace_param(params: list[TwinParam], new: TwinParam) -> None:
    k = next(i for i, p in enumerate(params) if p.name == new.name)
    params[k] = new


def _kv_policy(frame: pl.DataFrame, f: RequestFeatures, params: list[TwinParam], ceil: _Ceilings,
               given: dict) -> tuple[str, str]:
    """KV policy: reserve (input + output held from admission) or paged (tokens present, LIFO preemption); chosen
    by which replays the test closer, when a KV ceiling was reached under either, else reserve; a policy given
    wins. Updates the KV budget in ``params`` to the chosen policy's peak."""
    kv_policy, policy_note = "reserve", ("not identified: the KV budget never held requests back, so the test "
                                         "cannot tell reserved from paged KV; the twin uses reserve (admits fewer)")
    if ceil.kv_identified or ceil.kv_paged_identified:
        vals = {p.name: p.value for p in params}
        fit_r = _replay_error(frame, vals)
        fit_p = _replay_error(frame, dict(vals, kv_policy="paged", kv_budget_tokens=ceil.held_max))
        if fit_p < fit_r:
            kv_policy = "paged"
        policy_note = (f"replay error (mean |log| of throughput and P50 latency over steps): reserve {fit_r:.3f}, "
                       f"paged {fit_p:.3f}; the closer is used")
        if kv_policy == "paged":
            ident = ceil.kv_paged_identified
            _replace_param(params, TwinParam(
                "kv_budget_tokens", ceil.held_max, (None, None), "tokens", ident,
                "none" if ident else "lower", _steps_list(f.step[ceil.kv_q_paged]),
                "most tokens present (input + generated) running; requests queued with free slots (paged KV)"
                if ident else "never reached under paged KV: the most tokens seen present, a lower bound"))
    if "kv_policy" in given and given["kv_policy"] != kv_policy:
        pol = str(given["kv_policy"])
        policy_note = f"given ({pol}); the test alone: {kv_policy} ({policy_note})"
        kv_policy = pol
        peak = ceil.held_max if pol == "paged" else ceil.kv_max
        ident = ceil.kv_paged_identified if pol == "paged" else ceil.kv_identified
        _replace_param(params, TwinParam("kv_budget_tokens", peak, (None, None), "tokens", ident,
                                         "none" if ident else "lower",
                                         _steps_list(f.step[ceil.kv_q_paged if pol == "paged" else ceil.kv_q]),
                                         f"most tokens running under {pol} KV" + ("" if ident else ", a lower bound")))
    elif "kv_policy" in given:
        policy_note = f"given ({kv_policy}); the test alone agrees or cannot tell ({policy_note})"
    return kv_policy, policy_note


def _apply_given(params: list[TwinParam], f: RequestFeatures, ceil: _Ceilings, kv_policy: str, given: dict) -> None:
    """The engine settings the operator gave replace what the test showed; a setting the test contradicts is refused."""
    seen = {"max_num_seqs": float(np.nanmax(f.n_at_first)),
            "kv_budget_tokens": ceil.held_max if kv_policy == "paged" else ceil.kv_max,
            "max_batched_tokens": float(np.nanmax(f.batch_tokens))}
    for name in ("max_num_seqs", "kv_budget_tokens", "max_batched_tokens"):
        if name not in given:
            continue
        v = float(given[name])
        if not v > 0:
            raise ParameterError(f"engine setting {name} must be positive, got {given[name]!r}")
        # a prefill batch of one prompt may exceed max_batched_tokens (the first request always fits): not checked
        if name != "max_batched_tokens" and v < seen[name] * 0.99 - 1:
            raise ParameterError(f"engine setting {name} = {v:g}, but the test ran {seen[name]:,.0f} at once: "
                                 "the setting is not the one this test ran with")
        unit = next(p.unit for p in params if p.name == name)
        _replace_param(params, TwinParam(name, v, (None, None), unit, True, "none", [],
                                         f"given: the engine's configuration (the test showed at least "
                                         f"{seen[name]:,.0f})"))


def _test_mix(ok: pl.DataFrame, seed: int) -> dict[str, list[float]]:
    """The tested mix kept in the twin (a sample of :data:`MAX_MIX_ROWS` beyond that)."""
    kept = ok if ok.height <= MAX_MIX_ROWS else ok.sample(MAX_MIX_ROWS, seed=seed)
    return {
        "input_tokens": kept["input_tokens"].to_numpy().astype(float).tolist(),
        "output_tokens": kept["output_tokens"].to_numpy().astype(float).tolist(),
        "cached_tokens": kept["cached_tokens"].fill_null(0).to_numpy().astype(float).tolist(),
    }


def calibrate(trace, *, n_boot: int = 200, seed: int = 0, exclude_steps: list | None = None,
              known: dict | None = None, replicas: int = 1, _lost: pl.DataFrame | None = None,
              progress: Progress | None = None) -> Twin:
    """A :class:`~bearing_lib.twin.result.Twin` calibrated on a per-request load test.

    ``trace`` is a :class:`~bearing_lib.data.trace.RequestTrace` (e.g. from
    :func:`bearing_lib.loaders.load_trace`) with start/end times, TTFT and token counts.
    ``exclude_steps`` leaves steps out, as step numbers or ``(run_id, step)`` pairs (the
    leave-highest-step-out validation uses it). Steps are resampled per (run, step).
    ``known``: engine settings the operator knows (``max_num_seqs``, ``kv_budget_tokens``,
    ``max_batched_tokens``, ``kv_policy`` "reserve"/"paged"; e.g. from vLLM's flags and its startup
    log's KV-cache size), used instead of what the test can show and marked ``given``; a setting the
    test contradicts (more requests or tokens ran at once than it allows) is refused.
    ``replicas``: the test ran against that many replicas behind a round-robin router (the limits'
    ``conditions.instances``): each run's requests are dispatched in send order, and the twin is one
    replica's server (its slots, KV budget and batch are per replica). ``progress``: a terminal bar
    (:class:`bearing_lib.common.progress.Progress`) advanced per bootstrap resample, or None.

    The stages (each a function of this module): the rows put in shape (``_prepare``), the request
    timeout, the per-request features, the decode fit and the ceilings it implies with the prefill cost
    (``_point_fit``), the cluster bootstrap (``_bootstrap``), the parameters (``_cost_params``,
    ``_client_params``), the KV policy and the settings given.
    """
    prep = _prepare(trace, exclude_steps, known, replicas)
    frame, ok, given = prep.frame, prep.ok, prep.given
    rto = _given_timeout(given["request_timeout_s"]) if "request_timeout_s" in given else _request_timeout(frame, ok)
    if _lost is None and rto.value is not None:
        # the lost requests decoded beside the completed ones until the deadline aborted them, so the batch
        # the regressions see in the completed rows is too small: a first pass (point fit only, no bootstrap)
        # places them with its replay, and the fit is made with them counted (one step of a fixed point;
        # docs/twin.md "Calibration")
        first = calibrate(trace, n_boot=0, seed=seed, exclude_steps=exclude_steps, known=known, replicas=replicas,
                          _lost=_NO_LOST)
        lost = _lost_occupancy(frame, first.values())
        if lost.height:
            return calibrate(trace, n_boot=n_boot, seed=seed, exclude_steps=exclude_steps, known=known,
                             replicas=replicas, _lost=lost, progress=progress)

    f = _concat([_features(g, _lost_of(_lost, g)) for g in server_groups(ok)])
    rng = np.random.default_rng(seed)
    fit = _point_fit(f, seed, rng)
    draws = _bootstrap(f, fit, n_boot, seed, rng, progress)
    params = _cost_params(f, fit, draws) + _client_params(f, fit, prep.timeouts, rto)
    kv_policy, policy_note = _kv_policy(frame, f, params, fit.ceil, given)
    _apply_given(params, f, fit.ceil, kv_policy, given)
    reach = _reach(ok, f)
    return Twin(
        source=prep.source,
        params=params,
        draws=draws.tolist(),
        n_requests=int(ok.height),
        steps=_steps_list(f.step),
        highest_load=float(np.nanmax(f.load)) if np.isfinite(f.load).any() else None,
        load_unit="rps",
        test_mix=_test_mix(ok, seed),
        notes=_notes(params) + [f"kv_policy {kv_policy}: {policy_note}"],
        kv_policy=kv_policy,
        kv_policy_note=policy_note,
        given=given,
        reach=reach,
        identification=_identification(params, reach, f),
        replicas=replicas,
    )


def _q(x: np.ndarray, qs: list[float]) -> list[float | None]:
    x = x[np.isfinite(x)]
    return [float(v) for v in np.percentile(x, qs)] if x.size else [None] * len(qs)


def _reach(ok: pl.DataFrame, f: RequestFeatures) -> Reach:
    """What the calibration test covered, per factor a cost parameter depends on (docs/twin.md "Reach"):
    prompt, output and cached lengths and the cache-hit share (over every completed request), batch sizes
    and running context reached (time averages over each request's decode), offered loads, and the time per
    output token measured at the lowest- and highest-load steps (P25, P50, P75)."""
    inp = ok["input_tokens"].to_numpy().astype(float)
    out = ok["output_tokens"].to_numpy().astype(float)
    cac = ok["cached_tokens"].fill_null(0).to_numpy().astype(float)
    loads = f.load[np.isfinite(f.load)]
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(f.nbar > 0, f.cbar / f.nbar, np.nan)
    speed: dict[str, list[float | None]] = {}
    if loads.size:
        lo_l, hi_l = float(loads.min()), float(loads.max())
        for key, ld in (("tpot_lowest_load_ms", lo_l), ("tpot_highest_load_ms", hi_l)):
            sel = (f.load == ld) & np.isfinite(f.tpot_ms)
            if sel.sum() >= 10:
                speed[key] = _q(f.tpot_ms[sel], [25, 50, 75])
    return Reach(
        input_tokens=[float(inp.min()), float(inp.max())],
        output_tokens=[float(out.min()), float(out.max())],
        total_tokens_max=float((inp + out).max()),
        cache_hit_share=float(np.mean(cac > 0)),
        cached_share=float(cac.sum() / max(inp.sum(), 1.0)),
        batch_p5_p95=_q(f.nbar, [5, 95]),
        batch_max=float(np.nanmax(f.n_at_first)),
        context_ktokens_p5_p95=_q(f.cbar, [5, 95]),
        context_per_request_ktokens=_q(ratio, [50])[0],
        offered_load=[float(loads.min()), float(loads.max())] if loads.size else [None, None],
        **speed,
    )


FACTOR = {
    "prefill_base_ms": "prefill batches (count) inside decodes, or TTFT at low load",
    "prefill_ms_per_token": "prompt length (uncached tokens)",
    "decode_base_ms": "time per output token",
    "decode_ms_per_seq": "batch size (requests decoding)",
    "decode_ms_per_kctx": "running context (thousand tokens) beside the batch size",
    "cache_hit_discount": "cache-hit share (requests served from the prefix cache)",
    "max_num_seqs": "a queue at the most requests decoding at once",
    "kv_budget_tokens": "a queue with slots free at the most KV tokens held",
    "max_batched_tokens": "not identifiable from request rows",
}


def _identification(params: list[TwinParam], reach: Reach, f: RequestFeatures) -> list[ParamIdentification]:
    """Per cost parameter: the factor that identifies it, the range of it the test covered, whether it was
    identified, the estimate and interval, and (unidentified) the prior range a prediction that depends on it
    carries (docs/twin.md "Reach")."""
    by = {p.name: p for p in params}
    rng_of = {
        "prefill_base_ms": None,
        "prefill_ms_per_token": reach.input_tokens,
        "decode_base_ms": None,
        "decode_ms_per_seq": reach.batch_p5_p95,
        "decode_ms_per_kctx": reach.context_ktokens_p5_p95,
        "max_num_seqs": [None, reach.batch_max],
        "kv_budget_tokens": None,
        "max_batched_tokens": [None, float(np.nanmax(f.batch_tokens))],
    }
    out: list[ParamIdentification] = []
    for name, tested in rng_of.items():
        p = by.get(name)
        if p is None:
            continue
        out.append(ParamIdentification(
            parameter=name, factor=FACTOR[name], tested=tested, identified=bool(p.identified), value=p.value,
            ci95=list(p.ci95), bound=p.bound, prior=None,
            note=p.note if p.identified or p.note.startswith("not identif") else f"not identified: {p.note}"))
    # the context cost: unidentified, its prior runs from 0 to the value at which the fitted batch cost would be
    # all context cost (d1 per request over the test's median context per request): more than that and the
    # test's own time per token at its largest batches would have been higher than measured
    k = next(e for e in out if e.parameter == "decode_ms_per_kctx")
    d1 = by["decode_ms_per_seq"].value or 0.0
    cpr = reach.context_per_request_ktokens
    if not k.identified and d1 > 0 and cpr:
        k.prior = [0.0, float(d1 / cpr)]
        k.note += (f"; prior 0–{d1 / cpr:.3g} ms/1k tokens (the fitted batch cost, {d1:.3g} ms/seq, read as "
                      f"context cost at the test's median {cpr:.3g}k tokens per request)")
    # the per-sequence decode cost, when the batch hardly varied: the time per decode iteration at the test's typical
    # batch is known (it is the base the regression fitted), its split is not; the prior runs from all of it per
    # iteration (0 per sequence, the point) to all of it per sequence (base 0), at the test's median batch n̄
    sq = next(e for e in out if e.parameter == "decode_ms_per_seq")
    nb = f.nbar[np.isfinite(f.nbar) & (f.nbar > 0)]
    if not sq.identified and nb.size:
        n_med = float(np.median(nb))
        it = (by["decode_base_ms"].value or 0.0) + (by["decode_ms_per_seq"].value or 0.0) * n_med
        if it > 0:
            sq.prior = [0.0, float(it / n_med)]
            sq.decode_ms_at_batch = [float(it), n_med]
            sq.note += (f"; prior 0–{it / n_med:.3g} ms/seq (the fitted decode iteration, {it:.3g} ms at the "
                           f"test's median batch of {n_med:.3g}, all per iteration or all per sequence)")
    # the per-token prefill cost, when the prompt hardly varied: the prefill time at the test's typical prompt is
    # known, its split is not; the prior runs from all of it per batch (0 per token) to all of it per token
    # (per-batch cost 0: a cost is never negative), at the test's median uncached tokens per prefill batch
    pt = next(e for e in out if e.parameter == "prefill_ms_per_token")
    xb = f.batch_tokens[np.isfinite(f.batch_tokens)]
    if not pt.identified and xb.size:
        tok = float(np.median(xb))
        p0, p1 = (by["prefill_base_ms"].value or 0.0), (by["prefill_ms_per_token"].value or 0.0)
        total = p0 + p1 * tok
        if tok > 0 and total > 0:
            pt.prior = [0.0, float(total / tok)]
            pt.prefill_ms_at_tokens = [float(total), tok]
            pt.note += (f"; prior 0–{total / tok:.3g} ms/token (the fitted prefill time, {total:.3g} ms at the "
                           f"test's median {tok:,.0f} uncached tokens, all per batch or all per token)")
    hit = float(reach.cache_hit_share or 0.0)
    out.append(ParamIdentification(
        parameter="cache_hit_discount", factor=FACTOR["cache_hit_discount"], tested=[hit, hit], identified=False,
        value=1.0, ci95=[None, None], bound="none", prior=[0.0, 1.0],
        note=("not identified: the test had no cache hits; the twin takes a cached token as free "
              "(discount 1), prior 0 (cached tokens cost a full prefill) to 1" if hit == 0 else
              f"not fitted: {hit:.1%} of the test's requests hit the cache; the twin takes a cached "
              "token as free (discount 1), prior 0–1")))
    return out


def _lost_occupancy(frame: pl.DataFrame, values: dict) -> pl.DataFrame:
    """The test's lost requests (failed, no end time) as the twin's replay runs them: from their first token
    to their abort (columns run_id, step, first_s, end_s, input_tokens, output_tokens); those that never
    started hold no batch place and are left out."""

    params = server_params(values)
    out = []
    for g0 in server_groups(prepare_rows(frame)):
        g = g0.sort("start_s").filter(replayable(g0.sort("start_s"), params))
        if not g.height:
            continue
        a = g["start_s"].to_numpy().astype(float)
        inp, o = replay_lengths(g, params)
        res = simulate(params, a - a[0], inp, o, g["cached_tokens"].to_numpy())
        lost = ((g["status"] != "ok") & g["end_s"].is_null()).to_numpy() & np.isfinite(res.aborted_first_s)
        if lost.any():
            extra = {REPLICA: g[REPLICA].to_numpy()[lost]} if REPLICA in g.columns else {}
            out.append(pl.DataFrame({**extra, "run_id": g["run_id"].to_numpy()[lost],
                                     "step": g["step"].to_numpy()[lost],
                                     "first_s": res.aborted_first_s[lost] + a[0], "end_s": res.end_s[lost] + a[0],
                                     "input_tokens": inp[lost], "output_tokens": o[lost]}))
    return pl.concat(out) if out else _NO_LOST


def _replay_error(frame: pl.DataFrame, values: dict) -> float:
    """Mean over (run, step) of |log(twin / measured)| of throughput plus that of P50 latency, replaying the test."""

    pf = prepare_rows(frame)
    sim = replay(server_params(values), pf)
    meas = {k: g for k, g in pf.group_by(["run_id", "step"])}
    errs = []
    for k, g in sim.group_by(["run_id", "step"]):
        a, _ = step_figures(meas[k], None)
        b, _ = step_figures(g, None)
        for key in ("throughput_rps", "latency_p50_ms"):
            x, y = a.get(key), b.get(key)
            if x and y and x > 0 and y > 0:
                errs.append(abs(math.log(y / x)))
    return float(np.mean(errs)) if errs else math.inf


def _notes(params: list[TwinParam]) -> list[str]:
    return [f"{p.name}: {p.note}" for p in params if not p.identified]


def server_params(values: dict[str, float | None]) -> ServerParams:
    """A :class:`ServerParams` from a name → value mapping (unknown names ignored)."""
    ms = values.get("max_num_seqs")
    return ServerParams(
        prefill_base_ms=float(values["prefill_base_ms"] or 0.0),
        prefill_ms_per_token=float(values["prefill_ms_per_token"] or 0.0),
        decode_base_ms=float(values["decode_base_ms"] or 0.0),
        decode_ms_per_seq=float(values["decode_ms_per_seq"] or 0.0),
        max_num_seqs=None if ms is None else int(round(ms)),
        kv_budget_tokens=values.get("kv_budget_tokens"),
        max_batched_tokens=values.get("max_batched_tokens"),
        queue_timeout_s=values.get("queue_timeout_s"),
        ttft_overhead_ms=float(values.get("ttft_overhead_ms") or 0.0),
        kv_policy=str(values.get("kv_policy") or "reserve"),
        decode_ms_per_kctx=float(values.get("decode_ms_per_kctx") or 0.0),
        request_timeout_s=values.get("request_timeout_s"),
    )


__all__ = ["assign_replicas", "calibrate", "server_params"]
