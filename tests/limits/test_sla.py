"""SLA language: parsing, errors that point at the problem, margins and per-request checks."""

from __future__ import annotations

import polars as pl
import pytest

from bearing_lib.common.errors import SLAParseError
from bearing_lib.limits.sla import load_sla_file, parse_clause, parse_sla


@pytest.mark.parametrize(
    ("text", "kind", "metric", "q", "op", "threshold"),
    [
        ("p99(ttft) <= 500ms", "percentile", "ttft_ms", 0.99, "<=", 500.0),
        ("p95(latency) < 3s", "percentile", "latency_ms", 0.95, "<", 3000.0),
        ("p99(tpot) <= 50ms", "percentile", "tpot_ms", 0.99, "<=", 50.0),
        ("p50(itl) <= 30ms", "percentile", "itl_ms", 0.50, "<=", 30.0),
        ("P99.9(E2E)<=2.5s", "percentile", "latency_ms", 0.999, "<=", 2500.0),
        ("p90(ttft) <= 800us", "percentile", "ttft_ms", 0.90, "<=", 0.8),
        ("error_rate <= 0.5%", "error_rate", None, None, "<=", 0.005),
        ("error_rate < 0.01", "error_rate", None, None, "<", 0.01),
    ],
)
def test_valid_clauses(text, kind, metric, q, op, threshold):
    c = parse_clause(text)
    assert (c.kind, c.metric, c.op) == (kind, metric, op)
    assert c.threshold == pytest.approx(threshold)
    if q is not None:
        assert c.q == pytest.approx(q)


def test_goodput_clause():
    c = parse_clause("goodput(ttft<=500ms, tpot<=50ms) >= 95%")
    assert c.kind == "goodput" and c.op == ">=" and c.threshold == pytest.approx(0.95)
    assert [(b.metric, b.op, b.threshold_ms) for b in c.bounds] == [("ttft_ms", "<=", 500.0), ("tpot_ms", "<=", 50.0)]


def test_several_clauses_and_and():
    sla = parse_sla(["p99(ttft) <= 500ms and error_rate <= 0.5%", "p99(tpot) <= 50ms; p50(itl) <= 30ms"])
    assert [c.text for c in sla.clauses] == [
        "p99(ttft) <= 500ms", "error_rate <= 0.5%", "p99(tpot) <= 50ms", "p50(itl) <= 30ms"]
    assert sla.to_list()[1] == {"text": "error_rate <= 0.5%", "kind": "error_rate", "metric": None,
                                "stat": "error_rate", "op": "<=", "threshold": 0.005, "unit": "fraction",
                                "bounds": None}


@pytest.mark.parametrize(
    ("text", "needle", "caret_under"),
    [
        ("p99(ttf) <= 500ms", "unknown metric 'ttf'", "ttf"),
        ("p99(ttft) <= 500", "has no unit", "500"),
        ("p99(ttft) <= 5min", "unknown time unit 'min'", "min"),
        ("p99(ttft) >= 5ms", "takes an upper limit", ">="),
        ("p100(ttft) <= 1s", "outside (0, 100)", "100"),
        ("error_rate <= 150%", "not a fraction between 0 and 1", "150%"),
        ("error_rate >= 1%", "takes an upper limit", ">="),
        ("goodput(ttft<=500ms) <= 95%", "takes a lower limit", "<="),
        ("goodput() >= 95%", "needs at least one bound", "goodput"),
        ("throughput >= 5", "unknown clause start 'throughput'", "throughput"),
        ("p99(ttft)", "expected a comparison", None),
    ],
)
def test_errors_quote_clause_point_and_show_grammar(text, needle, caret_under):
    with pytest.raises(SLAParseError) as exc:
        parse_sla(text)
    msg = str(exc.value)
    assert f"SLA clause {text!r}" in msg
    assert needle in msg
    assert "SLA grammar" in msg and "goodput(metric<=DURATION" in msg
    if caret_under is not None:
        lines = msg.splitlines()
        quoted = next(i for i, ln in enumerate(lines) if ln.strip() == text)
        caret = lines[quoted + 1].index("^")
        assert lines[quoted][caret:].startswith(caret_under)


def test_empty_and_duplicate():
    with pytest.raises(SLAParseError, match="empty"):
        parse_sla([])
    with pytest.raises(SLAParseError, match="given twice"):
        parse_sla(["p99(ttft) <= 1s", "p99(ttft) <= 1s"])


def test_yaml_file(tmp_path):
    f = tmp_path / "sla.yaml"
    f.write_text("sla:\n  - p99(ttft) <= 500ms\n  - error_rate <= 1%\n")
    assert [c.text for c in load_sla_file(f).clauses] == ["p99(ttft) <= 500ms", "error_rate <= 1%"]
    bad = tmp_path / "bad.yaml"
    bad.write_text("- p99(ttft) <= 500\n")
    with pytest.raises(SLAParseError, match=r"bad\.yaml: SLA clause 'p99\(ttft\) <= 500'"):
        load_sla_file(bad)
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text("limits: [1]\n")
    with pytest.raises(SLAParseError, match="expected a key 'sla'"):
        load_sla_file(wrong)


def _frame():
    # 10 requests: 9 ok (ttft 100 x 8, 600 x 1), 1 error; tpot 10 except one ok request at 60
    return pl.DataFrame({
        "status": ["ok"] * 9 + ["error"],
        "ttft_ms": [100.0] * 8 + [600.0, None],
        "tpot_ms": [10.0] * 7 + [60.0, 10.0, None],
        "latency_ms": [1000.0] * 10,
    })


def test_evaluate_values_and_margins():
    sla = parse_sla(["p50(ttft) <= 200ms", "error_rate <= 20%", "goodput(ttft<=500ms, tpot<=50ms) >= 75%"])
    ev = sla.evaluate(_frame())
    # p50 over the 9 ok ttfts = 100; error rate 1/10;
    # goodput: ok and within bounds = 9 ok - 1 (ttft 600) - 1 (tpot 60) = 7 of 10
    assert ev["observed"].to_list() == pytest.approx([100.0, 0.1, 0.7])
    # margins: 1 - 100/200; 1 - 0.1/0.2; 1 - (1-0.7)/(1-0.75)
    assert ev["margin"].to_list() == pytest.approx([0.5, 0.5, 1 - 0.3 / 0.25])
    assert ev["passes"].to_list() == [True, True, False]
    assert sla.evaluate_window(_frame()) is False
    assert sla.margin(_frame()) == pytest.approx(1 - 0.3 / 0.25)


def test_percentile_is_linear_over_ok_requests():
    sla = parse_sla("p90(ttft) <= 1s")
    f = pl.DataFrame({"status": ["ok"] * 5 + ["timeout"], "ttft_ms": [10.0, 20.0, 30.0, 40.0, 50.0, 9999.0]})
    # linear: h = (5-1)*0.9 = 3.6 -> 40 + 0.6*(50-40) = 46
    assert sla.evaluate(f)["observed"][0] == pytest.approx(46.0)


def test_strict_operator_on_the_line():
    c = parse_clause("p99(ttft) < 500ms")
    assert not c.passes(0.0)
    assert parse_clause("p99(ttft) <= 500ms").passes(0.0)


def test_request_violates():
    sla = parse_sla(["p99(ttft) <= 500ms", "goodput(tpot<=50ms) >= 90%"])
    got = _frame().select(sla.request_violates().alias("v"))["v"].to_list()
    # violates: ttft 600 (row 8), tpot 60 (row 7), the error (row 9)
    assert got == [False] * 7 + [True, True, True]


def test_notes_without_error_clause():
    assert parse_sla("p99(ttft) <= 1s").notes()
    assert parse_sla("p99(ttft) <= 1s and error_rate <= 1%").notes() == []
