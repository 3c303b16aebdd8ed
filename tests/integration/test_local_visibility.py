"""A local run under failure keeps AWS's time: a message whose invocation failed comes back after its queue's
VisibilityTimeout (template.yaml), one a function gave back itself (a burst's wait) after the visibility it chose,
in the run's virtual time (skipped, not slept), and the report says when."""

from __future__ import annotations

import filecmp
import importlib
import json
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from sitemap_updater.cli import main
from sitemap_updater.local.runner import TEMPLATE, LocalRun
from sitemap_updater.local.stack import load_template, session
from sitemap_updater.service.pipeline import Pipeline
from sitemap_updater.service.rebuild import rebuild_section
from tests.conftest import BASE, event
from tests.integration.conftest import FIXED_NOW, bodies

BATCHES = "sitemap_updater.service.batches"
INGEST = "sitemap_updater.handlers.ingest.ingest_message"


def _queue_of(function: str) -> tuple[str, int]:
    """The queue that feeds ``function`` and its VisibilityTimeout, as template.yaml sets them."""
    resources = load_template(TEMPLATE)["Resources"]
    source = next(iter(resources[function]["Properties"]["Events"].values()))
    queue = str(source["Properties"]["Queue"]["Fn::GetAtt"][0])
    return queue, int(resources[queue]["Properties"]["VisibilityTimeout"])


class FailOnce:
    """Wraps a use case: its first call (for which ``when`` holds) raises, as a crash or an outage would; every
    call is noted with the time the function read on its clock."""

    def __init__(self, real: Callable[..., Any], when: Callable[..., bool] = lambda *_a: True) -> None:
        self.real, self.when = real, when
        self.failed = False
        self.calls: list[tuple[Any, ...]] = []

    def __call__(self, *args: Any) -> Any:
        self.calls.append(args)
        if not self.failed and self.when(*args):
            self.failed = True
            raise ConnectionError("injected: the first call fails")
        return self.real(*args)


def test_a_rebuild_that_fails_once_comes_back_after_its_queue_s_visibility_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a section whose first rebuild fails (the others do not)
    moments: list[tuple[str, datetime]] = []

    def rebuild(pipeline: Pipeline, section: str, marks: Any) -> Any:
        moments.append((section, pipeline.clock()))
        return real(pipeline, section, marks)

    real = rebuild_section
    fault = FailOnce(rebuild, lambda _pipeline, section, _marks: section == "blog")
    monkeypatch.setattr(f"{BATCHES}.rebuild_section", fault)
    events = tmp_path / "events.jsonl"
    pages = [event(f"{BASE}/blog/p{i}", version=1, lastmod="2026-11-20") for i in range(3)]
    pages += [event(f"{BASE}/docs/d{i}", version=1, lastmod="2026-11-19") for i in range(2)]
    events.write_text("".join(json.dumps(p) + "\n" for p in pages), encoding="utf-8")
    out, report_file = tmp_path / "out", tmp_path / "report.json"
    # When `local` runs them
    began = time.monotonic()
    argv = ["local", "--site", BASE, "--sections", "blog,docs", "--events", str(events), "--out", str(out)]
    assert main([*argv, "--report", str(report_file)]) == 0
    wall = time.monotonic() - began
    printed = capsys.readouterr()
    # Then the section's rebuild ran again only after the rebuild queue's visibility timeout on the functions' clock,
    # while the other section was rebuilt at once
    _, timeout = _queue_of("RebuildShardFunction")
    blog = [at for section, at in moments if section == "blog"]
    docs = [at for section, at in moments if section == "docs"]
    assert len(blog) == 1 and len(docs) == 1  # the failed call raised before it was noted
    assert (blog[0] - docs[0]).total_seconds() >= timeout - 30
    # And the report says when the failed request came back
    (wave,) = json.loads(report_file.read_text(encoding="utf-8"))
    (back,) = wave["redelivered"]
    assert (back["function"], back["queue"], back["messages"], back["why"]) == (
        "RebuildShardFunction",
        "RebuildQueue",
        1,
        "failed",
    )
    assert back["visibility_s"] == timeout
    assert back["visible_again_s"] - back["received_s"] == pytest.approx(timeout, abs=0.01)
    assert wave["time"]["took_s"] >= timeout
    assert timeout - 30 < wave["time"]["waited_s"] <= timeout
    # And the summary says so, and nobody waited for it: the wait was skipped, not slept
    assert "1 message(s) of RebuildQueue failed in RebuildShardFunction" in printed.out
    assert f"after the queue's visibility timeout ({timeout} s)" in printed.out
    assert wall < timeout / 4
    # And the published files are those `build` makes of the same events, byte for byte
    built = tmp_path / "built"
    assert main(["build", "--site", BASE, "--sections", "blog,docs", "--events", str(events), "--out", str(built),
                 "--quiet"]) == 0  # fmt: skip
    names = sorted(p.name for p in built.glob("sitemap*"))  # not the build's record of its files
    assert names == sorted(p.name for p in out.glob("sitemap*"))
    assert all(filecmp.cmp(built / name, out / name, shallow=False) for name in names)


@pytest.fixture
def run_for(moto_endpoint: str, request: pytest.FixtureRequest) -> Iterator[Callable[..., LocalRun]]:
    runs: list[LocalRun] = []

    def make(name: str, **parameters: str) -> LocalRun:
        prefix = f"v{abs(hash(request.node.nodeid)) % 10**6}-{name}"
        run = LocalRun(BASE, None, moto_endpoint, clock=lambda: FIXED_NOW, name=prefix, parameters=parameters)
        runs.append(run)
        return run

    yield make
    for run in runs:
        run.close()


def _wave(run: LocalRun) -> dict[str, Any]:
    pages = [event(f"{BASE}/blog/p{i}", version=1, lastmod="2026-11-20") for i in range(3)]
    return run.send_wave(bodies([*pages, event(f"{BASE}/docs/d", version=1, lastmod="2026-11-19")])).as_dict()


def _files(run: LocalRun) -> dict[str, bytes]:
    return {name: data for name, data in run.published().items() if name != "sitemap.xml"}


FAULTS = {  # function -> the use case of its handler that fails once
    "IngestFunction": INGEST,
    "RebuildShardFunction": f"{BATCHES}.rebuild_section",
    "RebuildIndexFunction": f"{BATCHES}.rebuild_index",
    "NotifyFunction": f"{BATCHES}.notify",
}


@pytest.mark.parametrize("function", sorted(FAULTS))
def test_each_function_s_failed_messages_come_back_after_its_own_queue_s_visibility_timeout(
    run_for: Callable[..., LocalRun], monkeypatch: pytest.MonkeyPatch, function: str
) -> None:
    # Given a run without faults, for what the site must look like
    clean = run_for("clean")
    expected = _wave(clean)
    # When the function's use case fails once (the first message of its first batch)
    path = FAULTS[function]
    module, name = path.rsplit(".", 1)
    fault = FailOnce(getattr(importlib.import_module(module), name))
    monkeypatch.setattr(path, fault)
    run = run_for("faulty")
    report = _wave(run)
    # Then its messages came back once, exactly its queue's visibility timeout after they were received: the
    # functions' clock has moved on by that much (the run's own work takes no time on the fixed clock)
    queue, timeout = _queue_of(function)
    assert (run.pipeline.clock() - FIXED_NOW).total_seconds() == pytest.approx(timeout, abs=0.001)
    (back,) = report["redelivered"]
    assert (back["function"], back["queue"], back["why"], back["visibility_s"]) == (
        function,
        queue,
        "failed",
        timeout,
    )
    assert back["visible_again_s"] - back["received_s"] == pytest.approx(timeout, abs=0.001)
    assert report["time"]["took_s"] == report["time"]["waited_s"] == pytest.approx(timeout, abs=0.001)
    assert fault.failed
    # And the site is what it is without the fault: the same files, the same changes announced
    assert _files(run) == _files(clean)
    assert report["changed_urls"] == expected["changed_urls"]
    assert sorted(u for n in report["notifications"] for u in n["urls"]) == sorted(expected["changed_urls"])
    # (where nothing came back and no time passed)
    assert expected["redelivered"] == []
    assert expected["time"] == {"started": FIXED_NOW.isoformat(), "took_s": 0.0, "waited_s": 0.0}


def _latencies(logs: list[str]) -> list[float]:
    found: list[float] = []
    for line in logs:
        if '"PublishLatency"' in line:
            value = json.loads(line)["PublishLatency"]
            found += value if isinstance(value, list) else [value]
    return found


def test_a_burst_s_wait_is_not_cancelled_the_messages_come_back_after_the_visibility_the_rebuild_chose(
    run_for: Callable[..., LocalRun],
) -> None:
    # Given a stack with a freshness of 40 s (no CDN cache locally: a hold of 40 - 5 - 10 = 25 s)
    run = run_for("burst", FreshnessSeconds="40")
    # When a burst of 10 pages arrives in a quiet section
    burst = [event(f"{BASE}/blog/p{i}", version=1, lastmod="2026-11-20") for i in range(10)]
    report = run.send_wave(bodies(burst)).as_dict()
    # Then its pages were published 9 s after their change on the functions' clock (the rest of a burst's wait)
    assert _latencies(run.logs) == pytest.approx([9] * 10, abs=0.001)
    assert any("held: the rebuild waits" in line for line in run.logs)
    # And its rebuild request went back to its queue for 9 s and came back after them, not at once
    (back,) = report["redelivered"]
    assert (back["function"], back["queue"], back["why"], back["visibility_s"]) == (
        "RebuildShardFunction",
        "RebuildQueue",
        "deferred",
        9,
    )
    assert back["visible_again_s"] - back["received_s"] == pytest.approx(9, abs=0.001)
    assert report["time"]["took_s"] == pytest.approx(9, abs=0.001)
    # When a lone page changes at once after, the section is busy: held until 25 s after its rebuild began
    run.logs.clear()
    held = run.send_wave(bodies([event(f"{BASE}/blog/p0", version=2, lastmod="2026-11-21")])).as_dict()
    # (and its index request, which only moves a lastmod, waits its index wait: 40 - 10 s, no CDN cache locally)
    waits = [(b["queue"], b["visibility_s"]) for b in held["redelivered"]]
    assert waits == [("RebuildQueue", 25), ("IndexQueue", 30)] and _latencies(run.logs) == [25]
    # And a lone change a hold after the section's latest rebuild began is a quiet section's: published at once
    run.clock.skip_to(run.clock.seconds() + 25)
    run.logs.clear()
    lone = run.send_wave(bodies([event(f"{BASE}/blog/p1", version=2, lastmod="2026-11-21")])).as_dict()
    assert [b["queue"] for b in lone["redelivered"]] == ["IndexQueue"]  # only its index request waits
    assert _latencies(run.logs) == [0]
    assert run.errors == []


def test_a_section_s_later_changes_wait_behind_its_failed_rebuild_request_as_its_fifo_group_does(
    run_for: Callable[..., LocalRun], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a section whose first rebuild fails, and a page of it that changes meanwhile (the CMS sends it while
    # that rebuild runs)
    run = run_for("group")
    sqs = session().client("sqs", endpoint_url=run.endpoint_url)
    later = event(f"{BASE}/blog/later", version=1, lastmod="2026-11-21")
    rebuilt: list[tuple[float, list[str]]] = []

    def rebuild(pipeline: Pipeline, section: str, marks: Any) -> Any:
        rebuilt.append(((pipeline.clock() - FIXED_NOW).total_seconds(), sorted(str(m.url) for m in marks)))
        if len(rebuilt) == 1:
            sqs.send_message(QueueUrl=run.stack.queue_url("IngestQueue"), MessageBody=json.dumps(later))
            raise ConnectionError("injected: the first rebuild fails")
        return rebuild_section(pipeline, section, marks)

    monkeypatch.setattr(f"{BATCHES}.rebuild_section", rebuild)
    report = run.send_wave(bodies([event(f"{BASE}/blog/first", version=1, lastmod="2026-11-20")])).as_dict()
    # Then the later change's request waited in the section's group until the failed one came back, after the
    # rebuild queue's visibility timeout, and both were rebuilt together: no rebuild overtook the failed one
    _, timeout = _queue_of("RebuildShardFunction")
    assert rebuilt == [(0.0, [f"{BASE}/blog/first"]), (timeout, [f"{BASE}/blog/first", f"{BASE}/blog/later"])]
    assert [(r["why"], r["messages"]) for r in report["redelivered"]] == [("failed", 1)]
    assert sorted(report["changed_urls"]) == [f"{BASE}/blog/first", f"{BASE}/blog/later"]
