"""The cluster reporter: per-cluster tokens, the head-node script, silent reporters."""
