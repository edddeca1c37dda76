"""SYNTHETIC production trace for the profile benchmarks: one bearing-canonical Parquet file.

``rows`` requests over ``days`` days with a diurnal rate (peak 14:00 UTC, quieter weekend),
ms timestamps, lognormal token counts, 1 % errors, five models; written day by day with
pyarrow (memory: one day's rows), ``bearing.time_origin = epoch`` in the metadata.

    python bench/synth_trace.py --rows 12500000 --out /tmp/trace_12m5.parquet
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z, a Thursday
MODELS = np.array(["llama-70b", "llama-8b", "qwen-32b", "mistral-7b", "gpt-oss-120b"])


def _day_weights(days: int) -> np.ndarray:
    wd = [(3 + d) % 7 for d in range(days)]  # 2026-01-01 is a Thursday (Monday = 0)
    return np.array([0.7 if w >= 5 else 1.0 for w in wd])


def write(path: str | Path, rows: int, *, days: int = 7, seed: int = 20261202) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    w = _day_weights(days)
    per_day = np.floor(rows * w / w.sum()).astype(np.int64)
    per_day[-1] += rows - per_day.sum()
    grid = np.arange(0.0, 86_400.0, 60.0)
    dens = 1.0 + 0.6 * np.cos(2 * np.pi * (grid / 86_400.0 - 14 / 24))
    cdf = np.concatenate([[0.0], np.cumsum(dens) / dens.sum()])
    xs = np.concatenate([[0.0], grid + 60.0])
    schema = pa.schema([
        ("start_s", pa.float64()), ("end_s", pa.float64()), ("ttft_ms", pa.float64()), ("latency_ms", pa.float64()),
        ("input_tokens", pa.int64()), ("output_tokens", pa.int64()), ("cached_tokens", pa.int64()),
        ("status", pa.string()), ("model", pa.string()),
    ], metadata={b"bearing.time_origin": b"epoch"})
    out = Path(path)
    with pq.ParquetWriter(out, schema) as wr:
        for d, n in enumerate(per_day):
            n = int(n)
            start = T0 + 86_400.0 * d + np.interp(np.sort(rng.random(n)), cdf, xs)
            start = np.round(start, 3)
            inp = rng.lognormal(6.5, 1.0, n).astype(np.int64) + 1
            outt = rng.lognormal(5.2, 0.8, n).astype(np.int64) + 1
            cached = np.where(rng.random(n) < 0.65, (inp * rng.random(n)).astype(np.int64), 0)
            ttft = rng.lognormal(np.log(200.0), 0.6, n)
            lat = ttft + outt * rng.uniform(8.0, 14.0, n)
            u = rng.random(n)
            status = np.where(u < 0.006, "error", np.where(u < 0.01, "timeout", "ok"))
            ok = status == "ok"
            tbl = pa.table({
                "start_s": start, "end_s": np.round(start + lat / 1000.0, 3),
                "ttft_ms": pa.array(np.round(ttft, 1), mask=~ok), "latency_ms": np.round(lat, 1),
                "input_tokens": inp, "output_tokens": outt, "cached_tokens": cached,
                "status": status, "model": MODELS[rng.integers(0, MODELS.size, n)],
            }, schema=schema)
            wr.write_table(tbl, row_group_size=1 << 20)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=12_500_000)
    ap.add_argument("--days", type=int, default=7)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    write(a.out, a.rows, days=a.days)
    print(f"wrote {a.out} ({a.rows:,} rows, {a.out.stat().st_size / 2**20:,.0f} MiB)")


if __name__ == "__main__":
    main()
