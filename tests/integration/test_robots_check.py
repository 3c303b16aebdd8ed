"""The sweep's robots.txt check against hostile servers on 127.0.0.1 (service/sweep.py over adapters/http.py): it
reads the site's own scheme and host only (a redirect elsewhere, to the metadata address, a private range or
ftp, is not followed), the first 500 KiB of a robots.txt (what Google reads), within its time limit, and a
robots.txt that cannot be read is a warning: the sweep goes on. Each test is bounded to a few seconds."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sitemap_updater.adapters.http import HttpClient
from sitemap_updater.service.pipeline import Pipeline
from sitemap_updater.service.sweep import ROBOTS_MAX_BYTES, robots_warning, sweep
from tests.hostile import BROKEN, Behaviour, Hostile, closed_port, elapsed, endless, hang, redirect, reply, trickle
from tests.unit.test_recovery import Stack, replace_settings

SECONDS = 0.5  # the check's limit in the tests of slow servers (10 s by default)
ROOMY = 3.0  # the limit elsewhere: room for a shared machine under load, where no answer is slow
SLACK = 4.0  # how late a loaded machine may be; a server holding the check held it for a minute or more
BIG = 52 * 1024 * 1024  # a 52 MiB robots.txt


@pytest.fixture
def site() -> Iterator[Hostile]:
    server = Hostile()
    yield server
    server.close()


@pytest.fixture
def elsewhere() -> Iterator[Hostile]:
    server = Hostile("127.0.0.2")
    yield server
    server.close()


def pipeline_of(base: str) -> Pipeline:
    return replace_settings(Stack(), site_url=base, robots_check=True)


def naming(base: str) -> bytes:
    return f"User-agent: *\nDisallow:\nSitemap: {base}/sitemap.xml\n".encode()


def check(site: Hostile, seconds: float = ROOMY) -> tuple[str | None, float]:
    warning, took = elapsed(lambda: robots_warning(pipeline_of(site.base), HttpClient(), seconds))
    assert warning is None or isinstance(warning, str)
    return warning, took


def test_a_redirect_on_the_sites_own_host_is_followed(site: Hostile) -> None:
    site.routes["/robots.txt"] = redirect("/robots-live.txt", 301)
    site.routes["/robots-live.txt"] = reply(200, naming(site.base))
    assert check(site)[0] is None
    assert site.asked == ["/robots.txt", "/robots-live.txt"]


@pytest.mark.parametrize(
    "target",
    [
        "{elsewhere}/robots.txt",  # another host
        "http://169.254.169.254/latest/meta-data/",  # the instance metadata service
        "http://10.0.0.1/robots.txt",  # a private range
        "http://192.168.1.1:8080/robots.txt",
        "ftp://{host}:{port}/robots.txt",  # another scheme, on the site's host and port
        "https://{host}:{port}/robots.txt",
    ],
)
def test_a_redirect_off_the_sites_scheme_and_host_is_not_followed(
    site: Hostile, elsewhere: Hostile, target: str
) -> None:
    location = target.format(elsewhere=elsewhere.base, host="127.0.0.1", port=site.port)
    site.routes["/robots.txt"] = redirect(location)
    elsewhere.routes["/robots.txt"] = reply(200, naming(site.base))
    warning, took = check(site)
    assert warning is not None
    said = f"robots.txt redirects to '{location}', off the site's scheme and host ({site.base}): not followed"
    assert said in warning
    assert warning.endswith(f"make sure it has 'Sitemap: {site.base}/sitemap.xml'")
    assert elsewhere.asked == [] and site.asked == ["/robots.txt"] and took < ROOMY


def test_a_52_mib_robots_txt_is_read_only_as_far_as_google_reads_it(site: Hostile) -> None:
    # Given a robots.txt of 52 MiB whose Sitemap line comes last, past the 500 KiB Google reads
    site.routes["/robots.txt"] = endless(BIG, b"User-agent: *\n", naming(site.base))
    warning, took = check(site, seconds=5)
    # Then the line is reported as not read (as Google would not read it), and the rest was never downloaded
    assert warning is not None and warning.startswith("robots.txt is longer than 512,000 bytes (500 KiB)")
    assert f"'Sitemap: {site.base}/sitemap.xml' near its top" in warning
    assert site.sent["/robots.txt"] < BIG // 4 and took < 5
    # And a line within the first 500 KiB is found, however long the rest
    site.routes["/robots.txt"] = endless(BIG, naming(site.base))
    assert check(site, seconds=5)[0] is None


def test_a_line_cut_at_the_500_kib_mark_is_not_taken_for_the_whole_line(site: Hostile) -> None:
    # The Sitemap line starts before the mark and ends after it: Google reads a cut line, not ours
    line = f"Sitemap: {site.base}/sitemap.xml\n".encode()
    filler = b"#" * (ROBOTS_MAX_BYTES - 10) + b"\n"
    site.routes["/robots.txt"] = reply(200, filler + line)
    warning, _ = check(site)
    assert warning is not None and warning.startswith("robots.txt is longer than 512,000 bytes")
    site.routes["/robots.txt"] = reply(200, line + filler)
    assert check(site)[0] is None


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_broken_server_is_a_warning(site: Hostile, case: str) -> None:
    site.routes["/robots.txt"] = BROKEN[case]
    warning, took = check(site)
    assert warning is not None and warning.startswith(f"robots.txt ({site.base}/robots.txt) could not be read (")
    assert "make sure it has 'Sitemap: " in warning and took < ROOMY


@pytest.mark.parametrize(
    "behaviour",
    [
        hang(),  # the request read, never an answer
        trickle(b"HTTP/1.1 200 OK\r\n", b"X-Slow: " + b"v" * 10_000 + b"\r\n\r\n"),  # headers at 20 bytes a second
        trickle(b"HTTP/1.1 200 OK\r\nContent-Length: 10000\r\n\r\n", b"#" * 10_000),  # a body at 20 bytes a second
    ],
    ids=["silent", "slow headers", "slow body"],
)
def test_a_slow_server_is_cut_off_at_the_checks_limit(site: Hostile, behaviour: Behaviour) -> None:
    site.routes["/robots.txt"] = behaviour
    warning, took = check(site, SECONDS)
    assert warning == (
        f"robots.txt ({site.base}/robots.txt) was not read within {SECONDS:g} s, the check's limit; not checked: "
        f"make sure it has 'Sitemap: {site.base}/sitemap.xml'"
    )
    assert SECONDS <= took < SECONDS + SLACK


def test_the_limit_covers_every_redirect_together(site: Hostile) -> None:
    # Five hops of about 0.35 s each: each within the limit, together far past it
    for hop in range(5):
        site.routes[f"/r{hop}"] = trickle(b"", f"HTTP/1.1 302 X\r\nLocation: /r{hop + 1}\r\n\r\n".encode(), 0.01)
    site.routes["/robots.txt"] = redirect("/r0")
    site.routes["/r5"] = reply(200, naming(site.base))
    warning, took = check(site, SECONDS)
    assert warning is not None and "was not read within 0.5 s" in warning and took < SECONDS + SLACK


def test_a_redirect_loop_on_the_host_stops_after_five_hops(site: Hostile) -> None:
    site.routes["/robots.txt"] = redirect("/robots.txt")
    warning, _ = check(site)
    assert warning is not None and warning.startswith("robots.txt redirects more than 5 times")
    assert site.asked == ["/robots.txt"] * 6


def test_an_unreachable_site_is_a_warning_and_the_sweep_succeeds() -> None:
    base = f"http://127.0.0.1:{closed_port()}"
    done = sweep(pipeline_of(base), HttpClient())
    assert done.requeued == 0
    assert done.robots_warning is not None
    assert done.robots_warning.startswith(f"robots.txt ({base}/robots.txt) could not be read (")
