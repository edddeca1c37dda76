"""Operations: server metrics aligned to load steps, the bottleneck at the limit, and the plan exported
as the settings operators deploy (Prometheus rules, HPA, KEDA, Envoy, nginx)."""
