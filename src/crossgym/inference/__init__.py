"""Inference engines: hf (embedded CPU default), vllm, sglang, and any OpenAI-compatible server."""
