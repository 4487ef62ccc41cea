"""Deliveries from intake to done: which PR's lane each runs in, the journal (a base and two backends, SQLite and
PostgreSQL), the two schedulers (in memory, and lanes under lease for replicas) over one runner, and which
failures heal."""
