"""The rollout runner with the real hf engine on the tiny model, real environments and registered verifiers."""

from __future__ import annotations

import threading
import time

import pytest

from crossgym.api import load_verifier
from crossgym.protocol import SamplingParams, UnknownNameError
from crossgym.rollout import RolloutConfig, RolloutRunner, RolloutStore, run_rollouts
from crossgym.rollout.config import keyed_hash
from crossgym.rollout.store import read_rollouts

SAMPLING = SamplingParams(temperature=1.0, max_tokens=6, seed=0)


class Recording:
    """Passes calls to the real engine and records them (the runner is under test, not the engine)."""

    def __init__(self, engine, fail_on_call: int | None = None):  # type: ignore[no-untyped-def]
        self.engine = engine
        self.name = engine.name
        self.calls: list[tuple[int, int, float, float]] = []  # (prompts, n, start, end)
        self.fail_on_call = fail_on_call
        self._lock = threading.Lock()

    def generate(self, prompts, n, params, tools=None):  # type: ignore[no-untyped-def]
        if self.fail_on_call is not None and len(self.calls) + 1 == self.fail_on_call:
            raise RuntimeError("engine died")
        start = time.monotonic()
        out = self.engine.generate(prompts, n, params, tools)
        self.calls.append((len(prompts), n, start, time.monotonic()))
        return out


def test_tasks_times_n_single_turn_with_provenance(hf_engine, test_plugin, tmp_path):
    tasks = test_plugin.make_tasks(3)
    engine = Recording(hf_engine)
    config = RolloutConfig(model="tiny", engine="hf", sampling=SAMPLING, n=4)
    rollouts = run_rollouts(engine, tasks, config, store=str(tmp_path / "r.jsonl"), batch_size=12)
    assert [(r.task.id, r.provenance["sample"]) for r in rollouts] == [(t.id, j) for t in tasks for j in range(4)]
    assert engine.calls[0][:2] == (3, 4)  # a task's n identical first turns: one call with n samples
    verifier = load_verifier("test_first_letter")
    for r in rollouts:
        assert r.verdict == verifier.verify(r.task, r.completion)  # the task's verifier, on the whole completion
        assert r.turns == 1 and len(r.completion.token_ids) == len(r.completion.logprobs) >= 1
        p = r.provenance
        assert p["verifier"] == {"name": "test_first_letter", "version": "1", "params": {}}
        assert p["model"] == "tiny" and p["engine"] == "hf" and p["sampling"] == SAMPLING.to_dict()
        assert p["crossgym_version"] and p["key"] == f"{r.task.id}#{p['sample']}@{keyed_hash(config.hash(), r.task)}"
        assert p["environment"] == "single_turn"
        assert set(r.timings) == {"generate_s", "env_s", "verify_s"}
    assert read_rollouts(tmp_path / "r.jsonl") == rollouts
    assert len({r.verdict.reward for r in rollouts}) == 2  # the test verifier varies on random text


def test_an_interrupted_run_resumes_without_redoing_finished_rollouts(hf_engine, test_plugin, tmp_path):
    tasks = test_plugin.make_tasks(6)
    config = RolloutConfig(model="tiny", engine="hf", sampling=SAMPLING, n=2)
    path = tmp_path / "r.jsonl"
    dying = Recording(hf_engine, fail_on_call=3)
    with pytest.raises(RuntimeError, match="engine died"):
        run_rollouts(dying, tasks, config, store=RolloutStore(path), batch_size=4)  # 2 tasks x 2 per batch
    first = read_rollouts(path)
    assert len(first) == 8  # the two finished batches were kept
    with path.open("a") as f:
        f.write('{"task": {"id"')  # and a torn line from the crash
    again = Recording(hf_engine)
    rollouts = run_rollouts(again, tasks, config, store=RolloutStore(path), batch_size=4)
    assert sum(p * n for p, n, _, _ in again.calls) == 4  # only the last batch was generated
    assert len(rollouts) == 12 and rollouts[:8] == first
    keys = [r.provenance["key"] for r in read_rollouts(path)]
    assert len(keys) == len(set(keys)) == 12
    # more samples later reuse the first ones; other sampling settings start afresh
    more = Recording(hf_engine)
    run_rollouts(more, tasks, RolloutConfig(model="tiny", engine="hf", sampling=SAMPLING, n=3),
                 store=RolloutStore(path), batch_size=6)
    assert sum(p * n for p, n, _, _ in more.calls) == 6
    hotter = RolloutConfig(model="tiny", engine="hf", sampling=SamplingParams(temperature=0.5, max_tokens=6), n=1)
    assert hotter.hash() != config.hash()
    fresh = Recording(hf_engine)
    run_rollouts(fresh, tasks, hotter, store=RolloutStore(path))
    assert sum(p * n for p, n, _, _ in fresh.calls) == 6


def test_multi_turn_environment_plays_every_turn(hf_engine, test_plugin):
    tasks = test_plugin.make_tasks(2, env="test_turns")
    config = RolloutConfig(model="tiny", engine="hf", sampling=SAMPLING, n=2)
    rollouts = run_rollouts(hf_engine, tasks, config)
    for r in rollouts:
        assert r.turns == 3 and r.provenance["environment"] == "test_turns"
        roles = [m.role for m in r.completion.messages]
        assert roles == ["assistant", "user"] * 3
        assert r.completion.messages[1].content == "again 1"
        assert r.verdict == load_verifier("test_first_letter").verify(r.task, r.completion)
        assert len(r.completion.token_ids) == len(r.completion.logprobs) > 6 - 1
    capped = run_rollouts(hf_engine, tasks, RolloutConfig(model="tiny", engine="hf", sampling=SAMPLING,
                                                          environment="test_turns", env_params={"max_turns": 2}))
    assert {r.turns for r in capped} == {2}
    assert all(r.provenance.get("env_truncated") for r in capped)


def test_an_unregistered_env_plays_one_turn_and_a_failing_env_is_recorded(hf_engine, test_plugin):
    tasks = test_plugin.make_tasks(1, env="no_such_env") + test_plugin.make_tasks(1, env="test_exploding", source="x")
    rollouts = run_rollouts(hf_engine, tasks, RolloutConfig(model="tiny", engine="hf", sampling=SAMPLING))
    single, exploded = rollouts
    assert single.turns == 1 and single.provenance["environment"] == "single_turn (built in)"
    assert exploded.turns == 2 and exploded.verdict.error_kind == "exception"
    assert "step 2 failed: ConfigError: tool backend went away" in exploded.verdict.error


def test_unknown_names_fail_before_generating(hf_engine, test_plugin):
    engine = Recording(hf_engine)
    with pytest.raises(UnknownNameError, match="no_such_verifier"):
        run_rollouts(engine, test_plugin.make_tasks(1, verifier="no_such_verifier"),
                     RolloutConfig(model="tiny", engine="hf", sampling=SAMPLING))
    with pytest.raises(UnknownNameError, match="did you mean 'test_turns'"):
        run_rollouts(engine, test_plugin.make_tasks(1), RolloutConfig(model="tiny", engine="hf", sampling=SAMPLING,
                                                                      environment="test_turn"))
    assert engine.calls == []


def test_verification_overlaps_generation(hf_engine, test_plugin):
    test_plugin.Slow.intervals.clear()
    engine = Recording(hf_engine)
    tasks = test_plugin.make_tasks(6, verifier="test_slow")
    seen = []
    runner = RolloutRunner(engine, RolloutConfig(model="tiny", engine="hf", sampling=SAMPLING), batch_size=2,
                           verify_workers=2, progress=lambda done, total: seen.append((done, total)))
    assert len(runner.run(tasks)) == 6
    gen_after_first = [(s, e) for _, _, s, e in engine.calls[1:]]
    assert any(vs < ge and gs < ve for vs, ve in test_plugin.Slow.intervals for gs, ge in gen_after_first)
    assert seen[0] == (0, 6) and seen[-1] == (6, 6) and [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_tasks_sharing_a_prompt_still_get_one_engine_call(hf_engine, test_plugin):
    import dataclasses

    a, b, c = test_plugin.make_tasks(3)
    tasks = [a, dataclasses.replace(b, prompt=a.prompt), c]  # two tasks ask the same thing
    engine = Recording(hf_engine)
    rollouts = run_rollouts(engine, tasks, RolloutConfig(model="tiny", engine="hf", sampling=SAMPLING, n=2))
    assert [call[:2] for call in engine.calls] == [(6, 1)]  # groups of 4 and 2: one sample per episode instead
    assert [(r.task.id, r.provenance["sample"]) for r in rollouts] == [(t.id, j) for t in tasks for j in range(2)]


def test_a_checkpoint_retrained_at_the_same_path_is_not_resumed(hf_engine, test_plugin, tmp_path):
    """Eval after training writes to the same directory each run: new weights at the same path are a new model."""
    import os

    model = tmp_path / "ckpt"
    model.mkdir()
    weights = model / "model.safetensors"
    weights.write_bytes(b"first")
    tasks = test_plugin.make_tasks(2)
    config = RolloutConfig(model=str(model), engine="hf", sampling=SAMPLING, n=1)
    path = tmp_path / "r.jsonl"
    first_hash = config.hash()
    run_rollouts(hf_engine, tasks, config, store=RolloutStore(path))
    same = Recording(hf_engine)
    run_rollouts(same, tasks, config, store=RolloutStore(path))
    assert same.calls == []  # unchanged weights: resumed
    weights.write_bytes(b"second, retrained")
    os.utime(weights, ns=(1, 1))
    assert config.hash() != first_hash
    retrained = Recording(hf_engine)
    run_rollouts(retrained, tasks, RolloutConfig(model=str(model), engine="hf", sampling=SAMPLING, n=1),
                 store=RolloutStore(path))
    assert sum(p * n for p, n, _, _ in retrained.calls) == 2


def test_a_task_edited_under_its_id_is_not_resumed(hf_engine, test_plugin, tmp_path):
    """The resume key was the task's id: an eval rerun after a task's prompt, answer or verifier changed reused the
    old rollouts and reported their verdicts as the new task's. The key holds the task's content digest now."""
    import dataclasses

    tasks = test_plugin.make_tasks(2)
    config = RolloutConfig(model="tiny", engine="hf", sampling=SAMPLING, n=2)
    path = tmp_path / "r.jsonl"
    run_rollouts(hf_engine, tasks, config, store=RolloutStore(path))
    same = Recording(hf_engine)
    run_rollouts(same, [dataclasses.replace(t) for t in tasks], config, store=RolloutStore(path))
    assert same.calls == []  # equal tasks (other objects): resumed
    edited = [tasks[0], dataclasses.replace(tasks[1], answer="something else")]
    again = Recording(hf_engine)
    rollouts = run_rollouts(again, edited, config, store=RolloutStore(path))
    assert sum(p * n for p, n, _, _ in again.calls) == 2  # only the edited task's two samples
    assert [r.task for r in rollouts] == [edited[0]] * 2 + [edited[1]] * 2


def test_an_unknown_verifier_names_the_task_that_asks_for_it(hf_engine, test_plugin):
    import dataclasses

    from crossgym.protocol import ConfigError, VerifierSpec

    tasks = test_plugin.make_tasks(3)
    tasks[2] = dataclasses.replace(tasks[2], verifier=VerifierSpec("numerik"))
    config = RolloutConfig(model="tiny", engine="hf", sampling=SAMPLING, n=1)
    with pytest.raises(ConfigError) as info:
        run_rollouts(hf_engine, tasks, config)
    assert f"task {tasks[2].id!r}: verifier: unknown verifier 'numerik'" in str(info.value)
    assert "did you mean 'numeric'" in str(info.value)


def test_a_tasks_own_unregistered_environment_is_played_single_turn_and_said_once(hf_engine, test_plugin, caplog):
    import dataclasses
    import logging

    tasks = [dataclasses.replace(t, env="nope_env") for t in test_plugin.make_tasks(3)]
    config = RolloutConfig(model="tiny", engine="hf", sampling=SAMPLING, n=1)
    with caplog.at_level(logging.WARNING, logger="crossgym.rollout.runner"):
        rollouts = run_rollouts(hf_engine, tasks, config)
    assert [r.provenance["environment"] for r in rollouts] == ["single_turn (built in)"] * 3
    said = [r.getMessage() for r in caplog.records if "nope_env" in r.getMessage()]
    assert len(said) == 1 and "not registered here" in said[0] and "environment.name" in said[0], said
