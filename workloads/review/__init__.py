"""The weekly review: per-org figures for an ISO week, the meeting record and its action items."""
