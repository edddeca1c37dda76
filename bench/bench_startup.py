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
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENTRY = "import sys; from bearing_lib.cli.main import app; sys.argv[0] = 'bearing'; app()"
TARGETS = {"--version": 1.5, "--help": 1.5, "inspect": 2.0}


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


def run_once(argv: list[str], env: dict[str, str]) -> float:
    a = time.perf_counter()
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    took = time.perf_counter() - a
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.strip()}")
    return took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=15, help="timed runs per command (median reported)")
    ap.add_argument("--rows", type=int, default=1_000, help="rows of the synthetic CSV for inspect")
    args = ap.parse_args()

    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "PYTHONPATH": path, "COLUMNS": "120"}
    with tempfile.TemporaryDirectory() as tmp:
        csv_path = small_csv(Path(tmp), args.rows)
        commands = {
            "import polars": [sys.executable, "-c", "import polars"],
            "--version": [sys.executable, "-c", ENTRY, "--version"],
            "--help": [sys.executable, "-c", ENTRY, "--help"],
            "inspect": [sys.executable, "-c", ENTRY, "inspect", str(csv_path)],
        }
        times: dict[str, list[float]] = {k: [] for k in commands}
        for argv in commands.values():  # warm-up: bytecode caches, file cache
            run_once(argv, env)
        for _ in range(args.repeat):
            for name, argv in commands.items():
                times[name].append(run_once(argv, env))

    base = statistics.median(times["import polars"])
    print(f"start-up, median of {args.repeat} runs (python {sys.version.split()[0]}, {os.cpu_count()} cores)")
    print(f"{'command':<16}{'median s':>10}{'x polars':>10}{'target':>9}")
    worst = 0.0
    for name, runs in times.items():
        med = statistics.median(runs)
        ratio = med / base
        target = TARGETS.get(name)
        mark = "" if target is None else f"{target:>7.1f}x" + ("" if ratio <= target else "  over")
        if target is not None:
            worst = max(worst, ratio / target)
        label = "bearing " + name if name != "import polars" else name
        print(f"{label:<16}{med:>10.3f}{ratio:>10.2f}{mark:>9}")
    print(f"inspect: bearing-canonical CSV of {args.rows:,} rows (synthetic)")
    print("all within target" if worst <= 1.0 else "some command is over its target")


if __name__ == "__main__":
    main()
