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
from bearing_lib.cli.report import EarlierShape, _earlier_shape
from bearing_lib.common.errors import InputError, ParameterError, ShapeUnusable
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
    _report(tmp_path, "2026-W47.failed-20261130T060000Z", "2026-11-30T06:00:00Z", "limits.json")  # never published
    assert runner.previous_limits(tmp_path, exclude="2026-W48") == tmp_path / "adhoc" / "limits.json"
    # a weekly run looks at earlier weeks only: the ad-hoc report is not last week
    assert runner.previous_limits(tmp_path, exclude="2026-W48", before_week="2026-W48") == \
        tmp_path / "2026-W46" / "limits.json"
    assert runner.previous_limits(tmp_path, exclude="2026-W46", before_week="2026-W46") is None
    assert runner.previous_limits(tmp_path / "none", exclude="x") is None
    # "what changed" still compares with the newest summary, limits or not
    assert runner.previous_summary(tmp_path, exclude="2026-W48", before_week="2026-W48") == \
        tmp_path / "2026-W47" / "summary.json"
    # a week re-run later (--force) stays that week: last week is the latest week before this one, not the latest run
    _report(tmp_path, "2026-W45", "2026-12-01T06:00:00Z", "limits.json")
    assert runner.previous_limits(tmp_path, exclude="2026-W48", before_week="2026-W48") == \
        tmp_path / "2026-W46" / "limits.json"
    assert runner.previous_summary(tmp_path, exclude="2026-W48", before_week="2026-W48") == \
        tmp_path / "2026-W47" / "summary.json"
    assert runner.previous_limits(tmp_path, exclude="x") == tmp_path / "2026-W45" / "limits.json"  # ad hoc: run time


def test_shape_from_previous_is_resolved_and_offered_not_required(tmp_path):
    _report(tmp_path, "2026-W47", "2026-11-23T06:00:00Z", "limits.json")
    given = {"loadtest": "t", "shape_from": "previous"}
    found = _earlier_shape(given, tmp_path, "2026-W48", weekly=True)
    assert found == EarlierShape(tmp_path / "2026-W47" / "limits.json")
    assert found.parameters() == {"shape_from": str(tmp_path / "2026-W47" / "limits.json"), "shape_required": False}
    assert given == {"loadtest": "t", "shape_from": "previous"}  # the caller's parameters are not changed
    # nothing earlier: the notebook says so
    none = _earlier_shape(given, tmp_path, "2026-W47", weekly=True)
    assert none == EarlierShape(None)
    assert none.parameters() == {"shape_from": "previous", "shape_required": False}
    # a path is the user's: required, untouched
    assert _earlier_shape({"loadtest": "t", "shape_from": "w47.json"}, tmp_path, "2026-W48", weekly=True) is None
    with pytest.raises(ParameterError, match="shape_from previous decides shape_required itself"):
        _earlier_shape({"loadtest": "t", "shape_from": "previous", "shape_required": True}, tmp_path, "2026-W48",
                       weekly=True)
    # a run given a limits JSON fits no limits: the options that say how are refused, naming the flags given
    with pytest.raises(ParameterError, match=r"--estimator, --shape-from: how this run fits the limits, and it fits "
                                             r"none"):
        _earlier_shape({"limits_json": "l.json", "estimator": "model", "shape_from": "previous"}, tmp_path,
                       "2026-W48", weekly=True)


def test_inputs_are_checked_before_any_kernel(tmp_path):
    with pytest.raises(ParameterError, match=r"estimator \(--estimator\): expected model or pooled, got 'bayes'"):
        pipeline.check_inputs({"estimator": "bayes"})
    pooled = ROOT / "tests/fixtures/report/limits.json"  # hand-made limits with no shape in them
    with pytest.raises(ShapeUnusable, match="no limit in it carries a shape"):
        pipeline.check_inputs({"shape_from": str(pooled)})
    pipeline.check_inputs({"shape_from": str(pooled), "shape_required": False})  # offered: the fit notes it
    pipeline.check_inputs({"shape_from": "previous", "shape_required": False})  # the run found none: noted
    with pytest.raises(ParameterError, match="resolved by bearing report"):  # a bare 'previous': nothing resolved it
        pipeline.check_inputs({"shape_from": "previous"})
    with pytest.raises(InputError, match=r"limits JSON of an earlier test \(parameter shape_from\) does not exist"):
        pipeline.check_inputs({"shape_from": str(tmp_path / "nope.json")})
    with pytest.raises(ParameterError, match="does not combine with engine"):
        pipeline.check_inputs({"shape_from": str(pooled), "shape_required": False, "engine": "embedded"})


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory):
    """Two fitted sweeps, built once per process: the tests reading them share one pytest-xdist worker (group
    ``earlier_sweeps``)."""
    from bearing_lib.loaders import load

    tmp = tmp_path_factory.mktemp("sweeps")
    earlier, later = load(_sweep(tmp, "vllm-70b-2replicas")), load(_sweep(tmp, "llm-d-70b-2replicas"))
    e = tmp / "earlier.json"
    pipeline.write_json(pipeline.limits_document(pipeline.limits(earlier, SLA, "none", 20, estimator="model"),
                                                 output_json=str(e)), str(e))
    p = tmp / "pooled.json"
    pipeline.write_json(pipeline.limits_document(pipeline.limits(earlier, SLA, "none", 20, estimator="pooled"),
                                                 output_json=str(p)), str(p))
    return earlier, later, e, p


@pytest.mark.xdist_group("earlier_sweeps")
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
    # the pooled estimator on a request trace has no shape to take: refused, naming the fix
    with pytest.raises(ParameterError, match="use the model estimator"):
        pipeline.limits(later, SLA, "none", 20, estimator="pooled", shape_from=str(e))
    # the model is the default: no estimator named takes the shape as estimator="model" does
    default = pipeline.limits(later, SLA, "none", 20, shape_from=str(e))
    assert default.mixes[0].q_ult.value == m.q_ult.value and default.conditions.estimator == "model"


@pytest.mark.xdist_group("earlier_sweeps")
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
    assert any("and none in the reports folder fitted limits" in n for n in r.notes)
    with pytest.raises(ParameterError, match="resolved by bearing report"):
        pipeline.limits(later, SLA, "none", 20, estimator="model", shape_from="previous")


@pytest.mark.xdist_group("earlier_sweeps")
def test_an_offered_shape_is_checked_the_same_whether_or_not_a_report_was_found(sweeps, tmp_path):
    """A weekly run that passes in its first week (no earlier report) passes every week: what the fit cannot take
    (a shape with the pooled estimator on a trace, or on an engine) is refused whether or not one was found; an
    earlier file that does not read as limits, only offered, is noted, not fatal."""
    earlier, later, e, pooled = sweeps
    for shape in ("previous", str(e)):
        with pytest.raises(ParameterError, match="use the model estimator"):
            pipeline.limits(later, SLA, "none", 20, estimator="pooled", shape_from=shape, shape_required=False)
        with pytest.raises(ParameterError, match="does not combine with an engine"):
            pipeline.limits(str(tmp_path / "x.parquet"), SLA, "none", 20, engine="embedded", shape_from=shape,
                            shape_required=False)
    broken = tmp_path / "broken.json"
    broken.write_text('{"schema": "bearing.limits/2", "mixes": "not a list"}')
    r = pipeline.limits(later, SLA, "none", 20, estimator="model", shape_from=str(broken), shape_required=False)
    assert any(n.startswith("no earlier shape was used") and "broken.json" in n for n in r.notes), r.notes
    with pytest.raises(InputError):
        pipeline.limits(later, SLA, "none", 20, estimator="model", shape_from=str(broken))


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
    assert any("and none in the reports folder fitted limits" in n for n in lim1["notes"])
    second = _bearing("weekly", "--week", "2026-W48", "-p", "loadtest", str(_sweep(tmp_path, "llm-d-70b-2replicas")),
                      "--estimator", "model", "--shape-from", "previous", *common)
    assert second.returncode in (0, 3), second.stderr[-3000:]
    lim2 = json.loads((reports / "2026-W48" / "limits.json").read_text())
    (m,) = lim2["mixes"]
    (sh,) = m["shapes"]
    assert sh["prior_used"] and sh["prior_from"] == str(reports / "2026-W47" / "limits.json")
    html = (reports / "2026-W48" / "report.html").read_text()
    assert 'id="interval-methods"' in html and "from an earlier test" in html
    # the pooled estimator and a shape: refused in the notebook with the fix, exit 1, nothing published
    bad = _bearing("weekly", "--week", "2026-W49", "-p", "loadtest", str(tmp_path / "llm-d-70b-2replicas" / "x"),
                   "--estimator", "pooled", "--shape-from", "previous", *common)
    assert bad.returncode == 1 and "use the model estimator" in bad.stderr and not (reports / "2026-W49").exists()


def test_the_limits_section_says_how_each_interval_was_made(docs):
    """One method for every mix: said once, without names; two methods: each with the mixes it made."""
    from bearing_lib.report.model import IntervalMethod, build_report
    from bearing_lib.report.render import render_html
    from tests.report.conftest import provenance

    one, two = "95% credible interval of the crossing", "percentile block bootstrap of the pooled crossing"
    for methods, expected in (((one, one), [IntervalMethod(one, ["short-context", "long-context"])]),
                              ((one, two), [IntervalMethod(one, ["short-context"]),
                                            IntervalMethod(two, ["long-context"])])):
        limits = docs["limits"]
        for m, method in zip(limits["mixes"], methods, strict=True):
            m["q_ult"]["interval_method"] = method
        model = build_report(limits=limits, profile=docs["profile"], plan=docs["plan"], provenance=provenance(),
                             name="w")
        assert model.mixes.data.intervals == expected
        html = render_html(model)
        block = html[html.index('id="interval-methods"'):]
        block = block[:block.index("</ul>")]
        if len(expected) == 1:
            assert f"<li>{one}</li>" in block and "short-context" not in block
        else:
            assert f"<li>short-context: {one}</li>" in block and f"<li>long-context: {two}</li>" in block
