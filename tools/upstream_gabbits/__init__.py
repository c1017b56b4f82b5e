"""Runs the upstream Placement functional gabbi suite against Berth."""
