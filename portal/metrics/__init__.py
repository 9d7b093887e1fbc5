"""The portal's own Prometheus metrics, served at /metrics (docs/operations/metrics.md).

`registry` defines what every process counts (requests, Celery tasks, AWS calls, ingest volumes) and how several
processes share the counts (prometheus_client's multiprocess mode); `collectors` reads what the database and the
broker say at scrape time; `middleware` and `celery` feed the counters; `views` serves them.
"""
