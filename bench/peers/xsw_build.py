"""xml-sitemap-writer (PyPI) building gzip sitemaps plus an index from the benchmark JSONL, one section per
site section as its README shows. It takes URLs relative to the root and has no image support: images drop.

Usage: python xsw_build.py <pages.jsonl> <out dir> <site>   (run in bench/.cache/xsw, never our venv)
"""

import json
import sys
from collections import defaultdict
from pathlib import Path

from xml_sitemap_writer import XMLSitemap  # type: ignore[import-not-found]


def main() -> None:
    source, out, site = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    out.mkdir(parents=True, exist_ok=True)
    by_section: dict[str, list[str]] = defaultdict(list)
    with Path(source).open(encoding="utf-8") as handle:
        for line in handle:
            event = json.loads(line)
            if event["type"] == "upsert":
                path = event["url"].removeprefix(site)
                by_section[path.split("/")[1]].append(path)
    with XMLSitemap(path=str(out), root_url=site) as sitemap:
        for section, paths in by_section.items():
            sitemap.add_section(section)
            sitemap.add_urls(iter(paths))


if __name__ == "__main__":
    main()
