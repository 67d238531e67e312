"""A test environment whose reward comes only in its reply to the LAST action, and crossgym eval's reward for
scripted actions: the adapters' tests check that training scores the same transcript as eval does.

``test_final_reply``: two turns; each reply is an OpenEnv-style step message (scored by the real ``openenv_reward``
verifier). The first reply carries reward 0.0; the second, which ends the episode, carries 1.0 when the action
names the task's answer. A backend that drops the reply to the last action scores 0.0 (or malformed) instead.
"""

from __future__ import annotations

from typing import Any

from crossgym.interop.openenv import step_message
from crossgym.plugins import hookimpl
from crossgym.protocol import Completion, Message, Observation, SamplingParams, StepResult, Task, VerifierSpec

ENV = "test_final_reply"


class FinalReplyEnv:
    """Turn 1 gets reward 0.0; turn 2 ends the episode with reward 1.0 iff the action contains str(task.answer)."""

    def __init__(self, turns: int = 2) -> None:
        self.turns, self.task, self.n = turns, None, 0

    def reset(self, task: Task, *, seed: int | None = None) -> Observation:
        self.task, self.n = task, 0
        return Observation(messages=task.prompt)

    def step(self, action: Message) -> StepResult:
        self.n += 1
        done = self.n >= self.turns
        reward = float(done and self.task is not None and str(self.task.answer) in action.content)
        return StepResult(messages=(step_message({"turn": self.n}, reward, done),), done=done)

    def close(self) -> None:
        pass


class FinalReplyPlugin:
    @hookimpl
    def crossgym_register_environments(self, registry: Any) -> None:
        registry.add(ENV, f"{__name__}:FinalReplyEnv")


def final_reply_tasks() -> tuple[list[Task], dict[str, list[str]]]:
    """Two tasks and their scripted turns (keyed by a prompt prefix): one ends right (reward 1.0), one wrong."""
    tasks = [Task(id=f"final-{i}", prompt=[Message("user", f"task {i}: say go, then say {i + 3}.")], answer=i + 3,
                  verifier=VerifierSpec("openenv_reward", {"threshold": 1.0}), env=ENV) for i in range(2)]
    scripts = {"task 0:": ["go", "3"], "task 1:": ["go", "9"]}
    return tasks, scripts


class ScriptEngine:
    """Stands in for the model in `crossgym eval`: the next scripted turn of the task the prompt shows."""

    name = "script"

    def __init__(self, scripts: dict[str, list[str]]) -> None:
        self.scripts = scripts

    def generate(self, prompts: list[list[Message]], n: int, params: SamplingParams,
                 tools: list[list[Any]] | None = None) -> list[list[Completion]]:
        out = []
        for conv in prompts:
            key = next(k for k in self.scripts if conv[0].content.startswith(k))
            turn = sum(m.role == "assistant" for m in conv)
            out.append([Completion.from_text(self.scripts[key][turn]) for _ in range(n)])
        return out


def eval_rewards(tasks: list[Task], scripts: dict[str, list[str]]) -> list[float]:
    """The rewards crossgym's eval runner gives the scripted episodes."""
    from crossgym.rollout.config import RolloutConfig
    from crossgym.rollout.runner import run_rollouts

    rollouts = run_rollouts(ScriptEngine(scripts), tasks, RolloutConfig(model="script", engine="script"))
    return [r.verdict.reward for r in rollouts]
