"""Server-side metrics read against the load test's steps: the scrape aligned to each step and its
signals per step (``metrics``), the bottleneck at the limit step (``bottleneck``, and per mix of a
limits result, ``limit_bottlenecks``), the signal to scale on that binds there (``binding``) and what
the engine reported about its KV cache (``kv_check``). This wing stands below the plan: it reads
server metrics and limits, never the plan; the plan's KV check reads its
:class:`~bearing_lib.servers.kv_check.KvGauge`."""
