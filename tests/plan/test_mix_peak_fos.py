"""FOS per mix against the mix's own peak, beside the share-of-overall figure (``plan/fos.py``, ``MixPeakFos``).

Expected values: the per-minute counts of each mix are taken from the raw Azure conversation CSV with ``csv``
and ``collections.Counter`` (not bearing's binning), the linear P99 by hand; the limits are the hand-made ones of
``tests/fixtures/plan/limits_handmade.json`` (short 12.0 req/s, long 4.0 req/s, split at 1,024 input tokens).
"""

from __future__ import annotations

import csv
import json
import math
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bearing_lib import load_trace
from bearing_lib.data.mixes import MixSpec
from bearing_lib.plan.capacity_plan import CapacityPlan, read_json
from bearing_lib.traffic.profile import profile_traffic

LIMITS = Path(__file__).resolve().parents[1] / "fixtures" / "plan" / "limits_handmade.json"
CONV = "traces/azure-llm-inference-2023/AzureLLMInferenceTrace_conv.csv"
Q_ULT = {"short": 12.0, "long": 4.0}


def _linear(v: list[float], q: float) -> float:
    s = sorted(v)
    pos = (len(s) - 1) * q
    i = math.floor(pos)
    return s[i] + (s[min(i + 1, len(s) - 1)] - s[i]) * (pos - i)


def _per_minute_by_hand(path: Path) -> tuple[dict[str, list[int]], list[int]]:
    """Requests per complete UTC minute of each mix (input < 1,024 tokens: short), from the raw CSV."""
    times, long_ = [], []
    with open(path, newline="") as fh:
        for r in csv.DictReader(fh):
            ts = r["TIMESTAMP"]
            t = datetime.strptime(ts[:26], "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=UTC).timestamp()
            times.append(t + int(ts[26:] or 0) * 1e-7)
            long_.append(int(r["ContextTokens"]) >= 1024)
    keys = range(math.ceil(min(times) / 60), math.floor(max(times) / 60))  # partial first and last minutes out
    c = {m: Counter(math.floor(t / 60) for t, lg in zip(times, long_, strict=True) if lg == (m == "long"))
         for m in ("short", "long")}
    per = {m: [c[m].get(k, 0) for k in keys] for m in c}
    return per, [a + b for a, b in zip(per["short"], per["long"], strict=True)]


@pytest.fixture(scope="module")
def conv_plan():
    from tests.conftest import BUNDLED

    path = BUNDLED / CONV
    limits = read_json(LIMITS, "limits")
    prof = profile_traffic(load_trace(path), mix_spec=MixSpec.from_dict(limits["mix_spec"]), n_boot=50)
    return path, limits, prof


def test_fos_per_mix_against_its_own_peak_on_the_azure_conversation_trace(conv_plan):
    path, limits, prof = conv_plan
    per, total = _per_minute_by_hand(path)
    p99_all = _linear(total, 0.99) / 60
    plan = CapacityPlan.build(limits, prof)
    assert plan.target.rps == pytest.approx(p99_all, rel=1e-12)
    for m in plan.fos.per_mix:
        own = _linear(per[m.mix], 0.99) / 60
        share = sum(per[m.mix]) / sum(total)
        o = m.own_peak
        assert o is not None and o.quantile == 0.99 and o.bin_s == 60.0
        assert o.own_peak_rps == pytest.approx(own, rel=1e-12)
        assert o.share_method_rps == pytest.approx(share * p99_all, rel=1e-12)
        assert o.fos.value == pytest.approx(Q_ULT[m.mix] / own, rel=1e-12)
        assert o.fos_share_method == pytest.approx(Q_ULT[m.mix] / (share * p99_all), rel=1e-12)
        assert o.differs is (own > 1.1 * share * p99_all)
        # the CI is the limit's alone (the own peak has none): it brackets the value
        assert o.fos.ci95[0] < o.fos.value < o.fos.ci95[1]
        # the "all traffic as this mix" FOS and the blend are unchanged
        assert m.fos.value == pytest.approx(Q_ULT[m.mix] / p99_all, rel=1e-12)
    short = next(m for m in plan.fos.per_mix if m.mix == "short").own_peak
    # the short mix's busiest minutes are not the overall busiest ones: its own P99 is well above its share
    assert short.differs and short.own_over_share > 1.2
    assert "share method overstates" in short.statement
    # the plan JSON carries it and reads back as the same object
    d = json.loads(json.dumps(plan.to_dict(), allow_nan=False))
    assert CapacityPlan.from_dict(d).fos.per_mix == plan.fos.per_mix


def test_own_peaks_from_the_profile_json_and_scaled_by_growth(conv_plan):
    path, limits, prof = conv_plan
    per, total = _per_minute_by_hand(path)
    doc = json.loads(json.dumps(prof.to_dict(), allow_nan=False))
    plan = CapacityPlan.build(limits, doc, growth=2.0)
    for m in plan.fos.per_mix:
        own = 2.0 * _linear(per[m.mix], 0.99) / 60
        assert m.own_peak.own_peak_rps == pytest.approx(own, rel=1e-9)
        assert m.own_peak.fos.value == pytest.approx(Q_ULT[m.mix] / own, rel=1e-9)
        assert "peaks × 2" in m.own_peak.statement


def test_no_own_peak_without_per_mix_peaks():
    plan = CapacityPlan.from_files(LIMITS, LIMITS.parent / "profile_handmade.json")
    assert all(m.own_peak is None for m in plan.fos.per_mix)
    assert all("own_peak" not in m for m in plan.to_dict()["fos"]["per_mix"])
