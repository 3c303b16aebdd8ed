"""The scale projection (bench/scale.py) and the bootstrap's load time (bench/bootstrap.py) computed as the
documents say, checked against hand computations; and the sections docs/benchmarks.md must carry."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from bench import bootstrap, scale
from bench.cost import CF_REQUEST, S3_PRICE

ROOT = Path(__file__).resolve().parents[2]
PRICE_PUT, PRICE_GET = S3_PRICE["PUT"], S3_PRICE["GET"]


def _use(**given: Any) -> dict[str, Any]:
    base = {"invocations": 0, "billed_s": 0.0, "cpu_s": 0.0, "wait_s": 0.0, "rru": 0.0, "wru": 0.0, "gsi_wru": 0.0,
            "items_read": 0, "s3": {}, "bytes_up": 0, "sqs": {}, "http": 0, "log_bytes": 0, "calls": {}}  # fmt: skip
    return base | given


def _scenario(label: str, rate: float, events: int, files_put: int, p99: float) -> dict[str, Any]:
    # The rebuilds: one S3 PUT per file rewritten and 0.2 s billed per file, nothing else; nothing else billed.
    shard = _use(s3={"PUT": files_put}, billed_s=0.2 * files_put, invocations=files_put)
    return {"label": label, "rate": rate, "events": events, "sustained": True, "put_bytes": 0,
            "puts": {f"sitemap-s-{i:08x}.xml.gz": 1 for i in range(files_put)},
            "functions": {"RebuildShardFunction": shard}, "freshness": {"p99": p99}}  # fmt: skip


def _inputs() -> dict[str, Any]:
    incremental = {
        "pages": 160_000, "files": 16, "date": "2026-11-26", "hourly": {}, "polled": {}, "metrics": [],
        "resources": {}, "memory": {"RebuildShardFunction": 1024},
        "scenarios": [_scenario("1 event/s", 1.0, 100, 50, 40.0), _scenario("50 events/s", 50.0, 1000, 40, 45.0)],
    }  # fmt: skip
    partitions = {"pages": 160_000, "date": "2026-11-26", "runs": {"1": [
        {"label": "burst of 1,000/s, one section", "rate": 1000.0, "busiest_key": {"write": ["k", 900.0],
         "read": ["k", 800.0]}, "table_peak": {"write": 1500.0, "read": 0.0}},
        {"label": "50 events/s, one section", "rate": 50.0, "busiest_key": {"write": ["k", 100.0],
         "read": ["k", 600.0]}, "table_peak": {"write": 1200.0, "read": 0.0}},
    ]}}  # fmt: skip
    shards = [{"urls": 10_000, "peak_mb": 128.0, "rss_before_mb": 100.0},
              {"urls": 50_000, "peak_mb": 256.0, "rss_before_mb": 200.0}]  # fmt: skip
    return {"incremental": incremental, "partitions": partitions, "shard_rebuild": shards}


def test_one_row_matches_a_hand_computation() -> None:
    """50 events/s on a 1,600,000-page site, from a 160,000-page measurement of 16 files in 8 sections."""
    deployed = {"memory_mb": 1024, "timeout_s": 120, "freshness_s": 60}
    row = scale.project(_inputs(), 1_600_000, 50.0, deployed)
    # 200,000 pages a section, halved into 32 files of 6,250 (16 would hold 12,500: over 10,000).
    files = 8 * 32
    assert row["files"] == files
    assert scale.files_for(160_000, 8) == 16  # the 16 files measured
    assert scale.files_for(1_000_000, 8) == 128  # as the 1,000,000-page full build writes
    # The window reproduces what was measured: 40 rewrites for 1,000 events on 16 files (2 a section).
    h = row["window_s"]
    k0 = 50.0 * h / 8
    assert 2 * (1 - (1 - 1 / 2) ** k0) / k0 == pytest.approx(0.04, rel=1e-6)
    # ... and gives, on 32 files a section, what a hand computation does.
    rewrites = 32 * (1 - (31 / 32) ** k0) / k0
    assert row["rewrites"] == pytest.approx(rewrites, rel=1e-9)
    assert rewrites > 0.04 * 2  # more files, fewer coalesced
    # Dollars per million: the rebuilds (requests, 0.2 s of 1 GB a file, a PUT a file) scale with the rewrites;
    # the crawlers fetch each file rewritten twice, up to 4 times an hour each file and the index.
    per_file = 0.20 / 1e6 + 0.2 * 0.0000133334 + PRICE_PUT
    fetch = CF_REQUEST + PRICE_GET
    crawl0 = min(2 * 0.04, 2 * 17 * 4 / (50 * 3600)) * fetch
    measured = 0.04 * per_file + crawl0
    crawl = min(2 * rewrites, 2 * (files + 1) * 4 / (50 * 3600)) * fetch
    assert row["measured_usd"] == pytest.approx(measured * 1e6, rel=1e-9)
    assert row["usd"] == pytest.approx((rewrites * per_file + crawl) * 1e6, rel=1e-9)
    # Freshness: both rates rewrite one file an invocation at 0.2 s, so 0.2 s a file; the p99 grows by the run.
    assert row["measured_run_s"] == pytest.approx(0.2 * 2 * (1 - 0.5**k0), rel=1e-6)
    run = 0.2 * 32 * (1 - (31 / 32) ** k0)
    assert row["run_s"] == pytest.approx(run, rel=1e-6)
    assert row["p99"] == pytest.approx(45.0 + run - row["measured_run_s"], rel=1e-9)
    # DynamoDB: the key's writes at the larger of 100/50 and 900/1,000 per event a second; its reads the larger
    # busiest second; the table the larger of the rate's units and the 50/s busiest second (no writes here).
    dynamo = row["dynamo"]
    assert dynamo["key_write"] == pytest.approx(50 * 2.0)
    assert row["headroom_key_write"] == pytest.approx(500.0)
    assert dynamo["key_read"] == 800.0
    assert dynamo["table_write"] == 1200.0
    assert row["limits"]["a section's key, reads (one key)"] == pytest.approx(800 / 3000)
    assert row["limits"]["files per index"] == pytest.approx(256 / 50_000)
    assert row["limits"]["the rebuild's memory (10,000-URL files)"] == pytest.approx(128 / 1024)
    assert row["limits"]["p99 freshness within the setting"] == pytest.approx(row["p99"] / 60)
    assert row["limits"]["a rebuild's run within its timeout"] == pytest.approx(run / 120)
    assert row["first"] == "p99 freshness within the setting"


def test_a_table_takes_a_new_tables_rate_then_doubles_each_half_hour() -> None:
    # 4,000 a second for 30 minutes, then 8,000: 7.2M + 7.2M units take 1,800 + 900 s.
    assert bootstrap.ramp_s(4_000 * 1_800 + 7_200_000) == pytest.approx(2_700.0)
    # Up to the 40,000 quota: 4k, 8k, 16k, 32k for 30 minutes each, then 40k.
    units = sum(rate * 1_800 for rate in (4_000, 8_000, 16_000, 32_000)) + 40_000 * 100
    assert bootstrap.ramp_s(units) == pytest.approx(4 * 1_800 + 100)
    # Pre-warmed (WarmThroughput) to 40,000: at once.
    assert bootstrap.ramp_s(40_000 * 60, warm=40_000) == pytest.approx(60.0)


def test_one_key_binds_a_one_section_bootstrap_until_it_is_spread() -> None:
    # 1,000 pages measured: 2 write units a page in the chunks, 1 of them each page's entry.
    data = {"pages": 1_000, "partitions": 1, "ranges": 1, "entry_wru": 1_000.0, "hottest_key_wru": 125.0,
            "usage": {"bootstrap:chunk": {"wru": 2_000, "rru": 0, "s3": {}, "sqs": {}, "invocations": 1,
                                          "billed_s": 0.0, "cpu_s": 0.0}}}  # fmt: skip
    pages = 10_000_000
    one = bootstrap.projection(data, pages, 1, one_section=True)
    assert one["load_h"] == pytest.approx(pages / 1_000 / 3600)  # 10M entries at 1,000 a second on one key
    assert bootstrap.BOUNDS[int(one["bound"])] == "one partition key"
    spread = bootstrap.projection(data, pages, 16, one_section=True)
    assert bootstrap.BOUNDS[int(spread["bound"])] == "the table's write rate"  # 20M units from 4,000 a second
    assert spread["load_h"] == pytest.approx(bootstrap.ramp_s(2 * pages) / 3600)
    warm = bootstrap.projection(data, pages, 16, one_section=True, warm=40_000)
    assert warm["load_h"] < spread["load_h"]


def test_benchmarks_document_has_the_partitions_scale_and_bootstrap_sections() -> None:
    text = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    for name, heading in (("partitions", "## Partitions"), ("scale", "## Scale"), ("bootstrap", "## Bootstrap")):
        found = re.search(rf"<!-- {name}:begin -->\n{heading}\n(.*?)<!-- {name}:end -->", text, re.DOTALL)
        assert found, name
    block = re.search(r"<!-- scale:begin -->(.*?)<!-- scale:end -->", text, re.DOTALL)
    assert block
    rows = re.findall(r"^\| ([\d,]+) \| (\d+) \|", block.group(1), re.MULTILINE)
    assert {(p, r) for p, r in rows} >= {(f"{p:,}", r) for p in scale.SIZES for r in ("1", "50")}
    boot = text.split("<!-- bootstrap:begin -->")[1].split("<!-- bootstrap:end -->")[0]
    assert "default limit of 40,000" not in boot  # the load is projected under a new table's limits
    assert "4,000 write units a second" in boot and "### The load under DynamoDB's limits" in boot
    make = (ROOT / "Makefile").read_text(encoding="utf-8")
    bench = make.split("\nbench:")[1].split("\n\n")[0]
    assert "bench.partitions" in bench and "bench.scale" in bench
