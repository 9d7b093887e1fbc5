"""Capacity: the program's pools, tenants' requests, managers' decisions and the allocations they grant.

pools.py reads pools (which serves a request, free capacity, cost); requests.py is a tenant's asks; decisions.py
approves and rejects under the pool invariant; allocations.py revokes and ages allocations; notifications.py
mails the org; sweep.py and estimate.py are pure computation; charts.py draws the pool timeline.
"""
