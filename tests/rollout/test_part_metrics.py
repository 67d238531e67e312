"""Per-part metrics of a blend on every backend's reward path: TRL logs crossgym/part/<p>/... for each part's own
samples (TRL averages each key over the values logged), veRL keeps one key set for every sample (per part through
data_source), OpenRLHF leaves part keys out of its batch-wide means; rollouts.jsonl of any backend gives the same
per-part keys per step."""

from __future__ import annotations

import math

from crossgym.adapters.trl.rewards import reward_functions
from crossgym.config import parse_run_config
from crossgym.protocol.task import Completion
from crossgym.rollout.tasks import run_tasks
from crossgym.scoring import RecordWriter, RewardRule, iter_records
from crossgym.scoring.parts import part_key, part_metrics_by_step, part_of

RUN = parse_run_config({"model": "m", "tasks": [
    {"name": "math", "source": "arithmetic", "params": {"n": 4, "seed": 3}},
    {"name": "words", "source": "word_problems", "params": {"n": 4, "seed": 3},
     "verifiers": [{"name": "length", "params": {"max": 5, "unit": "chars"}, "weight": 0.5}]},
]})


def _batch():
    tasks = run_tasks(RUN)
    texts = [str(t.answer) if i % 2 == 0 else "no idea" for i, t in enumerate(tasks)]
    return tasks, texts


def _trl_log(rule, tasks, texts, sink=None):
    logged: dict[str, list[float]] = {}
    funcs, weights = reward_functions(rule, tasks, sink=sink)
    # TRL hands every reward function the same lists (so the batch is scored, logged and recorded once)
    batch = {"completions": [[{"role": "assistant", "content": t}] for t in texts],
             "task": [t.to_json() for t in tasks], "completion_ids": [[1] * len(t) for t in texts],
             "log_metric": lambda k, v: logged.setdefault(k, []).append(v)}
    columns = [f(**batch) for f in funcs]
    return logged, columns, weights


def test_trl_logs_each_parts_metrics_for_its_own_samples(tmp_path):
    rule = RewardRule.from_run(RUN)
    tasks, texts = _batch()
    sink = RecordWriter(tmp_path / "rollouts.jsonl", backend="trl", model="m")
    logged, columns, weights = _trl_log(rule, tasks, texts, sink=sink)
    scored = [rule.score(t, Completion.from_text(x)) for t, x in zip(tasks, texts, strict=True)]
    for part in ("math", "words"):
        mine = [s for s in scored if s.part == part]
        assert logged[part_key(part, "reward")] == [s.reward for s in mine]
        assert logged[part_key(part, "passed")] == [float(s.verdict.passed) for s in mine]
        assert logged[part_key(part, "turns")] == [1.0] * len(mine)
        lengths = [float(len(x)) for t, x in zip(tasks, texts, strict=True) if part_of(t) == part]
        assert logged[part_key(part, "completion_length")] == lengths
    # the per-part extra term is a TRL column that is None (left out of TRL's sum) on the other part's rows
    col = columns[[f.name for f in reward_functions(rule, tasks)[0]].index("extra/words/length")]
    assert [c is None for c in col] == [part_of(t) != "words" for t in tasks]
    trl_sums = [sum(w * v for w, v in zip(weights, row, strict=True) if v is not None) for row in zip(*columns, strict=True)]
    assert trl_sums == [s.reward for s in scored]
    # the same per-part keys, per step, from the records TRL wrote
    by_step = part_metrics_by_step(iter_records(tmp_path / "rollouts.jsonl"))
    (step_metrics,) = by_step.values()
    for part in ("math", "words"):
        mine = [s for s in scored if s.part == part]
        assert math.isclose(step_metrics[part_key(part, "reward")], sum(s.reward for s in mine) / len(mine))
        assert step_metrics[part_key(part, "passed")] == sum(s.verdict.passed for s in mine) / len(mine)


def test_verl_and_openrlhf_keep_one_key_set_per_sample():
    from crossgym.adapters.openrlhf.scoring import QueryScorer, ScoreConfig
    from crossgym.adapters.verl.reward import TASK_KEY, score

    rule = RewardRule.from_run(RUN)
    tasks, texts = _batch()
    verl = [score(x, {TASK_KEY: t.to_json()}, rule=rule) for t, x in zip(tasks, texts, strict=True)]
    assert len({frozenset(d) for d in verl}) == 1  # veRL stacks them into arrays
    assert "crossgym/extra/words/length" in verl[0]
    assert not any(k.startswith("crossgym/part/") for k in verl[0])
    scored = [rule.score(t, Completion.from_text(x)) for t, x in zip(tasks, texts, strict=True)]
    assert [d["score"] for d in verl] == [s.reward for s in scored]
    reply = QueryScorer(ScoreConfig(rule=rule, strip_tokens=())).reply(["P" + x for x in texts], ["P"] * len(texts),
                                                                      [t.to_json() for t in tasks])
    assert reply["rewards"] == [s.reward for s in scored]
    assert not any(k.startswith("crossgym/part/") for k in reply["extra_logs"])


def test_reward_curve_draws_one_line_per_part(tmp_path):
    import json

    from crossgym.adapters.trl.outputs import plot_reward_curve, reward_series

    rows = [{"step": s, "reward": 0.1 * s, "rewards/exact_match/mean": 0.1, part_key("math", "reward"): 0.2 * s,
             part_key("words", "reward"): 0.05 * s} for s in range(1, 4)]
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert set(reward_series(rows)) == {"reward", part_key("math", "reward"), part_key("words", "reward")}
    png = plot_reward_curve(path, tmp_path / "curve.png")
    assert png is not None and png.stat().st_size > 1000
