"""``fit_limits`` on a Parquet dataset: the embedded engine and a Dask LocalCluster give the same limits.

A SYNTHETIC stepped test (two runs of an M/M/1 queue, mu = 1000/s, 6 steps of 105 s each,
~1.04M requests) is written as hive-partitioned Parquet (``run_id=``/``step=`` folders).
Per-step counts must be equal, percentiles within 1e-9 relative, and Q_ult (value, CI,
bracket, statement) identical; a run's limits also equal ``fit_limits`` on that run's
requests in memory, and one step's P99 TTFT equals numpy's on the steady window.
"""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from bearing_lib.common.errors import InsufficientDataError, ParameterError
from bearing_lib.data.engine import Engine
from bearing_lib.data.mixes import Mix, MixSpec
from bearing_lib.data.trace import RequestTrace, conform
from bearing_lib.limits.fit import fit_limits, fit_limits_dataset
from tests.factories import leaves, provenance
from tests.limits.synth import mm1_frame

pytest.importorskip("distributed")

RATES = [500.0, 650.0, 800.0, 900.0, 1000.0, 1100.0]
SLA = ["p99(ttft) <= 15ms", "error_rate <= 1%"]
SPEC = MixSpec((Mix("short", {"input_tokens": (0, 1024)}), Mix("long", {"input_tokens": (1024, float("inf"))})))


def _run(run: str, seed: int, step_s: float = 105.0) -> pl.DataFrame:
    f = mm1_frame(RATES, mu_rps=1000.0, step_s=step_s, seed=seed, run_id=run, mix_weights={"chat": 0.6, "rag": 0.4},
                  error_prob=0.002)
    return conform(f)


def _write(f: pl.DataFrame, path, by: list[str]) -> None:
    f.drop([c for c in f.columns if f[c].null_count() == f.height]).write_parquet(path, partition_by=by)


def _trace(f: pl.DataFrame) -> RequestTrace:
    return RequestTrace(f, provenance("mem", time_origin="relative"))


def _assert_same(a: dict, b: dict) -> None:
    """Same leaves; floats within 1e-9 relative (sums over partitions may differ in the last ulp), the
    Q_ult figures (value, CI, bracket, statement) identical."""
    la, lb = dict(leaves(_without_engine(a))), dict(leaves(_without_engine(b)))
    assert la.keys() == lb.keys()
    for k, x in la.items():
        y = lb[k]
        exact = ".q_ult." in k and any(f".q_ult.{f}" in k for f in ("value", "ci95", "bracket", "statement"))
        if isinstance(x, float) and isinstance(y, float) and not exact:
            assert y == pytest.approx(x, rel=1e-9, abs=0.0, nan_ok=True), k
        else:
            assert x == y, k


def _without_engine(doc: dict) -> dict:
    doc = json.loads(json.dumps(doc))
    doc["conditions"]["extra"].pop("engine")
    doc["notes"] = [n for n in doc["notes"] if not n.startswith("fitted one run per task")]
    doc.pop("bearing_version")
    return doc


Q_KEYS = ("value", "ci95", "bracket", "censored", "statement", "bootstrap_ci95")
_STUB = {"conditions": {"extra": {"engine": None}}, "notes": [], "bearing_version": ""}


@pytest.fixture(scope="module")
def cluster():
    with Engine("dask", n_workers=2, progress=False) as eng:
        yield eng


@pytest.mark.slow
def test_limits_on_dask_equal_embedded_and_in_memory(tmp_path, cluster) -> None:
    fa, fb = _run("run-a", 1), _run("run-b", 2)
    f = pl.concat([fa, fb])
    assert f.height >= 1_000_000
    ds = tmp_path / "lt"
    _write(f, ds, ["run_id", "step"])
    emb = fit_limits(ds, SLA, mixes=SPEC, n_boot=200, engine="embedded")
    got = fit_limits_dataset(ds, SLA, mixes=SPEC, n_boot=200, engine=cluster)
    where = got.conditions.extra["engine"]
    assert where.engine == "dask" and where.workers == 2 and where.partitions == 12
    assert emb.conditions.extra["engine"].engine == "embedded"
    # the load curves: counts exact, floats 1e-9 relative
    a, b = emb.curve, got.curve
    assert a.columns == b.columns and a.height == b.height == 2 * 6 * 2
    for col in a.columns:
        if a[col].dtype == pl.Float64:
            assert np.allclose(a[col].to_numpy(), b[col].to_numpy(), rtol=1e-9, atol=0, equal_nan=True), col
        else:
            assert a[col].to_list() == b[col].to_list(), col
    # the limits JSON: identical (Q_ult value, CI, bracket, statement, every step) but for where it ran
    _assert_same(emb.to_dict(), got.to_dict())
    qs = {(m.run_id, m.mix.name): m.q_ult for m in got.limits}
    assert {k for k in qs} == {(r, m) for r in ("run-a", "run-b") for m in ("short", "long")}
    assert all(800 <= q.value <= 1000 and q.ci95[0] <= q.value <= q.ci95[1] for q in qs.values())  # the queue fills
    # one run of the dataset = fit_limits on that run's requests in memory (same seed, same generator)
    mem = fit_limits(_trace(fa), SLA, mixes=SPEC, n_boot=200)
    for m in mem.limits:
        d = next(x for x in got.limits if (x.run_id, x.mix.name) == (m.run_id, m.mix.name))
        _assert_same({"m": d.to_dict(), **_STUB}, {"m": m.to_dict(), **_STUB})
    # independent: P99 TTFT of run-b step 3, mix short, by numpy on the steady window (trim rule by hand)
    s = fb.filter(pl.col("step") == 3)
    start = s["start_s"].to_numpy()
    d = start.max() - start.min()
    trim = min(max(0.1 * d, 2 * s["latency_ms"].mean() / 1000), 0.25 * d)
    sel = (start >= start.min() + trim) & (start <= start.max() - trim) & (s["input_tokens"].to_numpy() < 1024)
    ok = sel & (s["status"].to_numpy() == "ok")
    row = b.filter((pl.col("run_id") == "run-b") & (pl.col("step") == 3) & (pl.col("mix") == "short")).row(
        0, named=True)
    assert row["n_requests"] == int(sel.sum())
    assert row["ttft_ms_p99"] == pytest.approx(float(np.quantile(s["ttft_ms"].to_numpy()[ok], 0.99)), rel=1e-12)


@pytest.mark.slow
def test_limits_of_files_mixing_runs_are_shuffled_by_run(tmp_path, cluster) -> None:
    """Each file holds rows of both runs: Dask shuffles by run_id, embedded reads all at once; same limits."""
    f = pl.concat([_run("run-a", 3, 40.0), _run("run-b", 4, 40.0)]).sort("start_s")
    f = f.with_columns((pl.int_range(pl.len()) % 3).alias("shard"))
    ds = tmp_path / "mixed"
    _write(f, ds, ["shard"])
    emb = fit_limits(ds, SLA, mixes="none", n_boot=50, engine="embedded")
    got = fit_limits_dataset(ds, SLA, mixes="none", n_boot=50, engine=cluster)
    _assert_same(emb.to_dict(), got.to_dict())
    assert got.curve["n_requests"].to_list() == emb.curve["n_requests"].to_list()
    assert sorted(m.run_id for m in got.limits) == ["run-a", "run-b"]


def test_limits_dataset_auto_mixes_and_errors(tmp_path) -> None:
    f = _run("run-a", 5, 40.0)
    ds = tmp_path / "one"
    _write(f, ds, ["step"])
    got = fit_limits(ds, SLA, mixes="auto", n_boot=20)  # a path implies the embedded engine
    mem = fit_limits(_trace(f), SLA, mixes="auto", n_boot=20)
    assert [m.mix.name for m in got.limits] == [m.mix.name for m in mem.limits]
    assert [m.to_dict()["q_ult"] for m in got.limits] == [m.to_dict()["q_ult"] for m in mem.limits]
    assert got.conditions.mixes == "auto" and got.conditions.sources[0].format == "parquet-dataset"
    with pytest.raises(ParameterError, match="pool_runs"):
        fit_limits(ds, SLA, engine="embedded", pool_runs=True)
    with pytest.raises(ParameterError, match="Parquet dataset"):
        fit_limits(_trace(f), SLA, engine="dask")
    prod = tmp_path / "prod.parquet"
    f.drop("step", "offered_load", "offered_load_unit").drop(
        [c for c in f.columns if f[c].null_count() == f.height]).write_parquet(prod)
    with pytest.raises(InsufficientDataError, match="no load steps"):
        fit_limits(prod, SLA)


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    f = _run("run-a", 6, 40.0)
    ds = tmp_path_factory.mktemp("small") / "lt"
    _write(f, ds, ["step"])
    return f, ds


def test_cli_limits_engine_embedded(small, tmp_path) -> None:
    from typer.testing import CliRunner

    from bearing_lib.cli.main import app

    f, ds = small
    out = tmp_path / "l.json"
    res = CliRunner().invoke(app, ["limits", str(ds), "--engine", "embedded", "--sla", SLA[0], "--sla", SLA[1],
                                   "--mixes", "none", "--n-boot", "30", "--json", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert doc["conditions"]["extra"]["engine"]["engine"] == "embedded"
    assert doc["conditions"]["extra"]["engine"]["partitions"] == len(RATES)
    mem = fit_limits(_trace(f), SLA, mixes="none", n_boot=30)
    q, ref = doc["mixes"][0]["q_ult"], mem.to_dict()["mixes"][0]["q_ult"]
    assert [q[k] for k in Q_KEYS] == [json.loads(json.dumps(ref[k])) for k in Q_KEYS]
    bad = CliRunner().invoke(app, ["limits", str(ds), "--scheduler", "tcp://x:1", "--sla", SLA[0], "--json",
                                   str(out)])
    assert bad.exit_code == 1 and "--engine dask" in bad.output
    bad = CliRunner().invoke(app, ["limits", str(ds), str(ds), "--engine", "embedded", "--sla", SLA[0], "--json",
                                   str(out)])
    assert bad.exit_code == 1 and "one Parquet dataset" in bad.output


@pytest.mark.slow
def test_cli_limits_on_an_existing_scheduler(small, cluster, tmp_path) -> None:
    from typer.testing import CliRunner

    from bearing_lib.cli.main import app

    f, ds = small
    # the module's cluster may have lost a worker to a heartbeat timeout on a loaded machine (seen once: 0 workers
    # recorded while another job ran); the engine's record of its workers is what is tested, so wait for both
    cluster.client.wait_for_workers(2, timeout=120)
    address = cluster.client.scheduler.address
    out = tmp_path / "l.json"
    res = CliRunner().invoke(app, ["limits", str(ds), "--engine", "dask", "--scheduler", address, "--sla", SLA[0],
                                   "--mixes", "none", "--n-boot", "30", "--json", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    where = doc["conditions"]["extra"]["engine"]
    assert where["engine"] == "dask" and where["scheduler"] == address and where["workers"] == 2
    mem = fit_limits(_trace(f), SLA[:1], mixes="none", n_boot=30)
    q, ref = doc["mixes"][0]["q_ult"], mem.to_dict()["mixes"][0]["q_ult"]
    assert [q[k] for k in Q_KEYS] == [json.loads(json.dumps(ref[k])) for k in Q_KEYS]


def test_limits_notebook_passes_the_engine(small, tmp_path) -> None:
    """limits.ipynb declares engine/scheduler and, with engine=embedded, fits the dataset on the engine."""
    from bearing_lib.app import runner

    declared = runner.notebook_parameters(runner.NOTEBOOK_DIR / "limits.ipynb")
    assert {"engine", "scheduler"} <= set(declared)
    import papermill

    f, ds = small
    out_json = tmp_path / "limits.json"
    papermill.execute_notebook(str(runner.NOTEBOOK_DIR / "limits.ipynb"), str(tmp_path / "out.ipynb"),
                               parameters={"loadtest": str(ds), "sla": SLA[0], "mixes": "none", "n_boot": 30,
                                           "engine": "embedded", "output_json": str(out_json)},
                               progress_bar=False, kernel_name="python3", cwd=str(tmp_path))
    doc = json.loads(out_json.read_text())
    assert doc["conditions"]["extra"]["engine"]["engine"] == "embedded"
    mem = fit_limits(_trace(f), SLA[:1], mixes="none", n_boot=30)
    assert doc["mixes"][0]["q_ult"]["value"] == mem.limits[0].q_ult.value


@pytest.fixture(scope="module")
def mm1_one_mix(tmp_path_factory):
    """One run of a pure M/M/1 queue (mu = 1000/s, 6 × 40 s steps): ``p99(ttft) <= 15ms`` is a sojourn P99 of
    75 ms, whose steady-state limit is ``mu + ln(0.01) / 0.075`` = 938.6 rps (``synth.mm1_limit``)."""
    f = conform(mm1_frame(RATES, mu_rps=1000.0, step_s=40.0, seed=11, run_id="run-a", error_prob=0.002))
    ds = tmp_path_factory.mktemp("mm1") / "lt"
    _write(f, ds, ["step"])
    return f, ds


def test_model_on_an_engine_equals_the_model_in_memory(mm1_one_mix, tmp_path) -> None:
    """``estimator="model"`` on a Parquet dataset: the embedded engine's task fits the run in memory (the same
    limit to the last digit), the statistics path reads each step's counts exactly and its design effects from the
    per-block histogram counts (within 1e-4 relative here), and both cover the closed-form truth."""
    from typer.testing import CliRunner

    from bearing_lib.cli.main import app
    from tests.limits.synth import mm1_limit

    f, ds = mm1_one_mix
    truth = mm1_limit(1000.0, 0.99, 75.0)
    assert truth == pytest.approx(938.598, abs=1e-3)
    mem = fit_limits(_trace(f), SLA, mixes="none", n_boot=100, estimator="model")
    emb = fit_limits(ds, SLA, mixes="none", n_boot=100, estimator="model")
    stats = fit_limits_dataset(ds, SLA, mixes="none", n_boot=100, estimator="model", stats=True)
    pooled = fit_limits(ds, SLA, mixes="none", n_boot=100, estimator="pooled")
    assert [r.conditions.estimator for r in (mem, emb, stats, pooled)] == ["model", "model", "model", "pooled"]
    q = mem.limits[0].q_ult
    assert q.estimator.startswith("exceedance model") and "credible interval" in q.interval_method
    assert q.ci95[0] < truth < q.ci95[1] and q.bracket == (900.0, 1000.0)
    # the pooled estimator's interval is the step grid here, the model's its own posterior, narrower
    assert pooled.limits[0].q_ult.ci95 == (800.0, 1000.0) and q.ci95[1] - q.ci95[0] < 0.7 * 200.0
    assert [m.to_dict()["q_ult"] for m in emb.limits] == [m.to_dict()["q_ult"] for m in mem.limits]
    s = stats.limits[0].q_ult
    assert s.bracket == q.bracket and s.estimator == q.estimator
    assert s.value == pytest.approx(q.value, rel=1e-4)
    assert s.ci95 == pytest.approx(q.ci95, rel=1e-4)
    out = tmp_path / "l.json"
    res = CliRunner().invoke(app, ["limits", str(ds), "--engine", "embedded", "--estimator", "model", "--sla", SLA[0],
                                   "--sla", SLA[1], "--mixes", "none", "--n-boot", "100", "--json", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert doc["conditions"]["estimator"] == "model"
    assert doc["mixes"][0]["q_ult"]["value"] == q.value
    with pytest.raises(ParameterError, match="estimator must be"):
        fit_limits_dataset(ds, SLA, mixes="none", n_boot=0, estimator="isotonic")


@pytest.mark.slow
def test_model_on_dask_equals_embedded(mm1_one_mix, cluster) -> None:
    """The model's limit of a dataset is the same on a Dask LocalCluster as on the embedded engine, whole runs per
    task and from per-step statistics."""
    _, ds = mm1_one_mix
    for stats in (False, True):
        emb = fit_limits_dataset(ds, SLA, mixes="none", n_boot=100, estimator="model", stats=stats)
        got = fit_limits_dataset(ds, SLA, mixes="none", n_boot=100, estimator="model", stats=stats, engine=cluster)
        assert got.conditions.extra["engine"].engine == "dask" and got.conditions.estimator == "model"
        assert [m.to_dict()["q_ult"] for m in got.limits] == [m.to_dict()["q_ult"] for m in emb.limits], stats
