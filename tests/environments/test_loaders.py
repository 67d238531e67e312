"""File loaders: JSONL (Task rows or mapped rows), Parquet and local Hugging Face datasets, with column mapping."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import crossgym
from crossgym.api import load_verifier
from crossgym.protocol.errors import ConfigError
from crossgym.protocol.task import Completion, Task

ROWS = [
    {"question": "What is 2+2?", "solution": "4", "level": "easy", "uid": "q1"},
    {"question": "Capital of Peru?", "solution": "Lima", "level": "easy", "uid": "q2"},
    {"question": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Spell cat backwards."}],
     "solution": "tac", "level": "medium", "uid": "q3"},
]
MAPPING = {"prompt": "question", "answer": "solution", "id": "uid"}


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def check_mapped(tasks: list[Task]) -> None:
    assert [t.id for t in tasks] == ["q1", "q2", "q3"]
    assert tasks[0].prompt[0].role == "user" and tasks[0].prompt[0].content == "What is 2+2?"
    assert [m.role for m in tasks[2].prompt] == ["system", "user"]
    assert tasks[1].answer == "Lima"
    assert tasks[0].metadata["level"] == "easy" and "question" not in tasks[0].metadata
    assert all(t.verifier.name == "exact_match" for t in tasks)
    v = load_verifier(tasks[1].verifier)
    assert v.verify(tasks[1], Completion.from_text("<answer>Lima</answer>")).passed


def test_jsonl_of_task_objects_round_trips(tmp_path: Path) -> None:
    tasks = crossgym.load_tasks("arithmetic", n=5, seed=1)
    p = write_jsonl(tmp_path / "tasks.jsonl", [t.to_dict() for t in tasks])
    assert crossgym.load_tasks("jsonl", path=str(p)) == tasks
    assert crossgym.load_tasks("jsonl", path=str(p), limit=2) == tasks[:2]
    assert crossgym.load_tasks("jsonl", path=str(p), n=3) == tasks[:3]
    shuffled = crossgym.load_tasks("jsonl", path=str(p), shuffle=True, seed=1)
    assert sorted(t.id for t in shuffled) == sorted(t.id for t in tasks)
    assert shuffled == crossgym.load_tasks("jsonl", path=str(p), shuffle=True, seed=1)
    moved = crossgym.load_tasks("jsonl", path=str(p), env="tool_use", system_prompt="Be exact.")
    assert moved[0].env == "tool_use" and moved[0].prompt[0].content == "Be exact."


def test_jsonl_rows_with_column_mapping(tmp_path: Path) -> None:
    p = write_jsonl(tmp_path / "qa.jsonl", ROWS)
    check_mapped(crossgym.load_tasks("jsonl", path=str(p), columns=MAPPING, verifier="exact_match"))


def test_prompt_template_and_generated_ids(tmp_path: Path) -> None:
    p = write_jsonl(tmp_path / "qa.jsonl", [{"q": "2+3", "a": 5}, {"q": "4*4", "a": 16}])
    tasks = crossgym.load_tasks("jsonl", path=str(p), prompt_template="Compute {q}. Answer in <answer></answer>.",
                                columns={"answer": "a"}, verifier={"name": "numeric", "params": {"rel_tol": 0}},
                                system_prompt="You are a calculator.")
    assert [t.id for t in tasks] == ["qa-0", "qa-1"]
    assert tasks[0].prompt[0].content == "You are a calculator."
    assert tasks[1].prompt[1].content == "Compute 4*4. Answer in <answer></answer>."
    assert tasks[1].verifier.params == {"rel_tol": 0}
    assert tasks[0].metadata == {"q": "2+3", "source": "jsonl"}


def test_per_row_verifier_column_wins(tmp_path: Path) -> None:
    rows = [{"prompt": "x", "answer": "1", "verifier": {"name": "numeric"}}, {"prompt": "y", "answer": "b"}]
    tasks = crossgym.load_tasks("jsonl", path=str(write_jsonl(tmp_path / "v.jsonl", rows)), verifier="exact_match")
    assert [t.verifier.name for t in tasks] == ["numeric", "exact_match"]


@pytest.mark.parametrize("rows, params, match", [
    ([{"question": "x"}], {"verifier": "exact_match"}, "no column 'prompt'"),
    ([{"prompt": "x"}], {}, "rows name no verifier"),
    ([[1, 2]], {"verifier": "exact_match"}, "a row must be a JSON object"),
    ([{"prompt": "x"}], {"verifier": "exact_match", "prompt_template": "{missing}"}, "prompt_template"),
    ([{"prompt": "x"}], {"verifier": "exact_match", "columns": {"question": "q"}}, "unknown task field"),
])
def test_mapping_errors_name_the_row_and_the_fix(tmp_path: Path, rows: list[Any], params: dict[str, Any],
                                                 match: str) -> None:
    p = write_jsonl(tmp_path / "bad.jsonl", rows)
    with pytest.raises(ConfigError, match=match):
        crossgym.load_tasks("jsonl", path=str(p), **params)


def test_invalid_json_line_and_missing_file(tmp_path: Path) -> None:
    p = tmp_path / "broken.jsonl"
    p.write_text('{"prompt": "x", "answer": 1}\n{not json\n')
    with pytest.raises(ConfigError, match=r"broken.jsonl:2: not valid JSON"):
        crossgym.load_tasks("jsonl", path=str(p), verifier="numeric")
    with pytest.raises(ConfigError, match="does not exist"):
        crossgym.load_tasks("jsonl", path=str(tmp_path / "nope.jsonl"))


def test_parquet_with_column_mapping(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    flat = [{**r, "question": r["question"] if isinstance(r["question"], str) else json.dumps(r["question"])}
            for r in ROWS]
    pq.write_table(pa.Table.from_pylist(flat), tmp_path / "qa.parquet")
    tasks = crossgym.load_tasks("parquet", path=str(tmp_path / "qa.parquet"), columns=MAPPING,
                                verifier="exact_match")
    assert [t.id for t in tasks] == ["q1", "q2", "q3"] and tasks[1].answer == "Lima"
    # chat-message prompts stored as a list-of-structs column
    pq.write_table(pa.Table.from_pylist([{"messages": [{"role": "user", "content": "hi"}], "answer": "x"}]),
                   tmp_path / "chat.parquet")
    chat = crossgym.load_tasks("parquet", path=str(tmp_path / "chat.parquet"), columns={"prompt": "messages"},
                               verifier="exact_match")
    assert chat[0].prompt[0].content == "hi" and chat[0].id == "chat-0"
    # a folder of parquet files
    folder = tmp_path / "many"
    folder.mkdir()
    pq.write_table(pa.Table.from_pylist(flat[:2]), folder / "a.parquet")
    pq.write_table(pa.Table.from_pylist(flat[2:]), folder / "b.parquet")
    assert len(crossgym.load_tasks("parquet", path=str(folder), columns=MAPPING, verifier="exact_match")) == 3


def test_local_hf_dataset_with_column_mapping(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    rows = [{**r, "question": r["question"] if isinstance(r["question"], str) else r["question"][1]["content"]}
            for r in ROWS]
    ds = datasets.Dataset.from_list(rows)
    ds.save_to_disk(str(tmp_path / "one"))
    tasks = crossgym.load_tasks("hf_dataset", path=str(tmp_path / "one"), columns=MAPPING, verifier="exact_match")
    assert [t.id for t in tasks] == ["q1", "q2", "q3"]
    dd = datasets.DatasetDict({"train": ds, "test": ds.select([0])})
    dd.save_to_disk(str(tmp_path / "dict"))
    test = crossgym.load_tasks("hf_dataset", path=str(tmp_path / "dict"), split="test", columns=MAPPING,
                               verifier="exact_match")
    assert [t.id for t in test] == ["q1"]
    with pytest.raises(ConfigError, match="pass split="):
        crossgym.load_tasks("hf_dataset", path=str(tmp_path / "dict"), columns=MAPPING, verifier="exact_match")
    with pytest.raises(ConfigError, match="no split 'dev'"):
        crossgym.load_tasks("hf_dataset", path=str(tmp_path / "dict"), split="dev", columns=MAPPING,
                            verifier="exact_match")
