"""Stage: load test + SLA -> per-mix limits ``Q_ult`` (SLA grammar, load curves, bootstrap,
the limit estimator, phases, USL/queueing fits, cost index, recovery)."""
