"""Berth: a network-aware cloud scheduling control plane."""
