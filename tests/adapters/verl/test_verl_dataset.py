"""Tasks -> veRL parquet rows; veRL's own RLHFDataset reads them back (that part needs veRL)."""

from __future__ import annotations

import json

import pytest

from crossgym.adapters.verl import dataset
from crossgym.api import load_tasks
from crossgym.protocol.task import Task, VerifierSpec


def _mixed_tasks() -> list[Task]:
    tasks = load_tasks("arithmetic", n=3, seed=2) + load_tasks("tool_choice", n=2, seed=0)
    tasks.append(Task(id="json-1", prompt=[{"role": "system", "content": "Be terse."},
                                           {"role": "user", "content": "Give {\"a\": [1, 2]}"}],
                      answer={"a": [1, 2]}, verifier=VerifierSpec("json_match", {"ignore_order": True})))
    return tasks


def test_rows_carry_everything_the_reward_and_agent_loop_need(run_factory) -> None:  # type: ignore[no-untyped-def]
    tasks = _mixed_tasks()
    rows = dataset.task_rows(tasks, run_factory(), episodes=True)
    for i, (task, row) in enumerate(zip(tasks, rows, strict=True)):
        assert set(row) == {"data_source", "prompt", "ability", "reward_model", "extra_info", "agent_name"}
        assert row["data_source"] == f"crossgym/{task.verifier.name}"
        assert row["prompt"] == [{"role": m.role, "content": m.content} for m in task.prompt]
        assert row["reward_model"]["style"] == "rule"
        assert row["agent_name"] == dataset.AGENT_NAME
        extra = row["extra_info"]
        assert extra["index"] == i and extra["task_id"] == task.id
        assert Task.from_json(extra["crossgym_task"]) == task  # exact round trip
        assert VerifierSpec.from_dict(json.loads(extra["verifier"])) == task.verifier
        assert extra["env"] == task.env
        assert extra["env_seed"] == dataset.episode_seed(0, task.id)
        # every row lists every tool (one struct shape), each with the task for BaseTool.create
        assert set(extra["tools_kwargs"]) == {"convert_currency", "convert_units", "get_weather",
                                              *dataset.tool_names(tasks)}
        assert all(v["create_kwargs"]["crossgym_task"] == extra["crossgym_task"]
                   for v in extra["tools_kwargs"].values())
    assert rows[-1]["reward_model"]["ground_truth"] == '{"a": [1, 2]}'
    assert rows[0]["reward_model"]["ground_truth"] == json.dumps(tasks[0].answer)


def test_single_turn_rows_have_no_agent_name_or_tools(run_factory) -> None:  # type: ignore[no-untyped-def]
    rows = dataset.task_rows(load_tasks("arithmetic", n=2, seed=0), run_factory())
    assert "agent_name" not in rows[0] and "tools_kwargs" not in rows[0]["extra_info"]
    assert rows[0]["extra_info"]["max_turns"] is None  # not set: the environment decides (the driver's rule)


def test_episode_seed_is_per_task_and_run_seed() -> None:
    assert dataset.episode_seed(0, "a") == dataset.episode_seed(0, "a")
    assert len({dataset.episode_seed(0, "a"), dataset.episode_seed(1, "a"), dataset.episode_seed(0, "b")}) == 3


def test_parquet_round_trip_is_exact(run_factory, tmp_path) -> None:  # type: ignore[no-untyped-def]
    pq = pytest.importorskip("pyarrow.parquet")
    rows = dataset.task_rows(_mixed_tasks(), run_factory(), episodes=True)
    path = dataset.write_parquet(rows, tmp_path / "d" / "train.parquet")
    back = pq.read_table(path).to_pylist()
    for row, got in zip(rows, back, strict=True):
        assert got["extra_info"]["crossgym_task"] == row["extra_info"]["crossgym_task"]
        assert got["prompt"] == row["prompt"] and got["reward_model"] == row["reward_model"]


def test_verl_rlhf_dataset_reads_our_parquet(run_factory, tmp_path) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("verl")
    from omegaconf import OmegaConf
    from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn

    from crossgym.adapters.verl.parity import byte_tokenizer
    from crossgym.adapters.verl.reward import task_for

    tasks = _mixed_tasks()
    path = dataset.write_parquet(dataset.task_rows(tasks, run_factory(), episodes=True), tmp_path / "t.parquet")
    cfg = OmegaConf.create({"max_prompt_length": 4096, "filter_overlong_prompts": True, "return_raw_chat": True,
                            "prompt_key": "prompt", "truncation": "error", "cache_dir": str(tmp_path / "cache")})
    ds = RLHFDataset(data_files=[str(path)], tokenizer=byte_tokenizer(), config=cfg, processor=None)
    assert len(ds) == len(tasks)
    items = [ds[i] for i in range(len(ds))]
    for task, item in zip(tasks, items, strict=True):
        assert task_for(item["extra_info"]) == task
        assert [m["content"] for m in item["raw_prompt"]] == [m.content for m in task.prompt]
        assert item["agent_name"] == dataset.AGENT_NAME
        assert item["tools_kwargs"]["get_weather"]["create_kwargs"]["crossgym_task"] == task.to_json()
    batch = collate_fn(items)
    assert list(batch["index"]) == list(range(len(tasks)))
