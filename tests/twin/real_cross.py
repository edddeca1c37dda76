"""The twin across the two workloads of the bundled LMBenchmark sweeps (docs/twin.md, "Real sweeps").

``python -m tests.twin.real_cross`` calibrates on one workload (short_input or sharegpt) of a deployment,
predicts the other workload's limit and prints it beside ``bearing limits``' measured limit of that workload.
``--kv-from-other``: also with the KV budget the other workload's test identified given as the engine's setting.
"""

from __future__ import annotations

import sys

SLA = "p99(ttft) <= 2s"


def main() -> int:
    from bearing_lib.limits.fit import fit_limits
    from bearing_lib.twin import SearchOptions, calibrate, predict, validate
    from bearing_lib.twin.mix import from_trace
    from tests.twin.real_sweeps import runs

    by_label = dict(runs())
    for dep in ("vllm-70b-2replicas", "llm-d-70b-2replicas"):
        for src, tgt in (("short_input", "sharegpt"), ("sharegpt", "short_input")):
            a, b = by_label[f"{dep}/{src}"], by_label[f"{dep}/{tgt}"]
            measured = fit_limits(b, [SLA], mixes="none").limits[0].q_ult
            tw = calibrate(a)
            tw.validation = validate(tw, a, SLA)
            p = predict(tw, from_trace(b, name=tgt), SLA, options=SearchOptions(n_draws=8))
            print(f"{dep}: {src} -> {tgt}: measured {measured.statement}")
            print("   " + p.text().replace("\n", "\n   "))
            if "--kv-from-other" in sys.argv:
                # the engine-settings mode without an engine config: the KV budget the other workload's test of the
                # same deployment identified, given as the setting (docs/twin.md, the cross-workload table)
                other = calibrate(b, n_boot=0)
                kv = other.param("kv_budget_tokens")
                if kv.identified and not tw.param("kv_budget_tokens").identified:
                    tg = calibrate(a, known={"kv_budget_tokens": float(kv.value), "kv_policy": other.kv_policy})
                    tg.validation = validate(tg, a, SLA)
                    pg = predict(tg, from_trace(b, name=tgt), SLA, options=SearchOptions(n_draws=8))
                    print(f"   with kv_budget_tokens={kv.value:.0f} ({other.kv_policy}) given, from the {tgt} test:")
                    print("   " + pg.text().replace("\n", "\n   "))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
