"""Signed-out console sessions, kept with the runs: the SQLite and PostgreSQL backends."""
