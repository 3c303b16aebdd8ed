"""The repository files a local run reads: template.yaml (the stack) and functions/webhook-mapping.json (the
mapping ``local --webhooks`` uses by default).

The repository holds the one copy of each. Run from a checkout (an editable install, the tests), they are read
where they are; a wheel carries a copy of each in ``sitemap_updater/_packaged/``, made from those files when the
wheel is built (setup.py), so ``pip install 'sitemap-updater[local]'`` runs ``local`` from anywhere.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parents[1]  # .../sitemap_updater
PACKAGED = _PACKAGE / "_packaged"
# Where each file is in a checkout, from the repository's root (the folder above functions/).
SOURCES = {"template.yaml": "template.yaml", "webhook-mapping.json": "functions/webhook-mapping.json"}


class PackagedFileMissing(FileNotFoundError):
    """A file the package needs is neither in a checkout nor in the installed package."""


def packaged_file(name: str) -> Path:
    """Where ``name`` (a key of :data:`SOURCES`) is read from: the checkout's own file when the package runs from
    functions/ in a checkout, else the installed package's copy. The path may not exist (see :func:`require`)."""
    if _PACKAGE.parent.name == "functions":
        source = _PACKAGE.parents[1] / SOURCES[name]
        if source.is_file():
            return source
    return PACKAGED / name


def require(path: Path) -> Path:
    """``path`` when it is a file; else PackagedFileMissing with one line saying what to do."""
    if not path.is_file():
        raise PackagedFileMissing(
            f"{path.name} is not where this installation keeps it ({path}); reinstall sitemap-updater from a wheel "
            "built by `pip wheel .` or `python -m build` (they copy it into the package), or run from a checkout"
        )
    return path
