"""A deterministic simulation of the deployed pipeline: the real handlers on in-memory AWS with virtual time."""
