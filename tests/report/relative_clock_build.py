"""Build a report from a real relative-clock production trace (no notebooks): the bundled
Mooncake conversation trace or the bundled ServeGen rate-window sample, against the limits
fitted on the bundled LMBenchmark llm-d load test (its ``sharegpt`` run)."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from bearing_lib.app import pipeline
from bearing_lib.report.render import write_report
from tests.report.conftest import provenance

ROOT = Path(__file__).resolve().parents[2]
MOONCAKE = ROOT / "data" / "traces" / "mooncake-fast25" / "conversation_trace.jsonl"
SERVEGEN = ROOT / "tests" / "fixtures" / "servegen" / "mm-image"
LOADTEST = ROOT / "data" / "loadtests" / "lmbenchmark-llm-d-exp2" / "llm-d-70b-2replicas"
SLA = "p95(ttft) <= 1s and error_rate <= 1%"
RUN = "llm-d-70b-2replicas/sharegpt"


@cache
def limits_doc() -> dict[str, Any]:
    return pipeline.limits_document(pipeline.limits(pipeline.load(LOADTEST), SLA, n_boot=100))


def build(trace_path: Path, out: Path, *, span: str = "") -> tuple[Any, dict[str, Any]]:
    """The report model and written files for ``trace_path`` (windowed by ``span``)."""
    limits = limits_doc()
    trace = pipeline.window(pipeline.load(trace_path), span=span)
    traffic = pipeline.profile(trace, limits, n_boot=200)
    plan = pipeline.plan(limits, traffic, trace if isinstance(trace, pipeline.RequestTrace) else None, run=RUN)
    model = pipeline.report(limits_doc=limits, profile_doc=pipeline.document(traffic),
                            plan_doc=pipeline.document(plan), previous=None, parameters={"window": span},
                            inputs=[], name=trace_path.name, run=RUN, traffic=traffic, output_dir=out)
    model.provenance = provenance(window=span)
    return model, write_report(model, out)
