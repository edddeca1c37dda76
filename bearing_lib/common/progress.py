"""Progress of long work on the terminal (a profile, the twin's calibration and prediction): a rich bar over
the units of work (requests read, bootstrap resamples, limit searches), then the steps.

Shown only where someone watches a terminal: stderr is a TTY, the output is not JSON on
stdout alone, and the process is not a notebook kernel (widgets and ANSI codes turn into
junk in exported notebooks). Everywhere else :func:`progress_for` returns ``None`` and the
profile runs silently.

    with progress_for(enabled=True) as p:   # None when quiet
        profile_dataset(path, progress=p)
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import IO


def in_notebook() -> bool:
    """Whether this process is an IPython/Jupyter kernel (papermill runs included)."""
    shell = sys.modules.get("IPython")
    if shell is None:
        return False
    try:
        ip = shell.get_ipython()  # type: ignore[attr-defined]
    except AttributeError:
        return False
    return ip is not None and "IPKernelApp" in getattr(ip, "config", {})


def progress_wanted(*, json_only: bool = False, stream: IO[str] | None = None) -> bool:
    """The quiet rule: a bar only on a TTY, not for JSON-only output, not in a notebook, not when
    ``BEARING_NO_PROGRESS`` is set."""
    stream = sys.stderr if stream is None else stream
    if json_only or os.environ.get("BEARING_NO_PROGRESS") or in_notebook():
        return False
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


class Progress:
    """A rich progress bar: :meth:`start` with the number of requests, :meth:`advance` per batch,
    :meth:`step` for the work after reading (slots, MSTL, bootstrap)."""

    def __init__(self, label: str, stream: IO[str] | None = None) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as RichProgress

        self._bar = RichProgress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), console=Console(file=stream or sys.stderr), transient=True)
        self._task = self._bar.add_task(label, total=None)
        self.label = label

    def __enter__(self) -> Progress:
        self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._bar.stop()

    def start(self, total: int | None, what: str = "reading requests") -> None:
        self._bar.update(self._task, total=total, completed=0, description=f"{self.label}: {what}")

    def advance(self, n: int) -> None:
        self._bar.update(self._task, advance=n)

    def step(self, text: str) -> None:
        self._bar.update(self._task, description=f"{self.label}: {text}")


@contextlib.contextmanager
def progress_for(label: str, *, enabled: bool) -> Iterator[Progress | None]:
    """A :class:`Progress` on stderr when ``enabled`` (see :func:`progress_wanted`), else ``None``."""
    if not enabled:
        yield None
        return
    with Progress(label) as p:
        yield p


__all__ = ["Progress", "in_notebook", "progress_for", "progress_wanted"]
