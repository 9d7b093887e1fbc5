"""Signals other apps listen to, so the tenant core never imports them."""

from django.dispatch import Signal

# Sent inside the revoking transaction, with `allocation` and `user`: the capacity goes back to the pool,
# so whatever holds instances of it (workloads' clusters) must let them go.
allocation_revoked = Signal()

# Sent inside the approving transaction, with `allocation`: usage accounting counts its days as allocated.
allocation_granted = Signal()
