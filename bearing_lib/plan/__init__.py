"""Stage: limits + traffic profile -> capacity plan (factor of safety and verdict, instances,
elasticity replay, KV-cache memory, scorecards)."""
