"""Several sites in one stack (issue 32): each host's events publish its own tree and nothing else; a stack with
one SiteUrl keeps exactly its keys, objects and messages; an event for a host that is no site is refused naming
it; the sites' items are read through a cache that a flood of unknown hosts cannot turn into a read each; removing
a site deletes its tree and touches nothing else.

The stack is in memory (the simulation's fakes) and driven through the real handlers; the expected files come from
the independent reference renderer (tests/oracle.py via conftest.reference_site)."""

from __future__ import annotations

import gzip
import json
import random
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from functools import partial
from operator import add
from pathlib import Path
from typing import Any, cast

import pytest

from sitemap_updater.adapters.storage import SitemapBucket
from sitemap_updater.core.site_keys import HostError, check_host, site_dedup, site_group
from sitemap_updater.handlers import ingest as ingest_handler
from sitemap_updater.handlers import rebuild_index as index_handler
from sitemap_updater.handlers import rebuild_shard as rebuild_handler
from sitemap_updater.local.runner import LocalContext
from sitemap_updater.ports import HttpResponse
from sitemap_updater.service.pipeline import Pipeline
from sitemap_updater.service.reconcile import reconcile
from sitemap_updater.service.site_marks import Deadline, Due
from sitemap_updater.service.sites import SiteRefused, add_site, begin_removal, finish_removal
from sitemap_updater.service.sweep import sweep_sites
from sitemap_updater.settings import Settings
from sitemap_updater.sites import SiteConfig, SiteConfigError
from sitemap_updater.wiring.pipeline import current_sites, use_pipeline
from sitemap_updater.wiring.sites import SiteCache, site_pipeline
from tests.conftest import AS_OF_US, BASE
from tests.sim.fakes import FakeS3, FakeSites, FakeStore, SimQueue, SimQueueState
from tests.sim.scheduler import Clock, Faults, Scheduler
from tests.sites_v1_scenario import footprint

NOW = datetime.fromtimestamp(AS_OF_US / 1_000_000, UTC)
DE = "https://www.example.de"
FR = "https://www.example.fr"
FOOTPRINT = Path(__file__).resolve().parents[1] / "data" / "sites_v1_footprint.json"


class Stack:
    """One stack in memory with its own site (BASE) and the sites added to it, run through the real handlers."""

    def __init__(self) -> None:
        self.clock = Clock()
        sched = Scheduler(random.Random(0), self.clock, Faults(random.Random(0), 0.0))
        self.store = FakeStore(sched, self.clock)
        self.s3 = FakeS3(sched)
        self.directory = FakeSites()
        names = ("rebuild", "index", "notify", "dlq")
        self.queues = {name: SimQueueState(name, name != "dlq", 30.0, None) for name in names}
        settings = Settings(
            site_url=BASE, sections="blog", max_urls_per_file=2, manifest_table="t", bucket_name="b",
            rebuild_queue_url="rebuild", index_queue_url="index", notify_queue_url="notify", ingest_dlq_url="dlq",
            indexnow_key="stack-key-0001", ingest_max_receive_count=3,
        )  # fmt: skip

        def queue(name: str) -> SimQueue:
            return SimQueue(sched, self.clock, self.queues[name], name)

        self.pipeline = Pipeline(
            settings=settings,
            store=self.store,
            bucket=SitemapBucket(self.s3, "b", hide="sites/"),  # type: ignore[arg-type]
            rebuild_queue=queue("rebuild"),
            index_queue=queue("index"),
            notify_queue=queue("notify"),
            dead_letters=queue("dlq"),
            clock=lambda: NOW,
            directory=self.directory,
        )
        self.ids = iter(range(1_000_000))

    def add(self, origin: str, **fields: Any) -> SiteConfig:
        return add_site(self.pipeline, self.directory, SiteConfig.parse({"origin": origin, **fields}))

    def _record(self, body: str, group: str | None = None, receives: int = 1) -> dict[str, Any]:
        attributes = {"ApproximateReceiveCount": str(receives), "SentTimestamp": "0", "SenderId": "x",
                      "ApproximateFirstReceiveTimestamp": "0"}  # fmt: skip
        attributes |= {"MessageGroupId": group} if group else {}
        return {"messageId": f"m{next(self.ids)}", "receiptHandle": "r", "body": body, "attributes": attributes,
                "messageAttributes": {}, "md5OfBody": "0" * 32, "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:q", "awsRegion": "us-east-1"}  # fmt: skip

    def send(self, *events: dict[str, Any], receives: int = 1) -> dict[str, Any]:
        records = [self._record(json.dumps(e), receives=receives) for e in events]
        return cast(dict[str, Any], ingest_handler.handler({"Records": records}, LocalContext("ingest")))

    def drain(self) -> None:
        for _ in range(50):
            moved = False
            for name, handler in (("rebuild", rebuild_handler.handler), ("index", index_handler.handler)):
                state = self.queues[name]
                taken, state.messages = state.messages[:10], state.messages[10:]
                if taken:
                    moved = True
                    records = [self._record(m.body, m.group) for m in taken]
                    answer = handler({"Records": records}, LocalContext(name))
                    assert not answer["batchItemFailures"], answer
            if not moved:
                return
        raise AssertionError("the queues never drained")

    def tree(self, prefix: str) -> dict[str, bytes]:
        """The objects under ``prefix`` (a site's tree; "" : the stack's own, without the others')."""
        found = {n: o.data for n, o in self.s3.objects.items() if n.startswith(prefix)}
        return {n: d for n, d in found.items() if prefix or not n.startswith("sites/")}


@pytest.fixture
def stack() -> Iterator[Stack]:
    made = Stack()
    use_pipeline(made.pipeline)
    yield made
    use_pipeline(None)


def upsert(url: str, at: str = "2026-11-21T10:00:00Z") -> dict[str, Any]:
    return {"url": url, "type": "upsert", "occurred_at": at, "lastmod": at}


def _locs(data: bytes) -> list[str]:
    text = gzip.decompress(data).decode() if data[:2] == b"\x1f\x8b" else data.decode()
    return re.findall(r"<loc>([^<]+)</loc>", text)


def test_two_sites_in_one_stack_publish_two_trees_and_no_file_shows_the_others_pages(stack: Stack) -> None:
    stack.add(DE, sections="blog,news")
    stack.add(FR)
    stack.send(upsert(f"{BASE}/blog/a"), upsert(f"{DE}/blog/a"), upsert(f"{DE}/news/n"), upsert(f"{FR}/x"))
    stack.send(upsert(f"{DE}/blog/b"), upsert(f"{DE}/blog/c"), upsert(f"{BASE}/about"))
    stack.drain()
    trees = {origin: stack.tree(prefix) for origin, prefix in
             ((BASE, ""), (DE, "sites/www.example.de/"), (FR, "sites/www.example.fr/"))}  # fmt: skip
    for origin, tree in trees.items():
        shown = {loc for name, data in tree.items() if name.rsplit("/", 1)[-1].startswith("sitemap") for loc in
                 _locs(data)}  # fmt: skip
        assert shown and all(loc.startswith(f"{origin}/") for loc in shown), (origin, sorted(shown))
    de = trees[DE]
    assert sorted(n.removeprefix("sites/www.example.de/") for n in de if "_state" not in n) == [
        "sitemap-blog-00000000.xml.gz", "sitemap-blog-80000000.xml.gz", "sitemap-news-00000000.xml.gz",
        "sitemap.xml",
    ]  # fmt: skip
    index = _locs(de["sites/www.example.de/sitemap.xml"])
    assert index and all(loc.startswith(f"{DE}/sitemap-") for loc in index)  # its index names its files, on its host
    pages = {loc for name, data in de.items() if name.endswith(".xml.gz") for loc in _locs(data)}
    assert pages == {f"{DE}/blog/a", f"{DE}/blog/b", f"{DE}/blog/c", f"{DE}/news/n"}
    assert set(_locs(trees[BASE]["sitemap-blog-00000000.xml.gz"])) == {f"{BASE}/blog/a"}
    # the stack's own site: its v1 layout (root objects, no site in its messages); the others' items, prefixed
    assert "sites/" not in "".join(trees[BASE])
    assert set(stack.store.sites) == {"site#www.example.de#", "site#www.example.fr#"}
    assert stack.store.sites["site#www.example.de#"].sections == {"blog", "news"}
    assert f"{BASE}/blog/a" in stack.store.pages and f"{DE}/blog/a" not in stack.store.pages


def test_each_site_lists_its_own_objects_and_reconciliation_keeps_the_others(stack: Stack) -> None:
    stack.add(DE)
    stack.add(FR)
    stack.send(upsert(f"{DE}/a"), upsert(f"{BASE}/a"), upsert(f"{FR}/a"))
    stack.drain()
    before = {n: o.data for n, o in stack.s3.objects.items()}
    de = site_pipeline(stack.pipeline, stack.directory.sites["www.example.de"])
    own = [name for name, _ in stack.pipeline.bucket.objects()]
    assert own and own == sorted(n for n in before if not n.startswith("sites/"))
    assert stack.pipeline.bucket.names() == own
    listed = [name for name, _ in de.bucket.objects()]
    assert listed == sorted(n.removeprefix("sites/www.example.de/") for n in before if "example.de" in n)
    assert de.bucket.names() == listed and "sitemap.xml" in listed
    later = replace(stack.pipeline, clock=lambda: NOW + timedelta(hours=3))  # every object old enough to be a stray
    assert reconcile(later).stray == [] and reconcile(replace(de, clock=later.clock)).stray == []
    assert {n: o.data for n, o in stack.s3.objects.items()} == before


def test_messages_name_their_site_in_body_group_and_deduplication_id(stack: Stack) -> None:
    stack.add(DE)
    stack.send(upsert(f"{DE}/a"), upsert(f"{BASE}/a"))
    sent = stack.queues["rebuild"].messages
    by_site = {json.loads(m.body).get("site", ""): m for m in sent}
    assert set(by_site) == {"", "www.example.de"}
    assert by_site[""].group == "root" and by_site["www.example.de"].group == "www.example.de#root"
    assert "site" not in json.loads(by_site[""].body)  # the stack's own site's messages are as before sites


def test_groups_and_ids_stay_within_sqs_limits_for_the_longest_host() -> None:
    host = ".".join(["a" * 63] * 3) + "." + "b" * 61  # 253 characters: DNS's longest name
    assert check_host(host) == host
    group = site_group(host, "x" * 58)  # the longest section slug
    assert len(group) <= 128 and group.endswith("#" + "x" * 58)
    assert site_group("www.example.de", "blog") == "www.example.de#blog" and site_group("", "blog") == "blog"
    assert len(site_dedup(host, "f" * 64)) == 64 and site_dedup("", "d") == "d"
    with pytest.raises(HostError):
        check_host(host + "c")


def test_a_v1_stack_keeps_exactly_its_keys_objects_and_messages() -> None:
    # tests/data/sites_v1_footprint.json was written by tests/sites_v1_scenario.py run on main before sites
    assert footprint() == json.loads(FOOTPRINT.read_text(encoding="utf-8"))


def test_an_event_for_a_host_that_is_no_site_is_refused_naming_the_host_and_the_field(stack: Stack) -> None:
    stack.add(DE)
    answer = stack.send(upsert("https://www.example.org/a"), upsert(f"{DE}/a"))
    assert answer == {"batchItemFailures": []}
    (dead,) = stack.queues["dlq"].messages
    assert json.loads(dead.body)["url"] == "https://www.example.org/a"
    assert dead.attributes["reason"].startswith("url: host 'www.example.org' is not a site of this stack")
    assert [json.loads(m.body)["site"] for m in stack.queues["rebuild"].messages] == ["www.example.de"]


def test_a_site_being_removed_takes_no_more_events(stack: Stack) -> None:
    stack.add(DE)
    begin_removal(stack.pipeline, stack.directory, DE)
    current_sites()._cache = SiteCache(stack.directory)  # past the cache's minute
    stack.send(upsert(f"{DE}/a"))
    assert "www.example.de" in stack.queues["dlq"].messages[0].attributes["reason"]
    assert not stack.queues["rebuild"].messages


def test_the_cache_reads_a_host_once_a_minute_and_past_twenty_unknown_hosts_lists_the_sites_once() -> None:
    directory, now = FakeSites(), [0.0]
    directory.put_site(SiteConfig.parse({"origin": DE}))
    listed = []
    listing = directory.list_sites

    def list_sites() -> list[SiteConfig]:
        listed.append(now[0])
        return listing()

    directory.list_sites = list_sites  # type: ignore[method-assign]
    cache = SiteCache(directory, clock=lambda: now[0], ttl_s=60, unknown_reads=20)
    assert cache.get("www.example.de") is not None
    for _ in range(100):
        assert cache.get("www.example.de") is not None
    assert directory.reads == 1
    for number in range(1000):  # no site: each answered, none retried
        assert cache.get(f"host{number}.example") is None
    assert directory.reads == 20 and listed == [0.0]  # the site was one of the twenty read by host; then one list
    assert cache.get("www.example.de") is not None and directory.reads == 20  # from the list
    directory.put_site(SiteConfig.parse({"origin": FR}))
    now[0] = 59.9  # the list is a minute's
    assert cache.get("www.example.fr") is None and listed == [0.0]
    now[0] = 60.0  # a minute on: a site added is found, by its own read again
    assert cache.get("www.example.fr") is not None and directory.reads == 21 and listed == [0.0]


def test_ten_thousand_sites_cost_a_process_one_listing_a_minute_not_a_read_each() -> None:
    directory, now = FakeSites(), [0.0]
    for number in range(10_000):
        directory.put_site(SiteConfig.parse({"origin": f"https://site{number}.example"}))
    cache = SiteCache(directory, clock=lambda: now[0], ttl_s=60, unknown_reads=20)
    for second in range(120):  # two minutes of events, 50 a second, each for another site
        now[0] = float(second)
        for number in range(50):
            assert cache.get(f"site{(second * 50 + number) % 10_000}.example") is not None
    assert (cache.reads, cache.listings) == (40, 2)  # per minute: twenty read by host, then one list


def test_a_flood_of_unknown_hosts_is_refused_at_once_each_naming_its_host_for_one_listing(stack: Stack) -> None:
    stack.add(DE)
    flood, before = [upsert(f"https://host{n}.example/a") for n in range(30)], stack.directory.reads
    answer = stack.send(*flood, upsert(f"{BASE}/a"), upsert(f"{DE}/a"))
    assert stack.directory.reads - before == 20  # the stack's own host is never looked up; then one listing
    assert answer == {"batchItemFailures": []}  # nothing given back: every host was answered
    reasons = [m.attributes["reason"] for m in stack.queues["dlq"].messages]
    assert [r.split("'")[1] for r in reasons] == [f"host{n}.example" for n in range(30)]
    assert all(r.startswith("url: host 'host") and "is not a site of this stack" in r for r in reasons)
    assert stack.queues["rebuild"].messages  # the site's event, answered from the listing, was recorded


def test_removing_a_site_deletes_its_tree_and_touches_nothing_else(stack: Stack) -> None:
    stack.add(DE)
    stack.add(FR)
    stack.send(upsert(f"{DE}/a"), upsert(f"{FR}/a"), upsert(f"{BASE}/a"), upsert(f"{DE}/blog/b"))
    stack.drain()
    before = {n: o.data for n, o in stack.s3.objects.items() if not n.startswith("sites/www.example.de/")}
    fr_store = stack.store.sites["site#www.example.fr#"]
    kept = (dict(stack.store.pages), dict(stack.store.file_records), dict(fr_store.pages), dict(fr_store.file_records))
    site = begin_removal(stack.pipeline, stack.directory, DE)
    removed = finish_removal(site_pipeline(stack.pipeline, site), stack.directory)
    assert removed.objects == 3 and removed.items > 0  # its root file, the file's snapshots and its index
    assert not [n for n in stack.s3.objects if n.startswith("sites/www.example.de/")]
    assert {n: o.data for n, o in stack.s3.objects.items()} == before
    assert (stack.store.pages, stack.store.file_records, fr_store.pages, fr_store.file_records) == kept
    assert stack.store.sites["site#www.example.de#"].item_count() == 0
    assert stack.directory.get_site("www.example.de") is None


def test_a_site_is_configured_by_named_fields(stack: Stack) -> None:
    with pytest.raises(SiteConfigError, match=r"origin: .*must be a scheme and host only"):
        SiteConfig.parse({"origin": "https://www.example.de/de"})
    with pytest.raises(SiteConfigError, match=r"feed_entries: .*; indexnow_key: "):
        SiteConfig.parse({"origin": DE, "indexnow_key": "short", "feed_entries": 5000})
    with pytest.raises(SiteConfigError, match="colour: Extra inputs are not permitted"):
        SiteConfig.parse({"origin": DE, "colour": "blue"})
    assert SiteConfig.parse({"origin": "HTTPS://WWW.Example.DE:443"}).origin == DE
    with pytest.raises(SiteRefused, match="the stack's own site"):
        stack.add(BASE)
    settings = stack.add(DE, sections="blog", text_sitemaps=True).settings(stack.pipeline.settings)
    assert (settings.site_url, settings.sections, settings.text_sitemaps, settings.indexnow_key) == (
        DE,
        "blog",
        True,
        "",
    )
    assert settings.manifest_table == "t" and settings.max_urls_per_file == 2  # the stack's own


class _Robots:
    """robots.txt of each host (a WebGet): what the sweep's check reads."""

    def __init__(self, texts: dict[str, str]) -> None:
        self.texts = texts
        self.asked: list[str] = []

    def get(self, url: str, max_bytes: int, seconds: float) -> HttpResponse:
        self.asked.append(url)
        return HttpResponse(200, {}, self.texts.get(url, ""))


def test_a_site_served_under_the_stack_s_distribution_names_its_files_there(stack: Stack) -> None:
    cdn = "https://d111111abcdef8.cloudfront.net/sites/www.example.de"
    # Given a site served under the stack's distribution (as `sites add --served-at stack` resolves it)
    site = stack.add(DE, sections="blog", served_at=cdn + "/")
    assert site.served_at == cdn and site.files.file_url("sitemap.xml") == f"{cdn}/sitemap.xml"
    # When its pages are published
    stack.send(upsert(f"{DE}/blog/a"), upsert(f"{DE}/x"))
    stack.drain()
    # Then its index names its files there, its pages stay on its own host
    tree = stack.tree("sites/www.example.de/")
    index = _locs(tree["sites/www.example.de/sitemap.xml"])
    assert index and all(loc.startswith(f"{cdn}/sitemap-") for loc in index)
    assert sorted(loc for name, data in tree.items() if name.endswith(".xml.gz") for loc in _locs(data)) == [
        f"{DE}/blog/a",
        f"{DE}/x",
    ]
    # And a site on its own host (the default) names them at its root; a v1 item (no served_at) reads as that
    assert SiteConfig.parse({"origin": FR}).files.file_url("sitemap.xml") == f"{FR}/sitemap.xml"
    with pytest.raises(SiteConfigError, match="served_at: "):
        SiteConfig.parse({"origin": FR, "served_at": f"{cdn}?x=1"})


def test_the_sweep_checks_robots_txt_hourly_for_the_stack_s_own_site_and_daily_for_each_site(stack: Stack) -> None:
    cdn = "https://d111111abcdef8.cloudfront.net/sites/www.example.de"
    sites = [stack.add(DE, served_at=cdn), stack.add(FR)]
    settings = stack.pipeline.settings.model_copy(update={"robots_check": True})
    robots = _Robots({
        f"{BASE}/robots.txt": f"Sitemap: {BASE}/sitemap.xml\n",
        f"{DE}/robots.txt": f"Sitemap: {cdn}/sitemap.xml\n",  # the cross-submission
        f"{FR}/robots.txt": f"Sitemap: {BASE}/sitemap.xml\n",  # names another site's index only
    })  # fmt: skip
    warnings = []
    for hour in range(24):  # a day of hourly sweeps, both sites due all day
        pipeline = replace(stack.pipeline, settings=settings, clock=partial(add, NOW, timedelta(hours=hour)))
        dues = [Due("", pipeline), *(Due(site.host, site_pipeline(pipeline, site), 1) for site in sites)]
        warnings += sweep_sites(dues, None, robots, Deadline.within(300.0)).robots_warnings
    assert Counter(robots.asked) == {f"{BASE}/robots.txt": 24, f"{DE}/robots.txt": 1, f"{FR}/robots.txt": 1}
    assert warnings == [f"robots.txt does not name the sitemap index; add the line 'Sitemap: {FR}/sitemap.xml'"]


def test_a_site_s_notifier_features_need_the_stack_s_and_its_key_is_no_sitemap_name(stack: Stack) -> None:
    with pytest.raises(SiteConfigError, match="indexnow_key: must not start with 'sitemap'"):
        SiteConfig.parse({"origin": DE, "indexnow_key": "sitemap-blog-00000000"})
    with pytest.raises(SiteRefused, match="a recent-changes feed needs the stack's RecentChangesFeed"):
        stack.add(DE, feed_entries=10)
    quiet = replace(stack.pipeline, settings=stack.pipeline.settings.model_copy(update={"indexnow_key": ""}))
    with pytest.raises(SiteRefused, match="an IndexNow key needs the stack's IndexNowKey"):
        add_site(quiet, stack.directory, SiteConfig.parse({"origin": DE, "indexnow_key": "site-key-0002"}))
    assert stack.add(DE, indexnow_key="site-key-0002").indexnow_key == "site-key-0002"
    # and a host with a port would put a ':' in its keys, which the grants' wildcards are not documented to cross
    with pytest.raises(SiteRefused, match="on a port other than its scheme's default"):
        stack.add("https://www.example.fr:8443")


def test_a_removal_waits_for_the_cache_and_the_longest_run_of_a_function_that_works_for_a_site() -> None:
    # The functions that route by site (template.yaml): a removal deleting sooner than the cache's lifetime plus
    # the longest of their timeouts can leave what one of them writes after the deletion (make soak found it)
    from sitemap_updater.local.stack import load_template
    from sitemap_updater.service.sites import LONGEST_SITE_FUNCTION_S, REMOVAL_WAIT_S
    from sitemap_updater.wiring.sites import CACHE_SECONDS
    from tests.sim.world import TEMPLATE

    resources = load_template(TEMPLATE)["Resources"]
    routed = ("IngestFunction", "RebuildShardFunction", "RebuildIndexFunction", "SweepFunction", "UpkeepFunction",
              "ReconcileFunction", "NotifyFunction")  # fmt: skip
    longest = max(int(resources[name]["Properties"]["Timeout"]) for name in routed)
    assert LONGEST_SITE_FUNCTION_S == longest == 300
    assert CACHE_SECONDS + longest == REMOVAL_WAIT_S
