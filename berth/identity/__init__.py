"""Identity: Keystone token validation for every API, the service user the services call each
other as, and the Keystone that ``berth up`` runs inside itself."""
