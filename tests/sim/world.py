"""One simulated sequence: random page events through the real handlers on in-memory AWS, with faults,
duplicated, delayed and reordered deliveries, concurrent invocations and SQS redelivery in virtual time;
then the checks every sequence must pass."""

from __future__ import annotations

import contextlib
import gzip
import importlib.util
import io
import json
import logging
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import lru_cache, partial
from pathlib import Path
from types import ModuleType
from typing import Any

from lxml import etree

from sitemap_updater.adapters.manifest import sent_pk
from sitemap_updater.adapters.storage import SitemapBucket
from sitemap_updater.core.feed import FEED_NAME
from sitemap_updater.core.moments import to_micros
from sitemap_updater.core.sharding import INDEX_NAME, Limits, text_twin
from sitemap_updater.core.site_keys import SITE_OBJECT_PREFIX
from sitemap_updater.core.snapshots import STATE_PREFIX as SNAPSHOT_PREFIX
from sitemap_updater.core.snapshots import written_us as snapshots_written
from sitemap_updater.local.iam import Names, resolve
from sitemap_updater.local.runner import LocalContext
from sitemap_updater.local.stack import load_template
from sitemap_updater.ports import ExecutionState, ImportHold
from sitemap_updater.service.bootstrap_release import release as bootstrap_release
from sitemap_updater.service.ingest import IngestResult, Outcome
from sitemap_updater.service.notify import Notifiers
from sitemap_updater.service.pipeline import Pipeline
from sitemap_updater.service.sites import REMOVAL_WAIT_S, add_site, begin_removal, finish_removal
from sitemap_updater.settings import Settings
from sitemap_updater.sites import SiteConfig
from sitemap_updater.wiring.pipeline import use_executions, use_pipeline
from sitemap_updater.wiring.sites import SiteCache, Sites, site_pipeline
from tests import oracle
from tests.conftest import AS_OF_US, BASE, SECTIONS
from tests.sim.events import REFUSED_URL, Events, generate
from tests.sim.fakes import FakeIndexNow, FakeS3, FakeSites, FakeStore, Message, S3Object, SimQueue, SimQueueState
from tests.sim.oracle import expected_site
from tests.sim.scheduler import Clock, Faults, LambdaDied, Scheduler, Task
from tests.sim.sites import SimSite, Tree, body_host, foreign_hosts, plan

TEMPLATE = Path(__file__).resolve().parents[2] / "template.yaml"
ACCOUNT = "123456789012"
_SIM_EXECUTION = f"arn:aws:states:us-east-1:{ACCOUNT}:execution:sim-bootstrap:sim"
NS = {"s": "http://www.sitemaps.org/schemas/sitemap/0.9"}
INDEX_FILE = re.compile(r"sitemap(-index-\d+)?\.xml")  # sitemap.xml and the further index files
XSD = Path(__file__).resolve().parents[3] / "shared" / "xsd"  # the official schemas, beside the repository


@lru_cache(maxsize=1)
def _schemas() -> tuple[etree.XMLSchema, etree.XMLSchema] | None:
    """sitemaps.org's and Google's schemas (a urlset with every extension, and the index), if they are there."""
    if not (XSD / "all-urlset.xsd").exists():
        return None
    return etree.XMLSchema(etree.parse(str(XSD / "all-urlset.xsd"))), etree.XMLSchema(
        etree.parse(str(XSD / "siteindex.xsd"))
    )


@dataclass(frozen=True)
class Config:
    """The shape of one sequence; the seed picks everything else."""

    seed: int
    urls: int = 20
    events: int = 40
    fault_rate: float = 0.03
    busy_rate: float = 0.05
    containers: int = 2
    span_s: float = 600.0
    max_urls: int | None = None  # per file; by default the seed picks 3, 4, 6 or 10
    max_files_per_index: int | None = None  # by default 2 in a quarter of the seeds (several index files), else 50,000
    failing_rate: float = 0.3  # how often the sequence has an event that fails on every receive
    section_partitions: int | None = None  # SectionPartitions; by default 4 in a quarter of the seeds, else 1
    notifiers: bool = True  # IndexNow on (and the feed in a seventh) but in a thirteenth; False: nothing notifies
    # Sites added at run time beside the stack's own (tests/sim/sites.py): each present from the start, added or
    # removed during the sequence, with its own events. 0: the stack's own site alone, as before sites.
    sites: int = 0
    removal_wait_s: float = REMOVAL_WAIT_S  # `sites remove`: from marking a site removing to deleting its tree

    @classmethod
    def for_soak(cls, seed: int) -> Config:
        """``make soak``'s sequence of ``seed``: in a third of the seeds (a multiple of 3) two or three sites beside
        the stack's own; the other seeds are the single-site sequences they always were."""
        return cls(seed, sites=0 if seed % 3 else 2 + (seed // 3) % 2)


@dataclass
class Result:
    """What happened in one sequence, and every broken invariant."""

    seed: int
    events_sent: int = 0
    invocations: int = 0
    invocations_by_function: dict[str, int] = field(default_factory=dict)  # logical name -> invocations
    steps: int = 0
    virtual_s: float = 0.0
    faults: dict[str, int] = field(default_factory=dict)
    s3_puts: int = 0
    posts: int = 0
    sites: int = 1  # how many sites the sequence ran (the stack's own and those added at run time)
    removed_sites: int = 0  # sites removed during the sequence
    dead_lettered: int = 0  # events that failed on every receive, in the DLQ with their reason
    # Seconds from ingest accepting a change to the CDN surely serving it: the put of the file that shows it,
    # plus the cache lifetime (how long the CDN may still serve the bytes before).
    freshness_s: list[float] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)


@dataclass
class _Function:
    name: str
    handler: str
    queue: SimQueueState | None
    batch_size: int
    containers: list[ModuleType]
    busy: int = 0
    arn: str = ""
    scheduled: bool = False  # run by a Schedule event (the hourly sweep and upkeep, the bootstrap's check)
    event: dict[str, Any] = field(default_factory=dict)  # what its schedule sends (its Input)


@lru_cache(maxsize=1)
def _template() -> dict[str, Any]:
    """The parsed template, once per process (it is only read)."""
    return load_template(TEMPLATE)


_SHOWN = ("added", "updated")


def _alarm_on(visible: int) -> bool:
    """The template's ingest dead-letter alarm, evaluated on the queue's visible messages."""
    alarm = _template()["Resources"]["IngestDeadLetterAlarm"]["Properties"]
    assert alarm["MetricName"] == "ApproximateNumberOfMessagesVisible"
    assert alarm["ComparisonOperator"] == "GreaterThanThreshold"
    return visible > float(alarm["Threshold"])


def _load_copy(handler: str, alias: str) -> ModuleType:
    """A fresh copy of a handler module: one Lambda container, with module state of its own."""
    module_name = handler.rsplit(".", 1)[0]
    spec = importlib.util.find_spec(module_name)
    assert spec is not None and spec.origin is not None
    copy_spec = importlib.util.spec_from_file_location(alias, spec.origin)
    assert copy_spec is not None and copy_spec.loader is not None
    module = importlib.util.module_from_spec(copy_spec)
    copy_spec.loader.exec_module(module)
    return module


def _resolve(value: Any, params: dict[str, str], physical: dict[str, str], conditions: dict[str, Any]) -> str:
    """A function environment value: a literal, or a ``!Ref`` to a parameter or a resource, or an ``!If`` of them,
    resolved as the local stack resolves the template."""
    return str(resolve(value, Names(params, physical, {}, conditions)))


_Running = tuple[_Function, ModuleType, list[Message]]


def _invoke(container: ModuleType, records: list[dict[str, Any]], context: LocalContext) -> object:
    handler = container.handler
    return handler({"Records": records}, context)


def _sweep(container: ModuleType, context: LocalContext, event: dict[str, Any]) -> object:
    handler = container.handler
    return handler(event, context)


class Simulation:
    """Builds the stack from ``template.yaml`` in memory and runs one sequence."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.rng = random.Random(config.seed)
        self.clock = Clock()
        self.faults = Faults(random.Random(config.seed * 7919 + 1), config.fault_rate)
        self.sched = Scheduler(random.Random(config.seed * 104_729 + 2), self.clock, self.faults)
        self.result = Result(config.seed)
        self.max_urls = self.rng.choice([3, 4, 6, 10])
        self.notifiers = config.notifiers and config.seed % 13 != 6
        if config.max_urls is not None:
            self.max_urls = config.max_urls
        # Index files that may name 2 files in a quarter of the sequences, so that sites get several of them.
        self.max_files_per_index = 2 if config.seed % 4 == 0 else 50_000
        if config.max_files_per_index is not None:
            self.max_files_per_index = config.max_files_per_index
        self._parsed: dict[str, dict[str, bytes]] = {}
        self.ever: dict[str, set[bytes]] = {}
        self._crashed: set[str] = set()
        self._last_shown: dict[str, bytes] = {}
        self._shown_changes: Counter[str] = Counter()
        self._shown_removals: Counter[str] = Counter()  # how often no file showed a page any more
        self._accepted_at: dict[str, list[float]] = {}  # URL -> when ingest accepted a change of it
        self._shown_at: list[tuple[str, float]] = []  # (URL, when a file first showed its new content)
        self.sim_sites: list[SimSite] = []
        if config.sites:
            self.sim_sites = plan(config.seed, config.sites, config.urls, config.events, config.span_s)
        self.result.sites = 1 + len(self.sim_sites)
        # What a crawler of each site's tree saw (every index put: when, and the files they name), by prefix.
        self.trees = {"": Tree("", BASE, BASE.removeprefix("https://"))}
        self.trees |= {s.prefix: Tree(s.prefix, s.origin, s.host) for s in self.sim_sites}
        self._hosts = {tree.host for tree in self.trees.values()}
        self._side: dict[Task, str] = {}  # tasks that are no invocation (a removal run by the CLI): their names
        # Drift made out of band once the site has settled, in a third of the sequences (reconciliation repairs it):
        # names deleted or changed by it until they are put again, and whether it is still to come or repaired.
        self._drift_due = config.seed % 3 == 0
        self._drifted: set[str] = set()
        self._injecting = False
        self._drift_found = False
        # An import or bootstrap running for a while in a fifth of the sequences: rebuild requests are parked, and
        # its end (retried until it completes, as the state machine does) sends them again.
        self._import_window: tuple[float, float] | None = None
        if config.seed % 5 == 2:
            timing = random.Random(config.seed * 31 + 5)
            start = timing.uniform(0, config.span_s)
            self._import_window = (start, start + timing.uniform(10, 600))
        self._import_state = 0  # 0: not begun, 1: running, 2: ended
        self._build_stack()

    # --- set-up from the template ----------------------------------------------------------------------
    def _build_stack(self) -> None:
        template = _template()
        resources: dict[str, Any] = template["Resources"]
        physical = {logical: f"sim-{logical}" for logical in resources}
        defaults = {key: str(spec.get("Default", "")) for key, spec in template.get("Parameters", {}).items()}
        conditions: dict[str, Any] = template.get("Conditions", {})
        self.queues: dict[str, SimQueueState] = {}
        for logical, spec in resources.items():
            if spec["Type"] != "AWS::SQS::Queue":
                continue
            props = spec.get("Properties", {})
            fifo = bool(props.get("FifoQueue", False))
            policy = props.get("RedrivePolicy")
            max_receive = int(policy["maxReceiveCount"]) if policy else None
            visibility = float(props.get("VisibilityTimeout", 30))
            delay = float(_resolve(props.get("DelaySeconds", 0), defaults, {}, conditions))
            self.queues[logical] = SimQueueState(logical, fifo, visibility, max_receive, delay=delay)
            suffix = ".fifo" if fifo else ""
            physical[logical] = f"https://sqs.us-east-1.amazonaws.com/{ACCOUNT}/sim-{logical}{suffix}"
        for logical, spec in resources.items():
            policy = spec.get("Properties", {}).get("RedrivePolicy") if spec["Type"] == "AWS::SQS::Queue" else None
            if policy:
                self.queues[logical].dead_letter = self.queues[policy["deadLetterTargetArn"]["Fn::GetAtt"][0]]
        params = {key: str(spec.get("Default", "")) for key, spec in template.get("Parameters", {}).items()}
        params.update(
            SiteUrl=BASE, MaxUrlsPerFile=str(self.max_urls), IndexNowKey="sim-indexnow-key-0001", Sections=SECTIONS
        )
        params.update(MaxFilesPerIndex=str(self.max_files_per_index))
        params.update(TextSitemaps="true" if self.config.seed % 5 == 2 else "false")  # a fifth of the sequences
        params.update(RecentChangesFeed="5" if self.config.seed % 7 == 3 else "0")  # a seventh: a feed of 5 pages
        if not self.notifiers:  # IndexNow, the feed and Search Console all off: the files alone
            params.update(IndexNowKey="", RecentChangesFeed="0")
        # A quarter: the blog section slow (held up to 15 minutes less the budget) and the shop fast (FreshnessSeconds'
        # per-section override); the rest the template's default.
        params.update(SectionFreshness="blog=900,shop=30" if self.config.seed % 4 == 1 else "")
        # A quarter: each section's entries spread over 4 partition keys (every write is checked to land under the
        # key its readers query, tests/sim/dynamo.py).
        spread = "4" if self.config.seed % 4 == 2 else params["SectionPartitions"]
        params.update(SectionPartitions=str(self.config.section_partitions or spread))
        variables = template["Globals"]["Function"]["Environment"]["Variables"]
        env = {key: _resolve(value, params, physical, conditions) for key, value in variables.items()}
        env.update(NOTIFY_DRY_RUN="false", INDEXNOW_ENDPOINT="https://indexnow.sim.invalid/indexnow")
        # A third: any two changed pages in a quiet section make its rebuild wait for the rest of a burst (given
        # back to the queue once), which a sequence's few events otherwise rarely do.
        if self.config.seed % 3 == 1:
            env.update(REBUILD_SETTLE_PAGES="2")
        self.parameters = params  # as deployed: the bench resolves the event sources with them
        settings = Settings.from_env(env)
        self.store = FakeStore(self.sched, self.clock, settings.section_partitions)
        self.store.refused_urls.add(REFUSED_URL)
        self.s3 = FakeS3(self.sched, watch=self._watch)
        self.http = FakeIndexNow(self.sched, random.Random(self.config.seed * 31 + 3), self.config.busy_rate)
        self.directory = FakeSites(self.sched)
        by_url = {physical[k]: q for k, q in self.queues.items()}

        def queue(url: str) -> SimQueue:
            return SimQueue(self.sched, self.clock, by_url[url], url)

        start = datetime.fromtimestamp(AS_OF_US / 1_000_000, UTC)
        self.pipeline = Pipeline(
            settings=settings,
            store=self.store,
            # As deployed (wiring/pipeline.py): the stack's own site's listings leave out the other sites' trees.
            bucket=SitemapBucket(self.s3, settings.bucket_name, hide=SITE_OBJECT_PREFIX),  # type: ignore[arg-type]
            rebuild_queue=queue(settings.rebuild_queue_url),
            index_queue=queue(settings.index_queue_url),
            notify_queue=queue(settings.notify_queue_url),
            dead_letters=queue(settings.ingest_dlq_url),
            clock=lambda: start + timedelta(seconds=self.clock.now),
            observe=self._observe,
            directory=self.directory,
        )
        self.functions: list[_Function] = []
        for logical, spec in sorted(resources.items()):
            if spec["Type"] != "AWS::Serverless::Function":
                continue
            handler = spec["Properties"]["Handler"]
            source: dict[str, Any] = next(iter(spec["Properties"].get("Events", {}).values()), {"Type": "None"})
            queue_state = None
            batch = 1
            enabled = source["Type"] != "SQS" or _resolve(source["Properties"].get("Enabled", True), params, physical,
                                                           conditions) == "True"  # fmt: skip
            if source["Type"] == "SQS" and enabled:  # a disabled event source mapping polls nothing
                queue_state = self.queues[source["Properties"]["Queue"]["Fn::GetAtt"][0]]
                batch = int(source["Properties"].get("BatchSize", 10))
            containers = [_load_copy(handler, f"sim_{logical}_{i}") for i in range(self.config.containers)]
            arn = f"arn:aws:sqs:us-east-1:{ACCOUNT}:{queue_state.name}" if queue_state else ""
            scheduled = source["Type"] == "Schedule"
            scheduled_event = json.loads(source["Properties"].get("Input", "{}")) if scheduled else {}
            self.functions.append(_Function(logical, handler, queue_state, batch, containers, arn=arn,
                                            scheduled=scheduled, event=scheduled_event))  # fmt: skip
        ingest = next(f.queue for f in self.functions if f.handler.endswith("ingest.handler"))
        assert ingest is not None and ingest.dead_letter is not None
        self.ingest_queue: SimQueueState = ingest

    # --- what a crawler sees ---------------------------------------------------------------------------
    def _entries(self, data: bytes) -> dict[str, bytes]:
        key = str(hash(data))
        if key not in self._parsed:
            root = etree.fromstring(gzip.decompress(data))
            self._parsed[key] = {
                (u.findtext("s:loc", namespaces=NS) or ""): etree.tostring(u) for u in root.iterfind("s:url", NS)
            }
        return self._parsed[key]

    def _tree(self, name: str) -> tuple[Tree, str]:
        """The site tree an object is in, and its name there."""
        if name.startswith("sites/"):
            prefix = "/".join(name.split("/", 2)[:2]) + "/"
            if prefix in self.trees:
                return self.trees[prefix], name[len(prefix) :]
            self.result.violations.append(f"t={self.clock.now:.2f}: {name} was written under no site's tree")
        return self.trees[""], name

    def _tree_objects(self, tree: Tree) -> dict[str, S3Object]:
        """The objects of one site's tree, by their names there (the stack's own: all but sites/)."""
        if not tree.prefix:
            return {n: o for n, o in self.s3.objects.items() if not n.startswith("sites/")}
        return {n[len(tree.prefix) :]: o for n, o in self.s3.objects.items() if n.startswith(tree.prefix)}

    def _removing(self, tree: Tree) -> bool:
        return any(s.removing for s in self.sim_sites if s.prefix == tree.prefix) if tree.prefix else False

    def _watch(self, full: str, old: S3Object | None, new: S3Object | None) -> None:
        if self._injecting:
            return  # drift made out of band (_drift): reconciliation must find and repair it
        tree, name = self._tree(full)
        if new is not None and len(self._hosts) > 1:  # no site's file names a page of another site's host
            foreign = foreign_hosts(full, new.data, tree.host, self._hosts)
            if foreign:
                self.result.violations.append(f"t={self.clock.now:.2f}: {full} names URLs on {sorted(foreign)}")
        self._drifted.discard(full)
        if self._removing(tree):  # `sites remove` deletes its tree: no crawler's view is checked any more
            return
        objects = self._tree_objects(tree) if tree.prefix or self.sim_sites else self.s3.objects
        if new is not None:
            self.result.s3_puts += 1
            if old is not None and new.seq <= old.seq and not name.startswith(SNAPSHOT_PREFIX):
                self.result.violations.append(f"{full}: version {new.seq} written over {old.seq}")
            if name.endswith(".xml.gz"):
                for url, entry in self._entries(new.data).items():
                    self.ever.setdefault(url, set()).add(entry)
                    if self._last_shown.get(url) != entry:  # a new content (moving files is not a change)
                        self._last_shown[url] = entry
                        self._shown_changes[url] += 1
                        self._shown_at.append((url, self.clock.now))
        if name.endswith(".xml.gz") and old is not None and not name.startswith(SNAPSHOT_PREFIX):
            # A page no file shows any more was removed: shown again, even with the same content, it is a new
            # change that is announced again (a page deleted and published again).
            kept = self._entries(new.data) if new is not None else {}
            for url in set(self._entries(old.data)) - set(kept):
                others = (o for n, o in objects.items()
                          if n.endswith(".xml.gz") and n != name and not n.startswith(SNAPSHOT_PREFIX))  # fmt: skip
                if (
                    not any(url in self._entries(o.data) for o in others)
                    and self._last_shown.pop(url, None) is not None
                ):
                    self._shown_removals[url] += 1
        if INDEX_FILE.fullmatch(name):  # sitemap.xml or a further index file: what the index files name changed
            if new is None:
                tree.index_files.pop(name, None)
            else:
                tree.index_files[name] = frozenset(
                    (loc.text or "").removeprefix(f"{tree.base}/")
                    for loc in etree.fromstring(new.data).iterfind("s:sitemap/s:loc", NS)
                )
                if not tree.index_files[name]:  # the schema: an index names at least one sitemap
                    self.result.violations.append(f"t={self.clock.now:.2f}: {full} was put naming no sitemap")
            listed = frozenset().union(*tree.index_files.values())
            # No index left: the site has no pages; a crawler finds none once the CDN's cached copy has expired.
            tree.indexes.append((self.clock.now, listed))
            # A page only files the index no longer names show (their section emptied, the files retired) is gone
            # for a crawler: shown again, even with the same content, it is a new change announced again.
            shown = {url for n in listed if n in objects for url in self._entries(objects[n].data)}
            host = f"{tree.base}/"
            for url in [u for u in self._last_shown if u not in shown and u.startswith(host)]:
                self._last_shown.pop(url)
                self._shown_removals[url] += 1
        missing = frozenset().union(*tree.index_files.values()) - set(objects)
        for named in sorted(n for n in missing if tree.prefix + n not in self._drifted):
            self.result.violations.append(f"t={self.clock.now:.2f}: the index names missing {tree.prefix}{named}")
        store = self.store.for_site(tree.prefix and f"site#{tree.host}#")
        if new is None and snapshots_written(name) is not None:
            naming = [f.name for f in store.file_records.values() if f.snapshot and f.snapshot.key == name]
            if naming:
                self.result.violations.append(f"t={self.clock.now:.2f}: {full} deleted while {naming} name it")
        if new is None and name.endswith(".xml.gz"):
            # The CDN may serve any index put within the cache lifetime before now: none of them may name it.
            lifetime = self.pipeline.settings.cdn_max_age_seconds
            cached = [names for at, names in tree.indexes if at >= self.clock.now - lifetime]
            cached += [names for at, names in tree.indexes[-1:] if at < self.clock.now - lifetime]
            if any(name in names for names in cached):
                self.result.violations.append(f"t={self.clock.now:.2f}: {full} deleted while a cached index names it")

    # --- running ---------------------------------------------------------------------------------------
    def _events(self) -> Events:
        config = self.config
        return generate(self.rng, config.urls, config.events, config.span_s, config.failing_rate)

    def run(self) -> Result:
        events = self._events()
        sends = list(events.sends)
        if self.sim_sites:  # in time order; the stack's own events first among those sent at the same moment
            sends = sorted(sends + [send for site in self.sim_sites for send in site.events.sends], key=lambda s: s[0])
        self.result.events_sent = len(sends)
        running: dict[Task, _Running] = {}
        notifiers = Notifiers(self.http, None, sleep=self._wait, monotonic=lambda: self.clock.now)
        # The functions' cache of the sites' items runs on the virtual clock (60 s, wiring/sites.py).
        use_pipeline(self.pipeline, notifiers, Sites(self.pipeline, SiteCache(self.directory, lambda: self.clock.now)))
        use_executions(self)  # the bootstrap's check asks the sequence's import window for its execution
        service = logging.getLogger("sitemap-updater")
        level = service.level
        service.setLevel(logging.CRITICAL)
        next_sweep = 3600.0
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                while True:
                    now = self.clock.now
                    self._import_step(now)
                    self._sites_step(now)
                    while sends and sends[0][0] <= now:
                        _, body, delay = sends.pop(0)
                        self.ingest_queue.add(body, {}, None, None, now, delay)
                    startable = [f for f in self.functions if f.queue is not None and f.busy < len(f.containers)]
                    started = False
                    if not running or self.rng.random() < 0.3:
                        started = self._start(self.rng.sample(startable, len(startable)), running)
                    if (running or self._side) and not started:
                        task = self.sched.step()
                        self.result.steps += 1
                        if task is not None and task in self._side:
                            self._side_done(task)
                        elif task is not None:
                            self._finish(task, running.pop(task))
                        continue
                    if started:
                        continue
                    # Idle: nothing visible now. Move virtual time on, or finish with the hourly sweep.
                    upcoming = [t for t in (sends[0][0] if sends else None, self._import_due(), self._sites_due(), *(
                        q.next_available(now) for q in self.queues.values()
                    )) if t is not None and t > now]  # fmt: skip
                    if upcoming:
                        self.clock.now = min([*upcoming, next_sweep])
                        if self.clock.now >= next_sweep:
                            self._sweep(faults=True)
                            next_sweep += 3600.0
                        continue
                    if self._sweep(faults=False) == 0:
                        gone = {site.pk_prefix for site in self.sim_sites if site.removing}  # nothing runs for it
                        stores = [self.store, *(st for p, st in self.store.sites.items() if p not in gone)]
                        unnamed = [
                            f.unnamed_us for st in stores for f in st.file_records.values() if f.state == "unnamed"
                        ]
                        if not unnamed and self._drift_due:
                            self._drift()  # the next hourly run of reconciliation finds and repairs it
                            self.clock.now = max(self.clock.now, next_sweep)
                            next_sweep += 3600.0
                            continue
                        if not unnamed and not any(st.outbox for st in stores) and self._import_state != 1:
                            break
                        # An outbox left open by a batch that died is the sweep's once it is old enough (the next
                        # hourly run); files the index stopped naming wait out their grace.
                        self.clock.now = max(self.clock.now, next_sweep)
                        next_sweep += 3600.0
        finally:
            service.setLevel(level)
            use_pipeline(None)
            use_executions(None)
        self.result.virtual_s = self.clock.now
        self.result.removed_sites = sum(1 for site in self.sim_sites if site.removing)
        self.result.faults = dict(self.faults.injected)
        self.result.posts = len(self.http.posts)
        self._check(events)
        return self.result

    def _drift(self) -> None:
        """Out of band, as an operator or a lifecycle rule might: delete one published sitemap file, overwrite
        another, delete the index, and leave a sitemap file no record names (written two hours ago)."""
        self._drift_due = False
        files = sorted(n for n in self.s3.objects if n.startswith("sitemap-") and n.endswith(".xml.gz"))
        empty = gzip.compress(f'<urlset xmlns="{NS["s"]}"></urlset>\n'.encode())
        self._injecting = True
        try:
            for name in files[:1] + [INDEX_NAME] * (INDEX_NAME in self.s3.objects):
                del self.s3.objects[name]
                self._drifted.add(name)
            for name in files[1:2]:
                self.s3.objects[name] = S3Object(empty, '"drift"', 0, self.clock.now)
                self._drifted.add(name)
            self.s3.objects["sitemap-stray-00000000.xml.gz"] = S3Object(empty, '"stray"', 0, self.clock.now - 7200)
        finally:
            self._injecting = False

    # --- sites added and removed at run time (tests/sim/sites.py) ----------------------------------------------
    def _site_config(self, site: SimSite) -> SiteConfig:
        """A site configured as the stack's own (so the same reference models hold), with its own IndexNow key."""
        settings = self.pipeline.settings
        return SiteConfig.parse({
            "origin": site.origin, "sections": settings.sections, "text_sitemaps": settings.text_sitemaps,
            "feed_entries": settings.feed_entries,
            "indexnow_key": f"sim-key-{site.host.replace('.', '-')}" if settings.indexnow_key else "",
        })  # fmt: skip

    def _sites_due(self) -> float | None:
        due = [s.added_at for s in self.sim_sites if not s.added]
        for site in (s for s in self.sim_sites if s.removed_at is not None and not s.deleting):
            assert site.removed_at is not None
            due.append(site.removed_at + self.config.removal_wait_s * site.removing)
        return min(due, default=None)

    def _sites_step(self, now: float) -> None:
        """``sites add`` and ``sites remove`` as the CLI runs them, when their moment has come: the removal marks the
        site, waits ``removal_wait_s``, then deletes its tree beside the invocations (each of its AWS calls an
        interleaving point), without faults (an operator runs a failed removal again)."""
        for site in self.sim_sites:
            if not site.added and site.added_at <= now:
                add_site(self.pipeline, self.directory, self._site_config(site))
                site.added = True
            if site.added and site.removed_at is not None and not site.removing and site.removed_at <= now:
                site.removing = True
                site.marked = begin_removal(self.pipeline, self.directory, site.origin)
            if site.marked is not None and not site.deleting and now >= site.marked_due(self.config.removal_wait_s):
                site.deleting = True
                work = partial(finish_removal, site_pipeline(self.pipeline, site.marked), self.directory)
                self._side[self.sched.spawn(f"sites-remove-{site.host}", work, False)] = site.host

    def _side_done(self, task: Task) -> None:
        host = self._side.pop(task)
        if task.error is not None:
            self.result.violations.append(f"sites remove {host} failed: {task.error!r}")
        for site in self.sim_sites:
            site.removed = site.removed or site.host == host

    def _wait(self, seconds: float) -> None:
        """A notifier's wait between retries passes virtual time."""
        self.clock.now += seconds

    def _start(self, functions: list[_Function], running: dict[Task, _Running]) -> bool:
        for function in functions:
            assert function.queue is not None
            limit = self.rng.randint(1, min(function.batch_size, 10))
            messages = function.queue.receive(limit, self.clock.now, self.rng)
            if not messages:
                continue
            container = next(c for c in function.containers if c not in {m for f, m, _ in running.values()})
            function.busy += 1
            records = [self._record(m, function) for m in messages]
            limit_receives = function.queue.max_receive or 0
            last_try = any(m.receive_count >= limit_receives for m in messages) if limit_receives else False
            task = self.sched.spawn(
                f"{function.name}#{self.result.invocations}",
                partial(_invoke, container, records, LocalContext(function.name)),
                faults_enabled=not last_try,
            )
            self.result.invocations += 1
            by_function = self.result.invocations_by_function
            by_function[function.name] = by_function.get(function.name, 0) + 1
            running[task] = (function, container, messages)
            return True
        return False

    def _finish(self, task: Task, running: _Running) -> None:
        function, _container, messages = running
        function.busy -= 1
        assert function.queue is not None
        failed: set[str] = {m.id for m in messages}  # a dead or failed invocation: the whole batch comes back
        if task.error is None and isinstance(task.result, dict):
            failed = {item["itemIdentifier"] for item in task.result.get("batchItemFailures", [])}
        elif task.error is not None and not isinstance(task.error, (LambdaDied, Exception)):
            raise task.error
        if failed:
            self._crashed.add(task.name)
        for message in messages:
            function.queue.settle(message, message.id not in failed, self.clock.now)

    def describe(self, arn: str) -> ExecutionState | None:
        """DescribeExecution of the sequence's bootstrap: running inside its import window, then succeeded."""
        if arn != _SIM_EXECUTION or self._import_window is None or self._import_state == 0:
            return None
        if self._import_state == 1:
            return ExecutionState("RUNNING", 0)
        return ExecutionState("SUCCEEDED", to_micros(self.pipeline.clock()))

    def _import_due(self) -> float | None:
        """When the import window next begins or ends (None: no window, or over)."""
        if self._import_window is None or self._import_state == 2:
            return None
        return self._import_window[self._import_state]

    def _import_step(self, now: float) -> None:
        window = self._import_window
        if window is None or self._import_state == 2:
            return
        if self._import_state == 0 and now >= window[0]:
            self.store.importing, self.store.holder = True, ImportHold(_SIM_EXECUTION, "sim", 0)  # Begin
            self._import_state = 1
        if self._import_state == 1 and now >= window[1]:
            while True:  # the state machine retries its end until it completes
                task = self.sched.spawn(
                    "BootstrapEnd", partial(bootstrap_release, self.pipeline, "sim", _SIM_EXECUTION), True
                )
                while not task.done:
                    task.step()
                    self.result.steps += 1
                self.sched.tasks.remove(task)
                if isinstance(task.result, dict):
                    break
            self._import_state = 2

    def _sweep(self, faults: bool) -> int:
        """The hourly scheduled functions, the sweep and news expiry (the final run without faults, once every
        queue is empty); returns what they queued."""
        queued = 0
        for function in (f for f in self.functions if f.scheduled):  # not the webhook's Function URL
            context = LocalContext(function.name)
            work = partial(_sweep, function.containers[0], context, function.event)
            task = self.sched.spawn(function.name, work, faults)
            while not task.done:
                task.step()
                self.result.steps += 1
            self.sched.tasks.remove(task)
            if isinstance(task.result, dict):
                found = sum(int(task.result.get(kind, 0)) for kind in ("missing", "changed", "stray"))
                if found and not faults and not self._drifted and not self._drift_found:
                    self.result.violations.append(f"t={self.clock.now:.2f}: reconciliation found drift: {task.result}")
                self._drift_found = self._drift_found or bool(found)
                queued += int(task.result.get("requeued", 0)) + int(task.result.get("news_expired", 0))
                queued += int(task.result.get("replayed", 0))  # the bootstrap's check: parked requests sent
                queued += int(task.result.get("missing", 0)) + int(task.result.get("changed", 0))
            elif faults:
                queued += 1  # it died: run it again
            else:  # nothing was injected: a scheduled function that dies on its own would die every hour
                self.result.violations.append(f"t={self.clock.now:.2f}: {function.name} failed without a fault")
        return queued

    def _record(self, message: Message, function: _Function) -> dict[str, Any]:
        attributes = {
            "ApproximateReceiveCount": str(message.receive_count),
            "SentTimestamp": str(int(message.sent_at * 1000)),
            "SenderId": ACCOUNT,
            "ApproximateFirstReceiveTimestamp": str(int(message.received_at * 1000)),
        }
        if message.group is not None:
            attributes |= {"MessageGroupId": message.group, "MessageDeduplicationId": message.id,
                           "SequenceNumber": str(message.number)}  # fmt: skip
        return {
            "messageId": message.id,
            "receiptHandle": message.receipt,
            "body": message.body,
            "attributes": attributes,
            "messageAttributes": {},
            "md5OfBody": "0" * 32,
            "eventSource": "aws:sqs",
            "eventSourceARN": function.arn,
            "awsRegion": "us-east-1",
        }

    # --- the invariants ------------------------------------------------------------------------------
    def _observe(self, result: object) -> None:
        # Changes that show a content (removals show as an absence, checked elsewhere, not timed here).
        if isinstance(result, IngestResult) and result.outcome is Outcome.ACCEPTED and result.change in _SHOWN:
            self._accepted_at.setdefault(result.url, []).append(self.clock.now)

    def _freshness(self) -> list[float]:
        """For every new content a file showed: from ingest accepting the change to the CDN surely serving it
        (the file's put plus the cache lifetime). Counted from the earliest change accepted since the URL's
        previous content, the one that waited longest; a content no change caused (news aging out) is skipped."""
        lifetime = self.pipeline.settings.cdn_max_age_seconds
        found: list[float] = []
        served: dict[str, float] = {}  # URL -> when its previous content was shown
        for url, shown in self._shown_at:
            waiting = [at for at in self._accepted_at.get(url, []) if served.get(url, -1.0) < at <= shown]
            served[url] = shown
            if waiting:
                found.append(shown + lifetime - min(waiting))
        return found

    def _check(self, events: Events) -> None:
        self.result.freshness_s = self._freshness()
        violations = self.result.violations
        as_of = AS_OF_US + round(self.clock.now * 1_000_000)
        final: set[str] = set()
        removed = {site.host: site for site in self.sim_sites if site.removing}
        with_news = {str(b["url"]) for b in events.accepted if b.get("news")}
        for tree in self.trees.values():
            site = next((s for s in self.sim_sites if s.prefix == tree.prefix), None)
            if site is not None and site.removing:
                self._check_removed(site)
                continue
            accepted = events.accepted if site is None else site.events.accepted
            with_news |= {str(b["url"]) for b in accepted if b.get("news")}
            final |= self._check_tree(tree, accepted, as_of)
        self._check_queues(events, {body for s in removed.values() for _, body, _ in s.events.sends})
        if not self.notifiers:  # nothing hears of changes: none is sent, nothing polls the notify queue
            if self.queues["NotifyQueue"].counter or self.http.posts:
                violations.append(f"{self.queues['NotifyQueue'].counter} change records sent with no notifier on")
            return
        gone = tuple(f"{site.origin}/" for site in removed.values())  # its announcements went with it
        told = (url for post in self.http.posts if post.status == 200 for url in post.urls)
        notified = Counter(url for url in told if not url.startswith(gone))
        ever = {url for url in self.ever if not url.startswith(gone)}
        for url in sorted(ever - set(notified)):
            violations.append(f"{url} was published but never notified")
        # Only what a published file gained, lost or changed is announced: never a page no file ever showed (a page
        # added and deleted before any rebuild showed it, or a delete of a page never published).
        for url in sorted(set(notified) - ever):
            violations.append(f"{url} was notified but no file ever showed it")
        for url, count in sorted(notified.items()):
            # Each content shown is announced once, and each removal from every file at most once.
            changes = self._shown_changes[url] + self._shown_removals[url]
            retries = sum(1 for p in self.http.posts if p.status == 200 and url in p.urls and p.task in self._crashed)
            if count > changes + retries:
                violations.append(f"{url} notified {count} times for {changes} changes")
        violations += self._last_announced(final, with_news, ever)

    def _check_removed(self, site: SimSite) -> None:
        """A removed site leaves nothing behind: no object under its prefix, no item under its keys, no item."""
        left = sorted(n for n in self.s3.objects if n.startswith(site.prefix))
        if left:
            self.result.violations.append(f"removed site {site.host} left {len(left)} objects: {left[:3]}")
        store = self.store.sites.get(site.pk_prefix)
        if store is not None and store.item_count():
            self.result.violations.append(f"removed site {site.host} left {store.item_count()} items")
        if self.directory.sites.get(site.host) is not None or not site.removed:
            self.result.violations.append(f"removed site {site.host}: its removal did not finish")

    def _check_tree(self, tree: Tree, accepted: list[dict[str, Any]], as_of: int) -> set[str]:
        """One site's files against the reference models; the URLs they show."""
        violations = self.result.violations
        objects = self._tree_objects(tree)
        published = {n: o.data for n, o in objects.items() if n.endswith((".xml", ".xml.gz"))}
        store = self.store.for_site(tree.prefix and f"site#{tree.host}#")
        recorded = {url: page.lastmod for url, page in store.current_pages().items()}
        limits = Limits(max_urls=self.max_urls, max_files_per_index=self.max_files_per_index)
        site = expected_site(accepted, limits, as_of, recorded, violations, tree.base)
        expected = site.all_bytes() if site.files else {}  # an index must name a sitemap: none without pages
        # And against the reference model written from the rules alone (tests/oracle.py), not from the core.
        independent = oracle.check_published(published, accepted, as_of, recorded)
        violations += [f"independent model: {tree.prefix}{problem}" for problem in independent]
        feed = objects.get(FEED_NAME)
        if self.pipeline.settings.feed_entries and feed is not None:  # the feed names live pages only, at most 5
            live = {url for name, data in expected.items() if name.endswith(".xml.gz") for url in self._entries(data)}
            ids = [
                e.text or ""
                for e in etree.fromstring(feed.data).iterfind(
                    "{http://www.w3.org/2005/Atom}entry/{http://www.w3.org/2005/Atom}id"
                )
            ]
            if len(ids) > self.pipeline.settings.feed_entries or set(ids) - live:
                violations.append(f"the feed lists {sorted(set(ids) - live)} that no file shows, or too many")
        if self.pipeline.settings.text_sitemaps:  # each file's text twin lists its URLs; no twin of nothing
            texts = {n: o.data for n, o in objects.items() if n.endswith(".txt") and n.startswith("sitemap-")}
            for name in sorted(n for n in expected if n.endswith(".xml.gz")):
                urls = "".join(f"{url}\n" for url in self._entries(expected[name]))
                if texts.pop(text_twin(name), None) != urls.encode():
                    violations.append(f"text sitemap {text_twin(name)} does not list the URLs of {name}")
            violations += [f"text sitemap {name} is beside no sitemap file" for name in sorted(texts)]
        schemas = _schemas()
        for name, data in sorted(published.items()):
            if schemas is None or name.startswith(SNAPSHOT_PREFIX) or not name.startswith("sitemap"):
                continue
            schema = schemas[1] if INDEX_FILE.fullmatch(name) else schemas[0]
            if not schema.validate(etree.fromstring(gzip.decompress(data) if name.endswith(".gz") else data)):
                violations.append(
                    f"published {tree.prefix}{name} is invalid by the official schema: "
                    f"{str(schema.error_log).splitlines()[-1:]}"
                )
        for name in sorted(set(published) | set(expected)):
            if published.get(name) != expected.get(name):
                state = "missing" if name not in published else "unexpected" if name not in expected else "differs"
                violations.append(f"published {tree.prefix}{name} {state} (reference model)")
        return {url for data in published.values() if data[:2] == b"\x1f\x8b" for url in self._entries(data)}

    def _check_queues(self, events: Events, removed_sites: set[str]) -> None:
        """The ingest dead-letter queue holds the rejected events with their reasons (and may hold the events of a
        site removed during the sequence, refused as no site's); every other queue is empty."""
        violations = self.result.violations
        dead = self.ingest_queue.dead_letter
        assert dead is not None
        # A crash after the dead-letter send delivers the event again, so a malformed event may be there twice.
        # An event that failed on every receive is there with the error as its reason, and the alarm is on.
        bodies = {m.body for m in dead.messages}
        if bodies - removed_sites != events.malformed | events.failing:
            violations.append(f"ingest DLQ holds {sorted(m.body for m in dead.messages)}, not the rejected events")
        for message in dead.messages:
            reason = message.attributes.get("reason", "")
            if not reason or (message.body in events.failing and "ValidationException" not in reason):
                violations.append(f"ingest DLQ message {message.body[:60]} has the reason {reason!r}")
            host = body_host(message.body) if message.body in removed_sites else None
            if host is not None and f"host {host!r} is not a site of this stack" not in reason:
                violations.append(f"ingest DLQ message {message.body[:60]} of a removed site has {reason!r}")
        if events.failing and not _alarm_on(dead.depth()):
            violations.append("the ingest dead-letter alarm would not fire")
        self.result.dead_lettered = sum(1 for m in dead.messages if m.body in events.failing)
        for queue in self.queues.values():
            if queue is not dead and queue.depth():
                violations.append(f"{queue.name} still holds {queue.depth()} messages")

    def _last_announced(self, final: set[str], with_news: set[str], ever: set[str]) -> list[str]:
        """Every change is announced: what IndexNow was last told of each page ever shown (or is to be told once
        its quiet window ends: a held change) is what the files show at the end: removed for a page no file
        shows, and the digest of the entry a file shows (for pages that never had news: an entry that differs only
        by news too old to be shown is not announced again, so the digest told may be an earlier one's)."""
        found: list[str] = []
        now_s = AS_OF_US // 1_000_000 + round(self.clock.now)
        for tree in self.trees.values():
            store = self.store.for_site(tree.prefix and f"site#{tree.host}#")
            urls = {url for url in ever if url.startswith(f"{tree.base}/")}
            found += self._announced(store, urls, final, with_news, now_s)
        return found

    def _announced(
        self, store: FakeStore, urls: set[str], final: set[str], with_news: set[str], now_s: int
    ) -> list[str]:
        found: list[str] = []
        held = store.held("indexnow", now_s)
        current = store.current_pages()
        pages = {url: current.get(url) for url in urls}
        for url in sorted(urls):
            record = store.sent.get((store.prefix + sent_pk(url), "indexnow"))
            told = held[url].digest if url in held else record[1].digest if record is not None else None
            page = pages[url]
            if url not in final and told != "":
                found.append(f"{url} is shown by no file, yet was last announced as {told!r}")
            elif url in final and told in ("", None):
                found.append(f"{url} is shown, yet was last announced as {told!r}")
            elif url in final and page is not None and url not in with_news and told != page.digest:
                found.append(f"{url} shows {page.digest[:12]}, yet was last announced as {told!r}")
        return found
