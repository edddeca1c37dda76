"""How often ``limits.failures`` declares a load-independent floor that breaks the error clause when the true
floor is within the SLA's error budget (a false break), on SYNTHETIC failures with a known floor.

Two levels:

* ``direct``: quiet steps drawn as counts, ``failed ~ Binomial(n, p_step)``, ``p_step`` the true floor
  ``f`` (independent requests) or ``Beta(c·f, c·(1 − f))`` (failures clustered by step: concentration
  ``c``), into :func:`bearing_lib.limits.failures.quiet_floor`;
* ``fit``: SYNTHETIC M/M/1 stepped runs (``tests.limits.synth.mm1_frame``, failures independent of load
  with probability ``f``) through :func:`bearing_lib.limits.fit.fit_limits` with
  ``p99(latency) <= 1s and error_rate <= 1%``; a false break is a ``failure_floors`` entry with
  ``breaks_clause`` while ``f <= 1 %``.

    PYTHONPATH=. python -m tests.limits.floor_rates [--seeds 400] [--fit-seeds 40]
"""

from __future__ import annotations

import argparse

import numpy as np

from bearing_lib.limits.failures import QuietStep, quiet_floor
from bearing_lib.limits.fit import fit_limits
from tests.limits.synth import make_trace, mm1_frame

ALLOWED = 0.01


def direct(f: float, seeds: int, n_steps: int = 3, n: int = 250, concentration: float | None = None,
           seed: int = 0) -> dict[str, int]:
    """Quiet steps at loads 0.5, 1, 1.5, ... with ``n`` requests each; counts of floors found and breaking."""
    rng = np.random.default_rng(seed)
    out = {"runs": seeds, "floor": 0, "breaks": 0}
    for _ in range(seeds):
        ps = (np.full(n_steps, f) if concentration is None
              else rng.beta(concentration * f, concentration * (1 - f), n_steps))
        steps = [QuietStep(0.5 * (k + 1), int(rng.binomial(n, p)), n) for k, p in enumerate(ps)]
        fl = quiet_floor(steps, ALLOWED)
        out["floor"] += fl is not None
        out["breaks"] += fl is not None and fl.breaks
    return out


def rising(f0: float, slope: float, seeds: int, n: int = 250, seed: int = 0) -> dict[str, int]:
    """Failures that DO grow with load: at loads 0.5, 1, 1.5 the share is ``f0 · (x / 0.5)^slope`` (independent
    requests); a floor found here is a load-dependent failure read as load-independent."""
    rng = np.random.default_rng(seed)
    out = {"runs": seeds, "floor": 0, "breaks": 0}
    for _ in range(seeds):
        steps = [QuietStep(x, int(rng.binomial(n, min(f0 * (x / 0.5) ** slope, 1.0))), n) for x in (0.5, 1.0, 1.5)]
        fl = quiet_floor(steps, ALLOWED)
        out["floor"] += fl is not None
        out["breaks"] += fl is not None and fl.breaks
    return out


def through_fit(f: float, seeds: range, step_s: float = 60.0) -> dict[str, int]:
    """SYNTHETIC M/M/1 runs (μ = 10/s, 6 steps 1–6 rps of ``step_s``) with load-independent failures ``f``."""
    out = {"runs": 0, "floor": 0, "breaks": 0}
    for seed in seeds:
        frame = mm1_frame([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], mu_rps=10.0, step_s=step_s, seed=seed, error_prob=f)
        res = fit_limits(make_trace(frame), "p99(latency) <= 1s and error_rate <= 1%", mixes="none", n_boot=0)
        floors = res.limits[0].failure_floors
        out["runs"] += 1
        out["floor"] += bool(floors)
        out["breaks"] += any(fl.breaks_clause for fl in floors)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=400)
    ap.add_argument("--fit-seeds", type=int, default=40)
    a = ap.parse_args()
    print(f"direct: 3 quiet steps x 250 requests, allowance {ALLOWED:.0%}, {a.seeds} draws")
    for conc in (None, 200.0):
        for f in (0.005, 0.008, 0.01, 0.02):
            o = direct(f, a.seeds, concentration=conc)
            what = "independent" if conc is None else f"clustered c={conc:g}"
            print(f"  {what:22s} floor {f:.1%}: a floor {o['floor'] / o['runs']:6.1%}, breaks the clause "
                  f"{o['breaks'] / o['runs']:6.1%}")
    for f0, slope in ((0.004, 1.0), (0.004, 2.0), (0.002, 3.0)):
        o = rising(f0, slope, a.seeds)
        print(f"  rising {f0:.1%} x (x/0.5)^{slope:g} (at 0.5/1/1.5: "
              + "/".join(f"{f0 * (x / 0.5) ** slope:.1%}" for x in (0.5, 1.0, 1.5))
              + f"): read as a floor {o['floor'] / o['runs']:6.1%}")
    if a.fit_seeds == 0:
        return
    print(f"through fit_limits: M/M/1 (mu 10/s), 6 steps of 60 s at 1-6 rps, {a.fit_seeds} seeds")
    for f in (0.005, 0.008, 0.01):
        o = through_fit(f, range(a.fit_seeds))
        print(f"  floor {f:.1%}: a floor {o['floor'] / o['runs']:6.1%}, "
              f"breaks the clause {o['breaks'] / o['runs']:6.1%}")


if __name__ == "__main__":
    main()
