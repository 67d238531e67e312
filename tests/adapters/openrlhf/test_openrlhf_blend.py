"""A multi-environment blend through OpenRLHF's own code (issue 21, item 8; runs in the `openrlhf` nox venv).

The blend of the compat suite (six parts, single-turn and multi-turn, part-only verifiers) is planned as a run:
OpenRLHF's own argument parsing, blending_datasets and PromptDataset read our prompts file, and, since some parts
need episodes, its MultiTurnAgentExecutor runs our generated agent file for every row, single-turn parts included,
as in training. Each row's reward equals the scoring core's on its own. Only the generator is replaced (a replay
engine returns the scripted turns as token ids).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("openrlhf")
pytest.importorskip("torch")

from openrlhf.datasets import PromptDataset  # noqa: E402
from openrlhf.datasets.utils import blending_datasets  # noqa: E402
from openrlhf.utils.agent import MultiTurnAgentExecutor  # noqa: E402

from crossgym.adapters.openrlhf.backend import OpenRLHFBackend  # noqa: E402
from crossgym.adapters.openrlhf.convert import task_from_label  # noqa: E402
from crossgym.adapters.openrlhf.native_cli import parse_native  # noqa: E402
from crossgym.adapters.openrlhf.parity import (  # noqa: E402
    ReplayEngine,
    SamplingParams,
    action_text,
    byte_tokenizer,
    load_module,
)
from crossgym.compat_tests.blend import BLEND_PARTS, blend_run, blend_samples  # noqa: E402
from crossgym.scoring import RewardRule  # noqa: E402
from crossgym.scoring.parts import part_of  # noqa: E402


def test_a_blend_runs_through_openrlhfs_dataset_and_agent_executor(tmp_path: Path) -> None:
    import types

    from transformers import AutoTokenizer

    model_dir = tmp_path / "policy"
    byte_tokenizer().save_pretrained(str(model_dir))
    run = blend_run(model=str(model_dir), backend="openrlhf", output_dir=str(tmp_path / "out"),
                    grpo={"num_generations": 2, "per_device_train_batch_size": 4, "max_steps": 3,
                          "max_prompt_length": 4096},
                    backend_args={"actor.num_gpus_per_node": 1})
    backend = OpenRLHFBackend()
    plan, full = backend.prepare(run)
    work = backend.write(full)
    args = parse_native(list(plan.argv[3:])).args  # OpenRLHF's own parser and checks
    assert args.train.agent_func_path == str(work / "agent.py")  # multi-turn parts: the agent for every row

    strategy = types.SimpleNamespace(args=args, print=lambda *a, **k: None, is_rank_0=lambda: True)
    tok = AutoTokenizer.from_pretrained(args.actor.model_name_or_path)
    data = blending_datasets(args.data.prompt_dataset, args.data.prompt_probs, strategy, args.train.seed,
                             max_count=args.data.max_samples, dataset_split=args.data.prompt_split)
    ds = PromptDataset(data, tok, strategy, input_template=args.data.input_template)
    labels = list(ds.labels)
    parts = Counter(part_of(task_from_label(lab)) for lab in labels)
    assert set(parts) == {p["name"] for p in BLEND_PARTS}  # every part's rows reach OpenRLHF's dataset

    agent_cls = load_module(Path(args.train.agent_func_path), "agent_module").AgentExecutor
    assert issubclass(agent_cls, MultiTurnAgentExecutor)
    rule = RewardRule.from_run(run)
    checked: Counter[str] = Counter()
    for s in blend_samples(run):
        label = next(lab for lab in labels if task_from_label(lab).id == s.task.id)
        prompt = ds.prompts[labels.index(label)]
        turns = [action_text(m) for m in s.completion.assistant_messages]
        out = asyncio.run(agent_cls().execute(prompt, label, SamplingParams(), args.data.max_len, tok,
                                              ReplayEngine(tok, turns)))
        want = rule.score(s.task, s.completion).reward
        got = float(out["reward"].flatten()[0].item()) if hasattr(out["reward"], "flatten") else float(out["reward"])
        assert got == want, (s.id, got, want)
        checked[part_of(s.task) or ""] += 1
    assert set(checked) == set(parts) and sum(checked.values()) == 14


def test_validate_plan_runs_openrlhfs_own_parser_on_the_blend_plan(tmp_path: Path) -> None:
    """The compat plans check on OpenRLHF: the driver's validate_plan parses a blend plan's argv with OpenRLHF's
    own parser and checks, and an argv it refuses is one ConfigError."""
    import types

    from crossgym.adapters.openrlhf.parity import validate_plan
    from crossgym.protocol.errors import ConfigError

    model_dir = tmp_path / "policy"
    byte_tokenizer().save_pretrained(str(model_dir))
    run = blend_run(model=str(model_dir), backend="openrlhf", output_dir=str(tmp_path / "out"),
                    grpo={"num_generations": 2, "per_device_train_batch_size": 4, "max_steps": 3})
    plan = OpenRLHFBackend().plan(run)
    validate_plan(plan)
    bad = types.SimpleNamespace(argv=(*plan.argv, "--no.such_flag", "1"))
    with pytest.raises(ConfigError, match="OpenRLHF"):
        validate_plan(bad)
