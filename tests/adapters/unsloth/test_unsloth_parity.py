"""adapters/unsloth/parity.py through the shipped compat suite: rewards through the Unsloth trainer's reward call
equal the reference Verdicts (the TRL backend is held to the same references, so the two agree), single- and
multi-turn; plans parse natively; multi-turn token ids are the chat template's."""

from __future__ import annotations

import json

import pytest

from crossgym.protocol import Completion, Message, Task, VerifierSpec

pytestmark = pytest.mark.usefixtures("needs_unsloth")

VERIFIERS = ["exact_match", "json_answer", "numeric", "length", "tool_call", "math"]


def test_compat_matrix_parity_and_plans_pass_for_unsloth():
    from crossgym.compat_tests.runner import build_matrix

    doc = build_matrix(["unsloth"], VERIFIERS, checks=("parity", "plans"), garbage_tasks=0)
    info = doc["backends"]["unsloth"]
    assert info["status"] == "installed"
    assert info["driver"] == {"module": "crossgym.adapters.unsloth.parity", "source": "declared",
                              "modes": ["single_turn", "multi_turn"]}
    for name in VERIFIERS:
        cell = doc["matrix"][name]["unsloth"]
        assert cell["status"] == "pass", (name, cell["detail"], cell["first_mismatch"])
        assert all(m["status"] == "pass" and m["compared"] > 0 for m in cell["modes"].values()), name
    # every representative config (each variant: planned, or refused as declared; LoRA, multi-turn, a blend)
    assert {"default", "variant_dapo", "lora", "multi_turn", "extra_verifier", "blend"} <= set(info["plans"])
    assert {k: v["status"] for k, v in info["plans"].items()} == dict.fromkeys(info["plans"], "pass")
    assert doc["summary"]["ok"], doc["summary"]


def test_unsloth_rollout_trains_on_what_the_environment_saw(tiny_model_dir, monkeypatch):
    from crossgym.compat_tests.drivers import inspect_backend
    from crossgym.compat_tests.tokens import check_token_consistency

    monkeypatch.setenv("CROSSGYM_COMPAT_MODEL", str(tiny_model_dir))
    res = check_token_consistency(inspect_backend("unsloth").driver, episodes=3, max_turns=3)
    assert res.extra["multi_turn_episodes"] > 0, res.extra  # real multi-turn episodes on Unsloth's model
    if res.status == "fail" and "<|endoftext|>" in json.dumps([res.detail, res.failure]):
        pytest.xfail("known, shared with the TRL backend: the rollout keeps a sampled pad token in the trained ids "
                     "but drops it from the action text the environment sees (adapters/trl/episodes.py _advance)")
    assert res.status == "pass", (res.detail, res.failure)


def test_native_rewards_are_the_verdicts_weighted_as_trl_does():
    from crossgym.adapters.unsloth.parity import native_rewards
    from crossgym.api import load_verifier

    task = Task(id="t", prompt=[Message("user", "2+2?")], answer="4", verifier=VerifierSpec("exact_match"))
    num = Task(id="n", prompt=[Message("user", "2+2?")], answer=4, verifier=VerifierSpec("numeric"))
    comps = [Completion.from_text("4"), Completion.from_text("five"), Completion.from_text(""),
             Completion.from_text("The answer is 4.")]
    tasks = [task, task, task, num]
    got = native_rewards(tasks, comps)
    want = [load_verifier(t.verifier).verify(t, c).reward for t, c in zip(tasks, comps, strict=True)]
    assert got == want and got[0] == 1.0 and got[1] == 0.0
    episode = Completion(messages=(Message("assistant", "let me add"), Message("tool", "4", tool_call_id="c0",
                                                                              name="add"), Message("assistant", "4")))
    assert native_rewards([task], [episode], mode="multi_turn") == [1.0]
    with pytest.raises(ValueError, match="mode must be one of"):
        native_rewards([task], [episode], mode="three_turn")
