"""Timestamp grid detection and bin refusal (SYNTHETIC traces with a known grid, and Mooncake)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bearing_lib import load_trace
from bearing_lib.common.errors import ParameterError
from bearing_lib.data.provenance import Provenance
from bearing_lib.data.trace import RequestTrace, conform, validate
from bearing_lib.traffic.binning import (
    RateSeries,
    binned_counts,
    convention_text,
    per_minute_counts,
    series_from_trace,
    timestamp_resolution,
)
from bearing_lib.traffic.profile import profile_traffic

T0 = 1_704_067_200.0


def _trace(times, source: str = "synthetic") -> RequestTrace:
    prov = Provenance(source=source, format="synthetic", tool="test", sha256="")
    return RequestTrace(validate(conform(pl.DataFrame({"start_s": np.asarray(times, dtype=float)})), prov), prov)


def test_whole_second_timestamps_have_a_one_second_grid():
    rng = np.random.default_rng(2)
    times = T0 + np.sort(rng.integers(0, 3600, size=5000)).astype(float)  # BurstGPT-like whole seconds
    res = timestamp_resolution(_trace(times))
    assert res.quantized and res.quantum_s == pytest.approx(1.0, abs=1e-9)
    assert res.allows_bin(1.0) and not res.allows_bin(0.5)
    d = profile_traffic(_trace(times), n_boot=20).to_dict()
    assert d["per_second"]["available"] is True
    assert d["dispersion"]["interarrival_cv"] is None  # quantized: gaps are grid artefacts


def test_fine_and_sparse_timestamps_are_not_a_grid():
    rng = np.random.default_rng(3)
    busy = T0 + np.cumsum(rng.exponential(0.2, 20_000))
    assert timestamp_resolution(_trace(busy)).quantized is False
    # sparse: 0.02 req/s, smallest gap well above 1 ms, yet no common step
    sparse = T0 + np.cumsum(rng.exponential(50.0, 500))
    res = timestamp_resolution(_trace(sparse))
    assert res.smallest_gap_s > 1e-3 and res.quantized is False and res.grid_fit_share < 0.5
    assert "resolve finely" in res.statement


@settings(max_examples=25, deadline=None)
@given(st.floats(0.5, 30.0), st.integers(0, 10_000))
def test_jittered_grid_step_is_recovered(step, seed):
    rng = np.random.default_rng(seed)
    k = np.sort(rng.choice(2000, size=400, replace=False))  # occupied grid points, gaps of 1+ steps
    jitter = rng.uniform(-0.001, 0.001, k.size) * step  # +-0.1 % of a step, like Mooncake's +-3 ms on 3 s
    times = np.repeat(k * step + jitter, 3)  # several requests share each grid time
    res = timestamp_resolution(_trace(times, "grid"))
    assert res.quantized
    assert res.quantum_s == pytest.approx(step, rel=2e-3)


def test_bins_finer_than_the_grid_are_refused(bundled):
    tr = load_trace(bundled("traces/mooncake-fast25/conversation_trace.jsonl"))
    with pytest.raises(ParameterError, match=r"3\.0\d\d s steps; 1 s bins are finer than that grid"):
        binned_counts(tr, 1.0)
    assert binned_counts(tr, 3.0).height > 0
    assert per_minute_counts(tr).height == 58
    with pytest.raises(ParameterError, match="positive"):
        binned_counts(tr, 0.0)
    # a grid coarser than a minute refuses per-minute counts and the profile
    coarse = RequestTrace(tr.frame.with_columns(pl.col("start_s") * 40), tr.provenance)  # ~120 s steps
    with pytest.raises(ParameterError, match=r"120\.\d+ s steps"):
        per_minute_counts(coarse)
    with pytest.raises(ParameterError, match="per-minute rates would be artefacts"):
        profile_traffic(coarse)


def test_convention_text_names_the_rule():
    assert "UTC wall-clock" in convention_text("epoch") and "left out" in convention_text("epoch")
    assert "first request" in convention_text("relative")
    with pytest.raises(ParameterError):
        convention_text("none")


def test_profile_html_escapes_untrusted_text():
    times = T0 + np.arange(0, 600, 0.5)
    tr = _trace(times, source="<script>alert(1)</script>.csv")
    html = profile_traffic(tr, n_boot=20)._repr_html_()
    assert "<script>" not in html and "&lt;script&gt;" in html


def test_the_series_is_written_as_the_profile_writes_its_bins():
    """A RateSeries (the computation's series, with its clock) writes itself as the profile's per_minute.series
    (whole requests as integers) or per_window.series (mean rates x window, as floats)."""
    rng = np.random.default_rng(4)
    times = T0 + 30.0 + np.sort(rng.uniform(0, 5 * 60, 400))  # five minutes after a partial first one
    tr = _trace(times)
    series = series_from_trace(tr)
    minute = series.minute_series()
    counted = np.histogram(times, bins=T0 + 60.0 * np.arange(1, 6))[0]  # the four complete minutes, by hand
    assert minute.minute_start_s == [T0 + 60.0 * k for k in range(1, 5)]
    assert minute.requests == counted.tolist() and all(type(n) is int for n in minute.requests)
    assert profile_traffic(tr, n_boot=0).per_minute.series == minute
    rates = RateSeries(600.0, [0.0, 600.0], [1.25 * 600, 0.5 * 600], aligned=False, counts_are_integers=False)
    window = rates.window_series()
    assert (window.bin_s, window.window_start_s, window.requests) == (600.0, [0.0, 600.0], [750.0, 300.0])
    assert window.to_dict() == {"bin_s": 600.0, "window_start_s": [0.0, 600.0], "requests": [750.0, 300.0]}
    with pytest.raises(ParameterError, match="not minutes"):
        rates.minute_series()
