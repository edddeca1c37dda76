"""TEST ORACLE: the server configurations, request mixes and SLAs whose true limits are known.

Three servers x three mixes = nine combinations. Each combination has an SLA in
bearing's SLA language; ``make_truth.py`` computes the true limit (offered rps) under
it and caches it in ``truth.json``. Changing anything here invalidates truth.json
(``make_truth.py`` records a hash of these definitions and the test checks it).

Parameter choices (orders of magnitude of real engines, not a fit to any one GPU):
* ``small``: an 8B-class model on one mid-range GPU: 32 slots, 60k KV tokens.
* ``large``: a 70B-class model on a tensor-parallel node: slower decode iterations but
  a wide batch (64 slots) and 200k KV tokens.
* ``kv_starved``: many slots (128) but only 40k KV tokens, so admission is blocked by
  memory, not by slots: the KV budget is the binding resource for long prompts.
"""

from __future__ import annotations

import hashlib
import json

from tests.oracle.simulator import MixModel, ServerConfig

SERVERS: dict[str, ServerConfig] = {
    "small": ServerConfig(
        name="small",
        max_num_seqs=64,
        kv_budget_tokens=150_000,
        max_batched_tokens=8192,
        prefill_base_ms=4.0,
        prefill_ms_per_token=0.015,
        decode_base_ms=10.0,
        decode_ms_per_seq=0.12,
        queue_timeout_s=30.0,
    ),
    "large": ServerConfig(
        name="large",
        max_num_seqs=256,
        kv_budget_tokens=800_000,
        max_batched_tokens=16384,
        prefill_base_ms=8.0,
        prefill_ms_per_token=0.010,
        decode_base_ms=25.0,
        decode_ms_per_seq=0.06,
        queue_timeout_s=60.0,
    ),
    "kv_starved": ServerConfig(
        name="kv_starved",
        max_num_seqs=256,
        kv_budget_tokens=100_000,
        max_batched_tokens=8192,
        prefill_base_ms=4.0,
        prefill_ms_per_token=0.012,
        decode_base_ms=8.0,
        decode_ms_per_seq=0.10,
        queue_timeout_s=30.0,
    ),
}

MIXES: dict[str, MixModel] = {
    "chat": MixModel(
        name="chat",
        input_median=350,
        input_sigma=0.8,
        input_min=16,
        input_max=4096,
        output_median=180,
        output_sigma=0.7,
        output_min=8,
        output_max=1024,
    ),
    "rag": MixModel(
        name="rag",
        input_median=3000,
        input_sigma=0.5,
        input_min=1024,
        input_max=12_000,
        output_median=250,
        output_sigma=0.6,
        output_min=16,
        output_max=1024,
    ),
    "prefix": MixModel(
        name="prefix",
        input_median=2500,
        input_sigma=0.4,
        input_min=512,
        input_max=8192,
        output_median=120,
        output_sigma=0.7,
        output_min=8,
        output_max=1024,
        prefix_tokens=2000,
        prefix_hit_prob=0.9,
    ),
}

# One SLA per combination, in bearing's SLA language. TTFT promises are per mix (what a
# chat or RAG product would promise); the prefix-cache mix gets an end-to-end latency
# promise, which must sit above each server's low-load P99 latency (decode speed differs
# by server), so its threshold is per server (about 1.6-1.9x that low-load P99).
SLAS: dict[tuple[str, str], list[str]] = {
    ("small", "chat"): ["p99(ttft) <= 1s"],
    ("small", "rag"): ["p99(ttft) <= 3s"],
    ("small", "prefix"): ["p99(latency) <= 14s"],
    ("large", "chat"): ["p99(ttft) <= 1s"],
    ("large", "rag"): ["p99(ttft) <= 3s"],
    ("large", "prefix"): ["p99(latency) <= 30s"],
    ("kv_starved", "chat"): ["p99(ttft) <= 1s"],
    ("kv_starved", "rag"): ["p99(ttft) <= 3s"],
    ("kv_starved", "prefix"): ["p99(latency) <= 10s"],
}


def combinations() -> list[tuple[str, str]]:
    """All (server, mix) pairs, in a fixed order."""
    return [(s, m) for s in SERVERS for m in MIXES]


def simulator_hash() -> str:
    """sha256 of simulator.py's bytes: truth.json is valid only for the code that made it."""
    from pathlib import Path

    return hashlib.sha256((Path(__file__).resolve().parent / "simulator.py").read_bytes()).hexdigest()


def definitions_hash() -> str:
    """sha256 of every definition above: truth.json is valid only for this hash."""
    blob = json.dumps(
        {
            "servers": {k: v.to_dict() for k, v in SERVERS.items()},
            "mixes": {k: v.to_dict() for k, v in MIXES.items()},
            "slas": {f"{k[0]}/{k[1]}": v for k, v in SLAS.items()},
        },
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode()).hexdigest()
