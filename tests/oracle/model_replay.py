"""TEST ORACLE tool: capture every seed's ``limits.estimators.model_limit`` inputs once, then replay only the model.

The model (``limits.model``, ``limits.evidence``) is the only part of ``fit_limits(..., estimator="model")`` that an
estimator change touches; simulating the stepped tests and judging their steps takes minutes per combination, the
model milliseconds per seed. So::

    python -m tests.oracle.model_replay capture [--step-s 1200] [--dir /tmp/model_replay]
    python -m tests.oracle.model_replay replay  [--step-s 1200] [--dir /tmp/model_replay] [-v]
        [--set model.LAG_CARRIES=True,evidence.SETTLE_TIMES=15.0]
    python -m tests.oracle.model_replay replay-shape [--step-s 1200] [--offsets 1,5,9,13] [--gate 3]

``capture`` runs ``tests.oracle.acceptance.score_combination(..., estimator="model")`` per combination with
``estimators.model_limit`` wrapped to pickle its arguments (judged steps, block-bootstrap replicates); ``replay``
calls the current ``estimators.model_limit`` on them and prints the acceptance table (within ±10 %, covered, median
half-width, median and worst error). The saturation cap applied after it (``limits.fit``) is not replayed: a live run
(``python -m tests.oracle.acceptance --estimator model``) confirms a candidate. Not a test (nothing to collect).
"""

from __future__ import annotations

import copy
import copyreg
import math
import pickle
import sys
import time
import types
from pathlib import Path

import numpy as np

from tests.oracle.acceptance import N_SEEDS, STEP_S, load_truth, score_combination
from tests.oracle.configs import combinations

DEFAULT_DIR = Path("/tmp/model_replay")
# the typed curve rows (limits.curve_row) hold read-only mappings: copied and pickled as dicts, rebuilt read-only
def _proxy(d: dict) -> types.MappingProxyType:
    return types.MappingProxyType(d)


copyreg.pickle(types.MappingProxyType, lambda m: (_proxy, (dict(m),)))


def _arg(name: str, default: str) -> str:
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


def _path(root: Path, step_s: float, server: str, mix: str) -> Path:
    return root / f"{step_s:g}" / f"{server}_{mix}.pkl"


def capture(root: Path, step_s: float, only: list[str] | None = None) -> None:
    from bearing_lib.limits import estimators

    truth = load_truth()
    original = estimators.model_limit
    calls: list[tuple[tuple, dict]] = []

    def wrapped(*args, **kwargs):
        calls.append((copy.deepcopy(args), copy.deepcopy(kwargs)))
        return original(*args, **kwargs)

    estimators.model_limit = wrapped
    try:
        for server, mix in combinations():
            if only and f"{server}/{mix}" not in only:
                continue
            t0 = time.perf_counter()
            t = float(truth[f"{server}/{mix}"]["q_ult_rps"])
            seeds = []
            for seed in range(N_SEEDS):
                calls.clear()
                (score,) = score_combination(server, mix, t, range(seed, seed + 1), step_s, estimator="model")
                seeds.append({"seed": seed, "calls": list(calls), "live": score})
            p = _path(root, step_s, server, mix)
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(pickle.dumps({"truth": t, "seeds": seeds}))
            print(f"{server}/{mix}: {time.perf_counter() - t0:.0f} s", flush=True)
    finally:
        estimators.model_limit = original


def capture_mm1(root: Path) -> None:
    """The SYNTHETIC M/M/1 case of ``tests/limits/test_evidence_model.py`` (8 seeds, 8 x 120 s at 2-9 rps)."""
    from bearing_lib.limits import estimators
    from bearing_lib.limits.fit import fit_limits
    from tests.limits.synth import make_trace, mm1_frame, mm1_limit

    truth = mm1_limit(10.0, 0.99, 1000.0)
    original = estimators.model_limit
    calls: list[tuple[tuple, dict]] = []

    def wrapped(*args, **kwargs):
        calls.append((copy.deepcopy(args), copy.deepcopy(kwargs)))
        return original(*args, **kwargs)

    estimators.model_limit = wrapped
    seeds = []
    try:
        for seed in range(8):
            calls.clear()
            tr = make_trace(mm1_frame(list(np.linspace(2, 9, 8)), mu_rps=10.0, step_s=120.0, seed=seed))
            fit_limits(tr, "p99(latency) <= 1s", mixes="none", estimator="model", n_boot=1000)
            seeds.append({"seed": seed, "calls": list(calls)})
    finally:
        estimators.model_limit = original
    p = root / "mm1.pkl"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(pickle.dumps({"truth": truth, "seeds": seeds}))


def apply_settings(spec: str) -> None:
    """``--set``: module constants of a variant to replay, ``module.NAME=literal`` comma-separated (``module`` one of
    ``model``, ``evidence``, ``estimators`` under ``bearing_lib.limits``; the value a Python literal)."""
    import ast
    import importlib

    for item in filter(None, spec.split(",")):
        target, _, value = item.partition("=")
        mod, _, name = target.strip().partition(".")
        if mod not in ("model", "evidence", "estimators") or not name:
            raise SystemExit(f"--set {item!r}: expected model.NAME=VALUE, evidence.NAME=VALUE or estimators.NAME=VALUE")
        module = importlib.import_module(f"bearing_lib.limits.{mod}")
        if not hasattr(module, name):
            raise SystemExit(f"--set {item!r}: bearing_lib.limits.{mod} has no constant {name}")
        setattr(module, name, ast.literal_eval(value.strip()))


def replay_one(args: tuple, kwargs: dict):
    from bearing_lib.limits import estimators

    args = list(copy.copy(args))
    args[12] = []  # notes (appended to)
    return estimators.model_limit(*args, **kwargs)


def replay(root: Path, step_s: float, verbose: bool = False, only: list[str] | None = None) -> list[dict]:
    rows = []
    for server, mix in combinations() + [("mm1", "")]:
        if only and f"{server}/{mix}" not in only:
            continue
        p = root / "mm1.pkl" if server == "mm1" else _path(root, step_s, server, mix)
        if not p.exists():
            continue
        doc = pickle.loads(p.read_bytes())
        t = doc["truth"]
        rel, half, cov, within = [], [], 0, 0
        for s in doc["seeds"]:
            if not s["calls"]:
                continue
            args, kwargs = s["calls"][-1]
            r = replay_one(args, kwargs)
            lo, hi = r.ci
            v = r.value
            e = math.nan if v is None else v / t - 1
            rel.append(e)
            ok = lo is not None and hi is not None and lo <= t <= hi
            cov += ok
            within += abs(e) <= 0.10 if math.isfinite(e) else 0
            if lo is not None and hi is not None and v:
                half.append((hi - lo) / 2 / v)
            if verbose:
                print("   ", s["seed"], None if v is None else round(v / t, 3),
                      [None if c is None else round(c / t, 3) for c in (lo, hi)], r.censored, r.binding,
                      "" if ok else "MISS")
        rel_a = np.array(rel)
        worst = float(rel_a[np.nanargmax(np.abs(rel_a))]) if np.isfinite(rel_a).any() else math.nan
        row = {"combination": f"{server}/{mix}", "within": within, "covered": cov, "n": len(rel),
               "half": float(np.median(half)) if half else math.nan, "median": float(np.nanmedian(rel_a)),
               "worst": worst}
        rows.append(row)
        print(f"| {row['combination']} | {within}/{row['n']} | {cov}/{row['n']} | {row['half']:.1%} "
              f"| {row['median']:+.1%} | {worst:+.1%} |", flush=True)
    oracle = [r for r in rows if not r["combination"].startswith("mm1")]
    if not oracle:
        return rows
    print(f"all: within {sum(r['within'] for r in oracle)}, covered {sum(r['covered'] for r in oracle)}, "
          f"min covered {min(r['covered'] for r in oracle)}, min within {min(r['within'] for r in oracle)}, "
          f"half-width > 12 %: {sum(r['half'] > 0.12 for r in oracle)}, "
          f"max half {max(r['half'] for r in oracle):.1%}")
    return rows


def replay_shape(root: Path, step_s: float, offsets: list[int], gate: float | None = None,
                 only: list[str] | None = None) -> list[dict]:
    """Round 13 (docs/oracle.md): each seed's model again with another seed's shape as its prior (seed ``s + offset``
    of the same combination: another test of the same service). Pass 1 replays every seed alone and keeps each
    clause's own shape (``ClausePosterior.shape``); pass 2 replays seed ``s`` with seed ``s + offset``'s, through
    ``model.clause_posterior``'s ``shape_prior`` (its gate, ``model.SHAPE_GATE``, decides; ``gate`` above it: a
    clause whose Bayes factor is below ``gate`` is replayed again without its prior, clause by clause)."""
    from bearing_lib.limits import model

    original = model.clause_posterior
    state: dict[str, dict | None] = {"record": None, "prior": None}

    def wrapped(name, *args, **kwargs):
        if state["prior"] is not None and name in state["prior"]:
            kwargs["shape_prior"] = state["prior"][name]
        post = original(name, *args, **kwargs)
        if state["record"] is not None:
            state["record"][name] = (post.shape, post.shape_bayes_factor)
        return post

    model.clause_posterior = wrapped
    rows = []
    try:
        for server, mix in combinations():
            if only and f"{server}/{mix}" not in only:
                continue
            p = _path(root, step_s, server, mix)
            if not p.exists():
                continue
            doc = pickle.loads(p.read_bytes())
            t = doc["truth"]
            seeds = [s for s in doc["seeds"] if s["calls"]]
            shapes = []
            for s in seeds:
                state["record"], state["prior"] = {}, None
                replay_one(*s["calls"][-1])
                shapes.append({k: v[0] for k, v in state["record"].items()})
            rel, half, cov, within, used = [], [], 0, 0, 0
            for off in offsets:
                for i, s in enumerate(seeds):
                    prior = {k: v for k, v in shapes[(i + off) % len(seeds)].items() if v is not None}
                    state["record"], state["prior"] = {}, prior
                    r = replay_one(*s["calls"][-1])
                    bfs = {k: bf for k, (_, bf) in state["record"].items() if bf is not None}
                    low = {k for k, bf in bfs.items() if gate is not None and bf < gate}
                    if low:  # a stricter gate: those clauses replayed without their prior
                        state["prior"] = {k: v for k, v in prior.items() if k not in low}
                        r = replay_one(*s["calls"][-1])
                    used += any(bf >= max(model.SHAPE_GATE, gate or 0.0) for bf in bfs.values())
                    lo, hi = r.ci
                    v = r.value
                    e = math.nan if v is None else v / t - 1
                    rel.append(e)
                    cov += lo is not None and hi is not None and lo <= t <= hi
                    within += abs(e) <= 0.10 if math.isfinite(e) else 0
                    if lo is not None and hi is not None and v:
                        half.append((hi - lo) / 2 / v)
            n = len(rel)
            row = {"combination": f"{server}/{mix}", "within": within, "covered": cov, "n": n, "used": used,
                   "half": float(np.median(half)) if half else math.nan, "median": float(np.nanmedian(rel))}
            rows.append(row)
            print(f"| {row['combination']} | {used}/{n} | {within}/{n} | {cov}/{n} | {row['half']:.1%} "
                  f"| {row['median']:+.1%} |", flush=True)
    finally:
        model.clause_posterior = original
    if rows:
        print(f"all: within {sum(r['within'] for r in rows)}, covered {sum(r['covered'] for r in rows)} of "
              f"{sum(r['n'] for r in rows)}; max half {max(r['half'] for r in rows):.1%}")
    return rows


def main() -> int:
    root = Path(_arg("--dir", str(DEFAULT_DIR)))
    step_s = float(_arg("--step-s", str(STEP_S)))
    only = _arg("--only", "").split(",") if "--only" in sys.argv else None
    apply_settings(_arg("--set", ""))
    if sys.argv[1] == "capture-mm1":
        capture_mm1(root)
    elif sys.argv[1] == "capture":
        capture(root, step_s, only)
    elif sys.argv[1] == "replay-shape":
        offsets = [int(o) for o in _arg("--offsets", "1,5,9,13").split(",")]
        replay_shape(root, step_s, offsets, float(_arg("--gate", "nan")) if "--gate" in sys.argv else None, only)
    else:
        replay(root, step_s, "-v" in sys.argv, only)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
