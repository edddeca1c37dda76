"""The one blended capacity: the weighted harmonic mean of per-mix limits.

A request of mix *m* uses ``1 / Q_m`` of a second of the service, so with production
weights ``w_m`` (renormalised to sum 1) the fleet carries ``Q_blend = 1 / Σ w_m / Q_m``.
Used by the limits' blended limit (offered-load basis) and by the plan's blended FOS
(completed req/s basis): one function, so the two cannot drift.

    >>> round(blended_capacity([10.0, 40.0], [0.5, 0.5]), 6)
    16.0
    >>> blended_capacity([12.0, float("inf")], [0.5, 0.5])  # an unbounded mix costs nothing
    24.0
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from bearing_lib.common.errors import ParameterError


def blended_capacity(limits: Sequence[float], weights: Sequence[float]) -> float:
    """``1 / Σ (w_m / Q_m)`` with ``w`` renormalised to sum 1; ``Q_m`` may be ``inf``, never ≤ 0 or NaN."""
    q = np.asarray(limits, dtype=float)
    w = np.asarray(weights, dtype=float)
    if (q.size == 0 or q.size != w.size or np.isnan(q).any() or (q <= 0).any() or np.isnan(w).any()
            or (w < 0).any() or w.sum() <= 0):
        raise ParameterError("blended capacity needs positive limits and non-negative weights of the same length "
                             f"(got limits {q.tolist()}, weights {w.tolist()})")
    w = w / w.sum()
    return float(1.0 / np.sum(w / q))


__all__ = ["blended_capacity"]
