"""RunConfig: YAML loading and one-line errors naming the file, the field and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from crossgym.config import load_run_config, parse_run_config
from crossgym.protocol.errors import ConfigError

GOOD = """
model: ./tiny
tasks: {source: arithmetic, params: {n: 16, seed: 1}}
grpo: {num_generations: 4, per_device_train_batch_size: 8, learning_rate: 1.0e-5, variant: dr_grpo}
verifiers: [{name: length, params: {max_chars: 200}, weight: 0.1}]
on_error: none
"""


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "run.yaml"
    p.write_text(text)
    return p


def test_good_config_loads(tmp_path: Path) -> None:
    run = load_run_config(_write(tmp_path, GOOD))
    assert run.grpo.num_generations == 4 and run.grpo.variant == "dr_grpo"
    assert run.on_error == "none" and run.verifiers[0].weight == 0.1
    assert run.backend == "trl" and run.engine == "hf"


def test_relative_task_files_resolve_against_config(tmp_path: Path) -> None:
    run = load_run_config(_write(tmp_path, "model: m\ntasks: {files: [data/t.jsonl]}\n"))
    assert run.tasks.files == [str(tmp_path / "data/t.jsonl")]


@pytest.mark.parametrize(("text", "field", "hint"), [
    ("model: m\ntasks: {source: a}\ngrpo: {learning_rat: 0.1}\n", "grpo.learning_rat", "did you mean 'learning_rate'"),
    ("tasks: {source: a}\n", "model", "add the field"),
    ("model: m\ntasks: {source: a}\ngrpo: {learning_rate: fast}\n", "grpo.learning_rate", "'fast'"),
    ("model: m\ntasks: {}\n", "tasks", "either 'source'"),
    ("model: m\ntasks: {source: a}\ngrpo: {num_generations: 3, per_device_train_batch_size: 8}\n", "grpo",
     "multiple of"),
    ("model: m\ntasks: {source: a}\ngrpo: {variant: ppo}\n", "grpo.variant", "grpo"),
    # no NaN or infinity anywhere: an infinite blend weight was a traceback, a NaN reward weight trained on NaN
    ("model: m\ntasks: [{name: a, source: a, weight: .inf}, {name: b, source: a, weight: 1}]\n",
     "tasks.parts.0.weight", "finite"),
    ("model: m\ntasks: {source: a}\ntask_weight: .nan\n", "task_weight", "finite"),
    ("model: m\ntasks: {source: a}\nverifiers: [{name: length, weight: .inf}]\n", "verifiers.0.weight", "finite"),
    ("model: m\ntasks: {source: a}\non_error: .inf\n", "on_error", "finite"),
    ("model: m\ntasks: {source: a}\ngrpo: {temperature: .inf}\n", "grpo.temperature", "finite"),
    # a blend's rows are bounded (10,000,000,000 ran minutes, then nothing)
    ("model: m\ntasks: [{name: a, source: a, count: 10000000000}]\n", "tasks.parts.0.count", "10000000"),
    ("model: m\ntasks: {parts: [{name: a, source: a, weight: 1}], size: 10000000000}\n", "tasks.size", "10000000"),
])
def test_errors_name_file_field_and_fix(tmp_path: Path, text: str, field: str, hint: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_run_config(path)
    line = str(info.value)
    assert "\n" not in line
    assert str(path) in line and field in line and hint in line


def test_invalid_yaml_names_the_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "model: m\ntasks: [unclosed\n")
    with pytest.raises(ConfigError, match=r"run\.yaml:\d+: invalid YAML"):
        load_run_config(path)


def test_missing_file_and_non_mapping(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config file not found"):
        load_run_config(tmp_path / "nope.yaml")
    with pytest.raises(ConfigError, match="expected a mapping"):
        parse_run_config(["a"], source="x.yaml")


def test_with_overrides_revalidates() -> None:
    run = parse_run_config({"model": "m", "tasks": {"source": "a"}})
    assert run.with_overrides(backend="verl").backend == "verl"
    with pytest.raises(ValueError, match="seed"):  # pydantic's ValidationError
        run.with_overrides(seed="x")


def test_a_task_file_holding_line_separators_in_its_text_reads_back(tmp_path):  # type: ignore[no-untyped-def]
    """Task.to_json writes U+2028, U+0085 and other separators raw (ensure_ascii=False): tasks.files and
    `crossgym verify --task` split the file with str.splitlines(), which breaks a line at them ("not JSON")."""
    from crossgym.rollout.tasks import read_task_file
    from crossgym.verifiers.text import ExactMatch
    from crossgym.verify_cmd import read_task

    tasks = [ExactMatch.task("Paris", prompt=f"one{sep}two", task_id=f"t{i}")
             for i, sep in enumerate(("\u2028", "\x85", "\x1e", "\x0c"))]
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(t.to_json() + "\n" for t in tasks), encoding="utf-8")
    assert read_task_file(path) == tasks
    assert read_task(path, "t1") == tasks[1]


def test_a_nan_on_error_is_no_reward_as_the_word_nan_is(tmp_path: Path) -> None:
    assert load_run_config(_write(tmp_path, "model: m\ntasks: {source: a}\non_error: .nan\n")).on_error == "none"


def test_weights_past_the_float_range_together_share_the_blend() -> None:
    """Two weights of 1e308 summed to infinity: every share was NaN (a traceback turning it into rows)."""
    from crossgym.config.run import BlendConfig
    from crossgym.rollout.blend import row_counts

    blend = BlendConfig.model_validate({"parts": [{"name": "a", "source": "x", "weight": 1e308},
                                                  {"name": "b", "source": "x", "weight": 1e308}], "size": 10})
    assert row_counts(blend, [4, 4]) == [5, 5]
