"""What the real service code asks of AWS, counted on the simulation's in-memory AWS (``tests/sim``).

Every call the adapters would make is wrapped: DynamoDB (the ``FakeStore`` methods that stand for one call each,
and the client-level transaction and batch calls), S3 (the fake client) and SQS (every message a queue accepts).
Each call is charged as AWS bills it, from the real items' sizes (the adapter's own item builders):

- reads: 4 KB units per item (GetItem, BatchGetItem, each item rounded up on its own, a missing item 1 unit) or
  per response page of a Query (the sum of the items' sizes, rounded up once per 1 MB page); strongly consistent
  reads count 1, eventually consistent (the GSI) 0.5;
- writes: 1 KB units of the larger of the item before and after (a delete: the item's size), twice in a
  TransactWriteItems; a conditional write whose condition fails is billed as if it had been applied;
- S3 requests by class and bytes uploaded; SQS requests in 64 KB chunks, standard or FIFO.

Given a :class:`tests.sim.throughput.Throughput`, each DynamoDB call's units are also taken from its partition
keys' and the table's limits in the virtual second it is made (the invocation's start plus the stated latency of
its calls so far): a throttled attempt is counted (``Usage.throttled``) and waits botocore's backoff before it is
made again, which the invocation is billed; one throttled on its last attempt is counted in ``throttle_failed``.
Without one, nothing is throttled (the units per partition key are still counted, ``units_by_key``).
A call's time is the virtual clock's when its invocation began plus the stated latency of its calls before it.

Time spent inside the fakes and in this accounting is not the service's: it is taken out of the measured CPU and
replaced by a stated latency per call (``bench/cost.py``)."""

from __future__ import annotations

import inspect
import math
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import fields
from typing import Any

from botocore.exceptions import ClientError

from bench.cost import LATENCY_S, PLATFORM_LOG_BYTES
from bench.usage import LogSink, Usage
from sitemap_updater.adapters.file_records import file_item
from sitemap_updater.adapters.manifest import ManifestStore, entry_pk, page_pk, range_partitions
from sitemap_updater.core.layout import PublishedFile
from sitemap_updater.core.pages import PageFields, PageRecord, PageWrite
from sitemap_updater.core.records import encode_state
from sitemap_updater.core.reduce import PageState
from sitemap_updater.wiring.pipeline import render_threads
from tests.sim.dynamo import FakeDynamoClient, item_size, section_of
from tests.sim.fakes import FakeS3, FakeStore, SimQueueState
from tests.sim.throughput import Throughput, spread

KB, READ_UNIT, PAGE = 1024, 4096, 1024 * 1024
SQS_CHUNK = 64 * 1024
_PAGE_FIELDS = [f.name for f in fields(PageFields)]
Charge = Callable[["Usage", Any], None]


_V = 3  # an item's format version: ``v`` and the number 1


def _units(size: int, unit: int) -> int:
    return max(1, math.ceil(size / unit))


def _utf8(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def manifest_item_size(section: str, key: int, url: str, rank: str, record_len: int) -> int:
    """A manifest entry item: ``pk`` sec#<section>, ``sk`` <key>#<url>, ``v`` 1, ``rank``, ``record`` the encoded
    state."""
    return 2 + 4 + _utf8(section) + 2 + 17 + _utf8(url) + _V + 4 + _utf8(rank) + 6 + record_len


def _query_units(sizes: list[int], consistent: bool = True) -> tuple[float, int]:
    """Read units and response pages of a Query returning items of ``sizes``."""
    units, pages, page = 0.0, 1, 0
    for size in sizes:
        if page + size > PAGE:
            units += math.ceil(page / READ_UNIT)
            pages, page = pages + 1, 0
        page += size
    units += max(1, math.ceil(page / READ_UNIT))
    return units * (1 if consistent else 0.5), pages


class Meter:
    """Wraps a :class:`tests.sim.world.Simulation`'s AWS; ``usage[function]`` accumulates what each used."""

    def __init__(self, sim: Any, throughput: Throughput | None = None) -> None:
        self.sim = sim
        self.throughput = throughput
        # Units per partition key and kind ("read"/"write"), except the keys of one item per URL (page#, sent#)
        self.units_by_key: defaultdict[tuple[str, str], float] = defaultdict(float)
        self._wait0 = 0.0  # the current invocation's wait when it began
        # With a Throughput: units served per (second, kind), by (key prefix, function): what fills a busy second
        self.sources: defaultdict[tuple[int, str], defaultdict[tuple[str, str], float]] = defaultdict(
            lambda: defaultdict(float)
        )
        self.store: FakeStore = sim.store
        self.usage: dict[str, Usage] = {}
        self.function = "setup"
        self._depth = 0
        self._excluded = 0.0  # CPU seconds inside the fakes and the accounting, during the current invocation
        self._scale = 1.0  # the current invocation's CPU scale (its memory setting)
        self._threads = render_threads(sim.pipeline.settings.limits.max_urls)  # as the deployed fan-out has them
        self.puts: list[tuple[str, int]] = []  # sitemap files and index put (name, bytes), until taken
        self.logs = LogSink()
        self._check_coverage()
        self._wrap_store()
        self._wrap_client()
        self._wrap_s3()
        for state in sim.queues.values():
            self._wrap_queue(state)

    @property
    def now(self) -> Usage:
        return self.usage.setdefault(self.function, Usage())

    # --- invocations ---------------------------------------------------------------------------------
    def invoke(self, function: str, call: Callable[[], Any], cpu_scale: float) -> tuple[Any, float]:
        """Run one invocation of ``function``; returns its result and its billed seconds (CPU times
        ``cpu_scale``, the share of a core its memory setting buys, plus the stated latency of its calls)."""
        self.function = function
        usage = self.now
        wait, self._excluded, logged = usage.wait_s, 0.0, self.logs.bytes
        self._wait0 = wait
        self._scale = cpu_scale
        started = time.process_time()
        result = call()
        cpu = max(0.0, time.process_time() - started - self._excluded)
        usage.log_bytes += self.logs.bytes - logged + PLATFORM_LOG_BYTES
        billed = math.ceil((cpu * cpu_scale + usage.wait_s - wait) * 1000)
        usage.invocations += 1
        usage.cpu_s += cpu
        usage.billed_ms += billed
        return result, billed / 1000

    def concurrently(self, task: Callable[[Any], Any], items: Sequence[Any], /) -> list[Any]:
        """The pipeline's fan-out, as ``wiring.pipeline.Threads`` runs it on Lambda, billed as overlapping: the
        tasks run here one after another (the simulation's fakes are not thread-safe), and the invocation is
        billed what they take at once: no less than all of their CPU (one core at most, and the GIL), nor than
        the longest task, nor than their sum spread over the pool's threads. What overlaps is taken off the
        invocation's wait."""
        usage, results, spans = self.now, [], []
        for item in items:
            wait, excluded, started = usage.wait_s, self._excluded, time.process_time()
            results.append(task(item))
            cpu = max(0.0, time.process_time() - started - (self._excluded - excluded)) * self._scale
            spans.append((cpu, usage.wait_s - wait))
        if len(spans) > 1:
            one_by_one = sum(cpu + wait for cpu, wait in spans)
            at_once = max(sum(cpu for cpu, _ in spans), max(cpu + wait for cpu, wait in spans),
                          one_by_one / self._threads)  # fmt: skip
            usage.wait_s -= one_by_one - at_once
        return results

    def take_puts(self, at: float) -> list[tuple[str, int, float]]:
        """The sitemap files and index put since the last call, stamped with the virtual time ``at``."""
        taken, self.puts = [(name, size, at) for name, size in self.puts], []
        return taken

    def charged(
        self, name: str, call: Callable[[], Any], prepare: Callable[[], Charge], keys: Sequence[str] = ()
    ) -> Any:
        """One AWS call: note what it will be charged on (the state before it), run it, charge it; its CPU and
        ours are kept out of the service's. ``keys``: the DynamoDB partition keys it reads or writes, its units
        shared evenly among them."""
        if self._depth:
            return call()
        started = time.process_time()
        self._depth += 1
        try:
            charge = prepare()
            result = call()
            usage = self.now
            usage.calls[name] += 1
            at = self.sim.clock.now + usage.wait_s - self._wait0
            usage.wait_s += LATENCY_S[name]
            wru, rru = usage.wru, usage.rru
            charge(usage, result)
            if keys:
                self._throttle(usage, keys, usage.wru - wru, usage.rru - rru, at)
            return result
        finally:
            self._depth -= 1
            self._excluded += time.process_time() - started

    def _throttle(self, usage: Usage, keys: Sequence[str], wru: float, rru: float, at: float) -> None:
        """Take a call's units from its keys' limits (each key's share), waiting out throttled attempts."""
        waited = 0.0
        for kind, units in (("write", wru / len(keys)), ("read", rru / len(keys))):
            if not units:
                continue
            for pk in keys:
                if not spread(pk):
                    self.units_by_key[(pk, kind)] += units
                if self.throughput is None:
                    continue
                before = sum(self.throughput.throttled.values())
                wait, served = self.throughput.request(pk, kind, units, at + waited)
                usage.throttled += sum(self.throughput.throttled.values()) - before
                usage.throttle_failed += not served
                waited += wait
                if served:
                    self.sources[(math.floor(at + waited), kind)][(pk.partition("#")[0], self.function)] += units
        usage.wait_s += waited

    # --- DynamoDB ------------------------------------------------------------------------------------
    def _check_coverage(self) -> None:
        """Every ManifestStore method the fake answers itself needs a rule here; the others reach the fake
        client, whose calls are charged. A method added later fails the benchmark instead of costing nothing."""
        public = {n for n, v in inspect.getmembers(ManifestStore, inspect.isfunction) if not n.startswith("_")}
        faked = {n for n in public if n in vars(FakeStore) and n not in FakeStore.CLIENT_LEVEL}
        unknown = faked - set(self._rules())
        if unknown:
            raise RuntimeError(f"bench/meter.py has no cost rule for FakeStore.{sorted(unknown)}")

    def _page_size(self, page: PageRecord | None, store: FakeStore | None = None) -> int:
        if page is None:
            return 0
        write = PageWrite(**{name: getattr(page, name) for name in _PAGE_FIELDS}, record=b"")
        return item_size((store or self.store).aws._page_item(write, page.outbox, page.entry_rank))

    def _read(self, usage: Usage, sizes: list[int | None], consistent: bool = True) -> None:
        """GetItem / BatchGetItem: each item rounded up to 4 KB on its own (a missing item still 1 unit)."""
        usage.rru += sum(_units(s or 0, READ_UNIT) for s in sizes) * (1 if consistent else 0.5)
        usage.items_read += sum(1 for s in sizes if s)

    def _query(self, usage: Usage, sizes: list[int], consistent: bool = True) -> None:
        units, pages = _query_units(sizes, consistent)
        usage.rru += units
        usage.items_read += len(sizes)
        usage.calls["Query"] += pages - 1

    @staticmethod
    def _write(usage: Usage, before: int, after: int, factor: int = 1) -> None:
        usage.wru += _units(max(before, after), KB) * factor

    def _states_sizes(self, section: str, states: list[PageState]) -> list[int]:
        return [manifest_item_size(section, s.key, s.url, s.rank, len(encode_state(s))) for s in states]

    def _file_size(self, published: PublishedFile | None) -> int:
        return 0 if published is None else item_size(file_item(published))

    def _rules(self, store: FakeStore | None = None) -> dict[str, tuple[str, Callable[..., Charge]]]:
        """For each FakeStore method: the DynamoDB operation it stands for, and, given the call's arguments and
        the table before it, how to charge it."""
        store = store or self.store
        pages, files = store.pages, store.file_records

        def outbox_size(name: str, urls: list[str] | None) -> int:  # pk, sk, v, the URLs joined by newlines
            return 0 if urls is None else 2 + 6 + 2 + len(name) + _V + 4 + max(0, sum(_utf8(u) + 1 for u in urls) - 1)

        outbox = store.outbox

        def open_outbox(name: str, urls: list[str]) -> Charge:
            return lambda u, _r: self._write(u, outbox_size(name, outbox.get(name)), outbox_size(name, urls))

        def outbox_open(name: str) -> Charge:
            size = outbox_size(name, outbox.get(name))
            return lambda u, _r: self._read(u, [size or None])

        def close_outbox(name: str) -> Charge:
            size = outbox_size(name, outbox.get(name))
            return lambda u, _r: self._write(u, max(size, 1), 0)  # a delete of nothing still costs a unit

        def outboxes(*_: Any) -> Charge:
            return lambda u, found: self._query(u, [outbox_size(n, urls) for n, urls in found])

        def import_pages(writes: list[PageWrite]) -> Charge:
            def charge(u: Usage, _r: Any) -> None:
                for w in writes:
                    self._write(u, 0, self._page_size(pages.get(w.url)))
                    self._write(u, 0, manifest_item_size(w.section, w.key, w.url, w.rank, len(w.record)))
                u.calls["BatchWriteItem"] += math.ceil(2 * len(writes) / 25) - 1

            return charge

        def entries_for(section: str, wanted: list[tuple[int, str]]) -> Charge:
            def charge(u: Usage, states: list[PageState]) -> None:
                sizes: list[int | None] = list(self._states_sizes(section, states))
                self._read(u, sizes + [None] * (len(wanted) - len(states)))
                u.calls["BatchGetItem"] += math.ceil(len(wanted) / 100) - 1

            return charge

        def file_change(published: PublishedFile, *_: Any, **_kw: Any) -> Charge:
            key = (published.section, published.key_range.start)
            old = files.get(key)
            return lambda u, _r: self._write(u, self._file_size(old), self._file_size(files.get(key)))

        def held_size(url: str, digest: str) -> int:  # pk held#<channel>, sk a SHA-256, v, url, digest, two numbers
            return 2 + 20 + 2 + 64 + _V + 3 + _utf8(url) + 6 + len(digest) + 11 + 6 + 10 + 6

        def held(*_: Any) -> Charge:  # a Query of the channel's partition, eventually consistent
            return lambda u, found: self._query(u, [held_size(url, c.digest) for url, c in found.items()], False)

        def hold(changes: dict[str, Any], *_: Any) -> Charge:
            def charge(u: Usage, _r: Any) -> None:
                for url, change in changes.items():
                    self._write(u, 0, held_size(url, change.digest))
                u.calls["BatchWriteItem"] += math.ceil(len(changes) / 25) - 1

            return charge

        def release(urls: list[str], *_: Any) -> Charge:
            def charge(u: Usage, _r: Any) -> None:
                u.wru += len(set(urls))  # a delete costs the deleted item's size: under 1 KB
                u.calls["BatchWriteItem"] += math.ceil(len(set(urls)) / 25) - 1

            return charge

        def parked_size(parked_id: str, group: str, body: str) -> int:  # pk, sk (with #nn), v, the request's JSON
            return 2 + 6 + 2 + len(parked_id) + 3 + _V + 1 + _utf8(group) + _utf8(body) + 8

        def park(parked_id: str, messages: list[tuple[str, str]]) -> Charge:
            def charge(u: Usage, parked: bool) -> None:
                u.rru += 2  # the import item's ConditionCheck: a read at the transaction's double rate
                if parked:  # one item a request
                    for group, body in messages:
                        self._write(u, 0, parked_size(parked_id, group, body), factor=2)

            return charge

        def parked(*_: Any) -> Charge:
            return lambda u, found: self._query(u, [parked_size(i, g, b) for i, m in found for g, b in m])

        def several_sites(name: str) -> Callable[..., Charge]:
            def refuse(*_: Any) -> Charge:  # prepared before the call: nothing runs uncharged
                raise RuntimeError(f"bench/meter.py meters one site: FakeStore.{name} (several sites) has no cost rule")

            return refuse

        def small_read(*_: Any) -> Charge:
            return lambda u, _r: self._read(u, [60])

        def small_write(*_: Any) -> Charge:
            return lambda u, _r: self._write(u, 0, 60)

        return {
            "get_page": ("GetItem", lambda url: lambda u, page: self._read(u, [self._page_size(page, store)])),
            "open_outbox": ("PutItem", open_outbox),
            "outbox_open": ("GetItem", outbox_open),
            "close_outbox": ("DeleteItem", close_outbox),
            "outboxes": ("Query", outboxes),
            "import_pages": ("BatchWriteItem", import_pages),
            "entries": ("Query", lambda sec, *_: lambda u, found: self._query(u, self._states_sizes(sec, found))),
            "entries_for": ("BatchGetItem", entries_for),
            # A re-section's Scan: eventually consistent pages of the page states (the fake returns those alone).
            "scan_pages": (
                "Scan",
                lambda *_: lambda u, found: self._query(u, [self._page_size(p) for p in found[0]], consistent=False),
            ),
            "files": ("Query", lambda *_: lambda u, found: self._query(u, [self._file_size(f) for f in found])),
            "put_file": ("PutItem", file_change),
            "move_file_state": ("UpdateItem", file_change),
            "mark_unsettled": ("UpdateItem", file_change),
            "clear_pending_index": ("UpdateItem", file_change),
            "delete_file": ("DeleteItem", file_change),
            "next_rebuild": ("UpdateItem", small_write),
            "rebuild_times": ("GetItem", lambda *_: lambda u, _r: self._read(u, [80], consistent=True)),
            "hold_due": ("UpdateItem", small_write),
            "next_index_generation": ("UpdateItem", small_write),
            "index_sha": ("GetItem", small_read),
            "put_index_sha": ("PutItem", small_write),
            "import_running": ("GetItem", small_read),
            "set_import_running": ("PutItem", small_write),  # or DeleteItem when done: one small item either way
            "import_hold": ("GetItem", small_read),
            "begin_import": ("UpdateItem", small_write),
            "end_import": ("DeleteItem", small_write),
            "oldest_parked_us": ("Query", small_read),
            "park": ("TransactWriteItems", park),
            "parked": ("Query", parked),
            "unpark": ("DeleteItem", small_write),
            "held": ("Query", held),
            "hold": ("BatchWriteItem", hold),
            "release": ("BatchWriteItem", release),
            # A site's store (issue 32) is no call: each is metered as the stack's own (_wrap_store). A removal
            # is not metered: it fails here rather than count its calls as free.
            "for_site": ("Query", several_sites("for_site")),
            "delete_site_records": ("BatchWriteItem", several_sites("delete_site_records")),
        }

    def _wrap_store(self, store: FakeStore | None = None) -> None:
        store = store or self.store
        for name, (operation, rule) in self._rules(store).items():
            if name not in vars(FakeStore) or name in FakeStore.CLIENT_LEVEL or name == "for_site":
                continue  # not faked (or not there): it reaches the fake client, which is charged
            original = getattr(store, name)

            def wrapped(
                *args: Any, _o: Any = original, _op: str = operation, _r: Any = rule, _n: str = name, **kw: Any
            ) -> Any:
                return self.charged(_op, lambda: _o(*args, **kw), lambda: _r(*args, **kw), self._keys(_n, args))

            setattr(store, name, wrapped)
        make_site = store.for_site

        def for_site(prefix: str) -> FakeStore:  # a site's store: metered as the stack's own from its first use
            known = prefix in store.sites
            site = make_site(prefix)
            if not known and site is not store:
                self._wrap_store(site)
                self._wrap_client(site)
            return site

        store.for_site = for_site  # type: ignore[method-assign]

    def _keys(self, name: str, args: tuple[Any, ...]) -> list[str]:
        """The partition keys a FakeStore method's call reads or writes (``manifest.py``'s table of items)."""
        partitions = self.store.aws.partitions
        if name == "entries":
            return [pk for pk, _start, _end in range_partitions(args[0], args[1], partitions)]
        if name == "entries_for":
            return [entry_pk(args[0], key, partitions) for key, _url in args[1]] or [f"sec#{args[0]}"]
        if name == "import_pages":
            pks = [entry_pk(w.section, w.key, partitions) for w in args[0]] + [page_pk(w.url) for w in args[0]]
            return pks or ["page#"]
        if name == "get_page":
            return [page_pk(args[0])]
        if name in ("next_rebuild", "rebuild_began_us"):
            return [f"rebuilds#{args[0]}"]
        if name in ("held", "hold", "release"):
            return [f"held#{args[0] if name == 'held' else args[1]}"]
        fixed = {"outbox": ("open_outbox", "outbox_open", "close_outbox", "outboxes"),
                 "files": ("files", "put_file", "move_file_state", "mark_unsettled", "clear_pending_index",
                           "delete_file"),
                 "seq#index": ("next_index_generation",), "index": ("index_sha", "put_index_sha"),
                 "import": ("import_running", "set_import_running", "import_hold", "begin_import", "end_import"),
                 "parked": ("oldest_parked_us", "park", "parked", "unpark")}  # fmt: skip
        for pk, names in fixed.items():
            if name in names:
                return [pk]
        return []  # a Scan: every partition of the table, none of them hot

    def _existing(self, key: dict[str, Any]) -> int:
        """The size of the item under ``key`` now (0 when there is none); a site's item in its own store."""
        pk, store = key["pk"]["S"], self.store
        if pk.startswith("site#"):
            site = "#".join(pk.split("#", 2)[:2]) + "#"
            pk, store = pk.removeprefix(site), self.store.sites.get(site, self.store)
        prefix, _, name = pk.partition("#")
        if prefix == "page":
            return self._page_size(store.pages.get(key["url"]["S"] if "url" in key else name), store)
        if prefix == "sec":
            sk = key["sk"]["S"]
            name = section_of(pk, sk, store.aws.partitions)
            client: FakeDynamoClient = store.aws._client  # type: ignore[assignment]
            found = client.entry(name, sk)  # every attribute it holds (rank, record, current, outbox)
            return 0 if found is None else item_size({"pk": key["pk"], "sk": key["sk"], **found})
        return 60

    def _wrap_client(self, store: FakeStore | None = None) -> None:
        client: FakeDynamoClient = (store or self.store).aws._client  # type: ignore[assignment]
        put, get, batch_write, batch_get = (
            client.put_item,
            client.get_item,
            client.batch_write_item,
            client.batch_get_item,
        )

        def do_put(**kwargs: Any) -> Any:
            item, refused = kwargs["Item"], []

            def attempt() -> Any:
                try:
                    return put(**kwargs)
                except ClientError as exc:
                    if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                        raise
                    refused.append(exc)  # a failed condition is billed as the write would have been
                    return None

            def prepare() -> Charge:
                before = self._existing(item)
                return lambda u, _r: self._write(u, before, item_size(item))

            result = self.charged("PutItem", attempt, prepare, [item["pk"]["S"]])
            if refused:
                raise refused[0]
            return result

        def do_get(**kwargs: Any) -> Any:  # billed on the whole item, whatever the projection
            def prepare() -> Charge:
                size = self._existing(kwargs["Key"])
                return lambda u, _r: self._read(u, [size or None], bool(kwargs.get("ConsistentRead", False)))

            return self.charged("GetItem", lambda: get(**kwargs), prepare, [kwargs["Key"]["pk"]["S"]])

        def do_batch_write(RequestItems: dict[str, Any]) -> Any:  # noqa: N803
            (requests,) = RequestItems.values()

            def charge(u: Usage, _r: Any) -> None:
                for request in requests:
                    self._write(u, 0, item_size(request["PutRequest"]["Item"]))

            keys = [request["PutRequest"]["Item"]["pk"]["S"] for request in requests]
            return self.charged("BatchWriteItem", lambda: batch_write(RequestItems=RequestItems), lambda: charge, keys)

        def do_batch_get(RequestItems: dict[str, Any]) -> Any:  # noqa: N803
            (request,) = RequestItems.values()

            def charge(u: Usage, response: dict[str, Any]) -> None:
                (found,) = response["Responses"].values()
                sizes: list[int | None] = [item_size(i) for i in found]
                missing: list[int | None] = [None] * (len(request["Keys"]) - len(found))
                self._read(u, sizes + missing, bool(request.get("ConsistentRead", False)))

            keys = [key["pk"]["S"] for key in request["Keys"]]
            return self.charged("BatchGetItem", lambda: batch_get(RequestItems=RequestItems), lambda: charge, keys)

        client.put_item = do_put  # type: ignore[method-assign,assignment]
        client.get_item = do_get  # type: ignore[method-assign,assignment]
        client.batch_write_item = do_batch_write  # type: ignore[method-assign]
        client.batch_get_item = do_batch_get  # type: ignore[method-assign]

    # --- S3 and SQS ----------------------------------------------------------------------------------
    def _wrap_s3(self) -> None:
        s3: FakeS3 = self.sim.s3
        s3.watch = lambda _name, _old, _new: None  # the simulation's crawler view parses every put: not needed here
        rules: dict[str, tuple[str, str]] = {"head_object": ("s3:HEAD", "GET"), "get_object": ("s3:GET", "GET"),
                                             "put_object": ("s3:PUT", "PUT"), "delete_object": ("s3:DELETE", "DELETE"),
                                             "get_paginator": ("s3:LIST", "LIST")}  # fmt: skip
        for method, (name, kind) in rules.items():
            original = getattr(s3, method)

            def wrapped(*args: Any, _o: Any = original, _n: str = name, _k: str = kind, **kw: Any) -> Any:
                def charge(u: Usage, _r: Any) -> None:
                    u.s3[_k] += 1
                    body = kw.get("Body")
                    if isinstance(body, bytes):
                        u.bytes_up += len(body)
                        u.wait_s += len(body) / LATENCY_S["s3:bytes/s"]
                        if str(kw.get("Key", "")).startswith("sitemap"):
                            self.puts.append((str(kw["Key"]), len(body)))

                return self.charged(_n, lambda: _o(*args, **kw), lambda: charge)

            setattr(s3, method, wrapped)

    def _wrap_queue(self, state: SimQueueState) -> None:
        add = state.add
        kind = "fifo" if state.fifo else "standard"

        def counted(body: str, attributes: dict[str, str], *args: Any, **kw: Any) -> None:
            size = len(body.encode()) + sum(len(k) + len(v) for k, v in attributes.items())

            def charge(u: Usage, _r: Any) -> None:
                u.sqs[kind] += _units(size, SQS_CHUNK)

            self.charged("sqs:SendMessage", lambda: add(body, attributes, *args, **kw), lambda: charge)

        state.add = counted  # type: ignore[method-assign]
        add_batch = state.add_batch

        def counted_batch(entries: list[tuple[str, str | None, str | None]], now: float) -> None:
            size = sum(len(body.encode()) for body, _, _ in entries)  # SQS bills a batch by its whole payload

            def charge(u: Usage, _r: Any) -> None:
                u.sqs[kind] += _units(size, SQS_CHUNK)

            self.charged("sqs:SendMessageBatch", lambda: add_batch(entries, now), lambda: charge)

        state.add_batch = counted_batch  # type: ignore[method-assign]
        defer = state.defer

        batches: set[float] = set()

        def deferred(receipt: str, until: float) -> bool:  # one entry of a ChangeMessageVisibilityBatch
            def charge(u: Usage, _r: Any) -> None:
                if until not in batches:  # the entries of one call share their moment: one request each
                    batches.add(until)
                    u.sqs[kind] += 1

            return bool(self.charged("sqs:ChangeMessageVisibility", lambda: defer(receipt, until), lambda: charge))

        state.defer = deferred  # type: ignore[method-assign]
