"""Ports: what the services need from the outside world, as Protocols. The AWS adapters (``adapters/``) and the
simulation's in-memory fakes (``tests/sim/fakes.py``) both implement them; neither derives from the other, and
mypy checks both against these signatures wherever they are wired into a ``Pipeline``."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from sitemap_updater.core.layout import PublishedFile
from sitemap_updater.core.messages import Message
from sitemap_updater.core.pages import EntryItem, PageRecord, PageWrite, SentRecord
from sitemap_updater.core.reduce import PageState
from sitemap_updater.core.sharding import KeyRange
from sitemap_updater.core.snapshots import PendingPut, SnapshotRef
from sitemap_updater.sites import SiteConfig

_Item = TypeVar("_Item")
_Result = TypeVar("_Result")


class FanOut(Protocol):
    """Runs independent tasks, at once where it can (threads on Lambda; one after another in the simulation, which
    stays deterministic), and returns their results in order once every one has finished; the first error raises."""

    def __call__(self, task: Callable[[_Item], _Result], items: Sequence[_Item], /) -> list[_Result]: ...


@dataclass(frozen=True, slots=True)
class ImportHold:
    """Who holds the import (rebuild requests are parked meanwhile): a bootstrap's execution ARN, its run and when
    it began; an ``import`` from the command line holds it with no execution."""

    execution: str
    run: str
    began_us: int


@dataclass(frozen=True, slots=True)
class ExecutionState:
    """A Step Functions execution as DescribeExecution tells it: its status, and when it stopped (0: it has not)."""

    status: str  # RUNNING, SUCCEEDED, FAILED, TIMED_OUT, ABORTED or PENDING_REDRIVE
    stopped_us: int


class Executions(Protocol):
    """The bootstrap state machine's executions (Step Functions on AWS, the local harness's own in local runs)."""

    def describe(self, arn: str) -> ExecutionState | None: ...  # None: no such execution (gone after 90 days)


class Manifest(Protocol):
    """The manifest table: page states, per-section entries, published-file records, counters and what the
    notifiers sent or hold back (``adapters/manifest.py`` documents each item and condition)."""

    def get_page(self, url: str) -> PageRecord | None: ...
    def put_state(self, write: PageWrite, expected_rank: str | None, outbox: str, entry_rank: str = "") -> bool: ...
    def put_entry(self, write: PageWrite, outbox: str = "", current: bool = False) -> bool: ...
    def leave_section(self, section: str, write: PageWrite) -> bool: ...
    def entry_rank(self, section: str, key: int, url: str) -> str | None: ...
    def entry_item(self, section: str, key: int, url: str) -> EntryItem | None: ...
    def update_entry(self, write: PageWrite, outbox: str) -> tuple[bool, EntryItem | None]: ...
    def scan_pages(
        self, segment: int, total: int, cursor: dict[str, str] | None, limit: int | None = None
    ) -> tuple[list[PageRecord], dict[str, str] | None]: ...
    def open_outbox(self, outbox: str, urls: list[str]) -> None: ...
    def outbox_open(self, outbox: str) -> bool: ...
    def close_outbox(self, outbox: str) -> None: ...
    def outboxes(self, opened_before: str) -> list[tuple[str, list[str]]]: ...
    def import_pages(self, writes: list[PageWrite]) -> None: ...
    def entries(self, section: str, key_range: KeyRange) -> list[PageState]: ...
    def entries_for(self, section: str, pages: list[tuple[int, str]]) -> list[PageState]: ...
    def files(self, section: str | None = None) -> list[PublishedFile]: ...
    def put_file(self, published: PublishedFile) -> None: ...
    def move_file_state(
        self, published: PublishedFile, from_state: str, to_state: str, at_us: int = 0, removals: bool | None = None
    ) -> bool: ...
    def mark_unsettled(
        self, published: PublishedFile, pending: PendingPut | None = None, shown: tuple[SnapshotRef, ...] = ()
    ) -> None: ...
    def clear_pending_index(self, published: PublishedFile) -> bool: ...
    def delete_file(self, published: PublishedFile, state: str) -> bool: ...
    def sent_records(self, urls: list[str], channel: str, now_s: int) -> dict[str, SentRecord]: ...
    def mark_sent(
        self,
        digests: dict[str, str],
        channel: str,
        quiet_until_s: int,
        expires_at_s: int,
        ranks: dict[str, str] | None = None,
    ) -> None: ...
    def next_rebuild(self, section: str, began_us: int = 0) -> int: ...
    def rebuild_times(self, section: str) -> tuple[int, int]: ...
    def hold_due(self, section: str, due_us: int) -> None: ...
    def next_index_generation(self) -> int: ...
    def index_sha(self) -> str | None: ...
    def put_index_sha(self, sha256: str, generation: int) -> None: ...
    def import_running(self) -> bool: ...
    def set_import_running(self, running: bool, began_us: int = 0) -> None: ...
    def import_hold(self) -> ImportHold | None: ...
    def begin_import(self, hold: ImportHold) -> bool: ...
    def end_import(self, execution: str) -> bool: ...
    def oldest_parked_us(self) -> int | None: ...
    def park(self, parked_id: str, messages: list[tuple[str, str]]) -> bool: ...
    def parked(self) -> list[tuple[str, list[tuple[str, str]]]]: ...
    def unpark(self, parked_id: str) -> None: ...
    def held(self, channel: str, now_s: int) -> dict[str, SentRecord]: ...
    def hold(self, changes: dict[str, SentRecord], channel: str, expires_at_s: int) -> None: ...
    def release(self, urls: list[str], channel: str) -> None: ...
    # Several sites (core/site_keys.py): the store of a site's partition keys, and the removal of all of a site's.
    def for_site(self, prefix: str) -> Manifest: ...
    def delete_site_records(self, urls: Sequence[str] = ()) -> int: ...


class SiteDirectory(Protocol):
    """The sites added to the stack at run time (``sites.py``): items of the manifest table on AWS."""

    def get_site(self, host: str) -> SiteConfig | None: ...
    def put_site(self, site: SiteConfig) -> None: ...
    def delete_site(self, host: str) -> None: ...
    def list_sites(self) -> list[SiteConfig]: ...
    # The register of the sites the scheduled functions visit (service/site_marks.py): a site's mark of a kind,
    # written at ``at_us``; the marks of a kind by host; a mark deleted (only if still written at ``at_us``, unless
    # None: whatever its time; False when it was written again since); where a scheduled job's last run stopped.
    def mark(self, kind: str, host: str, at_us: int) -> None: ...
    def marks(self, kind: str) -> dict[str, int]: ...
    def unmark(self, kind: str, host: str, at_us: int | None = None) -> bool: ...
    def cursor(self, job: str) -> str: ...
    def set_cursor(self, job: str, host: str) -> None: ...


class Bucket(Protocol):
    """The published files (compare-and-swap by sequence), their snapshots, and the index."""

    def publish(
        self, name: str, data: bytes, seq: int, unless_same: bool = False, max_age: int | None = None
    ) -> bool: ...
    def publish_over(self, name: str, data: bytes, seq: int, etag: str) -> str | None: ...
    def version(self, name: str) -> int | None: ...
    def put_if_absent(self, name: str, data: bytes) -> bool: ...
    def read_snapshot(self, at: SnapshotRef) -> bytes | None: ...
    def write_snapshots(self, key: str, blocks: list[bytes]) -> None: ...
    def delete(self, name: str) -> None: ...
    def read(self, name: str) -> bytes | None: ...
    def names(self, prefix: str = "") -> list[str]: ...
    def objects(self, start_after: str = "") -> Iterator[tuple[str, int]]: ...


class Queue(Protocol):
    """One queue: JSON messages (group and deduplication ID on a FIFO queue), or raw bodies with attributes."""

    url: str
    fifo: bool

    def send(self, body: dict[str, Any], group: str | None = None, dedup: str | None = None) -> None: ...
    def send_batch(self, messages: Sequence[Message]) -> None: ...
    def send_raw(self, body: str, attributes: dict[str, str]) -> None: ...
    def send_raw_grouped(self, body: str, attributes: dict[str, str], group: str | None, dedup: str | None) -> None: ...
    def defer(self, receipts: list[str], seconds: int) -> None: ...


@dataclass(frozen=True, slots=True)
class QueuedMessage:
    """A message as received from a queue: its receipt (to delete it or let it go), its body and string message
    attributes, and on a FIFO queue its group and deduplication ID."""

    message_id: str
    receipt: str
    body: str
    attributes: dict[str, str]
    group: str | None = None
    dedup: str | None = None
    sent_at_ms: int = 0


class MessageSource(Protocol):
    """A queue read by an operator's command (``redrive`` reads a dead-letter queue): received messages stay
    invisible to other readers for ``hold_s`` seconds unless deleted or released first."""

    url: str
    fifo: bool

    def receive(self, limit: int, hold_s: int, wait_s: int) -> list[QueuedMessage]: ...
    def delete(self, receipt: str) -> None: ...
    def release(self, receipts: list[str]) -> None: ...
    def depth(self) -> int: ...


@dataclass(frozen=True, slots=True)
class HttpResponse:
    """An HTTP answer: status, headers and body text (never an exception for a status). ``cut``: the body was
    longer than the reader read, and this is its start."""

    status: int
    headers: dict[str, str]
    body: str
    cut: bool = False


class Http(Protocol):
    """HTTP for notifications; ``timeout`` is the most one request may wait."""

    timeout: float

    def request(
        self, method: str, url: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> HttpResponse: ...


class WebGet(Protocol):
    """One bounded GET of a small text file (the sweep's robots.txt check), for a service that decides which
    redirects to follow: none is followed here (a 3xx comes back, its ``location`` header lower-cased with the
    rest); at most ``max_bytes`` of the body are read (``cut`` when there was more, which stays unread);
    everything, the connection included, ends within ``seconds``. Raises OSError (TimeoutError when the time
    is up) when no HTTP answer came: a host unreachable or refusing, a broken status line, headers or body."""

    def get(self, url: str, max_bytes: int, seconds: float) -> HttpResponse: ...


class SearchConsoleApi(Protocol):
    """Google Search Console's sitemap submission."""

    def submit(self, property_url: str, feed_url: str) -> HttpResponse: ...


class SecretsUnavailable(RuntimeError):
    """The secret store could not be read and nothing is cached: answer 5xx so that the CMS retries."""


class EventQueue(Protocol):
    """Where the webhook function puts page events (the ingest queue)."""

    def send(self, body: dict[str, Any], group: str | None = None, dedup: str | None = None) -> None: ...


class DocumentStore(Protocol):
    """The URLs each CMS document had, for deletes without a slug and renamed slugs."""

    def recall(self, cms: str, doc_id: str) -> list[str]: ...

    def remember(self, cms: str, doc_id: str, urls: list[str], order: str) -> bool: ...


class SecretStore(Protocol):
    """The webhook signing secrets of each CMS; raises :class:`SecretsUnavailable` when none can be read."""

    def secrets(self, cms: str) -> tuple[str, ...]: ...

    def refresh(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class Fetched:
    """A GET as a crawler sees it: the final URL (after redirects on the site's host), status, headers (names in
    lower case) and body; ``cut`` when the body was longer than the cap and only its start is here."""

    url: str
    status: int
    headers: dict[str, str]
    body: bytes
    cut: bool = False


class Unreachable(OSError):
    """No connection to the server could be made (its name not found, refused, no route, no answer to connect)."""


class Fetch(Protocol):
    """GET a URL as a crawler does (``verify``), within ``timeout`` seconds from connecting to the last byte (the
    redirects included); never raises for an HTTP status. Raises :class:`Unreachable` when no connection could be
    made, TimeoutError when the time ran out, and another OSError for an answer that is not HTTP as a client reads
    it (a malformed status line or chunk, too many or too long headers, cut short, a URL it cannot send)."""

    def __call__(self, url: str, timeout: float) -> Fetched: ...
