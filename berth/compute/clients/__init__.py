"""The compute service's clients of the Placement and network services: HTTP, or in process."""
