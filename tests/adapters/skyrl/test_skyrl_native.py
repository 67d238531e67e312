"""The SkyRL backend through SkyRL 0.3.0's own code on CPU (the skyrl nox venv; skipped without SkyRL): its config
parser and validate_cfg accept every generated config, its generator + batch tensors give exactly crossgym's rewards
on the compat corpus, its multi-turn token ids are what the environment saw, and skyrl_gym builds crossgym's env."""

from __future__ import annotations

import json
import typing
from pathlib import Path

import pytest

pytest.importorskip("skyrl.train")  # the package, not a folder of that name on sys.path
pytest.importorskip("skyrl_gym.envs")

from crossgym.adapters.skyrl.backend import SkyRLBackend  # noqa: E402
from crossgym.api import load_tasks, verify  # noqa: E402
from crossgym.config import RunConfig  # noqa: E402
from crossgym.protocol import Completion, ConfigError, Message, Task, VerifierSpec  # noqa: E402
from crossgym.scoring import RewardRule  # noqa: E402

VERIFIERS = ["exact_match", "json_answer", "numeric", "length", "tool_call", "math"]


def make_run(tmp_path: Path, **kw) -> RunConfig:
    data = {"model": "Qwen/Qwen2.5-0.5B-Instruct", "tasks": {"source": "arithmetic", "params": {"n": 5, "seed": 1}},
            "backend": "skyrl", "output_dir": str(tmp_path / "out"),
            "grpo": {"num_generations": 4, "per_device_train_batch_size": 8, "max_steps": 3}}
    data.update(kw)
    return RunConfig.model_validate(data)


def test_the_import_fix_is_scoped_to_skyrl_tinker_types():
    from crossgym.adapters.skyrl.native import import_skyrl

    before = typing.TypedDict
    import_skyrl()
    from skyrl.train.generators.skyrl_gym_generator import SkyRLGymGenerator  # skyrl.backends imports now

    assert typing.TypedDict is before and SkyRLGymGenerator.__name__ == "SkyRLGymGenerator"


def test_skyrl_parses_and_validates_every_compat_plan():
    """The compat suite's representative configs (every variant, LoRA, multi-turn, extra verifiers): each planned
    one passes SkyRL's SkyRLTrainConfig.from_cli_overrides and validate_cfg; the ones SkyRL lacks are refused."""
    from crossgym.compat_tests.runner import build_matrix

    doc = build_matrix(["skyrl"], ["exact_match"], checks=("plans",), garbage_tasks=0)
    plans = doc["backends"]["skyrl"]["plans"]
    assert plans and all(p["status"] == "pass" for p in plans.values()), plans
    assert "refused as declared" in plans.get("variant_reinforce_pp_baseline", {"detail": "refused as declared"})[
        "detail"]


def test_a_config_skyrl_rejects_is_one_config_error(tmp_path):
    with pytest.raises(ConfigError) as e:
        SkyRLBackend().plan(make_run(tmp_path, backend_args={"trainer.no_such_knob": 1}))
    assert "SkyRL's own config check" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(ConfigError):  # validate_cfg: the batch sizes SkyRL cannot split
        SkyRLBackend().plan(make_run(tmp_path, backend_args={"trainer.policy_mini_batch_size": 3}))


def test_rewards_through_skyrl_equal_crossgyms_on_the_compat_corpus():
    from crossgym.compat_tests.runner import build_matrix

    doc = build_matrix(["skyrl"], VERIFIERS, checks=("parity",), garbage_tasks=0)
    info = doc["backends"]["skyrl"]
    assert info["status"] == "installed" and info["driver"]["module"] == "crossgym.adapters.skyrl.parity"
    for name in VERIFIERS:
        cell = doc["matrix"][name]["skyrl"]
        assert cell["status"] == "pass", (name, cell.get("detail"), cell.get("first_mismatch"))
        assert cell["compared"] > 0 if "compared" in cell else True
    assert doc["summary"]["ok"], doc["summary"]


def test_native_rewards_apply_weights_and_on_error():
    from crossgym.adapters.skyrl.parity import native_rewards

    tasks = load_tasks("arithmetic", n=2, seed=3)
    comps = [Completion.from_text(str(tasks[0].answer)), Completion.from_text("no")]
    assert native_rewards(tasks, comps) == [verify(t, c).reward for t, c in zip(tasks, comps, strict=True)]
    broken = Task(id="b", prompt=(Message("user", "q"),), answer="x", verifier=VerifierSpec("no_such_verifier"))
    assert native_rewards([broken], [Completion.from_text("x")], on_error=-1.0) == [-1.0]
    rule = RewardRule(task_weight=0.5)
    assert native_rewards(tasks[:1], comps[:1], rule=rule) == [0.5]


def test_multi_turn_token_ids_are_what_the_environment_saw():
    from crossgym.compat_tests.drivers import inspect_backend
    from crossgym.compat_tests.tokens import check_token_consistency

    res = check_token_consistency(inspect_backend("skyrl").driver, episodes=3, max_turns=3)
    assert res.status == "pass", (res.detail, res.failure)
    assert res.extra["multi_turn_episodes"] == 3 and res.extra["turns"] == [3, 3, 3]


def test_recorded_rollouts_are_the_scored_samples(tmp_path):
    from crossgym.adapters.skyrl.parity import record_rollouts
    from crossgym.scoring import read_rollouts

    tasks = load_tasks("arithmetic", n=2, seed=4)
    path = tmp_path / "rollouts.jsonl"
    record_rollouts(tasks, [str(tasks[0].answer), "wrong"], path)
    got = {r.task.id: r for r in read_rollouts(path)}
    assert set(got) == {t.id for t in tasks}
    assert got[tasks[0].id].completion.text == str(tasks[0].answer) and got[tasks[0].id].verdict.reward == 1.0
    assert got[tasks[1].id].completion.text == "wrong" and got[tasks[1].id].verdict.reward == 0.0


def test_skyrl_gym_builds_the_registered_env_with_the_baked_config(tmp_path):
    import skyrl_gym

    from crossgym.adapters.skyrl.native import register_env

    plan = SkyRLBackend().plan(make_run(tmp_path, on_error=-0.5))
    entry = plan.files[str(tmp_path / "out" / "skyrl" / "main_crossgym.py")]
    namespace: dict = {}
    exec(compile(entry, "main_crossgym.py", "exec"), namespace)  # the generated file, as python runs it
    register_env(namespace["CONFIG"])
    register_env(namespace["CONFIG"])  # re-registering replaces it (the training task registers once per run)
    task = load_tasks("arithmetic", n=1, seed=5)[0]
    env = skyrl_gym.make("crossgym", env_config={}, extras={"task": task.to_json(), "max_turns": 1})
    assert type(env).__name__ == "CrossgymEnv" and env.session.cfg.rule.on_error == -0.5
    env.init([{"role": "user", "content": "q"}])
    assert env.step(str(task.answer))["reward"] == 1.0
    assert json.loads(json.dumps(env.get_metrics()))  # SkyRL aggregates these per env class


def test_skyrls_own_advantages_equal_crossgyms_reference_per_variant():
    """The compat suite's advantages check: the driver's hook runs SkyRL's compute_advantages_and_returns for every
    variant SkyRL runs and must equal crossgym's reference under SkyRL's semantics (torch.std unbiased, eps 1e-6)."""
    from crossgym.adapters.skyrl import parity
    from crossgym.compat_tests.advantages import check_advantages
    from crossgym.compat_tests.drivers import inspect_backend

    res = check_advantages(inspect_backend("skyrl").driver, "skyrl")
    for variant in parity.ADVANTAGE_VARIANTS:
        assert res[variant].status == "pass" and res[variant].checked > 40, (variant, res[variant].detail)
    assert res["reinforce_pp_baseline"].status == "skip" and res["normalize_then_sum"].status == "skip"
    assert parity.advantages([[0.75]], "grpo") == [[pytest.approx(0.75 / (1 + 1e-6))]]  # SkyRL: a group of one
    with pytest.raises(ValueError, match="no mask"):
        parity.advantages([[1.0, None]], "grpo")


def test_filter_groups_is_skyrls_dynamic_sampling_and_its_config_accepts_it(tmp_path):
    """grpo.filter_groups -> trainer.algorithm.dynamic_sampling (type filter), through SkyRL's own config check."""
    plan = SkyRLBackend().plan(make_run(tmp_path, grpo={"num_generations": 4, "per_device_train_batch_size": 8,
                                                        "max_steps": 3, "filter_groups": True}))
    text = " ".join(plan.argv)
    assert "trainer.algorithm.dynamic_sampling.type=filter" in text
    assert "trainer.algorithm.dynamic_sampling.max_sample_batches=10" in text
