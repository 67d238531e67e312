"""Test environments and scripted generators for the episode driver's tests: the same scripted actions played
through eval's runner and each backend shim that runs here (TRL's rollout_func, OpenRLHF's agent episode).

``test_raising``: a raw protocol Environment (not BaseEnvironment) that replies "go on" to its first action and
raises RuntimeError on the second; it records the seed of every reset.
"""

from __future__ import annotations

from typing import Any, ClassVar

from crossgym.inference.base import Generation, per_prompt_tools, to_completion
from crossgym.inference.chat import ChatFormat
from crossgym.plugins import hookimpl
from crossgym.protocol import Completion, Message, Observation, SamplingParams, StepResult, Task, ToolCall, VerifierSpec

RAISING = "test_raising"


class RaisingEnv:
    seeds: ClassVar[list[tuple[str, int | None]]] = []

    def __init__(self, max_turns: int | None = None) -> None:
        self.n = 0

    def reset(self, task: Task, *, seed: int | None = None) -> Observation:
        RaisingEnv.seeds.append((task.id, seed))
        self.n = 0
        return Observation(messages=task.prompt)

    def step(self, action: Message) -> StepResult:
        self.n += 1
        if self.n >= 2:
            raise RuntimeError("tool server went away")
        return StepResult(messages=(Message("user", "go on"),))

    def close(self) -> None:
        pass


class DriverEnvPlugin:
    @hookimpl
    def crossgym_register_environments(self, registry: Any) -> None:
        registry.add(RAISING, f"{__name__}:RaisingEnv")


def raising_tasks() -> tuple[list[Task], dict[str, list[str]]]:
    """Two tasks whose second action matches the answer: a scorer of the partial completion would give 1.0."""
    tasks = [Task(id=f"raise-{i}", prompt=[Message("user", f"task {i}: say hello, then done.")], answer="done",
                  verifier=VerifierSpec("exact_match"), env=RAISING) for i in range(2)]
    return tasks, {"task 0:": ["hello", "done"], "task 1:": ["hi", "done"]}


def few_shot_tool_task() -> Task:
    """A tool_use task whose prompt holds a worked example with a tool call (arguments rendered by the template)."""
    from crossgym.environments import toolsets
    from crossgym.environments.tools import tool_spec

    example = (Message("user", "What is 1+3? Call add."),
               Message("assistant", "", tool_calls=(ToolCall(id="c0", name="add", arguments={"a": 1, "b": 3}),)),
               Message("tool", "4", tool_call_id="c0", name="add"),
               Message("assistant", "<answer>4</answer>"))
    return Task(id="few-shot-add", prompt=[*example, Message("user", "What is 2+3? Call add.")], answer=5,
                verifier=VerifierSpec("numeric"), env="tool_use", tools=(tool_spec(toolsets.add),),
                metadata={"tool_refs": ["crossgym.environments.toolsets:add"]})


TOOL_SCRIPT = ['<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call>', "<answer>5</answer>"]


class ScriptEngine:
    """Eval's engine for scripted turns, rendering every prompt with the tokenizer's chat template exactly as the
    hf engine does (ChatFormat) and parsing tool calls out of the text as it does. ``seen`` holds each prompt text."""

    name = "script"

    def __init__(self, tokenizer: Any, scripts: dict[str, list[str]]) -> None:
        self.chat = ChatFormat(tokenizer)
        self.scripts = scripts
        self.seen: list[str] = []

    def generate(self, prompts: list[list[Message]], n: int, params: SamplingParams,
                 tools: list[list[Any]] | None = None) -> list[list[Completion]]:
        out = []
        tool_lists = per_prompt_tools(tools, len(prompts))  # as the hf engine does
        for conv, offered in zip(prompts, tool_lists, strict=True):
            self.seen.append(self.chat.render_text(conv, offered))
            key, at = next((k, j) for j, m in enumerate(conv) for k in self.scripts
                           if m.role == "user" and m.content.startswith(k))
            turn = sum(m.role == "assistant" for m in conv[at:])
            text = self.scripts[key][turn]
            out.append([to_completion(Generation(text), parse_tools=bool(offered)) for _ in range(n)])
        return out


def trl_scripted(rollout: Any, scripts: dict[str, list[str]], seen: list[str]) -> Any:
    """A TRL ``_generate`` replacement playing ``scripts``; records the text each turn is generated from."""

    def generate(trainer: Any, tokenizer: Any, active: list[Any], budget: int) -> list[list[int]]:
        out = []
        for e in active:
            seen.append(tokenizer.decode(rollout.context_ids(e), skip_special_tokens=False))
            key = next(k for k in scripts if any(m.content.startswith(k) for m in e.task.prompt if m.role == "user"))
            out.append(list(tokenizer(scripts[key][e.turns], add_special_tokens=False)["input_ids"])
                       + [tokenizer.eos_token_id])
        return out

    return generate


def openrlhf_play(episode: Any, task: Task, turns: list[str], tokenizer: Any) -> tuple[list[str], Any]:
    """Play ``turns`` through OpenRLHF's agent episode as MultiTurnAgentExecutor does (observation text, then each
    action's ids and the feedback text appended). Returns the text each turn was generated from, and the last
    StepOut."""
    text = episode.reset(task.to_json(), "unused")
    seen, out = [], None
    for turn in turns:
        seen.append(text)
        ids = list(tokenizer(turn, add_special_tokens=False)["input_ids"]) + [tokenizer.eos_token_id]
        prompt_len = len(tokenizer(text, add_special_tokens=False)["input_ids"])
        out = episode.step(ids, prompt_len, "stop")
        text = text + tokenizer.decode(ids, skip_special_tokens=False) + out.feedback
        if out.done:
            break
    return seen, out

