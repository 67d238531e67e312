"""TRL reward functions over the scoring core: dataset rows, one function per term, weights, the on_error rules."""

from __future__ import annotations

import json
import math

import pytest
from trl_test_plugins import digit_tasks

from crossgym.adapters.trl.rewards import completion_from_trl, reward_functions
from crossgym.adapters.trl.rows import COMPLETION_COLUMN, TASK_INDEX_KEY, task_rows
from crossgym.api import verify
from crossgym.config import parse_run_config
from crossgym.protocol import Completion, ConfigError, Message, Task, Verdict, VerifierSpec
from crossgym.rollout.tasks import load_run_tasks, needs_episodes, read_task_file
from crossgym.scoring import RewardRule, reward_from_verdict
from crossgym.scoring.metrics import PASSED, TASK_REWARD


def _task_fn(tasks, name, on_error=0.0):  # type: ignore[no-untyped-def]
    funcs, _ = reward_functions(RewardRule(on_error=on_error), tasks)
    return next(f for f in funcs if f.name == name)


def _run(**over):
    data = {"model": "m", "tasks": {"source": "json_addition"}} | over
    return parse_run_config(data)


@pytest.mark.parametrize(("verdict", "on_error", "expected"), [
    (Verdict.ok(0.75), 0.0, 0.75),
    (Verdict.ok(-2.5), "none", -2.5),
    (Verdict.malformed("not json"), -1.0, 0.0),  # the completion's fault: its own reward, never on_error
    (Verdict.malformed("not json"), "none", 0.0),
    (Verdict.timeout(2.0), 0.0, 0.0),
    (Verdict.timeout(2.0), -1.0, -1.0),
    (Verdict.exception("boom"), 0.25, 0.25),
    (Verdict.exception("boom"), "none", None),
    (Verdict.timeout(2.0), "none", None),
])
def test_reward_from_verdict(verdict, on_error, expected):
    assert reward_from_verdict(verdict, on_error) == expected


def test_on_error_parses_none_spellings():
    for value in (None, "none", "NaN", "null"):
        assert _run(on_error=value).on_error == "none"
    assert _run(on_error=-1).on_error == -1


def test_task_rows_carry_the_task_json():
    tasks = digit_tasks(3)
    rows = task_rows(tasks)
    assert [Task.from_json(r["task"]) for r in rows] == tasks
    assert rows[0]["prompt"] == [{"role": "user", "content": tasks[0].prompt[0].content}]
    episode_rows = task_rows(tasks, episodes=True)
    assert [r["prompt"][0][TASK_INDEX_KEY] for r in episode_rows] == [0, 1, 2]


def test_task_reward_equals_verdicts_and_masks_other_verifiers(test_plugin):
    tasks = digit_tasks(4) + [Task(id="x", prompt=[Message("user", "hi")], answer=None,
                                   verifier=VerifierSpec("test_short", {"limit": 4}))]
    texts = [str(tasks[0].answer), "no digits", "7 maybe", "", "ab"]
    fn = _task_fn(tasks, "test_contains")
    logged = []
    rewards = fn(prompts=None, completions=[[{"role": "assistant", "content": t}] for t in texts],
                 task=[t.to_json() for t in tasks], log_metric=lambda k, v: logged.append((k, v)))
    expected = [verify(t, x).reward for t, x in zip(tasks[:4], texts[:4], strict=True)]
    assert rewards[:4] == expected
    assert rewards[4] is None  # scored by the other task verifier's function
    assert expected[0] == 1.0 and expected[3] == 0.0  # a pass and a malformed (empty) reply
    # the scoring core's metric names, once per sample (TRL averages them per step)
    assert [v for k, v in logged if k == TASK_REWARD][:4] == expected
    assert len([v for k, v in logged if k == PASSED]) == 5


def test_errors_score_on_error_and_none_is_masked(test_plugin):
    base = digit_tasks(1)[0]
    tasks = [Task(id=f"t{k}", prompt=base.prompt, answer=base.answer, verifier=base.verifier,
                  metadata={"verdict": k}) for k in ("timeout", "exception", "raise", "malformed")]
    rows = [t.to_json() for t in tasks]
    comps = ["5"] * 4
    name = base.verifier.name
    assert _task_fn(tasks, name, -1.0)(completions=comps, task=rows) == [-1.0, -1.0, -1.0, 0.0]
    assert _task_fn(tasks, name, "none")(completions=comps, task=rows) == [None, None, None, 0.0]


def test_extra_verifier_scores_every_row(test_plugin):
    tasks = digit_tasks(3)
    rule = RewardRule.from_run(_run(verifiers=[{"name": "test_short", "params": {"limit": 8}}]))
    funcs, _ = reward_functions(rule, tasks)
    fn = next(f for f in funcs if f.name == "extra/test_short")
    out = fn(completions=["", "abcd", "a" * 20], task=[t.to_json() for t in tasks])
    assert out == [1.0, 0.5, 0.0]


def test_multi_turn_rows_use_the_whole_episode(test_plugin):
    task = digit_tasks(1)[0]
    episode = Completion(messages=[Message("assistant", "<tool_call>x</tool_call>"),
                                   Message("tool", "err", name="add"),
                                   Message("assistant", f"it is {task.answer}")])
    fn = _task_fn([task], "test_contains")
    out = fn(completions=[[{"role": "assistant", "content": "garbage"}]], task=[task.to_json()],
             **{COMPLETION_COLUMN: [json.dumps(episode.to_dict())]})
    assert out == [1.0]


def test_build_reward_functions_names_and_weights(test_plugin):
    tasks = digit_tasks(2) + [Task(id="s", prompt=[Message("user", "hi")], answer=None,
                                   verifier=VerifierSpec("test_short"))]
    run = _run(task_weight=2.0, verifiers=[{"name": "test_short", "weight": 0.5},
                                           {"name": "test_contains", "weight": 0.1}])
    funcs, weights = reward_functions(RewardRule.from_run(run), tasks)
    assert [f.__name__ for f in funcs] == ["test_contains", "test_short", "extra/test_short", "extra/test_contains"]
    assert weights == [2.0, 2.0, 0.5, 0.1]
    assert funcs[0].only == "test_contains" and funcs[2].spec == VerifierSpec("test_short")


def test_trl_weighted_sum_of_the_functions_is_the_scoring_cores_reward(test_plugin):
    """TRL sums reward_funcs x reward_weights (NaN left out): that sum is Scored.reward, by construction."""
    tasks = digit_tasks(3) + [Task(id="s", prompt=[Message("user", "hi")], answer=None,
                                   verifier=VerifierSpec("test_short"))]
    run = _run(task_weight=2.0, verifiers=[{"name": "test_short", "weight": 0.5}])
    rule = RewardRule.from_run(run)
    funcs, weights = reward_functions(rule, tasks)
    comps = [[{"role": "assistant", "content": t}] for t in ("3", "x", "", "short")]
    rows = [t.to_json() for t in tasks]
    columns = [f(completions=comps, task=rows) for f in funcs]
    for i, task in enumerate(tasks):
        total = sum(w * col[i] for col, w in zip(columns, weights, strict=True) if col[i] is not None)
        assert total == rule.score(task, Completion.from_text(comps[i][0]["content"])).reward


def test_completion_from_trl_shapes():
    assert completion_from_trl("plain").text == "plain"
    assert completion_from_trl([{"role": "assistant", "content": "x"}]).text == "x"
    blocks = [{"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]
    assert completion_from_trl(blocks).text == "ab"
    call = [{"role": "assistant", "content": "", "tool_calls": [
        {"type": "function", "function": {"name": "add", "arguments": json.dumps({"a": 1})}}]}]
    assert completion_from_trl(call).messages[0].tool_calls[0].arguments == {"a": 1}


def test_needs_episodes():
    run = _run()
    assert not needs_episodes(digit_tasks(2), run)
    assert needs_episodes(digit_tasks(2, tools=True), run)
    assert needs_episodes(digit_tasks(2, env="tool_use"), run)
    assert needs_episodes(digit_tasks(2), _run(environment={"name": "tool_use"}))
    assert needs_episodes(digit_tasks(2), _run(environment={"max_turns": 3}))


def test_load_run_tasks_from_source_and_files(tmp_path):
    f = tmp_path / "t.jsonl"
    f.write_text("".join(t.to_json() + "\n" for t in digit_tasks(2)), encoding="utf-8")
    run = _run(tasks={"source": "json_addition", "params": {"n": 3}, "files": [str(f)]})
    tasks = load_run_tasks(run.tasks)
    assert len(tasks) == 5 and tasks[0].verifier.name == "json_answer" and tasks[-1].id == "digit-1"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1}\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"bad.jsonl:1"):
        read_task_file(bad)


def test_nan_reward_never_leaks_from_a_verdict(test_plugin):
    # a Verdict rebuilt with reward None (NaN) is an error only if it says so; rewards stay finite otherwise
    v = Verdict.from_dict({"reward": 0.5, "passed": False})
    assert not math.isnan(reward_from_verdict(v, "none"))


def test_completion_from_trl_keeps_what_a_message_dict_carries():
    """TRL's message dicts keep a tool result's tool_call_id and a message's name; completion_from_trl dropped
    them, so openenv_reward (which finds the environment's step results by the message name) found none through
    TRL and scored 0 (malformed) what it scored 1.1 in process. Every example and corpus completion of each
    verifier, as message dicts, comes back the same Completion."""
    from crossgym.compat_tests.corpus import default_corpus_dir, verifier_corpus
    from crossgym.compat_tests.verifier_checks import get_examples

    for name in ("openenv_reward", "tool_call", "exact_match"):
        comps = [e.completion for e in get_examples(name)]
        comps += [s.completion for s in verifier_corpus(name, default_corpus_dir())[:30]
                  if isinstance(s.completion, Completion)]
        for c in comps:
            assert completion_from_trl([m.to_dict() for m in c.messages]) == c
    ex = get_examples("openenv_reward")[0]
    trl = completion_from_trl([m.to_dict() for m in ex.completion.messages])
    assert verify(ex.task, trl) == verify(ex.task, ex.completion) and verify(ex.task, trl).error is None


def test_trl_completions_carry_their_token_ids_as_eval_completions_do():
    """length with unit "tokens" reads Completion.token_ids: eval's engines set them, but TRL's reward call built
    the completion from its text alone (completion_ids were only logged), so the same reply scored malformed (0) in
    training and 1.0 in eval."""
    from crossgym.adapters.trl.rewards import BatchScores
    from crossgym.adapters.trl.rows import TASK_COLUMN
    from crossgym.verifiers.length import Length

    task = Length.task(None, params={"max": 5, "unit": "tokens"})
    ids = [[11, 12, 13, 2], list(range(9))]
    texts = ["short", "a longer reply"]
    rows = task_rows([task, task])
    got = BatchScores(RewardRule()).scores(texts, {TASK_COLUMN: [r[TASK_COLUMN] for r in rows],
                                                   "completion_ids": ids})
    want = [verify(task, Completion(messages=(Message("assistant", t),), token_ids=tuple(i)))
            for t, i in zip(texts, ids, strict=True)]
    assert [s.verdict for s in got] == want and [v.passed for v in want] == [True, False]
