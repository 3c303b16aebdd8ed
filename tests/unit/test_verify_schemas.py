"""`verify --schemas DIR`: the folder read for what its schemas declare, whatever their names; an http(s) import
read from the folder, never downloaded. Small schemas written here stand for the published ones."""

from __future__ import annotations

from pathlib import Path

import pytest
from lxml import etree

from sitemap_updater.service.verify_schemas import NS, SchemaError, Schemas

XS = 'xmlns:xsd="http://www.w3.org/2001/XMLSchema"'
SITEMAP = f"""<xsd:schema {XS} targetNamespace="{NS}" xmlns="{NS}" elementFormDefault="qualified">
  <xsd:element name="urlset"><xsd:complexType><xsd:sequence>
    <xsd:element name="url" maxOccurs="unbounded"><xsd:complexType><xsd:sequence>
      <xsd:element name="loc" type="xsd:anyURI"/>
      <xsd:any namespace="##other" minOccurs="0" maxOccurs="unbounded" processContents="strict"/>
    </xsd:sequence></xsd:complexType></xsd:element>
  </xsd:sequence></xsd:complexType></xsd:element>
</xsd:schema>"""
INDEX = f"""<xsd:schema {XS} targetNamespace="{NS}" xmlns="{NS}" elementFormDefault="qualified">
  <xsd:element name="sitemapindex"><xsd:complexType><xsd:sequence>
    <xsd:element name="sitemap" maxOccurs="unbounded"><xsd:complexType><xsd:sequence>
      <xsd:element name="loc" type="xsd:anyURI"/>
    </xsd:sequence></xsd:complexType></xsd:element>
  </xsd:sequence></xsd:complexType></xsd:element>
</xsd:schema>"""
# An extension whose schema imports the XML namespace's from the W3C's address, as the XHTML schema does
LINK = f"""<xsd:schema {XS} targetNamespace="urn:x-link" xmlns="urn:x-link" elementFormDefault="qualified">
  <xsd:import namespace="http://www.w3.org/XML/1998/namespace" schemaLocation="http://www.w3.org/2001/xml.xsd"/>
  <xsd:element name="link"><xsd:complexType><xsd:attribute ref="xml:lang" use="required"/></xsd:complexType>
  </xsd:element>
</xsd:schema>"""
XML_NS = f"""<xsd:schema {XS} targetNamespace="http://www.w3.org/XML/1998/namespace">
  <xsd:attribute name="lang" type="xsd:language"/>
</xsd:schema>"""


def folder(tmp_path: Path, **files: str) -> Path:
    for name, text in files.items():
        (tmp_path / name.replace("_", "-").replace("-xsd", ".xsd")).write_text(text, encoding="utf-8")
    return tmp_path


def urlset(link: str) -> etree._Element:
    return etree.fromstring(f'<urlset xmlns="{NS}" xmlns:l="urn:x-link"><url><loc>https://a.example/</loc>{link}'
                            "</url></urlset>")  # fmt: skip


def test_schemas_are_found_by_what_they_declare_and_an_http_import_is_read_from_the_folder(tmp_path: Path) -> None:
    # Given the sitemap schemas under other names, an extension importing over http, and that file in the folder
    schemas = Schemas.load(folder(tmp_path, a_xsd=SITEMAP, b_xsd=INDEX, link_xsd=LINK, xml_xsd=XML_NS))
    assert schemas.extensions == ("urn:x-link",)
    assert schemas.urlset.validate(urlset('<l:link xml:lang="de"/>'))
    assert not schemas.urlset.validate(urlset("<l:link/>"))  # the imported attribute is required
    assert schemas.index.validate(etree.fromstring(f'<sitemapindex xmlns="{NS}"><sitemap><loc>https://a.example/s'
                                                   "</loc></sitemap></sitemapindex>"))  # fmt: skip


def test_an_extension_with_no_schema_in_the_folder_fails_where_it_is_used(tmp_path: Path) -> None:
    schemas = Schemas.load(folder(tmp_path, sitemap_xsd=SITEMAP, siteindex_xsd=INDEX))
    assert schemas.urlset.validate(urlset(""))
    assert not schemas.urlset.validate(urlset('<l:link xml:lang="de"/>'))


def test_an_http_import_missing_from_the_folder_is_named(tmp_path: Path) -> None:
    with pytest.raises(SchemaError, match=r"imports http://www\.w3\.org/2001/xml\.xsd: put that file in"):
        Schemas.load(folder(tmp_path, sitemap_xsd=SITEMAP, siteindex_xsd=INDEX, link_xsd=LINK))


def test_a_folder_without_the_sitemap_index_schema_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SchemaError, match=r"declares the sitemap namespace's <sitemapindex> \(siteindex\.xsd\)"):
        Schemas.load(folder(tmp_path, sitemap_xsd=SITEMAP))
