"""Small recipes for the bad-input corpus: every file is written into the test's tmp_path.

Values are invented (SYNTHETIC) unless a recipe copies a bundled file and cuts it. The
valid baseline is a stepped load test in bearing's canonical CSV: 3 steps of 40
requests, 0.5 s apart, from 2023-11-14 22:13:20 UTC (1,700,000,000 s), TTFT 100 ms x
(step + 1) plus 0-6 ms, latency 10 x TTFT, all ok. It loads and fits cleanly; each case
breaks one thing in it.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from pathlib import Path

T0 = 1_700_000_000.0
HEADER = ["request_id", "run_id", "step", "offered_load", "offered_load_unit", "start_s", "end_s", "ttft_ms",
          "latency_ms", "input_tokens", "output_tokens", "status"]
AZURE = "TIMESTAMP,ContextTokens,GeneratedTokens"


def stepped_rows(n_per_step: int = 40, steps: tuple[float, ...] = (1.0, 2.0, 4.0)) -> list[dict[str, object]]:
    """The valid stepped test, as rows of :data:`HEADER` (SYNTHETIC)."""
    rows = []
    t = T0
    for k, load in enumerate(steps):
        for i in range(n_per_step):
            ttft = 100.0 * (k + 1) + (i % 7)
            lat = 10 * ttft
            rows.append({"request_id": f"r{k}-{i}", "run_id": "run", "step": k, "offered_load": load,
                         "offered_load_unit": "rps", "start_s": t, "end_s": t + lat / 1000, "ttft_ms": ttft,
                         "latency_ms": lat, "input_tokens": 100 + (i % 5) * 300, "output_tokens": 50 + i % 3,
                         "status": "ok"})
            t += 0.5
    return rows


def to_csv(rows: list[dict[str, object]], header: list[str] | None = None) -> str:
    header = header or list(rows[0])
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    for r in rows:
        w.writerow(["" if r.get(c) is None else r.get(c) for c in header])
    return buf.getvalue()


def stepped_csv() -> str:
    """The valid stepped test as canonical CSV."""
    return to_csv(stepped_rows())


def edited(fn: Callable[[list[dict[str, object]]], None], header: list[str] | None = None) -> str:
    """The valid stepped CSV after ``fn`` edited its rows in place."""
    rows = stepped_rows()
    fn(rows)
    return to_csv(rows, header)


def azure(rows: list[str]) -> str:
    return AZURE + "\n" + "\n".join(rows) + "\n"


def write(folder: Path, files: dict[str, str | bytes]) -> dict[str, Path]:
    """Write ``files`` (name → text or bytes, byte-exact) under ``folder``; their paths by name."""
    out = {}
    for name, body in files.items():
        p = folder / name
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(body, bytes):
            p.write_bytes(body)
        else:
            p.write_text(body, encoding="utf-8", newline="")
        out[name] = p
    return out
