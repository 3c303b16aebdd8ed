"""URL and text rules from RFC 3986, sitemaps.org and XML 1.0, with expectations written out by hand; and the
shortcut that recognises an already-canonical URL without parsing it agrees with the rules."""

from __future__ import annotations

import pytest

from sitemap_updater.core.text import check_xml_text, forbidden_character
from sitemap_updater.core.urls import Site, UrlError, canonical_media_url, canonical_page_url

BASE = "https://www.example.com"
SITE = Site.parse(BASE, sections=None)


@pytest.mark.parametrize(
    ("given", "canonical"),
    [
        (f"{BASE}/a?", f"{BASE}/a"),  # an empty query is dropped
        (f"{BASE}/a/./b/../c", f"{BASE}/a/c"),
        (f"{BASE}/a/.", f"{BASE}/a/"),
        (f"{BASE}/a/b/..", f"{BASE}/a/"),
        (f"{BASE}/a;JSESSIONID=ABC123", f"{BASE}/a"),
        (f"{BASE}/a;jsessionid=abc/b", f"{BASE}/a/b"),
        (f"{BASE}/a;v=1", f"{BASE}/a;v=1"),
        (f"{BASE}/a?PHPSESSID=1&x=2&SID=3", f"{BASE}/a?x=2"),
        (f"{BASE}/a?sessionid=1", f"{BASE}/a"),
        (f"{BASE}/%7euser/%41%2f%c3%a9", f"{BASE}/~user/A%2F%C3%A9"),
        (f"{BASE}/ü ber?q=ä&r=%zz", f"{BASE}/%C3%BC%20ber?q=%C3%A4&r=%25zz"),
        (f"{BASE}/a?b?c=/d", f"{BASE}/a?b?c=/d"),
        ("https://WWW.Example.COM:443/a#frag", f"{BASE}/a"),
        (f"{BASE}", f"{BASE}/"),
        ("http://www.example.com/a", f"{BASE}/a"),  # the site's one scheme
        (f"  {BASE}/a ", f"{BASE}/a"),
    ],
)
def test_page_urls_are_canonicalised(given: str, canonical: str) -> None:
    assert canonical_page_url(given, SITE) == canonical
    assert canonical_page_url(canonical, SITE) == canonical  # canonical form is a fixed point


def test_a_removed_session_id_is_reported() -> None:
    warnings: list[str] = []
    canonical_page_url(f"{BASE}/a;JSESSIONID=1?x=1&sid=2", SITE, warnings)
    assert len(warnings) == 2 and "JSESSIONID" in warnings[0] and "sid" in warnings[1]


@pytest.mark.parametrize(
    "bad",
    [f"{BASE}/a\rb", f"{BASE}/a\nb", f"{BASE}/a\tb", f"{BASE}/a\x00", "ftp://www.example.com/a", "/relative",
     "https://user:pw@www.example.com/a", "https://evil.example.net/a", "https://www.example.com:99999/a",
     "https:///a"],
)  # fmt: skip
def test_bad_page_urls_are_rejected_not_repaired(bad: str) -> None:
    with pytest.raises(UrlError):
        canonical_page_url(bad, SITE)


def test_a_carriage_return_in_a_media_url_is_rejected() -> None:
    with pytest.raises(UrlError, match="line break"):
        canonical_media_url("https://cdn.example.com/a\r.jpg")


def test_ports_and_ipv6_hosts() -> None:
    assert Site.parse("http://[::1]:8080").netloc == "[::1]:8080"
    assert Site.parse("https://www.example.com:443").netloc == "www.example.com"
    assert Site.parse("http://www.example.com:80/").netloc == "www.example.com"
    assert Site.parse("https://www.example.com:8443").netloc == "www.example.com:8443"
    assert canonical_media_url("http://[::1]:8080/a") == "http://[::1]:8080/a"
    assert canonical_media_url("https://Bücher.example/x") == "https://xn--bcher-kva.example/x"
    for bad in ("https://www.example.com/path", "https://www.example.com?q=1", "ftp://x", "https://u@x.com"):
        with pytest.raises(UrlError):
            Site.parse(bad)


@pytest.mark.parametrize(
    "url",
    [f"{BASE}/", f"{BASE}/a/b-c_d.e~f", f"{BASE}/a?x=1&y='2'", f"{BASE}/a?b?c", f"{BASE}/" + "a" * 2023],
)
def test_canonical_urls_are_recognised_without_parsing(url: str) -> None:
    assert len(url) <= 2047
    assert SITE.is_canonical(url)


@pytest.mark.parametrize(
    "url",
    [f"{BASE}/a?", f"{BASE}/a/./b", f"{BASE}/a;JSESSIONID=1", f"{BASE}/a?SID=1", f"{BASE}/a?x=1&Sid=2",
     f"{BASE}/" + "a" * 2024, f"{BASE}/%41", "https://www.example.org/a", f"{BASE}/a b"],
)  # fmt: skip
def test_urls_needing_work_are_not_taken_as_canonical(url: str) -> None:
    assert not SITE.is_canonical(url)


def test_canonical_media_urls_are_kept_as_they_are() -> None:
    for url in ("https://cdn.example.com/a.jpg", "http://cdn.example.com/a?x=1&y=2", "https://c.example/" + "a" * 2029):
        assert canonical_media_url(url) == url
    assert canonical_media_url("https://cdn.example.com/a/./b?") == "https://cdn.example.com/a/b"


def test_xml_forbidden_characters_are_named() -> None:
    assert forbidden_character("ok\t\n\r\ue000\U0010ffff") is None
    assert forbidden_character("a\ud800") == "lone surrogate U+D800 at position 1 is not allowed in XML"
    assert forbidden_character("\udfff") == "lone surrogate U+DFFF at position 0 is not allowed in XML"
    assert forbidden_character("\x1f") == "control character U+001F at position 0 is not allowed in XML"
    assert forbidden_character("\ufffe") is not None and forbidden_character("\uffff") is not None
    with pytest.raises(ValueError, match=r"U\+000B"):
        check_xml_text("\x0b")
    assert check_xml_text("fine") == "fine"


# --- Internationalised hosts: IDNA 2008 with UTS 46 mapping (as browsers do), not Python's IDNA 2003 codec ---
@pytest.mark.parametrize(
    ("host", "idna2008", "idna2003"),
    [
        ("faß.de", "xn--fa-hia.de", "fass.de"),  # ß is a letter of its own, not "ss"
        ("βόλος.com", "xn--nxasmm1c.com", "xn--nxasmq6b.com"),  # final sigma ς is kept, not folded to σ
        ("क्\u200dष.com", "xn--11b2ezcw70k.com", "xn--11b2ezc.com"),  # ZWJ after a virama: kept, not dropped
        ("क्\u200cष.com", "xn--11b2ezcs70k.com", "xn--11b2ezc.com"),  # ZWNJ after a virama: kept
        ("نامه\u200cای.ir", "xn--mgba3gch31f060k.ir", "xn--mgba3gch31f.ir"),  # ZWNJ between joining letters
    ],
)
def test_hosts_follow_idna_2008_where_it_differs_from_idna_2003(host: str, idna2008: str, idna2003: str) -> None:
    assert host.encode("idna").decode() == idna2003  # what the old codec gave: another host
    assert canonical_media_url(f"https://{host}/a") == f"https://{idna2008}/a"
    site = Site.parse(f"https://{host}")
    assert site.netloc == idna2008
    assert canonical_page_url(f"https://{idna2008}/a", site) == f"https://{idna2008}/a"
    with pytest.raises(UrlError, match="is not the site's host"):
        canonical_page_url(f"https://{idna2003}/a", site)


def test_a_capital_final_sigma_maps_to_sigma_as_in_browsers() -> None:
    # UTS 46 maps Σ to σ wherever it stands; Python's str.lower() (and so urllib's hostname) would give ς.
    assert canonical_media_url("https://ΒΌΛΟΣ.com/a") == "https://xn--nxasmq6b.com/a"
    assert canonical_media_url("https://βόλοσ.com/a") == "https://xn--nxasmq6b.com/a"
    assert canonical_media_url("https://βόλος.com/a") == "https://xn--nxasmm1c.com/a"


def test_uts46_mapping_folds_what_browsers_fold() -> None:
    site = Site.parse("https://www.bücher.de")
    # upper case, a combining diaeresis (NFC), an ideographic full stop, full-width letters, a soft hyphen
    spellings = (
        "WWW.BÜCHER.DE",
        "www.bu\u0308cher.de",
        "www\u3002bücher.de",
        "\uff57\uff57\uff57.bücher.de",
        "www.bü\u00adcher.de",
    )
    for spelling in spellings:
        assert canonical_page_url(f"https://{spelling}/a", site) == "https://www.xn--bcher-kva.de/a"


@pytest.mark.parametrize(
    ("host", "reason"),
    [
        ("a\u200db.com", r"Joiner U\+200D not allowed"),  # ZWJ between Latin letters: no context allows it
        ("\u200cx.com", r"Joiner U\+200C not allowed"),  # ZWNJ at the start of a label
        ("a\u200cb.com", r"Joiner U\+200C not allowed"),  # ZWNJ between Latin letters (IDNA 2003 dropped it)
        ("☃.net", r"Codepoint U\+2603 .* not allowed"),  # a symbol: IDNA 2003 gave xn--n3h.net
        ("xn--zz.com", "Invalid A-label"),  # punycode that does not decode
        ("xn--fass.de", r"not allowed"),  # punycode of disallowed code points (escaped in the reason)
        ("bü--x.de", "hyphens in 3rd and 4th position"),
        ("-bücher.de", "must not start or end with a hyphen"),
        ("bücher..de", "Empty Label"),
    ],
)
def test_invalid_internationalised_hosts_are_rejected_with_the_reason(host: str, reason: str) -> None:
    for check in (lambda: canonical_media_url(f"https://{host}/a"), lambda: Site.parse(f"https://{host}")):
        with pytest.raises(UrlError, match=f"not a valid internationalised domain name \\(IDNA 2008\\): .*{reason}"):
            check()
    with pytest.raises(UrlError) as caught:
        canonical_page_url(f"https://{host}/a", SITE)
    assert str(caught.value).isprintable()  # joiners and control characters are escaped, not written raw


def test_look_alike_hosts_stay_foreign() -> None:
    site = Site.parse("https://www.example.com")
    for look_alike in ("www.exаmple.com", "www.examp1e.com", "www.ex\u0430mple.com", "www.еxample.com"):
        with pytest.raises(UrlError, match="is not the site's host"):
            canonical_page_url(f"https://{look_alike}/a", site)
