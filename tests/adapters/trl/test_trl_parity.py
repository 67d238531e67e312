"""The TRL parity driver: the reward of each (task, completion) is the one a real GRPOTrainer computes itself
(``_calculate_rewards`` and ``reward_weights``), not a model of it."""

from __future__ import annotations

import pytest

from crossgym.api import verify
from crossgym.compat_tests.results import as_float32
from crossgym.protocol import Completion, Message, Task, VerifierSpec

pytest.importorskip("trl")


def test_the_rewards_are_the_trainers_own_float32_rewards(tiny_model_dir, monkeypatch):
    monkeypatch.setenv("CROSSGYM_COMPAT_MODEL", str(tiny_model_dir))
    from crossgym.adapters.trl import parity

    spec = VerifierSpec("length", {"max": 6, "unit": "chars", "mode": "linear", "slack": 1.0})
    tasks = [Task(id=f"t{i}", prompt=[Message("user", "hi")], answer=None, verifier=spec) for i in range(4)]
    completions = [Completion.from_text("x" * n) for n in (3, 7, 8, 9)]
    want = [verify(t, c).reward for t, c in zip(tasks, completions, strict=True)]
    assert any(as_float32(w) != w for w in want)  # some reward is not exact in float32 (e.g. 0.6)
    got = parity.native_rewards(tasks, completions)
    # TRL stores each reward function's output in a float32 tensor: that is the reward it trains on
    assert got == [as_float32(w) for w in want]
    assert parity.REWARD_DTYPE == "float32"


def test_a_row_every_reward_function_leaves_out_is_none(tiny_model_dir, test_plugin, monkeypatch):
    """on_error "none": a verifier error is None, TRL makes it NaN in every column, and the trainer has no reward
    for that row (it is unscorable), while the other row keeps its reward."""
    monkeypatch.setenv("CROSSGYM_COMPAT_MODEL", str(tiny_model_dir))
    from crossgym.adapters.trl import parity

    make = parity.run_config
    monkeypatch.setattr(parity, "run_config", lambda *a, **k: make(*a, **k).with_overrides(on_error="none"))
    spec = VerifierSpec("test_contains")
    ok = Task(id="ok", prompt=[Message("user", "1+1?")], answer="2", verifier=spec)
    err = Task(id="err", prompt=[Message("user", "1+1?")], answer="2", verifier=spec, metadata={"verdict": "exception"})
    got = parity.native_rewards([ok, err], [Completion.from_text("2"), Completion.from_text("2")])
    assert got == [1.0, None]
