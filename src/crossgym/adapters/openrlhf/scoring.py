"""The runtime behind the generated reward file: OpenRLHF queries -> crossgym's scoring core -> OpenRLHF's dict.

OpenRLHF calls ``reward_func(queries, prompts, labels)`` once per sample, in a worker thread of each vLLM actor.
``queries[i]`` is prompt + response decoded WITH special tokens, so the response is the query minus the prompt
prefix (exactly, after a tokenizer round trip, or left-truncated) and minus the trailing end-of-sequence/padding
tokens; ``labels[i]`` is the Task JSON of the dataset row. The same cut serves `crossgym serve`'s
``/openrlhf/reward`` route, so the file and the HTTP route give the same reward for the same sample.

Rewards are crossgym.scoring's RewardRule (task_weight, extra terms, on_error); OpenRLHF's ``scores`` are the task
term; ``extra_logs`` are the scoring core's per-sample metrics (the same names on every backend). Torch is imported
only when the tensors are built.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from crossgym.adapters.kit.responses import PromptNotFound, ResponseCutter, special_tail_tokens
from crossgym.protocol.errors import CrossgymError
from crossgym.protocol.task import Completion, Task
from crossgym.scoring import RecordWriter, RewardRule, Scored
from crossgym.scoring.parts import PART_PREFIX

log = logging.getLogger(__name__)

__all__ = ["PromptNotFound", "QueryScorer", "ScoreConfig", "Scored", "error_scored", "openrlhf_values", "record", "score",
           "special_tail_tokens"]


@dataclass(frozen=True)
class ScoreConfig:
    """What the generated files bake in: the reward rule and how to cut responses out of queries."""

    rule: RewardRule = field(default_factory=RewardRule)
    #: special tokens stripped from the end of a response; None: read them from ``model``'s tokenizer
    strip_tokens: tuple[str, ...] | None = None
    #: the policy's tokenizer source (for round trips when the query does not start with the prompt text)
    model: str | None = None
    #: append scored rollouts here (JSONL, for `crossgym reverify`); None: do not record
    rollouts: str | None = None
    #: the run segment (1 for a fresh run, +1 per resume) every recorded rollout says wrote it
    segment: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule.to_dict(),
                "strip_tokens": None if self.strip_tokens is None else list(self.strip_tokens),
                "model": self.model, "rollouts": self.rollouts, "segment": self.segment}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ScoreConfig:
        """Reads this shape and 0.1's (on_error, task_weight, extras and override at the top level)."""
        strip = d.get("strip_tokens")
        rule = d.get("rule")
        return cls(rule=RewardRule.from_dict(rule if rule is not None else d),
                   strip_tokens=None if strip is None else tuple(strip), model=d.get("model"),
                   rollouts=d.get("rollouts"), segment=d.get("segment"))

    def error_reward(self) -> float:
        return float(self.rule.numeric("OpenRLHF").on_error)  # type: ignore[arg-type]


def score(cfg: ScoreConfig, task: Task, completion: Completion) -> Scored:
    """The scoring core's Scored for one completion of ``task``."""
    return cfg.rule.score(task, completion)


def error_scored(cfg: ScoreConfig, detail: str, task: Task | None = None) -> Scored:
    """Every term scores on_error (the infrastructure failed, not the completion); ``task`` gives it its part."""
    return cfg.rule.score_error(detail, task=task)


def openrlhf_values(cfg: ScoreConfig, s: Scored) -> tuple[float, float, dict[str, float]]:
    """(reward, score, extra_logs) of one sample as OpenRLHF takes them: numbers only (it cannot mask)."""
    err = cfg.error_reward()
    # a blend part's keys are left out: OpenRLHF averages every extra_logs key over the whole batch, so a part's
    # mean cannot be expressed there (its per-part numbers come from rollouts.jsonl: crossgym.scoring.parts)
    logs = {k: v for k, v in s.metrics.items() if not k.startswith(PART_PREFIX)}
    return s.reward_or(err), err if s.task_reward is None else s.task_reward, logs


def record(cfg: ScoreConfig, task: Task, completion: Completion, s: Scored, *, turns: int | None = None) -> None:
    """Append the rollout to ``cfg.rollouts`` (one write, safe across vLLM actors); nothing when not recording."""
    record_many(cfg, [(task, completion, s)], turns=turns)


def record_many(cfg: ScoreConfig, rollouts: Sequence[tuple[Task, Completion, Scored]], *,
                turns: int | None = None) -> None:
    """Append a batch of rollouts to ``cfg.rollouts`` in one write; nothing when not recording."""
    if cfg.rollouts and rollouts:
        writer = RecordWriter(cfg.rollouts, backend="openrlhf", model=cfg.model or "",
                              fields=None if cfg.segment is None else {"segment": cfg.segment})
        writer.write([writer.record(t, c, s, turns=turns) for t, c, s in rollouts])


class QueryScorer(ResponseCutter):
    """Turns OpenRLHF (query, prompt, label) triples into rewards. Thread-safe; one per reward file."""

    def __init__(self, cfg: ScoreConfig) -> None:
        super().__init__(cfg.strip_tokens, cfg.model)
        self.cfg = cfg

    # ------------------------------------------------------------ scoring
    def prepare(self, query: str, prompt: str, label: Any) -> tuple[Task | None, str | None, str | None]:
        """(task, response text, None) or (task or None, None, why it cannot be scored)."""
        from crossgym.adapters.openrlhf.convert import task_from_label

        try:
            task = task_from_label(label)
        except Exception as exc:  # untrusted input (a dataset row, an HTTP body): any failure is this sample's
            return None, None, f"openrlhf label is not a crossgym Task: {type(exc).__name__}: {exc}"
        if not isinstance(query, str) or not isinstance(prompt, str):
            return task, None, "openrlhf: the query and the prompt must be text"
        try:
            return task, self.response(query, prompt), None
        except CrossgymError as exc:
            log.warning("task %s: %s", task.id, exc)
            return task, None, f"openrlhf: {exc}"

    def score_one(self, query: str, prompt: str, label: Any) -> tuple[Scored, Task | None, str | None]:
        task, text, why = self.prepare(query, prompt, label)
        if task is None or text is None:
            return error_scored(self.cfg, why or "openrlhf: no response", task), task, None
        return score(self.cfg, task, Completion.from_text(text)), task, text

    def __call__(self, queries: Sequence[str], prompts: Sequence[str], labels: Sequence[Any]) -> dict[str, Any]:
        """OpenRLHF's ``reward_func``: {"rewards", "scores", "extra_logs"} as float64 tensors, one entry a sample."""
        import torch

        reply = self.reply(queries, prompts, labels)
        return {"rewards": torch.tensor(reply["rewards"], dtype=torch.float64),
                "scores": torch.tensor(reply["scores"], dtype=torch.float64),
                "extra_logs": {k: torch.tensor(v, dtype=torch.float64) for k, v in reply["extra_logs"].items()}}

    def reply(self, queries: Sequence[str], prompts: Sequence[str], labels: Sequence[Any]) -> dict[str, Any]:
        """OpenRLHF's reward reply as lists ({"rewards", "scores", "extra_logs"}): what the reward file returns as
        tensors and `crossgym serve`'s /openrlhf/reward returns as JSON. Records the rollouts when configured."""
        prepared = [self.prepare(q, p, lab) for q, p, lab in zip(queries, prompts, labels, strict=True)]
        ok = [(t, Completion.from_text(x)) for t, x, _ in prepared if t is not None and x is not None]
        judged = iter(self.cfg.rule.score_many([t for t, _ in ok], [c for _, c in ok]) if ok else [])
        comps = iter(ok)
        results: list[Scored] = []
        scored_ok: list[tuple[Task, Completion, Scored]] = []
        for task, text, why in prepared:
            if task is None or text is None:
                results.append(error_scored(self.cfg, why or "openrlhf: no response", task))
                continue
            results.append(next(judged))
            scored_ok.append((*next(comps), results[-1]))
        record_many(self.cfg, scored_ok)  # one write for the batch
        values = [openrlhf_values(self.cfg, s) for s in results]
        keys = sorted({k for _, _, logs in values for k in logs})
        return {"rewards": [r for r, _, _ in values], "scores": [sc for _, sc, _ in values],
                "extra_logs": {k: [logs.get(k, 0.0) for _, _, logs in values] for k in keys}}

