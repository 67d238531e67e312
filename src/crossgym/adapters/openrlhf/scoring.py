"""The runtime behind the generated reward file: OpenRLHF queries -> crossgym Verdicts -> OpenRLHF's reward dict.

OpenRLHF calls ``reward_func(queries, prompts, labels)`` once per sample, in a worker thread of each vLLM actor.
``queries[i]`` is prompt + response decoded WITH special tokens, so the response is the query minus the prompt
prefix and minus the trailing end-of-sequence/padding tokens; ``labels[i]`` is the Task JSON of the dataset row.

Reward semantics are crossgym's (adapters/common.py): reward = task_weight x the task verifier's reward + the sum of
weight x reward of each extra verifier; a verifier error or timeout scores ``on_error``; a malformed completion keeps
its own reward. Torch is imported only when the tensors are built.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crossgym.protocol.errors import CrossgymError
from crossgym.protocol.task import Completion, Task, Verdict, VerifierSpec

log = logging.getLogger(__name__)

#: extra_logs keys (OpenRLHF averages them per step and logs them beside its own).
LOG_PASSED = "crossgym_passed"
LOG_ERROR = "crossgym_verifier_error"
LOG_MALFORMED = "crossgym_malformed"


class PromptNotFound(CrossgymError):
    """The query does not start with its prompt (not even after a tokenizer round trip or left truncation)."""


@dataclass(frozen=True)
class ScoreConfig:
    """What the generated files bake in: reward weights, the error reward and how to cut responses."""

    on_error: float = 0.0
    task_weight: float = 1.0
    #: extra verifiers applied to every task: (name, params, weight)
    extras: tuple[tuple[str, dict[str, Any], float], ...] = ()
    #: special tokens stripped from the end of a response; None: read them from ``model``'s tokenizer
    strip_tokens: tuple[str, ...] | None = None
    #: the policy's tokenizer source (for round trips when the query does not start with the prompt text)
    model: str | None = None
    #: append scored rollouts here (JSONL, for `crossgym reverify`); None: do not record
    rollouts: str | None = None
    #: score with this verifier (name, params) instead of each task's own (a backend's reward_function(spec))
    override: tuple[str, dict[str, Any]] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"on_error": self.on_error, "task_weight": self.task_weight,
                "extras": [{"name": n, "params": p, "weight": w} for n, p, w in self.extras],
                "strip_tokens": None if self.strip_tokens is None else list(self.strip_tokens),
                "model": self.model, "rollouts": self.rollouts,
                "override": None if self.override is None else {"name": self.override[0], "params": self.override[1]}}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ScoreConfig:
        strip = d.get("strip_tokens")
        ov = d.get("override")
        return cls(on_error=float(d.get("on_error", 0.0)), task_weight=float(d.get("task_weight", 1.0)),
                   extras=tuple((str(e["name"]), dict(e.get("params") or {}), float(e.get("weight", 1.0)))
                                for e in d.get("extras") or ()),
                   strip_tokens=None if strip is None else tuple(strip), model=d.get("model"),
                   rollouts=d.get("rollouts"),
                   override=None if not ov else (str(ov["name"]), dict(ov.get("params") or {})))


@dataclass(frozen=True)
class Scored:
    """One sample's outcome: the reward OpenRLHF trains on, the task verdict's own score, and what to log."""

    reward: float
    score: float
    verdict: Verdict
    logs: dict[str, float] = field(default_factory=dict)


def reward_of(verdict: Verdict, on_error: float) -> float:
    """crossgym's rule (adapters/common.py): Verdict.reward, except a verifier error or timeout scores on_error."""
    from crossgym.adapters.common import reward_from_verdict

    return float(reward_from_verdict(verdict, on_error))  # type: ignore[arg-type]


def verify(spec: VerifierSpec, task: Task, completion: Completion) -> Verdict:
    """The verifier's Verdict; a verifier that cannot be built or that raises becomes an "exception" Verdict."""
    from crossgym.adapters.common import safe_verify
    from crossgym.api import load_verifier

    try:
        verifier = load_verifier(spec)
    except CrossgymError as exc:
        log.warning("verifier %s cannot be built: %s", spec.name, exc)
        return Verdict.exception(f"{spec.name}: {exc}")
    return safe_verify(verifier, task, completion)


def score(cfg: ScoreConfig, task: Task, completion: Completion) -> Scored:
    """The weighted reward for one completion of ``task``."""
    spec = task.verifier if cfg.override is None else VerifierSpec(*cfg.override)
    verdict = verify(spec, task, completion)
    r_task = reward_of(verdict, cfg.on_error)
    total = cfg.task_weight * r_task
    logs = {LOG_PASSED: float(verdict.passed), LOG_MALFORMED: float(verdict.error_kind == "malformed"),
            LOG_ERROR: float(verdict.error is not None and verdict.error_kind != "malformed")}
    for name, params, weight in cfg.extras:
        r = reward_of(verify(VerifierSpec(name, params), task, completion), cfg.on_error)
        total += weight * r
        logs[f"crossgym_{name}"] = r
    return Scored(reward=total, score=r_task, verdict=verdict, logs=logs)


def error_scored(cfg: ScoreConfig, detail: str) -> Scored:
    """Every term scores on_error (the infrastructure failed, not the completion)."""
    verdict = Verdict.exception(detail)
    total = (cfg.task_weight + sum(w for _, _, w in cfg.extras)) * cfg.on_error
    return Scored(reward=total, score=cfg.on_error, verdict=verdict,
                  logs={LOG_PASSED: 0.0, LOG_MALFORMED: 0.0, LOG_ERROR: 1.0})


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
    def score_one(self, query: str, prompt: str, label: Any) -> tuple[Scored, Task | None, str | None]:
        from crossgym.adapters.openrlhf.convert import task_from_label

        try:
            task = task_from_label(label)
        except (ValueError, KeyError, TypeError) as exc:
            return error_scored(self.cfg, f"openrlhf label is not a crossgym Task: {exc}"), None, None
        try:
            text = self.response(query, prompt)
        except CrossgymError as exc:
            log.warning("task %s: %s", task.id, exc)
            return error_scored(self.cfg, f"openrlhf: {exc}"), task, None
        return score(self.cfg, task, Completion.from_text(text)), task, text

    def __call__(self, queries: Sequence[str], prompts: Sequence[str], labels: Sequence[Any]) -> dict[str, Any]:
        """OpenRLHF's ``reward_func``: {"rewards", "scores", "extra_logs"} as float64 tensors, one entry a sample."""
        import torch

        results = [self.score_one(q, p, lab) for q, p, lab in zip(queries, prompts, labels, strict=True)]
        self._record(results)
        scored = [r[0] for r in results]
        keys = sorted({k for s in scored for k in s.logs})
        return {
            "rewards": torch.tensor([s.reward for s in scored], dtype=torch.float64),
            "scores": torch.tensor([s.score for s in scored], dtype=torch.float64),
            "extra_logs": {k: torch.tensor([s.logs.get(k, 0.0) for s in scored], dtype=torch.float64)
                           for k in keys},
        }

    def _record(self, results: list[tuple[Scored, Task | None, str | None]]) -> None:
        if not self.cfg.rollouts:
            return
        lines = []
        for s, task, text in results:
            if task is None or text is None:
                continue
            lines.append(json.dumps(rollout_record(task, Completion.from_text(text), s), ensure_ascii=False))
        write_rollouts(self.cfg.rollouts, lines)


def rollout_record(task: Task, completion: Completion, s: Scored, *, turns: int = 1) -> dict[str, Any]:
    """A Rollout-shaped record (what `crossgym reverify` reads)."""
    from crossgym import __version__

    return {"task": task.to_dict(), "completion": completion.to_dict(), "verdict": s.verdict.to_dict(),
            "turns": turns, "timings": {},
            "provenance": {"verifier": task.verifier.name, "verifier_params": task.verifier.params,
                           "crossgym_version": __version__, "reward_seen": s.reward, "source": "train",
                           "backend": "openrlhf"}}


def write_rollouts(path: str, lines: list[str]) -> None:
    """Append JSONL lines; one write per call so concurrent vLLM actors do not interleave lines."""
    if not lines:
        return
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, ("\n".join(lines) + "\n").encode("utf-8"))
        finally:
            os.close(fd)
    except OSError as exc:  # recording is a convenience: never lose a reward over it
        log.warning("could not record rollouts to %s: %s", path, exc)
