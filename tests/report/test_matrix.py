"""The proof matrix: ``bearing report`` on real users' files, every LLM load-test tool against every
production trace, plus the HTTP tools against one trace.

The real files are read in place from ``$BEARING_SHARED_DATA`` (``loadtests/`` and ``traces/``; each
folder's README gives provenance and traps). Work is shared across cells: ``bearing limits`` runs once
per load test (its JSON is fed to every report of that load test with ``-p limits_json``), and each
cell is one ``bearing report`` subprocess (the notebooks, as a user runs them), all through the
session's shared runs (``bearing_runs``, tests/conftest.py; test_consistency.py reads the same reports).
The k6 cell fits the limits inside the report run (``-p loadtest``) because its file is a documented
refusal (no load steps), and the matrix asserts the refusal's message.

Every report written is opened in headless Chromium (the helpers of ``test_browser.py``): no console
error or warning, every chart drawn, no dead internal link; its visible text (the raw-JSON blocks
for analysts excepted) holds no "None"/"nan"/"undefined"/"1 instances", no internal key or template
leftover, no epoch date on a relative clock; and each censored limit keeps its sign (≥ or <) in the
limits table, the headline, the FOS table and "what changed".

Budget (the CI allows <= 15 min for it): 27 notebook runs of ~8 s each on a quiet machine plus ~2.5 s
per report in the browser; measured 11.7 min on the shared 2-core machine at load ~3.5 (17 min at
load ~11)."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import ENV
from tests.report.test_browser import ARGS, CHROMIUM, _need, open_offline, readability_problems

pytestmark = [pytest.mark.slow, pytest.mark.shared_data, pytest.mark.browser]

LLM_SLA = "p95(ttft) <= 1s and error_rate <= 1%"
HTTP_SLA = "p95(latency) <= 2s and error_rate <= 5%"


@dataclass(frozen=True)
class LoadTest:
    path: str  # under $BEARING_SHARED_DATA/loadtests/
    sla: str  # an SLA the tool's files can be judged on (an aggregate file has only some percentiles)
    run: str = ""  # the run the plan uses when the limits hold several
    refusal: str = ""  # a documented refusal (exit 1): a fragment of its message


# One representative real file or folder per tool (see each tool's section of loadtests/README.md).
LLM_TESTS: dict[str, LoadTest] = {
    "vllm": LoadTest("vllm-bench-serve/surajssd-llm-k8s-azure-a100/llama-3.3-70b/01_tp8_pp1", LLM_SLA),
    # SGLang's JSONL reports medians only and no error counts
    "sglang": LoadTest("sglang-bench-serving/datacrunch-h200-benchmarks/llama_3_3_70b_online_output.jsonl",
                       "p50(ttft) <= 200ms", run="llama_3_3_70b_online_output/sharegpt"),
    "llmperf": LoadTest("llmperf/yi-34b-4xa10g-vllm-concurrency-sweep-TRANSCRIBED", LLM_SLA),
    "genai-perf": LoadTest("genai-perf/wellflat-k8s-dev/v_2025-09-30_e17e8f5_with_telemetry", LLM_SLA),
    # the AIPerf sweep aggregate has no error counts
    "aiperf": LoadTest("aiperf/akamaslabs-g7-4500-concurrency-sweep-TRANSCRIBED/sweep_aggregate", "p99(ttft) <= 2s"),
    # the guidellm sweep table has medians (its p99 columns are "-")
    "guidellm": LoadTest("guidellm/nirjhar17-pd-disaggregation-DERIVED/all-benchmarks.csv", "p50(ttft) <= 100ms",
                         run="sweep"),
    "inference-perf": LoadTest("inference-perf/k8s-sigs-kubecon-na-2025/vllm", LLM_SLA),
    "lmbenchmark": LoadTest("lmbenchmark/llm-d-benchmark-exp2/llm-d-70b-2replicas", LLM_SLA,
                            run="llm-d-70b-2replicas/sharegpt"),
}
HTTP_TESTS: dict[str, LoadTest] = {
    # k6 `--out json` of one constant-VU run: no load steps, so no load curve (docs/bad-input.md)
    "k6": LoadTest("k6/mn1809-k6-lms-api/ndjson_out/output.json", HTTP_SLA,
                   refusal="the trace has no load steps (column 'step' is empty): a load curve needs a stepped "
                           "load test, not production traffic"),
    "locust": LoadTest("locust/frankmwito-perf-testing-demo", "p95(latency) <= 5s and error_rate <= 5%",
                       run="frankmwito-perf-testing-demo/reports"),
    "jmeter": LoadTest("jmeter/kuprich-jtl-viewer-fakestore/fakestore_v2.jtl", HTTP_SLA),
    "vegeta": LoadTest("vegeta/ferdinandzhong-tgi-trial/bloomz-7b/original", HTTP_SLA),
}
TRACES: dict[str, str] = {  # under $BEARING_SHARED_DATA/traces/
    "azure": "azure-llm-inference-2023/AzureLLMInferenceTrace_conv.csv",
    "mooncake": "mooncake-fast25/conversation_trace.jsonl",
    "servegen": "servegen-aggregates/language/m-large",
}
RELATIVE = {"mooncake", "servegen"}
CELLS = [(lt, tr) for lt in LLM_TESTS for tr in TRACES] + [(lt, "azure") for lt in HTTP_TESTS]
ALL_TESTS = {**LLM_TESTS, **HTTP_TESTS}

# visible words that must never reach a reader (whole words; raw-JSON blocks excepted)
FORBIDDEN_WORDS = ["None", "nan", "NaN", "undefined", "null", "inf"]
FORBIDDEN_TEXT = ["q_ult_rps", "ci95", "bootstrap_ci95", "mix_throughput_rps", "throughput_rps",
                  "{{", "}}", "{%", "%}", "Infinity"]
EPOCH_TEXT = ["01-01 00:00", "1970"]


@dataclass
class Cell:
    loadtest: str
    trace: str
    rc: int
    out: str
    err: str
    directory: Path | None = None
    summary: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.loadtest}-{self.trace}"


@pytest.fixture(scope="module")
def matrix(bearing_runs) -> dict[tuple[str, str], Cell]:
    base = os.environ.get(ENV)
    if not base:
        pytest.skip(f"{ENV} is not set: real files read in place are not available")
    return build_matrix(bearing_runs, Path(base))


def build_matrix(runs, root: Path) -> dict[tuple[str, str], Cell]:
    """Every cell's report, through the session's shared runs (``bearing_runs`` in tests/conftest.py: a command
    line already run in this session, e.g. by test_consistency.py, is not run again)."""
    for rel in [f"loadtests/{t.path}" for t in ALL_TESTS.values()] + [f"traces/{p}" for p in TRACES.values()]:
        if not (root / rel).exists():
            pytest.fail(f"{ENV}={root} is set but {rel} is missing there")
    work = runs.work / "matrix"
    work.mkdir(exist_ok=True)
    # three stages, each run two bearing processes at a time (BearingRuns.run_all): the limits, then the reports on
    # the Azure trace, then the others (each reads its load test's Azure report as "what changed"'s previous one)
    limits = {key: work / f"limits-{key}.json" for key, lt in ALL_TESTS.items() if not lt.refusal}
    done = runs.run_all([("limits", str(root / "loadtests" / ALL_TESTS[key].path), "--sla", ALL_TESTS[key].sla,
                          "--n-boot", "200", "--json", str(out)) for key, out in limits.items()])
    for key, r in zip(limits, done, strict=True):
        assert r.returncode == 0, (key, r.stdout[-2000:], r.stderr[-2000:])
    cells: dict[tuple[str, str], Cell] = {}
    reports = work / "reports"

    def command(lt_key: str, tr_key: str) -> tuple[str, ...]:
        lt = ALL_TESTS[lt_key]
        args = ["report", "--name", f"{lt_key}-{tr_key}", "--reports-dir", str(reports),
                "-p", "production_trace", str(root / "traces" / TRACES[tr_key]), "-p", "n_boot", "200"]
        if lt.refusal:
            args += ["-p", "loadtest", str(root / "loadtests" / lt.path), "-p", "sla", lt.sla]
        else:
            args += ["-p", "limits_json", str(limits[lt_key])]
        if lt.run:
            args += ["-p", "run", lt.run]
        if tr_key != "azure" and (lt_key, "azure") in cells and cells[(lt_key, "azure")].directory is not None:
            # "what changed" against the same load test's report on another trace
            args += ["-p", "previous_summary", str(cells[(lt_key, "azure")].directory / "summary.json")]
        return tuple(args)

    for stage in ([c for c in CELLS if c[1] == "azure"], [c for c in CELLS if c[1] != "azure"]):
        for (lt_key, tr_key), r in zip(stage, runs.run_all([command(*c) for c in stage]), strict=True):
            cell = Cell(lt_key, tr_key, r.returncode, r.stdout, r.stderr)
            if r.returncode == 0:
                cell.directory = reports / f"{lt_key}-{tr_key}"
                cell.summary = json.loads((cell.directory / "summary.json").read_text())
            cells[(lt_key, tr_key)] = cell
    return {c: cells[c] for c in CELLS}
    return cells


@pytest.fixture(scope="module")
def browser():
    _need(CHROMIUM.exists(), "Chromium (/usr/bin/chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:  # pragma: no cover
        _need(False, "the playwright Python package")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield b
        b.close()


def _ids(cells: list[tuple[str, str]]) -> list[str]:
    return [f"{a}-{b}" for a, b in cells]


@pytest.mark.parametrize("key", CELLS, ids=_ids(CELLS))
def test_cell_ends_with_a_documented_exit(matrix, key):
    """Exit 0 with the report's path, or the documented refusal (exit 1) with its clear message."""
    cell = matrix[key]
    lt = ALL_TESTS[cell.loadtest]
    if lt.refusal:
        assert cell.rc == 1, (cell.rc, cell.err[-2000:])
        assert "Traceback" not in cell.err + cell.out
        assert lt.refusal in cell.err, cell.err[-2000:]
        assert str(Path(os.environ[ENV]) / "loadtests" / lt.path) in cell.err  # names the file
        return
    assert cell.rc == 0, (cell.rc, cell.out[-2000:], cell.err[-3000:])
    assert cell.directory is not None and (cell.directory / "report.html").is_file()
    assert cell.summary["verdict"] in ("green", "yellow", "red")


def _sign(bound: str | None) -> str:
    return {"lower": "≥", "upper": "<"}.get(bound or "", "")


_VISIBLE_TEXT = """() => {
  const c = document.body.cloneNode(true);
  c.querySelectorAll('script, style, pre, details.raw').forEach(e => e.remove());
  return c.innerText;
}"""


_TABLE_ROWS = """(sel) => {
  const out = [];
  document.querySelectorAll(sel).forEach(t => {
    const hs = [...t.querySelectorAll('thead th')].map(x => x.innerText.trim());
    t.querySelectorAll('tbody tr').forEach(tr => {
      const cells = [...tr.children].map(td => td.innerText.trim());
      const row = {};
      hs.forEach((h, i) => { if (i < cells.length) row[h] = cells[i]; });
      out.push(row);
    });
  });
  return out;
}"""


REPORTS = [c for c in CELLS if not ALL_TESTS[c[0]].refusal]


@pytest.mark.parametrize("key", REPORTS, ids=_ids(REPORTS))
def test_report_opens_draws_and_reads_honestly(matrix, browser, key):
    cell = matrix[key]
    if cell.directory is None:
        pytest.fail(f"{cell.name}: no report was written (exit {cell.rc}): {cell.err[-1500:]}")
    page, problems, requests = open_offline(browser, cell.directory / "report.html")
    try:
        charts = page.locator("div.chart")
        n = charts.count()
        assert n >= 2, f"{cell.name}: only {n} charts"
        page.wait_for_function(f"document.querySelectorAll('div.chart svg, div.chart canvas').length >= {n}",
                               timeout=30_000)
        for i in range(n):
            chart = charts.nth(i)
            cid = chart.get_attribute("id")
            assert chart.locator("svg, canvas").count() >= 1, (cell.name, cid)
            marks = chart.locator("svg .mark-line path, svg .mark-rect path, svg .mark-symbol path, "
                                  "svg .mark-area path, svg .mark-rule line")
            assert marks.count() >= 1, f"{cell.name}: chart {cid} has no mark"
            if cell.trace in RELATIVE:
                ticks = page.eval_on_selector_all(f"#{cid} svg .role-axis-label text",
                                                  "els => els.map(e => e.textContent)")
                assert not any(t in x for x in ticks for t in EPOCH_TEXT), (cell.name, cid, ticks)
        # every internal link lands on an element
        hrefs = page.eval_on_selector_all("a[href^='#']", "els => els.map(e => e.getAttribute('href'))")
        dead = [h for h in hrefs if len(h) > 1 and page.locator(f"[id='{h[1:]}']").count() == 0]
        assert dead == [], f"{cell.name}: dead internal links {dead}"
        # readable at a glance (#25 item 7): card-wide charts, no overlapping axis labels, no internal key,
        # the tier band on the FOS chart
        page.set_viewport_size({"width": 1400, "height": 1000})
        unreadable = readability_problems(page, cell.summary)
        assert unreadable == [], f"{cell.name}: {unreadable}"
        text = page.evaluate(_VISIBLE_TEXT)
        tables = {"mixes": page.evaluate(_TABLE_ROWS, "#mixes table.grid"),
                  "fos": page.evaluate(_TABLE_ROWS, "#fos table.grid")}
        assert requests == [], f"{cell.name}: network requests {requests}"
        assert problems == [], f"{cell.name}: {problems}"
    finally:
        page.close()
    _check_text(cell, text)
    _check_signs(cell, text, tables)


def _check_text(cell: Cell, text: str) -> None:
    words = [w for w in FORBIDDEN_WORDS if re.search(rf"(?<![\w.-]){re.escape(w)}(?![\w-])", text)]
    bits = [t for t in FORBIDDEN_TEXT if t in text]
    bits += re.findall(r"(?<![\d,.])1 instances", text)
    leftovers = re.findall(r"\{[A-Za-z_][\w.]*\}", text)
    bad = words + bits + leftovers
    if cell.trace in RELATIVE:
        bad += re.findall(r"01-01 00:00|(?<!\d)1970(?!\d)", text)
    if cell.trace == "servegen":
        bad += re.findall(r"per-minute peak(?!s are higher)|of the per-minute rate|per-minute P99", text)
    ctx = {b: text[max(0, text.find(b) - 80): text.find(b) + 80] for b in bad}
    assert not bad, f"{cell.name}: report text holds {bad}: {ctx}"


def _section(text: str, start: str, ends: list[str]) -> str:
    i = text.find(start)
    if i < 0:
        return ""
    j = min([k for k in (text.find(e, i + len(start)) for e in ends) if k > 0] or [len(text)])
    return text[i:j]


def _cell(rows: list[dict], name: str, header_start: str) -> list[str]:
    """The cells under the header starting with ``header_start`` of the rows whose first cell names ``name``
    (the limits table labels a mix "<run> · <mix>" when the limits hold several runs)."""
    out = []
    for r in rows:
        first = next(iter(r.values()), "").split("\n")[0].strip()
        if first == name:
            out += [v for h, v in r.items() if h.startswith(header_start)]
    return out


def _check_signs(cell: Cell, text: str, tables: dict[str, list[dict]]) -> None:
    """Each censored limit shows its sign (≥ or <) in the limits table, the headline, the FOS table and
    "what changed"; the headline's basis word (completed / offered) matches the estimate it quotes."""
    rows = (cell.summary.get("mixes", {}).get("data") or {}).get("rows") or []
    head = cell.summary["headline"]
    run = ALL_TESTS[cell.loadtest].run
    for row in rows:
        q, a, fos = row.get("q_ult") or {}, row.get("achieved") or {}, row.get("fos") or {}
        # the plan (FOS table) covers one run and names its mixes without the run
        in_plan = " · " not in row["name"] or row["name"].startswith(f"{run} · ")
        for est, table, header in ((q, "mixes", "Q_ult offered"), (a, "mixes", "completed at Q_ult"),
                                   (a, "fos", "Q_ult completed"), (fos, "fos", "FOS")):
            sign = _sign(est.get("bound"))
            if table == "fos" and not in_plan:
                continue
            if sign and est.get("value") is not None:
                label = row["name"].split(" · ")[-1] if table == "fos" else row["name"]
                cells = _cell(tables[table], label, header)
                assert cells, (cell.name, table, header, row["name"], tables[table][:3])
                assert all(c.startswith(sign) for c in cells), (cell.name, table, header, cells)
        if row["name"] == head.get("binding_mix"):
            m = re.search(r"Q_ult (≥ |< )?[\d.,]+ (?:req/s|concurrency|rps)(?: (completed|offered))?", head["text"])
            if m:
                shown = a if m.group(2) == "completed" else q
                assert (m.group(1) or "").strip() == _sign(shown.get("bound")), (cell.name, head["text"])
        # a FOS quoted in prose carries the sign of the estimate it quotes
        if _sign(fos.get("bound")) and fos.get("value") is not None:
            quoted = f"{row['name']} ({row['share']:.0%} of traffic, FOS "
            for prose in (head.get("verdict_reason") or "", text):
                k = prose.find(quoted)
                if k >= 0:
                    assert prose[k + len(quoted):].startswith(_sign(fos["bound"])), (cell.name, prose[k:k + 80])
    changes = _section(text, "What changed since the previous report", ["Data-quality flags"])
    for row in rows:
        sign = _sign((row.get("q_ult") or {}).get("bound"))
        if sign:
            for ln in changes.splitlines():
                if ln.strip().startswith(row["name"] + " ") and "Q_ult" in ln:
                    assert sign in ln, (cell.name, ln)
