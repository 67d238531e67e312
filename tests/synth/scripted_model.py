"""A scripted stand-in for the *model* in synth tests: an InferenceEngine whose replies are fixed in advance.

synth itself (prompts, parsing, the verifier gate, provenance) runs for real; only the model's text is scripted, so
each rejection reason can be produced on purpose. Real models run in test_synth_tiny.py and test_synth_vllm.py.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any

from crossgym.protocol import Completion, Message, SamplingParams
from crossgym.protocol.interfaces import EngineCapabilities
from crossgym.synth.prompts import SYSTEM


class ScriptedModel:
    """Drafts come from ``drafts`` in order; a solve prompt (a task's own chat) gets ``solutions[question]``."""

    name = "scripted"
    model_name = "scripted-model"
    capabilities = EngineCapabilities()

    def __init__(self, drafts: Iterable[str], solutions: dict[str, str]) -> None:
        self.drafts = deque(drafts)
        self.solutions = solutions
        self.calls: list[tuple[int, SamplingParams]] = []

    def check(self) -> None:
        return None

    def generate(self, prompts: list[list[Message]], n: int, params: SamplingParams,
                 tools: list[list[Any]] | None = None) -> list[list[Completion]]:
        self.calls.append((len(prompts), params))
        out = []
        for chat in prompts:
            if chat[0].role == "system" and chat[0].content == SYSTEM:
                text = self.drafts.popleft() if self.drafts else "(no more scripted drafts)"
            else:
                text = self.solutions.get(chat[-1].content, "I do not know.")
            out.append([Completion.from_text(text) for _ in range(n)])
        return out
