"""Acceptance: bearing's limit against the simulator oracle's known truth (issue 14, item 5; docs/oracle.md).

For every server x mix combination (tests/oracle/configs.py), SIMULATED stepped load tests
(tests/oracle/acceptance.py) go through ``bearing_lib.limits.fit.fit_limits``; the truth comes from
tests/oracle/truth.json (long runs, tests/oracle/make_truth.py).

(a) One test of 10 x 120 s: the 95 % CI covers the truth in >= 90 % of the seeds of every combination,
    and every estimate outside +-10 % of the truth carries ``resolution: coarse`` (no confident wrong number).
(b) Two stages: that test, then the follow-up ``bearing next`` designs from its limits
    (bearing_lib.limits.followup), simulated as a second run and pooled (``fit_limits(..., pool_runs=True)``):
    within +-10 % in >= 95 % of all seeds and >= 90 % of every combination's, CI coverage >= 90 %, and the
    follow-up at most 2x the first test's duration.
(c) Thin low steps (10 x 60 s for the RAG mixes: 100-300 requests in the lower steps, fewer than a P99
    needs on its own): every seed gets a value, none "< X", and every one off by more than 10 % is coarse.
The same estimator on 10 x 1,200 s steps is held to floors on its recorded counts.
(d) The model (``estimator="model"``, the default since round 17; (a)-(c) and the 1,200 s floors above are the pooled
    estimator's, ``estimator="pooled"``) alone, and with the shape of another test of the same service
    (``shape_from``, limits/shapes.py; round 13): the issue's width target, median half-width <= 12 % of the
    value in every combination with 10 x 120 s steps, holds with the earlier shape; both held to recorded floors;
    and on the two-stage design of (b), covering the truth in >= 90 % of every combination's seeds (round 16).

No xfail anywhere: the counts recorded in docs/oracle.md are asserted as floors, so a crash in fit_limits
fails these tests, and so does any change that loses a seed (scaling every estimate by 0.85 puts most
seeds outside +-10 % and fails the floors).
"""

from __future__ import annotations

import pytest

from tests.oracle.acceptance import (
    LONG_STEP_S,
    N_SEEDS,
    N_STEPS,
    STEP_S,
    load_truth,
    median_half_width,
    rates_for,
    score_combination,
    score_two_stage,
    score_with_earlier_shape,
)
from tests.oracle.configs import combinations

TRUTH = load_truth()
MIN_COVERED = 18  # of 20: 90 %
TWO_STAGE_N_BOOT = 200  # keeps (b) affordable: 360 fits of up to 14 steps

# recorded with the pooled estimator (docs/oracle.md, "Acceptance results"): seeds within +-10 % of 20
# small/rag 17 -> 16 (round 3): seed 15's step at 1.17x the truth passed by chance and so rescued a not-steady step
# at 0.91x as a transient; the whole-step rule (limits/settling.py) now sees that step's queue still rising, so the
# not-steady step bounds the limit (-15.9 %); that step is undetermined (not a measured failure), so the CI runs to
# the first judged failure (4.07-5.47, covering the truth 5.249) and is coarse by its width
FLOOR_WITHIN_120 = {
    ("small", "chat"): 18, ("small", "rag"): 16, ("small", "prefix"): 17,
    ("large", "chat"): 20, ("large", "rag"): 17, ("large", "prefix"): 19,
    ("kv_starved", "chat"): 19, ("kv_starved", "rag"): 17, ("kv_starved", "prefix"): 18,
}
# 10 x 1,200 s, the same estimator: (within, covered) of 20, recorded (docs/oracle.md). The pooled estimator
# leans low with long steps (median -0.1 % to -7.1 %); the step-wise one had 20/20 within everywhere
FLOOR_1200 = {
    ("small", "chat"): (20, 20), ("small", "rag"): (20, 20), ("small", "prefix"): (19, 18),
    ("large", "chat"): (20, 19), ("large", "rag"): (18, 19), ("large", "prefix"): (20, 20),
    ("kv_starved", "chat"): (20, 20), ("kv_starved", "rag"): (20, 20), ("kv_starved", "prefix"): (19, 20),
}
THIN = [("small", "rag"), ("kv_starved", "rag")]
THIN_STEP_S = 60.0
_TWO: dict[tuple[str, str], list] = {}


def _params():
    return [pytest.param(s, m, marks=pytest.mark.slow, id=f"{s}/{m}") for s, m in combinations()]


def _report(server, mix, step_s, scores, truth):
    lines = [f"seed {s.seed}: value {s.value} ({'n/a' if s.value is None else f'{s.rel(truth):+.1%}'}), "
             f"ci95 {s.ci95}, bootstrap {s.boot_ci95}, bracket {s.bracket}, censored {s.censored}, coarse {s.coarse}"
             for s in scores]
    return f"{server}/{mix}, {step_s:g} s steps, truth {truth:.4g} rps:\n" + "\n".join(lines)


@pytest.mark.parametrize("server,mix", _params())
def test_a_single_test_covers_and_flags_its_misses(server, mix):
    truth = float(TRUTH[f"{server}/{mix}"]["q_ult_rps"])
    scores = score_combination(server, mix, truth, step_s=STEP_S, estimator="pooled")
    rep = _report(server, mix, STEP_S, scores, truth)
    assert len(scores) == N_SEEDS
    assert sum(s.covers(truth) for s in scores) >= MIN_COVERED, rep
    confident_wrong = [s.seed for s in scores if not s.within(truth) and not s.coarse]
    assert not confident_wrong, f"estimates off by more than 10 % without resolution: coarse: {confident_wrong}\n{rep}"
    assert sum(s.within(truth) for s in scores) >= FLOOR_WITHIN_120[(server, mix)], rep


# the per-combination runs (_TWO) and their stages (acceptance._STAGES) are cached in the process: on one pytest-xdist
# worker the aggregate test below reads them instead of simulating again (it took 396 s of CPU when the two workers
# split them), and the model's two-stage floors reuse the stages
@pytest.mark.xdist_group("oracle_two_stage")
@pytest.mark.parametrize("server,mix", _params())
def test_b_two_stage_resolves_the_limit(server, mix):
    truth = float(TRUTH[f"{server}/{mix}"]["q_ult_rps"])
    scores = _two(server, mix, truth)
    rep = _report(server, mix, STEP_S, scores, truth)
    assert sum(s.within(truth) for s in scores) >= 0.90 * N_SEEDS, rep
    assert sum(s.covers(truth) for s in scores) >= MIN_COVERED, rep
    assert max(s.followup_s for s in scores) <= 2 * N_STEPS * STEP_S


@pytest.mark.slow
@pytest.mark.xdist_group("oracle_two_stage")
def test_b_two_stage_within_in_95_percent_of_all_seeds():
    n_within = n = 0
    for server, mix in combinations():
        truth = float(TRUTH[f"{server}/{mix}"]["q_ult_rps"])
        scores = _two(server, mix, truth)
        n_within += sum(s.within(truth) for s in scores)
        n += len(scores)
    assert n_within >= 0.95 * n, f"{n_within}/{n} within +-10 %"


def _two(server, mix, truth):
    if (server, mix) not in _TWO:
        _TWO[(server, mix)] = score_two_stage(server, mix, truth, n_boot=TWO_STAGE_N_BOOT, estimator="pooled")
    return _TWO[(server, mix)]


# round 17 (docs/oracle.md): the model, the default, on (c)'s thin steps, recorded live: (within, covered) of 20
# (the pooled estimator: 8 / 12 and 10 / 12)
FLOOR_MODEL_THIN = {("small", "rag"): (13, 18), ("kv_starved", "rag"): (13, 15)}


@pytest.mark.slow
@pytest.mark.parametrize("estimator", ["pooled", "model"])
@pytest.mark.parametrize("server,mix", THIN, ids=[f"{s}/{m}" for s, m in THIN])
def test_c_thin_low_steps_get_a_value(server, mix, estimator):
    truth = float(TRUTH[f"{server}/{mix}"]["q_ult_rps"])
    # the design is thin: every step below the truth is sent 100-330 requests (about 80 % of them in the steady
    # window), fewer than the 368 a P99 needs
    for seed in range(N_SEEDS):
        sent = [r * THIN_STEP_S for r in rates_for(truth, seed) if r < truth]
        assert sent and 100 <= min(sent) and max(sent) <= 330
    scores = score_combination(server, mix, truth, step_s=THIN_STEP_S, estimator=estimator)
    rep = _report(server, mix, THIN_STEP_S, scores, truth)
    assert all(s.value is not None and s.censored != "below" for s in scores), rep
    # 60 s steps pass by luck even more often than 120 s ones: no coverage target here (docs/oracle.md gives the
    # count), but no confident wrong number either
    assert not [s.seed for s in scores if not s.within(truth) and not s.coarse], rep
    if estimator == "model":
        within, covered = FLOOR_MODEL_THIN[(server, mix)]
        assert sum(s.within(truth) for s in scores) >= within, rep
        assert sum(s.covers(truth) for s in scores) >= covered, rep


@pytest.mark.parametrize("server,mix", _params())
def test_long_steps_floors(server, mix):
    truth = float(TRUTH[f"{server}/{mix}"]["q_ult_rps"])
    scores = score_combination(server, mix, truth, step_s=LONG_STEP_S, estimator="pooled")
    rep = _report(server, mix, LONG_STEP_S, scores, truth)
    within, covered = FLOOR_1200[(server, mix)]
    assert sum(s.within(truth) for s in scores) >= within, rep
    assert sum(s.covers(truth) for s in scores) >= covered, rep


# The model of the evidence (``estimator="model"``; docs/oracle.md, "The model on request traces, round 5"): (within
# +-10 %, covered by its own 95 % interval) of 20, recorded live after the ceiling on the bad share and the not-steady
# step that bounds the crossing up to the next load (limits/model.py). Covered >= 18 everywhere at both step lengths;
# not the default: with 120 s steps small/rag and kv_starved/prefix are within +-10 % in 17 of 20 and the median
# half-width exceeds 12 % in five combinations (the targets).
# round 8: a step with no slow request takes its own tail's design effect (limits.evidence.OWN_TAIL), recorded live:
# small/chat within 19 -> 20; kv_starved/rag within 18 -> 17 (seed-level luck of a narrower interval; covered 20 both)
FLOOR_MODEL_120 = {
    ("small", "chat"): (20, 19), ("small", "rag"): (17, 20), ("small", "prefix"): (19, 19),
    ("large", "chat"): (20, 20), ("large", "rag"): (18, 18), ("large", "prefix"): (20, 20),
    ("kv_starved", "chat"): (20, 20), ("kv_starved", "rag"): (17, 20), ("kv_starved", "prefix"): (17, 19),
}
FLOOR_MODEL_1200 = {
    ("small", "chat"): (20, 20), ("small", "rag"): (20, 18), ("small", "prefix"): (20, 19),
    ("large", "chat"): (20, 20), ("large", "rag"): (20, 18), ("large", "prefix"): (16, 20),
    ("kv_starved", "chat"): (20, 20), ("kv_starved", "rag"): (20, 20), ("kv_starved", "prefix"): (20, 18),
}


# round 13 (docs/oracle.md): each seed again with the shape of another test of the same service, seed s + 1
# (``fit_limits(..., shape_from=...)``, limits/shapes.py), recorded live: (within, covered) of 20. The width
# target holds here in every combination: median half-width <= 12 % (MAX_HALF_WIDTH).
# (median half-width 8.4-11.8 %, kv_starved/rag the widest; own 9.9-24.2 %)
FLOOR_SHAPE_120 = {
    ("small", "chat"): (20, 19), ("small", "rag"): (18, 20), ("small", "prefix"): (20, 19),
    ("large", "chat"): (20, 20), ("large", "rag"): (18, 18), ("large", "prefix"): (20, 20),
    ("kv_starved", "chat"): (20, 19), ("kv_starved", "rag"): (18, 20), ("kv_starved", "prefix"): (18, 18),
}
MAX_HALF_WIDTH = 0.12


@pytest.mark.parametrize("server,mix", _params())
def test_model_estimator_floors(server, mix):
    truth = float(TRUTH[f"{server}/{mix}"]["q_ult_rps"])
    scores, shared = score_with_earlier_shape(server, mix, truth, step_s=STEP_S)
    rep = _report(server, mix, STEP_S, scores, truth)
    within, covered = FLOOR_MODEL_120[(server, mix)]
    assert sum(s.within(truth) for s in scores) >= within, rep
    assert sum(s.covers(truth) for s in scores) >= covered, rep
    # (a)'s rule for the default estimator (round 17): no estimate off by more than 10 % without resolution: coarse
    assert not [s.seed for s in scores if not s.within(truth) and not s.coarse], rep
    rep = "with the earlier test's shape: " + _report(server, mix, STEP_S, shared, truth)
    within, covered = FLOOR_SHAPE_120[(server, mix)]
    assert sum(s.within(truth) for s in shared) >= within, rep
    assert sum(s.covers(truth) for s in shared) >= covered, rep
    assert median_half_width(shared) <= MAX_HALF_WIDTH, rep


@pytest.mark.parametrize("server,mix", _params())
def test_model_estimator_long_steps_floors(server, mix):
    truth = float(TRUTH[f"{server}/{mix}"]["q_ult_rps"])
    scores = score_combination(server, mix, truth, step_s=LONG_STEP_S, estimator="model")
    rep = _report(server, mix, LONG_STEP_S, scores, truth)
    within, covered = FLOOR_MODEL_1200[(server, mix)]
    assert sum(s.within(truth) for s in scores) >= within, rep
    assert sum(s.covers(truth) for s in scores) >= covered, rep


# round 16 (docs/oracle.md): the model on the two-stage design (b), the test and bearing's follow-up pooled, whose steps
# take model.POOLED_JITTER and evidence.POOLED_RISING_AS_BOUND: (within, covered) of 20, recorded live (171 / 152 of
# 180 before them, round 14; 174 / 177 with them; covered >= 19 everywhere).
# round 17: the follow-up is designed from the first test's default fit, now the model's (its interval, not the
# pooled step grid), re-recorded live: 177 / 177 (small/rag covered 20 -> 19, kv_starved/rag within 16 -> 19,
# kv_starved/prefix covered 19 -> 20); covered >= 19 everywhere
FLOOR_MODEL_TWO_STAGE = {
    ("small", "chat"): (20, 20), ("small", "rag"): (20, 19), ("small", "prefix"): (19, 20),
    ("large", "chat"): (20, 20), ("large", "rag"): (20, 20), ("large", "prefix"): (19, 19),
    ("kv_starved", "chat"): (20, 20), ("kv_starved", "rag"): (19, 19), ("kv_starved", "prefix"): (20, 20),
}


@pytest.mark.xdist_group("oracle_two_stage")  # the stages the pooled two-stage tests simulated (acceptance._STAGES)
@pytest.mark.parametrize("server,mix", _params())
def test_model_estimator_two_stage_floors(server, mix):
    truth = float(TRUTH[f"{server}/{mix}"]["q_ult_rps"])
    scores = score_two_stage(server, mix, truth, n_boot=TWO_STAGE_N_BOOT, estimator="model")
    rep = "two stages, model: " + _report(server, mix, STEP_S, scores, truth)
    within, covered = FLOOR_MODEL_TWO_STAGE[(server, mix)]
    assert sum(s.within(truth) for s in scores) >= within, rep
    assert sum(s.covers(truth) for s in scores) >= covered, rep
    assert covered >= MIN_COVERED
