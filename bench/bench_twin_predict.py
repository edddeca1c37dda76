"""Benchmark (not a test): ``bearing twin predict`` per twin, this checkout against an earlier ``bearing_lib``.

Twins: the four bundled LMBenchmark sweeps (``tests/twin/real_sweeps.py``: vLLM and llm-d, sharegpt and
short_input), each calibrated and validated once and written to ``--twins`` (reused when present). Each prediction
is the CLI's default: ``bearing twin predict TWIN --tested-mix --sla "p99(ttft) <= 2s" --json OUT`` (12 parameter
draws), run as a fresh process, whole (interpreter start, imports, reading the twin, the search, the JSON).

In every round each (twin, variant) runs once, the variants in an order that rotates from round to round:

* ``now``: this checkout's ``bearing_lib``;
* ``before`` (``--before DIR``): the ``bearing_lib`` found in ``DIR``, e.g.
  ``git archive main bearing_lib | tar -x -C DIR``, imported first (the child runs in ``DIR``).

Wall seconds are measured around the child; CPU (user + sys) comes from its own ``rusage`` (``os.wait4``): on a
shared machine the CPU seconds are the steadier figure, and the ratio before / now per round the comparable one.
One untimed run per twin and variant comes first (page cache, bytecode, and numba's compiled loop, cached beside the
module: the first simulation on a fresh machine compiles it, ~7 s of CPU, said as ``compile`` below). The
predictions of both variants are compared: identical numbers are expected (the compiled loop changes no number).

    nice .venv/bin/python bench/bench_twin_predict.py --before /tmp/before --repeat 3 [--twins DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SLA = "p99(ttft) <= 2s"


def fit_twins(folder: Path) -> list[Path]:
    """The four bundled LMBenchmark twins, calibrated and validated (written once into ``folder``)."""
    sys.path.insert(0, str(ROOT))
    from tests.twin.real_sweeps import runs

    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for label, trace in runs():
        path = folder / (label.replace("/", "__") + ".json")
        if not path.exists():
            from bearing_lib.twin import calibrate, validate

            t = time.perf_counter()
            tw = calibrate(trace)
            tw.validation = validate(tw, trace, SLA)
            path.write_text(json.dumps(tw.to_dict()), encoding="utf-8")
            print(f"fitted {label} in {time.perf_counter() - t:.1f} s -> {path}", flush=True)
        out.append(path)
    return out


def run(twin: Path, out: Path, lib: Path) -> dict[str, float]:
    """One fresh ``bearing twin predict`` with the ``bearing_lib`` under ``lib``: wall s, CPU s."""
    cmd = [sys.executable, "-m", "bearing_lib.cli.main", "twin", "predict", str(twin), "--tested-mix", "--sla", SLA,
           "--json", str(out)]
    env = {**os.environ, "BEARING_NO_PROGRESS": "1", "PYTHONPATH": str(lib)}
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=lib, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    err = proc.stderr.read().decode() if proc.stderr else ""
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"{cmd} (in {lib}) failed:\n{err[-3000:]}")
    return {"wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime}


def predictions(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["predictions"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, default=None, help="a folder holding an earlier bearing_lib")
    ap.add_argument("--twins", type=Path, default=Path(tempfile.gettempdir()) / "bearing-bench-twins")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path, default=None, help="write every measurement here")
    args = ap.parse_args()
    twins = fit_twins(args.twins)
    libs = {"now": ROOT, **({"before": args.before.resolve()} if args.before else {})}
    rows = []
    with tempfile.TemporaryDirectory(prefix="bearing-bench-twin-predict-") as tmp:
        for twin in twins:
            outs = {v: Path(tmp) / f"{twin.stem}.{v}.json" for v in libs}
            first = {v: run(twin, outs[v], lib) for v, lib in libs.items()}  # untimed: caches (numba compiles)
            if "before" in libs:
                same = predictions(outs["now"]) == predictions(outs["before"])
                print(f"{twin.stem}: predictions {'identical' if same else 'DIFFER'} before / now", flush=True)
            res: dict[str, list[dict[str, float]]] = {v: [] for v in libs}
            names = list(libs)
            for r in range(args.repeat):
                for v in names[r % len(names):] + names[:r % len(names)]:
                    res[v].append(run(twin, outs[v], libs[v]))
                line = "  ".join(f"{v} {res[v][-1]['wall_s']:.2f} s wall / {res[v][-1]['cpu_s']:.2f} s CPU"
                                 for v in names)
                print(f"{twin.stem} round {r + 1}: {line}  load {os.getloadavg()[0]:.1f}", flush=True)
            for v in names:
                row = {"twin": twin.stem, "variant": v, "n": len(res[v]),
                       "first_wall_s": first[v]["wall_s"], "first_cpu_s": first[v]["cpu_s"],
                       "wall_median_s": statistics.median(x["wall_s"] for x in res[v]),
                       "wall_min_s": min(x["wall_s"] for x in res[v]),
                       "cpu_median_s": statistics.median(x["cpu_s"] for x in res[v])}
                if "before" in libs:
                    row["x_before_cpu"] = statistics.median(
                        b["cpu_s"] / x["cpu_s"] for b, x in zip(res["before"], res[v], strict=True))
                rows.append(row)
    print()
    print(f"{'twin':36} {'variant':7} {'wall s median (min)':>20} {'CPU s median':>12} {'before/now CPU':>14}")
    for r in rows:
        ratio = f"{r['x_before_cpu']:.1f}×" if "x_before_cpu" in r and r["variant"] == "now" else ""
        print(f"{r['twin']:36} {r['variant']:7} {r['wall_median_s']:>11.2f} ({r['wall_min_s']:.2f}) "
              f"{r['cpu_median_s']:>12.2f} {ratio:>14}")
    print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
