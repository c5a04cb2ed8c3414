"""Rate-limit budgets shared by every process of a bot (PostgreSQL)."""
