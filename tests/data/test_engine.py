"""The engines (embedded polars-lazy, Dask LocalCluster) give the in-memory numbers on Parquet datasets.

The equality tests run one LocalCluster (2 worker processes) over hive-partitioned Parquet
datasets of 1.2M synthetic production requests and 1.0M synthetic load-test requests written
to tmp_path; counts must be equal, floats within 1e-9 relative. Some figures are also checked
against numpy computations on the generating arrays (per-minute counts, a step's P95 TTFT).
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from bearing_lib.common.errors import BadValueError, InputError, ParameterError, SchemaError
from bearing_lib.data.engine import Engine, open_dataset
from bearing_lib.data.mixes import Mix, MixSpec
from bearing_lib.data.trace import RequestTrace, conform
from bearing_lib.limits.curves import load_curve
from bearing_lib.limits.dataset import load_curve_dataset
from bearing_lib.loaders import load
from bearing_lib.traffic.dataset import profile_dataset
from bearing_lib.traffic.profile import profile_traffic
from bearing_lib.traffic.seqlen import TokenStats
from tests.factories import leaves, provenance

pytest.importorskip("distributed")

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z
N_PROD = 1_200_000
SPEC = MixSpec((Mix("short", {"input_tokens": (0, 512)}), Mix("long", {"input_tokens": (512, 1e9)})))


def _production(seed: int = 7) -> pl.DataFrame:
    """About 1.2M requests over 12 h with a sinusoidal rate; token counts, statuses, microsecond times."""
    rng = np.random.default_rng(seed)
    span = 12 * 3600.0
    # thinning of a Poisson process with rate 1 + 0.5 sin(2 pi t / 6 h)
    cand = np.sort(rng.uniform(0, span, int(N_PROD * 1.5)))
    keep = rng.uniform(0, 1.5, cand.size) < 1 + 0.5 * np.sin(2 * np.pi * cand / (6 * 3600))
    t = T0 + 17.25 + cand[keep]  # starts 17.25 s after a minute boundary: a partial first minute
    n = t.size
    inp = rng.integers(1, 4000, n)
    out = rng.integers(1, 800, n)
    status = np.where(rng.uniform(size=n) < 0.002, "error", "ok")
    return pl.DataFrame({
        "start_s": np.round(t, 6), "input_tokens": inp, "output_tokens": out,
        "cached_tokens": rng.integers(0, 200, n), "status": status,
    })


def _loadtest(seed: int = 11) -> tuple[pl.DataFrame, dict]:
    """1.0M requests: 2 runs x 5 rps steps of 300 s; TTFT grows with the step."""
    rng = np.random.default_rng(seed)
    frames = []
    truth = {}
    for r, run in enumerate(("run-a", "run-b")):
        for step in range(5):
            n = 100_000
            t0 = T0 + r * 10_000 + step * 310.0
            start = np.sort(rng.uniform(t0, t0 + 300.0, n))
            ttft = rng.lognormal(np.log(80 + 40 * step), 0.5, n)
            outt = rng.integers(10, 400, n)
            lat = ttft + outt * rng.uniform(8, 12, n)
            st = np.where(rng.uniform(size=n) < 0.01, "error", "ok")
            frames.append(pl.DataFrame({
                "run_id": run, "step": step, "offered_load": n / 300.0, "offered_load_unit": "rps",
                "start_s": start, "end_s": start + lat / 1000.0, "ttft_ms": ttft, "latency_ms": lat,
                "input_tokens": rng.integers(1, 2000, n), "output_tokens": outt, "status": st,
            }))
            truth[(run, step)] = (start, ttft, lat, st)
    return pl.concat(frames), truth


def _trace(frame: pl.DataFrame) -> RequestTrace:
    return RequestTrace(conform(frame), provenance("mem", format="test", time_origin="epoch"))


def _assert_same(a: dict, b: dict, paths: tuple[object, object] = ("", "")) -> int:
    """Every leaf of two profile dicts equal (floats within 1e-9 relative); ``source`` aside, and the
    two sources' paths (``paths``) read as one in messages."""
    la, lb = dict(leaves(a)), dict(leaves(b))
    la = {k: v for k, v in la.items() if not k.startswith(".source")}
    lb = {k: v for k, v in lb.items() if not k.startswith(".source")}
    assert la.keys() == lb.keys()
    for k, x in la.items():
        y = lb[k]
        if isinstance(x, float) and isinstance(y, float) and not (math.isnan(x) and math.isnan(y)):
            assert y == pytest.approx(x, rel=1e-9, abs=0.0), k
        elif isinstance(x, str) and paths[0]:
            assert x.replace(str(paths[0]), "SRC") == y.replace(str(paths[1]), "SRC"), k
        else:
            assert x == y, k
    return len(la)


@pytest.fixture(scope="module")
def cluster():
    with Engine("dask", n_workers=2, progress=False) as eng:
        yield eng


@pytest.fixture(scope="module")
def production(tmp_path_factory):
    root = tmp_path_factory.mktemp("prod")
    f = _production()
    ds = root / "dataset"
    f.with_columns(((pl.col("start_s") - T0) // 3600).cast(pl.Int64).alias("hour")).write_parquet(
        ds, partition_by=["hour"])
    single = root / "all.parquet"
    f.write_parquet(single)
    return f, ds, single


@pytest.mark.slow
def test_profile_on_dask_and_embedded_equals_in_memory(production, cluster) -> None:
    f, ds, single = production
    n_files = len(list(ds.rglob("*.parquet")))
    assert f.height >= 1_000_000 and n_files == 13  # hours 0..12 (the last holds 17 s)
    ref = profile_traffic(load(single), mix_spec=SPEC).to_dict()
    got = profile_dataset(ds, engine=cluster, mix_spec=SPEC).to_dict()
    n = _assert_same(ref, got)
    assert n > 1000  # every figure, including the per-minute series
    # the clock given: facts and counts in one pass of queries
    emb = profile_dataset(ds, engine="embedded", mix_spec=SPEC, time_origin="epoch").to_dict()
    _assert_same(ref, emb)
    # independent: complete minutes are [T0 + 60, last minute), counted by numpy
    t = f["start_s"].to_numpy()
    k = np.floor(t / 60.0).astype(np.int64)
    expect = np.bincount(k - k.min())[1:-1]
    assert got["per_minute"]["series"]["requests"] == expect.tolist()
    assert got["seq_len"]["max"] == float((f["input_tokens"] + f["output_tokens"]).max())
    assert got["seq_len"]["p99"] == pytest.approx(
        float(np.quantile((f["input_tokens"] + f["output_tokens"]).to_numpy(), 0.99)), rel=1e-12)
    assert got["mix_shares"][0]["n_requests"] == int((f["input_tokens"] < 512).sum())
    gaps = np.diff(np.sort(t))
    assert got["dispersion"]["interarrival_cv"] == pytest.approx(gaps.std(ddof=1) / gaps.mean(), rel=1e-9)
    where = got["source"]["engine"]
    assert where["engine"] == "dask" and where["workers"] == 2 and where["partitions"] == n_files


@pytest.mark.slow
def test_load_curve_on_dask_equals_in_memory(tmp_path, cluster) -> None:
    f, truth = _loadtest()
    assert f.height == 1_000_000
    ds = tmp_path / "lt"
    f.write_parquet(ds, partition_by=["run_id", "step"])  # run_id and step live in the folder names
    ref = load_curve(_trace(f), SPEC)
    got, where = load_curve_dataset(ds, SPEC, engine=cluster)
    assert where.engine == "dask" and where.partitions == 10
    assert got.columns == ref.columns and got.height == ref.height == 2 * 5 * 2
    for col in ref.columns:
        a, b = ref[col], got[col]
        if a.dtype == pl.Float64:
            x, y = a.to_numpy(), b.to_numpy()
            assert np.allclose(x, y, rtol=1e-9, atol=0, equal_nan=True), col
        else:
            assert a.to_list() == b.to_list(), col
    # independent: run-b step 3 mix 'all' is not in the spec; check the short mix's P95 TTFT by numpy
    start, ttft, _lat, st = truth[("run-b", 3)]
    row = got.filter((pl.col("run_id") == "run-b") & (pl.col("step") == 3) & (pl.col("mix") == "short")).row(
        0, named=True)
    d = start.max() - start.min()
    lat_mean = f.filter((pl.col("run_id") == "run-b") & (pl.col("step") == 3))["latency_ms"].mean() / 1000
    trim = min(max(0.1 * d, 2 * lat_mean), 0.25 * d)
    inp = f.filter((pl.col("run_id") == "run-b") & (pl.col("step") == 3))["input_tokens"].to_numpy()
    sel = (start >= start.min() + trim) & (start <= start.max() - trim) & (inp < 512)
    assert row["n_requests"] == int(sel.sum())
    ok = sel & (st == "ok")
    assert row["ttft_ms_p95"] == pytest.approx(float(np.quantile(ttft[ok], 0.95)), rel=1e-12)


def test_embedded_curve_reads_hive_keys(tmp_path) -> None:
    f, _ = _loadtest()
    f = f.filter(pl.col("step") < 2).head(200_000)
    ds = tmp_path / "lt"
    f.write_parquet(ds, partition_by=["run_id", "step"])
    assert open_dataset(ds).hive_columns == ["run_id", "step"]
    got, where = load_curve_dataset(ds, None, engine="embedded")
    ref = load_curve(_trace(f))
    assert where.engine == "embedded"
    assert got["n_requests"].to_list() == ref["n_requests"].to_list()
    assert np.allclose(got["ttft_ms_p99"].to_numpy(), ref["ttft_ms_p99"].to_numpy(), rtol=1e-12, equal_nan=True)


def test_token_stats_from_counts_equal_numpy() -> None:
    rng = np.random.default_rng(3)
    v = rng.integers(0, 50, 10_001)
    vals, counts = np.unique(v, return_counts=True)
    a, b = TokenStats.of(v), TokenStats.of_counts(vals, counts)
    assert a == b  # bit for bit: same order statistics, same interpolation, exact integer sums


def test_open_dataset_errors(tmp_path) -> None:
    with pytest.raises(InputError, match="no Parquet file"):
        open_dataset(tmp_path)
    pl.DataFrame({"start_s": [1.0], "latency": [2.0]}).write_parquet(tmp_path / "a.parquet")
    with pytest.raises(SchemaError, match="non-canonical column") as e:
        open_dataset(tmp_path)
    assert e.value.field == "latency"


def test_bad_values_are_named(tmp_path) -> None:
    pl.DataFrame({"start_s": [T0 + i for i in range(300)], "input_tokens": [5] * 299 + [-1]}).write_parquet(
        tmp_path / "x.parquet")
    with pytest.raises(BadValueError, match="non-negative"):
        profile_dataset(tmp_path, engine="embedded")


def test_engine_parameters() -> None:
    with pytest.raises(ParameterError, match="engine must be"):
        Engine("spark")
    with pytest.raises(ParameterError, match="needs --engine dask"):
        Engine("embedded", scheduler="tcp://127.0.0.1:1")


@pytest.mark.slow
@pytest.mark.parametrize("quantum", [None, 3.0])
def test_overlapping_files_and_coarse_grids_on_dask(tmp_path, cluster, quantum) -> None:
    """Files whose time ranges overlap (rows split at random, so the gaps need the shuffle by minute),
    with fine times and with Mooncake-like 3 s steps on a relative clock (the grid test's distinct values)."""
    rng = np.random.default_rng(2)
    n = 60_000
    t = np.sort(rng.uniform(0, 4 * 3600.0, n))
    if quantum:
        t = np.round(t / quantum) * quantum
    else:
        t = t + T0
    f = pl.DataFrame({"start_s": t, "input_tokens": rng.integers(1, 900, n), "output_tokens": rng.integers(1, 90, n),
                      "shard": rng.integers(0, 3, n)})
    ds = tmp_path / "ds"
    f.write_parquet(ds, partition_by=["shard"])
    single = tmp_path / "all.parquet"
    f.drop("shard").write_parquet(single)
    ref = profile_traffic(load(single)).to_dict()
    got = profile_dataset(ds, engine=cluster, time_origin="relative" if quantum else "epoch").to_dict()
    _assert_same(ref, got, (single, ds))
    assert got["resolution"]["quantized"] is bool(quantum)
    if quantum:
        assert got["resolution"]["quantum_s"] == pytest.approx(quantum, rel=1e-9)
        assert got["source"]["time_origin"] == "relative"


@pytest.mark.slow
def test_load_curve_shuffled_by_run_on_dask(tmp_path, cluster) -> None:
    """Files that each hold both runs: the rows are shuffled by run_id before the curve."""
    f, _ = _loadtest()
    f = f.filter(pl.col("step") < 3).sample(fraction=0.2, seed=1).sort("start_s")
    f = f.with_columns((pl.int_range(pl.len()) % 4).alias("shard"))
    ds = tmp_path / "lt"
    f.write_parquet(ds, partition_by=["shard"])
    ref = load_curve(_trace(f.drop("shard")), SPEC)
    got, _ = load_curve_dataset(ds, SPEC, engine=cluster)
    assert got["n_requests"].to_list() == ref["n_requests"].to_list()
    for col in ("ttft_ms_p95", "ttft_ms_p99_ci95_lo", "latency_ms_p50", "error_rate", "send_rate_rps"):
        assert np.allclose(got[col].to_numpy(), ref[col].to_numpy(), rtol=1e-9, atol=0, equal_nan=True), col
    assert got["flags"].to_list() == ref["flags"].to_list()


@pytest.mark.slow
def test_cli_profile_on_an_existing_scheduler(production, cluster, tmp_path) -> None:
    """`bearing profile DATASET --engine dask --scheduler tcp://...` against a running scheduler."""
    import json

    from typer.testing import CliRunner

    from bearing_lib.cli.main import app

    f, ds, _single = production
    address = cluster.client.scheduler.address
    assert address.startswith("tcp://")
    out = tmp_path / "p.json"
    res = CliRunner().invoke(app, ["profile", str(ds), "--engine", "dask", "--scheduler", address, "--json", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert doc["source"]["engine"]["scheduler"] == address and doc["source"]["engine"]["workers"] == 2
    assert doc["source"]["n_rows"] == f.height
    assert sum(doc["per_minute"]["series"]["requests"]) == int(
        ((f["start_s"] >= math.ceil(f["start_s"].min() / 60) * 60) & (f["start_s"] < math.floor(
            f["start_s"].max() / 60) * 60)).sum())
