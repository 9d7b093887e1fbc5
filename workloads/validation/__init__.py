"""Interconnect validation: nccl-tests logs parsed and judged against a baseline per instance type (planned)."""
