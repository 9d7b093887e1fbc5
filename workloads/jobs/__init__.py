"""Scheduler job records (Slurm sacct posted by a cluster's reporter): planned, see the jobs & health issue."""
