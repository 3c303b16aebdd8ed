"""The official sitemap schemas, as sitemaps.org and Google publish them, for ``verify --schemas``.

The folder is read for what its files declare, not for their names: the sitemap namespace's ``<urlset>``
(sitemaps.org's ``sitemap.xsd``) and ``<sitemapindex>`` (``siteindex.xsd``) are required; a schema for each
extension namespace present (Google's ``sitemap-image.xsd``, ``sitemap-video.xsd`` and ``sitemap-news.xsd``, a
schema of the XHTML namespace for ``<xhtml:link>``) is imported beside ``sitemap.xsd``, whose ``<url>`` takes any
element of another namespace strictly: an extension whose schema is missing is reported where it is used. A file
declaring no namespace (a wrapper importing the others) is passed over. Nothing is read from the network: an import
of an http(s) ``schemaLocation`` (the W3C's XHTML schema imports ``http://www.w3.org/2001/xml.xsd``) is read
from the file of that name in the folder.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lxml import etree

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
_XSD = "{http://www.w3.org/2001/XMLSchema}"


class SchemaError(ValueError):
    """The folder lacks a schema verify needs, or holds one that does not load; the message says which."""


class _FromFolder(etree.Resolver):
    """An http(s) schema location read from the folder's file of the same name; the ones not there, noted."""

    def __init__(self, folder: Path) -> None:
        super().__init__()
        self.folder = folder
        self.missing: list[str] = []

    def resolve(self, system_url: str, public_id: str, context: Any) -> Any:  # type: ignore[override]  # the stubs lack context
        if not system_url.startswith(("http://", "https://")):
            return None
        local = self.folder / system_url.rstrip("/").rsplit("/", 1)[-1]
        if not local.is_file():
            self.missing.append(system_url)
            return None
        return self.resolve_filename(str(local.resolve()), context)  # type: ignore[attr-defined]  # not in the stubs


@dataclass(frozen=True, slots=True)
class Schemas:
    """The schemas a ``<urlset>`` (with the extensions found) and a ``<sitemapindex>`` are validated with."""

    urlset: etree.XMLSchema
    index: etree.XMLSchema
    extensions: tuple[str, ...]  # the extension namespaces a schema was found for

    @classmethod
    def load(cls, folder: Path) -> Schemas:
        """The schemas in ``folder``; OSError when it cannot be read, SchemaError when one is missing or broken."""
        parser = etree.XMLParser(no_network=True, resolve_entities=False)
        resolver = _FromFolder(folder)
        parser.resolvers.add(resolver)
        urlset: Path | None = None
        index: Path | None = None
        extensions: dict[str, Path] = {}
        for path in sorted(folder.glob("*.xsd")):
            namespace, elements = _declares(path, parser)
            if namespace == NS:
                urlset = path if "urlset" in elements and urlset is None else urlset
                index = path if "sitemapindex" in elements and index is None else index
            elif namespace and elements:  # an extension's elements (xml.xsd, say, declares attributes only)
                extensions.setdefault(namespace, path)
        if urlset is None or index is None:
            missing = " and ".join(
                what
                for what, found in (("<urlset> (sitemap.xsd)", urlset), ("<sitemapindex> (siteindex.xsd)", index))
                if found is None
            )
            raise SchemaError(f"no schema in {folder} declares the sitemap namespace's {missing}, from sitemaps.org")
        imports = [(NS, urlset), *sorted(extensions.items())]
        wrapper = '<xsd:schema xmlns:xsd="http://www.w3.org/2001/XMLSchema">{}</xsd:schema>'.format(
            "".join(f'<xsd:import namespace="{ns}" schemaLocation="{p.resolve().as_uri()}"/>' for ns, p in imports)
        )
        return cls(
            _compile(etree.fromstring(wrapper.encode(), parser), folder, resolver),
            _compile(etree.parse(str(index), parser), index, resolver),
            tuple(sorted(extensions)),
        )


def _declares(path: Path, parser: etree.XMLParser) -> tuple[str, set[str]]:
    """A schema file's target namespace ('' for none, or for a file that is not a schema) and global elements."""
    try:
        root = etree.parse(str(path), parser).getroot()
    except etree.XMLSyntaxError as exc:
        raise SchemaError(f"{path} is not well-formed XML: {exc}") from exc
    if root.tag != f"{_XSD}schema":
        return "", set()
    return root.get("targetNamespace") or "", {e.get("name") or "" for e in root.iterfind(f"{_XSD}element")}


def _compile(doc: Any, where: Path, resolver: _FromFolder) -> etree.XMLSchema:
    try:
        return etree.XMLSchema(doc)
    except etree.XMLSchemaParseError as exc:
        if resolver.missing:
            raise SchemaError(
                f"a schema imports {resolver.missing[0]}: put that file in {resolver.folder} (nothing is downloaded)"
            ) from exc
        raise SchemaError(f"the schemas in {where} do not load: {exc}") from exc
