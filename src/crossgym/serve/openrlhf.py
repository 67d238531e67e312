"""OpenRLHF's HTTP remote-reward shape: ``--reward.remote_url http://HOST:PORT/openrlhf/reward``.

OpenRLHF posts ``{"query": [...], "prompts": [...], "labels": [...]}`` (its SingleTurnAgentExecutor) where a query
is the prompt followed by the response, decoded with special tokens, and a label is the dataset row's label:
crossgym's OpenRLHF dataset writes the whole Task JSON there. The reply is what OpenRLHF's own reward server gives:
``{"rewards": [...], "scores": [...], "extra_logs": {name: [...]}}``, one entry per query.

The route scores through the same QueryScorer as the reward file crossgym generates for OpenRLHF (the response cut
out exactly, after a tokenizer round trip or left-truncated; the server's RewardRule: task_weight, extra terms,
on_error), so the HTTP route and the file give the same reward for the same sample.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


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
