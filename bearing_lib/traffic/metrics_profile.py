"""A production profile from Prometheus counters instead of a request trace.

Most fleets keep Prometheus, not request logs. ``profile_metrics(metrics)`` reads the range
query of a serving engine's cumulative counters (``/api/v1/query_range`` JSON, loaded as
:class:`~bearing_lib.data.servermetrics.ServerMetrics` by ``loaders/prometheus.py``) and builds
the same :class:`~bearing_lib.traffic.document.TrafficProfile` a trace gives, marked as coming
from metrics (``source.kind`` ``metrics``, section ``metrics``).

Query the raw counters, not ``rate(...)``: e.g.
``{__name__=~"vllm:(request_success|prompt_tokens|generation_tokens)_total"}`` with a ``step``.
vLLM registers them in ``vllm/v1/metrics/loggers.py`` (vllm-project/vllm):
``vllm:request_success_total`` (labels ``model_name``, ``engine``, ``finished_reason`` =
stop / length / abort), ``vllm:prompt_tokens_total`` and ``vllm:generation_tokens_total``.

Rules (``docs/operations.md``, section 0, *Production from Prometheus metrics*):

* **Step.** A range query evaluates every series at ``start + k * step``; the value at ``t``
  is the newest sample at or before ``t``. The requests of the interval ``(t - step, t]`` are
  the counter's increase between the two evaluations; that interval is the window starting
  at ``t - step``. The time resolution is the step: nothing finer can be known.
* **Counter resets.** A value below the previous one is a restart (the counter began again at
  0), so the increase is the new value itself, as Prometheus' own ``increase()`` does
  (prometheus/prometheus ``promql/functions.go``, ``extrapolatedRate``); requests finished
  between the last scrape before the restart and the restart are lost to Prometheus too.
* **Gaps.** A series with no point at some evaluation times (a failed scrape, a restarting
  pod) resumes with the increase over the whole gap, spread evenly over its steps (counted in
  ``metrics.gaps``). A series' first point is its baseline: what it counted before is unseen.
* **Per minute** when the step divides 60 s and the evaluation times sit on the step's grid
  from the epoch: windows are summed into UTC minutes, and only minutes with all their windows
  are kept (the partial first and last minutes are left out, as for traces). Otherwise the
  step's windows are the finest bin (the rate-window profile, like ServeGen's).
* **Mixes** are the values of one label (``mix_label``, ``model_name`` by default): requests,
  shares, own peaks and mean tokens per request of each. Length mixes, per-request lengths,
  per-second rates, inter-arrival times and the error budget cannot be known from counters
  (``vllm:request_success_total`` counts finished requests only) and are said so.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from bearing_lib.common.errors import InputError, InsufficientDataError
from bearing_lib.common.unavailable import Unavailable
from bearing_lib.data.ratewindows import RATE_SCHEMA, RateWindows
from bearing_lib.data.servermetrics import ServerMetrics
from bearing_lib.traffic.document import (
    MetricsSource,
    MetricTokens,
    MixCounts,
    MixPeaks,
    MixShare,
    MixSharesPerHour,
    TrafficProfile,
)
from bearing_lib.traffic.mix_peaks import mix_peaks
from bearing_lib.traffic.source import CounterParameters, ProfileParameters, ProfileSource

if TYPE_CHECKING:  # pragma: no cover
    from bearing_lib.traffic.profile import MixShares

REQUEST_COUNTERS = ("vllm:request_success_total", "vllm_request_success_total", "sglang:num_requests_total")
"""Counters of finished requests, first found wins. ``vllm_...``: the same counter stored with its colon escaped,
as a Prometheus 2.42 does when it negotiates OpenMetrics with prometheus_client 0.26 (seen here: the text format
0.0.4 keeps ``vllm:``, the OpenMetrics output writes ``vllm_request_success_total``)."""
TOKEN_COUNTERS = {
    "input_tokens": ("vllm:prompt_tokens_total", "vllm_prompt_tokens_total", "sglang:prompt_tokens_total"),
    "output_tokens": ("vllm:generation_tokens_total", "vllm_generation_tokens_total",
                      "sglang:generation_tokens_total"),
}
#: What counters cannot tell, said in every metrics profile.
UNKNOWABLE = (
    "per-request input and output lengths (only totals per step: mean tokens per request are given)",
    "length mixes (mixes here are the values of one label)",
    "rates finer than the query step (per-second rates, inter-arrival times, bursts shorter than a step)",
    "the error budget (the request counter counts finished requests, not failed ones)",
)


@dataclass(frozen=True)
class CounterWindows:
    """Increases of one counter per window ``(window_start_s, window_start_s + step_s]`` and mix."""

    metric: str
    step_s: float
    frame: pl.DataFrame  # window_start_s, mix, increase
    n_series: int
    resets: int
    gaps: int


#: How the counters become requests per bin (``metrics.rules``).
RULES = ("increase between consecutive evaluations of the raw counter = requests of (t - step, t]; a drop is a "
         "counter reset (the increase is the new value); a gap's increase is spread evenly over its steps")


def _label(labels: str | None, name: str) -> str | None:
    for kv in (labels or "").split(","):
        k, _, v = kv.partition("=")
        if k == name:
            return v
    return None


def query_step(times: np.ndarray, source: str) -> float:
    """The range query's step: the smallest gap between evaluation times, every gap a whole number of it."""
    t = np.unique(times)
    if t.size < 3:
        raise InsufficientDataError(f"{source}: {t.size} evaluation time(s); a profile from counters needs a range "
                                    "query (query_range) with at least three steps")
    d = np.diff(t)
    step = float(d.min())
    k = d / step
    if np.any(np.abs(k - np.rint(k)) > 1e-6):
        raise InputError(f"evaluation times are not on one grid (gaps {sorted(set(np.round(d, 3)))[:5]} s): expected "
                         "one range query's step", path=source)
    return step


def counter_windows(metrics: ServerMetrics, metric: str, *, step_s: float, mix_label: str) -> CounterWindows:
    """The increases of ``metric`` per window and mix (see the module's rules)."""
    src = str(metrics.provenance.source)
    f = metrics.frame.filter((pl.col("metric") == metric) & pl.col("time_s").is_not_null())
    if f.height == 0:
        raise InputError(f"no samples of {metric}", path=src)
    key = pl.concat_str([pl.col("instance").fill_null(""), pl.col("gpu").fill_null(""),
                         pl.col("labels").fill_null("")], separator="|")
    f = (f.with_columns(key.alias("series")).unique(["series", "time_s"], keep="first")
         .sort("series", "time_s")
         .with_columns(pl.col("value").shift(1).over("series").alias("prev"),
                       pl.col("time_s").diff().over("series").alias("dt")))
    f = f.filter(pl.col("prev").is_not_null()).with_columns(
        pl.when(pl.col("value") >= pl.col("prev")).then(pl.col("value") - pl.col("prev"))
        .otherwise(pl.col("value")).alias("inc"),
        (pl.col("value") < pl.col("prev")).alias("reset"),
        (pl.col("dt") / step_s).round().cast(pl.Int64).alias("n"),
    )
    resets, gaps = int(f["reset"].sum()), int((f["n"] > 1).sum())
    mixes = [(_label(lab, mix_label) or "all") for lab in f["labels"].to_list()]
    spread = (
        f.with_columns(pl.Series("mix", mixes, dtype=pl.String), pl.int_ranges(0, pl.col("n")).alias("j"))
        .explode("j")
        .select((pl.col("time_s") - (pl.col("j") + 1) * step_s).alias("window_start_s"), "mix",
                (pl.col("inc") / pl.col("n")).alias("increase"))
        .group_by("window_start_s", "mix").agg(pl.col("increase").sum()).sort("window_start_s", "mix")
    )
    return CounterWindows(metric, step_s, spread, f["series"].n_unique(), resets, gaps)


def _first_present(metrics: ServerMetrics, names: tuple[str, ...]) -> str | None:
    present = set(metrics.frame["metric"].unique().to_list())
    return next((n for n in names if n in present), None)


def _integral(v: np.ndarray) -> bool:
    return bool(np.all(np.abs(v - np.rint(v)) < 1e-9))


def profile_metrics(metrics: ServerMetrics, *, request_metric: str | None = None, mix_label: str = "model_name",
                    quantile_level: float = 0.99, growth: float = 1.0, burst_k: float = 3.0,
                    burst_merge_gap_bins: int = 0, n_boot: int = 1000, seed: int | None = None,
                    slo_objective: float = 0.999, mix_spec: object = None) -> TrafficProfile:
    """The traffic profile of a Prometheus range query of request (and token) counters (module docstring)."""
    from bearing_lib.traffic.targets import DEFAULT_SEED

    seed = DEFAULT_SEED if seed is None else seed
    src = str(metrics.provenance.source)
    metric = request_metric or _first_present(metrics, REQUEST_COUNTERS)
    if metric is None or metric not in set(metrics.frame["metric"].unique().to_list()):
        raise InputError(
            f"no request counter{'' if metric is None else f' {metric}'} in the metrics; a profile from metrics needs "
            f"the raw counter of finished requests ({', '.join(REQUEST_COUNTERS)}) from a range query, e.g. "
            "query_range?query=vllm:request_success_total&step=15s", path=src)
    if metrics.frame.filter(pl.col("metric") == metric)["stat"].unique().to_list() != ["sample"]:
        raise InputError(f"{metric} holds window statistics, not counter samples; query the raw counter", path=src)
    times = metrics.frame.filter(pl.col("metric") == metric)["time_s"].drop_nulls().to_numpy()
    step = query_step(times, src)
    req = counter_windows(metrics, metric, step_s=step, mix_label=mix_label)
    tokens = {col: _first_present(metrics, names) for col, names in TOKEN_COUNTERS.items()}
    tok = {col: counter_windows(metrics, m, step_s=step, mix_label=mix_label) for col, m in tokens.items() if m}
    on_minutes = 60.0 % step < 1e-9 and bool(np.all(np.abs(np.mod(times, step)) < 1e-6)) and step <= 60.0
    ignored = "length mixes need per-request lengths, which counters do not carry" if mix_spec is not None else None
    params = ProfileParameters(quantile=quantile_level, growth=growth, burst_k=burst_k,
                               burst_merge_gap_bins=burst_merge_gap_bins, slo_objective=slo_objective, n_boot=n_boot,
                               seed=seed, counters=CounterParameters(metric, mix_label, ignored))

    def section(bins: np.ndarray, bin_s: float, counts: pl.DataFrame) -> MetricsSource:
        return _metrics_section(req, tok, tokens, counts, bins, bin_s, mix_label, quantile_level)

    build = _minute_profile if on_minutes else _window_profile
    return build(metrics, req, tok, params, metric, section)


def _per_bin(w: pl.DataFrame, bin_s: float, per_bin: int | None) -> pl.DataFrame:
    """Windows summed into bins (``per_bin`` windows each, complete bins only; None: the windows are the bins)."""
    if per_bin is None:
        return w.rename({"window_start_s": "bin_start_s"})
    return (w.with_columns(((pl.col("window_start_s") / bin_s).floor() * bin_s).alias("bin_start_s"))
            .group_by("bin_start_s", "mix").agg(pl.col("increase").sum()))


def _minute_profile(metrics: ServerMetrics, req: CounterWindows, tok: dict[str, CounterWindows],
                    params: ProfileParameters, metric: str,
                    section: Callable[[np.ndarray, float, pl.DataFrame], MetricsSource]) -> TrafficProfile:
    from bearing_lib.traffic.profile import assemble_profile, dispersion_from_gaps

    step = req.step_s
    per_minute = round(60.0 / step)
    w = req.frame
    starts = np.unique(w["window_start_s"].to_numpy())
    minute_of = np.floor(starts / 60.0) * 60.0
    m, n = np.unique(minute_of, return_counts=True)
    complete = m[n == per_minute]
    if complete.size == 0:
        raise InsufficientDataError(f"{metrics.provenance.source}: the range query spans no complete UTC minute "
                                    f"of {step:g} s steps")
    full = np.arange(complete.min(), complete.max() + 60.0, 60.0)
    missing = np.setdiff1d(full, complete)
    if missing.size:
        raise InputError(f"{missing.size} minute(s) inside the range have no data at all (first at "
                         f"{missing[0]:.0f}): query a range without holes", path=str(metrics.provenance.source))
    by_mix = _per_bin(w, 60.0, per_minute).filter(pl.col("bin_start_s").is_in(full.tolist()))
    total = by_mix.group_by("bin_start_s").agg(pl.col("increase").sum())
    cols = {"minute_start_s": full}
    tot = dict(zip(total["bin_start_s"].to_list(), total["increase"].to_list(), strict=True))
    cols["requests"] = np.array([tot.get(float(x), 0.0) for x in full])
    for col in ("input_tokens", "output_tokens"):
        if col in tok:
            t = _per_bin(tok[col].frame, 60.0, per_minute).group_by("bin_start_s").agg(pl.col("increase").sum())
            d = dict(zip(t["bin_start_s"].to_list(), t["increase"].to_list(), strict=True))
            cols[col] = np.array([d.get(float(x), 0.0) for x in full])
        else:
            cols[col] = None
    minutes = pl.DataFrame({
        k: (pl.Series(k, v, dtype=pl.Int64 if _integral(v) else pl.Float64) if v is not None
            else pl.Series(k, [None] * full.size, dtype=pl.Int64))
        for k, v in cols.items()
    }).with_columns(pl.col("minute_start_s").cast(pl.Float64))
    prov = metrics.provenance
    source = ProfileSource(path=prov.source, sha256=prov.sha256, format=prov.format, tool=prov.tool, kind="metrics",
                           time_origin="epoch", timezone="UTC", n_rows=metrics.frame.height, request_metric=metric,
                           time_resolution_s=step)
    disp = dispersion_from_gaps(minutes["requests"].to_numpy(), _NO_GRID, 0, None)
    disp.interarrival_cv = None
    disp.interarrival_cv_note = f"not measured: counters give requests per {step:g} s step, not arrival times"
    convention = (f"per-minute requests from counter increases over {step:g} s query steps summed into UTC "
                  "wall-clock minutes; minutes with all their steps kept, the partial first and last minutes left out")
    metrics_part = section(full, 60.0, by_mix.rename({"increase": "requests"}))

    return assemble_profile(
        source=source, time_origin="epoch", t_min=float(starts.min()), t_max=float(starts.max() + step),
        resolution=Unavailable(f"no per-request times: the counters were evaluated every {step:g} s"),
        minutes=minutes, seconds=None, dispersion=disp,
        mixes=_one_mix(float(minutes["requests"].sum())),
        slo=Unavailable("the request counter counts finished requests only: no failures, so no error budget"),
        seq_len=Unavailable("counters give token totals per step, not per-request lengths (mean tokens per "
                            "request are in the metrics section)"),
        params=params, quantile_level=params.quantile, growth=params.growth, burst_k=params.burst_k,
        burst_merge_gap_bins=params.burst_merge_gap_bins, n_boot=params.n_boot, seed=params.seed,
        per_second=Unavailable(f"counters resolve {step:g} s steps, not seconds"), convention=convention,
        metrics=metrics_part,
    )


def _one_mix(n: float) -> MixShares:
    """Every request in the one mix ``all`` (what a plan with ``--mixes none`` limits blends); length mixes cannot
    be counted from counters, and the note says where the per-label shares are."""
    from bearing_lib.data.mixes import MixSpec
    from bearing_lib.traffic.profile import MixShares

    return MixShares(MixSpec.single(), [MixShare(mix="all", share=1.0, n_requests=round(n))],
                     MixSharesPerHour(basis="no per-hour shares from counters", notes=[
                         "counters carry no per-request lengths: every request is in the one mix 'all'; the shares "
                         "per label value are in the metrics section"]))


class _NoGrid:
    quantized = False
    quantum_s = None


_NO_GRID = _NoGrid()


def _window_profile(metrics: ServerMetrics, req: CounterWindows, tok: dict[str, CounterWindows],  # noqa: ARG001
                    params: ProfileParameters, metric: str,
                    section: Callable[[np.ndarray, float, pl.DataFrame], MetricsSource]) -> TrafficProfile:
    from bearing_lib.data.provenance import Provenance
    from bearing_lib.traffic.binning import series_from_rate_windows
    from bearing_lib.traffic.profile import profile_rate_windows

    step = req.step_s
    w = req.frame
    prov = metrics.provenance
    frame = pl.DataFrame({
        "client": w["mix"], "window_start_s": w["window_start_s"], "window_s": [step] * w.height,
        "rate_rps": (w["increase"] / step), "cv": [None] * w.height, "pattern": [None] * w.height,
        "shape": [None] * w.height, "scale": [None] * w.height,
    }, schema=RATE_SCHEMA)
    rp = Provenance(source=prov.source, format=prov.format, tool=prov.tool, sha256=prov.sha256, time_origin="epoch")

    rates = RateWindows(frame, rp)
    series = series_from_rate_windows(rates)
    return profile_rate_windows(
        rates, params,
        source=replace(ProfileSource.of(rp, "rates", frame.height), kind="metrics", request_metric=metric,
                       time_resolution_s=step),
        convention=(f"{step:g} s windows (the query step, which does not divide a minute on the epoch grid) "
                    "from counter increases; the window is the finest bin"),
        mixes=_one_mix(float(np.sum(series.requests))),
        slo=Unavailable("the request counter counts finished requests only: no failures, so no error budget"),
        seq_len=Unavailable("counters give token totals per step, not per-request lengths"),
        metrics=section(np.asarray(series.start_s, dtype=float), step,
                        w.rename({"window_start_s": "bin_start_s", "increase": "requests"})),
        cv_note="not measured: counters carry no inter-arrival times",
    )


def _metrics_section(req: CounterWindows, tok: dict[str, CounterWindows], names: dict[str, str | None],
                     counts: pl.DataFrame, bins: np.ndarray, bin_s: float, mix_label: str,
                     quantile_level: float) -> MetricsSource:
    counted = counts.filter(pl.col("bin_start_s").is_in(bins.tolist()))
    peaks = (
        mix_peaks(counted, bins, bin_s, quantile_level=quantile_level,
                  basis=f"values of the label {mix_label} of {req.metric}")
        if counted.height else MixPeaks(available=False, reason="no complete bin")
    )
    lo, hi = float(bins.min()), float(bins.max() + bin_s)

    def in_range(w: pl.DataFrame) -> pl.DataFrame:
        return w.filter((pl.col("window_start_s") >= lo) & (pl.col("window_start_s") < hi))

    per: dict[str, MixCounts] = {}
    for mix, n in in_range(req.frame).group_by("mix").agg(pl.col("increase").sum()).sort("mix").iter_rows():
        per[mix] = MixCounts(mix=mix, n_requests=n)
    total = sum(float(r.n_requests) for r in per.values())
    for r in per.values():
        r.share = float(r.n_requests) / total if total else None
    for col in ("input_tokens", "output_tokens"):
        t = dict(in_range(tok[col].frame).group_by("mix").agg(pl.col("increase").sum()).iter_rows()) if col in tok \
            else {}
        for mix, r in per.items():
            setattr(r, f"mean_{col}", (t[mix] / float(r.n_requests)) if mix in t and r.n_requests else None)
    notes = []
    if req.resets:
        notes.append(f"{req.resets} counter reset(s) in {req.metric} (a restart): the increase after each is the new "
                     "value; requests between the last scrape before a restart and the restart are not seen")
    if req.gaps:
        notes.append(f"{req.gaps} gap(s) in {req.metric} series: each increase spread evenly over the missing steps")
    return MetricsSource(request_metric=req.metric, step_s=req.step_s, bin_s=bin_s, time_resolution_s=req.step_s,
                         mix_label=mix_label, n_series=req.n_series, counter_resets=req.resets, gaps=req.gaps,
                         token_metrics=MetricTokens(**names), per_mix=list(per.values()), mix_peaks=peaks,
                         unknowable=list(UNKNOWABLE), notes=notes, rules=RULES)


__all__ = ["REQUEST_COUNTERS", "RULES", "TOKEN_COUNTERS", "UNKNOWABLE", "CounterWindows", "counter_windows",
           "profile_metrics", "query_step"]
