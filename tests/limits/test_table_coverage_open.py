"""An open-loop load-point table's 95 % interval against the simulator oracle's known truth (round 25).

The oracle's stepped tests (``tests/oracle/acceptance.py``: 10 continuous steps of 120 s at Poisson rates from 0.4× to
1.6× the true limit, shifted per seed) written as a tool's table: per step the requests sent, those that succeeded,
the completions inside the step's window over its length (the completed rate a tool's summary reports) and the SLA
metric's P50/P90/P95/P99 over the successful requests (linear interpolation). A table cannot show whether a step's
queue settled, and a step just above the limit often ends before its queue breaks out: the tables' own pass/fail
bracket lies wholly above the truth in 64 of 180 seeds over the nine combinations (a passing step up to 11 % above
it). Measured (docs/limits.md, "Open-loop tables: the lag"), over the nine combinations × 20 seeds:
without a lag the interval covered 101 of 180 (raw bracket 106); with a table's percentile evidence lagging toward
the next lower load as a trace's does (``limits.evidence.table_lags``, ``evidence.TABLE_LAG``: the default since round
26) **174 of 180**, within ±10 % 168, median half-width 8-12 % (23 % on large/prefix). The three combinations
asserted here are those the lag changed most; both readings are asserted (the lag off by ``monkeypatch``)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from tests.oracle.acceptance import SEED_BASE, STEP_S, load_truth, rates_for
from tests.oracle.configs import MIXES, SERVERS, SLAS
from tests.oracle.simulator import stepped_run

pytestmark = pytest.mark.xdist_group("open_tables")  # one worker simulates the seeds once (module fixture)

COMBOS = ["small/chat", "large/chat", "kv_starved/rag"]
SEEDS = range(20)
RAW_COVERED = {"small/chat": 10, "large/chat": 13, "kv_starved/rag": 7}
"""Seeds of 20 whose raw bracket (the highest load whose P99 meets the threshold below the lowest that does not)
holds the truth, counted without bearing."""
FLOORS = {"small/chat": (19, 18), "large/chat": (19, 19), "kv_starved/rag": (19, 16)}
"""With the lag: (covered, within ±10 %) asserted; measured (20, 19), (20, 20), (20, 17) of 20."""
NO_LAG = {"small/chat": (11, 15), "large/chat": (13, 19), "kv_starved/rag": (7, 10)}
"""Without it (the default before round 26): (covered, within ±10 %) measured, asserted as they are: the interval
undercovers."""


def _table_rows(server: str, mix: str, truth: float, seed: int) -> tuple[list[dict], str, float]:
    sla = SLAS[(server, mix)][0]
    metric = "ttft_ms" if "ttft" in sla else "latency_ms"
    threshold_ms = float(sla.split("<=")[1].strip().rstrip("s")) * 1000.0
    rates = rates_for(truth, seed)
    df = stepped_run(SERVERS[server], MIXES[mix], rates, STEP_S, seed=SEED_BASE + seed, run_id=f"s{seed}")
    rows = []
    for i, r in enumerate(rates):
        d = df.filter(pl.col("step") == i)
        ok = d.filter(pl.col("status") == "ok")
        v = ok[metric].drop_nulls().to_numpy()
        done = df.filter((pl.col("status") == "ok") & (pl.col("end_s") >= i * STEP_S)
                         & (pl.col("end_s") < (i + 1) * STEP_S)).height
        rows.append({"run_id": "t", "step": i, "offered_load": float(r), "offered_load_unit": "rps",
                     "duration_s": STEP_S, "n_requests": d.height, "n_ok": ok.height, "n_errors": d.height - ok.height,
                     "throughput_rps": done / STEP_S,
                     **{f"{metric}_p{q}": float(np.quantile(v, q / 100, method="linear")) for q in (50, 90, 95, 99)}})
    return rows, metric, threshold_ms


def _raw_bracket(rows: list[dict], metric: str, threshold_ms: float) -> tuple[float | None, float | None]:
    ok = [(r["offered_load"], r[f"{metric}_p99"] <= threshold_ms) for r in rows]
    first_fail = next((x for x, good in ok if not good), None)
    last_pass = max((x for x, good in ok if good and (first_fail is None or x < first_fail)), default=None)
    return last_pass, first_fail


@pytest.fixture(scope="module")
def tables() -> dict[str, tuple[float, list[tuple[list[dict], str, float]]]]:
    truth = load_truth()
    out = {}
    for key in COMBOS:
        server, mix = key.split("/")
        t = float(truth[key]["q_ult_rps"])
        out[key] = (t, [_table_rows(server, mix, t, seed) for seed in SEEDS])
    return out


def test_the_raw_bracket_of_the_oracles_tables_misses_the_truth_often(tables):
    for key, (t, seeds) in tables.items():
        covered = 0
        for rows, metric, thr in seeds:
            lo, hi = _raw_bracket(rows, metric, thr)
            covered += lo is not None and hi is not None and lo <= t <= hi
        assert covered == RAW_COVERED[key], key


@pytest.mark.parametrize("lag", [False, True])
def test_an_open_loop_tables_interval_covers_the_true_limit(tables, lag, monkeypatch):
    from bearing_lib.data.loadpoints import LoadPointTable, conform_loadpoints
    from bearing_lib.data.provenance import Provenance
    from bearing_lib.limits import evidence
    from bearing_lib.limits.fit import fit_limits

    monkeypatch.setattr(evidence, "TABLE_LAG", lag)

    for key, (t, seeds) in tables.items():
        server, mix = key.split("/")
        covered = within = 0
        for seed, (rows, metric, thr) in zip(SEEDS, seeds, strict=True):
            table = LoadPointTable(conform_loadpoints(rows), Provenance(
                source=f"SIMULATED oracle table {key} {seed}", format="t", tool="t", sha256=""))
            q = fit_limits(table, SLAS[(server, mix)][0], mixes="none", n_boot=0).limits[0].q_ult
            lo, hi = q.ci95 if q.ci95 is not None else (None, None)
            covered += lo is not None and hi is not None and lo <= t <= hi
            within += q.value is not None and abs(q.value / t - 1.0) <= 0.10
            last_pass, first_fail = _raw_bracket(rows, metric, thr)
            if q.value is not None and last_pass is not None and first_fail is not None and q.censored == "none":
                assert last_pass <= q.value <= first_fail, (key, seed)  # a table's value stays in its own bracket
        if lag:
            assert covered >= FLOORS[key][0] and within >= FLOORS[key][1], (key, covered, within)
        else:
            assert (covered, within) == NO_LAG[key], key
