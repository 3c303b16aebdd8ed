"""The "Incremental updates" section of docs/benchmarks.md, priced from what ``bench/incremental.py`` measured
(so prices and assumptions in ``bench/cost.py`` can change without measuring again)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from bench import cost
from bench.meter import Usage


def usage(raw: dict[str, Any]) -> Usage:
    """A ``Usage`` back from its JSON form."""
    return Usage(invocations=raw["invocations"], billed_ms=round(raw["billed_s"] * 1000), cpu_s=raw["cpu_s"],
                 wait_s=raw["wait_s"], calls=Counter(raw["calls"]), rru=raw["rru"], wru=raw["wru"],
                 gsi_wru=raw["gsi_wru"], items_read=raw["items_read"], s3=Counter(raw["s3"]),
                 bytes_up=raw["bytes_up"], sqs=Counter(raw["sqs"]), http=raw["http"])  # fmt: skip


def total(scenario: dict[str, Any]) -> dict[str, Any]:
    """Every function's use in a scenario, added up (JSON form)."""
    sum_ = Usage()
    for raw in scenario["functions"].values():
        sum_.add(usage(raw))
    return {"invocations": sum_.invocations, "billed_s": sum_.billed_ms / 1000, "cpu_s": round(sum_.cpu_s, 3),
            "wait_s": sum_.wait_s, "rru": sum_.rru, "wru": sum_.wru, "gsi_wru": sum_.gsi_wru,
            "items_read": sum_.items_read, "s3": dict(sum_.s3), "bytes_up": sum_.bytes_up, "sqs": dict(sum_.sqs),
            "http": sum_.http, "calls": dict(sum_.calls)}  # fmt: skip


def per_million(data: dict[str, Any], scenario: dict[str, Any], function: str | None = None) -> dict[str, float]:
    """Dollars per million events by line (of one function when given; the hourly jobs, idle polling and
    crawler fetches belong to the whole)."""
    memory, events = data["memory"], scenario["events"]
    used = {n: usage(r) for n, r in scenario["functions"].items() if function in (None, n)}
    crawl = {"files": sum(scenario["puts"].values()), "bytes": scenario["put_bytes"]} if function is None else {}
    bill = cost.scaled(cost.dollars(used, memory, crawl), 1e6 / events)
    if scenario["sustained"] and function is None:
        hours = 1e6 / (scenario["rate"] * 3600)
        fixed = cost.dollars({n: usage(r) for n, r in data["hourly"].items()}, memory, {})
        idle = cost.idle_polling(data["polled"], hours)
        bill = {k: v + fixed[k] * hours + idle[k] for k, v in bill.items()}
    return bill


def section(data: dict[str, Any]) -> list[str]:
    return ["## Incremental updates", "", "(draft)", ""]
