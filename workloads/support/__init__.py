"""Support cases: opening, commenting, triage, their append-only history and the email it sends."""
