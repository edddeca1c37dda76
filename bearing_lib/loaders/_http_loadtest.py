"""Helpers of the ramp-driven HTTP load-test loaders (Locust, k6, Vegeta, JMeter).

What every load-test loader shares (``finish_loadpoints``, step rows, JSON lines,
``stats_to_columns``) is in :mod:`bearing_lib.loaders._loadtest`; here:

- :func:`cut_plateaus`: cut a ramp (users, VUs, threads over time) into constant-level steps.
- :func:`rate_from_name`: a load level written only in a file name.
- :func:`status_from_http`: HTTP status code → canonical status.
- :func:`parse_go_duration`: Go ``time.Duration`` strings (``1m29.8s``, ``350µs``) → seconds.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from bearing_lib.common.errors import BadValueError
from bearing_lib.loaders._loadtest import step_row

if TYPE_CHECKING:  # numpy is imported inside the functions that use it (detection stays light)
    import numpy as np

DEFAULT_MIN_PLATEAU_S = 10.0
"""A load level must hold this long (seconds) to count as a step (see :func:`cut_plateaus`)."""


# --------------------------------------------------------------------------- plateaus
@dataclass(frozen=True)
class Plateau:
    """A time interval ``[start_s, end_s)`` during which the load level stayed at ``level``."""

    step: int
    level: float
    start_s: float
    end_s: float

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s


def cut_plateaus(
    t_s: Sequence[float] | np.ndarray,
    level: Sequence[float] | np.ndarray,
    *,
    min_hold_s: float = DEFAULT_MIN_PLATEAU_S,
    bin_s: float = 1.0,
    skip_levels: Sequence[float] = (0,),
) -> list[Plateau]:
    """Cut a load ramp into steps: the intervals where the level stayed constant long enough.

    The rule (the same for Locust users, k6 VUs and JMeter threads): observations
    ``(t_s, level)`` are put in ``bin_s`` bins (1 s), each bin takes the most frequent
    level in it (ties: the higher level), so the jitter of per-sample counters at a
    transition does not break a plateau. Consecutive bins with the same level form a
    run; a run whose span (first bin start to last bin end) is at least ``min_hold_s``
    seconds is a plateau, numbered in time order from 0. Empty bins neither extend nor
    break a run. Runs at a level in ``skip_levels`` (0 users: before start, after stop)
    are not steps. Everything else (the ramp between plateaus) belongs to no step.
    """
    import numpy as np
    t = np.asarray(t_s, dtype=float)
    lv = np.asarray(level, dtype=float)
    ok = ~(np.isnan(t) | np.isnan(lv))
    t, lv = t[ok], lv[ok]
    if t.size == 0:
        return []
    order = np.argsort(t, kind="stable")
    t, lv = t[order], lv[order]
    t0 = t[0]
    b = np.floor((t - t0) / bin_s).astype(np.int64)
    # mode per bin (ties -> higher level): polars group_by keeps this short and exact
    df = (
        pl.DataFrame({"b": b, "lv": lv})
        .group_by("b", "lv")
        .len()
        .sort(["b", "len", "lv"], descending=[False, True, True])
    )
    per_bin = df.group_by("b", maintain_order=True).first().sort("b")
    bins = per_bin["b"].to_numpy()
    levels = per_bin["lv"].to_numpy()
    plateaus: list[Plateau] = []
    i = 0
    n = len(bins)
    while i < n:
        j = i
        while j + 1 < n and levels[j + 1] == levels[i]:
            j += 1
        start = t0 + bins[i] * bin_s
        end = t0 + (bins[j] + 1) * bin_s
        if end - start >= min_hold_s and levels[i] not in skip_levels:
            plateaus.append(Plateau(step=len(plateaus), level=float(levels[i]), start_s=start, end_s=end))
        i = j + 1
    return plateaus


def plateau_steps(plateaus: Sequence[Plateau], *, run_id: str, unit: str, source_file: str) -> list[dict[str, object]]:
    """Per-step facts (:data:`~bearing_lib.data.trace.STEP_SCHEMA` rows) for plateaus: duration = plateau length."""
    return [step_row(run_id, p.step, p.level, unit, duration_s=p.duration_s, source_file=source_file)
            for p in plateaus]


def assign_steps(t_s: np.ndarray | pl.Series, plateaus: Sequence[Plateau]) -> tuple[np.ndarray, np.ndarray]:
    """Step index and level for each time in ``t_s`` (NaN / -1 outside every plateau)."""
    import numpy as np
    t = np.asarray(t_s, dtype=float)
    step = np.full(t.shape, -1, dtype=np.int64)
    lvl = np.full(t.shape, np.nan)
    for p in plateaus:
        m = (t >= p.start_s) & (t < p.end_s)
        step[m] = p.step
        lvl[m] = p.level
    return step, lvl


# --------------------------------------------------------------------------- names, codes, durations
_NUM = r"(\d+(?:\.\d+)?)"


def rate_from_name(name: str, patterns: Sequence[str]) -> float | None:
    """The first number captured by one of ``patterns`` (regexes with one group) in ``name``."""
    for pat in patterns:
        m = re.search(pat, name)
        if m:
            return float(m.group(1))
    return None


def status_from_http(code: int | None) -> str:
    """Canonical status of an HTTP status code: 2xx/3xx ok, 429 rejected, 408/504 timeout, else error."""
    if code is None:
        return "error"
    if 200 <= code < 400:
        return "ok"
    if code == 429:
        return "rejected"
    if code in (408, 504):
        return "timeout"
    return "error"


def status_expr(code: pl.Expr) -> pl.Expr:
    """Polars form of :func:`status_from_http` for an integer code column (null → error)."""
    return (
        pl.when(code.is_between(200, 399))
        .then(pl.lit("ok"))
        .when(code == 429)
        .then(pl.lit("rejected"))
        .when(code.is_in([408, 504]))
        .then(pl.lit("timeout"))
        .otherwise(pl.lit("error"))
    )


_GO_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ns": 1e-9}
_GO_PART = re.compile(r"(\d+(?:\.\d+)?)(h|ms|m|s|us|µs|μs|ns)")


def parse_go_duration(text: str) -> float:
    """Seconds in a Go ``time.Duration`` string such as ``1m29.801399599s`` or ``350µs``.

    Raises ``ValueError`` for anything else.
    """
    s = text.strip()
    if s in ("0", "0s"):
        return 0.0
    pos, total = 0, 0.0
    for m in _GO_PART.finditer(s):
        if m.start() != pos:
            raise ValueError(f"not a Go duration: {text!r}")
        total += float(m.group(1)) * _GO_UNITS[m.group(2)]
        pos = m.end()
    if pos != len(s) or pos == 0:
        raise ValueError(f"not a Go duration: {text!r}")
    return total


def rfc3339_to_epoch_s(text: str, path: Path, line: int) -> float:
    """RFC3339 time with any UTC offset (or ``Z``) → UTC epoch seconds, all fraction digits kept.

    Raises :class:`BadValueError` naming ``path``/``line`` when the text is not RFC3339 or
    has no offset.
    """
    s = text.strip()
    if s.endswith("Z"):
        s = s[:-1] + "+00:00"
    frac = 0.0
    if "." in s:
        head, rest = s.split(".", 1)
        digits = ""
        while rest and rest[0].isdigit():
            digits, rest = digits + rest[0], rest[1:]
        frac = float("0." + digits) if digits else 0.0
        s = head + rest
    try:
        dt = datetime.fromisoformat(s)
    except ValueError:
        raise BadValueError(f"expected an RFC3339 time, found {text!r}", path=path, row=line, field="time") from None
    if dt.tzinfo is None:
        raise BadValueError(f"time {text!r} has no UTC offset", path=path, row=line, field="time")
    return dt.timestamp() + frac
