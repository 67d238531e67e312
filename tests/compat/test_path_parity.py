"""Every reward path gives one verdict: a bounded run of bench/path_parity.py (fixed seed) and its regressions."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the serve extra is not installed (pip install 'crossgym[serve]')")

BENCH = Path(__file__).resolve().parents[2] / "bench" / "path_parity.py"

#: cheap verifiers (math's pool and code_tests' sandbox run in the bench: `bench/path_parity.py`)
CHEAP = ("exact_match", "numeric", "multiple_choice", "json_match", "json_schema", "tool_call", "instructions",
         "composite")


@pytest.fixture(scope="module")
def parity():  # type: ignore[no-untyped-def]
    if not BENCH.exists():
        pytest.skip("bench/path_parity.py is not in this checkout")
    spec = importlib.util.spec_from_file_location("path_parity", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["path_parity"] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", CHEAP)
def test_every_path_gives_the_same_verdict(parity, make_client, tmp_path, name):  # type: ignore[no-untyped-def]
    """In process, verify_many, /verify, /verify/batch, verify-batch on JSONL and Parquet, TRL's reward functions
    and the rollout store agree on (reward, passed, error kind) for awkward mutations of the corpus."""
    found = parity.run_verifier(name, 40, 0, make_client(), tmp_path)
    assert [b for b in found if "refusals" not in b] == []


def test_an_empty_tool_name_is_scored_by_serve_as_in_process(make_client):  # type: ignore[no-untyped-def]
    """A call with an empty name (an OpenAI endpoint's, recorded by eval as ToolCall.from_dict reads it) posts in
    the protocol's own form and gets the in-process verdict; /verify answered 422 while verify-batch scored it."""
    from crossgym.api import load_verifier
    from crossgym.protocol.task import Completion, Task

    task = Task.from_dict({"id": "t", "prompt": "weather?", "answer": {"name": "get_weather", "arguments": {}},
                           "verifier": "tool_call"})
    completion = Completion.from_dict({"messages": [{"role": "assistant", "content": "", "tool_calls": [
        {"type": "function", "function": {"name": "", "arguments": "{}"}}]}]})
    local = load_verifier(task.verifier).verify(task, completion)
    client = make_client()
    body = {"task": task.to_dict(), "completion": completion.to_dict()}
    single = client.post("/verify", json=body)
    batch = client.post("/verify/batch", json={"items": [body]})
    assert single.status_code == 200 and batch.status_code == 200
    for got in (single.json()["verdict"], batch.json()["verdicts"][0]):
        assert (got["reward"], got["passed"], got["error"]) == (local.reward, local.passed, local.error)
