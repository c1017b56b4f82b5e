"""JSON schemas for Networking request bodies, one module per resource; ``bodies.BODIES`` says
which write takes which.

A schema holds each attribute a body gives to its type, and strings and numbers to what their
columns hold, before the handler runs. Unknown attributes are the domain's to refuse
(``berth.network.validate.known``, "Unrecognized attribute(s)", as Neutron words it), and so is
what needs parsing (addresses, CIDRs) or a lookup.
"""
