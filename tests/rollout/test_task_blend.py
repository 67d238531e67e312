"""Task blends: named parts sampled by weight or count, deterministically, each with its environment and extra
verifiers; the scoring core scores each part's tasks with its own terms and logs per-part metrics."""

from __future__ import annotations

from collections import Counter

import pytest

from crossgym.config import parse_run_config
from crossgym.config.run import BlendConfig
from crossgym.protocol.errors import ConfigError
from crossgym.protocol.task import Completion
from crossgym.rollout.blend import blend_lines, resolve_blend, row_counts
from crossgym.rollout.tasks import needs_episodes, run_tasks, task_env, task_env_params, task_max_turns
from crossgym.scoring import RewardRule
from crossgym.scoring.parts import part_key, part_of


def _run(parts, **extra):
    return parse_run_config({"model": "m", "tasks": parts, **extra})


PARTS = [
    {"name": "math", "source": "arithmetic", "params": {"n": 12, "seed": 1}, "weight": 3},
    {"name": "words", "source": "word_problems", "params": {"n": 6, "seed": 1}, "weight": 1},
    {"name": "tools", "source": "tool_choice", "params": {"n": 4, "seed": 1}, "count": 10,
     "environment": {"name": "tool_use", "max_turns": 3, "params": {"strict": True}},
     "verifiers": [{"name": "json_valid", "weight": 0.5}]},
]


def test_list_form_is_a_blend_and_the_single_form_still_works():
    assert isinstance(_run(PARTS).tasks, BlendConfig)
    single = parse_run_config({"model": "m", "tasks": {"source": "arithmetic", "params": {"n": 3}}})
    from crossgym.api import load_tasks

    assert [t.id for t in run_tasks(single)] == [t.id for t in load_tasks("arithmetic", n=3)]
    wrapped = parse_run_config({"model": "m", "tasks": {"parts": PARTS, "size": 40}})
    assert wrapped.tasks.size == 40


def test_counts_weights_and_size():
    run = _run(PARTS)
    blend = resolve_blend(run.tasks, seed=0, run=run)
    counts = {p.name: p.rows for p in blend.parts}
    # weighted parts share their pools' total (12 + 6 = 18) 3:1; the count part takes exactly 10 (2.5 epochs)
    assert counts == {"math": 14, "words": 4, "tools": 10}
    assert Counter(part_of(t) for t in blend.tasks) == Counter(counts)
    sized = parse_run_config({"model": "m", "tasks": {"parts": PARTS, "size": 30}})
    assert row_counts(sized.tasks, [12, 6, 4]) == [15, 5, 10]
    # an epoch never repeats a task before every task of the part was used
    tools = Counter(t.id for t in blend.tasks if part_of(t) == "tools")
    assert sorted(tools.values()) == [2, 2, 3, 3]


def test_sampling_is_deterministic_from_the_seed_and_interleaved():
    run = _run(PARTS)
    a = [t.id for t in run_tasks(run)]
    assert a == [t.id for t in run_tasks(run)]
    b = [t.id for t in run_tasks(run.with_overrides(seed=1))]
    assert a != b
    # a part drawn for at least one epoch (math: 14 of 12, tools: 10 of 4) uses every task, whatever the seed
    full = {"math", "tools"}
    assert {i for i in a if part_of_id(i) in full} == {i for i in b if part_of_id(i) in full}
    assert len({part_of_id(i) for i in a[:8]}) > 1  # interleaved, not part after part
    ordered = parse_run_config({"model": "m", "tasks": {"parts": PARTS, "shuffle": False}})
    ids = [part_of_id(t.id) for t in run_tasks(ordered)]
    assert ids == sorted(ids, key=["math", "words", "tools"].index)


def part_of_id(task_id: str) -> str:
    return task_id.split("/", 1)[0]


def test_each_part_carries_its_environment():
    run = _run(PARTS)
    tasks = run_tasks(run)
    tool = next(t for t in tasks if part_of(t) == "tools")
    math = next(t for t in tasks if part_of(t) == "math")
    assert tool.id.startswith("tools/")
    assert (task_env(tool, run), task_max_turns(tool, run), task_env_params(tool, run)) == ("tool_use", 3,
                                                                                            {"strict": True})
    assert (task_env(math, run), task_max_turns(math, run), task_env_params(math, run)) == ("single_turn", None, {})
    assert needs_episodes(tasks, run)
    assert not needs_episodes([math], run)
    # the Task JSON carries the stamp, so every backend's rows do
    from crossgym.protocol.task import Task

    again = Task.from_json(tool.to_json())
    assert (part_of(again), task_env(again, run), task_max_turns(again, run)) == ("tools", "tool_use", 3)


def test_part_verifiers_judge_only_their_part_and_metrics_are_per_part():
    run = _run(PARTS, verifiers=[{"name": "no_think", "weight": 0.25}])
    rule = RewardRule.from_run(run)
    assert [(t.name, t.parts) for t in rule.extras] == [("no_think", ()), ("tools/json_valid", ("tools",))]
    assert rule.parts == ("math", "words", "tools")
    assert RewardRule.from_dict(rule.to_dict()) == rule
    tasks = run_tasks(run)
    tool = next(t for t in tasks if part_of(t) == "tools")
    math = next(t for t in tasks if part_of(t) == "math")
    answer = str(math.answer)
    s_math = rule.score(math, Completion.from_text(answer))
    assert set(s_math.extras) == {"no_think"}
    assert s_math.reward == pytest.approx(1.0 + 0.25 * s_math.extras["no_think"])
    assert s_math.metrics[part_key("math", "passed")] == 1.0
    assert not any(k.startswith("crossgym/part/tools/") for k in s_math.metrics)
    s_tool = rule.score(tool, Completion.from_text("{}"))
    assert set(s_tool.extras) == {"no_think", "tools/json_valid"}
    assert s_tool.part == "tools" and part_key("tools", "reward") in s_tool.metrics
    # batch scoring gives the same as one by one; fixed keys for backends that stack arrays
    many = rule.score_many([math, tool], [Completion.from_text(answer), Completion.from_text("{}")])
    assert [m.reward for m in many] == [s_math.reward, s_tool.reward]
    # veRL stacks the same keys for every sample: a term that does not judge math is NaN there; with parts=True
    # (for a backend that does not group by part itself) each part's keys too
    info = s_math.info(rule.metric_keys())
    assert set(rule.metric_keys()) <= set(info) and not any(k.startswith("crossgym/part/") for k in info)
    assert info["crossgym/extra/tools/json_valid"] != info["crossgym/extra/tools/json_valid"]  # NaN
    wide = s_math.info(rule.metric_keys(parts=True))
    assert wide[part_key("math", "passed")] == 1.0 and wide[part_key("tools", "reward")] != wide[
        part_key("tools", "reward")]


def test_blend_errors_are_one_line():
    with pytest.raises(ConfigError, match="did you mean 'source'"):
        parse_run_config({"model": "m", "tasks": [{"name": "a", "sorce": "arithmetic"}]})
    with pytest.raises(ConfigError, match="given twice"):
        _run([{"name": "a", "source": "arithmetic"}, {"name": "a", "source": "sql"}])
    with pytest.raises(ConfigError, match="weight or a count"):
        _run([{"name": "a", "source": "arithmetic", "weight": 1, "count": 2}])
    too_small = parse_run_config({"model": "m", "tasks": {"parts": PARTS, "size": 5}})
    with pytest.raises(ConfigError, match="size 5"):
        run_tasks(too_small)
    with pytest.raises(Exception, match="unknown task source"):
        run_tasks(_run([{"name": "a", "source": "no_such_source"}]))


def test_plan_lines_name_every_part():
    run = _run(PARTS)
    text = "\n".join(blend_lines(resolve_blend(run.tasks, run=run)))
    assert "3 parts, 28 rows" in text and "tools: 10 rows" in text and "env tool_use, max_turns 3" in text


def test_crossgym_plan_shows_the_blend_beside_each_backend(tmp_path):
    import json

    from typer.testing import CliRunner

    from crossgym.cli import app

    cfg = tmp_path / "blend.yaml"
    cfg.write_text(json.dumps({"model": str(tmp_path), "tasks": PARTS, "grpo": {
        "num_generations": 2, "per_device_train_batch_size": 2, "max_steps": 1}}))
    result = CliRunner().invoke(app, ["plan", str(cfg), "--backend", "trl", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    parts = doc["blends"]["tasks"]["parts"]
    assert [(p["name"], p["rows"], p["environment"]) for p in parts] == [
        ("math", 14, "(each task's own)"), ("words", 4, "(each task's own)"), ("tools", 10, "tool_use")]
    (trl,) = doc["plans"]
    assert "extra/tools/json_valid" in json.dumps(trl)
    text = CliRunner().invoke(app, ["plan", str(cfg), "--backend", "trl"]).output
    assert "tasks blend: 3 parts, 28 rows" in text
