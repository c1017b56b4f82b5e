"""The compute service: the Compute v2.1 API, the conductors, the scheduler and the host agents."""
