"""Every URL of the Placement API and its handler per method."""

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
from berth.placement.api.router import RouteTable

ROUTES: RouteTable = {
    "/": {"GET": root.home},
    "/resource_providers": {
        "GET": resource_providers.list_resource_providers,
        "POST": resource_providers.create_resource_provider,
    },
    "/resource_providers/{uuid}": {
        "GET": resource_providers.show_resource_provider,
        "PUT": resource_providers.update_resource_provider,
        "DELETE": resource_providers.delete_resource_provider,
    },
    "/resource_providers/{uuid}/allocations": {"GET": allocations.list_for_provider},
    "/resource_providers/{uuid}/inventories": {
        "GET": inventories.list_inventories,
        "POST": inventories.create_inventory,
        "PUT": inventories.set_inventories,
        "DELETE": inventories.delete_inventories,
    },
    "/resource_providers/{uuid}/inventories/{resource_class}": {
        "GET": inventories.show_inventory,
        "PUT": inventories.update_inventory,
        "DELETE": inventories.delete_inventory,
    },
    "/resource_providers/{uuid}/usages": {"GET": usages.provider_usages},
    "/usages": {"GET": usages.total_usages},
    "/allocation_candidates": {"GET": allocation_candidates.list_allocation_candidates},
    "/allocations": {"POST": allocations.set_allocations},
    "/reshaper": {"POST": reshaper.reshape},
    "/allocations/{consumer_uuid}": {
        "GET": allocations.list_for_consumer,
        "PUT": allocations.set_for_consumer,
        "DELETE": allocations.delete_for_consumer,
    },
    "/resource_providers/{uuid}/aggregates": {
        "GET": aggregates.get_aggregates,
        "PUT": aggregates.set_aggregates,
    },
    "/resource_providers/{uuid}/traits": {
        "GET": traits.list_provider_traits,
        "PUT": traits.update_provider_traits,
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
        "POST": resource_classes.create_resource_class,
    },
    "/resource_classes/{name}": {
        "GET": resource_classes.show_resource_class,
        "PUT": resource_classes.update_resource_class,
        "DELETE": resource_classes.delete_resource_class,
    },
}
