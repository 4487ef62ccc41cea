"""Deliveries from intake to done: the journal (SQLite, PostgreSQL), the schedulers, failures."""
