"""Install anywhere: the package built as `python -m build` builds it (an sdist, then a wheel from the sdist),
installed into a fresh virtual environment, runs `local`, `build`, `verify` and `import` from a folder that is not
the repository, with template.yaml and the webhook mapping carried in the wheel.

Offline and quick: the backend runs without build isolation (setuptools from the dev environment), the wheel is
installed without dependencies, and the fresh environment reads its dependencies from the dev environment's
site-packages through a path file (whose own .pth files, among them the editable install of this repository, are
not processed, so the repository's sources cannot be imported from it).
"""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from moto.server import ThreadedMotoServer

from tests.deployed import deployed
from tests.integration.test_adopt import Web
from tests.integration.test_verify import publish

ROOT = Path(__file__).resolve().parents[2]
BASE_PYTHON = Path(sys.base_prefix) / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"
SITE = "https://www.example.com"
SECTIONS = "blog,news,products,videos"
# What `python -m build` reads from a checkout; the rest of the repository (tests, docs, events) is not packaged.
SOURCES = ["pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "LICENSE", "template.yaml", "functions"]
PACKAGED = "sitemap_updater/_packaged/"
TIMEOUT = 120


def _backend(call: str, source: Path, out: Path) -> Path:
    """Run one hook of the build backend (setuptools, without isolation) in ``source``; the file it wrote."""
    script = f"import sys; from setuptools import build_meta; print(build_meta.{call}(sys.argv[1]))"
    done = subprocess.run(
        [sys.executable, "-c", script, str(out)], cwd=source, capture_output=True, text=True, timeout=TIMEOUT
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return out / done.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def sdist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist, built from a copy of what a checkout holds (no build/ or egg-info of earlier builds)."""
    source = tmp_path_factory.mktemp("checkout")
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "_packaged")
    for name in SOURCES:
        path = ROOT / name
        (shutil.copytree(path, source / name, ignore=ignore) if path.is_dir() else shutil.copy(path, source / name))
    return _backend("build_sdist", source, tmp_path_factory.mktemp("sdist"))


@pytest.fixture(scope="module")
def wheel(sdist: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built from the unpacked sdist, as `python -m build` and pip do."""
    unpacked = tmp_path_factory.mktemp("unpacked")
    with tarfile.open(sdist) as archive:
        archive.extractall(unpacked, filter="data")
    (top,) = unpacked.iterdir()
    return _backend("build_wheel", top, tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment with the wheel installed (its scripts too), dependencies from the dev one."""
    target = tmp_path_factory.mktemp("venv")
    subprocess.run([str(BASE_PYTHON), "-m", "venv", "--without-pip", str(target)], check=True, timeout=TIMEOUT)
    python = target / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps", "--no-index"]
    done = subprocess.run([*pip, str(wheel)], capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True, timeout=TIMEOUT,
    ).stdout.strip()  # fmt: skip
    (Path(purelib) / "dev-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    return target


@pytest.fixture
def elsewhere(tmp_path: Path) -> Path:
    """A working folder outside the repository, holding copies of the sample events."""
    shutil.copy(ROOT / "events" / "wave-1.jsonl", tmp_path)
    shutil.copy(ROOT / "events" / "webhooks" / "contentful" / "publish.json", tmp_path)
    return tmp_path


def command(venv: Path, cwd: Path, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The installed ``sitemap-updater`` in ``cwd``, with a bare environment (no PYTHONPATH, no AWS settings)."""
    bare = {"PATH": "/usr/bin:/bin", "HOME": str(cwd), "LANG": "C.UTF-8", **env}
    return subprocess.run(
        [str(venv / "bin" / "sitemap-updater"), *argv], cwd=cwd, env=bare, capture_output=True, text=True,
        timeout=TIMEOUT,
    )  # fmt: skip


def test_the_wheel_carries_the_repositorys_template_and_mapping(sdist: Path, wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        packaged = {n.removeprefix(PACKAGED): archive.read(n) for n in archive.namelist() if n.startswith(PACKAGED)}
        assert "sitemap_updater/local/runner.py" in archive.namelist()
    assert packaged == {
        "template.yaml": (ROOT / "template.yaml").read_bytes(),
        "webhook-mapping.json": (ROOT / "functions" / "webhook-mapping.json").read_bytes(),
    }
    with tarfile.open(sdist) as archive:  # the sdist carries the sources of those copies
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    assert {"template.yaml", "functions/webhook-mapping.json", "setup.py"} <= names
    assert not any(name.startswith("functions/sitemap_updater/_packaged") for name in names)


def test_the_installed_package_is_the_wheels_and_reads_its_own_copies(venv: Path, elsewhere: Path) -> None:
    script = (
        "import json, sitemap_updater; from sitemap_updater.local.runner import TEMPLATE; "
        "from sitemap_updater.local.packaged import packaged_file; "
        "print(json.dumps([sitemap_updater.__file__, str(TEMPLATE), str(packaged_file('webhook-mapping.json'))]))"
    )
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", script], cwd=elsewhere, capture_output=True, text=True, timeout=TIMEOUT
    )
    assert done.returncode == 0, done.stderr
    module, template, mapping = (Path(p) for p in json.loads(done.stdout))
    package = module.parent
    assert package.is_relative_to(venv), module
    assert (template, mapping) == (
        package / "_packaged" / "template.yaml",
        package / "_packaged" / "webhook-mapping.json",
    )


def test_local_build_and_verify_run_from_the_wheel_outside_the_repository(venv: Path, elsewhere: Path) -> None:
    # When the sample events and a CMS webhook go through a local stack, from a folder that is not the repository
    local = command(venv, elsewhere, "local", "--site", SITE, "--sections", SECTIONS, "--events", "wave-1.jsonl",
                    "--webhooks", "publish.json", "--out", "published")  # fmt: skip
    # Then the files are published: one per section the sample events touch, the index naming them
    assert local.returncode == 0, local.stderr
    assert "Traceback" not in local.stderr
    published = elsewhere / "published"
    files = sorted(p.name for p in published.glob("sitemap-*.xml.gz"))
    assert files == [f"sitemap-{s}-00000000.xml.gz" for s in ("blog", "news", "products", "root", "videos")]
    index = (published / "sitemap.xml").read_text(encoding="utf-8")
    assert all(f"<loc>{SITE}/{name}</loc>" in index for name in files)
    # And the webhook's post (from the mapping the wheel carries) is in the blog's file, in English and German
    blog = gzip.decompress((published / "sitemap-blog-00000000.xml.gz").read_bytes()).decode()
    assert f"<loc>{SITE}/blog/webhooks-in</loc>" in blog and f"<loc>{SITE}/de/blog/webhooks-rein</loc>" in blog
    # When `build` renders the same events
    built = command(venv, elsewhere, "build", "--site", SITE, "--sections", SECTIONS, "--events", "wave-1.jsonl",
                    "--out", "built", "--quiet")  # fmt: skip
    assert built.returncode == 0, built.stderr
    # Then every file of a section the webhook did not touch has the bytes the local stack published
    for name in files:
        if "blog" not in name:
            assert (elsewhere / "built" / name).read_bytes() == (published / name).read_bytes(), name
    # When the published files are served as the CDN serves them and verified
    web = Web()
    try:
        publish(web, published)
        verified = command(venv, elsewhere, "verify", web.url("/"), "--site", SITE)
    finally:
        web.close()
    # Then a crawler finds nothing wrong
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert verified.stdout.rstrip().endswith("no problem found")


@pytest.fixture
def moto_endpoint() -> Iterator[str]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


def test_import_runs_from_the_wheel_on_a_stack_named_by_its_name(
    venv: Path, elsewhere: Path, moto_endpoint: str
) -> None:
    # Given a deployed stack, known by its name
    stack = deployed(moto_endpoint, "wheel-import", {"SiteUrl": SITE, "Sections": SECTIONS})
    assert "--stack NAME" in command(venv, elsewhere, "import", "--help").stdout
    # When the sample events are imported into it with the installed command and the operator's credentials only
    credentials = {"AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local", "AWS_DEFAULT_REGION": "us-east-1"}
    argv = ["import", "--stack", "wheel-import", "--endpoint-url", moto_endpoint, "--events", "wave-1.jsonl"]
    imported = command(venv, elsewhere, *argv, **credentials)
    # Then the stack publishes the site in the stack's sections
    assert imported.returncode == 0, imported.stderr
    bucket = stack.physical["SitemapBucket"]
    assert f"stack wheel-import: {SITE}, bucket {bucket}" in imported.stdout
    assert "import (wave-1.jsonl): " in imported.stdout and "5 sitemap files published" in imported.stdout


def test_without_its_template_local_says_so_in_one_line(venv: Path, elsewhere: Path) -> None:
    # Given an installation whose copy of template.yaml is gone
    (package,) = (venv / "lib").glob("python3.*/site-packages/sitemap_updater")
    template = package / "_packaged" / "template.yaml"
    hidden = template.rename(template.with_name("template.yaml.hidden"))
    try:
        done = command(venv, elsewhere, "local", "--site", SITE, "--events", "wave-1.jsonl", "--out", "published")
    finally:
        hidden.rename(template)
    # Then local stops with exit status 2 and one line naming the file, no traceback, nothing published
    assert done.returncode == 2
    assert done.stderr.startswith(
        f"sitemap-updater: template.yaml is not where this installation keeps it ({template})"
    )
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert not (elsewhere / "published").exists()
