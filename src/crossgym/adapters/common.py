"""Backend-neutral glue shared by the TRL and Unsloth backends: tasks -> dataset rows, and verifiers -> reward functions.

Extra verifiers (``RunConfig.verifiers``) judge each completion against ``extra_task(task, spec)``: the task with
its ``answer`` cleared, because the answer belongs to the task's own verifier (an int for json_answer, a schema for
json_schema...) and an extra term is configured by its params alone (length budgets, format tags, JSON validity).

Reward semantics (identical on every backend): the reward is ``Verdict.reward``. A verifier error or timeout
(``Verdict.error`` of kind "timeout" or "exception", or a verifier that raises) scores ``RunConfig.on_error``;
``"none"`` gives ``None``, which TRL turns into NaN and leaves out of the weighted sum. A "malformed" verdict is the
completion's fault, not the verifier's: it keeps its own reward (normally 0.0), so garbage is never masked.
"""

from __future__ import annotations

import json
import logging
import math
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from crossgym.adapters.trl.rows import COMPLETION_COLUMN, TASK_COLUMN
from crossgym.protocol.errors import ConfigError, CrossgymError
from crossgym.protocol.task import Completion, Task, Verdict, VerifierSpec
from crossgym.rollout.driver import episode_from_json
from crossgym.rollout.tasks import task_from_json

if TYPE_CHECKING:
    from crossgym.config import RunConfig

log = logging.getLogger(__name__)

OnError = float | Literal["none"]


# ---------------------------------------------------------------- rewards
def extra_task(task: Task, spec: VerifierSpec) -> Task:
    """The task an extra verifier judges: same prompt, tools and metadata; no answer; ``spec`` as its verifier."""
    return Task(id=task.id, prompt=task.prompt, answer=None, verifier=spec, env=task.env, tools=task.tools,
                metadata=task.metadata)


def reward_from_verdict(verdict: Verdict, on_error: OnError) -> float | None:
    """The reward a backend sees for one Verdict (see the module docstring for the error rules)."""
    if verdict.error is None or verdict.error_kind == "malformed":
        return float(verdict.reward)
    return None if on_error == "none" else float(on_error)


def safe_verify(verifier: Any, task: Task, completion: Completion) -> Verdict:
    """``verifier.verify`` that turns a (buggy) verifier's exception into an "exception" Verdict."""
    try:
        verdict = verifier.verify(task, completion)
    except Exception as exc:  # a third-party verifier broke its contract: score it as a verifier error
        log.warning("verifier %s raised %s: %s", getattr(verifier, "name", verifier), type(exc).__name__, exc)
        return Verdict.exception(f"verify raised {type(exc).__name__}: {exc}")
    if not isinstance(verdict, Verdict):
        return Verdict.exception(f"verify returned {type(verdict).__name__}, not a Verdict")
    return verdict


def completion_from_trl(value: Any) -> Completion:
    """A Completion from what TRL passes a reward function: a string, or a list of message dicts."""
    if isinstance(value, str):
        return Completion.from_text(value)
    if isinstance(value, dict):
        value = [value]
    msgs = []
    for m in value or ():
        content = m.get("content")
        if isinstance(content, list):  # content blocks
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        msgs.append({"role": m.get("role", "assistant"), "content": content or "",
                     **({"tool_calls": m["tool_calls"]} if m.get("tool_calls") else {})})
    try:
        return Completion(messages=msgs)  # type: ignore[arg-type]
    except (ValueError, KeyError, TypeError):  # odd tool-call shapes: keep the text
        return Completion.from_text("".join(str(m.get("content") or "") for m in msgs))


@dataclass
class RolloutSink:
    """Appends scored rollouts (task, completion, verdict, provenance) to a JSONL file, for `crossgym reverify`."""

    path: Path
    model: str = ""
    step: Callable[[], int] = lambda: 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def write(self, records: Iterable[dict[str, Any]]) -> None:
        lines = "".join(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in records)
        if not lines:
            return
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(lines)


class VerdictReward:
    """A TRL-signature reward function scoring completions with crossgym verifiers; returns Verdict.reward exactly.

    ``spec`` set: that verifier scores every row (an extra term from ``RunConfig.verifiers``). ``spec`` None: each
    row is scored by its own task's verifier, restricted to tasks whose verifier is named ``only`` (rows of other
    verifiers get None, which TRL masks), so TRL logs ``rewards/<name>/mean`` per task verifier.
    """

    def __init__(self, name: str, *, on_error: OnError = 0.0, spec: VerifierSpec | None = None,
                 only: str | None = None, sink: RolloutSink | None = None) -> None:
        self.__name__ = name
        self.name = name
        self.on_error = on_error
        self.spec = spec
        self.only = only
        self.sink = sink
        #: Called after every batch with (tasks, completions, verdicts, rewards); verdicts/rewards are None for rows
        #: this function does not score. The rewards are exactly what the trainer receives.
        self.observers: list[Callable[[list[Task], list[Completion], list[Verdict | None], list[float | None]],
                                      None]] = []

    def __repr__(self) -> str:
        return f"VerdictReward({self.name!r})"

    def _verifier(self, task: Task) -> Any:
        from crossgym.api import load_verifier

        return load_verifier(self.spec if self.spec is not None else task.verifier)

    def __call__(self, prompts: Any = None, completions: Any = None, **kwargs: Any) -> list[float | None]:
        tasks_json = kwargs.get(TASK_COLUMN)
        if tasks_json is None:
            raise CrossgymError(f"reward {self.name!r}: the dataset has no {TASK_COLUMN!r} column "
                                "(build rows with crossgym.adapters.trl.rows.task_rows)")
        episodes = kwargs.get(COMPLETION_COLUMN)
        rewards: list[float | None] = []
        batch: list[tuple[Completion, Verdict | None, float | None]] = []
        tasks: list[Task] = []
        records = []
        for i, tj in enumerate(tasks_json):
            task = task_from_json(tj)
            tasks.append(task)
            failed: str | None = None
            if episodes is not None and episodes[i] is not None:
                completion, failed = episode_from_json(episodes[i])
            else:
                completion = completion_from_trl(completions[i])
            if self.spec is None and self.only is not None and task.verifier.name != self.only:
                rewards.append(None)
                batch.append((completion, None, None))
                continue
            if failed is not None:  # the environment failed: the episode driver's exception Verdict, every term
                verdict = Verdict.exception(failed)
                verifier = None
            else:
                try:
                    verifier = self._verifier(task)
                except CrossgymError as exc:  # cannot build the verifier for this row: a verifier error
                    verdict = Verdict.exception(str(exc))
                    verifier = None
                else:
                    judged = task if self.spec is None else extra_task(task, self.spec)
                    verdict = safe_verify(verifier, judged, completion)
            reward = reward_from_verdict(verdict, self.on_error)
            rewards.append(reward)
            batch.append((completion, verdict, reward))
            if self.sink is not None and self.spec is None:
                records.append(_record(task, completion, verdict, reward, verifier, self.sink))
        for observer in self.observers:
            observer(tasks, [c for c, _, _ in batch], [v for _, v, _ in batch], list(rewards))
        self._log(kwargs.get("log_metric"), batch)
        if self.sink is not None and records:
            self.sink.write(records)
        return rewards

    def _log(self, log_metric: Any, batch: list[tuple[Completion, Verdict | None, float | None]]) -> None:
        scored = [v for _, v, _ in batch if v is not None]
        if log_metric is None or not scored:
            return
        log_metric(f"verifiers/{self.name}/pass_rate", sum(v.passed for v in scored) / len(scored))
        log_metric(f"verifiers/{self.name}/error_rate",
                   sum(v.error is not None and v.error_kind != "malformed" for v in scored) / len(scored))


def _record(task: Task, completion: Completion, verdict: Verdict, reward: float | None, verifier: Any,
            sink: RolloutSink) -> dict[str, Any]:
    from crossgym import __version__

    return {"task": task.to_dict(), "completion": completion.to_dict(), "verdict": _verdict_dict(verdict),
            "turns": max(1, len(completion.assistant_messages)), "timings": {},
            "provenance": {"verifier": task.verifier.name, "verifier_version": str(getattr(verifier, "version", "")),
                           "verifier_params": task.verifier.params, "crossgym_version": __version__,
                           "model": sink.model, "step": sink.step(), "reward_seen": reward, "source": "train"}}


def _verdict_dict(v: Verdict) -> dict[str, Any]:
    d = v.to_dict()
    if isinstance(d["reward"], float) and math.isnan(d["reward"]):
        d["reward"] = None
    return d


def task_verifier_names(tasks: Sequence[Task]) -> list[str]:
    """Distinct task verifier names, in first-seen order."""
    seen: dict[str, None] = {}
    for t in tasks:
        seen.setdefault(t.verifier.name, None)
    return list(seen)


def build_reward_functions(run: RunConfig, tasks: Sequence[Task], *, sink: RolloutSink | None = None
                           ) -> tuple[list[VerdictReward], list[float]]:
    """Reward functions and weights: one per task verifier name (weight task_weight), then config.verifiers."""
    funcs: list[VerdictReward] = []
    weights: list[float] = []
    names: set[str] = set()
    for vname in task_verifier_names(tasks):
        funcs.append(VerdictReward(vname, on_error=run.on_error, only=vname, sink=sink))
        weights.append(run.task_weight)
        names.add(vname)
    for i, vc in enumerate(run.verifiers):
        name = vc.name if vc.name not in names else f"{vc.name}_extra"
        while name in names:
            name = f"{vc.name}_extra{i}"
        names.add(name)
        funcs.append(VerdictReward(name, on_error=run.on_error, spec=VerifierSpec(vc.name, dict(vc.params))))
        weights.append(vc.weight)
    return funcs, weights


def check_verifiers_build(run: RunConfig, tasks: Sequence[Task]) -> None:
    """Build every verifier the run uses once, so a bad name or param fails before any model loads."""
    from crossgym.api import load_verifier

    specs = {t.verifier.key(): t.verifier for t in tasks}
    for i, vc in enumerate(run.verifiers):
        specs.setdefault(VerifierSpec(vc.name, dict(vc.params)).key(), VerifierSpec(vc.name, dict(vc.params)))
        try:
            load_verifier(VerifierSpec(vc.name, dict(vc.params)))
        except CrossgymError as exc:
            raise ConfigError(str(exc), where=f"verifiers[{i}]") from None
    for spec in specs.values():
        load_verifier(spec)
