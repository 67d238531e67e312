"""Registers the built-in inference engines."""

from __future__ import annotations

from crossgym.plugins import hookimpl
from crossgym.plugins.registry import Registrar


@hookimpl
def crossgym_register_engines(registry: Registrar) -> None:
    registry.add("hf", "crossgym.inference.hf:HFEngine",
                 description="transformers generate() in process: batched, left padding, token ids and logprobs",
                 install="pip install 'crossgym[trl]'", requires=("transformers", "torch"))
    registry.add("vllm", "crossgym.inference.vllm_engine:VLLMEngine",
                 description="vLLM offline LLM in process, or its OpenAI-compatible server",
                 install="pip install 'crossgym[vllm]'", requires=("vllm",))
    registry.add("sglang", "crossgym.inference.sglang_engine:SGLangEngine",
                 description="an SGLang server: native /generate with token ids and logprobs, or its OpenAI API",
                 install="pip install 'crossgym[sglang]'", requires=("httpx",))
    registry.add("openai", "crossgym.inference.openai_engine:OpenAIEngine",
                 description="any OpenAI-compatible chat completions URL, with a concurrency limit and retries",
                 install="pip install 'crossgym[serve]'", requires=("httpx",))
