"""One-click install: the template carries what the Serverless Application Repository needs to publish it."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from sitemap_updater.local.stack import load_template

ROOT = Path(__file__).resolve().parents[2]


def application() -> dict[str, Any]:
    metadata: dict[str, Any] = load_template(ROOT / "template.yaml")["Metadata"]["AWS::ServerlessRepo::Application"]
    return metadata


def test_the_application_is_named_described_licensed_and_versioned_as_the_package() -> None:
    # The rules SAR checks when `sam publish` creates an application or a version of it
    app = application()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert re.fullmatch(r"[a-zA-Z0-9-]{1,140}", app["Name"])
    assert 1 <= len(app["Description"]) <= 256
    assert re.fullmatch(r"[a-z0-9](([a-z0-9]|-(?!-))*[a-z0-9])?", app["Author"]) and len(app["Author"]) <= 127
    assert app["SpdxLicenseId"] == project["license"]
    assert app["SemanticVersion"] == project["version"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", app["SemanticVersion"])
    assert not any(isinstance(value, dict) for value in app.values())  # SAR takes no intrinsic function here
    assert len(app["Labels"]) <= 10
    assert all(re.fullmatch(r"[a-zA-Z0-9+\-_:/@]{1,127}", label) for label in app["Labels"])


def test_the_license_and_readme_it_names_are_in_the_repository() -> None:
    app = application()
    assert (ROOT / app["LicenseUrl"]).read_text(encoding="utf-8").lstrip().startswith("Apache License")
    assert (ROOT / app["ReadmeUrl"]).is_file()
