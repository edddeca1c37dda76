"""A load-point table's 95 % interval against a simulation with known truth: a closed loop summarised as tables.

``tests/limits/closed_loop.py``'s closed M/M/4//N loop (users with 3 s think time, 4 slots of 1 s service), whose
``p95(latency) <= 4s`` starts to fail at 17.25 users (``test_completed_coverage.TRUE_USERS``), tested at 4, 8, ...,
32 users, each step a separate run that starts empty, and written as a load-point table: each step's request count
and its latency's P50, P90, P95 and P99 (linear interpolation), as vLLM's or GuideLLM's summaries give them. The
steps' latencies are not independent (slow requests come in queue episodes) and the share above 4 s rises slowly
(0.039 at 16 users, 0.058 at 18), so the tool's own pass/fail bracket misses the truth often: in 32 of 100 seeds with
120 s steps, 11 of 100 with 300 s (:func:`test_the_raw_bracket_misses_the_truth_often`). Measured (round 24,
docs/limits.md "Load-point tables: coverage on a simulation"): with sampling noise only (``model.TABLE_CONCENTRATIONS``,
no floor for percentiles) the interval covered 76 of 100 (61 at 300 s), median half-width 5.5 %; with a floor below
the allowance and ``model.TABLE_PERCENTILE_CONCENTRATIONS``, 88 of 100 (94 at 300 s), half-width 19 % (18 %)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.limits import closed_loop as cl
from tests.limits.test_completed_coverage import TRUE_USERS

USERS = [4, 8, 12, 16, 20, 24, 28, 32]
SLA = "p95(latency) <= 4s"


def _table_rows(seed: int, step_s: float) -> list[dict]:
    rng = np.random.default_rng(5000 + seed)
    rows = []
    for i, n in enumerate(USERS):
        s, e = cl.simulate(n, step_s, rng)
        lat = (e - s) * 1000.0
        rows.append({"run_id": "t", "step": i, "offered_load": float(n), "offered_load_unit": "concurrency",
                     "duration_s": step_s, "n_requests": int(lat.size), "n_ok": int(lat.size), "n_errors": 0,
                     "throughput_rps": lat.size / step_s,
                     **{f"latency_ms_p{q}": float(np.quantile(lat, q / 100, method="linear"))
                        for q in (50, 90, 95, 99)}})
    return rows


def _bracket(rows: list[dict]) -> tuple[float | None, float | None]:
    """The raw bracket: the highest load whose reported P95 meets 4 s below the lowest that does not."""
    ok = [(r["offered_load"], r["latency_ms_p95"] <= 4000.0) for r in rows]
    first_fail = next((x for x, good in ok if not good), None)
    last_pass = max((x for x, good in ok if good and (first_fail is None or x < first_fail)), default=None)
    return last_pass, first_fail


def test_the_raw_bracket_misses_the_truth_often():
    # the design's difficulty, measured without bearing: the reported P95s' own bracket around 17.25 users
    misses = {}
    for step_s in (120.0, 300.0):
        misses[step_s] = 0
        for seed in range(100):
            lo, hi = _bracket(_table_rows(seed, step_s))
            misses[step_s] += not (lo is not None and hi is not None and lo <= TRUE_USERS <= hi)
    assert misses == {120.0: 32, 300.0: 11}


@pytest.mark.parametrize(("step_s", "floor"), [(120.0, 85), (300.0, 90)])
def test_a_tables_interval_covers_the_true_limit(step_s, floor):
    """100 seeds; measured 88 (120 s) and 94 (300 s) of 100; asserted at 85 and 90."""
    from bearing_lib.data.loadpoints import LoadPointTable, conform_loadpoints
    from bearing_lib.data.provenance import Provenance
    from bearing_lib.limits.fit import fit_limits

    covered = 0
    for seed in range(100):
        rows = _table_rows(seed, step_s)
        table = LoadPointTable(conform_loadpoints(rows), Provenance(source=f"SIMULATED closed-loop table {seed}",
                                                                    format="t", tool="t", sha256=""))
        q = fit_limits(table, SLA, mixes="none", n_boot=0).limits[0].q_ult
        lo, hi = q.ci95 if q.ci95 is not None else (None, None)
        covered += lo is not None and hi is not None and lo <= TRUE_USERS <= hi
        last_pass, first_fail = _bracket(rows)
        if q.value is not None and last_pass is not None and first_fail is not None:
            assert last_pass <= q.value <= first_fail  # a table's value stays in its own bracket
    assert covered >= floor, covered
