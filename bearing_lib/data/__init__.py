"""The datasets every loader produces and every stage reads: the canonical request trace,
load-point tables, rate windows, provenance, request mixes and windows in time."""
