"""Engines registered before their integration is built: `crossgym list` shows them as not available yet."""

from crossgym.plugins.pending import pending

HFPending = pending("hf", "crossgym's hf engine is not built yet (issue: Inference engines)")
VLLMPending = pending("vllm", "crossgym's vllm engine is not built yet (issue: Inference engines)")
SGLangPending = pending("sglang", "crossgym's sglang engine is not built yet (issue: Inference engines)")
OpenAIPending = pending("openai", "crossgym's openai engine is not built yet (issue: Inference engines)")
