"""The plan's exports as a report lists them: each file written into a folder, its validator and verdict.

:func:`export_report` writes every format :func:`bearing_lib.ops.exports.export` knows into ``folder`` (a format
that cannot be written, e.g. a rate below nginx's 1 request a minute, is said in its row and does not stop the
rest), runs each file's validator (:mod:`bearing_lib.ops.validate`; a validator not installed is "not run", never
a pass) and returns :class:`ExportsReport`: the files with paths relative to the folder's parent (so the links
hold when that folder is moved), the numbers the files were computed from and the statement in words. Its JSON is
``to_dict`` / ``from_dict`` at the edge.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from bearing_lib.common.errors import BearingError
from bearing_lib.common.files import jsonable, write_text_atomic

if TYPE_CHECKING:  # pragma: no cover
    from bearing_lib.ops.exports import ExportTarget, PlanNumbers

Verdict = Literal["passed", "FAILED", "not run", "not written", "input", "manifest"]


@dataclass
class ExportedFile:
    """One file: its format (``inputs`` / ``manifest`` for the plan JSON, the limits JSON and ``exports.json``),
    path relative to the report (None: not written), validator, whether it passed (``ok`` None: not checked),
    the verdict in a word and the validator's output (or why the file was not written)."""

    format: str
    path: str | None
    validator: str | None
    ok: bool | None
    verdict: Verdict
    output: str


@dataclass
class ExportedNumbers:
    """The plan's numbers the files were computed from: the per-instance allowable load, the autoscaler's target
    per pod, the replica bounds, the CBU threshold and the SLA clauses the alerts come from."""

    per_instance_allowable_rps: float
    scale_target_rps: float
    min_replicas: int
    max_replicas: int
    cbu_threshold: float
    sla: list[str]


@dataclass
class ExportsReport:
    """What was exported (``written``), or why nothing was (``reason``): the files, the numbers, a note when the
    plan's limit is a bound (``bound_note``), the statement and how to apply them."""

    _OMIT_NONE = ("reason", "folder", "numbers", "statement", "apply")
    written: bool
    files: list[ExportedFile] = field(default_factory=list)
    reason: str | None = None
    folder: str | None = None
    bound_note: str | None = None
    numbers: ExportedNumbers | None = None
    statement: str | None = None
    apply: str | None = None

    @classmethod
    def not_written(cls, reason: str) -> ExportsReport:
        return cls(False, reason=reason)

    def to_dict(self) -> dict[str, object]:
        d = jsonable(self)
        if not self.written and self.bound_note is None:
            d.pop("bound_note")
        return d

    @classmethod
    def from_dict(cls, d: object) -> ExportsReport:
        from bearing_lib.common.schema import parse

        return parse(cls, d, what="exports")


def _relative(text: str, folder: Path) -> str:
    """Validator output and manifest paths without the report's absolute folder."""
    return text.replace(str(folder.resolve()) + "/", "").replace(str(folder) + "/", "")


def export_report(numbers: PlanNumbers, folder: str | Path, target: ExportTarget | None = None, *,
                  inputs: tuple[ExportedFile, ...] = ()) -> ExportsReport:
    """Write, validate and list every format into ``folder`` (module docstring). ``inputs`` are listed first
    among the extra rows (the plan and limits JSON the caller wrote beside the files)."""
    from bearing_lib.ops.exports import FILE_NAMES, FORMATS, export

    folder = Path(folder)
    name = folder.name
    ok_formats, errors = [], {}
    for fmt in FORMATS:  # one format that cannot be written does not stop the rest
        try:
            export(numbers, [fmt], folder / ".probe", target, check=False)
            ok_formats.append(fmt)
        except BearingError as exc:
            errors[fmt] = str(exc)
    shutil.rmtree(folder / ".probe", ignore_errors=True)
    w = export(numbers, ok_formats, folder, target, check=True) if ok_formats else None
    checks = {c.path: c for c in (w.checks if w else [])}
    files: list[ExportedFile] = []
    for fmt in FORMATS:
        if fmt in errors:
            files.append(ExportedFile(fmt, None, None, False, "not written", errors[fmt]))
            continue
        for i, fname in enumerate(FILE_NAMES[fmt]):
            c = checks.get(str(folder / fname)) or (checks.get(str(folder / FILE_NAMES[fmt][0])) if i else None)
            verdict: Verdict = "passed" if c and c.ok else ("FAILED" if c and c.ok is False else "not run")
            files.append(ExportedFile(fmt, f"{name}/{fname}", c.validator if c else None, c.ok if c else None,
                                      verdict, _relative(c.output, folder) if c else "no validator for this file"))
    if w is not None:  # the manifest, with paths relative to the exports folder
        manifest = json.loads((folder / "exports.json").read_text())
        text = _relative(json.dumps(manifest, indent=1), folder).replace(f'"{folder}"', '"."')
        write_text_atomic(folder / "exports.json", text + "\n")
    extra = list(inputs)
    if w is not None:
        extra.append(ExportedFile("manifest", f"{name}/exports.json", None, None, "manifest",
                                  "what was written, from which numbers, and each check"))
    n_fail = sum(1 for f in files if f.ok is False)
    n_not_run = sum(1 for f in files if f.verdict == "not run" and f.validator)
    return ExportsReport(
        w is not None, files + extra, folder=name, bound_note=numbers.bound_note,
        numbers=ExportedNumbers(numbers.per_instance_allowable_rps, numbers.scale_target_rps, numbers.min_replicas,
                                numbers.max_replicas,
                                numbers.cbu_threshold, [c.text for c in numbers.sla]),
        statement=(f"{len(files)} file(s) in {name}/: {sum(1 for f in files if f.ok)} passed their validator, "
                   f"{n_fail} failed or not written, {n_not_run} not checked (validator missing)"),
        apply=f"kubectl apply -f {name}/hpa.yaml (or {name}/keda-scaledobject.yaml, not both); "
              f"add {name}/prometheus-rules.yaml to Prometheus' rule_files")


__all__ = ["ExportedFile", "ExportedNumbers", "ExportsReport", "Verdict", "export_report"]
