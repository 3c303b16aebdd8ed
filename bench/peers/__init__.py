"""Peer generators for `make bench`, installed into bench/.cache (never runtime dependencies)."""
