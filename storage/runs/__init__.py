"""The runs journal, claim and load: the SQLite and PostgreSQL backends."""
