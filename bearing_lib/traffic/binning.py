"""Request counts per time bin, and the time grid a trace's timestamps allow.

The binning convention (stated in every profile):

* **Wall-clock traces** (``time_origin`` ``epoch``): bins are aligned to UTC wall-clock
  boundaries (a 60 s bin is ``[hh:mm:00, hh:mm+1:00)``); bins with no request count as
  zero; the partial first and last bins (the one holding the first request unless it
  starts exactly on a boundary, and the one holding the last request) are left out.
* **Relative-time traces** (``time_origin`` ``relative``, e.g. Mooncake): the clock has no
  wall-clock anchor, so bins start at the first request and the partial last bin is left
  out; the first bin is complete by construction.
* **Rate windows** (ServeGen): the source's own windows (seconds from the trace start),
  missing windows count as zero; the window is the finest bin.

Binning uses integer bin keys and one polars ``group_by``, so per-minute counts of a
10 M-row trace take a fraction of a second (``bench/bench_profile.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import polars as pl

from bearing_lib.common.errors import InsufficientDataError, ParameterError
from bearing_lib.data.ratewindows import RateWindows
from bearing_lib.data.trace import RequestTrace
from bearing_lib.traffic.document import GRID_TOLERANCE, MinuteSeries, TimestampResolution, WindowSeries

COUNT_COLUMNS = ("minute_start_s", "requests", "input_tokens", "output_tokens")

#: Timestamps whose smallest gap between distinct values is below this are "fine".
FINE_RESOLUTION_S = 1e-3
#: A grid fits when at least this share of gaps lies within 5 % of a whole number of steps.
GRID_FIT_SHARE = 0.99


def convention_text(time_origin: str, bin_s: float = 60.0) -> str:
    """The binning convention in words, for profiles, reports and the CLI."""
    if time_origin == "epoch":
        return (
            f"{bin_s:g} s bins aligned to UTC wall-clock boundaries; bins with no request count as zero; "
            "the partial first and last bins of the trace are left out"
        )
    if time_origin == "relative":
        return (
            f"the trace's clock is relative (seconds from its start), so bins cannot be aligned to wall-clock "
            f"minutes: {bin_s:g} s bins start at the first request; bins with no request count as zero; "
            "the partial last bin is left out"
        )
    raise ParameterError(f"time_origin {time_origin!r} has no binning convention; expected 'epoch' or 'relative'")


def _check_timed(trace: RequestTrace) -> None:
    if not isinstance(trace, RequestTrace):
        raise ParameterError(f"expected a RequestTrace, got {type(trace).__name__}")
    if trace.provenance.time_origin == "none":
        raise InsufficientDataError(
            f"{trace.provenance.source}: the source keeps no per-request times (time_origin 'none'), "
            "so requests cannot be counted per time bin"
        )
    if trace.frame.height == 0:
        raise InsufficientDataError(f"{trace.provenance.source}: the trace holds no requests")


def binned_counts(trace: RequestTrace, bin_s: float = 60.0, *, check_grid: bool = True) -> pl.DataFrame:
    """Requests and token sums per complete time bin (see the module's convention).

    Parameters
    ----------
    trace : RequestTrace
        A trace with per-request start times (``time_origin`` ``epoch`` or ``relative``).
    bin_s : float
        Bin length in seconds (60 = per minute).
    check_grid : bool
        Refuse bins finer than the timestamps' grid (:func:`timestamp_resolution`); pass
        ``False`` only when the caller has checked already.

    Returns
    -------
    polars.DataFrame
        ``bin_start_s`` (Float64, same clock as ``start_s``), ``requests`` (Int64),
        ``input_tokens`` and ``output_tokens`` (Int64 sums; null when the trace has no
        such field). Every complete bin appears, empty ones with zeros; zero rows when
        the trace is shorter than one complete bin.

    Raises
    ------
    ParameterError
        ``bin_s`` is not positive, or finer than the timestamps' grid (e.g. 1 s bins on
        Mooncake's 3 s steps: the counts would be artefacts of the grid).
    """
    _check_timed(trace)
    if not (bin_s > 0 and math.isfinite(bin_s)):
        raise ParameterError(f"bin_s must be a positive number of seconds, got {bin_s!r}")
    if check_grid:
        res = timestamp_resolution(trace)
        if not res.allows_bin(bin_s):
            raise ParameterError(
                f"{trace.provenance.source}: timestamps move in {res.quantum_s:.3f} s steps; {bin_s:g} s bins are "
                "finer than that grid and their counts would be artefacts of it"
            )
    f = trace.frame
    t_first, t_last = float(f["start_s"].min()), float(f["start_s"].max())
    origin = 0.0 if trace.provenance.time_origin == "epoch" else t_first
    k_first, k_end = bin_range(t_first, t_last, origin, bin_s)
    if k_end <= k_first:
        return empty_bins()
    agg = pl.concat(pl.collect_all(bin_partials(f.lazy(), origin, bin_s, k_first, k_end)))
    absent = tuple(f[col].null_count() == f.height for col in ("input_tokens", "output_tokens"))
    return finish_bins(agg, origin, bin_s, k_first, k_end, absent)


def bin_range(t_first: float, t_last: float, origin: float, bin_s: float) -> tuple[int, int]:
    """Keys ``[k_first, k_end)`` of the complete bins between the first and last request."""
    k_first = math.ceil((t_first - origin) / bin_s)
    k_end = math.floor((t_last - origin) / bin_s)  # bins k < k_end end at or before the last request
    return k_first, k_end


def empty_bins() -> pl.DataFrame:
    return pl.DataFrame(schema={"bin_start_s": pl.Float64(), "requests": pl.Int64(), "input_tokens": pl.Int64(),
                                "output_tokens": pl.Int64()})


def bin_partials(lf: pl.LazyFrame, origin: float, bin_s: float, k_first: int, k_end: int) -> list[pl.LazyFrame]:
    """The per-bin counts and token sums of the requests in ``lf`` (one lazy query, in a list).

    Partial: the counts of several partitions of one trace add up (:func:`finish_bins`
    sums them per bin), which is how the Dask engine combines its tasks.
    """
    key = ((pl.col("start_s") - origin) / bin_s).floor().cast(pl.Int64).alias("k")
    return [
        lf.select(key, "input_tokens", "output_tokens")
        .filter(pl.col("k").is_between(k_first, k_end - 1))
        .group_by("k")
        .agg(
            pl.len().cast(pl.Int64).alias("requests"),
            pl.col("input_tokens").sum(),
            pl.col("output_tokens").sum(),
        )
    ]


def finish_bins(agg: pl.DataFrame, origin: float, bin_s: float, k_first: int, k_end: int,
                absent: tuple[bool, bool]) -> pl.DataFrame:
    """Every complete bin ``[k_first, k_end)`` from (possibly several partitions') partial counts;
    ``absent`` says whether the trace has no input / output token counts at all."""
    agg = agg.group_by("k").agg(pl.col("requests", "input_tokens", "output_tokens").sum())
    full = pl.DataFrame({"k": pl.int_range(k_first, k_end, dtype=pl.Int64, eager=True)})
    out = full.join(agg, on="k", how="left").sort("k").with_columns(pl.col(pl.Int64).fill_null(0))
    tokens = [
        pl.lit(None, dtype=pl.Int64).alias(col) if gone else pl.col(col)
        for col, gone in zip(("input_tokens", "output_tokens"), absent, strict=True)
    ]
    return out.select(
        (pl.col("k").cast(pl.Float64) * bin_s + origin).alias("bin_start_s"),
        pl.col("requests"),
        *tokens,
    )


def per_minute_counts(trace: RequestTrace) -> pl.DataFrame:
    """Requests and tokens per complete minute: the profile's (and the elasticity replay's) series.

    Minutes are aligned to UTC wall-clock minutes for ``epoch`` traces and start at the
    first request for ``relative`` traces; empty minutes count as zero; the partial first
    and last minutes are left out (see :func:`convention_text`).

    Returns
    -------
    polars.DataFrame
        ``minute_start_s`` (Float64, epoch or relative seconds), ``requests`` (Int64,
        requests started in the minute), ``input_tokens`` and ``output_tokens`` (Int64
        sums, null when the trace lacks the field).

    Raises
    ------
    InsufficientDataError
        The trace keeps no per-request times.
    ParameterError
        The timestamps are quantized to steps longer than 60 s (beyond 5 % tolerance).
    """
    return binned_counts(trace, 60.0).rename({"bin_start_s": "minute_start_s"})


def resolution_of(n_requests: int, n_distinct: int, smallest_gap_s: float | None, quantum_s: float | None,
                  grid_fit_share: float | None) -> TimestampResolution:
    """The :class:`~bearing_lib.traffic.document.TimestampResolution` of what was measured, with its statement."""
    if n_distinct < 2:
        statement = f"all {n_requests:,} requests share one start time; no time grid can be measured"
    elif quantum_s is None:
        statement = (
            f"timestamps resolve finely: {n_distinct:,} distinct start times for {n_requests:,} "
            f"requests, smallest gap {smallest_gap_s:.3g} s; no grid coarser than "
            f"{FINE_RESOLUTION_S * 1e3:g} ms"
        )
    else:
        statement = (
            f"timestamps are quantized: {n_distinct:,} distinct start times for {n_requests:,} "
            f"requests, every gap a whole number of {quantum_s:.3f} s steps "
            f"({grid_fit_share:.1%} of gaps within {GRID_TOLERANCE:.0%} of the grid); "
            f"bins finer than {quantum_s:.3g} s are refused"
        )
    return TimestampResolution(n_requests=n_requests, n_distinct_start_times=n_distinct,
                               smallest_gap_s=smallest_gap_s, quantized=quantum_s is not None, quantum_s=quantum_s,
                               finest_bin_s=quantum_s, statement=statement, grid_fit_share=grid_fit_share)


def timestamp_resolution(trace: RequestTrace) -> TimestampResolution:
    """Find the grid of a trace's start times (e.g. Mooncake's ~3 s steps).

    The gaps between consecutive distinct start times are taken from the sorted trace.
    When the smallest gap is at least 1 ms, a step is estimated from the gaps below 1.5x
    the smallest one, refined as (sum of gaps) / (sum of whole steps), and the timestamps
    count as quantized when at least 99 % of gaps lie within 5 % of a whole number of
    steps (and there are at least 10 gaps). Hand-written (numpy) because no library
    offers this test; it is a few vector operations.
    """
    _check_timed(trace)
    f = trace.frame
    gaps = f.select(pl.col("start_s").diff().alias("d")).filter(pl.col("d") > 0)["d"].to_numpy()
    return resolution_from_gaps(f.height, gaps)


def resolution_from_gaps(n_requests: int, gaps: np.ndarray) -> TimestampResolution:
    """:func:`timestamp_resolution` from the gaps between consecutive distinct start times (in time order)."""
    n_distinct = int(gaps.size) + 1
    if gaps.size == 0:
        return resolution_of(n_requests, 1, None, None, None)
    dmin = float(gaps.min())
    if dmin < FINE_RESOLUTION_S or gaps.size < 10:
        return resolution_of(n_requests, n_distinct, dmin, None, None)
    q0 = float(np.median(gaps[gaps < 1.5 * dmin]))
    steps = np.maximum(np.rint(gaps / q0), 1.0)
    q = float(gaps.sum() / steps.sum())
    fit = float(np.mean(np.abs(gaps - np.rint(gaps / q) * q) <= GRID_TOLERANCE * q))
    if fit < GRID_FIT_SHARE:
        return resolution_of(n_requests, n_distinct, dmin, None, fit)
    return resolution_of(n_requests, n_distinct, dmin, q, fit)


@dataclass
class RateSeries:
    """A contiguous series of request counts per bin: what profiles and targets read.

    ``start_s`` are bin starts (epoch seconds when ``aligned``, else seconds on the
    source's relative clock), ``requests`` the requests per bin (a float: rate windows
    give mean rates, so ``rate * window`` need not be whole), ``origin_s`` the start of
    the relative clock (the first request, or 0 for rate windows), ``counts_are_integers``
    whether the counts are whole requests (written as integers).

    The computation's series, with its clock (``aligned``, ``origin_s``), not a part of the
    profile JSON: the profile writes its bins with :meth:`minute_series` (``per_minute.series``)
    or :meth:`window_series` (``per_window.series``).
    """

    bin_s: float
    start_s: np.ndarray
    requests: np.ndarray
    aligned: bool
    origin_s: float = 0.0
    counts_are_integers: bool = True

    def __post_init__(self) -> None:
        self.start_s = np.asarray(self.start_s, dtype=float)
        self.requests = np.asarray(self.requests, dtype=float)

    def __len__(self) -> int:
        return int(self.requests.size)

    @property
    def rate_rps(self) -> np.ndarray:
        """Mean requests per second in each bin."""
        return self.requests / self.bin_s

    @property
    def span_s(self) -> float:
        """Seconds covered by the complete bins."""
        return len(self) * self.bin_s

    def slot_clock_s(self) -> np.ndarray:
        """Bin starts on the clock that hour/day slots use: epoch seconds when aligned (UTC hours and
        weekdays), else seconds from the series' origin (hours and days counted from the start)."""
        return self.start_s if self.aligned else self.start_s - self.origin_s

    def _counts(self) -> list[float] | list[int]:
        return [int(x) for x in self.requests] if self.counts_are_integers else [float(x) for x in self.requests]

    def minute_series(self) -> MinuteSeries:
        """The series as the profile writes it in ``per_minute.series``: each minute's start and requests."""
        if self.bin_s != 60.0:
            raise ParameterError(f"bins of {self.bin_s:g} s are not minutes: write them as a window series")
        return MinuteSeries(minute_start_s=[float(x) for x in self.start_s], requests=self._counts())

    def window_series(self) -> WindowSeries:
        """The series as the profile writes it in ``per_window.series``: the window, each window's start and
        requests."""
        return WindowSeries(bin_s=float(self.bin_s), window_start_s=[float(x) for x in self.start_s],
                               requests=self._counts())


def series_from_trace(trace: RequestTrace, bin_s: float = 60.0) -> RateSeries:
    """The per-bin series of a request trace (``binned_counts`` as numpy arrays)."""
    counts = binned_counts(trace, bin_s)
    aligned = trace.provenance.time_origin == "epoch"
    origin = 0.0 if aligned else float(trace.frame["start_s"].min())
    return RateSeries(bin_s, counts["bin_start_s"].to_numpy(), counts["requests"].to_numpy(), aligned, origin)


def series_from_rate_windows(rates: RateWindows) -> RateSeries:
    """The aggregate (sum over clients) rate per window as a :class:`RateSeries`.

    Windows missing from the table inside its span count as zero. Raises
    :class:`ParameterError` when the windows do not share one length.
    """
    agg = rates.aggregate()
    if agg.height == 0:
        raise InsufficientDataError(f"{rates.provenance.source}: the rate table holds no windows")
    lengths = agg["window_s"].unique()
    if lengths.len() != 1:
        raise ParameterError(
            f"{rates.provenance.source}: windows of different lengths {sorted(lengths.to_list())}; "
            "expected one window length"
        )
    w = float(lengths[0])
    start = agg["window_start_s"].to_numpy()
    k = np.rint((start - start[0]) / w).astype(np.int64)
    rate = np.zeros(int(k.max()) + 1)
    rate[k] = agg["rate_rps"].to_numpy()
    aligned = rates.provenance.time_origin == "epoch"
    starts = start[0] + w * np.arange(rate.size)
    return RateSeries(w, starts, rate * w, aligned, origin_s=float(start[0]), counts_are_integers=False)
