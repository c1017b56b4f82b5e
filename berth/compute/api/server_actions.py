"""POST /servers/{server_id}/action: one JSON object with one key, the action, and its argument.

Each action's handler lives with its kind (moves, shelving, ...) and is registered here by the
name the body uses; an action Berth does not have is a 400 that says so, as Nova answers, once
the server is found (an unknown server is a 404 whatever the action).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from starlette.responses import Response

from berth.compute import exceptions, servers
from berth.compute.api import (
    create_image,
    deferred_delete,
    evacuate,
    floating_ips,
    guest,
    lock,
    moves,
    power,
    rebuild,
    security_groups,
    shelve,
)
from berth.compute.api.request import ComputeRequest

# (request, server id, the action's argument) -> the answer.
ActionHandler = Callable[[ComputeRequest, str, Any], Response]

ACTIONS: Mapping[str, ActionHandler] = {
    "migrate": moves.migrate,
    "resize": moves.resize,
    "confirmResize": moves.confirm_resize,
    "revertResize": moves.revert_resize,
    "os-migrateLive": moves.migrate_live,
    "shelve": shelve.shelve,
    "shelveOffload": shelve.shelve_offload,
    "unshelve": shelve.unshelve,
    "evacuate": evacuate.evacuate,
    "reboot": power.reboot,
    "os-stop": power.stop,
    "os-start": power.start,
    "pause": power.pause,
    "unpause": power.unpause,
    "suspend": power.suspend,
    "resume": power.resume,
    "rebuild": rebuild.rebuild_server,
    "lock": lock.lock,
    "unlock": lock.unlock,
    "os-resetState": lock.reset_state,
    "injectNetworkInfo": lock.inject_network_info,
    "restore": deferred_delete.restore,
    "forceDelete": deferred_delete.force_delete,
    "addFloatingIp": floating_ips.add,
    "removeFloatingIp": floating_ips.remove,
    "rescue": guest.rescue,
    "unrescue": guest.unrescue,
    "changePassword": guest.change_password,
    "os-getConsoleOutput": guest.console_output,
    "createImage": create_image.create_image,
    "createBackup": create_image.create_backup,
    "addSecurityGroup": security_groups.add_to_server,
    "removeSecurityGroup": security_groups.remove_from_server,
}


def act(req: ComputeRequest) -> Response:
    ((name, argument),) = req.json_body().items()
    handler = ACTIONS.get(name)
    if handler is None:
        servers.get_server(req.service, req.context, req.param("server_id"))
        raise exceptions.BadRequest(f"There is no such action: {name}")
    return handler(req, req.param("server_id"), argument)
