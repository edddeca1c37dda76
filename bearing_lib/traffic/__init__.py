"""Stage: production trace -> traffic profile (binning, peaks and targets, slots and
seasonality, bursts, sequence lengths, SLO budget)."""
