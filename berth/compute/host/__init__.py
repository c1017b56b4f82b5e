"""The compute host agent: one per hypervisor, with its resource tracker and driver."""
