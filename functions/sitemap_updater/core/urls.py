"""URL rules: one canonical scheme and host, RFC 3986 percent-encoding, no session IDs, under 2,048 chars."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import SplitResult, unquote, urlsplit

from sitemap_updater.core.text import forbidden_character

MAX_URL_LENGTH = 2047  # sitemaps.org: "less than 2,048 characters"
DEFAULT_SESSION_PARAMS = frozenset({"jsessionid", "phpsessid", "sid", "sessionid"})
_DEFAULT_PORTS = {"http": 80, "https": 443}
ROOT_SECTION = "root"
EVERY_SEGMENT = "*"
MAX_SECTION_LENGTH = 100

_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_SUB_DELIMS = "!$&'()*+,;="
_PATH_SAFE = frozenset(_UNRESERVED | set(_SUB_DELIMS) | set(":@/"))
_QUERY_SAFE = frozenset(_PATH_SAFE | set("?"))
# Path and query already in canonical form: only allowed characters, no escapes to normalise.
_CLEAN_PATH = re.compile(r"/[A-Za-z0-9\-._~!$&'()*+,;=:@/]*")
_CLEAN_QUERY = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@/?]*")
_NON_EMPTY_QUERY = _CLEAN_QUERY.pattern[:-1] + "+"
# An http(s) URL with a lower-case host name (no punycode label, which has to be checked), no port or user info,
# and a clean path and non-empty query.
_CLEAN_MEDIA = re.compile(
    rf"https?://(?![a-z0-9.-]*xn--)[a-z0-9][a-z0-9.-]*{_CLEAN_PATH.pattern}(?:\?{_NON_EMPTY_QUERY})?"
)


class UrlError(ValueError):
    """A URL that breaks a rule; the message is the human reason."""


def normalise_host(host: str) -> str:
    """Lowercase an ASCII host; map and encode an internationalised one as browsers do, by UTS 46 and IDNA 2008
    (``Bücher.DE`` -> ``xn--bcher-kva.de``, ``faß.de`` -> ``xn--fa-hia.de``, not IDNA 2003's ``fass.de``).
    Punycode labels are checked too; an invalid label (a misplaced joiner, a symbol) is rejected."""
    if host.isascii():
        host = host.lower()
        if "xn--" not in host:
            return host
    import idna  # only for internationalised hosts: most never need its tables

    try:
        return idna.encode(host, uts46=True).decode("ascii")
    except UnicodeError as exc:  # idna.IDNAError and its subclasses
        reason = str(exc).encode("ascii", "backslashreplace").decode("ascii")
        raise UrlError(f"host {host!r} is not a valid internationalised domain name (IDNA 2008): {reason}") from exc


def _host_as_written(parts: SplitResult) -> str:
    """The host of a split URL, not lowercased: ``SplitResult.hostname`` lowercases by Python's rules, which turn
    a final capital sigma into ``ς`` where UTS 46 (and so every browser) maps it to ``σ``."""
    hostinfo = parts.netloc.rpartition("@")[2]
    if hostinfo.startswith("["):  # an IPv6 literal
        return hostinfo[1:].partition("]")[0].lower()
    return hostinfo.partition(":")[0]


def first_segment(url: str) -> str:
    """The decoded first path segment when more segments follow it (``/blog/x`` -> ``blog``), else ``root``."""
    path_start = url.find("/", url.find("//") + 2)
    if path_start < 0:
        return ROOT_SECTION
    first, slash, _rest = url[path_start + 1 :].partition("/")
    if not (slash and first) or "?" in first:  # a query before the second slash: a page at the root
        return ROOT_SECTION
    return unquote(first) if "%" in first else first


def parse_sections(text: str) -> frozenset[str] | None:
    """The ``Sections`` setting: first path segments, comma-separated, that get files of their own (``blog,news``);
    ``*`` gives every first segment its own files; empty, none does. None stands for ``*``."""
    text = text.strip()
    if text == EVERY_SEGMENT:
        return None
    names = [name.strip() for name in text.split(",")] if text else []
    for name in names:
        if not name or len(name) > MAX_SECTION_LENGTH or any(c in name for c in "/?#*") or not name.isprintable():
            raise ValueError(
                f"section {name!r}: a section is a first path segment as it reads decoded (1 to "
                f"{MAX_SECTION_LENGTH} printable characters, no / ? # or *), or the whole setting is *"
            )
    return frozenset(names)


@dataclass(frozen=True, slots=True)
class Site:
    """The site whose sitemaps we publish: one canonical scheme and host (with port if not default), and the
    first path segments whose pages get files of their own (``sections``; None: every first segment). A page
    whose event names no section is in its first segment's section when that segment is one of them, else in
    ``root``: so the number of sections, and of files, is bounded by the setting, whatever the URLs' shapes."""

    scheme: str
    netloc: str
    session_params: frozenset[str] = field(default=DEFAULT_SESSION_PARAMS)
    sections: frozenset[str] | None = frozenset()
    # URLs already in canonical form (the common case) are recognised by one match and kept as they are; the two
    # patterns are compiled at the first URL checked, not for every Site made (a stack lists thousands of sites).
    _canonical: re.Pattern[str] | None = field(default=None, init=False, repr=False, compare=False)
    _canonical_query: re.Pattern[str] | None = field(default=None, init=False, repr=False, compare=False)

    def _patterns(self) -> tuple[re.Pattern[str], re.Pattern[str]]:
        prefix = re.escape(f"{self.scheme}://{self.netloc}")
        plain = re.compile(rf"{prefix}{_CLEAN_PATH.pattern}")
        with_query = re.compile(rf"{prefix}{_CLEAN_PATH.pattern}\?({_NON_EMPTY_QUERY})")
        object.__setattr__(self, "_canonical", plain)
        object.__setattr__(self, "_canonical_query", with_query)
        return plain, with_query

    def section_of(self, url: str) -> str:
        """The section of a canonical page URL whose event names none."""
        segment = first_segment(url)
        return segment if self.sections is None or segment in self.sections else ROOT_SECTION

    def is_canonical(self, url: str) -> bool:
        """True when ``url`` is on this site and needs no change at all (checked without parsing)."""
        if len(url) > MAX_URL_LENGTH or "/." in url or ";" in url:
            return False
        plain, with_query = (
            self._patterns() if self._canonical is None or self._canonical_query is None
            else (self._canonical, self._canonical_query)
        )  # fmt: skip
        if "?" not in url:
            return plain.fullmatch(url) is not None
        match = with_query.fullmatch(url)
        if match is None:
            return False
        names = self.session_params
        return not any(pair.split("=", 1)[0].lower() in names for pair in match.group(1).split("&"))

    @classmethod
    def parse(
        cls, base_url: str, session_params: frozenset[str] | None = None, sections: frozenset[str] | None = frozenset()
    ) -> Site:
        """Build a Site from ``https://www.example.com`` (no path, query, fragment or user info)."""
        parts = urlsplit(base_url.strip())
        if parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
            raise UrlError(f"site {base_url!r} must be an absolute http(s) URL such as https://www.example.com")
        if parts.path not in ("", "/") or parts.query or parts.fragment or "@" in parts.netloc:
            raise UrlError(f"site {base_url!r} must be a scheme and host only, without path or query")
        netloc = _netloc(parts, normalise_host(_host_as_written(parts)))
        params = DEFAULT_SESSION_PARAMS if session_params is None else session_params
        return cls(parts.scheme, netloc, frozenset(p.lower() for p in params), sections)

    @property
    def base_url(self) -> str:
        return f"{self.scheme}://{self.netloc}"

    def file_url(self, name: str) -> str:
        """Absolute URL of a sitemap file published at the site's root."""
        return f"{self.scheme}://{self.netloc}/{name}"


_FILES_PATH = re.compile(r"(/[A-Za-z0-9\-._~:]+)*")  # path segments of unreserved characters (and a host's port)


@dataclass(frozen=True, slots=True)
class FilesBase:
    """Where sitemap files are served: a scheme and host, and for a site served under the stack's distribution a
    path (``https://d111.cloudfront.net/sites/www.example.de``); each file's URL is the base, ``/`` and its name."""

    base_url: str

    @classmethod
    def parse(cls, url: str) -> FilesBase:
        """A base from ``https://host`` or ``https://host/path`` (no query, fragment or user info; a trailing
        ``/`` dropped); UrlError otherwise."""
        parts = urlsplit(url.strip())
        path = parts.path.rstrip("/")
        if parts.query or parts.fragment:
            raise UrlError(f"{url!r}: where sitemap files are served has no query or fragment")
        if not _FILES_PATH.fullmatch(path):
            raise UrlError(f"{url!r}: a path of sitemap files is segments of letters, digits and -._~: only")
        return cls(Site.parse(f"{parts.scheme}://{parts.netloc}").base_url + path)

    def file_url(self, name: str) -> str:
        """Absolute URL of the file ``name``."""
        return f"{self.base_url}/{name}"


def _netloc(parts: SplitResult, host: str) -> str:
    try:
        port = parts.port
    except ValueError as exc:
        raise UrlError(f"port in {parts.netloc!r} is not a number from 0 to 65535") from exc
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    if port is None or port == _DEFAULT_PORTS.get(parts.scheme):
        return host
    return f"{host}:{port}"


def _percent_encode(component: str, safe: frozenset[str]) -> str:
    """Percent-encode as UTF-8 what ``safe`` does not allow; normalise existing escapes, never double-encode."""
    return _ESCAPE_OR_UNSAFE[safe].sub(_encode_match, component)


def _encode_match(match: re.Match[str]) -> str:
    text = match.group()
    if len(text) == 3:  # an escape: decode it when it stands for an unreserved character, else upper-case it
        decoded = chr(int(text[1:], 16))
        return decoded if decoded in _UNRESERVED else text.upper()
    return "".join([f"%{byte:02X}" for byte in text.encode("utf-8")])


# An escape, or one character the component does not allow (a lone "%" among them), per set of safe characters.
_ESCAPE_OR_UNSAFE = {
    safe: re.compile(f"%[0-9A-Fa-f]{{2}}|[^{re.escape(''.join(sorted(safe)))}]") for safe in (_PATH_SAFE, _QUERY_SAFE)
}


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4."""
    output: list[str] = []
    for segment in path.split("/")[1:]:
        if segment == "..":
            if output:
                output.pop()
        elif segment != ".":
            output.append(segment)
    result = "/" + "/".join(output)
    if path.endswith(("/.", "/..")) and not result.endswith("/"):
        result += "/"
    return result


_PATH_PARAM = re.compile(r";([^/;=?]+)=[^/;?]*")


def _strip_session_ids(path: str, query: str, names: frozenset[str], warnings: list[str]) -> tuple[str, str]:
    if ";" in path:

        def drop(match: re.Match[str]) -> str:
            if match.group(1).lower() in names:
                warnings.append(f"session ID parameter {match.group(1)!r} removed from the path")
                return ""
            return match.group(0)

        path = _PATH_PARAM.sub(drop, path)
    if query:
        kept = []
        for pair in query.split("&"):
            name = pair.split("=", 1)[0]
            if name.lower() in names:
                warnings.append(f"session ID parameter {name!r} removed from the query")
            else:
                kept.append(pair)
        query = "&".join(kept)
    return path, query


def _split_absolute(url: str) -> SplitResult:
    problem = forbidden_character(url)
    if problem is not None or any(c in url for c in "\t\n\r"):
        raise UrlError(problem or "tab and line break characters are not allowed in a URL")
    parts = urlsplit(url.strip(" "))
    if parts.scheme not in _DEFAULT_PORTS:
        shown = f"{parts.scheme}:" if parts.scheme else "a relative URL"
        raise UrlError(f"must be an absolute http or https URL, not {shown}")
    if not parts.netloc or not parts.hostname:
        raise UrlError("must name a host")
    if "@" in parts.netloc:
        raise UrlError("user info (user:password@) is not allowed in a URL")
    return parts


def _assemble(scheme: str, netloc: str, path: str, query: str) -> str:
    if not path:
        path = "/"
    if not _CLEAN_PATH.fullmatch(path):
        path = _percent_encode(path, _PATH_SAFE)
    if "/." in path:
        path = _remove_dot_segments(path)
    if query and not _CLEAN_QUERY.fullmatch(query):
        query = _percent_encode(query, _QUERY_SAFE)
    url = f"{scheme}://{netloc}{path}?{query}" if query else f"{scheme}://{netloc}{path}"
    if len(url) > MAX_URL_LENGTH:
        raise UrlError(f"is {len(url):,} characters after canonicalisation; sitemaps allow at most {MAX_URL_LENGTH:,}")
    return url


_FOREIGN_HOST = re.compile(r"(?:^|; )(?:[\w.\[\]]+\.)?url: host (['\"])(.+?)\1 is not the site's host ")


def foreign_host(reason: str) -> str | None:
    """The host (and port) of a page URL that an event was rejected for being on, read from the rejection's reason
    (``url: host 'www.example.com' is not the site's host 'example.com'``), or None for another reason."""
    found = _FOREIGN_HOST.search(reason)
    return None if found is None else found[2]


def canonical_page_url(url: str, site: Site, warnings: list[str] | None = None) -> str:
    """Canonicalise a page URL of ``site``: its scheme and host, default port and fragment dropped,
    RFC 3986 percent-encoding, session IDs stripped (a warning each), under 2,048 characters."""
    if site.is_canonical(url):
        return url
    parts = _split_absolute(url)
    host = normalise_host(_host_as_written(parts))
    netloc = _netloc(parts, host)
    if netloc != site.netloc:
        raise UrlError(f"host {netloc!r} is not the site's host {site.netloc!r}")  # foreign_host reads it back
    path, query = _strip_session_ids(
        parts.path, parts.query, site.session_params, warnings if warnings is not None else []
    )
    return _assemble(site.scheme, netloc, path, query)


def canonical_media_url(url: str) -> str:
    """Canonicalise a URL that may be on another host (images, videos, hreflang alternates)."""
    if len(url) <= MAX_URL_LENGTH and "/." not in url and _CLEAN_MEDIA.fullmatch(url):
        return url  # already canonical (the common case), recognised without parsing
    parts = _split_absolute(url)
    netloc = _netloc(parts, normalise_host(_host_as_written(parts)))
    return _assemble(parts.scheme, netloc, parts.path, parts.query)
