"""Fixtures for the report tests: the HAND-MADE contract documents in tests/fixtures/report/.

They are written by hand to follow docs/interfaces.md §4-6 (see that folder's README);
they are not measurements.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from bearing_lib.report.model import ReportModel, build_report, make_provenance

HAND_MADE = Path(__file__).resolve().parents[1] / "fixtures" / "report"


def hand_made(name: str) -> dict[str, Any]:
    """A fresh copy of one hand-made document (limits, profile, plan, previous_summary)."""
    return copy.deepcopy(json.loads((HAND_MADE / f"{name}.json").read_text(encoding="utf-8")))


def provenance(**params: Any):
    return make_provenance(parameters=params or {"tier": "standard"},
                           inputs=[{"role": "limits", "path": str(HAND_MADE / "limits.json"), "sha256": "ab" * 32}])


@pytest.fixture
def docs() -> dict[str, dict[str, Any]]:
    return {n: hand_made(n) for n in ("limits", "profile", "plan", "previous_summary")}


@pytest.fixture
def full_model(docs) -> ReportModel:
    return build_report(limits=docs["limits"], profile=docs["profile"], plan=docs["plan"],
                        previous=docs["previous_summary"], provenance=provenance(), name="2026-W48")
