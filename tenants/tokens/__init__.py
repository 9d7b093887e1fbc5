"""API tokens: named, per user, many per user, with an expiry, stored hashed, shown once.

`keys.py` is the reusable part (a secret key stored as a digest and a short visible prefix, looked up and
compared in constant time): per-cluster ingest tokens are to be stored the same way.
"""
