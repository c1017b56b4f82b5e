"""JSON schemas for request bodies and query strings, one module per resource, one schema per
microversion, each built from the one before."""
