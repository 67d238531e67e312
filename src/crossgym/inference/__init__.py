"""Inference engines: hf (embedded CPU default), vllm, sglang, and any OpenAI-compatible server.

Each module imports its framework inside functions; build one with ``crossgym.get_engine(name, **params)``.
"""
