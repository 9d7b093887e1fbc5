"""Clusters: a tenant's training clusters in its own AWS account.

services.py is what people do (create, retry, delete); allowance.py the allocation limit; lifecycle.py the
state machine; provisioning.py the worker side (create, delete, poll) and sync.py the node listing it reads.
"""
