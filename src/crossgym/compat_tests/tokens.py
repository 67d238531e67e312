"""Token consistency for multi-turn: the token ids a backend trains on decode back to the messages the environment
saw (the re-tokenization class of bug: a template that strips or rewrites content, env tokens trained on, model
tokens masked out, a turn spliced in at the wrong place).

A backend's driver provides ``episode_tokens(tasks, *, env, max_turns) -> {"tokenizer": tok, "episodes": [...]}``
where each episode is ``{"prompt_ids", "completion_ids", "mask"}`` (mask: 1 = trained on, 0 = environment tokens;
None when the backend trains on everything). The check runs it on the scripted environment (``fakes``), which
records every observation, action and reply, and compares:

1. ``decode(prompt_ids + completion_ids)`` is the chat template's rendering of what the environment saw (observation,
   then each action and its reply; a last reply the backend dropped for lack of budget may be missing), up to the
   closing end-of-turn token, as far as the tokenizer can represent that text;
2. the masked-in spans decode to the actions, one span per action, in order (an end-of-turn token may close each);
3. (reported, not failed) whether ``encode(decode(ids)) == ids``: a backend that re-tokenizes text would train on
   other ids than it sampled when this is false.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

from crossgym.compat_tests.fakes import ENV_NAME, Record, registered
from crossgym.compat_tests.results import CheckResult
from crossgym.protocol.messages import Message, user
from crossgym.protocol.task import Task, VerifierSpec
from crossgym.rollout.driver import render_text

log = logging.getLogger(__name__)

_NONCE = re.compile(r"\[episode (\d+)\]")
PROMPTS = ("Say something short.", "Count to three.", "Name a colour.")


def scripted_tasks(n: int = 3) -> list[Task]:
    return [Task(id=f"tok{i}", prompt=(user(PROMPTS[i % len(PROMPTS)]),), answer="x", env=ENV_NAME,
                 verifier=VerifierSpec("exact_match")) for i in range(n)]


def _render(tokenizer: Any, messages: Sequence[Message], tools: Sequence[Any], gen: bool = False) -> str:
    """The conversation as the chat template renders it, then as this tokenizer can represent it (a character it
    has no token for is the model's limit, not the backend's: decode(encode(text)) is the best any backend does)."""
    text = render_text(tokenizer, messages, tools, add_generation_prompt=gen)  # the episode driver's rendering
    return str(tokenizer.decode(tokenizer(text, add_special_tokens=False)["input_ids"], skip_special_tokens=False))


def _first_diff(a: str, b: str) -> dict[str, Any]:
    i = next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return {"at": i, "trained_on": a[max(0, i - 30): i + 30], "environment_saw": b[max(0, i - 30): i + 30]}


def _spans(ids: Sequence[int], mask: Sequence[int]) -> list[list[int]]:
    spans: list[list[int]] = []
    prev = 0
    for t, m in zip(ids, mask, strict=True):
        if m and not prev:
            spans.append([])
        if m:
            spans[-1].append(t)
        prev = m
    return spans


def check_episode(tokenizer: Any, ep: dict[str, Any], rec: Record) -> str | None:
    """None when the episode's ids match what the environment saw, else what differs."""
    eos = tokenizer.eos_token or ""
    ids = list(ep["prompt_ids"]) + list(ep["completion_ids"])
    trained = tokenizer.decode(ids, skip_special_tokens=False)
    convs = []
    msgs: list[Message] = list(rec.observation)
    for action, reply in zip(rec.actions, rec.replies, strict=True):
        msgs = msgs + [action]
        convs.append(list(msgs))  # the reply to the last action may have been dropped
        msgs = msgs + list(reply)
    convs.append(msgs)
    ok = False
    for conv in reversed(convs):
        seen = _render(tokenizer, conv, rec.tools)
        if seen.startswith(trained) and not seen[len(trained):].replace(eos, "").strip():
            ok = True  # up to the closing end-of-turn of the last message
            break
        if conv[-1].role != "assistant" and trained == _render(tokenizer, conv, rec.tools, gen=True):
            ok = True  # the last reply, then a generation prompt that was never used
            break
    if not ok:
        full = _render(tokenizer, convs[-1], rec.tools)
        return f"decoded ids differ from the conversation the environment saw: {_first_diff(trained, full)}"
    mask = ep.get("mask")
    if mask is not None:
        if len(mask) != len(ep["completion_ids"]):
            return f"mask has {len(mask)} entries for {len(ep['completion_ids'])} completion ids"
        spans = [tokenizer.decode(s, skip_special_tokens=False) for s in _spans(ep["completion_ids"], mask)]
        spans = [s[: -len(eos)] if eos and s.endswith(eos) else s for s in spans]
        actions = [a.content for a in rec.actions][: len(spans)]
        if len(spans) != len(rec.actions) or spans != actions:
            return (f"trained-on spans {[s[:40] for s in spans]} are not the actions "
                    f"{[a.content[:40] for a in rec.actions]}")
    return None


def check_token_consistency(driver: Any, *, episodes: int = 3, max_turns: int = 3) -> CheckResult:
    """Run the driver's episodes on the scripted environment and compare ids with what it saw."""
    res = CheckResult("token_consistency")
    if driver is None or getattr(driver, "episode_tokens", None) is None:
        res.status, res.detail = "skip", "the parity driver has no episode_tokens()"
        return res
    with registered() as seen:
        out = driver.episode_tokens(scripted_tasks(episodes), env=ENV_NAME, max_turns=max_turns)
        records = dict(seen)
    tokenizer, eps = out["tokenizer"], out["episodes"]
    turns = []
    canonical = 0
    for ep in eps:
        prompt = tokenizer.decode(list(ep["prompt_ids"]), skip_special_tokens=False)
        m = _NONCE.search(prompt)
        res.checked += 1
        if m is None or int(m.group(1)) not in records:
            res.fail("an episode's prompt ids do not contain the observation the environment gave",
                     {"prompt": prompt[-200:]})
            continue
        rec = records[int(m.group(1))]
        turns.append(len(rec.actions))
        problem = check_episode(tokenizer, ep, rec)
        if problem:
            res.fail(problem, {"episode": int(m.group(1)), "turns": len(rec.actions)})
        ids = list(ep["prompt_ids"]) + list(ep["completion_ids"])
        canonical += list(tokenizer(tokenizer.decode(ids, skip_special_tokens=False),
                                    add_special_tokens=False)["input_ids"]) == ids
    res.extra = {"episodes": len(eps), "turns": turns, "multi_turn_episodes": sum(t > 1 for t in turns),
                 "retokenize_equal": canonical}
    if res.status == "pass" and not any(t > 1 for t in turns):
        res.status, res.detail = "skip", "no episode reached a second turn, so nothing multi-turn was compared"
    return res
