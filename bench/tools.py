"""Peer tools for `make bench`: installed into bench/.cache, run as child processes, measured the same way."""

from __future__ import annotations

import gzip
import hashlib
import resource
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from bench.pages import SECTIONS as PAGE_SECTIONS

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "bench" / ".cache"
NODE_DIR = CACHE / "node"
XSW_VENV = CACHE / "xsw"
VALIDATOR = ROOT.parent / "shared" / "xsd" / "validate.py"
SITE = "https://www.example.com"

# Runs a command and prints the largest RSS of it and of any process it started (KiB).
_WRAPPER = """
import resource, subprocess, sys
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


@dataclass(frozen=True)
class Run:
    wall: float
    cpu: float
    peak_rss_mb: float
    out_bytes: int
    files: int
    digest: str  # of every output file's bytes, to tell whether two runs wrote the same bytes


@dataclass(frozen=True)
class Tool:
    name: str
    command: list[str]  # with {events} and {out} placeholders
    note: str


def install(node: bool = True) -> None:
    """npm ``sitemap`` (unless not ``node``) and PyPI ``xml-sitemap-writer``, each in a cache folder of its own."""
    NODE_DIR.mkdir(parents=True, exist_ok=True)
    if node and not (NODE_DIR / "node_modules" / "sitemap").exists():
        subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--silent", "sitemap@8"], cwd=NODE_DIR, check=True)
    shutil.copy(ROOT / "bench" / "peers" / "sitemapjs.mjs", NODE_DIR / "sitemapjs.mjs")  # resolves node_modules
    if not (XSW_VENV / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(XSW_VENV)], check=True)
        subprocess.run([str(XSW_VENV / "bin" / "pip"), "install", "--quiet", "xml-sitemap-writer"], check=True)


def tools(workers: int | None = None) -> list[Tool]:
    ours = [sys.executable, "-m", "sitemap_updater.cli", "build", "--site", SITE, "--events", "{events}"]
    ours += ["--out", "{out}", "--quiet", "--as-of", "2026-11-21T12:00:00Z", "--sections", ",".join(PAGE_SECTIONS)]
    node = ["node", str(NODE_DIR / "sitemapjs.mjs")]
    return [
        Tool("sitemap-updater build", ours, "validates every event, keeps every image, byte-stable"),
        Tool("sitemap.js, coalesced", [*node, "coalesced", "{events}", "{out}", SITE], "64 KiB writes into gzip"),
        Tool(
            "xml-sitemap-writer",
            [
                str(XSW_VENV / "bin" / "python"),
                str(ROOT / "bench" / "peers" / "xsw_build.py"),
                "{events}",
                "{out}",
                SITE,
            ],
            "drops images",
        ),
        Tool("sitemap.js, as its README shows", [*node, "readme", "{events}", "{out}", SITE], "one gzip write per URL"),
    ]


def measure(tool: Tool, events: Path, out: Path) -> Run:
    """One run in a fresh child process; CPU and peak RSS from the kernel's accounting of that child."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    cmd = [part.replace("{events}", str(events)).replace("{out}", str(out)) for part in tool.command]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _WRAPPER, *cmd], capture_output=True, text=True, check=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    files = sorted(p for p in out.iterdir() if p.is_file() and not p.name.startswith("."))  # not a tool's own record
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode() + path.read_bytes())
    peak_kb = int(done.stdout.strip().splitlines()[-1])
    return Run(wall, cpu, peak_kb / 1024, sum(p.stat().st_size for p in files), len(files), digest.hexdigest())


def images_kept(out: Path) -> int:
    """How many <image:image> elements the output holds."""
    total = 0
    for path in out.glob("*.xml.gz"):
        total += gzip.decompress(path.read_bytes()).count(b"<image:image>")
    return total


def validates(out: Path) -> str:
    """Whether every file validates against the official schemas (``../shared/xsd/validate.py``)."""
    if not VALIDATOR.exists():
        return "not checked (no ../shared/xsd)"
    files = sorted(str(p) for p in out.iterdir() if p.name.endswith((".xml", ".xml.gz")))
    done = subprocess.run([sys.executable, str(VALIDATOR), *files], capture_output=True, text=True)
    if done.returncode == 0:
        return "yes"
    first = (done.stdout + done.stderr).strip().splitlines()
    return "no: " + (first[0][:120] if first else f"exit {done.returncode}")
