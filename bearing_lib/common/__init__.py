"""Shared by every stage: the exception tree, quantiles (linear, named), "not available",
user YAML/JSON files, the value-with-uncertainty type and number formatting."""
