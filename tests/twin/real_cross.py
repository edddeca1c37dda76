"""The twin across the two workloads of the bundled LMBenchmark sweeps (docs/twin.md, "Real sweeps").

``python -m tests.twin.real_cross`` calibrates on one workload (short_input or sharegpt) of a deployment,
predicts the other workload's limit and prints it beside ``bearing limits``' measured limit of that workload.
"""

from __future__ import annotations

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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
