"""Wiring at the edge: settings read once, AWS clients and adapters built and handed to the services."""
