"""Where a dataset came from and what the loader did to it.

Every loaded dataset carries a :class:`Provenance`: the source file (or folder), its
sha256, the detected format and tool version, which canonical fields were measured by
the source and which bearing derived, the time-zone assumption, and the findings the
loader reported (sorted rows, duplicate ids, skipped lines ...). Reports print it.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

FieldOrigin = Literal["measured", "derived", "absent"]


@dataclass(frozen=True)
class Finding:
    """One thing a loader or validator noticed: ``level`` is ``info`` or ``warning``."""

    code: str
    message: str
    level: Literal["info", "warning"] = "warning"
    count: int | None = None

    def __str__(self) -> str:
        return f"[{self.level}] {self.code}: {self.message}"


@dataclass
class Provenance:
    """Provenance of one dataset (see module docstring)."""

    source: str
    format: str
    tool: str
    sha256: str
    tool_version: str | None = None
    fields: dict[str, FieldOrigin] = field(default_factory=dict)
    timezone: str = "UTC"
    time_origin: Literal["epoch", "relative", "none"] = "epoch"
    findings: list[Finding] = field(default_factory=list)
    options: dict[str, object] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)

    def add(self, code: str, message: str, *, level: str = "warning", count: int | None = None) -> None:
        """Record a finding."""
        self.findings.append(Finding(code=code, message=message, level=level, count=count))  # type: ignore[arg-type]

    def to_dict(self) -> dict[str, object]:
        """JSON-ready dict."""
        return asdict(self)


def _files_under(folder: Path) -> list[Path]:
    """Every file under ``folder``, through symlinked subfolders as the loaders read them (``Path.rglob`` does not
    enter those: a folder whose data sit behind ``latest -> run-7`` would hash as an empty one), each real folder
    once (a link back up is not followed again)."""
    seen: set[str] = set()
    out: list[Path] = []
    for root, dirs, files in os.walk(folder, followlinks=True):
        real = os.path.realpath(root)
        if real in seen:
            dirs[:] = []
            continue
        seen.add(real)
        out.extend(Path(root) / f for f in files if (Path(root) / f).is_file())
    return out


def sha256_of(path: str | Path) -> str:
    """sha256 of a file's raw bytes, or of a folder as the sorted ``<relpath> <sha256>`` lines."""
    p = Path(path)
    if p.is_dir():
        h = hashlib.sha256()
        for child in sorted(_files_under(p)):
            h.update(f"{child.relative_to(p).as_posix()} {sha256_of(child)}\n".encode())
        return h.hexdigest()
    h = hashlib.sha256()
    with p.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
