"""One number per concept (issue #25 item 1): on the demo and on every pair of the report matrix, each planning
quantity appears with one value in the rendered HTML and in ``summary.json``.

Each report is what a user gets: one ``bearing report`` subprocess (the notebooks), built once per session and
only when a test asks for it (``-k demo`` builds the demo alone): the matrix's cells are the very reports
test_matrix.py opens in Chromium (twin, exports and "what changed" included), built by whichever of the two files
runs first (the session's shared runs, ``bearing_runs`` in tests/conftest.py); ``bearing limits`` runs once per
load test.
The HTML is parsed with the standard library's :mod:`html.parser` (visible text and the key-figure rows
``<tr><th>label</th><td>value</td>...``; scripts, styles and the raw-JSON blocks for analysts left out), the
summary and the limits with :mod:`json`. The concepts and where each is read:

* **current peak** (the target's quantile of the observed rate, before growth): ``fos.data.target`` (rps /
  growth), the traffic section's near-term basis and the staged plan's "current peak X req/s"; never "the max";
* **near-term planning load** (current peak × 1.5): the traffic row "Near-term planning load" and the staged
  plan's "near term ... for X req/s", and ``production.data.targets.near_term`` = ``ops...staged.near_term``;
* **buffer and total instances**: the "Instances" row "N (B + K buffer)", the "Buffer" row "mode, K
  instance(s)", the headline's plan line and ``plan.data.instances``;
* **lowest tested vs lowest judged load**: the health checklist's "at the lowest tested load X" is the lowest
  offered load of the plan's mix in the raw limits JSON (a higher one is called the lowest *judged* load and
  the test's start is named);
* **max safe concurrency**: the "Max safe concurrency" row equals ``plan.data.instances.safe_concurrency``, and
  at the raw step with that mean concurrency every SLA clause holds (checked on the raw limits JSON);
* **field names say what they hold**: no ``sla_p99_ms`` anywhere in ``summary.json``; ``sla_stat`` is the SLA
  latency clause's statistic.

Budget: the matrix's 27 report runs (shared with test_matrix.py: run together, the second file pays nothing for
them) plus the demo and the added pair (twin and exports off), ~40 s each on a quiet machine; marked slow
(tests/slow_tests.txt).
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.conftest import ENV, ROOT, BearingRuns
from tests.report.test_matrix import ALL_TESTS, CELLS, TRACES, LoadTest

pytestmark = [pytest.mark.slow, pytest.mark.shared_data]

DEMO_LOADTEST = ROOT / "data/loadtests/lmbenchmark-llm-d-exp2/llm-d-70b-2replicas"
DEMO_RUN = "llm-d-70b-2replicas/sharegpt"
MOONCAKE = "mooncake-fast25/conversation_trace.jsonl"

# Pairs added to the matrix whose test and production differ sharply in request lengths (the bundled LMBenchmark
# ShareGPT sweep, median prompt ~1k tokens, against Mooncake's conversation trace, mean prompt ~12k; checked
# from the raw files in test_the_added_pair_differs_sharply_in_lengths).
EXTRA = {"bundled-lmbench": LoadTest(str(DEMO_LOADTEST), "p95(ttft) <= 1s and error_rate <= 1%", run=DEMO_RUN)}
EXTRA_CELLS = [("bundled-lmbench", "mooncake")]
REPORT_CELLS = [c for c in CELLS if not ALL_TESTS[c[0]].refusal] + EXTRA_CELLS
IDS = ["demo"] + [f"{a}-{b}" for a, b in REPORT_CELLS]


# --------------------------------------------------------------------------- building (lazily, once)
@dataclass
class Built:
    name: str
    html: str
    summary: dict
    limits: dict
    run: str


@dataclass
class Builder:
    """The reports, built through the session's shared runs (``bearing_runs``, tests/conftest.py): the matrix's
    cells are test_matrix.py's own reports (:func:`tests.report.test_matrix.build_matrix`, built once per
    session whichever file asks first); the demo and the added pairs are built here, once."""

    runs: BearingRuns
    shared: Path
    reports: dict[str, Built] = field(default_factory=dict)

    @property
    def work(self) -> Path:
        (d := self.runs.work / "consistency").mkdir(exist_ok=True)
        return d

    def _limits(self, key: str, lt: LoadTest) -> Path:
        path = Path(lt.path) if Path(lt.path).is_absolute() else self.shared / "loadtests" / lt.path
        out = self.work / f"limits-{key}.json"
        r = self.runs.run("limits", str(path), "--sla", lt.sla, "--n-boot", "200", "--json", str(out))
        assert r.returncode == 0, (key, r.stdout[-2000:], r.stderr[-2000:])
        return out

    def _own(self, cell: str) -> tuple[Path, Path | None, str]:
        """The demo or an added pair: (report folder, limits JSON or None for the report's own, run)."""
        reports = self.work / "reports"
        if cell == "demo":
            args = ["report", "--demo", "--name", "demo", "--reports-dir", str(reports), "-p", "n_boot", "200",
                    "-p", "twin", "false", "-p", "exports", "false"]
            run, limits_path = DEMO_RUN, None
        else:
            lt_key, tr_key = cell.rsplit("-", 1)
            lt = EXTRA[lt_key]
            limits_path = self._limits(lt_key, lt)
            args = ["report", "--name", cell, "--reports-dir", str(reports), "-p", "production_trace",
                    str(self.shared / "traces" / TRACES[tr_key]), "-p", "n_boot", "200", "-p", "limits_json",
                    str(limits_path), "-p", "twin", "false", "-p", "exports", "false"]
            if lt.run:
                args += ["-p", "run", lt.run]
            run = lt.run
        r = self.runs.run(*args)
        assert r.returncode in (0, 3), (cell, r.returncode, r.stdout[-2000:], r.stderr[-3000:])  # 3: red verdict
        return reports / cell, limits_path, run

    def get(self, cell: str) -> Built:
        if cell in self.reports:
            return self.reports[cell]
        lt_key, tr_key = cell.rsplit("-", 1) if cell != "demo" else ("", "")
        if lt_key in ALL_TESTS:
            from tests.report.test_matrix import build_matrix

            m = build_matrix(self.runs, self.shared)[(lt_key, tr_key)]
            assert m.directory is not None, (cell, m.rc, m.out[-2000:], m.err[-3000:])
            d, run = m.directory, ALL_TESTS[lt_key].run
            limits_file = self.runs.work / "matrix" / f"limits-{lt_key}.json"
        else:
            d, limits_path, run = self._own(cell)
            limits_file = limits_path or d / "limits.json"
        self.reports[cell] = Built(cell, (d / "report.html").read_text(encoding="utf-8"),
                                   json.loads((d / "summary.json").read_text(encoding="utf-8")),
                                   json.loads(Path(limits_file).read_text(encoding="utf-8")), run)
        return self.reports[cell]


@pytest.fixture(scope="module")
def builder(bearing_runs) -> Builder:
    base = os.environ.get(ENV)
    if not base:
        pytest.skip(f"{ENV} is not set: real files read in place are not available")
    return Builder(bearing_runs, Path(base))


# --------------------------------------------------------------------------- reading the HTML
class _Page(HTMLParser):
    """Visible text and key-figure rows (``th`` then ``td`` cells) of a report, without scripts, styles,
    ``pre`` and the raw-JSON ``details.raw`` blocks."""

    SKIP = {"script", "style", "pre"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []
        self.rows: list[list[str]] = []
        self._skip: list[str] = []
        self._row: list[str] | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        if tag in self.SKIP or (tag == "details" and "raw" in (a.get("class") or "").split()):
            self._skip.append(tag)
        elif self._skip and tag == self._skip[-1] == "details":
            self._skip.append(tag)
        if self._skip:
            return
        if tag == "tr":
            self._row = []
        elif tag in ("th", "td") and self._row is not None:
            self._cell = []
        elif tag in ("p", "li", "tr", "div", "h2", "h3", "br"):
            self.text.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if self._skip:
            if tag == self._skip[-1]:
                self._skip.pop()
            return
        if tag in ("th", "td") and self._row is not None and self._cell is not None:
            self._row.append(" ".join("".join(self._cell).split()))
            self._cell = None
            self.text.append(" ")
        elif tag == "tr" and self._row is not None:
            self.rows.append(self._row)
            self._row = None
            self.text.append("\n")

    def handle_data(self, data: str) -> None:
        if self._skip:
            return
        self.text.append(data)
        if self._cell is not None:
            self._cell.append(data)


def parse(html: str) -> tuple[str, list[list[str]]]:
    p = _Page()
    p.feed(html)
    return " ".join("".join(p.text).split()), p.rows


NUM = r"(\d[\d,]*(?:\.\d+)?)"


def _f(text: str) -> float:
    return float(text.replace(",", ""))


def shown_as(value: float, text: str) -> bool:
    """``text`` (a number as the report prints it, rounded) is ``value`` at the precision shown."""
    t = text.replace(",", "")
    decimals = len(t.split(".")[1]) if "." in t else 0
    return abs(float(t) - value) <= 0.5 * 10 ** -decimals + 1e-9 * abs(value)


def rows_labelled(rows: list[list[str]], label: str) -> list[list[str]]:
    return [r for r in rows if r and r[0] == label]


# --------------------------------------------------------------------------- the checks
def _plan(b: Built) -> dict:
    assert b.summary["plan"]["available"], (b.name, b.summary["plan"]["reason"])
    return b.summary["plan"]["data"]


def _fos(b: Built) -> dict:
    return b.summary["fos"]["data"]


def _walk_keys(obj, out: set[str]) -> set[str]:
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.add(str(k))
            _walk_keys(v, out)
    elif isinstance(obj, list):
        for v in obj:
            _walk_keys(v, out)
    return out


def check_current_peak_and_near_term(b: Built, text: str, rows: list[list[str]]) -> None:
    t = _fos(b)["target"]
    peak = t["rps"] / t["growth"]
    assert "current peak: the max" not in text, b.name
    for m in re.finditer(r"current peak " + NUM + r" req/s", text):
        assert shown_as(peak, m.group(1)), (b.name, "current peak", peak, text[m.start() - 60:m.end() + 60])
    near = peak * 1.5
    prod = b.summary["production"]["data"]["targets"]["near_term"]
    assert prod["rps"] == pytest.approx(near, rel=1e-9), (b.name, prod, near)
    traffic = rows_labelled(rows, "Near-term planning load")
    assert traffic, b.name
    for r in traffic:
        m = re.match(NUM + " req/s", r[1])
        assert m and shown_as(near, m.group(1)), (b.name, r, near)
    econ = (b.summary["ops"].get("data") or {}).get("economics") or {}
    staged = econ.get("staged") or {}
    if staged.get("near_term"):
        assert staged["near_term"]["rps"] == pytest.approx(near, rel=1e-9), (b.name, staged["near_term"], near)
        for r in rows_labelled(rows, "near term"):
            m = re.search(r"for " + NUM + " req/s", r[1])
            assert m and shown_as(near, m.group(1)), (b.name, r, near)
    mid_p = b.summary["production"]["data"]["targets"].get("mid_term") or {}
    if staged.get("mid_term") and mid_p.get("rps") is not None:
        assert staged["mid_term"]["rps"] == pytest.approx(mid_p["rps"], rel=1e-6), (b.name, staged["mid_term"], mid_p)
    head = b.summary["headline"]["text"]
    m = re.search(r"peak of " + NUM + " req/s", head)
    if m:
        assert shown_as(t["rps"], m.group(1)), (b.name, head, t["rps"])


def check_buffer(b: Built, text: str, rows: list[list[str]]) -> None:
    inst = _plan(b)["instances"]
    if inst.get("available") is False:
        return
    total, base, buffer = inst["total"], inst["base"], inst["buffer"]
    assert total == base + buffer, (b.name, inst)
    bp = inst.get("buffer_plan")
    if bp is not None:
        assert bp["instances"] == buffer, (b.name, bp, buffer)
    shown = rows_labelled(rows, "Instances")
    assert shown, b.name
    for r in shown:
        if "buffer" in r[1]:
            assert r[1].startswith(f"{total:,} ({base:,} + {buffer:,} buffer)"), (b.name, r, inst)
    for r in rows_labelled(rows, "Buffer"):
        m = re.match(r"(elastic|fixed), " + NUM + r" instance", r[1])
        assert m and _f(m.group(2)) == buffer, (b.name, r, buffer)
    for m in re.finditer(r"(\d[\d,]*) instances \((\d[\d,]*) \+ (\d[\d,]*) buffer\)", text):
        assert (_f(m.group(1)), _f(m.group(2)), _f(m.group(3))) == (total, base, buffer), (b.name, m.group(0))


def _plan_steps(b: Built) -> tuple[list[dict], list[dict]]:
    """The raw limits JSON's steps of the plan's main mix (the largest production share) and the SLA."""
    per_mix = _fos(b)["per_mix"]
    main = max(per_mix, key=lambda m: m["share"] or 0)["mix"]
    mixes = [m for m in b.limits["mixes"] if m["mix"]["name"] == main and (not b.run or m["run_id"] == b.run)]
    assert len(mixes) == 1, (b.name, main, b.run)
    return mixes[0]["steps"], b.limits["sla"]


def check_lowest_load(b: Built, text: str, rows: list[list[str]]) -> None:
    steps, _ = _plan_steps(b)
    loads = [s["offered_load"] for s in steps if s["offered_load"] is not None and math.isfinite(s["offered_load"])]
    if not loads:
        return
    lowest = min(loads)
    for m in re.finditer(r"at the lowest tested load " + NUM, text):
        assert _f(m.group(1)) == pytest.approx(lowest), (b.name, m.group(0), lowest)
    for m in re.finditer(r"at the lowest judged load " + NUM + r"[^(]*\(the test started at " + NUM, text):
        assert _f(m.group(2)) == pytest.approx(lowest) and _f(m.group(1)) > lowest, (b.name, m.group(0), lowest)


_OPS = {"<": float.__lt__, "<=": float.__le__, ">": float.__gt__, ">=": float.__ge__}


def check_safe_concurrency(b: Built, text: str, rows: list[list[str]]) -> None:
    inst = _plan(b)["instances"]
    keys = _walk_keys(b.summary, set())
    assert "sla_p99_ms" not in keys, b.name
    if inst.get("available") is False or inst.get("safe_concurrency") is None:
        assert not rows_labelled(rows, "Max safe concurrency"), b.name
        return
    sc = inst["safe_concurrency"]
    steps, sla = _plan_steps(b)
    latency = next(c for c in sla if c["kind"] == "percentile" and str(c["metric"]).endswith("_ms"))
    assert sc["sla_stat"] == latency["stat"].upper() and sc["sla_threshold_ms"] == latency["threshold"], (b.name, sc)
    shown = rows_labelled(rows, "Max safe concurrency")
    if sc["value"] is None:
        assert not shown, (b.name, shown)
        return
    assert len(shown) == 1 and shown_as(sc["value"], shown[0][1]), (b.name, shown, sc)
    # independently, on the raw limits JSON: the step at that concurrency meets every clause it reports
    at = [s for s in steps if s.get("concurrency_mean") is not None
          and math.isclose(s["concurrency_mean"], sc["value"], rel_tol=1e-9)]
    if not at:  # a concurrency axis: the offered load is the concurrency
        at = [s for s in steps if s["offered_load"] is not None and math.isclose(s["offered_load"], sc["value"])]
    assert at, (b.name, sc["value"])
    for c in sla:
        v = at[0]["observed"].get(c["text"])
        if c["kind"] == "error_rate" and v is None:
            v = at[0].get("error_rate")
        if v is not None and c["threshold"] is not None and c["op"] in _OPS:
            assert _OPS[c["op"]](float(v), float(c["threshold"])), (b.name, c["text"], v, sc)
    for m in re.finditer(r"max safe concurrency " + NUM, text):
        assert shown_as(sc["value"], m.group(1)), (b.name, m.group(0), sc["value"])


CHECKS = (check_current_peak_and_near_term, check_buffer, check_lowest_load, check_safe_concurrency)


@pytest.mark.parametrize("cell", IDS)
def test_each_concept_has_one_value_everywhere(builder, cell):
    b = builder.get(cell)
    text, rows = parse(b.html)
    for check in CHECKS:
        check(b, text, rows)


def test_the_added_pair_differs_sharply_in_lengths(builder):
    """The added pair's point: the test's prompts are far shorter than production's (raw files, no bearing code)."""
    import polars as pl

    moon = pl.read_ndjson(builder.shared / "traces" / MOONCAKE)
    prod_median = float(moon["input_length"].median())
    tested = []
    for f in sorted(DEMO_LOADTEST.glob("*sharegpt*.csv")):
        tested += pl.read_csv(f)["prompt_tokens"].to_list()
    assert tested, "the bundled sweep's ShareGPT CSVs"
    test_median = float(pl.Series(tested).median())
    assert prod_median > 5 * test_median, (prod_median, test_median)


def test_parser_reads_rows_and_skips_raw_json():
    html = ("<p>At the P99 <b>peak</b> of 8.24 req/s</p><script>var x='current peak: the max'</script>"
            "<details class=\"raw\"><summary>json</summary><pre>sla_p99_ms</pre><details>inner</details>after</details>"
            "<table><tr><th>Instances</th><td class=\"v\">13 (12 + 1 buffer)</td>"
            "<td class=\"note\">n</td></tr></table>")
    text, rows = parse(html)
    assert "peak of 8.24 req/s" in " ".join(text.split())
    assert "current peak" not in text and "sla_p99_ms" not in text and "after" not in text
    assert rows == [["Instances", "13 (12 + 1 buffer)", "n"]]
    assert shown_as(12.365, "12.37") and shown_as(12.365, "12.365") and not shown_as(12.55, "12.37")
