"""Compare deployments under one SLA: which one to run (``bearing compare``; ``docs/compare.md``).

Names are imported on first use (PEP 562, :func:`bearing_lib.common.lazy.lazy_exports`): the report's
``summary.json`` reader needs the comparison's types, not the limits and loaders that ``compare`` runs on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bearing_lib.common.lazy import lazy_exports

if TYPE_CHECKING:  # pragma: no cover
    from bearing_lib.compare.build import compare
    from bearing_lib.compare.chart import pareto_chart
    from bearing_lib.compare.page import page_html, write_page
    from bearing_lib.compare.result import (
        Comparison,
        Deployment,
        FleetPlan,
        Identity,
        PairDifference,
        Ratio,
        StepPoint,
    )

_WHERE = {
    "Comparison": "bearing_lib.compare.result",
    "Deployment": "bearing_lib.compare.result",
    "FleetPlan": "bearing_lib.compare.result",
    "Identity": "bearing_lib.compare.result",
    "PairDifference": "bearing_lib.compare.result",
    "Ratio": "bearing_lib.compare.result",
    "StepPoint": "bearing_lib.compare.result",
    "compare": "bearing_lib.compare.build",
    "page_html": "bearing_lib.compare.page",
    "pareto_chart": "bearing_lib.compare.chart",
    "write_page": "bearing_lib.compare.page",
}

__all__ = [
    "Comparison",
    "Deployment",
    "FleetPlan",
    "Identity",
    "PairDifference",
    "Ratio",
    "StepPoint",
    "compare",
    "page_html",
    "pareto_chart",
    "write_page",
]


__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
