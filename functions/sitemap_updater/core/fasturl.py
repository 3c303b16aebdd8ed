"""Canonical page URLs for ``core.fastline``: ``canonical_page_url``'s result without parsing, or None to step aside.

``core.urls`` holds the rules; this module applies them to the URLs real sites export without splitting each one:
a URL on the site, written with the site's own scheme and host, whose path holds the path characters, percent
escapes and characters above ASCII, with any query and fragment. Its canonical form is the site's address, the path
percent-encoded as the rules encode it (``_percent_encode``, the rules' own function, or quoted-printable for
characters above ASCII), and the query likewise, the fragment dropped: what ``canonical_page_url`` makes of it, found
by one regular expression match where nothing needs encoding. A URL with a session ID (a warning), a dot segment,
a path parameter or anything else goes to ``canonical_page_url`` itself (``warned`` gives its warnings), and one it
refuses is left to the model path. ``tests/unit/test_fastline_urls.py`` holds this module to ``canonical_page_url``
over generated URLs.
"""

from __future__ import annotations

import re
from binascii import b2a_qp

from sitemap_updater.core.urls import (
    _DEFAULT_PORTS,
    _PATH_SAFE,
    _QUERY_SAFE,
    _UNRESERVED,
    MAX_URL_LENGTH,
    Site,
    UrlError,
    _percent_encode,
    _remove_dot_segments,
    canonical_page_url,
)

_CACHE_LIMIT = 65_536
# core.urls's clean path characters but ";" (a path parameter may be a session ID), and its clean query characters
PATH_CHARS = r"A-Za-z0-9\-._~!$&'()*+,=:@"
QUERY_CHARS = PATH_CHARS + r";/?"


def _kept_escape() -> str:
    """A percent escape the rules keep as it is: upper-case hex of a byte that is not an unreserved character (the
    rules decode those). Written as a look-ahead of the unreserved bytes grouped by their first hex digit."""
    seconds: dict[str, str] = {}
    for char in sorted(_UNRESERVED):
        code = f"{ord(char):02X}"
        seconds[code[0]] = seconds.get(code[0], "") + code[1]
    unreserved = "|".join(f"{first}[{rest}]" for first, rest in sorted(seconds.items()))
    return f"%(?!{unreserved})[0-9A-F]{{2}}"


KEPT_ESCAPE = _kept_escape()
# The characters above ASCII that XML allows (core.text's _FORBIDDEN: no surrogate, U+FFFE or U+FFFF), as the ones
# left out of a class of all the others: a class listing the characters above ASCII took milliseconds to compile.
_NOT_XML = "\ud800-\udfff\ufffe\uffff"
_PRINTABLE = "".join(map(chr, range(0x21, 0x7F)))  # ASCII but controls, space and DEL
# The same characters above ASCII as ranges, for a class that takes them (a few ranges compile at once)
ABOVE_ASCII = "\x80-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff"


def _not(allowed: str) -> str:
    """A negated class body of every ASCII character not in ``allowed`` (a class body) and what XML forbids."""
    inside = re.compile(f"[{allowed}]")
    return "".join(re.escape(c) for c in map(chr, range(128)) if not inside.fullmatch(c)) + _NOT_XML


# Outside the path: "?", "#", ";", a space, a control character (so no line break nor tab), DEL, a backslash and
# the other ASCII the rules encode, what XML forbids. In the query and fragment: a space (URLs are stripped of
# spaces at their ends), controls, DEL and what XML forbids; "#" ends the query.
NOT_PATH = _not(PATH_CHARS + "/%")
NOT_QUERY = _not(re.escape(_PRINTABLE.replace("#", "")))
NOT_FRAGMENT = _not(re.escape(_PRINTABLE))


def encode_above_ascii(text: str) -> str:
    """``text`` (printable ASCII but a space, and characters above ASCII: what the matches take) with each character
    above ASCII percent-encoded as ``core.urls._percent_encode`` encodes it (UTF-8, upper-case hex), the rest as it
    is; ``ü`` -> ``%C3%BC``.

    By quoted-printable (C code, a pass over the bytes), which writes each byte above ASCII as ``=`` and upper-case
    hex and leaves such ASCII as it is, but: ``=`` itself as ``=3D``, a soft line break ``=\n`` every 76 characters,
    and a ``.`` that ends the text at a line's start as ``=2E``. So every ``=`` in its output starts one of those,
    and replacements make the percent-encoding (``\x00``, which ``text`` cannot hold, stands for ``=`` between
    them), each only where its text is found: on a str, where a search is cheaper than on bytes (whose ``in`` tries
    the operand as an integer first). About half the time of the ASCII codec with an error handler, which raised an
    exception per run."""
    coded = b2a_qp(text.encode("utf-8", "surrogatepass")).decode("ascii")
    if "\n" in coded:
        coded = coded.replace("=\n", "")
    if "=2E" in coded:
        coded = coded.replace("=2E", ".")
    if "=3D" in coded:
        return coded.replace("=3D", "\x00").replace("=", "%").replace("\x00", "=")
    return coded.replace("=", "%")


# Three bytes a byte of UTF-8 becomes in encode_each_above_ascii: a byte of ASCII itself and two DELs (taken out), one
# above ASCII "%" and its two upper-case hex digits.
_DEL = 0x7F
_DIGITS = b"0123456789ABCDEF"
_FIRST = bytes(byte if byte < 0x80 else ord("%") for byte in range(256))
_HIGH = bytes(_DEL if byte < 0x80 else _DIGITS[byte >> 4] for byte in range(256))
_LOW = bytes(_DEL if byte < 0x80 else _DIGITS[byte & 15] for byte in range(256))


def encode_each_above_ascii(texts: list[str]) -> list[str] | None:
    """``encode_above_ascii`` of each of ``texts`` (what the matches take: no control character), all in a few calls
    over the texts one a line (a call's own cost, not its bytes', is most of one URL's); None where a text holds a line
    break (``\n`` or ``\r``), which would not keep them apart.

    Each byte of their UTF-8 becomes three, spread by slices: a byte of ASCII itself and two DELs, which are then taken
    out, a byte above ASCII "%" and its hex digits (as ``bytes.translate`` maps them). A DEL in a text is taken out
    too: such a text (which no match takes) comes out otherwise, on its own line."""
    if not texts:
        return []
    joined = "\n".join(texts)
    if "\r" in joined or joined.count("\n") != len(texts) - 1:
        return None
    data = joined.encode("utf-8", "surrogatepass")
    spread = bytearray(3 * len(data))
    spread[0::3] = data.translate(_FIRST)
    spread[1::3] = data.translate(_HIGH)
    spread[2::3] = data.translate(_LOW)
    return spread.translate(None, b"\x7f").decode("ascii").split("\n")


_HEX = "0123456789ABCDEFabcdef"
# Every percent escape, in either case, as the rules write it (by their own function: the character where it is
# unreserved, else upper-case hex); a path or query of clean characters and escapes is rewritten by looking each up.
_ESCAPES = {e: _percent_encode(e, _PATH_SAFE) for e in (f"%{a}{b}" for a in _HEX for b in _HEX)}
_split_escapes = re.compile("(%[0-9A-Fa-f]{2})").split


def _escapes_rewritten(text: str) -> str:
    """``_percent_encode`` of ``text`` where it holds only characters both safe sets keep and whole escapes: each
    escape as ``_ESCAPES`` has it, the rest as it is (one C-level lookup a piece, no callback per escape)."""
    pieces = _split_escapes(text)
    return "".join(map(_ESCAPES.get, pieces, pieces))


def escapes_respelled(text: str) -> str | None:
    """``_escapes_rewritten(text)`` where every "%" in ``text`` starts an escape (the split finds one escape a "%"),
    else None: each escape written as the rules write it (upper-case hex, or the unreserved character it stands for),
    so every "%" left starts an escape the rules keep."""
    pieces = _split_escapes(text)
    if text.count("%") != len(pieces) >> 1:
        return None
    return "".join(map(_ESCAPES.get, pieces, pieces))


class UrlCanonicaliser:
    """``canonical_page_url`` of one site's URLs, with the section a page of each is in (``Site.section_of``)."""

    def __init__(self, site: Site) -> None:
        self._site = site
        self._base = base = site.base_url
        self._path_at = len(base) + 1  # where a path's first segment starts
        # The scheme's default port, written after the host and before a path ("" where the site's address has one)
        self._port = "" if ":" in site.netloc.rpartition("]")[2] else f":{_DEFAULT_PORTS[site.scheme]}/"
        # A site whose address holds ";" (which is_canonical refuses anywhere): every URL to canonical_page_url
        prefix = "(?!)" if ";" in base else re.escape(base)
        self._simple = re.compile(
            rf"{prefix}(/[^{NOT_PATH}]*)(?:\?([^{NOT_QUERY}]*))?(?:#[^{NOT_FRAGMENT}]*)?"
        ).fullmatch
        self._clean_path = re.compile(rf"(?:[{PATH_CHARS}/]|{KEPT_ESCAPE})*").fullmatch
        self._clean_query = re.compile(rf"(?:[{QUERY_CHARS}]|{KEPT_ESCAPE})*").fullmatch
        # A path or query whose every "%" starts an escape (in either case), the rest clean: see _escapes_rewritten
        self._escaped_path = re.compile(rf"(?:[{PATH_CHARS}/]++|%[0-9A-Fa-f]{{2}})*+").fullmatch
        self._escaped_query = re.compile(rf"(?:[{QUERY_CHARS}]++|%[0-9A-Fa-f]{{2}})*+").fullmatch
        self._names = site.session_params
        self._session_free = re.compile(session_free(site.session_params, "^&")).fullmatch
        self._sections: dict[str, str] = {}  # a canonical URL's text before its second "/" -> its section

    def canonical(self, url: str) -> tuple[str, str] | None:
        """The canonical form of page URL ``url`` and the section of its page, or None when the rules warn about it
        (a session ID removed) or refuse it."""
        found = self._simple(url)
        if found is None:
            respelled = self._respelled(url)
            return self._full(url) if respelled is None else self.canonical(respelled)
        path, query = found[1], found[2]
        if query:
            if self.has_session_id(query):
                return None  # canonical_page_url would remove it, with a warning only the model path gives
            if self._clean_query(query) is None:
                if self._escaped_query(query) is None:
                    query = _percent_encode(query, _QUERY_SAFE)
                else:
                    query = _escapes_rewritten(query)
        if "%" not in path:  # only characters above ASCII to encode, each on its own, as _percent_encode does
            if not path.isascii():
                path = encode_above_ascii(path)
        elif self._clean_path(path) is None:
            path = _percent_encode(path, _PATH_SAFE) if self._escaped_path(path) is None else _escapes_rewritten(path)
        if "/." in path:  # a dot segment to remove (perhaps once decoded: %2E), once encoded, as _assemble does
            path = _remove_dot_segments(path)
        canonical = f"{self._base}{path}?{query}" if query else self._base + path
        if len(canonical) > MAX_URL_LENGTH:
            return None  # the model path words the refusal
        return canonical, self.section_of(canonical)

    def has_session_id(self, query: str) -> bool:
        """True when a name in ``query`` is one of the site's session parameters (as ``_strip_session_ids`` reads
        the query: each "&"-separated pair's text before its "=", lower-cased)."""
        if query.isascii():
            return self._session_free(query) is None
        names = self._names
        return any(pair.split("=", 1)[0].lower() in names for pair in query.split("&"))

    def section_of(self, canonical: str) -> str:
        """``Site.section_of`` a canonical URL, remembered by its first segment (what the section depends on)."""
        slash = canonical.find("/", self._path_at)
        key = canonical[self._path_at : slash] if slash > 0 else ""  # "": no segment followed by another (root)
        section = self._sections.get(key)
        if section is None:
            section = self._site.section_of(canonical)
            if len(self._sections) >= _CACHE_LIMIT:
                self._sections.clear()
            self._sections[key] = section
        return section

    def warned(self, url: str) -> tuple[str, str, list[str]] | None:
        """For a URL ``canonical`` steps aside from: its canonical form, its page's section and the warnings the rules
        give (a session ID removed, each), as ``canonical_page_url`` makes them; None when the rules refuse it.

        A URL ``_simple`` takes (the site's scheme and host, no path parameter) loses its session IDs here, as
        ``_strip_session_ids`` removes them from the query ``urlsplit`` finds (the text between "?" and "#"), and
        the rest is ``canonical``'s: what ``_assemble`` makes of that path and query. Any other, to the rules."""
        found = self._simple(url)
        if found is not None and found[2]:
            names, kept, removed = self._names, [], []
            for pair in found[2].split("&"):
                name = pair.split("=", 1)[0]
                if name.lower() in names:
                    removed.append(f"session ID parameter {name!r} removed from the query")
                else:
                    kept.append(pair)
            query = "&".join(kept)
            done = self.canonical(f"{self._base}{found[1]}?{query}" if query else self._base + found[1])
            if done is not None:
                return done[0], done[1], removed
        warnings: list[str] = []
        try:
            canonical = canonical_page_url(url, self._site, warnings)
        except UrlError:
            return None
        return canonical, self.section_of(canonical), warnings

    def _respelled(self, url: str) -> str | None:
        """``url`` with the site's scheme and host as the site writes them, where it writes them in other (ASCII)
        case or with the scheme's default port and a path follows: the same URL to the rules (they lower-case an
        ASCII scheme and host and drop a default port). None where it is not so written."""
        base, cut = self._base, len(self._base)
        head, rest = url[:cut], url[cut:]
        if not head.isascii() or head.lower() != base:
            return None
        if self._port and rest.startswith(self._port):
            rest = rest[len(self._port) - 1 :]
        elif head == base:
            return None
        return base + rest if rest.startswith("/") else None

    def _full(self, url: str) -> tuple[str, str] | None:
        warnings: list[str] = []
        try:
            canonical = canonical_page_url(url, self._site, warnings)
        except UrlError:
            return None
        return None if warnings else (canonical, self.section_of(canonical))


def session_free(names: frozenset[str], chars: str) -> str:
    """A pattern of an ASCII query of the characters of class body ``chars`` (no "&") and "&" in which no pair's name
    lower-cased (as ``_strip_session_ids`` reads it: a "&"-separated pair's text before its "=") is in ``names``, to
    match to the query's end. Only ASCII names in lower case without "&" or "=" can be one (a pair's name holds
    neither, and lower-cased ASCII is such ASCII); each is tried where a pair starts, in either case letter by letter
    (a look-ahead in the match that finds the query: no search of its own)."""
    usable = sorted(n for n in names if n.isascii() and n == n.lower() and "&" not in n and "=" not in n)
    either = ("".join(f"[{c}{c.upper()}]" if c.isalpha() else re.escape(c) for c in name) for name in usable)
    ahead = rf"(?!(?:{'|'.join(either)})(?:[=&]|\Z))" if usable else ""
    return f"{ahead}[{chars}]*+(?:&{ahead}[{chars}]*+)*+"
