"""XML 1.0 character rules, as the specification states them."""

from __future__ import annotations

from sitemap_updater.core.text import forbidden_character


def _allowed_by_xml_1_0(code: int) -> bool:
    # Char ::= #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF]
    return code in (0x9, 0xA, 0xD) or 0x20 <= code <= 0xD7FF or 0xE000 <= code <= 0xFFFD or code >= 0x10000


def test_every_code_point_is_judged_as_xml_1_0_says() -> None:
    # Given every Unicode code point, when each is checked as text, then exactly the forbidden ones are reported
    wrong = [code for code in range(0x110000) if (forbidden_character(chr(code)) is None) != _allowed_by_xml_1_0(code)]
    assert wrong == []
