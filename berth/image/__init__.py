"""An Image v2 compatible catalog: the images the compute service boots from, as metadata only.

Berth has no image store. Clients reach this small API at the image endpoint to register an
image's scheduling metadata (minimums, ``hw_architecture``, ``trait:*`` properties), which the
compute API reads from the same rows (``berth.compute.db.images``, in the compute API database).
"""
