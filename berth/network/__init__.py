"""The network service: OpenStack Networking v2.0 for the resources network-aware scheduling needs."""
