"""The network database: tables, migrations and the queries the API and the agents' sync use."""
