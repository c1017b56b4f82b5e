"""A server's API status from its states, and the vm_states a listing asks the database for."""

from __future__ import annotations

import itertools

from berth.compute import server_views as views

VM_STATES = (*views._STATUS, "weird")
TASK_STATES = (
    None,
    *views._ACTIVE_TASK_STATUS,
    *views._ANY_STATE_TASK_STATUS,
    "resize_reverting",
    "spawning",
    "deleting",
)


def test_the_vm_states_asked_for_hold_every_server_of_the_statuses() -> None:
    """Every server that shows one of the statuses is in a vm_state asked for (the listing
    still filters on the status itself): for every status alone and every pair."""
    statuses = sorted(views.STATUSES | {"UNKNOWN"})
    for asked in itertools.chain(([s] for s in statuses), itertools.combinations(statuses, 2)):
        vm_states = views.vm_states_of(asked)
        for vm_state, task_state in itertools.product(VM_STATES, TASK_STATES):
            if views.status_of(vm_state, task_state) in asked:
                assert vm_states is None or vm_state in vm_states, (asked, vm_state, task_state)


def test_a_poller_asking_for_active_or_error_servers_reads_those_vm_states_alone() -> None:
    assert views.vm_states_of(["ACTIVE"]) == {"active"}
    assert views.vm_states_of(["ERROR"]) == {"error"}
    assert views.vm_states_of(["RESIZE"]) == {"active", "stopped"}
    assert views.vm_states_of(["REBUILD"]) is None
