"""Proof against the oracle: calibrate on one mix's stepped test, predict the true limits of the other mixes.

Runs in ``make test`` (marked ``slow``). Cost on the shared 2-core machine: one seed (seed 0) of
every (server, source mix) pair, 9 twins × 3 target mixes = 27 predictions with 4 parameter draws
and 900 s steady-state runs, 1–3 minutes (56 s and 187 s measured, depending on the machine's
load); more seeds would not fit the ~3 minute budget.
``python -m tests.twin.oracle_twin --seeds 3`` runs three seeds with 6 draws for docs/twin.md.

Assertions (the issue's targets, on the cross-mix cases): among predictions the twin quotes (trusted,
not a bound), ≥ 80 % within ±15 % and ≥ 80 % whose CI covers the truth; every prediction off by more
than 15 % is flagged (untrusted, or a lower bound because the target needs a ceiling the test never
reached), and such a lower bound holds (the truth is at least the bound) in ≥ 80 % of flagged cases.
"""

from __future__ import annotations

import pytest

from tests.twin.oracle_twin import run_cases, summary


@pytest.mark.slow
def test_twin_predicts_other_mixes_of_the_oracle_servers():
    cases = run_cases(seeds=range(1), n_draws=4, duration_s=900.0)
    s = summary(cases)
    assert s["n"] == 18
    assert s["quoted"] >= 5, s
    assert s["within"] >= 0.8 * s["quoted"], s
    assert s["covered"] >= 0.8 * s["quoted"], s
    silent_misses = [c for c in cases if c.quoted and not c.within]
    assert not silent_misses, [(c.server, c.source, c.target, c.err) for c in silent_misses]
    assert s["bound_holds"] >= 0.8 * s["flagged"], s
    # the same mix as the test: the twin reproduces its own limit
    own = [c for c in cases if c.source == c.target]
    assert sum(c.within for c in own) == len(own) == 9
