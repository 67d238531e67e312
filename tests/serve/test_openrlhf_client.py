"""OpenRLHF's own remote-reward client (SingleTurnAgentExecutor with --reward.remote_url) against a live server.

Runs in the `openrlhf` nox venv (`.nox/openrlhf/bin/python -m pytest tests/serve/test_openrlhf_client.py`); the
server runs from an interpreter that has fastapi (this one, or the project's .venv). Skipped elsewhere. Only the
generator is replaced: a replay engine returns each scripted completion as token ids, ending in EOS.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("openrlhf")
pytest.importorskip("transformers")

from openrlhf.utils.agent import SingleTurnAgentExecutor  # noqa: E402
from serve_process import served  # noqa: E402

from crossgym.adapters.openrlhf.parity import ReplayEngine, SamplingParams, byte_tokenizer, native_prompt  # noqa: E402
from crossgym.api import load_verifier  # noqa: E402

VERIFIERS = ["exact_match", "numeric", "json_answer", "multiple_choice", "format_tags", "math"]


def test_openrlhf_single_turn_executor_scores_through_the_server() -> None:
    tok = byte_tokenizer()
    cases = [(e.task, e.completion) for name in VERIFIERS for e in load_verifier(name).examples()
             if not e.task.tools and e.task.env == "single_turn"]
    assert len(cases) >= 20
    with served() as url:
        executor = SingleTurnAgentExecutor(f"{url}/openrlhf/reward")

        async def run_one(task: Any, completion: Any) -> Any:
            prompt, label = native_prompt(task, tok)
            engine = ReplayEngine(tok, [completion.text])
            return await executor.execute(prompt, label, SamplingParams(max_tokens=2048), 8192, tok, engine)

        async def run_all() -> list[Any]:
            return await asyncio.gather(*(run_one(t, c) for t, c in cases))

        outputs = asyncio.run(run_all())
    for (task, completion), out in zip(cases, outputs, strict=True):
        local = load_verifier(task.verifier).verify(task, completion)
        assert out["reward"] == [local.reward], (task.verifier.name, completion.text, out["reward"])
        assert out["scores"] == [local.reward]
        assert out["extra_logs"]["crossgym/passed"] == [1.0 if local.passed else 0.0]
