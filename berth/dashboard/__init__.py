"""The capacity view: a read-only web page of the fleet served by ``berth up`` at ``/dashboard``
(docs/dashboard.md)."""
