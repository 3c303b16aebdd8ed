"""Build hook: a wheel carries copies of template.yaml and functions/webhook-mapping.json as package data
(sitemap_updater/_packaged/), made from the repository's own files at build time, so that an installed
``sitemap-updater local`` finds its stack anywhere. The repository keeps the one copy of each; an editable
install and a checkout read them where they are (sitemap_updater/local/packaged.py). Everything else is in
pyproject.toml."""

from __future__ import annotations

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
# The package's copy, by name -> the repository's file (the same table as sitemap_updater.local.packaged.SOURCES).
COPIES = {"template.yaml": "template.yaml", "webhook-mapping.json": "functions/webhook-mapping.json"}
TARGET = Path("sitemap_updater") / "_packaged"


class BuildWithStackFiles(build_py):
    """build_py, then the copies into the build's package (a missing source fails the build, naming it)."""

    def run(self) -> None:
        super().run()
        if self.editable_mode:  # an editable install reads the repository's files themselves
            return
        target = Path(self.build_lib) / TARGET
        self.mkpath(str(target))
        for name, source in COPIES.items():
            if not (ROOT / source).is_file():
                raise SystemExit(f"setup.py: {ROOT / source} is missing; the package needs a copy of it")
            self.copy_file(str(ROOT / source), str(target / name), preserve_mode=False)

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        copies = [str(Path(self.build_lib) / TARGET / name) for name in COPIES]
        return [*super().get_outputs(include_bytecode), *([] if self.editable_mode else copies)]


setup(cmdclass={"build_py": BuildWithStackFiles})
