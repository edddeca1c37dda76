"""``--option KEY=VALUE`` on `bearing inspect` and `bearing profile`, and its parser
(``bearing_lib.cli._common.parse_loader_options``).

The JMeter file is DERIVED in the test: the bundled Apache JMeter HTMLReportTestFile.csv
(Apache-2.0, tests/fixtures/jmeter) with its header line removed, so the expected values come
from reading the original with stdlib ``csv``. The canonical CSV is SYNTHETIC (known times).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bearing_lib.cli._common import merge_loader_options, parse_loader_options
from bearing_lib.cli.main import app
from bearing_lib.common.errors import ParameterError

JMETER = Path(__file__).resolve().parents[1] / "fixtures" / "jmeter" / "HTMLReportTestFile.csv"
runner = CliRunner()


def test_values_are_json_when_they_parse_else_text():
    got = parse_loader_options([
        "ttfb_as_ttft=true", "min_plateau_s=5", "x=2.5", "timestamp=end", 'label="5"', "columns=[\"a\", \"b\"]",
        'metric_rows={"ttft": "TTFT"}', "eq=a=b", "empty=", "none=null",
    ])
    assert got == {"ttfb_as_ttft": True, "min_plateau_s": 5, "x": 2.5, "timestamp": "end", "label": "5",
                   "columns": ["a", "b"], "metric_rows": {"ttft": "TTFT"}, "eq": "a=b", "empty": "", "none": None}
    assert isinstance(got["min_plateau_s"], int) and got["ttfb_as_ttft"] is True
    assert parse_loader_options([]) == {}


@pytest.mark.parametrize("item,message", [
    ("ttfb_as_ttft", "expected KEY=VALUE"),
    ("=true", "expected KEY=VALUE"),
    ("ttfb-as-ttft=true", "is not an option name"),
    ("columns=[timeStamp, elapsed]", "looks like JSON but does not parse"),
    ('metric_rows={"a": 1', "looks like JSON but does not parse"),
])
def test_malformed_options_are_refused_naming_the_item(item, message):
    with pytest.raises(ParameterError, match=message) as exc:
        parse_loader_options([item])
    assert repr(item) in str(exc.value)


def test_a_key_twice_or_both_ways_is_refused():
    with pytest.raises(ParameterError, match="timestamp given twice"):
        parse_loader_options(["timestamp=end", "timestamp=start"])
    with pytest.raises(ParameterError, match="'skip_bad_lines' given both"):
        merge_loader_options({"skip_bad_lines": True}, skip_bad_lines=True)
    assert merge_loader_options({"a": 1}, mapping=None, b=2) == {"a": 1, "b": 2}


@pytest.fixture
def noheader(tmp_path):
    lines = JMETER.read_text().splitlines(keepends=True)
    p = tmp_path / "results.jtl"
    p.write_text("".join(lines[1:]))  # DERIVED: the Apache file without its header
    with open(JMETER, newline="") as fh:
        reader = csv.DictReader(fh)
        return p, reader.fieldnames, list(reader)


def test_inspect_headerless_jmeter_with_columns_and_ttfb(noheader):
    path, columns, rows = noheader
    r = runner.invoke(app, ["inspect", str(path), "--option", f"columns={json.dumps(columns)}",
                            "--option", "ttfb_as_ttft=true"])
    assert r.exit_code == 0, r.output
    lines = {ln.split(":", 1)[0]: ln.split(":", 1)[1].strip() for ln in r.output.splitlines() if ":" in ln}
    assert lines["format"].startswith("jmeter-jtl-noheader")
    assert lines["rows"] == str(len(rows)) == "255"
    n_bad = sum(r["success"] == "false" for r in rows)
    assert lines["status"] == f"ok {len(rows) - n_bad}, error {n_bad}"
    assert "ttft_ms" in lines["fields"].split(", ")  # from Latency, because of ttfb_as_ttft=true
    # without ttfb_as_ttft the TTFT column stays absent
    r = runner.invoke(app, ["inspect", str(path), "--option", f"columns={json.dumps(columns)}"])
    assert r.exit_code == 0, r.output
    assert "ttft_ms" in next(ln for ln in r.output.splitlines() if ln.startswith("absent:"))


def test_inspect_option_errors_exit_1(noheader):
    path, _, _ = noheader
    r = runner.invoke(app, ["inspect", str(path), "--option", "columns=[timeStamp, elapsed]"])
    assert r.exit_code == 1
    assert "error: --option 'columns=[timeStamp, elapsed]': the value looks like JSON but does not parse" in r.output
    r = runner.invoke(app, ["inspect", str(path), "--option", "columns"])
    assert r.exit_code == 1 and "expected KEY=VALUE" in r.output
    r = runner.invoke(app, ["inspect", str(JMETER), "--option", "columns=[\"a\"]"])
    assert r.exit_code == 1
    assert "format 'jmeter-jtl-csv' does not take option(s) ['columns']; it takes: ttfb_as_ttft" in r.output
    r = runner.invoke(app, ["inspect", str(JMETER), "--skip-bad-lines", "--option", "skip_bad_lines=true"])
    assert r.exit_code == 1 and "given both as its own flag" in r.output


def _canonical(tmp_path) -> Path:
    # SYNTHETIC: 400 requests every 0.5 s from 1,700,000,000 s (22:13:20 UTC) to 1,700,000,199.5 s
    p = tmp_path / "trace.csv"
    with open(p, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["request_id", "start_s", "end_s", "latency_ms", "input_tokens", "output_tokens", "status"])
        for i in range(400):
            t = 1_700_000_000 + 0.5 * i
            w.writerow([f"r{i}", t, t + 0.2, 200, 100 + i, 10, "ok"])
    return p


def test_profile_passes_options_to_the_loader(tmp_path):
    p = _canonical(tmp_path)
    out = tmp_path / "p.json"
    r = runner.invoke(app, ["profile", str(p), "--json", str(out), "--option", "time_origin=epoch"])
    assert r.exit_code == 0, r.output
    d = json.loads(out.read_text())
    # UTC minutes: 22:13 and 22:16 are partial (first and last request); 22:14 and 22:15 complete
    assert d["clock"] == "UTC wall clock"
    assert d["per_minute"]["series"] == {"minute_start_s": [1_700_000_040.0, 1_700_000_100.0], "requests": [120, 120]}
    r = runner.invoke(app, ["profile", str(p), "--json", str(out), "--force", "--option", "time_origin=relative"])
    assert r.exit_code == 0, r.output
    d = json.loads(out.read_text())
    # relative clock: minutes counted from the first request; the one holding the last request is left out
    assert d["clock"].startswith("relative")
    assert d["per_minute"]["series"]["requests"] == [120, 120, 120]
    r = runner.invoke(app, ["profile", str(p), "--json", str(out), "--force", "--option", "time_origin=sideways"])
    assert r.exit_code == 1 and "time_origin must be one of" in r.output
    r = runner.invoke(app, ["profile", str(p), "--json", str(out), "--force", "--option", "mapping=x.yaml"])
    assert r.exit_code == 1 and "does not take option(s) ['mapping']" in r.output
