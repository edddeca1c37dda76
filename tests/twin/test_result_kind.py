"""What a twin document is, is decided by its type: ``kind`` is a ``Literal`` field of ``Twin`` and
``PredictionSet``, and a predictions file is parsed into ``PredictionSet`` whole (no field read by ``str()``
or ``bool()`` of whatever is there). Truth: the JSON text written by ``json.dumps`` and edited by hand."""

from __future__ import annotations

import json

import pytest

from bearing_lib.common.errors import SchemaError
from bearing_lib.common.estimate import Estimate
from bearing_lib.twin.result import Prediction, PredictionSet, Twin, TwinParam


def _twin() -> Twin:
    p = TwinParam("prefill_base_ms", 12.0, (10.0, 14.0), "ms", True, "none", [1, 2], "from the steps")
    return Twin(source="test.csv", params=[p], draws=[[12.0]], n_requests=300, steps=[1, 2], highest_load=4.0,
                load_unit="rps", test_mix={"input_tokens": [100.0, 200.0]})


def _predictions() -> PredictionSet:
    q = Estimate(2.0, ci95=(1.5, 2.5), unit="rps", basis="offered")
    p = Prediction(target="production", sla="p99(ttft) <= 1s", q_ult=q, instances=1, prompt_scale=1.0,
                   trusted=True, flags=[], draws_rps=[1.9, 2.1], method="search", regime={"utilisation": 0.8})
    return PredictionSet("twin.json", True, [], [p])


def test_the_kind_is_a_field_written_last_and_read_back():
    tw = _twin()
    d = json.loads(json.dumps(tw.to_dict()))
    assert tw.kind == "twin" and list(d)[-1] == "kind" and d["kind"] == "twin"
    assert Twin.from_dict(d) == tw
    old = {k: v for k, v in d.items() if k != "kind"}  # a twin written before the field: still a twin
    assert Twin.from_dict(old) == tw


def test_a_predictions_file_round_trips_and_a_mistyped_flag_is_refused():
    ps = _predictions()
    d = json.loads(json.dumps(ps.to_dict()))
    assert d["kind"] == "twin_predictions" and d["predictions"][0]["q_ult"]["kind"] == "predicted"
    assert PredictionSet.from_dict(d) == ps
    # "perhaps" used to read as True (bool() of a non-empty string): now named with its field
    with pytest.raises(SchemaError, match=r"twin_trusted: Input should be a valid boolean"):
        PredictionSet.from_dict({**d, "twin_trusted": "perhaps"})
    with pytest.raises(SchemaError, match=r"twin_source: Field required"):
        PredictionSet.from_dict({k: v for k, v in d.items() if k != "twin_source"})
    with pytest.raises(SchemaError, match=r"not a bearing twin_predictions document: kind is 'twin'"):
        PredictionSet.from_dict({**d, "kind": "twin"})
    with pytest.raises(SchemaError, match=r"not a bearing twin document: kind is 'twin_predictions'"):
        Twin.from_dict(d)
