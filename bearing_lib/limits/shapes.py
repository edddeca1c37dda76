"""An earlier test's shape: how a clause's bad share rises with load, carried from one test of a service to the next.

The model (``limits.model``) learns two things from a stepped test: **where** the bad share crosses its allowance
(the limit) and **how** it gets there (the steepness ``β`` of the logistic in log load, and the step-to-step
variability ``c``). From one 10 × 120 s test the "how" is poorly known, and that is most of the interval's width
(docs/oracle.md, round 11: knowing the shape narrows it two- to fourfold). A service tested before has told us
the "how" already: its limits JSON holds each clause's posterior over ``(β, c)`` (:class:`ClauseShape`), and a later
test can take it as the prior of its own shape while learning its limit from its own steps alone.

Two guards keep that honest:

* the earlier shape is used only where the later test's steps favour it over the flat prior (Bayes factor at least
  :data:`~bearing_lib.limits.model.SHAPE_GATE`): a service whose share now rises differently (another engine
  version, another request mix) keeps its own, wider interval, and the note says so;
* the earlier shape must be on the same grid (same steepness and concentration values: the same kind of input and
  a bearing that writes the same grid), on the same load axis (unit) and from steps of about the same length (within
  :data:`STEP_RATIO`: the step-to-step variability is that of steps so long), else it is not used, said in the note.

Each limit writes its **own** shape (from the flat prior), never the one combined with the earlier test's: a chain
of tests does not count the first test twice. docs/oracle.md, round 13, measures coverage and width.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from bearing_lib.common.errors import ShapeUnusable
from bearing_lib.limits.result import ClauseShape, LimitsResult

if TYPE_CHECKING:
    from bearing_lib.limits.model import ClausePosterior

STEP_RATIO = 1.5
"""The longest ratio of the two tests' median step durations for which an earlier shape is offered (only same-length
pairs were measured: docs/oracle.md, round 13)."""


@dataclass(frozen=True)
class ShapePriors:
    """The earlier test's clause shapes per (run, mix), and where they came from."""

    by_run_mix: Mapping[tuple[str, str], Mapping[str, ClauseShape]]
    source: str
    sha256s: frozenset[str] = frozenset()
    """The files the earlier test was fitted on (its ``conditions.sources``)."""

    @classmethod
    def of(cls, earlier: LimitsResult | str | Path, *, source: str | None = None) -> ShapePriors:
        """The shapes of a limits result (or a limits JSON file)."""
        if not isinstance(earlier, LimitsResult):
            from bearing_lib.common.files import read_json

            path = Path(earlier)
            source = source or str(path)
            earlier = LimitsResult.from_dict(read_json(path, "shape_from limits JSON"),
                                             source=f"shape_from limits JSON {path}")
        source = source or "an earlier limits result"
        by: dict[tuple[str, str], dict[str, ClauseShape]] = {}
        for m in earlier.mixes:
            if m.shapes:
                by[(m.run_id, m.mix.name)] = {s.clause: s for s in m.shapes}
        if not by:
            raise ShapeUnusable(f"shape_from {source}: no limit in it carries a shape (the model writes one per "
                                "clause that some step held evidence of, for a load-point table or a request trace "
                                "fitted with the model estimator, the default; a limit of the pooled estimator "
                                "(--estimator pooled), or one whose steps could not be judged, has none)")
        return cls(by, source, frozenset(x.sha256 for x in earlier.conditions.sources if x.sha256))

    def check_not_self(self, sha256s: list[str | None]) -> None:
        """A :class:`ParameterError` when the later test reads a file the earlier one was fitted on: its steps would
        count twice (once in the prior, once in the likelihood) and the interval would claim more than they hold."""
        same = sorted({x for x in sha256s if x} & self.sha256s)
        if same:
            raise ShapeUnusable(f"shape_from {self.source}: it was fitted on the same file(s) as this test (sha256 "
                                 f"{', '.join(x[:12] for x in same)}): its shape is this test's own, and would count "
                                 "these steps twice; give the limits of an earlier, separate test")

    def match(self, run: str, mix: str) -> tuple[Mapping[str, ClauseShape], str | None]:
        """The shapes for one (run, mix) of the later test: the same run and mix when the earlier test has it (a
        repeat of the same workload), else the mix's only run there; with none or several, none and the reason."""
        if (run, mix) in self.by_run_mix:
            return self.by_run_mix[(run, mix)], None
        runs = sorted(r for r, m in self.by_run_mix if m == mix)
        if len(runs) == 1:
            return self.by_run_mix[(runs[0], mix)], None
        if not runs:
            return {}, (f"the earlier test ({self.source}) has no shape for mix {mix!r}: this limit's shape is its "
                        "own")
        return {}, (f"the earlier test ({self.source}) holds mix {mix!r} in {len(runs)} runs ({', '.join(runs)}) and "
                    f"none is run {run!r}: which one speaks for this test is not clear, so none was used")


def concentration_key(concentrations: np.ndarray) -> list[float | None]:
    """The concentration grid as the JSON writes it (None for the binomial's infinity)."""
    return [None if math.isinf(c) else float(c) for c in np.asarray(concentrations, float)]


def prior_array(shape: ClauseShape, betas: np.ndarray, concentrations: np.ndarray) -> np.ndarray | None:
    """The earlier shape as prior weights on this model's grid; None when the grids differ (:func:`mismatch` has
    already refused weights that are no distribution)."""
    if len(shape.steepness) != len(betas) or not np.allclose(shape.steepness, betas, rtol=1e-9):
        return None
    if shape.concentration != concentration_key(concentrations):
        return None
    w = np.asarray(shape.weights, float)
    return w if w.shape == (len(betas), len(concentrations)) else None


def mismatch(shape: ClauseShape, unit: str | None, step_s: float | None, jitter: float | None = None) -> str | None:
    """Why an earlier shape does not fit this test's design (another load axis, steps of another length, steps read
    at another load jitter); None when it does or the earlier file does not say (written before these were
    recorded)."""
    w = np.asarray(shape.weights, float)
    if w.size == 0 or not np.isfinite(w).all() or (w < 0).any() or w.sum() <= 0:
        return "its weights are not a distribution (finite, non-negative, a positive sum): an edited or damaged file?"
    if shape.unit and unit and shape.unit != unit:
        return f"its load axis is {shape.unit}, this test's {unit} (the steepness is per log load of the axis)"
    if shape.step_s and step_s and max(shape.step_s, step_s) / min(shape.step_s, step_s) > STEP_RATIO:
        return (f"its steps lasted {shape.step_s:.4g} s, this test's {step_s:.4g} s (the step-to-step variability is "
                f"that of steps so long; only pairs within a factor {STEP_RATIO:g} were measured)")
    if shape.jitter is not None and jitter is not None and abs(shape.jitter - jitter) > 1e-9:
        return (f"its steps were read at a load jitter of {shape.jitter:.0%}, this test's at {jitter:.0%} (separate "
                "runs pooled are read with one, a single run without: the steepness and step-to-step variability "
                "of one reading are not those of the other)")
    return None


def clause_shape(post: ClausePosterior, betas: np.ndarray, concentrations: np.ndarray,
                 offered: ClauseShape | None, source: str | None, unit: str | None = None,
                 step_s: float | None = None, jitter: float | None = None) -> ClauseShape | None:
    """The shape a limit writes: this test's own posterior, and what became of an earlier shape offered to it."""
    if post.shape is None:
        return None
    w = post.shape / post.shape.sum()
    bf = post.shape_bayes_factor
    return ClauseShape(clause=post.name, steepness=[float(b) for b in betas],
                       concentration=concentration_key(concentrations),
                       weights=[[float(f"{x:.6g}") for x in row] for row in w],
                       prior_from=source if offered is not None else None,
                       bayes_factor=bf, prior_used=post.shape_used, unit=unit,
                       step_s=None if step_s is None else float(f"{step_s:.6g}"), jitter=jitter)


def shape_note(clause: str, post: ClausePosterior | None, offered: ClauseShape, source: str, gate: float,
               why_not: str | None = None) -> str:
    """One clause's line in the notes: whether the earlier test's shape was used, and why."""
    if why_not is not None:
        return f"{clause}: the earlier test's shape ({source}) was not used: {why_not}"
    if post is None or post.shape_bayes_factor is None:
        return (f"{clause}: the earlier test's shape ({source}) is on another grid (another kind of input or "
                "bearing version) and was not used")
    bf = post.shape_bayes_factor
    shown = f"{bf:.6g}" if abs(bf - gate) < 0.01 * gate else f"{bf:.3g}"  # never "1 ... below 1"
    if post.shape_used:
        return (f"{clause}: steepness and step-to-step variability taken from the earlier test ({source}); its shape "
                f"fits these steps (Bayes factor {shown} against the flat prior, at least {gate:g}), so the interval "
                "rests on both tests' shape and on this test's steps for the limit")
    return (f"{clause}: the earlier test's shape ({source}) does not fit these steps (Bayes factor {shown} against "
            f"the flat prior, below {gate:g}): not used; the share rises differently now (another engine, version "
            "or mix?), and the interval is this test's own")


__all__ = ["STEP_RATIO", "ShapePriors", "clause_shape", "concentration_key", "mismatch", "prior_array", "shape_note"]
