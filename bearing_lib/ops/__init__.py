"""Operations: the finished plan exported as the settings operators deploy (Prometheus rules, HPA,
KEDA, Envoy, nginx), its daily schedule and triggers, and the validators of what is written. The
server-metric analyses they draw on (the bottleneck at the limit, the binding signal) are in
:mod:`bearing_lib.servers`."""
