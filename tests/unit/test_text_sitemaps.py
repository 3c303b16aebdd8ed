"""Text sitemaps (opt-in): beside each sitemap file its URLs, one a line, kept by the same incremental rebuilds and
written only when its URLs change."""

from __future__ import annotations

import gzip
import re

from sitemap_updater.core.sharding import text_twin
from tests.unit.test_recovery import Stack, page, replace_settings

LOC = re.compile(rb"<loc>([^<]+)</loc>")


def stack_with_text() -> Stack:
    stack = Stack(max_urls=3)
    stack.pipeline = replace_settings(stack, text_sitemaps=True)
    return stack


def files(stack: Stack) -> list[str]:
    return sorted(n for n in stack.s3.objects if n.startswith("sitemap-") and n.endswith(".xml.gz"))


def assert_twins_list_the_files_urls(stack: Stack) -> None:
    texts = sorted(n for n in stack.s3.objects if n.endswith(".txt"))
    assert texts == sorted(text_twin(n) for n in files(stack))
    for name in files(stack):
        urls = LOC.findall(gzip.decompress(stack.s3.objects[name].data))
        assert stack.s3.objects[text_twin(name)].data == b"".join(u.replace(b"&amp;", b"&") + b"\n" for u in urls)


def test_each_file_gets_a_text_twin_with_its_urls_in_its_order() -> None:
    stack = stack_with_text()
    stack.send(*[page(f"p{n}", section="blog") for n in range(7)], page("a&b", section="blog"))
    stack.drain()
    assert len(files(stack)) >= 3
    assert_twins_list_the_files_urls(stack)
    stack.check()


def test_a_change_of_lastmod_alone_rewrites_the_file_but_not_its_text_twin() -> None:
    # Given a published site with text twins
    stack = stack_with_text()
    stack.send(*[page(f"p{n}", section="blog", version=1) for n in range(2)])
    stack.drain()
    [name] = files(stack)
    text_before, xml_before = stack.s3.objects[text_twin(name)], stack.s3.objects[name]
    # When a page changes its lastmod only
    stack.send(page("p1", section="blog", version=2, lastmod="2026-11-21"))
    stack.drain()
    # Then the file is rewritten and its twin is not (its URLs are the same); a new page rewrites both
    assert stack.s3.objects[name] is not xml_before and stack.s3.objects[text_twin(name)] is text_before
    stack.send(page("p9", section="blog", version=1))
    stack.drain()
    assert stack.s3.objects[text_twin(name)] is not text_before
    assert_twins_list_the_files_urls(stack)


def test_a_retired_file_takes_its_text_twin_with_it() -> None:
    stack = stack_with_text()
    stack.send(*[page(f"p{n}", section="blog", version=1) for n in range(7)])
    stack.drain()
    many = files(stack)
    stack.send(*[page(f"p{n}", section="blog", version=2, type="delete") for n in range(1, 7)])
    stack.drain()
    assert len(files(stack)) < len(many)
    assert_twins_list_the_files_urls(stack)
    stack.check()
