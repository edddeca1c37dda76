"""The report run's estimator and an earlier test's shape (``--estimator``, ``--shape-from``; ``limits.ipynb``'s
``estimator``, ``shape_from`` and ``shape_required``): ``previous`` is the limits.json of the newest earlier report
that fitted limits, offered and not required, so a scheduled run whose previous report was of the same files, or
of the pooled estimator, still reports, and says why no shape was used.

Real files: the bundled LMBenchmark sharegpt sweeps of vLLM (earlier) and llm-d (later), both Llama-70B on two
replicas, each linked into a folder named ``x`` so that their runs (``x/sharegpt``) match; under ``p99(ttft) <= 2s``
the later steps favour the earlier shape (tests/limits/test_shapes.py measures its Bayes factor, about 3).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bearing_lib.app import pipeline, runner
from bearing_lib.cli.report import _earlier_shape
from bearing_lib.common.errors import ParameterError, ShapeUnusable
from tests.conftest import ROOT
from tests.factories import summary_doc

BUNDLED = ROOT / "data" / "loadtests" / "lmbenchmark-llm-d-exp2"
AZURE = ROOT / "data" / "traces" / "azure-llm-inference-2023" / "AzureLLMInferenceTrace_conv.csv"
SLA = "p99(ttft) <= 2s"


def _sweep(tmp_path: Path, deployment: str) -> Path:
    folder = tmp_path / deployment / "x"
    folder.mkdir(parents=True)
    for f in (BUNDLED / deployment).glob("LMBench_sharegpt_*.csv"):
        (folder / f.name).symlink_to(f)
    return folder


def _report(tmp_path: Path, name: str, *extra: str) -> Path:
    (tmp_path / name).mkdir()
    (tmp_path / name / "summary.json").write_text(json.dumps(summary_doc(name, run_time_utc=extra[0])))
    for f in extra[1:]:
        (tmp_path / name / f).write_text("{}")
    return tmp_path / name


def test_previous_limits_is_the_newest_earlier_report_that_fitted_limits(tmp_path):
    _report(tmp_path, "2026-W46", "2026-11-16T06:00:00Z", "limits.json")
    _report(tmp_path, "2026-W47", "2026-11-23T06:00:00Z")  # given a limits JSON: wrote none
    _report(tmp_path, "adhoc", "2026-11-25T06:00:00Z", "limits.json")
    (tmp_path / "2026-W47.failed-20261123T060000Z").mkdir()
    (tmp_path / "2026-W47.failed-20261123T060000Z" / "limits.json").write_text("{}")
    assert runner.previous_limits(tmp_path, exclude="2026-W48") == tmp_path / "adhoc" / "limits.json"
    # a weekly run looks at earlier weeks only: the ad-hoc report is not last week
    assert runner.previous_limits(tmp_path, exclude="2026-W48", before_week="2026-W48") == \
        tmp_path / "2026-W46" / "limits.json"
    assert runner.previous_limits(tmp_path, exclude="2026-W46", before_week="2026-W46") is None
    assert runner.previous_limits(tmp_path / "none", exclude="x") is None
    # "what changed" still compares with the newest summary, limits or not
    assert runner.previous_summary(tmp_path, exclude="2026-W48", before_week="2026-W48") == \
        tmp_path / "2026-W47" / "summary.json"


def test_shape_from_previous_is_resolved_and_offered_not_required(tmp_path):
    _report(tmp_path, "2026-W47", "2026-11-23T06:00:00Z", "limits.json")
    given = {"shape_from": "previous"}
    _earlier_shape(given, tmp_path, "2026-W48", weekly=True)
    assert given == {"shape_from": str((tmp_path / "2026-W47" / "limits.json").resolve()), "shape_required": False}
    given = {"shape_from": "previous"}
    _earlier_shape(given, tmp_path, "2026-W47", weekly=True)  # nothing earlier: the notebook says so
    assert given == {"shape_from": "previous", "shape_required": False}
    given = {"shape_from": "w47.json"}
    _earlier_shape(given, tmp_path, "2026-W48", weekly=True)  # a path is the user's: required, untouched
    assert given == {"shape_from": "w47.json"}
    with pytest.raises(ParameterError, match="shape_from previous decides shape_required itself"):
        _earlier_shape({"shape_from": "previous", "shape_required": True}, tmp_path, "2026-W48", weekly=True)


def test_inputs_are_checked_before_any_kernel(tmp_path):
    with pytest.raises(ParameterError, match=r"estimator: expected pooled or model, got 'bayes'"):
        pipeline.check_inputs({"estimator": "bayes"})
    pooled = tmp_path / "pooled.json"  # a limits JSON of the pooled estimator: no shape in it
    pooled.write_text(json.dumps({**json.loads((ROOT / "tests/fixtures/report/limits.json").read_text())}))
    with pytest.raises(ShapeUnusable, match="no limit in it carries a shape"):
        pipeline.check_inputs({"shape_from": str(pooled)})
    pipeline.check_inputs({"shape_from": str(pooled), "shape_required": False})  # offered: the fit notes it
    pipeline.check_inputs({"shape_from": "previous"})  # resolved by the run
    with pytest.raises(Exception, match="does not exist"):
        pipeline.check_inputs({"shape_from": str(tmp_path / "nope.json")})


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory):
    from bearing_lib.loaders import load

    tmp = tmp_path_factory.mktemp("sweeps")
    earlier, later = load(_sweep(tmp, "vllm-70b-2replicas")), load(_sweep(tmp, "llm-d-70b-2replicas"))
    e = tmp / "earlier.json"
    pipeline.write_json(pipeline.limits_document(pipeline.limits(earlier, SLA, "none", 20, estimator="model"),
                                                 output_json=str(e)), str(e))
    p = tmp / "pooled.json"
    pipeline.write_json(pipeline.limits_document(pipeline.limits(earlier, SLA, "none", 20), output_json=str(p)),
                        str(p))
    return earlier, later, e, p


def test_the_model_and_an_earlier_shape_through_the_pipeline(sweeps):
    earlier, later, e, pooled = sweeps
    own = pipeline.limits(later, SLA, "none", 20, estimator="model")
    shaped = pipeline.limits(later, SLA, "none", 20, estimator="model", shape_from=str(e))
    (m,) = shaped.mixes
    (sh,) = m.shapes
    assert sh.prior_used and sh.bayes_factor >= 1 and sh.prior_from == str(e)
    assert "from an earlier test" in m.q_ult.interval_method
    assert "from an earlier test" not in own.mixes[0].q_ult.interval_method
    # the prior changed the posterior (on this real run the interval rests on its thin low steps more than on the
    # shape, so it barely moves: docs/limits.md, "An earlier test's shape")
    assert m.q_ult.ci95 != own.mixes[0].q_ult.ci95 and m.q_ult.value != own.mixes[0].q_ult.value
    # the pooled estimator on a request trace has no shape to take: refused, naming the parameter to add
    with pytest.raises(ParameterError, match="add estimator model"):
        pipeline.limits(later, SLA, "none", 20, shape_from=str(e))


def test_an_earlier_shape_that_offers_none_is_an_error_unless_offered(sweeps):
    earlier, later, e, pooled = sweeps
    with pytest.raises(ShapeUnusable, match="same file"):
        pipeline.limits(earlier, SLA, "none", 20, estimator="model", shape_from=str(e))
    with pytest.raises(ShapeUnusable, match="no limit in it carries a shape"):
        pipeline.limits(later, SLA, "none", 20, estimator="model", shape_from=str(pooled))
    for source, why in ((e, "fitted on the same file"), (pooled, "no limit in it carries a shape")):
        r = pipeline.limits(earlier, SLA, "none", 20, estimator="model", shape_from=str(source), shape_required=False)
        assert any(n.startswith("no earlier shape was used") and why in n for n in r.notes), r.notes
        assert all(s.prior_from is None for m in r.mixes for s in m.shapes)
    r = pipeline.limits(later, SLA, "none", 20, estimator="model", shape_from="previous", shape_required=False)
    assert any("no earlier report in the reports folder fitted limits" in n for n in r.notes)
    with pytest.raises(ParameterError, match="resolved by bearing report"):
        pipeline.limits(later, SLA, "none", 20, estimator="model", shape_from="previous")


def _bearing(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "bearing_lib.cli.main", *args], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=900)


@pytest.mark.slow
def test_weekly_runs_take_last_weeks_shape(tmp_path):
    """Two weekly runs: last week's test of vLLM, this week's of llm-d with --shape-from previous. The second
    report's limits take the first's shape, and its limits section says how each interval was made."""
    reports = tmp_path / "reports"
    common = ["--reports-dir", str(reports), "-p", "sla", SLA, "-p", "mixes", "none", "-p", "production_trace",
              str(AZURE), "-p", "n_boot", "50", "-p", "twin", "false", "-p", "exports", "false", "--window",
              "2023-11-16T18:00Z..2023-11-16T19:00Z"]
    first = _bearing("weekly", "--week", "2026-W47", "-p", "loadtest", str(_sweep(tmp_path, "vllm-70b-2replicas")),
                     "--estimator", "model", "--shape-from", "previous", *common)
    assert first.returncode in (0, 3), first.stderr[-3000:]
    lim1 = json.loads((reports / "2026-W47" / "limits.json").read_text())
    assert any("no earlier report in the reports folder fitted limits" in n for n in lim1["notes"])
    second = _bearing("weekly", "--week", "2026-W48", "-p", "loadtest", str(_sweep(tmp_path, "llm-d-70b-2replicas")),
                      "--estimator", "model", "--shape-from", "previous", *common)
    assert second.returncode in (0, 3), second.stderr[-3000:]
    lim2 = json.loads((reports / "2026-W48" / "limits.json").read_text())
    (m,) = lim2["mixes"]
    (sh,) = m["shapes"]
    assert sh["prior_used"] and sh["prior_from"] == str((reports / "2026-W47" / "limits.json").resolve())
    html = (reports / "2026-W48" / "report.html").read_text()
    assert 'id="interval-methods"' in html and "from an earlier test" in html
    # the pooled default and a shape: refused in the notebook with the fix, exit 1, nothing published
    bad = _bearing("weekly", "--week", "2026-W49", "-p", "loadtest", str(tmp_path / "llm-d-70b-2replicas" / "x"),
                   "--shape-from", "previous", *common)
    assert bad.returncode == 1 and "add estimator model" in bad.stderr and not (reports / "2026-W49").exists()
