"""What the tenants do with their capacity, one sub-package per capability:

- records/  workload records (each org's training runs) and their field-by-field history
- support/  support cases, their chronological history, case email
- review/   the program team's weekly review: figures per org, meeting records, action items
- clusters/ training clusters: lifecycle, the allocation limit, provisioning and polling (through portal.cloud)
- health/   node health events (today from the cloud's node status)
- usage/    node run intervals, the input of usage accounting
- jobs/     scheduler job records (sacct parser now; ingest planned)
- validation/ interconnect checks (nccl-tests parser now; ingest planned)

Each sub-package has the usual Django module names inside (models, services, views, api, serializers, forms,
filters, tasks, urls). Models keep the `workloads` app label; workloads/models.py lists them for Django.
"""
