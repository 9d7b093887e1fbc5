"""Usage accounting: node run intervals from polling now; the rollups (allocated vs running instance-hours,
accelerator-hours, cost) and their dashboards next."""
