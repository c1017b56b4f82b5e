"""Every URL of the Placement API and its handler per method.

``requires_json`` marks the handlers whose request must carry a JSON body.
"""

from __future__ import annotations

from berth.placement.api import (
    aggregates,
    allocation_candidates,
    allocations,
    inventories,
    reshaper,
    resource_classes,
    resource_providers,
    root,
    traits,
    usages,
)
from berth.placement.api.request import requires_json
from berth.placement.api.router import RouteTable

ROUTES: RouteTable = {
    "/": {"GET": root.home},
    "/resource_providers": {
        "GET": resource_providers.list_resource_providers,
        "POST": requires_json(resource_providers.create_resource_provider),
    },
    "/resource_providers/{uuid}": {
        "GET": resource_providers.show_resource_provider,
        "PUT": requires_json(resource_providers.update_resource_provider),
        "DELETE": resource_providers.delete_resource_provider,
    },
    "/resource_providers/{uuid}/allocations": {"GET": allocations.list_for_provider},
    "/resource_providers/{uuid}/inventories": {
        "GET": inventories.list_inventories,
        "POST": requires_json(inventories.create_inventory),
        "PUT": requires_json(inventories.set_inventories),
        "DELETE": inventories.delete_inventories,
    },
    "/resource_providers/{uuid}/inventories/{resource_class}": {
        "GET": inventories.show_inventory,
        "PUT": requires_json(inventories.update_inventory),
        "DELETE": inventories.delete_inventory,
    },
    "/resource_providers/{uuid}/usages": {"GET": usages.provider_usages},
    "/usages": {"GET": usages.total_usages},
    "/allocation_candidates": {"GET": allocation_candidates.list_allocation_candidates},
    # Berth's extension: why a request of /allocation_candidates found nothing.
    "/allocation_candidates/explain": {"GET": allocation_candidates.explain_allocation_candidates},
    "/allocations": {"POST": requires_json(allocations.set_allocations, since=(1, 13))},
    "/reshaper": {"POST": requires_json(reshaper.reshape, since=(1, 30))},
    "/allocations/{consumer_uuid}": {
        "GET": allocations.list_for_consumer,
        "PUT": requires_json(allocations.set_for_consumer),
        "DELETE": allocations.delete_for_consumer,
    },
    "/resource_providers/{uuid}/aggregates": {
        "GET": aggregates.get_aggregates,
        "PUT": requires_json(aggregates.set_aggregates, since=(1, 1)),
    },
    "/resource_providers/{uuid}/traits": {
        "GET": traits.list_provider_traits,
        "PUT": requires_json(traits.update_provider_traits, since=(1, 6)),
        "DELETE": traits.delete_provider_traits,
    },
    "/traits": {"GET": traits.list_traits},
    "/traits/{name}": {
        "GET": traits.show_trait,
        "PUT": traits.put_trait,
        "DELETE": traits.delete_trait,
    },
    "/resource_classes": {
        "GET": resource_classes.list_resource_classes,
        "POST": requires_json(resource_classes.create_resource_class, since=(1, 2)),
    },
    "/resource_classes/{name}": {
        "GET": resource_classes.show_resource_class,
        "PUT": resource_classes.update_resource_class,
        "DELETE": resource_classes.delete_resource_class,
    },
}
