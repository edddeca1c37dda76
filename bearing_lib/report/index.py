"""``reports/index.html``: one offline page listing every published report.

Reads each ``reports/<name>/summary.json`` (verdict, headline, run time); folders
without a readable summary are listed as such rather than skipped silently. Failed runs
(``<name>.failed-<time>/``) are listed separately so nobody mistakes them for reports.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bearing_lib.report.render import _atomic_write, environment


def collect(reports_dir: str | Path) -> dict[str, list[dict[str, Any]]]:
    """Entries for the index: ``reports`` (newest first) and ``failed`` runs."""
    root = Path(reports_dir)
    reports: list[dict[str, Any]] = []
    failed: list[dict[str, Any]] = []
    for d in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        if ".failed-" in d.name:
            failed.append({"name": d.name, "files": sorted(f.name for f in d.iterdir() if f.is_file())})
            continue
        entry: dict[str, Any] = {"name": d.name, "has_html": (d / "report.html").is_file()}
        try:
            s = json.loads((d / "summary.json").read_text(encoding="utf-8"))
            entry.update(verdict=str(s.get("verdict") or "unknown"),
                         headline=str((s.get("headline") or {}).get("text") or ""),
                         run_time_utc=str((s.get("provenance") or {}).get("run_time_utc") or ""))
        except (OSError, ValueError, AttributeError) as exc:
            entry.update(verdict="unknown", headline="", run_time_utc="", problem=f"summary.json unreadable: {exc}")
        reports.append(entry)
    reports.sort(key=lambda e: (e.get("run_time_utc") or "", e["name"]), reverse=True)
    return {"reports": reports, "failed": failed}


def write_index(reports_dir: str | Path) -> Path:
    """(Re)write ``reports_dir/index.html`` atomically and return its path."""
    root = Path(reports_dir)
    html = environment().get_template("index.html.j2").render(**collect(root))
    out = root / "index.html"
    _atomic_write(out, html)
    return out


__all__ = ["collect", "write_index"]
