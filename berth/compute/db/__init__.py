"""The compute service's databases: one API database per deployment, one cell database per cell.

The API database (``api_schema``) holds what exists before and above the cells: the cells
themselves (CellMappings), which cell each host and each instance is in (HostMappings,
InstanceMappings), servers not yet in a cell (BuildRequests), RequestSpecs, flavors, images'
scheduling metadata, server groups and host aggregates. Each cell database (``cell_schema``),
cell0 included, holds that cell's services, compute nodes, instances, their faults, actions and
PCI devices.

The store modules are functions over a SQLAlchemy ``Connection``: reads run in
``Database.read()``, writes in ``Database.write()``, and a write that may race with another says
so in its result (a ``bool``, ``None``, or :class:`~berth.compute.db.errors.Duplicate`) instead of
leaving the caller to find out. ``migrate`` brings either kind of database to its newest schema.
"""
