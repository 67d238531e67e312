"""The difficulty filter: tasks the starting model always or never solves are dropped before training (their GRPO
groups would have zero advantage), measured through crossgym's eval runner or read from an earlier eval; dynamic
sampling maps to veRL's filter_groups and OpenRLHF's dynamic filtering, and TRL's plan says it has none."""

from __future__ import annotations

from typing import Any

import pytest

from crossgym.config import parse_run_config
from crossgym.eval.difficulty import apply_difficulty
from crossgym.protocol.errors import ConfigError
from crossgym.protocol.task import Completion
from crossgym.rollout.blend import distinct_tasks
from crossgym.rollout.tasks import run_tasks

PARTS = [{"name": "math", "source": "arithmetic", "params": {"n": 6, "seed": 5}, "count": 9},
         {"name": "words", "source": "word_problems", "params": {"n": 4, "seed": 5}}]


class SolvesSome:
    """An engine (not under test) that answers each prompt right in a fixed share of its samples."""

    name = "solves-some"

    def __init__(self, tasks: list[Any], share: dict[str, float]) -> None:
        self.by_prompt = {t.prompt[-1].content: (str(t.answer), share.get(t.id, 0.5)) for t in tasks}

    def generate(self, prompts: list[Any], n: int, params: Any, tools: Any = None) -> list[list[Completion]]:
        out = []
        for conv in prompts:
            answer, share = self.by_prompt[conv[-1].content]
            right = round(share * n)
            out.append([Completion.from_text(answer if j < right else "I do not know") for j in range(n)])
        return out


def _run(**extra: Any) -> Any:
    return parse_run_config({"model": "m", "tasks": PARTS, "difficulty": {"samples": 4, **extra},
                             "grpo": {"num_generations": 2, "per_device_train_batch_size": 2}})


def _engine(rows: list[Any]) -> SolvesSome:
    ids = [t.id for t in distinct_tasks(rows)]
    return SolvesSome(distinct_tasks(rows), {ids[0]: 1.0, ids[1]: 1.0, ids[2]: 0.0, ids[3]: 0.0})


def test_drops_always_and_never_solved_tasks_and_reports_zero_variance(tmp_path):
    run = _run()
    rows = run_tasks(run)
    report = apply_difficulty(run, rows, engine=_engine(rows), output_dir=tmp_path / "difficulty")
    distinct = distinct_tasks(rows)
    assert (report.measured, report.kept, report.dropped_solved, report.dropped_unsolved) == (len(distinct),
                                                                                              len(distinct) - 4, 2, 2)
    dropped = {t.id for t in distinct[:4]}
    assert report.rows == [t for t in rows if t.id not in dropped]  # the blend's rows (repeats kept) minus those
    assert report.zero_variance_before == pytest.approx(4 / len(distinct)) and report.zero_variance_after == 0.0
    assert sum(p["measured"] for p in report.parts.values()) == len(distinct)
    assert "kept 6 of 10 tasks" in report.line() and "40% -> 0%" in report.line()
    # an earlier eval's rollouts give the same answer without generating anything
    again = apply_difficulty(_run(rollouts=str(tmp_path / "difficulty")), rows, engine=None)
    assert [t.id for t in again.rows] == [t.id for t in report.rows]


def test_a_band_that_keeps_nothing_is_one_line_and_bad_bands_are_refused(tmp_path):
    run = _run(min_pass=0.6)
    rows = run_tasks(run)
    eng = SolvesSome(distinct_tasks(rows), {})  # every task solved half the time: all under min_pass
    with pytest.raises(ConfigError, match="kept no tasks"):
        apply_difficulty(run, rows, engine=eng)
    with pytest.raises(ConfigError, match="min_pass"):
        _run(min_pass=0.9, max_pass=0.5)
    with pytest.raises(ConfigError, match="no such rollouts file"):
        apply_difficulty(_run(rollouts=str(tmp_path / "nowhere")), rows)


def test_filter_groups_maps_to_each_backends_dynamic_sampling():
    from crossgym.adapters.openrlhf.config_map import MAPPING as ORL_MAPPING
    from crossgym.adapters.verl.overrides import MAPPING as VERL_MAPPING
    from crossgym.adapters.verl.overrides import filter_groups_settings

    run = parse_run_config({"model": "m", "tasks": {"source": "arithmetic"}, "grpo": {"filter_groups": True}})
    assert filter_groups_settings(run)["algorithm.filter_groups.enable"] is True
    assert filter_groups_settings(run.with_overrides(grpo={"filter_groups": False})) == {}
    assert any(row[0] == "grpo.filter_groups" for row in VERL_MAPPING)
    assert any(row[0] == "grpo.filter_groups" for row in ORL_MAPPING)
    from crossgym.adapters.trl.backend import TRLBackend

    notes = TRLBackend().plan(run).notes
    assert any("no dynamic sampling" in n for n in notes)


def test_a_group_of_nan_rewards_is_zero_variance():
    from crossgym.eval.difficulty import TaskRate, _reward_key

    nan_group = TaskRate(0, 3, {_reward_key(float("nan") * x) for x in (1.0, 2.0, 3.0)})  # three distinct NaNs
    masked = TaskRate(0, 2, {_reward_key(None), _reward_key(float("nan"))})
    varied = TaskRate(1, 2, {_reward_key(1.0), _reward_key(float("nan"))})
    assert nan_group.zero_variance and masked.zero_variance and not varied.zero_variance
    assert _reward_key(0.1 + 0.2) == _reward_key(0.3)
