"""veRL's own reward managers load crossgym's generated reward module through the run's config and give exactly
crossgym's rewards, at the token position veRL's trainer reads (the last valid response token)."""

from __future__ import annotations

import pytest

pytest.importorskip("verl")

from crossgym.adapters.verl.backend import VerlBackend  # noqa: E402
from crossgym.adapters.verl.parity import build_batch, byte_tokenizer  # noqa: E402
from crossgym.api import load_verifier, verify  # noqa: E402
from crossgym.protocol.task import Completion, Task, VerifierSpec  # noqa: E402
from crossgym.scoring import extra_task, reward_from_verdict  # noqa: E402

VERIFIERS = ("numeric", "exact_match", "json_answer", "multiple_choice", "format_tags", "json_schema", "math",
             "tool_call")


def _examples() -> tuple[list[Task], list[Completion]]:
    tasks, comps = [], []
    for name in VERIFIERS:
        for ex in load_verifier(name).examples():
            tasks.append(ex.task)
            comps.append(ex.completion)
    return tasks, comps


@pytest.fixture(scope="module")
def examples() -> tuple[list[Task], list[Completion]]:
    tasks, comps = _examples()
    assert {"pass", "fail", "malformed"} <= {e.expect for n in VERIFIERS for e in load_verifier(n).examples()}
    return tasks, comps


def _config(run, tasks, verl_compose):  # type: ignore[no-untyped-def]
    """The run's files written as train() writes them, and veRL's config composed from the run's overrides."""
    rf = VerlBackend().build(run, tasks=tasks, gpus=1)
    rf.write()
    return verl_compose(rf.args)


def _expected(tasks, comps, on_error: float = 0.0) -> list[float]:  # type: ignore[no-untyped-def]
    return [reward_from_verdict(verify(t, c), on_error) for t, c in zip(tasks, comps, strict=True)]


def _run_reward_loop(mgr, data):  # type: ignore[no-untyped-def]
    async def go():  # type: ignore[no-untyped-def]
        return [await mgr.run_single(data[i:i + 1]) for i in range(len(data))]

    return mgr.loop.run_until_complete(go())


def _check_positions(data, rm_scores, expected) -> None:  # type: ignore[no-untyped-def]
    prompt_len = data.batch["prompts"].shape[1]
    valid = data.batch["attention_mask"][:, prompt_len:].sum(dim=1)
    for i, want in enumerate(expected):
        row = rm_scores[i].tolist()
        assert row[int(valid[i]) - 1] == pytest.approx(want, abs=1e-6)
        assert all(v == 0 for j, v in enumerate(row) if j != int(valid[i]) - 1)


def test_reward_loop_manager_from_config_matches_crossgym(run_factory, examples, verl_compose) -> None:  # type: ignore[no-untyped-def]
    from verl.trainer.ppo.reward import load_reward_manager

    tasks, comps = examples
    cfg = _config(run_factory(on_error=-1.0), tasks[:16], verl_compose)
    tok = byte_tokenizer()
    mgr = load_reward_manager(cfg, tok)
    assert type(mgr).__name__ == "NaiveRewardManager" and "reward_loop" in type(mgr).__module__
    data = build_batch(tok, tasks, comps)
    results = _run_reward_loop(mgr, data)
    expected = _expected(tasks, comps, on_error=-1.0)
    assert [r["reward_score"] for r in results] == expected
    kinds = [verify(t, c).error_kind for t, c in zip(tasks, comps, strict=True)]
    assert kinds.count("malformed") >= len(VERIFIERS)
    # malformed completions keep the verdict's reward (never on_error): the completion's fault, not the verifier's
    assert all(r == 0.0 for r, k in zip(expected, kinds, strict=True) if k == "malformed")
    keys = {tuple(r["reward_extra_info"]) for r in results}
    assert len(keys) == 1  # same keys for every sample: veRL stacks them into arrays
    assert [r["reward_extra_info"]["crossgym/malformed"] for r in results] == [float(k == "malformed") for k in kinds]
    _check_positions(data, type(mgr).assemble_rm_scores(data, [r["reward_score"] for r in results]), expected)


def test_legacy_naive_manager_with_the_configured_function(run_factory, examples, verl_compose) -> None:  # type: ignore[no-untyped-def]
    from verl.trainer.ppo.reward import get_custom_reward_fn
    from verl.workers.reward_manager import NaiveRewardManager

    tasks, comps = examples
    cfg = _config(run_factory(), tasks[:16], verl_compose)
    fn = get_custom_reward_fn(cfg)
    tok = byte_tokenizer()
    data = build_batch(tok, tasks, comps)
    out = NaiveRewardManager(tokenizer=tok, num_examine=0, compute_score=fn)(data, return_dict=True)
    expected = _expected(tasks, comps)
    _check_positions(data, out["reward_tensor"], expected)
    assert list(out["reward_extra_info"]["score"]) == expected
    assert len({len(v) for v in out["reward_extra_info"].values()}) == 1


def test_reward_loop_worker_as_the_trainer_runs_it(run_factory, verl_compose, tiny_model_dir) -> None:  # type: ignore[no-untyped-def]
    """veRL's RewardLoopWorker (what the trainer's reward actors run) with the tokenizer it loads from the model."""
    from transformers import AutoTokenizer
    from verl.experimental.reward_loop.reward_loop import RewardLoopWorker

    tasks = [Task(id=f"n{i}", prompt=[{"role": "user", "content": f"{i}+{i}?"}], answer=2 * i,
                  verifier=VerifierSpec("numeric")) for i in range(4)]
    comps = ["<answer>0</answer>", "The sum is 2", "no idea", "<answer>7</answer>"]
    cfg = _config(run_factory(model=str(tiny_model_dir), grpo={"per_device_train_batch_size": 4}), tasks,
                  verl_compose)
    worker = RewardLoopWorker(cfg)
    data = build_batch(AutoTokenizer.from_pretrained(tiny_model_dir), tasks, comps)
    results = worker.loop.run_until_complete(worker.compute_score_batch(data))
    assert [r["reward_score"] for r in results] == _expected(tasks, [Completion.from_text(c) for c in comps])
    assert [r["reward_score"] for r in results] == [1.0, 1.0, 0.0, 0.0]


def test_extra_verifiers_weights_and_task_weight(run_factory, verl_compose) -> None:  # type: ignore[no-untyped-def]
    from verl.trainer.ppo.reward import load_reward_manager

    tasks = [Task(id=f"j{i}", prompt=[{"role": "user", "content": "x"}], answer="yes",
                  verifier=VerifierSpec("exact_match")) for i in range(4)]
    comps = ["yes", '{"a": 1}', "no", "[1, 2]"]
    run = run_factory(task_weight=2.0, verifiers=[{"name": "json_valid", "weight": 0.5}],
                      grpo={"per_device_train_batch_size": 4})
    tok = byte_tokenizer()
    mgr = load_reward_manager(_config(run, tasks, verl_compose), tok)
    results = _run_reward_loop(mgr, build_batch(tok, tasks, comps))
    spec = VerifierSpec("json_valid")
    for t, c, r in zip(tasks, comps, results, strict=True):
        comp = Completion.from_text(c)
        task_r = verify(t, comp).reward
        extra_r = reward_from_verdict(load_verifier(spec).verify(extra_task(t, spec), comp), 0.0)  # no answer
        assert r["reward_score"] == pytest.approx(2.0 * task_r + 0.5 * extra_r)
        assert r["reward_extra_info"]["crossgym/extra/json_valid"] == extra_r


def test_verifier_errors_score_on_error(run_factory, verl_compose) -> None:  # type: ignore[no-untyped-def]
    """A verifier that cannot be built is a verifier error: the run's on_error, never a crash of the trainer."""
    from verl.trainer.ppo.reward import load_reward_manager

    tasks = [Task(id=f"e{i}", prompt=[{"role": "user", "content": "x"}], answer="1",
                  verifier=VerifierSpec("numeric", {"no_such_param": 1})) for i in range(2)]
    run = run_factory(on_error=-0.5, grpo={"per_device_train_batch_size": 4, "num_generations": 2})
    tok = byte_tokenizer()
    mgr = load_reward_manager(_config(run, tasks, verl_compose), tok)
    results = _run_reward_loop(mgr, build_batch(tok, tasks, ["1", "2"]))
    assert [r["reward_score"] for r in results] == [-0.5, -0.5]
    assert all(r["reward_extra_info"]["crossgym/verifier_error"] == 1.0 for r in results)
    assert all(r["reward_extra_info"]["error"].startswith("exception:") for r in results)


def test_episode_completion_from_the_agent_loop_is_what_gets_scored(verl_compose, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Multi-message completions reach the reward function whole (tool_extra_fields), not as decoded text."""
    from crossgym.adapters.verl.parity import native_rewards

    task = Task(id="t", prompt=[{"role": "user", "content": "weather?"}], answer="sunny",
                verifier=VerifierSpec("exact_match"))
    episode = Completion(messages=[{"role": "assistant", "content": "let me check"},
                                   {"role": "tool", "content": "sunny", "name": "get_weather"},
                                   {"role": "assistant", "content": "sunny"}])
    assert native_rewards([task, task], [episode, "cloudy"]) == [1.0, 0.0]
