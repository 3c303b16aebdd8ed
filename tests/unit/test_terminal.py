"""Text from the network or the input, shown on a terminal: every character that could start a line, run a
terminal command, reorder what is shown or fail to print is escaped; every other character is left as it is."""

from __future__ import annotations

import unicodedata
from typing import Any

import pytest

from sitemap_updater.cli_local import _wave_summary
from sitemap_updater.cli_redrive import _text_lines
from sitemap_updater.core.terminal import shown
from sitemap_updater.ports import QueuedMessage
from sitemap_updater.service.dead_letters import DeadLetterKind
from sitemap_updater.service.redrive import Action, Decision

# Unicode's Bidi_Control characters (PropList.txt), written out: the marks, embeddings, overrides and isolates.
BIDI_CONTROLS = {0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)}
HOSTILE = "https://www.example.com/a\n\x1b[31mproblem: forged\r\x9b2J\u2028\u202etxt.exe\udcff\x85\x1c"


def unsafe(char: str) -> bool:
    """Whether a character acts on a terminal or a line count: by its Unicode category, not by our pattern."""
    return unicodedata.category(char) in ("Cc", "Zl", "Zp", "Cs") or ord(char) in BIDI_CONTROLS


def escape(char: str) -> str:
    named = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
    return named.get(char) or (f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}")


def test_each_unsafe_character_is_escaped_and_every_other_left_as_it_is() -> None:
    # Every code point of the first 12,288 (Latin, C0 and C1, Arabic, the General Punctuation block with its
    # separators and bidi controls) and every surrogate, judged one by one against the Unicode database
    wrong = [
        f"U+{code:04X}: {shown(char)!r}"
        for code in [*range(0x3000), *range(0xD800, 0xE000), 0xFEFF, 0x1F600]
        if shown(char := chr(code)) != (escape(char) if unsafe(char) else char)
    ]
    assert wrong == []


def test_hostile_text_stays_one_line_prints_and_reads_back_its_escapes() -> None:
    text = shown(HOSTILE)
    assert text.splitlines() == [text]
    assert text.encode("utf-8")  # a lone surrogate would raise here, as print does
    assert text == (
        "https://www.example.com/a\\n\\x1b[31mproblem: forged\\r\\x9b2J\\u2028\\u202etxt.exe\\udcff\\x85\\x1c"
    )


@pytest.mark.parametrize(
    "text",
    [
        "https://例え.jp/パス?q=ü",
        "👨‍👩‍👧 family, 👍🏽",  # zero-width joiners and a skin tone modifier
        "می‌خواهم",  # a zero-width non-joiner, part of the Persian word
        "C:\\exports\\pages.jsonl",  # a backslash is left alone
        "",
    ],
)
def test_text_that_cannot_act_on_a_terminal_is_shown_as_it_is(text: str) -> None:
    assert shown(text) == text


def test_a_local_wave_summary_shows_each_rejection_and_webhook_answer_on_its_own_line() -> None:
    report: dict[str, Any] = {
        "wave": 1,
        "events": {"accepted": 1, "rejected": 1},
        "s3": {"put": ["sitemap.xml"], "deleted": []},
        "changed_urls": [],
        "notifications": [],
        "rejections": [{"reason": f"url: {HOSTILE}"}],
        "webhooks": [{"file": "hook\n.json", "status": 200, "answer": {"ignored": "publish\x1b[2J\nqueued: x"}}],
    }
    lines = _wave_summary("events.jsonl", report).splitlines()
    assert lines == [
        "wave 1 (events.jsonl): 1 accepted, 1 rejected",
        "  webhook hook\\n.json: HTTP 200, ignored: publish\\x1b[2J\\nqueued: x",
        "  written: sitemap.xml",
        f"  rejected (to the DLQ): url: {shown(HOSTILE)}",
    ]


def test_a_redriven_dead_letters_body_and_reason_are_shown_escaped() -> None:
    message = QueuedMessage("m-1", "r", '{"url": "' + HOSTILE + '"}', {"reason": "url\n\x1b[31mforged"})
    text = _text_lines(Decision(message, DeadLetterKind.REJECTED, Action.KEEP), dry_run=True)
    lines = text.splitlines()
    assert len(lines) == 3
    assert lines[1] == "  reason: url\\n\\x1b[31mforged"
    assert lines[2] == '  body: {"url": "' + shown(HOSTILE) + '"}'
