"""Token consistency: the checker accepts ids that render exactly what the environment saw and catches the
re-tokenization bugs (a reply rewritten by the template, env tokens trained on, an extra token in a turn); and the
TRL backend's rollout function, driven by a real GRPOTrainer on the tiny model, is checked end to end."""

from __future__ import annotations

import json
from typing import Any

import pytest

from crossgym.compat_tests.fakes import Record
from crossgym.compat_tests.tokens import check_episode
from crossgym.protocol.messages import Message, user


@pytest.fixture(scope="module")
def tok() -> Any:
    pytest.importorskip("transformers")
    from crossgym.inference.tiny import build_tiny_tokenizer

    return build_tiny_tokenizer()


def _render(tok: Any, msgs: list[Message], gen: bool) -> str:
    return tok.apply_chat_template([m.to_openai() for m in msgs], add_generation_prompt=gen, tokenize=False)


def _enc(tok: Any, text: str) -> list[int]:
    return list(tok(text, add_special_tokens=False)["input_ids"])


def _episode(tok: Any, rec: Record, *, reply_edit: Any = None) -> dict[str, Any]:
    """Ids built the way a correct backend builds them: prompt, then per turn the action + eos (mask 1) and the
    template's text between this end-of-turn and the next generation prompt (mask 0)."""
    conv = list(rec.observation)
    prompt_ids = _enc(tok, _render(tok, conv, True))
    ids: list[int] = []
    mask: list[int] = []
    for action, reply in zip(rec.actions, rec.replies, strict=True):
        a = _enc(tok, action.content) + [tok.eos_token_id]
        ids += a
        mask += [1] * len(a)
        before = _render(tok, [*conv, action], False)
        cut = before.rfind(tok.eos_token) + len(tok.eos_token)
        conv = [*conv, action, *reply]
        suffix = _render(tok, conv, True)[cut:]
        if reply_edit is not None:
            suffix = reply_edit(suffix)
        s = _enc(tok, suffix)
        ids += s
        mask += [0] * len(s)
    return {"prompt_ids": prompt_ids, "completion_ids": ids, "mask": mask}


@pytest.fixture
def rec() -> Record:
    return Record(observation=(user("[episode 1] Say hi."),), tools=(),
                  actions=[Message(role="assistant", content="Hi there!"), Message(role="assistant", content="ok")],
                  replies=[(user("  Not yet.\n\n"),), (user("Über «fine»\t"),)])


def test_consistent_ids_pass(tok: Any, rec: Record) -> None:
    assert check_episode(tok, _episode(tok, rec), rec) is None


def test_a_dropped_last_reply_is_allowed(tok: Any, rec: Record) -> None:
    ep = _episode(tok, rec)
    last = _episode(tok, Record(rec.observation, (), rec.actions[:1], rec.replies[:1]))
    n = len(last["completion_ids"]) + len(_enc(tok, "ok")) + 1
    ep = {"prompt_ids": ep["prompt_ids"], "completion_ids": ep["completion_ids"][:n], "mask": ep["mask"][:n]}
    assert check_episode(tok, ep, rec) is None


def test_a_reply_rewritten_by_the_template_is_caught(tok: Any, rec: Record) -> None:
    ep = _episode(tok, rec, reply_edit=lambda s: s.replace("  Not yet.\n\n", "Not yet."))
    problem = check_episode(tok, ep, rec)
    assert problem and "differ from the conversation" in problem


def test_environment_tokens_trained_on_are_caught(tok: Any, rec: Record) -> None:
    ep = _episode(tok, rec)
    ep["mask"] = [1] * len(ep["mask"])
    problem = check_episode(tok, ep, rec)
    assert problem and "are not the actions" in problem


def test_an_extra_token_in_a_turn_is_caught(tok: Any, rec: Record) -> None:
    ep = _episode(tok, rec)
    ep["completion_ids"] = [tok.pad_token_id] + ep["completion_ids"]
    ep["mask"] = [1] + ep["mask"]
    assert check_episode(tok, ep, rec) is not None


def test_trl_rollout_trains_on_what_the_environment_saw(tiny_model_dir, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("trl")
    from crossgym.compat_tests.drivers import inspect_backend
    from crossgym.compat_tests.tokens import check_token_consistency

    monkeypatch.setenv("CROSSGYM_COMPAT_MODEL", str(tiny_model_dir))
    res = check_token_consistency(inspect_backend("trl").driver, episodes=2, max_turns=3)
    assert res.extra["multi_turn_episodes"] > 0, res.extra  # the check compared real multi-turn episodes
    if res.status == "fail" and "<|endoftext|>" in json.dumps([res.detail, res.failure]):
        pytest.xfail("known: the TRL rollout keeps a sampled pad token in the trained ids but drops it from the "
                     "action text the environment sees (crossgym/adapters/trl/episodes.py _advance)")
    assert res.status == "pass", (res.detail, res.failure)


def test_openrlhf_trained_ids_follow_the_action_ranges(tok: Any, rec: Record) -> None:
    """OpenRLHF trains on observation_tokens with the action ranges masked in; the driver's split of an executor
    result gives back the ids and mask a correct backend builds, and a range off by one token is caught."""
    from crossgym.adapters.openrlhf.parity import trained_ids

    ep = _episode(tok, rec)
    start = len(ep["prompt_ids"])
    seq = ep["prompt_ids"] + ep["completion_ids"]
    ranges, at = [], None
    for i, m in enumerate([0] * start + ep["mask"] + [0]):
        if m and at is None:
            at = i
        if not m and at is not None:
            ranges.append((at, i))
            at = None
    got = trained_ids({"observation_tokens": seq, "action_ranges": ranges})
    assert got == ep and check_episode(tok, got, rec) is None
    shifted = trained_ids({"observation_tokens": seq, "action_ranges": [(s + 1, e + 1) for s, e in ranges]})
    assert check_episode(tok, shifted, rec) is not None
