"""Repeated findings said once: the load-step findings of one source that say the same thing about
several steps become one line naming the steps ("steps 0–4 at offered loads 0.5–2.5: too few requests
for a P99"), and identical messages are counted, not repeated. Codes are shown in words
(:mod:`bearing_lib.report.wording`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bearing_lib.report.wording import plain, words

_STEP = re.compile(r"^step (?P<step>\S+) at offered load (?P<load>[^:]+): (?P<rest>.*)$", re.S)


@dataclass
class FlagLine:
    """One line of the data-quality list: a finding, or several that say the same (``count`` of them)."""

    level: str
    code: str
    label: str
    message: str
    count: int = 1


def _steps_text(steps: list[str], loads: list[str]) -> str:
    if len(steps) == 1:
        return f"step {steps[0]} at offered load {loads[0]}"
    ints = [int(s) for s in steps] if all(s.isdigit() for s in steps) else None
    if ints and ints == list(range(ints[0], ints[0] + len(ints))):
        which = f"steps {ints[0]}–{ints[-1]}"
    else:
        which = "steps " + ", ".join(steps)
    return f"{which} at offered loads {loads[0]}–{loads[-1]}" if len(set(loads)) > 1 else (
        f"{which} at offered load {loads[0]}")


def digest(flags: Sequence[Any]) -> list[FlagLine]:
    """The findings of one source, in their order, with repeats merged (see the module docstring)."""
    out: list[FlagLine] = []
    steps: dict[tuple[str, str, str], tuple[int, list[str], list[str]]] = {}
    same: dict[tuple[str, str, str], int] = {}
    for f in flags:
        level, code, msg = str(f.level), str(f.code), str(f.message)
        m = _STEP.match(msg)
        if m:
            key = (level, code, m.group("rest"))
            if key in steps:
                steps[key][1].append(m.group("step"))
                steps[key][2].append(m.group("load").strip())
                continue
            steps[key] = (len(out), [m.group("step")], [m.group("load").strip()])
            out.append(FlagLine(level, code, words(code), ""))
            continue
        key = (level, code, msg)
        if key in same:
            out[same[key]].count += 1
            continue
        same[key] = len(out)
        out.append(FlagLine(level, code, words(code), plain(msg)))
    for (_level, _code, rest), (i, st, loads) in steps.items():
        out[i].message = f"{_steps_text(st, loads)}: {plain(rest)}"
        out[i].count = len(st)
    return out


__all__ = ["FlagLine", "digest"]
