"""Everything a veRL run needs, computed without side effects: parquet rows, the reward module, the agent-loop and
tool YAML, the Hydra overrides and the launch command. ``write()`` puts it on disk (train only; plan writes
nothing). No veRL import here: `crossgym plan` works wherever crossgym does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from crossgym.adapters.kit.files import launch_script as kit_launch_script
from crossgym.adapters.kit.files import write_files
from crossgym.adapters.verl import dataset, overrides
from crossgym.adapters.verl.reward import reward_module_source, reward_settings
from crossgym.protocol.task import Task

if TYPE_CHECKING:
    from crossgym.config import RunConfig

#: The module veRL's main entry point is run as.
ENTRY = ("-m", "verl.trainer.main_ppo")


@dataclass
class RunFiles:
    """A veRL run, ready to write and launch."""

    root: Path
    """<output_dir>/verl: where every generated file goes."""
    settings: dict[str, Any]
    """Hydra key -> value, in order (backend_args last)."""
    notes: list[str]
    text_files: dict[str, str] = field(default_factory=dict)
    """Absolute path -> content."""
    parquet: dict[str, dataset.Rows] = field(default_factory=dict)
    """Absolute path -> rows (built when written or described, streamed in row groups)."""

    @property
    def args(self) -> list[str]:
        return overrides.hydra_args(self.settings)

    def argv(self, python: str = "python") -> list[str]:
        return [python, *ENTRY, *self.args]

    def plan_files(self) -> dict[str, str]:
        """What a Plan shows: text files whole, parquet files described (a Plan holds text)."""
        out = {p: dataset.describe(rows) for p, rows in self.parquet.items()}
        out.update(self.text_files)
        return out

    def write(self) -> list[Path]:
        """Write every file (parquet included); returns their paths."""
        written = [dataset.write_parquet(rows, path) for path, rows in self.parquet.items()]
        return written + write_files(self.text_files)


def _model_path(model: str) -> str:
    p = Path(model).expanduser()
    return str(p.resolve()) if p.exists() else model


def agent_loops_yaml() -> str:
    """veRL's agent_loop_config_path file registering crossgym's agent loop (hydra instantiates the target)."""
    entry = [{"name": dataset.AGENT_NAME, "_target_": "crossgym.adapters.verl.agent_loop.CrossgymAgentLoop"}]
    return "# crossgym's agent loop for veRL (actor_rollout_ref.rollout.agent.agent_loop_config_path)\n" + \
        yaml.safe_dump(entry, sort_keys=False)


def tools_yaml(tasks: Sequence[Task], seed: int) -> str | None:
    """veRL's tool YAML: one crossgym.adapters.verl.tools.CrossgymTool per tool name the tasks declare."""
    specs: dict[str, Any] = {}
    for t in tasks:
        for s in t.tools:
            specs.setdefault(s.name, s)
    if not specs:
        return None
    doc = {"tools": [{"class_name": "crossgym.adapters.verl.tools.CrossgymTool",
                      "config": {"type": "native", "seed": seed}, "tool_schema": s.to_openai()}
                     for s in specs.values()]}
    return "# crossgym task tools as veRL BaseTools (used by veRL's tool_agent loop)\n" + \
        yaml.safe_dump(doc, sort_keys=False)


def build(run: RunConfig, tasks: Sequence[Task], eval_tasks: Sequence[Task] | None = None, *,
          gpus: int | None = None) -> RunFiles:
    """The whole run for ``tasks`` (and ``eval_tasks``); raises ConfigError on what veRL cannot do."""
    from crossgym.rollout.tasks import needs_episodes

    run = run.with_overrides(model=_model_path(run.model))
    root = Path(run.output_dir).expanduser().resolve() / "verl"
    episodes = needs_episodes(list(tasks) + list(eval_tasks or ()), run)
    settings = reward_settings(run)
    train_path = str(root / "train.parquet")
    val_path = str(root / "val.parquet") if eval_tasks else None
    reward_path = str(root / "crossgym_reward.py")
    tools_text = tools_yaml(list(tasks) + list(eval_tasks or ()), run.seed)
    paths = overrides.Paths(
        train_files=train_path, val_files=val_path, reward_module=reward_path,
        agent_loops=str(root / "agent_loops.yaml") if episodes else None,
        tool_config=str(root / "tools.yaml") if tools_text else None,
        checkpoints=str(root.parent / "checkpoints"))
    hydra, notes = overrides.overrides(run, paths, n_tasks=len(tasks), episodes=episodes, gpus=gpus)
    rf = RunFiles(root=root, settings=hydra, notes=notes)
    rf.parquet[train_path] = dataset.Rows(tasks, run, split="train", episodes=episodes)
    if val_path:
        rf.parquet[val_path] = dataset.Rows(eval_tasks or (), run, split="test", episodes=episodes)
    rf.text_files[reward_path] = reward_module_source(settings, what=f"{run.model} -> {run.output_dir}")
    if paths.agent_loops:
        rf.text_files[paths.agent_loops] = agent_loops_yaml()
    if paths.tool_config and tools_text:
        rf.text_files[paths.tool_config] = tools_text
    rf.text_files[str(root / "run.sh")] = launch_script(rf)
    return rf


def launch_script(rf: RunFiles) -> str:
    """A shell script that runs the same command (for launching by hand, e.g. on a Ray cluster's head node)."""
    return kit_launch_script(rf.argv(), comment=["generated by crossgym: the veRL run `crossgym train --backend "
                                                 "verl` launches"], python_var=True, pass_args=True)
