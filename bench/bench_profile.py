"""Benchmark (not a test): `bearing profile` on one Parquet file beside DuckDB doing the core of the work.

SYNTHETIC data (``bench/synth_trace.py``): ``--rows`` requests over 7 days, canonical columns, one
Parquet file per size (written once into ``--data``). In every round each of these runs once as a
fresh process, in an order that rotates from round to round:

* ``bearing``: ``bearing profile FILE --json OUT`` (the one lazy path, ``traffic/onepass.py``), the
  whole command: imports, read, MSTL, bootstrap, JSON;
* ``duckdb``: DuckDB's core of the same work on the same file: per-minute counts with empty minutes,
  mean/P95/P99/max of the per-minute rate, hour-of-day mean and P95, token-length P50/P90/P99 of
  input, output and their sum, status counts (``quantile_cont``: linear, like bearing);
* ``eager`` (``--eager``): ``bearing profile FILE --format bearing-canonical``, the loaders' in-memory
  path (what a single Parquet file took before the lazy path), for reference;
* ``before`` (``--before DIR``): ``bearing profile FILE --engine embedded`` with the ``bearing_lib`` found
  in ``DIR`` (e.g. ``git archive main bearing_lib | tar -x -C DIR``): the earlier embedded engine.

Wall seconds are measured around the child (interpreter start and imports included); CPU and
peak RSS come from the child's own ``rusage`` (``os.wait4``: ``ru_maxrss`` is the number
``/usr/bin/time -v`` prints as "Maximum resident set size"). ``×duckdb`` is the ratio per round
(child / duckdb in the same round), then the median: the machine is shared and absolute seconds drift.

    nice .venv/bin/python bench/bench_profile.py --rows 1000000 12500000 --repeat 5 [--eager] [--data DIR]
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
sys.path.insert(0, str(ROOT / "bench"))

DUCK = r"""
import sys, duckdb
f = sys.argv[1]
con = duckdb.connect()
con.execute("SET enable_progress_bar = false")
src = f"read_parquet('{f}')"
con.execute(f'''CREATE TEMP TABLE m AS
  WITH c AS (SELECT CAST(floor(start_s / 60) AS BIGINT) AS k, count(*) AS n FROM {src} GROUP BY k),
       r AS (SELECT min(k) + 1 AS lo, max(k) - 1 AS hi FROM c)
  SELECT g.k, coalesce(c.n, 0) AS n FROM r, generate_series(r.lo, r.hi) AS g(k) LEFT JOIN c ON c.k = g.k''')
con.execute("SELECT avg(n) / 60, quantile_cont(n, 0.95) / 60, quantile_cont(n, 0.99) / 60, max(n) / 60 "
            "FROM m").fetchall()
con.execute("SELECT (k // 60) % 24 AS h, avg(n) / 60, quantile_cont(n, 0.95) / 60 FROM m GROUP BY h "
            "ORDER BY h").fetchall()
con.execute(f'''SELECT quantile_cont(input_tokens, [0.5, 0.9, 0.99]), quantile_cont(output_tokens, [0.5, 0.9, 0.99]),
  quantile_cont(input_tokens + output_tokens, [0.5, 0.9, 0.99]) FROM {src}''').fetchall()
con.execute(f"SELECT status, count(*) FROM {src} GROUP BY status").fetchall()
"""


def command(engine: str, path: Path, out: Path) -> list[str]:
    bearing = [sys.executable, "-m", "bearing_lib.cli.main", "profile", str(path.resolve()), "--json",
               str(out.resolve()), "--force"]
    if engine == "before":
        return [*bearing, "--engine", "embedded"]
    if engine == "bearing":
        return bearing
    if engine == "eager":
        return [*bearing, "--format", "bearing-canonical"]
    if engine == "duckdb":
        return [sys.executable, "-c", DUCK, str(path)]
    raise SystemExit(f"unknown engine {engine}")


def run(cmd: list[str], pythonpath: Path | None = None) -> dict[str, float]:
    """One fresh child: wall s (around it), user + sys CPU s and peak RSS MiB (its rusage)."""
    env = {**os.environ, "BEARING_NO_PROGRESS": "1"}
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    t = time.perf_counter()
    # ``python -m`` puts the working directory ahead of PYTHONPATH on sys.path: the earlier copy runs from its own
    # folder, or the "before" column would time this checkout's bearing_lib
    cwd = pythonpath if pythonpath is not None else ROOT
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    err = proc.stderr.read().decode() if proc.stderr else ""
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"{cmd} failed ({proc.returncode}):\n{err[-3000:]}")
    return {"wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime, "sys_s": ru.ru_stime, "peak_mib": ru.ru_maxrss / 1024}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 12_500_000])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--eager", action="store_true", help="also time the loaders' in-memory path")
    ap.add_argument("--before", type=Path, default=None,
                    help="a folder holding an earlier bearing_lib: also time its `--engine embedded`")
    ap.add_argument("--data", type=Path, default=None, help="keep the synthetic files here (default: a temp folder)")
    ap.add_argument("--json", type=Path, default=None, help="write every measurement here")
    args = ap.parse_args()
    import synth_trace

    engines = ["bearing", "duckdb", *(["eager"] if args.eager else []), *(["before"] if args.before else [])]
    rows_out = []
    with tempfile.TemporaryDirectory(prefix="bearing-bench-profile-") as tmp:
        data = args.data or Path(tmp)
        data.mkdir(parents=True, exist_ok=True)
        for rows in args.rows:
            path = data / f"trace_{rows}.parquet"
            if not path.exists():
                t = time.perf_counter()
                synth_trace.write(path, rows)
                print(f"wrote {path} in {time.perf_counter() - t:.1f} s", flush=True)
            size = path.stat().st_size / 2**20
            out = Path(tmp) / "profile.json"
            run(command("bearing", path, out))  # warm-up: page cache, bytecode
            res: dict[str, list[dict[str, float]]] = {e: [] for e in engines}
            for r in range(args.repeat):
                order = engines[r % len(engines):] + engines[:r % len(engines)]
                for e in order:
                    res[e].append(run(command(e, path, out), args.before if e == "before" else None))
                line = "  ".join(f"{e} {res[e][-1]['wall_s']:.2f}s/{res[e][-1]['peak_mib']:.0f}MiB" for e in engines)
                print(f"{rows:>11,} round {r + 1}: {line}  load {os.getloadavg()[0]:.1f}", flush=True)
            for e in engines:
                w = [x["wall_s"] for x in res[e]]
                ratio = [x["wall_s"] / d["wall_s"] for x, d in zip(res[e], res["duckdb"], strict=True)]
                cpu_ratio = [x["cpu_s"] / d["cpu_s"] for x, d in zip(res[e], res["duckdb"], strict=True)]
                rows_out.append({
                    "rows": rows, "input_mib": size, "engine": e, "n": len(w), "wall_median_s": statistics.median(w),
                    "wall_min_s": min(w), "wall_max_s": max(w), "x_duckdb_wall": statistics.median(ratio),
                    "x_duckdb_cpu": statistics.median(cpu_ratio),
                    "cpu_median_s": statistics.median(x["cpu_s"] for x in res[e]),
                    "sys_median_s": statistics.median(x["sys_s"] for x in res[e]),
                    "peak_median_mib": statistics.median(x["peak_mib"] for x in res[e]),
                })
    print()
    print(f"{'rows':>12} {'input MiB':>9} {'engine':8} {'wall s median (min-max)':>24} {'xduckdb wall':>12} "
          f"{'xduckdb cpu':>11} {'cpu s':>6} {'sys s':>6} {'peak MiB':>8}")
    for r in rows_out:
        print(f"{r['rows']:>12,} {r['input_mib']:>9.0f} {r['engine']:8} "
              f"{r['wall_median_s']:>8.2f} ({r['wall_min_s']:.2f}-{r['wall_max_s']:.2f}){'':>5} "
              f"{r['x_duckdb_wall']:>12.2f} {r['x_duckdb_cpu']:>11.2f} {r['cpu_median_s']:>6.2f} "
              f"{r['sys_median_s']:>6.2f} {r['peak_median_mib']:>8.0f}")
    if args.json:
        args.json.write_text(json.dumps(rows_out, indent=1))


if __name__ == "__main__":
    main()
