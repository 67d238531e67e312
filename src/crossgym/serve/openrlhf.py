"""OpenRLHF's HTTP remote-reward shape: ``--reward.remote_url http://HOST:PORT/openrlhf/reward``.

OpenRLHF posts ``{"query": [...], "prompts": [...], "labels": [...]}`` (its SingleTurnAgentExecutor) where a query
is the prompt followed by the response, decoded with special tokens, and a label is the dataset row's label:
crossgym's OpenRLHF dataset writes the whole Task JSON there. The reply is what OpenRLHF's own reward server gives:
``{"rewards": [...], "scores": [...], "extra_logs": {name: [...]}}``, one entry per query.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from crossgym.protocol.task import Completion, Task, Verdict

#: extra_logs keys, the same the crossgym OpenRLHF reward file logs
LOG_PASSED = "crossgym_passed"
LOG_ERROR = "crossgym_verifier_error"
LOG_MALFORMED = "crossgym_malformed"


class OpenRLHFRewardRequest(BaseModel):
    """OpenRLHF's remote reward request: one query, prompt and label per sample."""

    model_config = ConfigDict(extra="allow", strict=True, use_attribute_docstrings=True)
    query: list[str] = Field(max_length=4096)
    """Prompt + response, decoded with special tokens."""
    prompts: list[str] = Field(default_factory=list)
    """The prompts (as OpenRLHF rendered them)."""
    labels: list[Any] = Field(default_factory=list)
    """The dataset labels: crossgym Task JSON (text or object)."""


class OpenRLHFRewardResponse(BaseModel):
    """OpenRLHF's remote reward reply."""

    rewards: list[float]
    scores: list[float]
    extra_logs: dict[str, list[float]]


def response_text(query: str, prompt: str, strip_tokens: tuple[str, ...]) -> str | None:
    """The response inside ``query``: the prompt prefix and trailing special tokens removed; None if no prefix."""
    if not query.startswith(prompt):
        return None
    text = query[len(prompt):]
    changed = True
    while changed and text:
        changed = False
        for t in strip_tokens:
            if t and text.endswith(t):
                text = text[:-len(t)]
                changed = True
    return text


def parse_label(label: Any) -> Task:
    if isinstance(label, str):
        label = json.loads(label)
    if not isinstance(label, dict):
        raise ValueError(f"a label must be a crossgym Task (JSON), got {type(label).__name__}")
    return Task.from_dict(label)


def to_pairs(req: OpenRLHFRewardRequest, strip_tokens: tuple[str, ...]) -> list[tuple[Task, Completion] | Verdict]:
    """Per sample: the (Task, Completion) to verify, or the exception Verdict saying why it cannot be."""
    n = len(req.query)
    out: list[tuple[Task, Completion] | Verdict] = []
    for i in range(n):
        if i >= len(req.labels):
            out.append(Verdict.exception(f"openrlhf: sample {i} has no label"))
            continue
        try:
            task = parse_label(req.labels[i])
        except (ValueError, KeyError, TypeError) as exc:
            out.append(Verdict.exception(f"openrlhf label is not a crossgym Task: {exc}"))
            continue
        prompt = req.prompts[i] if i < len(req.prompts) else ""
        text = response_text(req.query[i], prompt, strip_tokens)
        if text is None:
            out.append(Verdict.exception("openrlhf: the query does not start with its prompt"))
            continue
        out.append((task, Completion.from_text(text)))
    return out


def reward_reply(verdicts: list[Verdict], on_error: float) -> dict[str, Any]:
    """OpenRLHF's reply: rewards (on_error for a verifier error or timeout), scores and crossgym's logs."""
    rewards = []
    for v in verdicts:
        rewards.append(float(on_error) if v.error_kind in ("timeout", "exception") else float(v.reward))
    return {"rewards": rewards, "scores": list(rewards),
            "extra_logs": {LOG_PASSED: [1.0 if v.passed else 0.0 for v in verdicts],
                           LOG_ERROR: [1.0 if v.error_kind in ("timeout", "exception") else 0.0 for v in verdicts],
                           LOG_MALFORMED: [1.0 if v.error_kind == "malformed" else 0.0 for v in verdicts]}}
