"""examples/multi_env.yaml (issue 21, item 8): six parts across the environment families plan on TRL, veRL and
OpenRLHF, dry-run here, and the plain TRL script `crossgym plan` writes builds the same blend."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from crossgym.cli import main
from crossgym.config import load_run_config
from crossgym.rollout.tasks import needs_episodes, run_tasks, task_env
from crossgym.scoring.parts import part_of

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "multi_env.yaml"


def _cli(argv, capsys):  # type: ignore[no-untyped-def]
    code = 0
    try:
        main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    out, err = capsys.readouterr()
    return code, out, err


def test_the_example_is_a_blend_across_the_environment_families() -> None:
    run = load_run_config(EXAMPLE)
    tasks = run_tasks(run)
    counts = Counter(part_of(t) for t in tasks)
    assert len(counts) >= 5 and sum(counts.values()) == run.tasks.size
    assert counts["tools"] == counts["code"] == 8  # counts are exact; the weights share the rest 3:2:1:1
    envs = {part_of(t): task_env(t, run) for t in tasks}
    assert envs == {"math": "single_turn", "json": "single_turn", "tools": "tool_use", "code": "code", "sql": "sql",
                    "shell": "shell"}
    assert needs_episodes(tasks, run)
    assert [p.name for p in run.tasks.parts if p.verifiers] == ["json"]
    assert [t.id for t in tasks] == [t.id for t in run_tasks(load_run_config(EXAMPLE))]  # seeded: the same rows


@pytest.mark.parametrize("backend", ["trl", "verl", "openrlhf", "skyrl"])
def test_the_example_plans_on_each_backend(backend, capsys) -> None:  # type: ignore[no-untyped-def]
    code, out, err = _cli(["plan", str(EXAMPLE), "--backend", backend, "--json"], capsys)
    assert code == 0, err
    plan = json.loads(out)["plans"][0]
    assert plan["backend"] == backend and plan["native_config"]


def test_the_plain_trl_script_loads_the_same_blend(capsys) -> None:  # type: ignore[no-untyped-def]
    code, out, err = _cli(["plan", str(EXAMPLE), "--backend", "trl", "--json"], capsys)
    assert code == 0, err
    script = json.loads(out)["plans"][0]["files"]["train_trl.py"]
    head = script.split("# crossgym's scoring core")[0].replace("from trl import GRPOConfig, GRPOTrainer\n", "")
    assert "load_run_tasks(BLEND" in head
    ns: dict = {}
    exec(compile(head, "train_trl.py", "exec"), ns)  # the script's imports and task loading, TRL left out
    want = run_tasks(load_run_config(EXAMPLE))
    assert [t.id for t in ns["tasks"]] == [t.id for t in want]
    assert [t.metadata for t in ns["tasks"]] == [t.metadata for t in want]


def test_the_example_dry_runs(capsys) -> None:  # type: ignore[no-untyped-def]
    code, out, err = _cli(["train", str(EXAMPLE), "--dry-run"], capsys)
    assert code == 0, err
    assert "dry run: 64 tasks" in out + err
