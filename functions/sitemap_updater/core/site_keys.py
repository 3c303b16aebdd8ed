"""Where each site of a stack keeps its records, files and messages (issue 32, "several sites").

A stack serves its own site (``SiteUrl``) and any number of sites added at run time. Every site has a tree of its
own: its DynamoDB partition keys start with ``site#<host>#``, its S3 keys with ``sites/<host>/``, its FIFO message
groups with its host and its deduplication IDs are its own. The stack's own site has empty prefixes, so a stack
with one site keeps exactly the keys, objects and messages of every earlier version.

The host is the site's canonical network location (``Site.netloc``: a lower-case name, punycode for an
internationalised one, ``:port`` when not the scheme's default). Limits, from AWS's documentation: a DynamoDB
partition key value holds at most 2,048 bytes and a page state's key ``page#<url id>`` up to 1,005 (the URL id is at
most 1,000 bytes, ``adapters/manifest.py``), so a host of up to 253 bytes (DNS's longest name) and ``:65535`` keeps
every key under 1,300; a FIFO message group or deduplication ID holds at most 128 characters, so a group that
would be longer names the host by a digest.
"""

from __future__ import annotations

import hashlib
import re

# DNS's longest name (253) and a port.
MAX_NAME_BYTES = 253
MAX_HOST_BYTES = MAX_NAME_BYTES + len(":65535")
# SQS: MessageGroupId and MessageDeduplicationId hold at most 128 characters.
MAX_GROUP_CHARS = 128
# What a canonical host is made of (``Site.netloc`` after IDNA): letters, digits, dots, hyphens, a port.
_HOST = re.compile(r"^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:[0-9]{1,5})?$")
# The partition key of the stack's list of sites (one item per site, sort key its host).
SITES_PK = "sites"
# The partition key of the register the scheduled functions visit the sites by (service/site_marks.py): sort keys
# ``<kind>#<host>`` (a site's mark) and ``cursor#<job>`` (where a job's last run stopped).
MARKS_PK = "sites#marks"
# Under a site's prefix: the sections it has written (so that removing it finds every partition without a Scan).
SECTIONS_PK = "sections"
# The prefixes every site's partition keys and object keys start with.
SITE_PK_PREFIX = "site#"
SITE_OBJECT_PREFIX = "sites/"


class HostError(ValueError):
    """A host that cannot name a site's tree."""


def check_host(host: str) -> str:
    """``host`` when it can be a site's host (a canonical ``Site.netloc`` within the limits above)."""
    if len(host.encode()) > MAX_HOST_BYTES or len(host.rpartition(":")[0 if ":" in host else 2]) > MAX_NAME_BYTES:
        raise HostError(f"host {host[:60]!r}... is longer than DNS allows ({MAX_NAME_BYTES} characters)")
    if not _HOST.match(host):
        raise HostError(f"host {host!r} is not a canonical host name (lower-case letters, digits, dots, hyphens)")
    return host


def pk_prefix(host: str) -> str:
    """What a site's partition keys start with: ``site#<host>#`` (the stack's own site: nothing)."""
    return f"{SITE_PK_PREFIX}{check_host(host)}#" if host else ""


def object_prefix(host: str) -> str:
    """What a site's S3 keys start with: ``sites/<host>/`` (the stack's own site: nothing)."""
    return f"{SITE_OBJECT_PREFIX}{check_host(host)}/" if host else ""


def site_group(host: str, group: str) -> str:
    """A site's FIFO message group: ``<host>#<group>``, or with the host's digest when that is over 128 characters
    (the stack's own site: the group as it is)."""
    if not host:
        return group
    grouped = f"{host}#{group}"
    if len(grouped) <= MAX_GROUP_CHARS:
        return grouped
    return f"{hashlib.sha256(host.encode()).hexdigest()[:32]}#{group}"[:MAX_GROUP_CHARS]


def site_dedup(host: str, dedup: str) -> str:
    """A site's deduplication ID: a digest of its host and the ID (the stack's own site: the ID as it is), so two
    sites' messages that would share an ID never drop each other."""
    if not host:
        return dedup
    return hashlib.sha256(f"{host}|{dedup}".encode()).hexdigest()
