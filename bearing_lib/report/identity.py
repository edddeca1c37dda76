"""The report's identity: what must match for two reports to be compared (:class:`ReportIdentity`).

The deployment (:data:`bearing_lib.compare.identity.DEPLOYMENT_KEYS`, the identity ``bearing compare`` uses
too) and the question asked of it (SLA, tier, load-test tools, production source). It is written into
``summary.json`` (``identity``) and read back from there by "what changed"; a field None is unknown, never
taken as equal (:func:`bearing_lib.compare.identity.comparability`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class ReportIdentity:
    """One report's identity; each field None when nobody stated it."""

    model: str | None = None
    hardware: str | None = None
    engine: str | None = None
    engine_version: str | None = None
    instances: int | None = None
    sla: str | None = None
    tier: str | None = None
    load_test_tools: str | None = None
    production_format: str | None = None

    def to_dict(self) -> dict[str, str | int | None]:
        """The ``identity`` object of ``summary.json`` (every key, None = unknown); also the mapping
        :func:`~bearing_lib.compare.identity.comparability` compares."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls, d: Mapping[str, object]) -> ReportIdentity:
        """From a ``summary.json``'s ``identity`` (already checked to be an object by
        :meth:`~bearing_lib.report.summary.ReportSummary.from_dict`): a key missing (a summary written before
        engine, engine version and instances were part of it) reads as unknown; a key not of the identity is
        left out, as the comparison never read it."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})  # type: ignore[arg-type]

__all__ = ["ReportIdentity"]
