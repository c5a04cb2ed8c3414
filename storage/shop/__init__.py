"""The demo shop: its tools, rules and seed, and its SQLite and PostgreSQL backends."""
