"""Benchmark (not a test): start-up time of the ``bearing`` command line.

Runs each command ``--repeat`` times (after one warm-up) as a fresh subprocess of this
Python, exactly as the ``bearing`` console script starts (``from bearing_lib.cli.main
import app; app()``, with this checkout first on ``sys.path``), and prints the median wall
time and its ratio to ``python -c "import polars"`` timed in the same run, interleaved
with the commands so machine load affects both alike. The targets: ``--version`` and
``--help`` within 1.5x of importing polars, ``inspect`` of a small CSV within 2x.

The CSV is SYNTHETIC: a bearing-canonical trace of ``--rows`` requests (default 1,000),
epoch-second start times, written to a temporary folder and removed afterwards.

    nice python bench/bench_startup.py --repeat 15
"""

from __future__ import annotations

import argparse
import csv
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENTRY = "import sys; from bearing_lib.cli.main import app; sys.argv[0] = 'bearing'; app()"
# "report --help" is not in the targets; it is timed because it once imported altair (1.9 s)
TARGETS = {"--version": 1.5, "--help": 1.5, "report --help": 2.0, "inspect": 2.0}


def small_csv(folder: Path, rows: int) -> Path:
    path = folder / "small.csv"
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["request_id", "start_s", "end_s", "ttft_ms", "latency_ms", "input_tokens", "output_tokens",
                    "status"])
        for i in range(rows):
            t = 1_764_547_200.0 + i * 0.25
            w.writerow([f"r{i}", f"{t:.3f}", f"{t + 1.2:.3f}", 180 + i % 50, 1200 + i % 300, 500 + i % 700,
                        100 + i % 200, "ok" if i % 97 else "error"])
    return path


def run_once(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of one run of ``argv``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    a = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    took = time.perf_counter() - a
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.strip()}")
    return took, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=15, help="timed runs per command (median reported)")
    ap.add_argument("--rows", type=int, default=1_000, help="rows of the synthetic CSV for inspect")
    ap.add_argument("--root", type=Path, default=ROOT, help="checkout whose bearing_lib is timed (default: this one)")
    args = ap.parse_args()

    root = args.root.resolve()  # also the working directory: `python -c` puts it first on sys.path
    path = os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "PYTHONPATH": path, "COLUMNS": "120"}
    with tempfile.TemporaryDirectory() as tmp:
        csv_path = small_csv(Path(tmp), args.rows)
        commands = {
            "import polars": [sys.executable, "-c", "import polars"],
            "--version": [sys.executable, "-c", ENTRY, "--version"],
            "--help": [sys.executable, "-c", ENTRY, "--help"],
            "report --help": [sys.executable, "-c", ENTRY, "report", "--help"],
            "inspect": [sys.executable, "-c", ENTRY, "inspect", str(csv_path)],
        }
        wall: dict[str, list[float]] = {k: [] for k in commands}
        cpu: dict[str, list[float]] = {k: [] for k in commands}
        for argv in commands.values():  # warm-up: bytecode caches, file cache
            run_once(argv, env, root)
        for _ in range(args.repeat):
            for name, argv in commands.items():
                w, c = run_once(argv, env, root)
                wall[name].append(w)
                cpu[name].append(c)

    load = os.getloadavg()[0]
    base_w, base_c = statistics.median(wall["import polars"]), statistics.median(cpu["import polars"])
    print(f"start-up of {root}, median of {args.repeat} runs (python {sys.version.split()[0]}, "
          f"{os.cpu_count()} cores, load average {load:.1f} at the end)")
    print(f"{'command':<20}{'wall s':>8}{'x polars':>10}{'cpu s':>8}{'x polars':>10}{'target':>8}")
    over = []
    for name in commands:
        mw, mc = statistics.median(wall[name]), statistics.median(cpu[name])
        target = TARGETS.get(name)
        label = "bearing " + name if name != "import polars" else name
        mark = "" if target is None else f"{target:.1f}x"
        if target is not None and mw / base_w > target:
            over.append(label)
        print(f"{label:<20}{mw:>8.3f}{mw / base_w:>10.2f}{mc:>8.3f}{mc / base_c:>10.2f}{mark:>8}")
    print(f"inspect: bearing-canonical CSV of {args.rows:,} rows (synthetic). Wall time is the target; CPU time "
          "(user + system of the child) is less disturbed by other load on a shared machine.")
    print("all within target (wall)" if not over else f"over target (wall): {', '.join(over)}")


if __name__ == "__main__":
    main()
