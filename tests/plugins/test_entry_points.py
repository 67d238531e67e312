"""A third-party plugin installed with a real entry point shows up in `crossgym list`, and can be disabled."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PLUGIN = '''
from crossgym.plugins import hookimpl
from crossgym.protocol import Completion, Example, Task, Verdict, VerifierSpec


class Shout:
    """Passes when the answer is in upper case."""

    name = "shout"
    version = "7"

    def __init__(self, **params):
        self.params = params

    def verify(self, task, completion):
        if not isinstance(completion, Completion):
            return Verdict.malformed("not a Completion")
        text = completion.text
        if not text:
            return Verdict.malformed("empty")
        return Verdict.ok(1.0 if text == text.upper() else 0.0)

    @classmethod
    def examples(cls):
        t = Task(id="s", prompt="shout", answer=None, verifier=VerifierSpec("shout"))
        return [Example(t, Completion.from_text("HEY"), "pass"), Example(t, Completion.from_text("hey"), "fail"),
                Example(t, Completion.from_text(""), "malformed")]


@hookimpl
def crossgym_register_verifiers(registry):
    registry.add("shout", "crossgym_shout:Shout", description="upper case")


@hookimpl
def crossgym_register_backends(registry):
    registry.add("rocket", "crossgym_shout_missing.backend:Rocket", description="a backend needing a framework",
                 install="pip install rocket-rl", requires=("crossgym_shout_missing",))
'''


@pytest.fixture(scope="module")
def site_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A site folder holding a module and its .dist-info with an entry point of group `crossgym`."""
    site = tmp_path_factory.mktemp("site")
    (site / "crossgym_shout.py").write_text(PLUGIN)
    info = site / "crossgym_shout-1.2.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: crossgym-shout\nVersion: 1.2\n")
    (info / "entry_points.txt").write_text("[crossgym]\nshout = crossgym_shout\n")
    return site


def _crossgym(site: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "PYTHONPATH": str(site), **(env or {})}
    return subprocess.run([sys.executable, "-m", "crossgym.cli", *args], capture_output=True, text=True,
                          env=full_env, timeout=120)


def test_third_party_plugin_is_listed(site_dir: Path) -> None:
    proc = _crossgym(site_dir, "list", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    shout = next(v for v in doc["verifiers"] if v["name"] == "shout")
    assert shout["version"] == "7" and shout["dist"] == "crossgym-shout 1.2"
    rocket = next(b for b in doc["backends"] if b["name"] == "rocket")
    assert rocket["available"] is False and rocket["install"] == "pip install rocket-rl"
    assert "crossgym_shout_missing" in rocket["reason"]


def test_third_party_verifier_self_checks(site_dir: Path) -> None:
    proc = _crossgym(site_dir, "check", "shout", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["ok"] and [e["got"] for e in doc["verifiers"][0]["examples"]] == ["pass", "fail", "malformed"]


def test_disabled_plugin_is_not_loaded(site_dir: Path) -> None:
    proc = _crossgym(site_dir, "list", "--json", env={"CROSSGYM_DISABLE_PLUGINS": "shout"})
    assert proc.returncode == 0, proc.stderr
    assert "shout" not in {v["name"] for v in json.loads(proc.stdout)["verifiers"]}
