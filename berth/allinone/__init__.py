"""``berth up``: every service in one process, on SQLite files and the in-process bus, with a
fleet of simulated hosts."""
