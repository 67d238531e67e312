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

import json
import logging
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crossgym.protocol.errors import CrossgymError
from crossgym.protocol.task import Completion, Task
from crossgym.scoring import RecordWriter, RewardRule, Scored

log = logging.getLogger(__name__)


class PromptNotFound(CrossgymError):
    """The query does not start with its prompt (not even after a tokenizer round trip or left truncation)."""


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

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule.to_dict(),
                "strip_tokens": None if self.strip_tokens is None else list(self.strip_tokens),
                "model": self.model, "rollouts": self.rollouts}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ScoreConfig:
        """Reads this shape and 0.1's (on_error, task_weight, extras and override at the top level)."""
        strip = d.get("strip_tokens")
        rule = d.get("rule")
        return cls(rule=RewardRule.from_dict(rule if rule is not None else d),
                   strip_tokens=None if strip is None else tuple(strip), model=d.get("model"),
                   rollouts=d.get("rollouts"))

    def error_reward(self) -> float:
        return float(self.rule.numeric("OpenRLHF").on_error)  # type: ignore[arg-type]


def score(cfg: ScoreConfig, task: Task, completion: Completion) -> Scored:
    """The scoring core's Scored for one completion of ``task``."""
    return cfg.rule.score(task, completion)


def error_scored(cfg: ScoreConfig, detail: str) -> Scored:
    """Every term scores on_error (the infrastructure failed, not the completion)."""
    return cfg.rule.score_error(detail)


def openrlhf_values(cfg: ScoreConfig, s: Scored) -> tuple[float, float, dict[str, float]]:
    """(reward, score, extra_logs) of one sample as OpenRLHF takes them: numbers only (it cannot mask)."""
    err = cfg.error_reward()
    return s.reward_or(err), err if s.task_reward is None else s.task_reward, dict(s.metrics)


def record(cfg: ScoreConfig, task: Task, completion: Completion, s: Scored, *, turns: int | None = None) -> None:
    """Append the rollout to ``cfg.rollouts`` (one write, safe across vLLM actors); nothing when not recording."""
    if cfg.rollouts:
        writer = RecordWriter(cfg.rollouts, backend="openrlhf", model=cfg.model or "")
        writer.write([writer.record(task, completion, s, turns=turns)])


def special_tail_tokens(model: str | os.PathLike[str] | None) -> tuple[str, ...] | None:
    """End-of-sequence and padding token texts from a local model directory's tokenizer and generation files
    (JSON only, no transformers); None when ``model`` is not a local directory."""
    if model is None or not Path(model).is_dir():
        return None
    d = Path(model)

    def read(name: str) -> dict[str, Any]:
        try:
            data = json.loads((d / name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    tok_cfg, special_map, gen = read("tokenizer_config.json"), read("special_tokens_map.json"), read(
        "generation_config.json")
    by_id: dict[int, str] = {}
    for t in read("tokenizer.json").get("added_tokens") or ():
        by_id[int(t["id"])] = str(t["content"])
    for i, t in (tok_cfg.get("added_tokens_decoder") or {}).items():
        by_id[int(i)] = str(t.get("content") if isinstance(t, dict) else t)
    found: set[str] = set()
    for src in (tok_cfg, special_map):
        for key in ("eos_token", "pad_token"):
            v = src.get(key)
            v = v.get("content") if isinstance(v, dict) else v
            if isinstance(v, str) and v:
                found.add(v)
    for key in ("eos_token_id", "pad_token_id"):
        ids = gen.get(key)
        for i in ids if isinstance(ids, list) else [ids]:
            if isinstance(i, int) and i in by_id:
                found.add(by_id[i])
    return tuple(sorted(found, key=lambda s: (-len(s), s)))


class QueryScorer:
    """Turns OpenRLHF (query, prompt, label) triples into rewards. Thread-safe; one per reward file."""

    def __init__(self, cfg: ScoreConfig) -> None:
        self.cfg = cfg
        self._tok: Any = None
        self._tail: tuple[str, ...] | None = cfg.strip_tokens
        self._lock = threading.Lock()

    # ------------------------------------------------------------ the response
    def tokenizer(self) -> Any:
        """The policy's tokenizer (loaded once, lazily); None when there is no model to load it from."""
        if self._tok is None and self.cfg.model:
            with self._lock:
                if self._tok is None:
                    from transformers import AutoTokenizer

                    self._tok = AutoTokenizer.from_pretrained(self.cfg.model)
        return self._tok

    def tail_tokens(self) -> tuple[str, ...]:
        if self._tail is None:
            tok = self.tokenizer()
            found = {t for t in (getattr(tok, "eos_token", None), getattr(tok, "pad_token", None)) if t}
            self._tail = tuple(sorted(found, key=lambda s: (-len(s), s)))
        return self._tail

    def strip_tail(self, text: str) -> str:
        """``text`` without its trailing end-of-sequence/padding tokens (any number, any order); nothing else."""
        tail = self.tail_tokens()
        changed = True
        while changed and text:
            changed = False
            for t in tail:
                if text.endswith(t):
                    text = text[:-len(t)]
                    changed = True
                    break
        return text

    def response(self, query: str, prompt: str) -> str:
        """The response inside ``query``: the prompt prefix and trailing special tokens removed."""
        if query.startswith(prompt):
            return self.strip_tail(query[len(prompt):])
        tok = self.tokenizer()
        if tok is not None:
            ids = tok(prompt, add_special_tokens=False)["input_ids"]
            for k in range(len(ids)):  # k = 0: a lossy round trip; k > 0: OpenRLHF left-truncated the prompt
                seen = tok.decode(ids[k:], skip_special_tokens=False)
                if seen and query.startswith(seen):
                    return self.strip_tail(query[len(seen):])
        raise PromptNotFound("the query does not start with its prompt (checked exactly, after a tokenizer round "
                             "trip, and left-truncated)")

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
            return error_scored(self.cfg, why or "openrlhf: no response"), task, None
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
        results: list[Scored] = []
        for task, text, why in prepared:
            if task is None or text is None:
                results.append(error_scored(self.cfg, why or "openrlhf: no response"))
                continue
            results.append(next(judged))
            record(self.cfg, task, Completion.from_text(text), results[-1])
        values = [openrlhf_values(self.cfg, s) for s in results]
        keys = sorted({k for _, _, logs in values for k in logs})
        return {"rewards": [r for r, _, _ in values], "scores": [sc for _, sc, _ in values],
                "extra_logs": {k: [logs.get(k, 0.0) for _, _, logs in values] for k in keys}}

