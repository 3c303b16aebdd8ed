"""How much adoption reads: apart from ``adopt`` so the command line can show them without importing it."""

from __future__ import annotations

MAX_FILE_BYTES = 52_428_800  # the protocol's limit on one sitemap file, uncompressed
MAX_TOTAL_BYTES = 4 * 1024**3  # all files together, uncompressed: about 20 million pages
