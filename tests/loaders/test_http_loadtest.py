"""The plateau rule that cuts Locust/k6/JMeter ramps into steps, on series with known truth."""

from __future__ import annotations

import numpy as np
import pytest

from bearing_lib.loaders._http_loadtest import assign_steps, cut_plateaus, status_from_http


def test_stepped_ramp_with_jitter_and_gaps():
    # 0 users for 3 s, 10 users for 20 s, a 2 s ramp, 20 users for 15 s; 5 samples per second with
    # counter jitter at each transition, and a missing second inside the second plateau
    rng = np.random.default_rng(7)
    t, lv = [], []
    plan = [(0, 3, 0), (3, 23, 10), (23, 25, 15), (25, 40, 20)]
    for a, b, level in plan:
        for s in range(a, b):
            if s == 30:
                continue  # empty bin: neither extends nor breaks the plateau
            for k in range(5):
                jitter = level - 1 if (k == 0 and s == a and level) else level  # one stale sample per switch
                t.append(1000 + s + k / 5 + rng.uniform(0, 0.01))
                lv.append(jitter)
    ps = cut_plateaus(t, lv, min_hold_s=10)
    assert [(p.step, p.level, p.start_s - 1000, p.end_s - 1000) for p in ps] == [
        (0, 10.0, pytest.approx(3, abs=0.02), pytest.approx(23, abs=0.02)),
        (1, 20.0, pytest.approx(25, abs=0.02), pytest.approx(40, abs=0.02)),
    ]
    step, level = assign_steps(np.array([1001.0, 1010.0, 1024.0, 1039.5]), ps)
    assert step.tolist() == [-1, 0, -1, 1]
    assert np.isnan(level[0]) and level[1] == 10 and level[3] == 20


def test_short_holds_are_ramps_and_zero_is_skipped():
    t = np.arange(0, 30, 1.0)
    lv = np.concatenate([np.zeros(5), np.arange(1, 21), np.zeros(5)])  # 1 s per level, then stop
    assert cut_plateaus(t, lv, min_hold_s=10) == []
    assert [p.level for p in cut_plateaus(t, lv, min_hold_s=1)] == [float(x) for x in range(1, 21)]


@pytest.mark.parametrize(
    "code,status", [(200, "ok"), (304, "ok"), (429, "rejected"), (504, "timeout"), (500, "error"), (None, "error")]
)
def test_http_status_mapping(code, status):
    assert status_from_http(code) == status


def test_polars_status_matches_python():
    import polars as pl

    from bearing_lib.loaders._http_loadtest import status_expr

    codes = [200, 204, 301, 399, 400, 404, 408, 429, 500, 503, 504, None]
    got = pl.DataFrame({"c": codes}, schema={"c": pl.Int64}).select(status_expr(pl.col("c")).alias("s"))["s"].to_list()
    assert got == [status_from_http(c) for c in codes]


def test_plateau_invariants_property():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=60, deadline=None, derandomize=True)
    @given(
        st.lists(st.tuples(st.integers(0, 5), st.integers(1, 30)), min_size=1, max_size=12),
        st.floats(1.0, 20.0),
    )
    def check(segments, min_hold):
        t, lv, clock = [], [], 0
        for level, secs in segments:
            for s in range(secs):
                t.append(clock + s + 0.5)
                lv.append(level)
            clock += secs
        ps = cut_plateaus(t, lv, min_hold_s=min_hold)
        assert [p.step for p in ps] == list(range(len(ps)))
        for a, b in zip(ps, ps[1:], strict=False):
            assert a.end_s <= b.start_s  # ordered, never overlapping
        for p in ps:
            assert p.duration_s >= min_hold and p.level != 0
            inside = [v for x, v in zip(t, lv, strict=True) if p.start_s <= x < p.end_s]
            assert inside and set(inside) == {p.level}  # a step never mixes levels
        # every run of one level long enough (and not 0) is a step: merge equal neighbours first
        runs = []
        for level, secs in segments:
            if runs and runs[-1][0] == level:
                runs[-1][1] += secs
            else:
                runs.append([level, secs])
        assert len(ps) == sum(1 for level, secs in runs if level != 0 and secs >= min_hold)

    check()
