"""Per step of one run, the load curve's totals over every mix: the rates an offered load is compared with.

The load curve (``limits.curves``) has a row per run × step × mix; a mix's limit is placed on the step's whole
load, so the throughput at the limit (``q_ult.throughput_rps``, ``q_ult.tokens_per_s``) and the saturation cap
(``curves.saturation_cap``) read the step's rates summed over its mixes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import polars as pl


@dataclass(frozen=True)
class StepTotal:
    """One step's rates summed over the mixes of its run (None when no mix knows the rate)."""

    throughput_rps: float | None
    output_tokens_per_s: float | None


@dataclass(frozen=True)
class StepTotals:
    """Per step (the curve's step number) of one run, its :class:`StepTotal`."""

    steps: Mapping[int, StepTotal]

    @classmethod
    def of_frame(cls, frame: pl.DataFrame) -> StepTotals:
        """From one run's per-step totals, a row per step (columns ``step``, ``throughput_rps``,
        ``output_tokens_per_s``: the load curve's rows summed over mixes, as ``limits.fit`` groups them)."""
        return cls({int(step): StepTotal(thr, tok) for step, thr, tok in
                    frame.select("step", "throughput_rps", "output_tokens_per_s").iter_rows()})

    def total(self, step: int) -> StepTotal | None:
        """The step's totals; None when the step is not in the run's curve."""
        return self.steps.get(int(step))


__all__ = ["StepTotal", "StepTotals"]
