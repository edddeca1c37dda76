"""Proof against the oracle: calibrate on one mix's stepped test, predict the true limits of the other mixes.

Runs in ``make test`` (marked ``slow``). Cost on the shared 2-core machine: per test one seed (seed 0) of
every (server, source mix) pair, 9 twins × 3 target mixes = 27 predictions with 4 parameter draws and 900 s
steady-state runs and 40 bootstrap resamples per twin: about 1 minute for both tests with the compiled loop.
``python -m tests.twin.oracle_twin --seeds 2 --first-seed 10 --draws 4 --n-boot 40 --cross-only [--engine-known]``
gives the held-out tables of docs/twin.md.

Two ways to calibrate (docs/twin.md, "Proof against the oracle"):

* **from the test alone**: the accuracy target is *not* reached (the held-out table: 22 of 36 = 61 % of
  cross-mix cases within ±15 %, short of 80 %), because a chat test never fills the KV budget and a RAG test never
  fills the slots, so a target that needs the other ceiling can only be bounded. The coverage target is: by the
  issue's rule (a "≥" bound covers only if it holds) 35 / 36 held out, 18 / 18 on seed 0. Asserted here: what the
  twin quotes is right (≥ 80 % within ±15 % and covered, no quoted miss), its lower bounds hold, the
  measured share of all cross-mix cases within ±15 % (≥ 60 %) and covered by the issue's rule (≥ 90 %).
* **with the engine's configured ceilings given** (slots, KV-cache size, batch tokens, KV policy: what an
  operator reads from the engine's flags and startup log; never an iteration cost): the issue's targets, ≥ 80 % of
  all cross-mix cases within ±15 % and ≥ 90 % covered (held out: 36 / 36 and 36 / 36), and no lower bound left.
"""

from __future__ import annotations

import pytest

from tests.twin.oracle_twin import run_cases, summary


@pytest.mark.slow
def test_twin_predicts_other_mixes_of_the_oracle_servers():
    cases = run_cases(seeds=range(1), n_draws=4, duration_s=900.0, n_boot=40)
    s = summary(cases)
    assert s["n"] == 18
    assert s["quoted"] >= 5, s
    assert s["within"] >= 0.8 * s["quoted"], s
    assert s["covered"] >= 0.8 * s["quoted"], s
    silent_misses = [c for c in cases if c.quoted and not c.within]
    assert not silent_misses, [(c.server, c.source, c.target, c.err) for c in silent_misses]
    assert s["bound_holds"] >= 0.8 * s["flagged"], s
    # the measured figure from the test alone (below the issue's 80 %: docs/twin.md says by how much and why,
    # per miss: every miss is a lower bound whose named ceiling the test never reached)
    assert s["all_within"] >= 0.6 * s["n"], s
    # the issue's coverage rule over every cross-mix case (a CI that holds the truth, or a "≥" bound that holds,
    # its bracket too): ≥ 90 % (seed 0: 18 / 18; held-out seeds 10–11: 35 / 36)
    assert s["all_covers"] >= 0.9 * s["n"], s
    # the same mix as the test: the twin reproduces its own limit
    own = [c for c in cases if c.source == c.target]
    assert sum(c.within for c in own) == len(own) == 9


@pytest.mark.slow
def test_twin_with_the_engine_settings_reaches_the_issue_targets():
    cases = run_cases(seeds=range(1), n_draws=4, duration_s=900.0, engine_known=True, n_boot=40, cross_only=True)
    cross = [c for c in cases if c.source != c.target]
    assert len(cross) == 18
    assert all(c.trusted for c in cases)
    within = sum(c.within for c in cross)
    covered = sum(c.covers for c in cross)
    assert within >= 0.8 * len(cross), [(c.server, c.source, c.target, c.err, c.flags) for c in cross if not c.within]
    # the issue's coverage target, ≥ 90 % (held-out seeds 10–11: 36 / 36)
    assert covered >= 0.9 * len(cross), [(c.server, c.source, c.target, c.lo, c.hi, c.truth) for c in cross
                                         if not c.covers]
    # the ceilings given close every lower bound the test alone left (a slot count or KV budget it never reached)
    assert not [c for c in cross if c.bound != "none"], [(c.server, c.source, c.target) for c in cross
                                                         if c.bound != "none"]
