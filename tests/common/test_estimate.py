"""Estimate: one value with its uncertainty, rendered one way everywhere."""

from __future__ import annotations

import pytest

from bearing_lib.common.errors import SchemaError
from bearing_lib.common.estimate import Estimate


def test_text_keeps_the_sign_of_a_bound_and_drops_its_ci():
    assert Estimate(0.7, ci95=(0.5, 0.9), bound="lower").text() == "≥ 0.70"
    assert Estimate(3.0, bound="upper", unit="rps").text() == "< 3.00 rps"
    assert Estimate(1.234, ci95=(1.0, 1.5), unit="rps").text() == "1.23 rps (95% CI 1.00–1.50)"
    assert Estimate(None).text() == "not available"
    assert Estimate(float("inf")).value is None  # never a silent infinity


def test_scaled_moves_value_ci_and_bracket_and_keeps_the_bound():
    e = Estimate(2.0, ci95=(1.0, 4.0), bracket=(1.5, 2.5), bound="lower", unit="rps", basis="offered")
    s = e.scaled(0.5, unit="req/s", basis="achieved")
    assert (s.value, s.ci95, s.bracket, s.bound, s.unit, s.basis) == (1.0, (0.5, 2.0), (0.75, 1.25), "lower",
                                                                     "req/s", "achieved")
    with pytest.raises(ValueError):
        e.scaled(-1)


@pytest.mark.parametrize(("censored", "bound", "value"), [
    ("none", "none", 1.0), ("not_monotone", "none", 1.0), ("above", "lower", 1.0), ("below", "upper", 1.0),
    ("no_data", "none", None),
])
def test_limits_censoring_words_map_to_bounds(censored, bound, value):
    e = Estimate.from_censored(1.0, censored)
    assert (e.bound, e.value) == (bound, value)


def test_json_round_trip_and_all_problems_at_once():
    e = Estimate(1.0, ci95=(0.5, 2.0), unit="rps", basis="offered")
    assert Estimate.from_dict(e.to_dict()) == e
    with pytest.raises(SchemaError) as err:
        Estimate.from_dict({"value": "x", "bound": "sideways", "unit": 3})
    assert "3 problem(s)" in str(err.value)


def test_an_open_end_of_the_ci_is_said_not_dropped():
    # a limit whose CI is open above (no step above it failed a clause) keeps the open end in its text
    assert Estimate(2.25, ci95=(1.5, None), unit="rps").text() == "2.25 rps (95% CI ≥ 1.50, open above)"
    assert Estimate(0.4, ci95=(None, 0.9)).text() == "0.40 (95% CI < 0.90, open below)"
    assert Estimate(1.0, ci95=(None, None)).text() == "1.00"
    assert Estimate(3.0, ci95=(2.0, None), bound="lower").text() == "≥ 3.00"  # a bound says no CI
