"""One source for the version: crossgym.__version__ is the only literal; packaging metadata and the CLI read it."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
import tomllib
from pathlib import Path

import crossgym

ROOT = Path(__file__).resolve().parents[1]


def test_pyproject_reads_the_version_from_the_module() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    from setuptools.config.pyprojecttoml import read_configuration

    # what setuptools writes into a built wheel's metadata
    assert read_configuration(ROOT / "pyproject.toml", expand=True)["project"]["version"] == crossgym.__version__


def test_installed_metadata_and_cli_report_the_module_version() -> None:
    assert importlib.metadata.version("crossgym") == crossgym.__version__
    script = Path(sys.executable).with_name("crossgym")  # the console script the install wrote
    out = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=120, check=True).stdout
    assert out.strip() == f"crossgym {crossgym.__version__}"
