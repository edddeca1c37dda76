"""The twin of a tested deployment: calibrate and validate, choosing how the test's replicas are modelled.

A test that ran against ``n`` replicas can be modelled two ways: ``n`` servers behind a round-robin router
(the twin is one replica's server; docs/twin.md "Replicas behind a router"), or the deployment as one
server (its slots, KV budget and batch are the deployment's). Where the router is known to be round-robin
(``--replicas`` given), the first is used as told. Where the replica count is only *stated* (the limits'
``conditions.instances``; the router unknown, e.g. llm-d's load- and prefix-aware scheduler), the
round-robin twin is tried first and kept if it passes its own validation; if it fails and the one-server
twin passes, the one-server twin is used, with a note saying why. ``bearing twin fit --limits`` and the
report's twin call this one function, so both give the same twin and the same prediction.
"""

from __future__ import annotations

from bearing_lib.common.progress import Progress
from bearing_lib.twin.calibrate import calibrate
from bearing_lib.twin.result import Twin
from bearing_lib.twin.validate import validate

__all__ = ["fit_deployment"]


def fit_deployment(trace, sla, *, replicas: int = 1, router_known: bool = True, n_boot: int = 200, seed: int = 0,
                   known: dict | None = None, progress: Progress | None = None) -> Twin:
    """Calibrate on ``trace`` and validate against ``sla`` (module docstring): ``replicas`` servers behind a
    round-robin router when ``router_known`` or when that twin passes its validation, else the deployment as
    one server if that one passes."""
    twin = calibrate(trace, n_boot=n_boot, seed=seed, known=known, replicas=replicas, progress=progress)
    if progress is not None:
        progress.step("validating: replaying the test")
    twin.validation = validate(twin, trace, sla)
    if router_known or replicas <= 1 or twin.trusted:
        return twin
    if progress is not None:
        progress.step(f"{replicas} round-robin servers failed validation: the deployment as one server")
    whole = calibrate(trace, n_boot=n_boot, seed=seed, known=known, replicas=1, progress=progress)
    whole.validation = validate(whole, trace, sla)
    if not whole.trusted:
        twin.notes.append(f"the test ran against {replicas} replicas behind a router bearing does not know: "
                          "neither the round-robin twin nor the whole deployment as one server passed validation; "
                          "the round-robin twin is kept")
        return twin
    why = "; ".join(twin.validation.reasons) if twin.validation else "failed validation"
    whole.notes.append(f"the test ran against {replicas} replicas behind a router bearing does not know: "
                       f"{replicas} round-robin servers do not replay it ({why}), the deployment as one server "
                       f"does: this twin is the whole deployment, and its predictions are for the {replicas} "
                       "replicas together (the router is likely load-aware, not round-robin)")
    return whole
