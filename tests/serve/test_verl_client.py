"""veRL's own reward machinery scoring through a crossgym server (runs in the `verl` nox venv; skipped elsewhere).

veRL loads ``verl_compute_score`` with its loader (``pkg://crossgym.serve.client``, reward_kwargs.url), and its
reward manager (naive: in process; remote: Ray actors) scores a DataProto of tokenized prompts and responses, as
its trainer hands them over. The rewards equal crossgym's local verdicts.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("verl")
pytest.importorskip("hydra")

from serve_process import served  # noqa: E402

from crossgym.adapters.verl.parity import build_batch, byte_tokenizer, compose_config  # noqa: E402
from crossgym.api import load_verifier  # noqa: E402

VERIFIERS = ["exact_match", "numeric", "json_answer", "multiple_choice", "format_tags", "math", "code_tests"]


def _overrides(url: str, manager: str) -> list[str]:
    return ["reward.custom_reward_function.path=pkg://crossgym.serve.client",
            "reward.custom_reward_function.name=verl_compute_score",
            f"+reward.custom_reward_function.reward_kwargs.url='{url}'",
            f"reward.reward_manager.name={manager}", "reward.num_workers=2", "actor_rollout_ref.rollout.name=vllm"]


@pytest.mark.parametrize("manager", ["naive", "remote"])
def test_verl_reward_manager_scores_through_the_server(manager: str) -> None:
    from verl.trainer.ppo.reward import load_reward_manager

    cases = [(e.task, e.completion) for n in VERIFIERS for e in load_verifier(n).examples()
             if not e.task.tools and e.task.env == "single_turn"]
    tok = byte_tokenizer()
    started_ray = False
    if manager == "remote":
        import ray

        if not ray.is_initialized():
            ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
            started_ray = True
    try:
        with served() as url:
            config = compose_config(_overrides(url, manager))
            mgr = load_reward_manager(config, tok)
            data = build_batch(tok, [t for t, _ in cases], [c for _, c in cases])

            async def score_all() -> list[dict[str, Any]]:
                return [await mgr.run_single(data[i:i + 1]) for i in range(len(data))]

            results = mgr.loop.run_until_complete(score_all())
    finally:
        if started_ray:
            import ray

            ray.shutdown()
    for (task, completion), res in zip(cases, results, strict=True):
        local = load_verifier(task.verifier).verify(task, completion)
        assert float(res["reward_score"]) == local.reward, (task.verifier.name, completion.text)
