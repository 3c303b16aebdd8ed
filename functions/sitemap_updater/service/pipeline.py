"""The pipeline's dependencies, wired once per cold start (or per local run) and passed to every use case."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, TypeVar

from sitemap_updater.core.event_rules import Horizon
from sitemap_updater.core.sharding import Limits
from sitemap_updater.core.urls import FilesBase, Site
from sitemap_updater.ports import Bucket, FanOut, Manifest, Queue, SiteDirectory
from sitemap_updater.settings import Settings

if TYPE_CHECKING:
    from sitemap_updater.service.site_marks import SiteMarks


def utc_now() -> datetime:
    """The clock of a deployed pipeline: now, in UTC."""
    return datetime.now(UTC)


_Item = TypeVar("_Item")
_Result = TypeVar("_Result")


def in_turn(task: Callable[[_Item], _Result], items: Sequence[_Item], /) -> list[_Result]:
    """The fan-out of a pipeline without threads: one task after another."""
    return [task(item) for item in items]


@dataclass(frozen=True)
class Pipeline:
    """Settings plus one port per AWS resource (the AWS adapters in a function, in-memory fakes in the
    simulation)."""

    settings: Settings
    store: Manifest
    bucket: Bucket
    rebuild_queue: Queue
    index_queue: Queue
    notify_queue: Queue
    dead_letters: Queue
    clock: Callable[[], datetime] = field(default=utc_now)
    observe: Callable[[object], None] = field(default=lambda _result: None)
    # How a rebuild reads, renders and puts its files: at once on Lambda, where each waits on S3 round trips.
    fan_out: FanOut = field(default=in_turn)
    # The FIFO dead-letter queues of the rebuild, index and notify queues (None: failures are left to SQS).
    rebuild_dead_letters: Queue | None = None
    index_dead_letters: Queue | None = None
    notify_dead_letters: Queue | None = None
    # The sites added to the stack at run time (wiring/sites.py picks a site's pipeline); None: none are read.
    directory: SiteDirectory | None = None
    # A site added at run time: its marks in the register the scheduled functions visit sites by
    # (service/site_marks.py); None: the stack's own site, which they always visit.
    marks: SiteMarks | None = None
    site: Site = field(init=False)
    files: FilesBase = field(init=False)  # where the files are served: the site, its sitemaps' own host, a path
    limits: Limits = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "site", self.settings.site)
        object.__setattr__(self, "files", self.settings.files_site)
        object.__setattr__(self, "limits", self.settings.limits)

    def horizon(self) -> Horizon:
        """The latest moment an event may name now: the clock plus the settings' skew for clocks that differ."""
        return Horizon.at(self.clock(), self.settings.event_clock_skew_seconds)
