"""A Nemotron-shaped blend (37 parts over 21 verifiers) resolves to the counts its config asks for, and each
backend's rows for it are built in bounded chunks (parquet row groups, Arrow record batches, JSONL chunks) that
hold exactly the rows of the one-shot path. Not timed: bench/blend_scale.py measures the 1.2M-row figures."""

from __future__ import annotations

import collections
import json
from pathlib import Path
from typing import Any

import pytest

from crossgym.adapters.kit.files import describe_lines, write_files
from crossgym.adapters.kit.rows import cycled
from crossgym.config import RunConfig
from crossgym.plugins.manager import registry
from crossgym.rollout.blend import resolve_blend
from crossgym.scoring.parts import part_of

ROWS = 50_000
CHUNK = 10_000

#: (source, params, share, environment): 21 parts from registered sources with params
SOURCES: list[tuple[str, dict[str, Any], Any, dict[str, Any] | None]] = [
    ("arithmetic", {"n": 40, "seed": 0, "difficulty": 1}, 4, None),
    ("arithmetic", {"n": 40, "seed": 1, "difficulty": 3}, 3, None),
    ("arithmetic", {"n": 30, "seed": 2, "difficulty": 5}, 2, None),
    ("word_problems", {"n": 30, "seed": 0}, 2, None),
    ("word_problems", {"n": 30, "seed": 1, "verifier": "math"}, 2, None),
    ("instructions", {"n": 20, "seed": 0, "difficulty": 1}, 1, None),
    ("instructions", {"n": 20, "seed": 1, "difficulty": 3}, 1, None),
    ("json_addition", {"split": "train"}, ("count", 3000), None),
    ("json_addition", {"n": 30, "digits": 2}, 1, None),
    ("json_extraction", {"n": 20, "seed": 0}, 2, None),
    ("json_extraction", {"n": 20, "seed": 1, "verifier": "json_schema"}, 1, None),
    ("multiple_choice", {"n": 20, "seed": 0}, 1, None),
    ("multiple_choice", {"n": 20, "seed": 1, "difficulty": 3}, 1, None),
    ("python_functions", {"n": 10, "seed": 0}, 2, None),
    ("python_functions", {"n": 10, "seed": 1, "env": "code"}, 2, {"name": "code", "max_turns": 2}),
    ("shell_tasks", {"n": 10, "seed": 0}, 1, None),
    ("shell_tasks", {"n": 10, "seed": 1, "env": "shell"}, 1, {"name": "shell", "max_turns": 4}),
    ("sql", {"n": 5, "seed": 0}, 1, None),
    ("sql", {"n": 5, "seed": 1, "env": "sql"}, ("count", 777), {"name": "sql", "max_turns": 3}),
    ("tool_choice", {"n": 20, "seed": 0, "mode": "call"}, 2, None),
    ("tool_choice", {"n": 20, "seed": 1, "mode": "env"}, 2, {"name": "tool_use", "max_turns": 4}),
]
#: (verifier, tasks in its file, share): 16 parts from JSONL task files
FILES: list[tuple[str, int, Any]] = [
    ("exact_match", 60, 3), ("exact_match", 25, ("count", 5000)), ("regex", 30, 2), ("regex", 20, 1),
    ("format_tags", 30, 2), ("format_tags", 20, ("count", 1234)), ("length", 20, 1), ("length", 15, 1),
    ("composite", 20, 1), ("composite", 10, 1), ("json_valid", 20, 1), ("json_valid", 10, 1),
    ("code_output", 10, 1), ("string_similarity", 20, 1), ("xml_valid", 20, 1), ("yaml_valid", 20, 1),
]


def _share(share: Any) -> dict[str, Any]:
    return {"count": share[1]} if isinstance(share, tuple) else {"weight": share}


def _task_file(path: Path, verifier: str, n: int) -> str:
    examples = [e.task for e in registry("verifiers").load(verifier).examples()]
    with path.open("w", encoding="utf-8") as f:
        for i in range(n):
            doc = examples[i % len(examples)].to_dict()
            doc["id"] = f"{verifier}-{i}"
            doc["prompt"] = [dict(m, content=f"{m['content']} #{i}") if m["role"] == "user" else m
                             for m in doc["prompt"]]
            f.write(json.dumps(doc) + "\n")
    return str(path)


@pytest.fixture(scope="module")
def blend_run(tmp_path_factory: pytest.TempPathFactory) -> RunConfig:
    d = tmp_path_factory.mktemp("blend")
    parts: list[dict[str, Any]] = []
    for k, (source, params, share, env) in enumerate(SOURCES):
        part = {"name": f"s{k}-{source}", "source": source, "params": params, **_share(share)}
        parts.append(part | ({"environment": env} if env else {}))
    for k, (verifier, n, share) in enumerate(FILES):
        parts.append({"name": f"f{k}-{verifier}", "files": [_task_file(d / f"{k}.jsonl", verifier, n)],
                      **_share(share)})
    return RunConfig.model_validate({"model": "m", "seed": 3, "output_dir": str(d / "out"),
                                     "tasks": {"size": ROWS, "parts": parts}})


@pytest.fixture(scope="module")
def blend(blend_run: RunConfig):  # type: ignore[no-untyped-def]
    return resolve_blend(blend_run.tasks, seed=blend_run.seed, run=blend_run)  # type: ignore[arg-type]


def test_37_parts_over_21_verifiers_resolve_to_the_configured_counts(blend_run, blend) -> None:  # type: ignore[no-untyped-def]
    parts = blend_run.tasks.parts
    assert len(parts) == 37 and len(blend.parts) == 37
    assert len({t.verifier.name for t in blend.tasks}) == 21
    assert len(blend.tasks) == ROWS == sum(p.rows for p in blend.parts)
    fixed = {p.name: p.count for p in parts if p.count is not None}
    weights = {p.name: p.weight for p in parts if p.weight is not None}
    budget = ROWS - sum(fixed.values())
    total_w = sum(weights.values())
    per_part = collections.Counter(part_of(t) for t in blend.tasks)
    for plan in blend.parts:
        assert per_part[plan.name] == plan.rows  # every row is stamped with its part
        if plan.name in fixed:
            assert plan.rows == fixed[plan.name]
        else:  # largest-remainder rounding of the weight's share of what the counts leave
            assert abs(plan.rows - budget * weights[plan.name] / total_w) < 1
    for plan in blend.parts:  # without replacement within an epoch: no task more than once more than another
        seen = collections.Counter(t.id for t in blend.tasks if part_of(t) == plan.name)
        assert len(seen) == min(plan.pool, plan.rows)
        assert max(seen.values()) - min(seen.values()) <= 1


def test_verl_parquet_is_written_in_row_groups_with_the_one_shot_rows(blend_run, blend, tmp_path) -> None:  # type: ignore[no-untyped-def]
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    from crossgym.adapters.verl import dataset

    rows = dataset.Rows(blend.tasks, blend_run, episodes=True)
    path = dataset.write_parquet(rows, tmp_path / "train.parquet", chunk_rows=CHUNK)
    meta = pq.ParquetFile(path).metadata
    assert (meta.num_rows, meta.num_row_groups) == (ROWS, ROWS // CHUNK)
    # the one-shot path: every row built on its own (no per-task cache) and converted in one table
    names = dataset.tool_names(blend.tasks)
    one_shot = [dataset.task_row(t, i, blend_run, episodes=True, tool_names=names) for i, t in enumerate(blend.tasks)]
    assert pq.read_table(path).to_pylist() == pa.Table.from_pylist(one_shot).to_pylist()
    assert dataset.describe(rows).startswith(f"(parquet) {ROWS} rows; columns: data_source, prompt")


def test_trl_dataset_is_written_in_batches_with_the_one_shot_rows(blend, tmp_path) -> None:  # type: ignore[no-untyped-def]
    datasets = pytest.importorskip("datasets")
    from crossgym.adapters.trl.rows import TASK_COLUMN, TASK_INDEX_KEY, task_dataset

    ds = task_dataset(blend.tasks, episodes=True, cache_dir=tmp_path, chunk_rows=CHUNK)
    assert len(ds) == ROWS and len(ds.data.table.to_batches()) >= ROWS // CHUNK  # memory-mapped, in batches
    one_shot = [{"prompt": [{"role": m.role, "content": m.content, TASK_INDEX_KEY: i} for m in t.prompt],
                 TASK_COLUMN: t.to_json()} for i, t in enumerate(blend.tasks)]
    assert ds.to_list() == datasets.Dataset.from_list(one_shot).to_list()


def test_openrlhf_prompts_are_streamed_with_the_one_shot_lines(blend_run, blend, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from crossgym.adapters.openrlhf.convert import dataset_file, task_row

    rows = ROWS + 123  # more rows than the blend: a second, reshuffled pass
    prompts = dataset_file(blend.tasks, rows=rows, seed=blend_run.seed)
    path = tmp_path / "prompts.jsonl"
    write_files({str(path): prompts})
    one_shot = "".join(json.dumps(task_row(t), ensure_ascii=False) + "\n"
                       for t in cycled(blend.tasks, rows, seed=blend_run.seed))
    assert path.read_text(encoding="utf-8") == one_shot
    first = one_shot.split("\n", 2)
    assert describe_lines(prompts) == f"# {rows} rows; the first 2:\n{first[0]}\n{first[1]}\n" == \
        describe_lines(one_shot)
