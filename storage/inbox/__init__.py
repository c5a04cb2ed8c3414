"""The durable inbox (every update stored before it is acknowledged): SQLite and PostgreSQL."""
