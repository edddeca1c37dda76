"""Progress of ``bearing limits`` (#27): a bar on a terminal only, one tick per file read and per (run, mix)
group fitted or skipped; the expected counts come from the raw files, read with polars alone.

SYNTHETIC stepped tests: two M/M/1 runs (``tests/limits/synth.mm1_frame``), one with three request
kinds and one with a single kind, written as bearing-canonical Parquet files.
"""

from __future__ import annotations

import json

import polars as pl
import pytest
from typer.testing import CliRunner

from bearing_lib.cli.main import app
from bearing_lib.data.trace import conform
from tests.limits.synth import mm1_frame

RATES = [200.0, 400.0, 600.0, 800.0]
SLA = "p99(latency) <= 50ms"
#: three mixes by input length: chat (median 300 tokens), cached (2000), rag (6000)
MIXES = {"mixes": [{"name": "short", "bounds": {"input_tokens": [0, 1000]}},
                   {"name": "middle", "bounds": {"input_tokens": [1000, 4000]}},
                   {"name": "long", "bounds": {"input_tokens": [4000, None]}}]}


class Recorder:
    """Stands in for :class:`bearing_lib.common.progress.Progress`: records what the command says."""

    made: list[Recorder] = []

    def __init__(self, label: str, stream=None) -> None:  # noqa: ANN001 - Progress's signature
        self.label, self.starts, self.steps = label, [], []
        Recorder.made.append(self)

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def start(self, total, what="reading requests"):  # noqa: ANN001, ANN201
        self.starts.append([what, total, 0])

    def advance(self, n):  # noqa: ANN001, ANN201
        self.starts[-1][2] += n

    def step(self, text):  # noqa: ANN001, ANN201
        self.steps.append(text)


@pytest.fixture()
def two_runs(tmp_path):
    a = mm1_frame(RATES, mu_rps=1000.0, step_s=10.0, seed=1, run_id="a",
                  mix_weights={"chat": 0.5, "rag": 0.3, "cached": 0.2})
    b = mm1_frame(RATES, mu_rps=1000.0, step_s=10.0, seed=2, run_id="b")
    paths = []
    for name, f in (("a", a), ("b", b)):
        p = tmp_path / f"{name}.parquet"
        conform(f).write_parquet(p, metadata={"bearing.time_origin": "relative"})
        paths.append(p)
    mixes = tmp_path / "mixes.json"
    mixes.write_text(json.dumps(MIXES))
    return paths, mixes


def _shares_in(path) -> dict[tuple[str, str], float]:  # noqa: ANN001
    """(run, mix) -> the group's share of its run's stepped requests, from the raw file (the mix of a
    request by its input tokens)."""
    f = pl.read_parquet(path, columns=["run_id", "step", "input_tokens"]).filter(pl.col("step").is_not_null())
    tok = pl.col("input_tokens")
    mix = pl.when(tok < 1000).then(pl.lit("short")).when(tok < 4000).then(pl.lit("middle")).otherwise(pl.lit("long"))
    g = f.group_by("run_id", mix.alias("mix")).len()
    g = g.with_columns((pl.col("len") / pl.col("len").sum().over("run_id")).alias("share"))
    return {(r, m): s for r, m, s in g.select("run_id", "mix", "share").iter_rows()}


def test_limits_counts_a_tick_per_file_and_per_group(two_runs, tmp_path, monkeypatch):
    paths, mixes = two_runs
    shares = [_shares_in(p) for p in paths]
    expected = [len(s) for s in shares]
    assert expected[0] == 3  # run a has three kinds of request; run b one (its long tail may reach 'middle')
    min_share = 0.1
    small = sorted(k for s in shares for k, v in s.items() if v < min_share)
    # no share near the threshold, so the steady windows' counts (the fit's basis) cannot put a group across it
    assert all(abs(v - min_share) > 0.03 for s in shares for v in s.values())
    Recorder.made = []
    monkeypatch.setattr("bearing_lib.common.progress.progress_wanted", lambda **kw: True)
    monkeypatch.setattr("bearing_lib.common.progress.Progress", Recorder)
    out = tmp_path / "limits.json"
    res = CliRunner().invoke(app, ["limits", *map(str, paths), "--sla", SLA, "--mixes", str(mixes), "--n-boot", "0",
                                   "--min-share", str(min_share), "--json", str(out)])
    assert res.exit_code == 0, res.output
    (bar,) = Recorder.made
    assert bar.label == "limits"
    reading, *per_file = bar.starts
    assert reading == ["reading the load-test files", 2, 2]
    assert per_file[0::2] == [[f"load curve and bootstrap of {p}", None, 0] for p in paths]  # no count: pulsing
    fitting = per_file[1::2]
    assert [(total, done) for _, total, done in fitting] == [(n, n) for n in expected]
    assert [what for what, _, _ in fitting] == [f"fitting the run x mix groups of {p}" for p in paths]
    doc = json.loads(out.read_text())
    # every tick is a group fitted or skipped (run b's few long-tailed requests in 'middle' are below --min-share)
    assert len(doc["mixes"]) + len(doc["skipped"]) == sum(expected)
    assert small == [("b", "middle")]
    assert sorted((s["run_id"], s["mix"]) for s in doc["skipped"]) == small


def test_limits_shows_no_bar_off_a_terminal(two_runs, tmp_path, monkeypatch):
    """CliRunner's output is not a TTY (as a pipe, a CI log or a notebook's subprocess): no bar is made."""
    paths, mixes = two_runs
    monkeypatch.delenv("BEARING_NO_PROGRESS", raising=False)
    Recorder.made = []
    monkeypatch.setattr("bearing_lib.common.progress.Progress", Recorder)
    res = CliRunner().invoke(app, ["limits", str(paths[1]), "--sla", SLA, "--mixes", "none", "--n-boot", "0",
                                   "--json", str(tmp_path / "l.json")])
    assert res.exit_code == 0, res.output
    assert Recorder.made == []
