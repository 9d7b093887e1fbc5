"""Node health: faults per node, open while the condition holds (today from the cloud's node status)."""
