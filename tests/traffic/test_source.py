"""The profile's ``source`` and ``parameters`` as types (``traffic/source.py``), and the profile document's typed
``source`` / ``mix_spec`` / ``passive_limit``: each written with exactly the keys the producers wrote before they
were typed, and read back to the same object.

Truth: the REAL Azure 2023 conversation trace (bundled, CC-BY-4.0): its sha256 from ``hashlib`` and its row count
from stdlib ``csv``, without bearing's code; the REAL Prometheus fixture (tests/fixtures/prometheus/, written by
Prometheus 2.42) for the counters' part; the key lists are the literal dicts the producers built before.
"""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path

import pytest

from bearing_lib import load, load_trace
from bearing_lib.common.errors import SchemaError
from bearing_lib.common.estimate import Estimate
from bearing_lib.data.mixes import MixSpec, auto_mixes
from bearing_lib.loaders.canonical import write_trace
from bearing_lib.traffic.dataset import profile_dataset
from bearing_lib.traffic.document import PassiveLimit, TrafficProfile
from bearing_lib.traffic.metrics_profile import profile_metrics
from bearing_lib.traffic.profile import profile_traffic
from bearing_lib.traffic.source import CounterParameters, EngineRun, ProfileParameters, ProfileSource
from tests.conftest import BUNDLED

CONV = BUNDLED / "traces/azure-llm-inference-2023/AzureLLMInferenceTrace_conv.csv"
PROM = Path(__file__).resolve().parents[1] / "fixtures" / "prometheus" / "vllm-counters-step15.json"
SOURCE_KEYS = ["path", "sha256", "format", "tool", "kind", "time_origin", "timezone", "n_rows"]
PARAM_KEYS = ["quantile", "growth", "burst_k", "burst_merge_gap_bins", "slo_objective", "n_boot", "seed"]


def _json(x: object) -> object:
    return json.loads(json.dumps(x, allow_nan=False))


@pytest.fixture(scope="module")
def conv():
    trace = load_trace(CONV)
    spec = auto_mixes(trace.frame)
    prof = profile_traffic(trace, mix_spec=spec, quantile_level=0.95, growth=1.25, burst_k=2.5, n_boot=20, seed=7)
    return prof, spec


def test_the_source_of_a_real_trace_is_the_file_read_without_bearing(conv):
    prof, _ = conv
    with CONV.open(newline="") as fh:
        n_rows = sum(1 for _ in csv.DictReader(fh))
    src = prof.source
    assert isinstance(src, ProfileSource)
    assert (src.path, src.sha256, src.kind, src.time_origin, src.n_rows) == (
        str(CONV), hashlib.sha256(CONV.read_bytes()).hexdigest(), "requests", "epoch", n_rows)
    d = prof.to_dict()["source"]
    assert list(d) == SOURCE_KEYS  # the eight keys every producer wrote, nothing set only by others
    assert ProfileSource.from_dict(_json(d)) == src
    assert ProfileSource.from_dict(_json(d)).to_dict() == d


def test_the_parameters_are_the_arguments_and_read_back(conv):
    prof, _ = conv
    d = prof.to_dict()["parameters"]
    assert d == {"quantile": 0.95, "growth": 1.25, "burst_k": 2.5, "burst_merge_gap_bins": 0,
                 "slo_objective": 0.999, "n_boot": 20, "seed": 7}
    assert list(d) == PARAM_KEYS
    assert ProfileParameters.from_dict(_json(d)) == prof.parameters
    assert ProfileParameters.from_dict(_json(d)).counters is None


def test_the_document_reads_the_same_source_and_mix_spec(conv):
    prof, spec = conv
    doc = TrafficProfile.from_dict(_json(prof.to_dict()))
    assert doc.source == prof.source and doc.source_format == "azure-llm-inference"
    assert len(spec.mixes) > 1  # the automatic mixes of the real trace: several, with open-ended bounds
    assert MixSpec(tuple(m.to_mix() for m in doc.mix_spec)) == spec
    assert [m.description for m in doc.mix_spec] == [m.describe() for m in spec.mixes]


def test_a_parquet_dataset_names_its_engine_and_files(tmp_path, conv):
    prof, _ = conv
    pq = write_trace(load_trace(CONV), tmp_path / "conv.parquet")
    dprof = profile_dataset(pq, n_boot=20, seed=7, quantile_level=0.95, growth=1.25, burst_k=2.5)
    d = dprof.to_dict()["source"]
    assert list(d) == [*SOURCE_KEYS, "n_files", "engine"]
    assert d["n_files"] == 1 and d["n_rows"] == prof.source.n_rows and d["sha256"] == hashlib.sha256(
        Path(pq).read_bytes()).hexdigest()
    assert list(d["engine"]) == ["engine", "scheduler", "workers", "partitions", "detail"]
    assert d["engine"]["engine"] == "embedded" and d["engine"]["workers"] == 1
    assert isinstance(dprof.source.engine, EngineRun)
    assert ProfileSource.from_dict(_json(d)) == dprof.source
    assert EngineRun.from_dict(_json(d["engine"])) == dprof.source.engine
    assert dprof.to_dict()["parameters"] == prof.to_dict()["parameters"]


def test_counters_add_their_keys_after_the_generators(conv):
    prof = profile_metrics(load(PROM), n_boot=0, mix_spec=MixSpec.single())
    raw = json.loads(PROM.read_text())
    names = {r["metric"]["__name__"] for r in raw["data"]["result"]}
    d = prof.to_dict()
    assert list(d["source"]) == [*SOURCE_KEYS, "request_metric", "time_resolution_s"]
    assert d["source"]["kind"] == "metrics" and d["source"]["request_metric"] in names
    assert d["source"]["time_resolution_s"] == 15.0  # the fixture's query step (its file name, README)
    p = d["parameters"]
    assert list(p) == [*PARAM_KEYS, "request_metric", "mix_label", "mix_spec_ignored"]
    assert p["request_metric"] == d["source"]["request_metric"] and p["mix_label"] == "model_name"
    back = ProfileParameters.from_dict(_json(p))
    assert back == prof.parameters and isinstance(back.counters, CounterParameters)
    assert ProfileSource.from_dict(_json(d["source"])) == prof.source
    # without a mix spec there is no mix_spec_ignored key (not a null)
    plain = profile_metrics(load(PROM), n_boot=0).to_dict()["parameters"]
    assert list(plain) == [*PARAM_KEYS, "request_metric", "mix_label"]


def test_a_passive_limit_in_the_document_is_typed():
    lim = PassiveLimit(Estimate(7.25, (6.5, 8.75), unit="rps", basis="offered"), "p99(latency) <= 20s", 300.0, 17,
                       3.5, 0.0021, -0.00028, True)
    doc = TrafficProfile.from_dict({"passive_limit": _json(lim.to_dict())})
    p = doc.passive_limit
    assert isinstance(p, PassiveLimit) and p == lim and p.to_dict() == lim.to_dict()
    assert (p.q_ult, p.clause, p.window_s, p.n_windows, p.highest_rate_rps, p.intercept, p.slope_per_rps,
            p.extrapolated, p.kind) == (lim.q_ult, lim.clause, 300.0, 17, 3.5, 0.0021, -0.00028, True, "passive")


def test_a_source_of_the_wrong_shape_is_named():
    with pytest.raises(SchemaError) as exc:
        TrafficProfile.from_dict({"source": {"path": "x.csv", "n_rows": "many"}})
    assert any(p.field.startswith("source") and "n_rows" in p.field for p in exc.value.problems)
    assert TrafficProfile.from_dict({"source": "a CSV from the gateway"}).source == "a CSV from the gateway"
    with pytest.raises(SchemaError, match="profile source: expected an object"):
        ProfileSource.from_dict(["x"])
