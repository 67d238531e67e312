"""The blend corpus: reward parity and token consistency over a multi-environment blend (issue 21).

A blend run (``tasks:`` a list of named parts) trains single-turn and multi-turn parts in one GRPO step, each part
with its own environment settings and extra verifiers. The checks here prove that each backend's own code scores
such a batch exactly as the scoring core does on its own, part by part:

* **parity** (``parity_blend:<mode>``): a six-part blend (``BLEND_PARTS``: arithmetic, json extraction with a
  part-only ``json_valid`` term, tool_use with a part-only ``length`` term, sql, shell, code), one task per part,
  each stamped by ``crossgym.rollout.blend`` (id ``<part>/<id>``, the part and its environment in metadata). Each
  multi-turn part's correct and wrong scripted episodes (``crossgym.environments.cases``) are played in the
  environment the part configures; the single-turn parts get a right, a wrong and a malformed answer. The
  reference is ``RewardRule.from_run(run).score(task, completion).reward``. The driver is given the blend: a
  ``run=`` keyword (TRL, Unsloth: the trainer is built for the blend RunConfig, so its reward functions are the
  blend's) or a ``rule=`` keyword (veRL, OpenRLHF: the generated reward module binds the blend's rule). A driver
  that declares MODES is called once per mode: ``single_turn`` with the single-turn samples, ``multi_turn`` with
  every sample in one batch (the mixed step); otherwise once with everything, routed by the driver. Exact float
  equality; for a float32 driver (TRL) the reference is the same sum done in float32 (each term rounded, then
  weighted and added in order, as the trainer's reward_weights and nansum do).
* **tokens** (``tokens_blend``): a five-part batch in one ``episode_tokens`` call: the token-consistency check's
  scripted environment under three parts with different ``max_turns`` (2, 3 and 4) and two single-turn parts
  (arithmetic, json extraction): every multi-turn episode decodes to what the environment saw and trains on exactly
  the model's turns, none runs past its part's max_turns, and each single-turn part's episode is its prompt and one
  trained-on reply.

Results land under ``backends.<name>.blend`` of the matrix; a failure fails the run like any other check.
"""

from __future__ import annotations

import inspect
import logging
import struct
from collections.abc import Sequence
from typing import Any

from crossgym.compat_tests.corpus import Sample
from crossgym.compat_tests.results import CheckResult, explain_difference, same_reward
from crossgym.protocol.messages import Message
from crossgym.protocol.task import Completion, Task

log = logging.getLogger(__name__)

#: the parity blend: one task per part; the sources' params are the built-in environment cases' (their scripts)
BLEND_PARTS: list[dict[str, Any]] = [
    {"name": "math", "source": "arithmetic", "params": {"n": 1, "seed": 11, "difficulty": 2}, "count": 1},
    {"name": "json", "source": "json_extraction", "params": {"n": 1, "seed": 0, "difficulty": 1}, "count": 1,
     "verifiers": [{"name": "json_valid", "weight": 0.25}]},
    {"name": "tools", "source": "tool_choice", "params": {"n": 1, "seed": 5, "difficulty": 3, "mode": "env",
                                                          "max_turns": 6},
     "count": 1, "environment": {"name": "tool_use", "max_turns": 6},
     "verifiers": [{"name": "length", "params": {"max": 14, "unit": "chars", "mode": "linear"}, "weight": 0.5}]},
    {"name": "sql", "source": "sql", "params": {"n": 1, "seed": 3, "difficulty": 3, "env": "sql"}, "count": 1,
     "environment": {"name": "sql", "max_turns": 6}},
    {"name": "shell", "source": "shell_tasks", "params": {"n": 1, "seed": 2, "difficulty": 2, "env": "shell"},
     "count": 1, "environment": {"name": "shell"}},
    {"name": "code", "source": "python_functions", "params": {"n": 1, "seed": 4, "difficulty": 1, "env": "code"},
     "count": 1, "environment": {"name": "code", "max_turns": 3}},
]
#: each multi-turn part's scripted case (crossgym.environments.cases)
PART_CASES = {"tools": "tool_use", "sql": "sql", "shell": "shell", "code": "code"}
#: the token check's parts: the scripted environment under two turn limits, and a single-turn part
TOKEN_TURNS = {"short": 2, "mid": 3, "long": 4}


def blend_run(parts: Sequence[dict[str, Any]] | None = None, **extra: Any) -> Any:
    """A RunConfig over ``parts`` (default BLEND_PARTS), in the listed order, on_error 0.0."""
    from crossgym.config import RunConfig

    data: dict[str, Any] = {"model": "compat-blend", "tasks": {"parts": list(parts or BLEND_PARTS),
                                                                "shuffle": False},
                            "on_error": 0.0, **extra}
    return RunConfig.model_validate(data)


def blend_tasks(run: Any) -> list[Task]:
    from crossgym.rollout.tasks import run_tasks

    return run_tasks(run)


def _say(text: str) -> Message:
    return Message(role="assistant", content=text)


def _single_turn_actions(task: Task) -> list[tuple[str, Message]]:
    import json

    if task.verifier.name == "json_match":
        right = json.dumps(task.answer)
        wrong = json.dumps({**task.answer, next(iter(task.answer)): "someone else"}) if isinstance(task.answer, dict) \
            else json.dumps({"answer": None})
        return [("correct", _say(right)), ("wrong", _say(wrong)), ("malformed", _say("{not json"))]
    return [("correct", _say(f"Working it out... <answer>{task.answer}</answer>")),
            ("wrong", _say(f"<answer>{task.answer}1</answer>")), ("malformed", _say("I cannot tell."))]


def _play(task: Task, actions: Sequence[Message], seed: int) -> Completion:
    """The scripted actions played in the environment the task's part configures (name, params, max_turns)."""
    from crossgym.api import environment_factory
    from crossgym.environments.conformance import run_episode
    from crossgym.rollout.driver import episode_env_params
    from crossgym.rollout.tasks import episode_settings

    name, params, turns = episode_settings(task)
    env = environment_factory(name, **episode_env_params(params, turns))()
    return run_episode(env, task, actions, seed=seed, score=False).completion


def blend_samples(run: Any | None = None) -> list[Sample]:
    """The parity samples: per part, scripted episodes (multi-turn parts) or three answers (single-turn parts)."""
    from crossgym.environments.cases import CASES
    from crossgym.scoring.parts import part_of

    run = run or blend_run()
    out: list[Sample] = []
    for task in blend_tasks(run):
        part = part_of(task) or ""
        case_name = PART_CASES.get(part)
        if case_name is None:
            for label, msg in _single_turn_actions(task):
                out.append(Sample(source="blend", id=f"{part}:{label}", task=task,
                                  completion=Completion(messages=(msg,)), note=f"{label} answer of part {part}"))
            continue
        case = CASES[case_name]()
        if case.task.prompt != task.prompt or case.task.answer != task.answer:
            raise RuntimeError(f"part {part}: its source no longer yields the {case_name} case's task")
        for label, actions in (("correct", case.correct), ("wrong", case.wrong)):
            out.append(Sample(source="blend", id=f"{part}:{label}", task=task,
                              completion=_play(task, actions, case.seed),
                              note=f"scripted {label} episode of part {part} ({case_name})"))
    return out


def _f32(x: float) -> float:
    return float(struct.unpack("f", struct.pack("f", x))[0])


def expected(rule: Any, task: Task, completion: Completion, dtype: str = "float64") -> float | None:
    """The scoring core's reward; for ``float32`` the same weighted sum done in float32, term by term in order."""
    scored = rule.score(task, completion)
    if dtype != "float32" or scored.reward is None:
        return None if scored.reward is None else float(scored.reward)
    terms = [(rule.task_weight, scored.task_reward)]
    terms += [(t.weight, scored.extras.get(t.name)) for t in rule.extras if t.applies(scored.part)]
    total = 0.0
    for w, r in terms:
        if r is not None:
            total = _f32(total + _f32(_f32(w) * _f32(r)))
    return total


def _keyword(driver: Any) -> str | None:
    try:
        params = inspect.signature(driver.native_rewards).parameters
    except (TypeError, ValueError):
        return None
    return "run" if "run" in params else "rule" if "rule" in params else None


def _rewards(driver: Any, samples: Sequence[Sample], mode: str, run: Any, rule: Any, key: str) -> list[Any]:
    kw: dict[str, Any] = {key: run if key == "run" else rule}
    if driver.takes_mode:
        kw["mode"] = mode
    got = list(driver.native_rewards([s.task for s in samples], [s.completion for s in samples], **kw))
    if len(got) != len(samples):
        raise ValueError(f"native_rewards returned {len(got)} rewards for {len(samples)} completions")
    return got


def check_blend_parity(driver: Any, backend: str = "") -> dict[str, CheckResult]:
    """Parity over the blend, one CheckResult per mode (``parity_blend:<mode>``), with per-part counts."""
    from crossgym.compat_tests.parity import is_multi_turn
    from crossgym.scoring import RewardRule

    key = _keyword(driver) if driver is not None else None
    if key is None:
        res = CheckResult("parity_blend", "skip",
                          "the parity driver's native_rewards takes neither run= nor rule=, so it cannot be given "
                          "a blend's reward rule")
        return {"parity_blend": res}
    run = blend_run()
    rule = RewardRule.from_run(run)
    samples = blend_samples(run)
    if driver.declared_modes:
        batches = {m: [s for s in samples if m == "multi_turn" or not is_multi_turn(s)] for m in driver.modes}
    else:
        batches = {"mixed": samples}
    out: dict[str, CheckResult] = {}
    for mode, batch in batches.items():
        res = out[f"parity_blend:{mode}"] = CheckResult(f"parity_blend:{mode}")
        parts: dict[str, dict[str, int]] = {}
        try:
            got = _rewards(driver, batch, "multi_turn" if mode == "mixed" else mode, run, rule, key)
        except Exception as exc:
            log.debug("blend parity on %s (%s) raised", backend, mode, exc_info=True)
            res.status, res.detail = "error", f"native_rewards raised {type(exc).__name__}: {exc}"
            continue
        for s, g in zip(batch, got, strict=True):
            part = s.id.split(":", 1)[0]
            counts = parts.setdefault(part, {"compared": 0, "mismatches": 0})
            want = expected(rule, s.task, s.completion, driver.reward_dtype)
            res.checked += 1
            counts["compared"] += 1
            if not same_reward(want, g):
                counts["mismatches"] += 1
                res.fail(f"part {part}: {explain_difference(want, g)}",
                         {**s.describe(), "part": part, "expected": want, "got": g if g is None else float(g)})
        res.extra = {"parts": parts, "samples": len(batch),
                     "multi_turn_samples": sum(is_multi_turn(s) for s in batch)}
        if res.status == "fail":
            bad = sum(c["mismatches"] for c in parts.values())
            res.detail = f"{bad} of {res.checked} rewards differ; first: {res.detail}"
    return out


#: the token check's single-turn parts: (source, params) of their one task each
TOKEN_SINGLE = {"math": ("arithmetic", {"n": 1, "seed": 3, "difficulty": 1}),
                "json": ("json_extraction", {"n": 1, "seed": 2, "difficulty": 1})}


def token_blend_run() -> Any:
    """The token check's blend: the scripted environment under three parts' turn limits, and two single-turn parts."""
    from crossgym.compat_tests.fakes import ENV_NAME

    single = [{"name": name, "source": src, "params": params, "count": 1, "environment": {"name": "single_turn"}}
              for name, (src, params) in TOKEN_SINGLE.items()]
    scripted = [{"name": name, "files": ["(scripted)"], "count": 1,
                 "environment": {"name": ENV_NAME, "max_turns": turns}} for name, turns in TOKEN_TURNS.items()]
    return blend_run([*single, *scripted])


def token_blend_tasks() -> list[Task]:
    """The stamped tasks of ``token_blend_run``: each single-turn part's task, and for each scripted part the token
    check's scripted task with a prompt of its own (the check tells the parts apart by it)."""
    from dataclasses import replace

    from crossgym.api import load_tasks
    from crossgym.compat_tests.tokens import scripted_tasks
    from crossgym.protocol.messages import user
    from crossgym.rollout.blend import stamp

    run = token_blend_run()
    parts = {p.name: p for p in run.tasks.parts}
    tasks = [stamp(load_tasks(src, **params)[0], parts[name]) for name, (src, params) in TOKEN_SINGLE.items()]
    scripted = scripted_tasks(len(TOKEN_TURNS))
    for t, name in zip(scripted, TOKEN_TURNS, strict=True):
        own = replace(t, id=f"tok-{name}", prompt=(user(f"{t.prompt[-1].content} ({name})"),))
        tasks.append(stamp(own, parts[name]))
    return tasks


def check_blend_tokens(driver: Any, max_turns: int = 3) -> CheckResult:
    """Token consistency over a mixed blend batch (see the module doc)."""
    from crossgym.compat_tests.fakes import ENV_NAME, registered
    from crossgym.compat_tests.tokens import _NONCE, _render, _spans, check_episode
    from crossgym.scoring.parts import part_of

    res = CheckResult("tokens_blend")
    if driver is None or getattr(driver, "episode_tokens", None) is None:
        res.status, res.detail = "skip", "the parity driver has no episode_tokens()"
        return res
    tasks = token_blend_tasks()
    with registered() as seen:
        got = driver.episode_tokens(tasks, env=ENV_NAME, max_turns=max_turns)
        records = dict(seen)
    tokenizer, eps = got["tokenizer"], got["episodes"]
    singles = {_render(tokenizer, list(t.prompt), t.tools, gen=True): part_of(t) or "" for t in tasks
               if part_of(t) in TOKEN_SINGLE}
    by_prompt = {t.prompt[-1].content: part_of(t) for t in tasks if part_of(t) in TOKEN_TURNS}
    turns: dict[str, list[int]] = {}
    single_parts: list[str] = []
    for ep in eps:
        res.checked += 1
        prompt = tokenizer.decode(list(ep["prompt_ids"]), skip_special_tokens=False)
        m = _NONCE.search(prompt)
        if m is None:  # a single-turn part: its prompt, then one trained-on reply
            if prompt not in singles:
                res.fail("a single-turn part's prompt ids are not its prompt", {"prompt": prompt[-200:]})
                continue
            single_parts.append(singles[prompt])
            mask = ep.get("mask")
            if mask is not None and len(_spans(ep["completion_ids"], mask)) > 1:
                res.fail(f"single-turn part {singles[prompt]}: its episode trains on more than one span")
            continue
        rec = records.get(int(m.group(1)))
        if rec is None:
            res.fail("an episode's prompt ids do not contain the observation the environment gave",
                     {"prompt": prompt[-200:]})
            continue
        text = rec.observation[-1].content.split("] ", 1)[-1]
        part = by_prompt.get(text) or ""
        turns.setdefault(part, []).append(len(rec.actions))
        if len(rec.actions) > TOKEN_TURNS.get(part, max_turns):
            res.fail(f"part {part}: an episode ran {len(rec.actions)} turns past its part's max_turns "
                     f"{TOKEN_TURNS.get(part)}")
        problem = check_episode(tokenizer, ep, rec)
        if problem:
            res.fail(f"part {part}: {problem}", {"episode": int(m.group(1)), "turns": len(rec.actions)})
    res.extra = {"episodes": len(eps), "single_turn_episodes": len(single_parts), "turns_by_part": turns,
                 "parts": len(TOKEN_SINGLE) + len(TOKEN_TURNS)}
    if res.status == "pass" and set(single_parts) != set(TOKEN_SINGLE):
        res.fail(f"single-turn episodes came back for {sorted(set(single_parts))}, not for every single-turn part")
    if res.status == "pass" and set(turns) != set(TOKEN_TURNS):
        res.fail(f"multi-turn episodes came back for {sorted(turns)}, not for every scripted part")
    if res.status == "pass" and not any(t > 1 for ts in turns.values() for t in ts):
        res.status, res.detail = "skip", "no episode reached a second turn, so nothing multi-turn was compared"
    return res
