"""``summary.json`` read back: the typed part of a report that other reports, the index, the runner
and the CLI use.

A report writes its whole model as ``summary.json`` (:meth:`ReportModel.to_dict`); what is read
back by other code is this part of it, validated once here, where the file enters:

* the header: ``schema``, ``name``, ``verdict``, ``headline`` (its ``text``), the run time
  (``provenance.run_time_utc``);
* ``identity``: what makes two reports comparable (:data:`IDENTITY_KEYS`);
* ``limits``: the compact per-mix limits (``q_ult`` offered, ``achieved``) and the blended FOS
  (``fos.data.blended``), which "what changed" compares;
* ``compare``: the deployment comparison (``{available, reason, data}``; ``data`` is
  :class:`~bearing_lib.report.compare_section.CompareSection`, its ``comparison`` the
  ``bearing.compare/1`` document). Reports not given deployments to compare write it not
  available; a summary without the key (written before the section existed) reads as not built.
* ``fidelity``: how far the load test is from production (``{"available", "reason", "data"}``, ``data`` a
  :class:`~bearing_lib.fidelity.Fidelity`); a file without the block reads as "not assessed".

:meth:`ReportSummary.from_dict` takes the current schema only (``bearing.report.summary/2``) and
raises :class:`SchemaError` naming the file, the field and what was expected; there is no
second accepted shape. :meth:`ReportSummary.to_dict` writes the same keys, which
:meth:`ReportModel.to_dict` puts into ``summary.json`` (so the reader and the writer are one class).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bearing_lib.common.errors import SchemaError
from bearing_lib.common.estimate import Estimate
from bearing_lib.fidelity.result import Fidelity
from bearing_lib.report.compare_section import CompareSection
from bearing_lib.report.identity import ReportIdentity

SUMMARY_SCHEMA = "bearing.report.summary/2"
IDENTITY_KEYS = ("model", "hardware", "sla", "tier", "load_test_tools", "production_format")
VERDICTS = ("green", "yellow", "red", "unknown")


@dataclass
class SummaryLimit:
    """One mix of the compact ``limits`` block: the offered limit and the throughput completed there."""

    name: str
    q_ult: Estimate
    achieved: Estimate

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "q_ult": self.q_ult.to_dict(), "achieved": self.achieved.to_dict()}


@dataclass
class ReportSummary:
    """The typed reading of a ``summary.json`` (module docstring)."""

    name: str
    verdict: str
    headline: str
    run_time_utc: str | None
    identity: ReportIdentity
    limits_available: bool
    limits: list[SummaryLimit] = field(default_factory=list)
    blended_fos: Estimate | None = None
    comparison: CompareSection | None = None
    """The deployment comparison, when the report was given deployments to compare."""
    compare_reason: str | None = "not built"
    """Why there is no comparison (None when there is one)."""
    fidelity: Fidelity | None = None
    fidelity_reason: str | None = None
    """Why there is no ``fidelity`` (not assessed, or the section's reason)."""

    def limit(self, name: str) -> SummaryLimit | None:
        return next((x for x in self.limits if x.name == name), None)

    def to_dict(self) -> dict[str, Any]:
        """The keys of ``summary.json`` this class reads (the rest of the file is the report model)."""
        return {
            "schema": SUMMARY_SCHEMA,
            "verdict": self.verdict,
            "name": self.name,
            "headline": {"text": self.headline},
            "provenance": {"run_time_utc": self.run_time_utc},
            "fos": {"data": {"blended": self.blended_fos.to_dict() if self.blended_fos is not None else None}},
            "limits": {"available": self.limits_available, "mixes": [x.to_dict() for x in self.limits]},
            "identity": self.identity.to_dict(),
            "compare": {"available": self.comparison is not None,
                        "reason": None if self.comparison is not None else self.compare_reason,
                        "data": self.comparison.to_dict() if self.comparison is not None else {}},
            "fidelity": {"available": self.fidelity is not None, "reason": self.fidelity_reason,
                         "data": self.fidelity.to_dict() if self.fidelity is not None else {}},
        }

    @classmethod
    def from_dict(cls, doc: Any, *, source: str = "summary.json") -> ReportSummary:
        """Validate ``doc`` (a parsed ``summary.json``); every problem is listed in one :class:`SchemaError`."""
        if not isinstance(doc, dict):
            raise SchemaError(f"{source}: expected a JSON object (a bearing report summary), got {type(doc).__name__}")
        problems: list[str] = []

        def need(path: str, value: Any, kind: type | tuple[type, ...], what: str) -> Any:
            if not isinstance(value, kind):
                problems.append(f"{path}: expected {what} (found {value!r:.60})")
                return None
            return value

        schema = doc.get("schema")
        if schema != SUMMARY_SCHEMA:
            raise SchemaError(f"{source}: field 'schema' is {schema!r}, expected {SUMMARY_SCHEMA!r} "
                              "(a summary.json written by an older or newer bearing; rerun that report)")
        name = need("name", doc.get("name"), str, "the report name (text)")
        verdict = need("verdict", doc.get("verdict"), str, f"one of {', '.join(VERDICTS)}")
        if verdict is not None and verdict not in VERDICTS:
            problems.append(f"verdict: expected one of {', '.join(VERDICTS)} (found {verdict!r})")
        head = need("headline", doc.get("headline"), dict, "an object with 'text'") or {}
        text = need("headline.text", head.get("text"), str, "text") if head else None
        prov = need("provenance", doc.get("provenance"), dict, "an object with 'run_time_utc'") or {}
        run_time = prov.get("run_time_utc")
        if run_time is not None:
            need("provenance.run_time_utc", run_time, str, "an ISO UTC time or null")
        identity = need("identity", doc.get("identity"), dict, "an object with " + ", ".join(IDENTITY_KEYS)) or {}
        missing = [k for k in IDENTITY_KEYS if k not in identity]
        if identity and missing:
            problems.append(f"identity: missing key(s) {', '.join(missing)}")
        lim = need("limits", doc.get("limits"), dict, "an object with 'available' and 'mixes'") or {}
        avail = need("limits.available", lim.get("available"), bool, "true or false") if lim else None
        rows: list[SummaryLimit] = []
        for i, m in enumerate(need("limits.mixes", lim.get("mixes"), list, "a list") or [] if lim else []):
            where = f"limits.mixes[{i}]"
            if need(where, m, dict, "an object with name, q_ult, achieved") is None:
                continue
            n = need(f"{where}.name", m.get("name"), str, "the mix name (text)")
            q = _estimate(m.get("q_ult"), f"{where}.q_ult", problems)
            a = _estimate(m.get("achieved"), f"{where}.achieved", problems)
            if n is not None and q is not None and a is not None:
                rows.append(SummaryLimit(n, q, a))
        fos = need("fos", doc.get("fos"), dict, "the FOS section (an object)") or {}
        fos_data = fos.get("data") if fos else None
        blended = None
        if isinstance(fos_data, dict) and fos_data.get("blended") is not None:
            blended = _estimate(fos_data["blended"], "fos.data.blended", problems)
        elif fos and not isinstance(fos_data, dict):
            problems.append(f"fos.data: expected an object (found {fos_data!r:.60})")
        comparison, compare_reason = _compare(doc.get("compare", _NOT_BUILT), problems)
        fid, fid_reason = _fidelity(doc.get("fidelity"), problems)
        if problems:
            raise SchemaError(f"{source}: {len(problems)} problem(s):\n  " + "\n  ".join(problems))
        return cls(name=name, verdict=verdict, headline=text, run_time_utc=run_time,
                   identity=ReportIdentity.from_dict(identity),
                   limits_available=avail, limits=rows, blended_fos=blended, comparison=comparison,
                   compare_reason=compare_reason, fidelity=fid, fidelity_reason=fid_reason)

    @classmethod
    def read(cls, path: str | Path) -> ReportSummary:
        """Read and validate ``path`` (raises :class:`SchemaError` or ``OSError``; bad JSON is a SchemaError)."""
        import json

        p = Path(path)
        try:
            doc = json.loads(p.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise SchemaError(f"{p}: not JSON ({exc})") from None
        return cls.from_dict(doc, source=str(p))


_NOT_BUILT = {"available": False, "reason": "not built (a summary written before the comparison section)", "data": {}}


def _compare(block: Any, problems: list[str]) -> tuple[CompareSection | None, str | None]:
    """The ``compare`` block: the comparison when available, else the reason."""
    if not isinstance(block, dict) or not isinstance(block.get("available"), bool):
        problems.append(f"compare: expected an object with 'available' (true or false), 'reason' and 'data' "
                        f"(found {block!r:.60})")
        return None, None
    if not block["available"]:
        reason = block.get("reason")
        if not isinstance(reason, str):
            problems.append(f"compare.reason: expected text saying why there is no comparison (found {reason!r:.60})")
        return None, reason if isinstance(reason, str) else None
    try:
        return CompareSection.from_dict(block.get("data"), source="compare.data"), None
    except SchemaError as exc:
        problems.append(str(exc).replace("\n", " "))
        return None, None


def _fidelity(block: Any, problems: list[str]) -> tuple[Fidelity | None, str | None]:
    """The ``fidelity`` block: (the typed result, None), or (None, why there is none)."""
    if block is None:
        return None, "the fidelity of the test was not assessed for this report"
    if not isinstance(block, dict) or not isinstance(block.get("available"), bool):
        problems.append(f"fidelity: expected an object with 'available', 'reason', 'data' (found {block!r:.60})")
        return None, None
    if not block["available"]:
        return None, str(block.get("reason") or "not available")
    try:
        return Fidelity.from_dict(block.get("data"), source="fidelity.data"), None
    except SchemaError as exc:
        problems.append(str(exc))
        return None, None


def _estimate(d: Any, where: str, problems: list[str]) -> Estimate | None:
    if not isinstance(d, dict):
        problems.append(f"{where}: expected a value with its CI (an object with value, ci95, bound, unit, basis) "
                        f"(found {d!r:.60})")
        return None
    try:
        return Estimate.from_dict(d)
    except SchemaError as exc:
        problems.append(f"{where}: {str(exc).replace(chr(10), ' ')}")
        return None


__all__ = ["IDENTITY_KEYS", "SUMMARY_SCHEMA", "ReportSummary", "SummaryLimit"]
