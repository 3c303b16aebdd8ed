"""The JSON of an export's lines read into the common shape of ``core.fastline`` by msgspec: exact types (nothing the
models would coerce), no field the models do not know, their bounds; a chunk of such lines in one call."""

from __future__ import annotations

from typing import Annotated

from msgspec import UNSET, Meta, Struct, UnsetType
from msgspec.json import Decoder

from sitemap_updater.core.event_rules import MAX_BODY_BYTES, MAX_IMAGES, MAX_SECTION_CHARS, MAX_VERSION, ChangeFreq


class Image(Struct, forbid_unknown_fields=True, gc=False):
    loc: Annotated[str, Meta(min_length=1)]
    title: str | None = None
    caption: str | None = None


class Line(Struct, forbid_unknown_fields=True, gc=False):
    """The common shape: exact JSON types, optional fields null where the models allow it. ``lastmod`` tells
    null (the page has no lastmod: none is shown) from absent (occurred_at is shown); ``images`` may not be null."""

    type: str
    url: Annotated[str, Meta(min_length=1)]
    occurred_at: str
    version: Annotated[int, Meta(ge=0, le=MAX_VERSION)] | None = None
    lastmod: str | UnsetType | None = UNSET
    changefreq: ChangeFreq | None = None
    priority: Annotated[float, Meta(ge=0.0, le=1.0)] | None = None
    section: Annotated[str, Meta(min_length=1, max_length=MAX_SECTION_CHARS)] | None = None
    images: Annotated[list[Image], Meta(max_length=MAX_IMAGES)] | UnsetType = UNSET


DECODE = Decoder(Line).decode
_DECODE_ALL = Decoder(list[Line | None]).decode
_BLOCK = MAX_BODY_BYTES // 2  # a line longer than MAX_BODY_BYTES holds one of these blocks whole
# Between two lines when a chunk is read as one JSON array: see decode_chunk.
_BETWEEN = b",null,\n"


def decode_chunk(data: bytes) -> tuple[list[Line | None], list[bytes] | None]:
    """Each line of ``data`` (as ``bytes.splitlines`` splits it) read into the common shape, or None where it is not
    of it or is longer than MAX_BODY_BYTES; and the lines, when they were split to be read one by one.

    A chunk whose every line is of the common shape is read in one call, as one JSON array of its lines with a null
    between each two (``_BETWEEN``). That separator cannot stand inside a line's value: its line break is not
    allowed in a JSON string, and its null is no image, nor a member of an object, nor a Line. So each line gives
    the array at least one item, and an array of twice the lines less one items holds each line's value at an even
    place (a line holding two values would make more items). Any other chunk is read line by line."""
    text = data.replace(b"\r\n", b"\n") if b"\r" in data else data
    if text.endswith(b"\n"):
        text = text[:-1]
    if (
        text
        and b"\r" not in text  # a lone \r ends a line too
        and all(text.find(b"\n", at, at + _BLOCK) >= 0 for at in range(0, len(text) - _BLOCK + 1, _BLOCK))
    ):
        try:
            items = _DECODE_ALL(b"[" + text.replace(b"\n", _BETWEEN) + b"]")
        except ValueError:
            pass
        else:
            lines = items[0::2]
            if len(items) == 2 * text.count(b"\n") + 1 and all(lines):  # all: no line is a bare null
                return lines, None
    raws = data.splitlines()
    decoded: list[Line | None] = []
    for raw in raws:
        if len(raw) > MAX_BODY_BYTES:
            decoded.append(None)
            continue
        try:
            decoded.append(DECODE(raw))
        except ValueError:  # not JSON, or not of the common shape: msgspec's errors are ValueErrors
            decoded.append(None)
    return decoded, raws
