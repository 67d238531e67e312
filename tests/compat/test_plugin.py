"""A plugin author's view: `pytest -p crossgym.compat_tests` on their own test file subclassing the suites, and on
the standard suite with --crossgym-verifier/--crossgym-backend, in a separate pytest process."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

PLUGIN = '''
from crossgym.plugins import hookimpl
from crossgym.protocol import Capabilities, Completion, ConfigError, Example, Plan, Task, Verdict, VerifierSpec


class Shout:
    """Passes when the reply is upper case (implements the protocol without BaseVerifier)."""

    name, version = "shout", "1"

    def __init__(self, **params):
        self.params = params

    def verify(self, task, completion):
        if not isinstance(completion, Completion) or not all(isinstance(m.content, str) for m in completion.messages):
            return Verdict.malformed("not a Completion")
        text = completion.text
        if not text.strip():
            return Verdict.malformed("empty")
        return Verdict.ok(1.0 if text == text.upper() else 0.25, threshold=1.0)

    @classmethod
    def examples(cls):
        t = Task(id="s", prompt="shout", answer=None, verifier=VerifierSpec("shout"))
        return [Example(t, Completion.from_text("HEY"), "pass"), Example(t, Completion.from_text("hey"), "fail"),
                Example(t, Completion.from_text(""), "malformed")]


class Megaphone:
    name = "megaphone"
    capabilities = Capabilities(multi_turn=True)
    compat_driver = "shout_plugin"

    def check(self):
        pass

    def plan(self, run):
        if run.grpo.variant != "grpo":
            raise ConfigError("megaphone only runs grpo", where="grpo.variant")
        if run.grpo.lora is not None:
            raise ConfigError("megaphone has no LoRA", where="grpo.lora")
        return Plan(backend="megaphone", native_config={"lr": run.grpo.learning_rate})


MODES = ("single_turn", "multi_turn")


def native_rewards(tasks, completions, *, mode="single_turn"):
    from crossgym import load_verifier

    return [load_verifier(t.verifier).verify(t, c).reward for t, c in zip(tasks, completions)]


def validate_plan(plan):
    assert isinstance(plan.native_config["lr"], float)


@hookimpl
def crossgym_register_verifiers(registry):
    registry.add("shout", "shout_plugin:Shout")


@hookimpl
def crossgym_register_backends(registry):
    registry.add("megaphone", "shout_plugin:Megaphone")
'''

CONFTEST = '''
import shout_plugin
from crossgym.plugins import register_plugin


def pytest_configure(config):
    register_plugin(shout_plugin)
'''

TESTS = '''
from crossgym.compat_tests import PlanValidity, RewardParity, VerifierConformance


class TestShout(VerifierConformance, RewardParity):
    verifiers = ["shout"]
    backends = ["megaphone"]


class TestMegaphonePlans(PlanValidity):
    backends = ["megaphone"]
    configs = ["default", "variant_dapo"]
'''


def _pytest(folder: Path, *args: str) -> dict[str, str]:
    """Run pytest in ``folder``; {test id: outcome}."""
    report = folder / "report.xml"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), *sys.path]), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
                           "crossgym.compat_tests", f"--junitxml={report}", *args], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=600)
    assert report.is_file(), proc.stdout[-3000:] + proc.stderr[-3000:]
    out = {}
    for case in ET.parse(report).iter("testcase"):
        kids = {c.tag for c in case}
        out[f"{case.get('classname', '').split('.')[-1]}::{case.get('name')}"] = (
            "failed" if kids & {"failure", "error"} else "skipped" if "skipped" in kids else "passed")
    return out


def _folder(tmp_path: Path) -> Path:
    (tmp_path / "shout_plugin.py").write_text(PLUGIN)
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_shout.py").write_text(TESTS)
    return tmp_path


def test_a_plugin_authors_suite_subclass_and_the_standard_suite(tmp_path: Path) -> None:
    got = _pytest(_folder(tmp_path), "test_shout.py", "--pyargs", "crossgym.compat_tests.standard",
                  "--crossgym-verifier", "shout", "--crossgym-backend", "megaphone", "--crossgym-garbage-tasks", "1",
                  "-k", "Shout or Megaphone or VerifierConformance or RewardParity or PlanValidity")
    mine = {k: v for k, v in got.items() if k.startswith(("TestShout", "TestMegaphone"))}
    assert mine == {
        "TestShout::test_examples[shout]": "passed",
        "TestShout::test_determinism[shout]": "passed",
        "TestShout::test_garbage[shout]": "passed",
        "TestShout::test_timeout[shout]": "passed",  # accepts timeout= through **params, and returns in time
        "TestShout::test_frozen[shout]": "skipped",  # no frozen corpus for a third-party verifier
        "TestShout::test_fresh_process[shout]": "passed",
        "TestShout::test_reward_parity[shout-megaphone-single_turn]": "passed",
        "TestShout::test_reward_parity[shout-megaphone-multi_turn]": "passed",
        "TestMegaphonePlans::test_plan[megaphone-default]": "passed",
        "TestMegaphonePlans::test_plan[megaphone-variant_dapo]": "passed",  # refused, as declared
    }
    # the standard suite, pointed at the plugin with --crossgym-verifier / --crossgym-backend
    assert got["TestVerifierConformance::test_examples[shout]"] == "passed"
    assert got["TestRewardParity::test_reward_parity[shout-megaphone-multi_turn]"] == "passed"
    assert got["TestPlanValidity::test_plan[megaphone-lora]"] == "passed"  # refused: no lora capability
    assert "failed" not in got.values(), {k: v for k, v in got.items() if v == "failed"}
