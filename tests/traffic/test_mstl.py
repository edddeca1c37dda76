"""The numpy MSTL (traffic/mstl.py) against statsmodels' own MSTL on SYNTHETIC hourly series."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bearing_lib.traffic.mstl import TOLERANCE, mstl

from .test_seasonality import T0, _cycles


def _statsmodels(y: np.ndarray, periods: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """statsmodels' MSTL with its defaults, keeping a period of exactly half the series (as decompose does)."""
    from statsmodels.tsa.seasonal import MSTL

    class _MSTL(MSTL):
        def _process_periods_and_windows(self, periods, windows):  # noqa: ANN001, ANN202
            ps = tuple(sorted(periods))
            ws = tuple(7 + 4 * i for i in range(1, len(ps) + 1))
            return tuple(p for p in ps if 2 * p <= self.nobs), ws[: len(ps)]

    res = _MSTL(y, periods=periods).fit()
    seas = np.asarray(res.seasonal)
    return np.asarray(res.trend), (seas[None, :] if seas.ndim == 1 else seas.T), np.asarray(res.resid)


@pytest.mark.parametrize(("n", "periods"), [
    (48, (24,)),  # exactly two days
    (59, (24,)),  # ragged: cycle-subseries of two lengths
    (168, (24,)),  # a week of hours, the benchmark's trace
    (336, (168, 24)),  # exactly two weeks (ServeGen), periods given out of order
    (401, (24, 168)),  # ragged, both periods
])
def test_equals_statsmodels(n: int, periods: tuple[int, ...]) -> None:
    rng = np.random.default_rng(n)
    t = np.arange(n)
    y = 80 + 0.03 * t + 25 * np.sin(2 * np.pi * t / 24) + 9 * np.sin(2 * np.pi * t / 168) + rng.normal(0, 3, n)
    y[n // 3] += 60  # a burst: the loess weights must not care
    trend, seas, resid = _statsmodels(y, periods)
    fit = mstl(y, periods)
    assert fit.periods == tuple(sorted(periods))
    scale = float(np.abs(y).max())
    np.testing.assert_allclose(fit.trend, trend, rtol=TOLERANCE, atol=TOLERANCE * scale)
    np.testing.assert_allclose(fit.seasonal, seas, rtol=TOLERANCE, atol=TOLERANCE * scale)
    np.testing.assert_allclose(fit.resid, resid, rtol=TOLERANCE, atol=TOLERANCE * scale)
    # the components add up to the series, as in any additive decomposition
    np.testing.assert_allclose(fit.trend + fit.seasonal.sum(axis=0) + fit.resid, y, rtol=1e-12)


def test_rejects_a_period_longer_than_half_the_series() -> None:
    with pytest.raises(ValueError, match="at most half the series"):
        mstl(np.arange(300.0), (24, 168))


def test_profile_decomposition_does_not_import_statsmodels() -> None:
    """decompose() on a two-week series: the same numbers as statsmodels, and no statsmodels / pandas / scipy
    import in the process (the ~1.2-2 s of CPU the port removes)."""
    code = (
        "import json, sys, numpy as np\n"
        "from bearing_lib.traffic.binning import RateSeries\n"
        "from bearing_lib.traffic.seasonality import decompose\n"
        "from tests.traffic.test_seasonality import T0, _cycles\n"
        "r = _cycles(14)\n"
        "d = decompose(RateSeries(60.0, T0 + np.arange(r.size) * 60.0, r * 60.0, aligned=True))\n"
        "print(json.dumps({'mods': sorted(m for m in ('statsmodels', 'pandas', 'scipy') if m in sys.modules),\n"
        "                  'trend': d.series['trend_rps'], 'daily': d.series['seasonal_daily_rps'],\n"
        "                  'weekly': d.series['seasonal_weekly_rps']}))\n"
    )
    out = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                    cwd=str(Path(__file__).resolve().parents[2])).stdout)
    assert out["mods"] == []
    rate = _cycles(14)
    hourly = rate.reshape(-1, 60).mean(axis=1)  # the hourly means, by hand
    trend, seas, _ = _statsmodels(hourly, (24, 168))
    scale = float(hourly.max())
    np.testing.assert_allclose(out["trend"], trend, rtol=TOLERANCE, atol=TOLERANCE * scale)
    np.testing.assert_allclose(out["daily"], seas[0], rtol=TOLERANCE, atol=TOLERANCE * scale)
    np.testing.assert_allclose(out["weekly"], seas[1], rtol=TOLERANCE, atol=TOLERANCE * scale)
    assert T0 % 3600 == 0  # whole hours: the 336 complete hours are the reshape above
