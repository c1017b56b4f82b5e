"""The Networking v2.0 HTTP API: request plumbing, listing rules and one module per resource."""
