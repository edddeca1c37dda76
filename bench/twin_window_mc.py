"""The twin's simulated window by requests against the fixed 1,200 s window: the same limit within Monte-Carlo error?

A script, not a test. For each twin given (``bearing twin fit`` JSON), on the tested mix under ``--sla``: the
point-parameter limit search (the one a prediction starts from) is run with ``--seeds`` seeds under a window held
by requests (``SearchOptions(max_requests=6000, warmup_requests=1500)``: at most 6,000 steady requests after a warm-up
of at most 1,500 arrivals, never under 60 s) and under the default fixed window (1,200 s steady after a 300 s
warm-up whatever the rate, ``SearchOptions()``). Per window: mean limit over the seeds, the SD across seeds (the
simulation noise of one search at fixed parameters), and the difference of the means with its standard error
``sqrt(sd_a² / n + sd_b² / n)``. Also the limit with the ceilings the test never reached lifted (the bracket's top
of a ``regime:`` prediction), where those ceilings were not identified.

    nice .venv/bin/python bench/twin_window_mc.py TWIN.json [...] [--seeds 8] [--sla "p99(ttft) <= 2s"]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("twins", type=Path, nargs="+")
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--sla", default="p99(ttft) <= 2s")
    args = ap.parse_args()

    from bearing_lib.limits.sla import parse_sla
    from bearing_lib.twin import calibration_mix, read_twin
    from bearing_lib.twin.calibrate import server_params
    from bearing_lib.twin.predict import _for_target, _guess, _unseen_ceilings
    from bearing_lib.twin.search import SearchOptions, search_limit

    sla = parse_sla(args.sla)
    windows = {"by requests (opt-in)": SearchOptions(n_draws=0, max_requests=6000, warmup_requests=1500),
               "fixed 1,200 s (default)": SearchOptions(n_draws=0)}
    for path in args.twins:
        tw = read_twin(path)
        mix = calibration_mix(tw)
        point = server_params(_for_target(tw, mix))
        searches = {"point": point}
        unseen = _unseen_ceilings(tw)
        if unseen:
            searches["ceilings lifted"] = replace(point, **{k: None for k in unseen})
        for what, params in searches.items():
            guess = _guess(tw, mix, params)
            res = {}
            for name, opt in windows.items():
                t = time.perf_counter()
                vals = [search_limit(params, mix, sla, opt, seed=s, guess=guess)[0] for s in range(args.seeds)]
                res[name] = vals
                mu, sd = statistics.mean(vals), statistics.stdev(vals)
                print(f"{path.stem} {what:16} {name:24} mean {mu:8.4f} rps  SD {sd:.4f} ({sd / mu:.2%})  "
                      f"{time.perf_counter() - t:6.1f} s  "
                      f"[{', '.join(f'{v:.3f}' for v in vals)}]", flush=True)
            (a, b) = res.values()
            d = statistics.mean(a) - statistics.mean(b)
            se = (statistics.variance(a) / len(a) + statistics.variance(b) / len(b)) ** 0.5
            print(f"{path.stem} {what:16} difference {d:+.4f} rps ({d / statistics.mean(b):+.2%}), "
                  f"SE {se:.4f}: {abs(d) / se if se else 0:.2f} SE", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
