"""Reconciliation: published files gone missing, changed out of band or named by nothing are found in bounded
slices and repaired through the normal rebuild paths; a healthy site costs reads only."""

from __future__ import annotations

import gzip
import operator
from dataclasses import replace
from datetime import timedelta
from functools import partial

from sitemap_updater.service.reconcile import reconcile
from tests.sim.fakes import S3Object
from tests.unit.test_recovery import NOW, Stack, page

STRAY = "sitemap-gone-00000000.xml.gz"


def site(files: int = 4) -> Stack:
    stack = Stack(max_urls=3)
    stack.send(*[page(f"p{n}", section=f"s{n}") for n in range(files)])
    stack.drain()
    stack.check()
    return stack


def test_a_healthy_site_is_read_and_nothing_is_written() -> None:
    stack = site()
    before = dict(stack.s3.objects)
    done = reconcile(stack.pipeline)
    assert sorted(done.checked) == sorted(n for n in before if n.endswith(".xml.gz") or n == "sitemap.xml")
    assert (done.missing, done.changed, done.stray) == ([], [], [])
    assert stack.s3.objects == before and not stack.queues["rebuild"].messages


def test_a_missing_file_and_a_file_changed_out_of_band_are_published_again() -> None:
    # Given one file deleted and another overwritten by someone else
    stack = site()
    gone, changed = sorted(n for n in stack.s3.objects if n.endswith(".xml.gz") and not n.startswith("_"))[:2]
    expected = {name: stack.s3.objects[name].data for name in (gone, changed)}
    del stack.s3.objects[gone]
    stack.s3.objects[changed] = S3Object(gzip.compress(b"<urlset/>"), '"x"', 0)
    # When reconciliation runs, and the rebuilds it asks for
    done = reconcile(stack.pipeline)
    stack.drain()
    # Then both files hold their bytes again, and the site is what the model says
    assert (done.missing, done.changed) == ([gone], [changed])
    assert {name: stack.s3.objects[name].data for name in (gone, changed)} == expected
    stack.check()


def test_a_missing_index_is_written_again() -> None:
    stack = site()
    index = stack.s3.objects.pop("sitemap.xml").data
    done = reconcile(stack.pipeline)
    stack.drain()
    assert done.missing == ["sitemap.xml"] and stack.s3.objects["sitemap.xml"].data == index
    stack.check()


def test_a_file_named_by_nothing_is_deleted_once_it_is_old_enough() -> None:
    # Given a sitemap file no record names, written two hours ago, and one written a minute ago
    stack = site()
    stack.s3.objects[STRAY] = S3Object(gzip.compress(b"<urlset/>"), '"s"', 1, written_at=-7200)
    fresh = "sitemap-fresh-00000000.xml.gz"
    stack.s3.objects[fresh] = S3Object(gzip.compress(b"<urlset/>"), '"f"', 1, written_at=-60)
    # When reconciliation runs, then the old one is deleted and the fresh one (a rebuild may be writing it) kept
    done = reconcile(stack.pipeline)
    assert done.stray == [STRAY]
    assert STRAY not in stack.s3.objects and fresh in stack.s3.objects


def test_each_run_checks_a_bounded_slice_and_every_file_is_checked_within_a_cycle() -> None:
    # Given 7 files and a budget of 3 files a run
    stack = site(files=7)
    checked: list[str] = []
    for hour in range(3):
        # When it runs in three consecutive hours
        done = reconcile(replace(stack.pipeline, clock=partial(operator.add, NOW, timedelta(hours=hour))), budget=3)
        files = [n for n in done.checked if n.endswith(".xml.gz")]
        assert len(files) <= 3
        checked += files
    # Then every file was checked exactly once
    assert sorted(checked) == sorted(n for n in stack.s3.objects if n.endswith(".xml.gz") and not n.startswith("_"))
