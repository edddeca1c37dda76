"""SLO error budget on a SYNTHETIC status series whose answer is worked out by hand.

120 minutes from 2024-01-01 00:00 UTC, 100 requests per minute (12,000 requests);
minutes 30-39 each hold 50 errors (500 bad). Objective 99.9 % over 30 days:

* mean rate = 12,000 / 7,200 s = 5/3 req/s; the request budget is 0.001 x 5/3 x 30 x
  86,400 = 4,320 bad requests; consumed 500 / 4,320 = 11.574 %.
* error ratio 500 / 12,000 = 1/24, burn rate (1/24) / 0.001 = 41.67; the budget would last
  30 / 41.67 = 0.72 days.
* time budget 0.001 x 30 x 1,440 = 43.2 min; 10 bad minutes (50 % errors > 0.1 %) = 23.15 %.
* fastest 1 h: any hour holding minutes 30-39: 500 bad of 6,000 -> burn 83.3, 11.574 % of
  the budget >= 10 % -> the "10 % in 1 h -> ticket" rule fires. Fastest 5 min: 250 bad of
  500 -> burn 500, 5.787 %. A 6 h window does not fit in 2 h.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from bearing_lib.common.unavailable import Unavailable
from bearing_lib.data.provenance import Provenance
from bearing_lib.data.trace import RequestTrace, conform, validate
from bearing_lib.traffic.document import SLOBudget
from bearing_lib.traffic.slo_budget import BurnAlertRule, slo_budget

T0 = 1_704_067_200.0


def _trace(with_status: bool = True) -> RequestTrace:
    times, status = [], []
    for m in range(120):
        for j in range(100):
            times.append(T0 + m * 60 + j * 0.6)
            status.append("error" if 30 <= m < 40 and j < 50 else "ok")
    frame = pl.DataFrame({"start_s": times, "status": status if with_status else [None] * len(times)},
                         schema_overrides={"status": pl.String})
    prov = Provenance(source="synthetic-status", format="synthetic", tool="test", sha256="")
    return RequestTrace(validate(conform(frame), prov), prov)


def test_budget_consumption_and_burn_by_hand():
    b = slo_budget(_trace(), objective=0.999, period_days=30)
    assert isinstance(b, SLOBudget)
    assert (b.n_requests, b.n_bad, b.span_s) == (12_000, 500, 7_200.0)
    assert b.budget.requests == pytest.approx(4_320.0, rel=1e-12)
    assert b.consumed.fraction == pytest.approx(500 / 4_320, rel=1e-12)
    assert b.error_ratio == pytest.approx(1 / 24)
    assert b.burn_rate == pytest.approx(1000 / 24, rel=1e-9)
    assert b.budget.minutes == pytest.approx(43.2)
    assert b.consumed.bad_minutes == 10
    assert b.consumed.minutes_fraction == pytest.approx(10 / 43.2)
    d = b.to_dict()
    assert d["days_to_exhaust_at_this_burn"] == pytest.approx(30 / (1000 / 24))
    win = {w["window_s"]: w for w in d["fastest_burn"]}
    assert win[3600.0]["n_bad"] == 500 and win[3600.0]["n_requests"] == 6_000
    assert win[3600.0]["burn_rate"] == pytest.approx(500 / 6_000 / 0.001)
    assert win[3600.0]["budget_fraction"] == pytest.approx(500 / 4_320)
    assert win[300.0]["n_bad"] == 250 and win[300.0]["burn_rate"] == pytest.approx(500.0)
    assert win[300.0]["start_s"] == T0 + 30 * 60  # the first 5-minute window holding 250 bad requests
    assert win[21_600.0]["available"] is False and "does not fit" in win[21_600.0]["reason"]
    (alert,) = d["alerts"]
    assert alert["fired"] is True and "10% of the budget within 1 h -> ticket" == alert["rule"]


def test_alert_does_not_fire_below_its_share_and_custom_rules():
    b = slo_budget(_trace(), alert_rules=(BurnAlertRule(3600, 0.12, "page"), BurnAlertRule(86_400, 0.5)))
    a1, a2 = b.to_dict()["alerts"]
    assert a1["fired"] is False and a1["worst_budget_fraction"] == pytest.approx(500 / 4_320)
    assert a2["fired"] is None and "shorter" in a2["reason"]
    # the JSON entry holds the worst window or the reason, never both (as when the alerts were dicts)
    assert list(a1) == ["rule", "fired", "worst_budget_fraction", "window_start_s"] and list(a2) == ["rule", "fired",
                                                                                                     "reason"]
    assert BurnAlertRule(3600, 0.10).burn_rate_threshold == pytest.approx(72.0)


def test_cancelled_is_not_bad_and_missing_status_is_counted():
    tr = _trace()
    f = tr.frame.with_columns(
        pl.when(pl.col("status") == "error").then(pl.lit("cancelled")).otherwise(pl.col("status")).alias("status")
    )
    f = f.with_columns(pl.when(pl.int_range(pl.len()) < 7).then(None).otherwise(pl.col("status")).alias("status"))
    b = slo_budget(RequestTrace(f, tr.provenance))
    # the 500 cancelled requests are neither good nor bad (docs/canonical-trace.md, "Status values"):
    # out of the ratio like the 7 without a status, and said so
    assert b.n_bad == 0 and b.n_no_status == 7 and b.n_requests == 12_000 - 7 - 500
    assert any("7 request(s) carry no status" in n for n in b.notes)
    assert any("500 request(s) have no outcome" in n for n in b.notes)
    # counted as bad when asked to
    b2 = slo_budget(RequestTrace(f, tr.provenance), bad_statuses=("error", "cancelled"))
    assert b2.n_bad == 500 and b2.n_requests == 12_000 - 7


def test_unknown_outcomes_are_left_out_of_the_ratio():
    """Minutes 30-39 hold 50 errors each; turn 25 of each minute's 50 ok requests into ``unknown``:
    500 bad of 12,000 − 250 = 11,750 requests with an outcome."""
    tr = _trace()
    j = (pl.int_range(pl.len()) % 100)
    m = (pl.int_range(pl.len()) // 100)
    f = tr.frame.with_columns(pl.when(m.is_between(30, 39) & (j >= 50) & (j < 75)).then(pl.lit("unknown"))
                              .otherwise(pl.col("status")).alias("status"))
    b = slo_budget(RequestTrace(f, tr.provenance))
    assert (b.n_requests, b.n_bad) == (11_750, 500)
    assert b.error_ratio == pytest.approx(500 / 11_750)
    win = {w["window_s"]: w for w in b.to_dict()["fastest_burn"]}
    assert win[300.0]["n_bad"] == 250 and win[300.0]["n_requests"] == 375  # 5 minutes x (100 - 25)


def test_no_status_is_unavailable_with_reason():
    b = slo_budget(_trace(with_status=False))
    assert isinstance(b, Unavailable) and "no status" in b.reason
    assert b.to_dict() == {"available": False, "reason": b.reason}


def test_rolling_windows_match_a_brute_force_scan():
    rng = np.random.default_rng(3)
    times, status = [], []
    for m in range(90):
        n = int(rng.integers(1, 30))
        for j in range(n):
            times.append(T0 + m * 60 + j * 60 / n)
            status.append("timeout" if rng.random() < 0.05 else "ok")
    prov = Provenance(source="synthetic", format="synthetic", tool="test", sha256="")
    tr = RequestTrace(validate(conform(pl.DataFrame({"start_s": times, "status": status})), prov), prov)
    b = slo_budget(tr, windows_s=(600.0,), alert_rules=())
    minute = [int((t - T0) // 60) for t in times]
    bad = np.bincount(minute, weights=[s == "timeout" for s in status], minlength=90)
    best = max(bad[i : i + 10].sum() for i in range(81))
    (w,) = b.fastest_burn
    assert w.n_bad == best


def test_profile_carries_the_budget():
    from bearing_lib.traffic.profile import profile_traffic

    d = profile_traffic(_trace(), n_boot=50).to_dict()["slo_budget"]
    assert d["available"] is True and d["consumed"]["requests"] == 500
    assert d["consumed"]["fraction"] == pytest.approx(500 / 4_320)
