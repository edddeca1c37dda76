"""Compare deployments under one SLA: which one to run (``bearing compare``; ``docs/compare.md``)."""

from bearing_lib.compare.build import compare
from bearing_lib.compare.chart import pareto_chart
from bearing_lib.compare.page import page_html, write_page
from bearing_lib.compare.result import Comparison, Deployment, FleetPlan, Identity, PairDifference, Ratio, StepPoint

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
