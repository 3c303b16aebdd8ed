"""How much adoption reads, and for how long: apart from ``adopt`` so the command line can show them without
importing it."""

from __future__ import annotations

MAX_FILE_BYTES = 52_428_800  # the protocol's limit on one sitemap file, uncompressed
MAX_TOTAL_BYTES = 4 * 1024**3  # all files together, uncompressed: about 20 million pages
MAX_SITEMAPS_PER_INDEX = 50_000  # the protocol's limit; more are counted, not kept
MAX_DEPTH = 3  # indexes listing indexes: three deep at most (the protocol has one, an index of sitemaps)
MAX_FILES = 100_000  # files read in all: two indexes' worth of sitemaps
MAX_SECONDS = 7_200  # the whole adoption: 4 GiB at about 600 KB/s
FILE_SECONDS = 300  # one file, from its request to its last byte (redirects included): 52,428,800 bytes at 175 KB/s
SOCKET_SECONDS = 60  # one connection, send or receive on the network
EXAMPLES = 3  # problems of one kind shown before a count of the rest
MAX_KINDS = 1_000  # kinds of problem (and of warning) told apart; more are counted together
