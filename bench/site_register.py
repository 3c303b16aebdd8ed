"""The sites' items and the register of marks (adapters/sites.py), metered as ``bench/meter.py`` meters the rest.

The simulation's ``FakeSites`` holds them in dictionaries; ``metered`` wraps each of its calls so that it is charged
as the adapter's DynamoDB call would be, from the real items' sizes (``site_item`` and the mark's item):

- ``get_site``: GetItem, eventually consistent (half a unit per 4 KB; a missing item still half a unit);
- ``list_sites``: a strongly consistent Query of the ``sites`` partition (pages of 1 MB);
- ``marks``: a strongly consistent Query of the marks of one kind (``sites#marks``, ``<kind>#`` sort keys);
- ``cursor``: GetItem, strongly consistent; ``mark``, ``set_cursor``: PutItem; ``unmark``: DeleteItem (a
  condition that fails is billed as the delete).

The fake returns the sites themselves; each is turned into its item and back (``site_from_item``) as the adapter
reads it, and that parsing is billed to the function (the item's making is not).

``RegisterCalls`` counts every call by the function that made it and its name (``get_site``: the config reads).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from bench.meter import Meter, _query_units
from bench.usage import Usage
from sitemap_updater.adapters.sites import site_from_item, site_item
from sitemap_updater.core.site_keys import MARKS_PK, SITES_PK
from sitemap_updater.sites import SiteConfig
from tests.sim.dynamo import item_size
from tests.sim.fakes import FakeSites

AT_DIGITS = 16  # a mark's ``at``: µs since the epoch


def mark_size(kind: str, host: str) -> int:
    """The size of a mark's item (pk, sk ``<kind>#<host>``, v, at) as DynamoDB bills it."""
    item = {"pk": {"S": MARKS_PK}, "sk": {"S": f"{kind}#{host}"}, "v": {"N": "1"}, "at": {"N": "9" * AT_DIGITS}}
    return item_size(item)


def site_size(site: SiteConfig) -> int:
    return item_size(site_item(site))


def list_units(sizes: list[int]) -> float:
    """The read units of a strongly consistent Query returning items of ``sizes`` (1 MB pages)."""
    return _query_units(sizes)[0]


class RegisterCalls(Counter[tuple[str, str]]):
    """Calls to the sites' items and the register: (function, call) -> how many."""

    def of(self, call: str) -> int:
        return sum(n for (_function, name), n in self.items() if name == call)


def metered(meter: Meter, directory: FakeSites) -> RegisterCalls:
    """Charge every call to ``directory`` to the function ``meter`` runs; returns the calls it counts."""
    calls = RegisterCalls()
    get_site, list_sites, marks, mark = directory.get_site, directory.list_sites, directory.marks, directory.mark
    unmark, cursor, set_cursor = directory.unmark, directory.cursor, directory.set_cursor

    def charge(port: Callable[..., Any], name: str, call: Callable[[], Any], rule: Callable[[Usage, Any], None],
               pk: str) -> Any:  # fmt: skip
        calls[(meter.function, port.__name__)] += 1
        return meter.charged(name, call, lambda: rule, [pk])

    def do_get_site(host: str) -> SiteConfig | None:
        item: list[dict[str, Any]] = []

        def rule(u: Usage, found: SiteConfig | None) -> None:
            item.extend([] if found is None else [site_item(found)])
            meter._read(u, [item_size(item[0]) if item else None], False)

        charge(get_site, "GetItem", lambda: get_site(host), rule, SITES_PK)
        return site_from_item(item[0]) if item else None  # the adapter's parsing, billed

    def do_list_sites() -> list[SiteConfig]:
        items: list[dict[str, Any]] = []

        def rule(u: Usage, found: list[SiteConfig]) -> None:
            items.extend(site_item(s) for s in found)
            meter._query(u, [item_size(i) for i in items])

        charge(list_sites, "Query", list_sites, rule, SITES_PK)
        return [site_from_item(item) for item in items]  # the adapter's parsing of each item, billed

    def do_marks(kind: str) -> dict[str, int]:
        def rule(u: Usage, found: dict[str, int]) -> None:
            meter._query(u, [mark_size(kind, host) for host in found])

        return charge(marks, "Query", lambda: marks(kind), rule, MARKS_PK)  # type: ignore[no-any-return]

    def do_mark(kind: str, host: str, at_us: int) -> None:
        size = mark_size(kind, host)
        charge(mark, "PutItem", lambda: mark(kind, host, at_us), lambda u, _r: meter._write(u, 0, size), MARKS_PK)

    def do_unmark(kind: str, host: str, at_us: int | None = None) -> bool:
        size = mark_size(kind, host)
        rule: Callable[[Usage, Any], None] = lambda u, _r: meter._write(u, size, 0)  # noqa: E731
        return bool(charge(unmark, "DeleteItem", lambda: unmark(kind, host, at_us), rule, MARKS_PK))

    def do_cursor(job: str) -> str:
        return str(charge(cursor, "GetItem", lambda: cursor(job), lambda u, _r: meter._read(u, [80]), MARKS_PK))

    def do_set_cursor(job: str, host: str) -> None:
        charge(set_cursor, "PutItem", lambda: set_cursor(job, host), lambda u, _r: meter._write(u, 0, 80), MARKS_PK)

    directory.get_site = do_get_site  # type: ignore[method-assign]
    directory.list_sites = do_list_sites  # type: ignore[method-assign]
    directory.marks = do_marks  # type: ignore[method-assign]
    directory.mark = do_mark  # type: ignore[method-assign]
    directory.unmark = do_unmark  # type: ignore[method-assign]
    directory.cursor = do_cursor  # type: ignore[method-assign]
    directory.set_cursor = do_set_cursor  # type: ignore[method-assign]
    return calls
