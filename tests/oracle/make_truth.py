"""TEST ORACLE: compute the true SLA limit of every (server, mix) combination -> truth.json.

Run from the repository root (takes a few minutes on one core)::

    PYTHONPATH=. nice python tests/oracle/make_truth.py

Method (independent of ``bearing_lib``: numpy only, its own SLA reading):

* The true limit is the highest Poisson arrival rate (rps) at which the server's
  *steady-state* SLA statistic meets the threshold. For ``pQ(metric) <= X`` the
  statistic is the linear-interpolated Q-quantile of ``metric`` over the ok requests that
  arrive after a warm-up; a rate at which more than 1% of requests time out or are
  rejected fails too (no reading of a latency SLA passes it; it never decides a limit
  here: at every truth below timeouts are 0).
* One *replicate* is a long run of ``DURATION_S`` seconds per rate (the first
  ``WARMUP_S`` discarded) with common random numbers: unit-rate exponential gaps and
  request lengths are drawn once per replicate seed, and the arrival times at rate r
  are those gaps divided by r. The SLA margin is then (nearly) monotone in r, so
  bisection on log(rate) converges; it stops at ``REL_TOL`` relative width.
* Each replicate's crossing is checked on a grid at 1% spacing (0.90x-1.10x): the
  grid's last passing rate must sit within one grid step of the bisection's answer.
* The truth is the mean of ``N_REPLICATES`` replicate crossings (independent seeds);
  the file records their SD and the mean's standard error: the truth's own uncertainty,
  which must be small against the +-10% the acceptance test allows.

``truth.json`` records the definitions hash (configs.py), simulator.py's hash, seeds, durations, tolerance,
grid, every replicate's crossing, the SLA statistic on the grid, and this script's
runtime. The tests refuse a truth.json whose hashes do not match configs.py and simulator.py.
"""

from __future__ import annotations

import json
import math
import platform
import re
import sys
import time
from pathlib import Path

import numpy as np

from tests.oracle.configs import MIXES, SERVERS, SLAS, combinations, definitions_hash, simulator_hash
from tests.oracle.simulator import MixModel, ServerConfig, simulate

HERE = Path(__file__).resolve().parent
TRUTH_PATH = HERE / "truth.json"

DURATION_S = 7200.0
WARMUP_S = 600.0
N_REPLICATES = 6
REL_TOL = 0.0025
GRID = [round(0.90 + 0.01 * i, 2) for i in range(21)]
BRACKET_RPS = (0.5, 400.0)
MAX_BAD_FRACTION = 0.01
SEED_BASE = 20261129

_CLAUSE = re.compile(r"^p(\d+(?:\.\d+)?)\((ttft|latency|tpot)\)\s*(<=|<)\s*([\d.]+)\s*(ms|s)$")


def parse_clause(text: str) -> tuple[float, str, float]:
    """``p99(ttft) <= 1s`` -> (0.99, "ttft", 1000.0 ms). Only what configs.py uses."""
    m = _CLAUSE.match(text.strip())
    if not m:
        raise ValueError(f"oracle SLA reader does not understand {text!r}")
    q, metric, _op, value, unit = m.groups()
    return float(q) / 100.0, metric, float(value) * (1000.0 if unit == "s" else 1.0)


class Replicate:
    """Common random numbers for one replicate: unit-rate gaps and request lengths."""

    def __init__(self, mix: MixModel, seed: int, max_rate: float) -> None:
        rng = np.random.default_rng(seed)
        n = int(max_rate * DURATION_S * 1.05) + 1000
        self.unit_times = np.cumsum(rng.exponential(1.0, n))
        self.inp, self.out, self.cached = mix.draw(rng, n)

    def margin(self, cfg: ServerConfig, clauses: list[tuple[float, str, float]], rate: float) -> float:
        """max over clauses of statistic / threshold - 1 (> 0 fails) at ``rate``."""
        t = self.unit_times / rate
        n = int(np.searchsorted(t, DURATION_S))
        if n >= t.size:
            raise RuntimeError("replicate stream too short for this rate")
        t = t[:n]
        res = simulate(cfg, t, self.inp[:n], self.out[:n], self.cached[:n])
        keep = t >= WARMUP_S
        st = res["status_code"][keep]
        bad = float(np.mean(st != 0))
        ok = st == 0
        values = {
            "ttft": (res["first_token_s"][keep] - t[keep])[ok] * 1000.0,
            "latency": (res["end_s"][keep] - t[keep])[ok] * 1000.0,
        }
        out_k = self.out[:n][keep][ok]
        with np.errstate(invalid="ignore", divide="ignore"):
            tp = (res["end_s"][keep] - res["first_token_s"][keep])[ok] * 1000.0 / (out_k - 1)
        values["tpot"] = tp[out_k > 1]
        worst = -math.inf
        for q, metric, thr in clauses:
            stat = float(np.quantile(values[metric], q, method="linear"))
            worst = max(worst, stat / thr - 1.0)
        if bad > MAX_BAD_FRACTION:
            worst = max(worst, bad / MAX_BAD_FRACTION - 1.0)
        return worst


def crossing(rep: Replicate, cfg: ServerConfig, clauses: list[tuple[float, str, float]]) -> tuple[float, int]:
    """Bisection on log(rate): highest passing rate to REL_TOL; returns (rate, evaluations)."""
    lo, hi = BRACKET_RPS
    if rep.margin(cfg, clauses, lo) > 0 or rep.margin(cfg, clauses, hi) <= 0:
        raise RuntimeError(f"{cfg.name}: bracket {BRACKET_RPS} does not contain the limit")
    evals = 2
    while hi / lo - 1.0 > REL_TOL:
        mid = math.sqrt(lo * hi)
        evals += 1
        if rep.margin(cfg, clauses, mid) <= 0:
            lo = mid
        else:
            hi = mid
    return math.sqrt(lo * hi), evals


def main() -> int:
    t_start = time.perf_counter()
    results = {}
    for ci, (sname, mname) in enumerate(combinations()):
        cfg, mix = SERVERS[sname], MIXES[mname]
        sla = SLAS[(sname, mname)]
        clauses = [parse_clause(c) for c in sla]
        reps, grids, seeds = [], [], []
        t0 = time.perf_counter()
        for r in range(N_REPLICATES):
            seed = SEED_BASE + 1000 * ci + r
            seeds.append(seed)
            rep = Replicate(mix, seed, BRACKET_RPS[1])
            x, _ = crossing(rep, cfg, clauses)
            margins = [rep.margin(cfg, clauses, x * g) for g in GRID]
            passing = [g for g, m in zip(GRID, margins, strict=True) if m <= 0]
            last_pass = max(passing) if passing else None
            if last_pass is None or abs(last_pass - 1.0) > 0.0101 + REL_TOL:
                print(f"  WARNING {sname}/{mname} rep {r}: grid last pass {last_pass} vs bisection 1.0", flush=True)
            reps.append(x)
            grids.append([round(m, 4) for m in margins])
        arr = np.asarray(reps)
        truth = float(arr.mean())
        sd = float(arr.std(ddof=1))
        results[f"{sname}/{mname}"] = {
            "server": sname,
            "mix": mname,
            "sla": sla,
            "q_ult_rps": round(truth, 4),
            "replicate_rps": [round(v, 4) for v in reps],
            "replicate_sd_rps": round(sd, 4),
            "stderr_rps": round(sd / math.sqrt(len(reps)), 4),
            "relative_sd": round(sd / truth, 5),
            "seeds": seeds,
            "grid_multipliers": GRID,
            "grid_margins": grids,
            "seconds": round(time.perf_counter() - t0, 1),
        }
        secs = results[f"{sname}/{mname}"]["seconds"]
        print(f"{sname}/{mname}: truth {truth:.3f} rps (sd {sd:.3f}, {sd / truth:.2%}) {secs} s", flush=True)
    doc = {
        "what": "true SLA limits (offered Poisson rps) of the oracle server, per server/mix",
        "generator": "tests/oracle/make_truth.py",
        "definitions_sha256": definitions_hash(),
        "simulator_sha256": simulator_hash(),
        "method": {
            "duration_s": DURATION_S,
            "warmup_s": WARMUP_S,
            "n_replicates": N_REPLICATES,
            "bisection_rel_tol": REL_TOL,
            "bracket_rps": list(BRACKET_RPS),
            "check_grid": "1% spacing, 0.90x-1.10x of each replicate's crossing",
            "max_bad_fraction": MAX_BAD_FRACTION,
            "quantile": "linear (numpy)",
            "seed_base": SEED_BASE,
        },
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "machine": platform.machine(),
        "runtime_s": round(time.perf_counter() - t_start, 1),
        "combinations": results,
    }
    TRUTH_PATH.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {TRUTH_PATH} in {doc['runtime_s']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
