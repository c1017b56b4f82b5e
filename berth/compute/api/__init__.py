"""The Compute v2.1 HTTP API: request plumbing and one module per resource."""
