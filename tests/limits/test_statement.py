"""limits.statement: the words of a limit, and pooled.requests_needed, the count they quote, against counts worked out
by hand."""

import math

import pytest

from bearing_lib.limits.pooled import requests_needed
from bearing_lib.limits.sla import parse_clause, parse_sla
from bearing_lib.limits.statement import ci_text, unplaced_statement


def _by_hand(q: float) -> int:
    # none of n requests bad judges a clause at 95 % once q^n <= 0.025 (the upper 97.5 % order statistic exists)
    return math.ceil(math.log(0.025) / math.log(q))


@pytest.mark.parametrize(("clause", "q"), [
    ("p99(ttft) <= 1s", 0.99), ("p95(latency) <= 2s", 0.95), ("p99.9(ttft) <= 1s", 0.999),
    ("error_rate <= 1%", 0.99), ("error_rate <= 0.1%", 0.999),
])
def test_requests_needed_is_the_smallest_n_with_none_bad_that_judges_the_clause(clause, q):
    assert requests_needed(parse_clause(clause)) == _by_hand(q)


def test_requests_needed_values_quoted_in_the_docs():
    assert [requests_needed(parse_clause(c)) for c in ("p99(ttft) <= 1s", "p95(ttft) <= 1s",
                                                       "error_rate <= 0.1%")] == [368, 72, 3688]


def test_a_clause_that_allows_no_failure_is_read_at_the_zero_allowance():
    # error_rate <= 0% divides by sla.ZERO_ALLOWANCE (0.1 %) wherever a margin is formed: the count says the same
    from bearing_lib.limits.sla import ZERO_ALLOWANCE

    assert requests_needed(parse_clause("error_rate <= 0%")) == _by_hand(1.0 - ZERO_ALLOWANCE)


def test_the_statement_names_the_most_demanding_clause_and_the_loads():
    sla = parse_sla(["p50(ttft) <= 1s", "error_rate <= 0.1%"])
    assert unplaced_statement(1.0, 3.0, "rps", sla) == (
        "its 95% interval reaches from below the lowest load tested (1 rps) to above the highest (3 rps); more "
        "requests per step would place it (error_rate <= 0.1% needs about 3,688 requests at a load for a 95% "
        "interval)")
    one = unplaced_statement(8.0, 8.0, "concurrency", parse_sla("p95(ttft) <= 1s"))
    assert one == ("its 95% interval reaches from below the only load tested (8 concurrency) to above it; more "
                   "requests per step would place it (p95(ttft) <= 1s needs about 72 requests at a load for a 95% "
                   "interval), and a second load would bracket it")


def test_ci_text_says_an_open_end_in_words():
    assert ci_text(1.0, 2.5) == "95% CI 1–2.5"
    assert ci_text(1.0, None) == "95% CI from 1, upper end above the loads tested"
    assert ci_text(None, 2.5) == "95% CI up to 2.5, lower end below the loads tested"
    assert ci_text(None, None) == "95% CI beyond the loads tested on both sides"


def test_below_a_step_not_failed_on_its_own_the_words_say_why():
    # review finding: the "figures bound" wording is a table's; a trace's thin or not-steady step gets its reason,
    # and a step that passed on its own is not called "failed at the lowest load judged"
    from bearing_lib.limits.curve_row import CurveRow
    from bearing_lib.limits.judging import JudgedStep
    from bearing_lib.limits.statement import below_statement

    def step(status: str, reasons: list[str]) -> JudgedStep:
        return JudgedStep(row=CurveRow(step=0), x=2.0, status=status, margins={}, reasons=reasons, verdicts={},
                          sla_margin=None, not_steady=False, flags=[], settling=None, by_bound=set(), close=False,
                          pool_ok=True, clause_ok=[], window="steady")

    thin = [step("undetermined", ["p99(ttft) <= 1s: too few requests for a p99 (40 successful)"])]
    assert below_statement(2.0, "rps", thin) == (
        "< 2 rps (the crossing lies below the lowest load read; that step was not judged on its own: p99(ttft) <= 1s: "
        "too few requests for a p99 (40 successful))")
    assert below_statement(2.0, "rps", thin, tables=True).startswith(
        "< 2 rps (the crossing lies below the lowest load read, from what its figures bound; that step")
    assert below_statement(2.0, "rps", [step("pass", [])]) == (
        "< 2 rps (the crossing lies below the lowest load read, although a step there passed on its own: the steps "
        "read together place it lower)")
    assert below_statement(2.0, "rps", [step("fail", ["x"])]) == "< 2 rps (failed at the lowest load judged)"
    # repeats at the lowest load that disagree (llm-d exp-7 2p1d: one of two at 2.5 rps passed) are said to
    assert below_statement(2.0, "rps", [step("fail", ["x"]), step("pass", [])]) == (
        "< 2 rps (its repeats at the lowest load judged fail read together; 1 of 2 judged there passed on its own)")
