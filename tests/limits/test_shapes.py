"""An earlier test's shape as the prior of a later test's (bearing_lib.limits.shapes, limits.model; issue 23, round 13).

Expected values come from closed forms (a uniform prior changes nothing and its Bayes factor is 1; a one-point prior
is the model restricted to that point; a test's own shape has a Bayes factor of at least 1 by Cauchy–Schwarz) and
from a simulation whose truth is known (counts drawn from the model's own logistic).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.special import expit, logit
from typer.testing import CliRunner

from bearing_lib.cli.main import app
from bearing_lib.common.errors import ParameterError
from bearing_lib.limits import model
from bearing_lib.limits.fit import fit_limits
from bearing_lib.limits.result import ClauseShape, LimitsResult
from bearing_lib.limits.shapes import ShapePriors, prior_array
from tests.limits.synth import make_trace, mm1_frame

ALLOWED = 0.01
LOADS = np.geomspace(2.0, 9.0, 10)
CONCS = np.array([np.inf, 100.0, 10.0])


def _counts(truth: float, beta: float, seed: int, n: int = 400) -> list[model.Evidence]:
    """Bad counts of ``n`` requests per load, binomial around the logistic in log load crossing 1 % at ``truth``."""
    rng = np.random.default_rng(seed)
    mu = expit(logit(ALLOWED) + beta * (np.log(LOADS) - math.log(truth)))
    return [model.Evidence(x=float(x), n=n, k_lo=float(k), k_hi=float(k)) for x, k in
            zip(LOADS, rng.binomial(n, mu), strict=True)]


def _post(ev, prior=None, concs=CONCS):
    # as limits.estimators reads a clause: the steps around the isotonic crossing (model.local_window)
    edges = model.log_grid([e.x for e in ev])
    return model.clause_posterior("c", model.local_window(ev, ALLOWED), ALLOWED, edges, concentrations=concs,
                                  shape_prior=prior), edges


def _interval(post, edges):
    cp = model.combine([post], edges, LOADS[0], LOADS[-1])
    return cp.median(), cp.interval(0.95)


def test_a_uniform_prior_changes_nothing_and_its_bayes_factor_is_one():
    ev = _counts(5.0, 8.0, 0)
    flat, _ = _post(ev)
    uni, _ = _post(ev, np.ones((model.BETAS.size, CONCS.size)))
    assert uni.shape_bayes_factor == pytest.approx(1.0, rel=1e-12)  # at the gate: used or not, the same posterior
    np.testing.assert_allclose(uni.pdf, flat.pdf, rtol=1e-10, atol=1e-15)
    np.testing.assert_allclose(uni.shape, flat.shape, rtol=1e-12)


def test_a_one_point_prior_is_the_model_restricted_to_that_shape(monkeypatch):
    ev = _counts(5.0, 8.0, 1)
    flat, _ = _post(ev)
    i, j = int(np.argmax(flat.shape.sum(axis=1))), 1  # the likeliest steepness, c = 100
    prior = np.zeros((model.BETAS.size, CONCS.size))
    prior[i, j] = 1.0
    pinned, _ = _post(ev, prior)
    # the Bayes factor of a point against the flat grid prior is the flat posterior's mass there times the cells
    assert pinned.shape_bayes_factor == pytest.approx(flat.shape[i, j] * prior.size, rel=1e-9)
    assert pinned.shape_bayes_factor >= model.SHAPE_GATE and pinned.shape_used
    monkeypatch.setattr(model, "BETAS", np.array([model.BETAS[i]]))
    only, _ = _post(ev, concs=np.array([CONCS[j]]))
    np.testing.assert_allclose(pinned.pdf, only.pdf, rtol=1e-9, atol=1e-14)
    # and the posterior each limit writes is still its own (the flat one), not the pinned one
    np.testing.assert_allclose(pinned.shape, flat.shape, rtol=1e-12)


def test_a_tests_own_shape_has_a_bayes_factor_of_at_least_one():
    # size * sum(p^2) >= (sum p)^2 = 1 (Cauchy-Schwarz), equal only for the uniform p
    for seed in range(5):
        flat, _ = _post(_counts(5.0, 8.0, seed))
        own, _ = _post(_counts(5.0, 8.0, seed), flat.shape)
        assert own.shape_bayes_factor == pytest.approx(float((flat.shape ** 2).sum() * flat.shape.size), rel=1e-9)
        assert own.shape_bayes_factor > 1.0


def test_a_shape_the_steps_speak_against_is_not_used():
    # steep truth (beta 30), the earlier shape all on the shallowest steepness (beta 1)
    ev = _counts(5.0, 30.0, 2, n=2000)
    flat, edges = _post(ev)
    prior = np.zeros((model.BETAS.size, CONCS.size))
    prior[0, 0] = 1.0
    post, _ = _post(ev, prior)
    assert post.shape_bayes_factor < model.SHAPE_GATE
    assert not post.shape_used
    np.testing.assert_array_equal(post.pdf, flat.pdf)


def test_a_prior_of_the_wrong_size_or_values_is_refused():
    with pytest.raises(ValueError, match="expected 16 x 3"):
        _post(_counts(5.0, 8.0, 0), np.ones((model.BETAS.size, 2)))
    bad = np.ones((model.BETAS.size, CONCS.size))
    bad[0, 0], bad[1, 1] = np.nan, -1.0
    with pytest.raises(ValueError, match="1 non-finite, 1 negative"):
        _post(_counts(5.0, 8.0, 0), bad)


def test_with_a_shared_shape_the_interval_narrows_and_still_covers_the_known_truth():
    # Simulation with known truth: each later test (seed s) takes the earlier test's (seed s + 100) shape; counts
    # from the model's own logistic (a steepness on the grid, binomial), the limit moving between tests (3-7 rps).
    # Coverage of the 95 % interval, own and with the earlier shape, and the median half-width relative to the value.
    beta = float(model.BETAS[4])
    rng = np.random.default_rng(7)
    own_cov = shared_cov = 0
    own_w, shared_w = [], []
    n = 60
    for s in range(n):
        truth = float(rng.uniform(3.0, 7.0))
        earlier, _ = _post(_counts(float(rng.uniform(3.0, 7.0)), beta, s + 100, n=300))
        ev = _counts(truth, beta, s, n=300)
        own, edges = _post(ev)
        shared, _ = _post(ev, earlier.shape)
        for post, w in ((own, own_w), (shared, shared_w)):
            med, (lo, hi) = _interval(post, edges)
            w.append((hi - lo) / 2 / med)
            hit = lo <= truth <= hi
            if post is own:
                own_cov += hit
            else:
                shared_cov += hit
    assert own_cov >= 0.9 * n and shared_cov >= 0.9 * n, (own_cov, shared_cov)
    assert np.median(shared_w) < 0.5 * np.median(own_w), (np.median(own_w), np.median(shared_w))


def _mm1_limits(seed: int, sha: str, **kw) -> LimitsResult:
    tr = make_trace(mm1_frame(list(np.linspace(2, 9, 8)), mu_rps=10.0, step_s=120.0, seed=seed))
    tr.provenance.sha256 = sha
    return fit_limits(tr, "p99(latency) <= 1s", mixes="none", estimator="model", n_boot=100, **kw)


def test_fit_limits_reads_an_earlier_tests_shape_and_says_so(tmp_path):
    earlier = _mm1_limits(1, "a" * 64)
    (m,) = earlier.limits
    (sh,) = m.shapes
    assert sh.clause == "p99(latency) <= 1s" and not sh.prior_used and sh.prior_from is None
    assert sh.concentration[0] is None and len(sh.weights) == model.BETAS.size
    assert sum(map(sum, sh.weights)) == pytest.approx(1.0, abs=1e-5)
    # the JSON edge: written and read back as the same typed shape
    p = tmp_path / "earlier.json"
    p.write_text(json.dumps(earlier.to_dict()))
    back = LimitsResult.from_dict(json.loads(p.read_text()))
    assert back.limits[0].shapes == [sh]
    assert sh.unit == "rps" and sh.step_s is not None
    # the same steps under another name: their own shape scores at least 1 (Cauchy-Schwarz) and is used
    again = _mm1_limits(1, "c" * 64, shape_from=p)
    (sh1,) = again.limits[0].shapes
    assert sh1.prior_used and sh1.bayes_factor >= 1.0 and sh1.prior_from == str(p)
    assert sh1.weights == sh.weights  # each limit writes its own shape, not the product
    assert "from an earlier test" in again.limits[0].q_ult.interval_method
    later = _mm1_limits(2, "b" * 64, shape_from=p)
    (m2,) = later.limits
    (sh2,) = m2.shapes
    assert sh2.prior_from == str(p) and sh2.bayes_factor is not None
    note = next(n for n in m2.notes if n.startswith("p99(latency) <= 1s: "))
    assert sh2.prior_used and sh2.bayes_factor >= model.SHAPE_GATE, sh2.bayes_factor
    assert "taken from the earlier test" in note and "from an earlier test" in m2.q_ult.interval_method
    # steps of another length: not offered (only same-length pairs were measured)
    d = earlier.to_dict()
    d["mixes"][0]["shapes"][0]["step_s"] = sh.step_s * 4
    other = _mm1_limits(2, "b" * 64, shape_from=LimitsResult.from_dict(d))
    (sh3,) = other.limits[0].shapes
    assert not sh3.prior_used and sh3.bayes_factor is None
    assert any("was not used: its steps lasted" in n for n in other.limits[0].notes)
    # steps read at another load jitter (a shape of pooled runs offered to a single run)
    assert sh.jitter == 0.0
    d["mixes"][0]["shapes"][0].update(step_s=sh.step_s, jitter=0.03)
    other = _mm1_limits(2, "b" * 64, shape_from=LimitsResult.from_dict(d))
    assert not other.limits[0].shapes[0].prior_used
    assert any("was not used: its steps were read at a load jitter of 3%, this test's at 0%" in n
               for n in other.limits[0].notes)
    # another load axis
    d["mixes"][0]["shapes"][0].update(step_s=sh.step_s, unit="concurrency", jitter=0.0)
    other = _mm1_limits(2, "b" * 64, shape_from=LimitsResult.from_dict(d))
    assert any("its load axis is concurrency, this test's rps" in n for n in other.limits[0].notes)
    # weights that are no distribution (an edited file): not used, said as such rather than as another grid
    d["mixes"][0]["shapes"][0].update(unit="rps", weights=[[-1.0] * 6] * 16)
    other = _mm1_limits(2, "b" * 64, shape_from=LimitsResult.from_dict(d))
    assert any("its weights are not a distribution" in n for n in other.limits[0].notes)
    assert not other.limits[0].shapes[0].prior_used
    d["mixes"][0]["shapes"][0]["weights"] = sh.weights
    # a shape for a clause this SLA does not have
    d["mixes"][0]["shapes"][0].update(unit="rps", clause="p99(latency) <= 2s")
    other = _mm1_limits(2, "b" * 64, shape_from=LimitsResult.from_dict(d))
    assert any("are for p99(latency) <= 2s; none is a clause of this SLA" in n for n in other.limits[0].notes)
    assert not other.limits[0].shapes[0].prior_used
    # the same steps fitted again are this test's own shape offered back: refused, they would count twice
    with pytest.raises(ParameterError, match="same file"):
        _mm1_limits(1, "a" * 64, shape_from=earlier)
    # the pooled estimator (asked for: the model is the default) has no shape to take
    with pytest.raises(ParameterError, match="use the model estimator"):
        fit_limits(make_trace(mm1_frame([2.0, 5.0], mu_rps=10.0, step_s=60.0, seed=0)), "p99(latency) <= 1s",
                   mixes="none", n_boot=0, shape_from=earlier, estimator="pooled")
    with pytest.raises(ParameterError, match="does not combine with an engine"):
        fit_limits("x.parquet", "p99(latency) <= 1s", estimator="model", shape_from=earlier)


def _with_runs(res: LimitsResult, runs: list[str]) -> LimitsResult:
    d = res.to_dict()
    d["mixes"] = [{**d["mixes"][0], "run_id": r} for r in runs]
    return LimitsResult.from_dict(d)


def test_which_earlier_run_speaks_for_a_later_one():
    earlier = _mm1_limits(1, "a" * 64)
    one = ShapePriors.of(earlier, source="e.json")
    assert one.match("anything", "all")[0]  # the mix's only run
    assert one.match("r", "other") == ({}, "the earlier test (e.json) has no shape for mix 'other': this limit's "
                                           "shape is its own")
    two = ShapePriors.of(_with_runs(earlier, ["x", "y"]), source="e.json")
    assert two.match("x", "all")[0] == two.by_run_mix[("x", "all")]
    shapes, why = two.match("z", "all")
    assert shapes == {} and "2 runs (x, y) and none is run 'z'" in why
    d = earlier.to_dict()
    d["mixes"][0]["shapes"] = []
    with pytest.raises(ParameterError, match="no limit in it carries a shape"):
        ShapePriors.of(LimitsResult.from_dict(d), source="e.json")


def test_a_shape_on_another_grid_is_not_used():
    sh = ClauseShape("c", [1.0, 2.0], [None], [[0.5], [0.5]])
    assert prior_array(sh, model.BETAS, CONCS) is None
    full = ClauseShape("c", [float(b) for b in model.BETAS], [None, 100.0, 10.0],
                       [[1.0, 1.0, 1.0]] * model.BETAS.size)
    assert prior_array(full, model.BETAS, CONCS).shape == (16, 3)
    assert prior_array(full, model.BETAS, model.TABLE_CONCENTRATIONS) is None  # a table's grid


BUNDLED = Path(__file__).resolve().parents[2] / "data" / "loadtests" / "lmbenchmark-llm-d-exp2"


def test_cli_shape_from_another_deployment_of_the_same_model(tmp_path):
    # real files: the sharegpt sweep of vLLM (earlier) and of llm-d (later), both Llama-70B on 2 replicas, each put in
    # a folder of the same name so their runs match; the later steps favour the earlier shape (Bayes factor about 3)
    runner = CliRunner()
    for side, dep in (("e", "vllm-70b-2replicas"), ("l", "llm-d-70b-2replicas")):
        (tmp_path / side / "x").mkdir(parents=True)
        for f in (BUNDLED / dep).glob("LMBench_sharegpt_*.csv"):
            (tmp_path / side / "x" / f.name).symlink_to(f)
    args = ["--sla", "p99(ttft) <= 2s", "--mixes", "none", "--n-boot", "20", "--estimator", "model"]
    e, b = tmp_path / "e.json", tmp_path / "b.json"
    assert runner.invoke(app, ["limits", str(tmp_path / "e" / "x"), *args, "--json", str(e)]).exit_code == 0
    res = runner.invoke(app, ["limits", str(tmp_path / "l" / "x"), *args, "--shape-from", str(e), "--json", str(b)])
    assert res.exit_code == 0, res.output
    (m,) = json.loads(b.read_text())["mixes"]
    (sh,) = m["shapes"]
    assert sh["prior_used"] and sh["bayes_factor"] >= 1.0 and sh["prior_from"] == str(e)
    assert "steepness and step-to-step variability taken from the earlier test" in res.output
    assert "from an earlier test" in m["q_ult"]["interval_method"]


def test_cli_shape_from(tmp_path):
    runner = CliRunner()
    a = tmp_path / "a.json"
    args = ["--sla", "p99(ttft) <= 2s", "--mixes", "none", "--n-boot", "20", "--estimator", "model"]
    res = runner.invoke(app, ["limits", str(BUNDLED / "vllm-70b-2replicas"), *args, "--json", str(a)])
    assert res.exit_code == 0, res.output
    assert all(m["shapes"] for m in json.loads(a.read_text())["mixes"])
    b = tmp_path / "b.json"
    res = runner.invoke(app, ["limits", str(BUNDLED / "llm-d-70b-2replicas"), *args, "--shape-from", str(a),
                              "--json", str(b)])
    assert res.exit_code == 0, res.output
    # the other deployment's runs are named differently and the earlier file holds two: none is guessed
    assert "holds mix 'all' in 2 runs" in res.output
    res = runner.invoke(app, ["limits", str(BUNDLED / "vllm-70b-2replicas"), *args, "--shape-from", str(a),
                              "--json", str(tmp_path / "c.json")])
    assert res.exit_code == 1 and "same file(s)" in res.output and not (tmp_path / "c.json").exists()
    res = runner.invoke(app, ["limits", str(BUNDLED / "vllm-70b-2replicas"), *args, "--shape-from",
                              str(tmp_path / "nope.json"), "--json", str(tmp_path / "c.json")])
    assert res.exit_code == 1 and "--shape-from" in res.output and "is not a file" in res.output
