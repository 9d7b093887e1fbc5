"""Workload records: each organization's training runs and the history of every change to them."""
