"""Text from the network or the input made safe to print on one terminal line.

A ``<loc>`` holding a line break would start a line of its own that reads like one of ours (a forged
``problem:`` or ``rejected:``), an ESC or a C1 control starts a terminal command (colours, cursor moves, a
window title), a bidirectional override reorders what is shown, and a lone surrogate (from bytes that are not
UTF-8) makes ``print`` itself raise. ``shown`` writes each of these as a Python-style escape (``\\n``, ``\\x1b``,
``\\u202e``, ``\\udcff``) and leaves every other character as it is, so a URL in any script still reads as
itself. A backslash is left alone too: the escapes are for reading, not for parsing back (``--json`` is the
exact form).
"""

from __future__ import annotations

import re

# C0 controls and DEL, C1 controls, the line and paragraph separators, the bidirectional marks, embeddings,
# overrides and isolates (Unicode's Bidi_Control), and the surrogates.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def shown(text: object) -> str:
    """``text`` (``str()`` of it) with every character that could act on a terminal written as an escape."""
    value = text if isinstance(text, str) else str(text)
    if _UNSAFE.search(value) is None:
        return value
    return _UNSAFE.sub(_escape, value)
