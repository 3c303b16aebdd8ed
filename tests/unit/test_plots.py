"""The figures of docs/benchmarks.md (bench/plots.py): a PNG of the stated size, small, and the same bytes for the
same data, so that rewriting the document from the cached figures leaves git clean."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import pytest

from bench import incremental, plots
from bench.traffic import Scenario, Traffic

PIXELS = (round(plots.WIDTH * plots.DPI), round(plots.HEIGHT * plots.DPI))


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def _png_chunks(data: bytes) -> list[bytes]:
    chunks, at = [], 8
    while at < len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        chunks.append(data[at + 4 : at + 8])
        at += 12 + length
    return chunks


def _usage(invocations: int, billed_s: float, rru: float, s3_puts: int) -> dict[str, Any]:
    return {"invocations": invocations, "billed_s": billed_s, "cpu_s": billed_s / 2, "wait_s": 0.0, "rru": rru,
            "wru": rru, "gsi_wru": 0.0, "items_read": int(rru), "s3": {"PUT": s3_puts}, "bytes_up": 40_000 * s3_puts,
            "sqs": {"standard": invocations, "fifo": invocations}, "http": 0, "log_bytes": 2_000,
            "calls": {}}  # fmt: skip


def _scenario(label: str, rate: float, events: int, sustained: bool, seconds: list[float]) -> dict[str, Any]:
    return {"label": label, "role": "cost", "rate": rate, "events": events, "section": None, "sustained": sustained,
            "functions": {"IngestFunction": _usage(events // 10, 3.0, events, 0),
                          "RebuildShardFunction": _usage(events // 50, 20.0, 2.0 * events, events // 50)},
            "puts": {"sitemap-blog-1.xml.gz": events // 50}, "put_bytes": 800 * events,
            "freshness": {"pages": len(seconds), "unshown": 0, "seconds": sorted(seconds)}}  # fmt: skip


# bench.incremental's JSON, small: two sustained rates and a burst.
INCREMENTAL: dict[str, Any] = {
    "pages": 1_000, "files": 3, "memory": {"IngestFunction": 256, "RebuildShardFunction": 1024},
    "hourly": {"SweepFunction": _usage(1, 1.0, 10.0, 0)}, "metrics": ["Changes"],
    "polled": {"IngestQueue": "standard", "RebuildQueue": "fifo"},
    "resources": {"alarms": 4, "dashboards": 1, "keys": 0},
    "scenarios": [
        _scenario("1 event/s", 1.0, 300, True, [9.0 + (i % 30) / 10 for i in range(300)]),
        _scenario("50 events/s", 50.0, 6_000, True, [12.0 + (i % 150) / 10 for i in range(6_000)]),
        _scenario("burst of 1,000/s, one section", 1000.0, 3_000, False, [18.0 + (i % 23) / 10 for i in range(3_000)]),
    ],
}  # fmt: skip
# bench.report.price_list's rows: three rates at three freshness settings.
PRICE_LIST: list[dict[str, Any]] = [
    {"scenario": label, "rate": rate, "freshness_setting_s": setting, "usd_per_million": usd}
    for label, rate, dollars in [("1 event/s", 1.0, (28.3, 20.7, 10.4)), ("50 events/s", 50.0, (6.0, 4.4, 3.7)),
                                 ("burst of 1,000/s, one section", 1000.0, (3.2, 3.2, 3.2))]
    for setting, usd in zip((30, 60, 900), dollars, strict=True)
]  # fmt: skip
WALLS = {
    "sitemap-updater build": {10_000: 0.12, 50_000: 0.25, 1_000_000: 2.6},
    "xml-sitemap-writer": {10_000: 0.09, 50_000: 0.30, 1_000_000: 3.8},
    "floor: JSON parse + gzip -6": {10_000: 0.03, 50_000: 0.15, 1_000_000: 3.1},
}


@pytest.mark.parametrize(
    "draw",
    [
        lambda path: plots.build_time(WALLS, path),
        lambda path: plots.cost_per_million(INCREMENTAL, path),
        lambda path: plots.freshness(INCREMENTAL, path),
        lambda path: plots.price_list(PRICE_LIST, path),
    ],
    ids=["build-time", "cost", "freshness", "price-list"],
)
def test_a_figure_is_a_small_png_of_its_size_and_the_same_bytes_for_the_same_data(draw: Any, tmp_path: Path) -> None:
    first = draw(tmp_path / "a" / "figure.png").read_bytes()
    again = draw(tmp_path / "b" / "figure.png").read_bytes()
    assert _png_size(first) == PIXELS
    assert len(first) < 100_000
    assert again == first
    assert not {b"tEXt", b"iTXt", b"zTXt", b"tIME"} & set(_png_chunks(first))  # no version, no date


def test_different_data_draws_a_different_figure(tmp_path: Path) -> None:
    faster = {tool: {pages: s / 2 for pages, s in by_size.items()} for tool, by_size in WALLS.items()}
    first, other = plots.build_time(WALLS, tmp_path / "a.png"), plots.build_time(faster, tmp_path / "b.png")
    assert first.read_bytes() != other.read_bytes()


def test_the_incremental_benchmark_keeps_every_page_freshness_for_the_distribution() -> None:
    traffic = Traffic(Scenario("x", 1.0, 3), {}, 0.0)
    traffic.freshness_s = [9.04, 9.96, 31.25]
    kept = incremental._freshness(traffic)
    assert kept["seconds"] == [9.0, 10.0, 31.2]
    assert (kept["p50"], kept["max"]) == (10.0, 31.2)


def test_the_price_list_is_drawn_from_its_rows_and_shown_above_its_table(tmp_path: Path) -> None:
    # Given the price list of a run, and the same with one price changed
    dearer = [
        dict(row, usd_per_million=row["usd_per_million"] * 2) if row["rate"] == 1.0 else row for row in PRICE_LIST
    ]
    # When each is drawn
    first, other = plots.price_list(PRICE_LIST, tmp_path / "a.png"), plots.price_list(dearer, tmp_path / "b.png")
    # Then another price draws another figure
    assert first.read_bytes() != other.read_bytes()
    # and the document shows it, with its alt text, right above the table it draws
    doc = (Path(__file__).resolve().parents[2] / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    image = doc.index(f"![{plots.PRICE_LIST_ALT}](benchmarks/{plots.PRICE_LIST.name})")
    assert image < doc.index("| scenario | 30 s | 60 s |") < image + len(plots.PRICE_LIST_ALT) + 100
