"""A bootstrap of N generated pages through the state machine's local harness (``local/bootstrap.py``), on the
simulation's in-memory AWS with every call counted and priced (``bench/meter.py``), and a projection to 100M
and 1B pages on AWS. ``python -m bench.bootstrap [PAGES]`` measures, prints JSON (last line) and rewrites the
"Bootstrap" section of docs/benchmarks.md; ``--doc-only`` rewrites it from the last run.

The workers run one after another here (the fakes are not thread-safe; a deployed chunk worker keeps 16 writes
in flight), so the wall time here is the sum of the workers' CPU, not the state machine's."""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import math
import resource
import sys
import time
import tracemalloc
import warnings
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from bench import cost, sections
from bench.meter import Meter
from bench.pages import write_pages
from bench.usage import Usage

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "bench" / ".cache"
LAST = CACHE / "bootstrap.json"
CHUNK_LINES = 100_000  # an export object: about 16 MB of JSONL
SAMPLED = 1  # invocations of each step whose memory is traced
MEMORY_MB = 2048  # BootstrapFunction's MemorySize
SFN_TRANSITION = 0.025 / 1000  # Step Functions standard, per state transition
TRANSITIONS_PER_CHILD = 3  # a map item's child execution: its start, its task, its end
LOAD_CONCURRENCY, RENDER_CONCURRENCY = 12, 40  # the template's MaxConcurrency of each map
THREADS = 16  # service/bootstrap.py RECORD_THREADS: a chunk worker's writes in flight
DDB_WRITE_LIMIT = 40_000  # write units a second: an on-demand table's default maximum throughput (a quota)
DDB_NEW_TABLE = 4_000  # write units a second a new on-demand table takes at once (its warm throughput)
DDB_DOUBLING_S = 1_800  # an on-demand table takes up to twice its previous peak; more may throttle for 30 minutes
DDB_KEY_LIMIT = 1_000  # write units a second one partition key takes
SPREADS = (1, 16, 32)  # SectionPartitions projected
CALLS_PER_PAGE = 3  # a GetItem of the page state, then a PutItem of it and one of its entry
WRITE_LATENCY_S = 0.010  # one DynamoDB round trip, as bench/cost.py states for the others


class SimBackend:
    """The state machine's worker and bucket on a simulation, metered; one function name per step."""

    def __init__(self, sim: Any, meter: Meter) -> None:
        from sitemap_updater.handlers import bootstrap as handler
        from sitemap_updater.local.runner import LocalContext
        from sitemap_updater.wiring.pipeline import use_pipeline

        self.sim, self.meter, self._handler, self._context = sim, meter, handler.handler, LocalContext
        use_pipeline(sim.pipeline)
        self.peaks: dict[str, int] = {}  # step -> the largest transient allocation of one invocation (bytes)
        self._sampled: dict[str, int] = {}

    def invoke(self, payload: dict[str, Any]) -> dict[str, Any]:
        step = str(payload["step"])
        sample = self._sampled.get(step, 0) < SAMPLED  # the first of each step (tracemalloc slows what it traces)
        self._sampled[step] = self._sampled.get(step, 0) + 1
        if sample:
            gc.collect()
            tracemalloc.start()
        context = self._context("bootstrap", memory_limit_in_mb=MEMORY_MB)
        result, _billed = self.meter.invoke(
            f"bootstrap:{step}", lambda: self._handler(payload, cast(Any, context)), cost.cpu_scale(MEMORY_MB)
        )
        if sample:
            current, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            # What the invocation held at its peak above what it left behind (the fakes' new items: DynamoDB's
            # and S3's, not the worker's).
            self.peaks[step] = max(self.peaks.get(step, 0), peak - current)
        return dict(result)

    def list_objects(self, prefix: str) -> list[dict[str, Any]]:
        objects = self.sim.s3.objects
        return [{"Key": k, "Size": len(o.data)} for k, o in sorted(objects.items()) if k.startswith(prefix)]

    def get_object(self, key: str) -> bytes:
        return bytes(self.sim.s3.objects[key].data)

    def put_object(self, key: str, body: bytes) -> None:
        from tests.sim.fakes import S3Object

        self.sim.s3.objects[key] = S3Object(body, hashlib.md5(body).hexdigest(), 0)  # an ETag


def run(size: int) -> dict[str, Any]:
    warnings.simplefilter("ignore")
    from sitemap_updater.local.bootstrap import LocalStateMachine
    from sitemap_updater.service import bootstrap
    from tests.sim.world import Config, Simulation

    bootstrap.RECORD_THREADS = 1  # the fakes take one call at a time
    sim = Simulation(Config(0, max_urls=10_000, max_files_per_index=50_000))  # as deployed
    meter = Meter(sim)
    backend = SimBackend(sim, meter)
    machine = LocalStateMachine(backend)
    path = write_pages(CACHE / f"pages-{size}.jsonl", size)
    export_bytes = 0
    with path.open("rb") as lines:
        chunk, number = [], 0
        for line in lines:
            chunk.append(line)
            if len(chunk) == CHUNK_LINES:
                export_bytes += _upload(machine, number, chunk)
                chunk, number = [], number + 1
        if chunk:
            export_bytes += _upload(machine, number, chunk)
    started, cpu = time.perf_counter(), time.process_time()
    with contextlib.redirect_stdout(meter.logs):
        execution = machine.execute("bench")
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    stored = {k: len(o.data) for k, o in sim.s3.objects.items()}
    entries = {pk: u for (pk, kind), u in meter.units_by_key.items() if kind == "write" and pk.startswith("sec#")}
    return {
        "partitions": sim.pipeline.settings.section_partitions,
        "entry_wru": sum(entries.values()),  # the manifest entries' write units, every step
        "hottest_key_wru": max(entries.values(), default=0.0),  # the busiest partition key's, as measured
        "date": f"{datetime.now(UTC).date():%Y-%m-%d}",
        "pages": size,
        "chunks": execution.maps["LoadChunks"].items,
        "ranges": execution.maps["RenderRanges"].items,
        "export_bytes": export_bytes,
        "sitemap_bytes": sum(n for k, n in stored.items() if k.startswith("sitemap-") and k.endswith(".gz")),
        "snapshot_bytes": sum(n for k, n in stored.items() if k.startswith("_state/")),
        "files": sum(1 for k in stored if k.startswith("sitemap-") and k.endswith(".gz")),
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),
        "process_peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "worker_peak_mb": {k: round(v / 2**20, 1) for k, v in backend.peaks.items()},
        "seconds": {k: round(v, 1) for k, v in execution.seconds.items()},
        "usage": {name: _usage(u) for name, u in sorted(meter.usage.items())},
    }


def _upload(machine: Any, number: int, chunk: list[bytes]) -> int:
    from sitemap_updater.service.bootstrap import export_prefix

    data = b"".join(chunk)
    machine.backend.put_object(f"{export_prefix('bench')}part-{number:05d}.jsonl", data)
    return len(data)


def _usage(u: Usage) -> dict[str, Any]:
    return {"invocations": u.invocations, "billed_s": u.billed_ms / 1000, "cpu_s": round(u.cpu_s, 2),
            "rru": u.rru, "wru": u.wru, "s3": dict(u.s3), "sqs": dict(u.sqs), "bytes_up": u.bytes_up,
            "calls": dict(u.calls)}  # fmt: skip


def _billed_on_aws(name: str, u: dict[str, Any]) -> float:
    """Seconds one step's invocations would be billed on AWS: the meter adds each call's stated latency one
    after another, as this harness makes them; a deployed chunk worker keeps ``THREADS`` in flight."""
    cpu = float(u["cpu_s"]) * cost.cpu_scale(MEMORY_MB)
    waits = max(0.0, float(u["billed_s"]) - cpu)
    return cpu + (waits / THREADS if name == "bootstrap:chunk" else waits)


def per_page(data: dict[str, Any]) -> dict[str, float]:
    """Totals over every step, per page: what scales with the site."""
    used = data["usage"].values()
    pages = data["pages"]
    return {
        "wru": sum(u["wru"] for u in used) / pages,
        "rru": sum(u["rru"] for u in used) / pages,
        "put": sum(u["s3"].get("PUT", 0) for u in used) / pages,
        "get": sum(u["s3"].get("GET", 0) for u in used) / pages,
        "sqs": sum(sum(u["sqs"].values()) for u in used) / pages,
        "gb_s": sum(_billed_on_aws(name, u) for name, u in data["usage"].items()) * MEMORY_MB / 1024 / pages,
        "invocations": sum(u["invocations"] for u in used) / pages,
        "chunk_cpu_s": data["usage"].get("bootstrap:chunk", {}).get("cpu_s", 0.0) / pages,
        "render_cpu_s": data["usage"].get("bootstrap:render", {}).get("cpu_s", 0.0) / pages,
    }


def ramp_s(units: float, warm: int = 0) -> float:
    """Seconds an on-demand table takes to accept ``units`` write units at its limit: a new table's 4,000 a second
    (or the ``warm`` throughput it was pre-warmed to), twice that after each 30 minutes at it, up to the table's
    quota of 40,000."""
    rate, elapsed = float(max(warm, DDB_NEW_TABLE)), 0.0
    while units > rate * DDB_DOUBLING_S and rate < DDB_WRITE_LIMIT:
        units -= rate * DDB_DOUBLING_S
        elapsed += DDB_DOUBLING_S
        rate = min(2 * rate, DDB_WRITE_LIMIT)
    return elapsed + units / rate


def hottest_key_wru(data: dict[str, Any], pages: int, partitions: int, one_section: bool) -> float:
    """The write units of the busiest manifest partition key in a bootstrap of ``pages``: every entry of a
    one-section site (the default section, ``root``) shared by its ``partitions`` keys, or the busiest key
    measured (``bench/pages.py``'s 8 sections) spread further. Keys are hashes, so a key range holds its share."""
    measured = int(data["pages"])
    if one_section:
        return float(data["entry_wru"]) / measured * pages / partitions
    return float(data["hottest_key_wru"]) / measured * pages * int(data["partitions"]) / partitions


def projection(
    data: dict[str, Any], pages: int, partitions: int | None = None, one_section: bool = False, warm: int = 0
) -> dict[str, float]:
    """A bootstrap of ``pages`` on AWS at list prices, and how long its two maps take at the template's
    concurrency: the chunk map is bound by the table's write rate (a new table's, doubling every 30 minutes, or
    the rate it was pre-warmed to), its busiest partition key's 1,000 write units a second, or the workers' round
    trips, whichever is slowest; the render map by the workers' CPU."""
    unit = per_page(data)
    chunks = math.ceil(pages / CHUNK_LINES)
    ranges = data["ranges"] * pages / data["pages"]
    children = chunks + ranges
    dollars = {
        "DynamoDB": pages * (unit["wru"] * cost.DDB_WRU + unit["rru"] * cost.DDB_RRU),
        "S3": pages * (unit["put"] * cost.S3_PRICE["PUT"] + unit["get"] * cost.S3_PRICE["GET"]),
        "Lambda": pages * (unit["gb_s"] * cost.LAMBDA_GB_S + unit["invocations"] * cost.LAMBDA_REQUEST),
        "Step Functions": (children * TRANSITIONS_PER_CHILD + 20) * SFN_TRANSITION,
        "SQS": pages * unit["sqs"] * cost.SQS_PRICE["standard"],
    }
    dollars["total"] = sum(dollars.values())
    chunk_wru = data["usage"].get("bootstrap:chunk", {}).get("wru", 0) / data["pages"] * pages
    by_rate = ramp_s(chunk_wru, warm)
    spread = partitions or int(data.get("partitions", 1))
    by_key = hottest_key_wru(data, pages, spread, one_section) / DDB_KEY_LIMIT if "entry_wru" in data else 0.0
    calls_per_page = CALLS_PER_PAGE
    by_trips = pages * calls_per_page * WRITE_LATENCY_S / (LOAD_CONCURRENCY * THREADS)
    by_cpu = pages * unit["chunk_cpu_s"] * cost.cpu_scale(MEMORY_MB) / LOAD_CONCURRENCY
    render = data["usage"].get("bootstrap:render", {})
    render_s = (
        _billed_on_aws("bootstrap:render", render) / data["pages"] * pages / RENDER_CONCURRENCY if render else 0.0
    )
    bounds = {"table": by_rate, "key": by_key, "trips": by_trips, "cpu": by_cpu}
    return {**dollars, "load_h": max(bounds.values()) / 3600, "render_h": render_s / 3600,
            "load_rate_bound": float(by_rate >= max(by_trips, by_cpu)),
            "bound": float(list(bounds).index(max(bounds, key=lambda k: bounds[k]))),
            "offered_wru_s": chunk_wru / max(by_trips, by_cpu, 1e-9)}  # fmt: skip


def section(data: dict[str, Any]) -> list[str]:
    unit = per_page(data)
    peaks = data["worker_peak_mb"]
    lines = [
        "## Bootstrap",
        "",
        f"Measured by `python -m bench.bootstrap` on {data['date']}: {data['pages']:,} generated pages "
        f"(`bench/pages.py`, 8 sections) in {data['chunks']:,} export objects of {CHUNK_LINES:,} lines "
        f"({data['export_bytes'] / 1e6:,.0f} MB), through the state machine's local harness (`local/bootstrap.py`: "
        "the template's definition, the real worker handler) on the simulation's in-memory AWS, every call counted "
        "and priced as in the incremental section. The workers ran one after another on one core "
        f"({data['wall_s']:,.0f} s wall, {data['cpu_s']:,.0f} s CPU including the fakes; the process peaked at "
        f"{data['process_peak_mb']:,} MB, nearly all of it the in-memory table).",
        "",
        "| step | invocations | CPU (s) | write units | read units | S3 PUTs | peak memory of one worker (MB) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for step in ("begin", "chunk", "plan", "render", "finish", "release"):
        u = data["usage"].get(f"bootstrap:{step}")
        if u is None:
            continue
        lines.append(f"| {step} | {u['invocations']:,} | {u['cpu_s']:,.1f} | {u['wru']:,.0f} | {u['rru']:,.0f} | "
                     f"{u['s3'].get('PUT', 0):,} | {peaks.get(step, 0):,.1f} |")  # fmt: skip
    lines += [
        "",
        f"{data['ranges']:,} ranges rendered {data['files']:,} files ({data['sitemap_bytes'] / 1e6:,.1f} MB of "
        f"sitemaps, {data['snapshot_bytes'] / 1e6:,.1f} MB of snapshots). Per page: {unit['wru']:.2f} write units "
        f"(a page state and its entry, each a PutItem conditional on its rank: 2), {unit['rru']:.2f} read "
        f"units, {unit['chunk_cpu_s'] * 1e6:,.0f} us of a chunk worker's CPU and {unit['render_cpu_s'] * 1e6:,.0f} "
        "us of a range worker's. A worker's peak is what one invocation held above what it left in the table and "
        "bucket (tracemalloc, the first invocation of each step). On AWS a chunk worker of 100,000 lines makes "
        f"{CHUNK_LINES * CALLS_PER_PAGE:,} calls with {THREADS} in flight: about "
        f"{CHUNK_LINES * CALLS_PER_PAGE * WRITE_LATENCY_S / THREADS + unit['chunk_cpu_s'] * CHUNK_LINES:,.0f} s, "
        "well within the function's 900 s.",
        "",
        f"Projected on AWS (list prices as `bench/cost.py`; {LOAD_CONCURRENCY} chunk and {RENDER_CONCURRENCY} range "
        "workers at once as the template sets, "
        f"{THREADS} writes in flight a chunk worker at {WRITE_LATENCY_S * 1000:.0f} ms each, and DynamoDB's limits "
        f"for a new on-demand table with the default settings: {DDB_NEW_TABLE:,} write units a second, doubling "
        f"every 30 minutes up to {DDB_WRITE_LIMIT:,}, and {DDB_KEY_LIMIT:,} on each section's one key):",
        "",
        "| pages | DynamoDB | S3 | Lambda | Step Functions | SQS | total (USD) | load (h) | render (h, after a "
        "150 s wait) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for pages in sorted({data["pages"], 10_000_000, 100_000_000, 1_000_000_000}):
        p = projection(data, pages)
        lines.append(f"| {pages:,} | {p['DynamoDB']:,.2f} | {p['S3']:,.2f} | {p['Lambda']:,.2f} | "
                     f"{p['Step Functions']:,.2f} | {p['SQS']:,.2f} | {p['total']:,.2f} | {p['load_h']:,.2f} | "
                     f"{p['render_h']:,.2f} |")  # fmt: skip
    big = projection(data, 1_000_000_000)
    lines += [
        "",
        "DynamoDB is the cost and the limit: every page is two writes, each conditional on a rank "
        "so that a live event or a newer line of another chunk is never overwritten. "
        + f"At 1B pages the load takes {big['load_h']:,.1f} h, bound by {BOUNDS[int(big['bound'])]} (8 sections "
        "as measured, each under one key, a new table; the table below gives the other settings); AWS raises "
        "the table's quota on request, and the template's concurrency is raised with it."
        + " DynamoDB's import from S3 would cost about $0.15 a GB instead, but only into a new table, from an "
        "export already reduced to one line per URL, and with no live events during it (see docs/architecture.md).",
        *limits_section(data),
    ]
    return lines


BOUNDS = ("the table's write rate", "one partition key", "the workers' round trips", "the workers' CPU")
# (every page in one section, SectionPartitions, WarmThroughput's write units: 0 for none) of each projected row
CASES = ((True, 1, 0), (True, 16, 0), (True, 1, DDB_WRITE_LIMIT), (True, 16, DDB_WRITE_LIMIT), (False, 1, 0))


def limits_section(data: dict[str, Any]) -> list[str]:
    """The load time under DynamoDB's limits (docs/architecture.md, "Partitions and throughput"), by setting."""
    if "entry_wru" not in data:
        return []
    big = projection(data, 10_000_000)
    lines = [
        "",
        "### The load under DynamoDB's limits",
        "",
        f"The chunk map asks for about {big['offered_wru_s']:,.0f} write units a second ({LOAD_CONCURRENCY} "
        f"workers, {THREADS} writes in flight each), every page's entry under its section's partition keys "
        f"({data['entry_wru'] / data['pages']:.2f} of its {per_page(data)['wru']:.2f} write units). DynamoDB takes "
        f"{DDB_KEY_LIMIT:,} a second on one partition key and {DDB_NEW_TABLE:,} on a new on-demand table, twice its "
        "previous peak after each 30 minutes at it, up to the table quota of "
        f"{DDB_WRITE_LIMIT:,} ([on-demand capacity mode](https://docs.aws.amazon.com/amazondynamodb/latest/"
        "developerguide/on-demand-capacity-mode.html), [on-demand table throttling](https://repost.aws/"
        "knowledge-center/on-demand-table-throttling-dynamodb)); `ManifestWarmWriteUnits` pre-warms the table "
        "(`WarmThroughput`, [warm throughput](https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/"
        "warm-throughput.html)) so that it takes its value at once. A request over a limit is throttled and "
        "retried by botocore, then by the state machine "
        "(the chunk again: nothing is recorded twice), so the load lasts at least as long as the slowest of these "
        "bounds allows:",
        "",
        "| pages | site | SectionPartitions | table | load (h) | bound by |",
        "|---:|---|---:|---|---:|---|",
    ]
    for pages in (1_000_000, 10_000_000, 100_000_000):
        for one_section, spread, warm in CASES:
            p = projection(data, pages, spread, one_section, warm)
            site = "one section" if one_section else "8 sections"
            table = f"pre-warmed to {warm:,}" if warm else "new"
            lines.append(f"| {pages:,} | {site} | {spread} | {table} | {p['load_h']:,.2f} | "
                         f"{BOUNDS[int(p['bound'])]} |")  # fmt: skip
    lines += [
        "",
        "With the defaults (one partition key a section, a new table) a one-section site's bootstrap is bound by "
        "its one key: every other write waits on it, and most attempts are throttled; pre-warming alone does not "
        "help it. With 16 keys a new table's 4,000 write units a second, doubling each half hour, bind instead; "
        f"pre-warmed to {DDB_WRITE_LIMIT:,} (`ManifestWarmWriteUnits`) the load is bound by the workers again. Set "
        'both before the first bootstrap of a large site (docs/operations.md, "Throughput limits"). The rows '
        f"other than {data['pages']:,} pages are projected from the per-page figures measured at {data['pages']:,}: "
        "write units, CPU and round trips per page are the same at any size (every page is written once, by its "
        "chunk), so the load grows linearly and only the bound that applies changes.",
    ]
    return lines


def main(argv: list[str]) -> int:
    if argv[:1] != ["--doc-only"]:
        data = run(int(argv[0]) if argv else 10_000_000)
        LAST.parent.mkdir(parents=True, exist_ok=True)
        LAST.write_text(json.dumps(data, indent=1), encoding="utf-8")
    data = json.loads(LAST.read_text(encoding="utf-8"))
    sections.write("bootstrap", section(data))
    print(json.dumps(data))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
