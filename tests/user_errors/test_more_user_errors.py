"""More mistakes a user makes (a second audit), each answered as the house rule says: a bad CLI argument, config
or file is ONE line on stderr, "crossgym: error: ...", exit 2, naming what, where and the fix, in the user's words
(the flag they typed, the task field they wrote, what they wrote: NaN, not None), never Python's ("KeyError:
'task'", "'int' object is not iterable"); a bad task is an exception Verdict naming what is wrong with it.

A. compare on a tasks file: the one line, not one warning per record before it.
B. serve --nemo-gym-verifier with an unknown name: refused at startup with a did-you-mean.
C. serve's flag errors name the flag (--timeout), not the settings field (request_timeout_s).
D. task fields of the wrong type (prompt, metadata, tools) and the jsonl source's columns param.
E. verifier param errors carry a fix, and a NaN param is reported as NaN.
F. the jsonl source's verifier param applies to rows that are whole Tasks, and is checked.
G. numeric: an answer that is an object is a bad task, not the number in its text.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_lines import one_line as _one_line

from crossgym.cli import main
from crossgym.protocol.errors import ConfigError, VerifierError
from crossgym.protocol.task import Completion, Task, Verdict
from crossgym.scoring.provenance import Provenance
from crossgym.scoring.records import append_records, rollout_record

TASK = {"id": "t1", "prompt": [{"role": "user", "content": "Compute 2 + 3. Answer in <answer></answer>."}],
        "answer": 5, "verifier": {"name": "numeric", "params": {}}}


@pytest.fixture()
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty folder the command runs from, offline."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    yield tmp_path


def _jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _rollouts(path: Path, n: int = 2) -> Path:
    task = Task.from_dict(TASK)
    records = [rollout_record(Task.from_dict({**TASK, "id": f"t{i}"}), Completion.from_text("<answer>5</answer>"),
                              Verdict.ok(1.0, reason="ok"), provenance=Provenance.new(task.verifier, source="eval"))
               for i in range(n)]
    append_records(path, records)
    return path


# ------------------------------------------------------------------ A. compare on a tasks file
def test_compare_on_a_tasks_file_is_one_line_without_a_warning_per_record(
        work: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    tasks = _jsonl(work / "tasks.jsonl", [{**TASK, "id": f"t{i}"} for i in range(300)])
    runs = _rollouts(work / "r.jsonl")
    with caplog.at_level(logging.WARNING):
        line = _one_line(["compare", str(tasks), str(runs)], capsys)
    assert "none of its 300 records is a rollout (it holds tasks)" in line and "tasks.jsonl" in line
    assert "KeyError" not in line and not caplog.records  # no warning line per record before the error


def test_compare_warns_held_back_lines_once_rollouts_follow_and_in_plain_words(
        work: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    """A tasks line before the rollouts is still named (nothing is passed over in silence), without Python's words."""
    mixed = work / "mixed.jsonl"
    _jsonl(mixed, [TASK])
    _rollouts(mixed)
    with pytest.raises(SystemExit) as exc, caplog.at_level(logging.WARNING):
        main(["compare", str(mixed), str(mixed), "--json"])
    assert exc.value.code == 0, capsys.readouterr().err
    assert f"{mixed}:1: skipping a record that is not a rollout" in caplog.text
    assert "it holds a task" in caplog.text and "KeyError" not in caplog.text


def test_a_record_that_is_no_rollout_is_said_in_the_records_words() -> None:
    from crossgym.scoring.records import why_not_a_rollout

    assert "KeyError" not in why_not_a_rollout(TASK, KeyError("task"))
    assert "no 'completion', 'verdict' fields" in why_not_a_rollout({"task": TASK}, KeyError("completion"))
    assert "'verdict' must be an object, got a number (1)" in why_not_a_rollout(
        {"task": TASK, "completion": "x", "verdict": 1}, TypeError("x"))


# ------------------------------------------------------------------ B and C. serve, refused before it serves
@pytest.mark.parametrize(("options", "words"), [
    ({"nemo_gym": True, "nemo_gym_verifier": "numerik"}, ["--nemo-gym-verifier", "unknown verifier 'numerik'",
                                                          "did you mean 'numeric'?"]),
    ({"nemo_gym_verifier": "numeric"}, ["--nemo-gym-verifier", "without --nemo-gym"]),
    ({"request_timeout_s": 0.0}, ["--timeout", "got 0.0", "e.g. --timeout 120"]),
    ({"max_concurrency": 0}, ["--max-concurrency", "e.g. --max-concurrency 32"]),
    ({"session_idle_s": -1.0}, ["--session-idle", "e.g. --session-idle 600"]),
    ({"max_batch": 0}, ["--max-batch"]),
    ({"max_sessions": 0}, ["--max-sessions"]),
    ({"max_body_mb": 1e-9}, ["--max-body-mb", "at least one byte"]),  # (rounded to 0 bytes: it named max_body_bytes)
    ({"max_body_mb": float("nan")}, ["--max-body-mb"]),
])
def test_serve_options_are_checked_at_startup_naming_the_flag(options: dict[str, Any], words: list[str]) -> None:
    from crossgym.serve.command import build_settings

    with pytest.raises(ConfigError) as exc:
        build_settings(**options)
    text = str(exc.value)
    assert "(fix: " in text and "request_timeout_s" not in text and "session_idle_s" not in text, text
    for w in words:
        assert w in text, (w, text)


def test_serve_settings_from_python_name_the_field(work: Path) -> None:
    from crossgym.serve.settings import ServeSettings

    with pytest.raises(ConfigError, match=r"serve request_timeout_s: .*fix: pass a value above 0"):
        ServeSettings(request_timeout_s=0)
    with pytest.raises(ConfigError, match=r"serve nemo_gym_verifier: unknown verifier 'numerik'.*did you mean"):
        ServeSettings(nemo_gym=True, nemo_gym_verifier="numerik")
    assert ServeSettings(nemo_gym=True, nemo_gym_verifier="numeric").nemo_gym_verifier == "numeric"


def test_serve_cli_refuses_an_unknown_nemo_gym_verifier_before_binding(work: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Through the CLI: the one line, before any port is bound or a server starts (port 1 would need root)."""
    line = _one_line(["serve", "--nemo-gym", "--nemo-gym-verifier", "numerik", "--port", "1"], capsys)
    assert "--nemo-gym-verifier: unknown verifier 'numerik'" in line and "did you mean 'numeric'?" in line
    line = _one_line(["serve", "--timeout", "0", "--port", "1"], capsys)
    assert line.startswith("crossgym: error: --timeout: must be a positive number") and "request_timeout" not in line


# ------------------------------------------------------------------ D. task fields of the wrong type
@pytest.mark.parametrize(("field", "value", "words"), [
    ("prompt", 5, "'prompt' must be text or a list of messages, got a number (5)"),
    ("prompt", [5], "'prompt': message 1: a message must be an object"),
    ("metadata", [1], "'metadata' must be an object, got a list ([1])"),
    ("tools", "x", "'tools' must be a list of tool specs"),
    ("tools", ["x"], "'tools' item 1: a tool spec must be an object"),
    ("tools", [{"name": "f", "parameters": "x"}], "tool 'f': 'parameters' must be an object"),
])
def test_a_task_field_of_the_wrong_type_names_the_field(field: str, value: Any, words: str) -> None:
    with pytest.raises(ValueError) as exc:  # (callers catch ValueError and add the file:line)
        Task.from_dict({**TASK, field: value})
    assert words in str(exc.value), str(exc.value)
    assert "object is not iterable" not in str(exc.value) and "has no attribute" not in str(exc.value)


def test_empty_tools_and_metadata_still_read_as_none() -> None:
    task = Task.from_dict({**TASK, "tools": None, "metadata": []})
    assert task.tools == () and task.metadata == {}


@pytest.mark.parametrize("argv", [
    ["verify-batch", "{bad}"],
    ["eval", "--tasks", "{bad}", "--model", "m"],
    ["tasks", "jsonl", "--params", '{"path": "{bad}"}'],
])
def test_a_bad_task_field_is_one_line_with_file_and_line(work: Path, argv: list[str],
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    bad = {**TASK, "prompt": 5}
    rows = [{"task": TASK, "completion": "5"}, {"task": bad, "completion": "5"}] if argv[0] == "verify-batch" \
        else [TASK, bad]
    path = _jsonl(work / "bad.jsonl", rows)
    line = _one_line([a.replace("{bad}", str(path)) for a in argv], capsys)
    assert f"{path}:2:" in line and "'prompt' must be text or a list of messages, got a number (5)" in line


def test_jsonl_source_columns_of_the_wrong_type_names_the_param(work: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    path = _jsonl(work / "t.jsonl", [TASK])
    line = _one_line(["tasks", "jsonl", "--params", json.dumps({"path": str(path), "columns": 5})], capsys)
    assert "task source 'jsonl': columns: must be an object of task field -> column name, got a number" in line
    line = _one_line(["tasks", "jsonl", "--params", json.dumps({"path": str(path), "columns": {"prompt": 5}})],
                     capsys)
    assert "the column for 'prompt' must be a column name (text)" in line


# ------------------------------------------------------------------ E. verifier params: a fix, and what was written
@pytest.mark.parametrize(("params", "words"), [
    ('{"rel_tol": "x"}', ["rel_tol must be a non-negative number, got 'x'"]),
    ('{"rel_tol": NaN}', ["rel_tol must be a non-negative number, got NaN"]),
    ('{"fallback": "first"}', ["fallback='first'"]),
])
def test_numeric_param_errors_have_a_fix_and_say_what_was_written(
        work: Path, params: str, words: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    task = _jsonl(work / "task.jsonl", [TASK])
    line = _one_line(["verify", "--task", str(task), "--verifier", "numeric", "--params", params,
                      "--completion", "5"], capsys)
    assert "got None" not in line
    for w in words:
        assert w in line, (w, line)


def test_a_bad_regex_pattern_in_a_config_has_a_fix() -> None:
    from crossgym.api import load_verifier

    with pytest.raises(VerifierError) as exc:
        load_verifier({"name": "regex", "params": {"pattern": "(["}})
    assert "bad pattern '(['" in str(exc.value) and "(fix: " in str(exc.value)


@pytest.mark.parametrize(("name", "params"), [
    ("regex", {"mode": "x"}), ("regex", {"which": "x"}), ("regex", {"mode": "extract"}),
    ("numeric", {"percent": "x"}), ("exact_match", {"extract": "x"}), ("exact_match", {"timeout": 0}),
    ("multiple_choice", {"num_options": 1}), ("code_output", {"compare": "x"}), ("code_output", {"language": "x"}),
    ("code_output", {"run_timeout": 0}), ("code_tests", {"run_timeout": 0}), ("composite", {"components": []}),
    ("composite", {"components": [{"verifier": "numeric"}], "mode": "x"}),
    ("composite", {"components": [{"verifier": "numeric", "weight": -1}]}),
    ("composite", {"components": [{"verifier": "numeric", "weight": 0}]}),
    ("composite", {"components": [{"verifier": 5}]}), ("composite", {"components": [5]}),
    ("composite", {"components": [{"verifier": "numeric"}], "on_error": "x"}),
    ("composite", {"components": [{"verifier": "numeric"}], "threshold": "x"}),
    ("format_tags", {"reward": "x"}), ("format_tags", {"tags": []}), ("format_tags", {"tags": ["a b"]}),
    ("format_tags", {"tags": ["a", "a"]}), ("json_match", {"rel_tol": -1}), ("json_match", {"reward": "x"}),
    ("json_match", {"fenced": "x"}), ("json_schema", {"schema": 5}), ("length", {"max": -1}),
    ("length", {"max": 5, "unit": "x"}), ("length", {"max": 5, "mode": "x"}), ("length", {"max": 5, "slack": 0}),
    ("shell", {"command_timeout": 0}), ("string_similarity", {"metric": "x"}),
    ("string_similarity", {"reward": "x"}), ("string_similarity", {"threshold": 2}),
    ("judge", {"base_url": "ftp://x", "model": "m"}), ("judge", {"base_url": "http://x", "model": "m", "scale": 0}),
    ("judge", {"base_url": "http://x", "model": "m", "api_key_env": "sk-1"}),
    ("judge", {"base_url": "http://x", "model": "m", "threshold": -1}),
    ("judge", {"base_url": "http://x", "model": "m", "prompt": "{nope}"}),
    ("sql", {"rows": "x"}), ("sql", {"order_matters": "x"}), ("sql", {"column_order": 1}),
    ("sql", {"float_digits": 99}), ("sql", {"max_rows": 0}), ("sql", {"query_timeout": 0}),
    ("reasoning_gym", {"extract": "x"}), ("reasoning_gym", {"threshold": 0}), ("instructions", {"reward": "x"}),
    ("tool_call", {"strings": "x"}), ("tool_call", {"scope": "x"}), ("math", {"float_rounding": 0}),
])
def test_every_builtin_param_check_has_a_fix(name: str, params: dict[str, Any]) -> None:
    from crossgym.api import load_verifier

    try:
        load_verifier({"name": name, "params": params})
    except VerifierError as exc:
        assert "(fix: " in str(exc), str(exc)
    except ConfigError as exc:  # a verifier this machine lacks a package for says how to install it
        pytest.skip(str(exc))
    else:
        pytest.fail(f"{name} {params} was accepted")


def test_the_nan_note_lists_several_values() -> None:
    from crossgym.api import _as_written, _non_finite

    written = _non_finite({"a": float("nan"), "b": [1.0, float("-inf")]})
    assert written == [("a", "NaN"), ("b[1]", "-Infinity")]
    assert "a = NaN, b[1] = -Infinity" in _as_written("x must be y, got None", written)


# ------------------------------------------------------------------ F. the jsonl source's verifier param
def test_jsonl_verifier_param_overrides_whole_task_rows(work: Path) -> None:
    import crossgym

    path = _jsonl(work / "t.jsonl", [TASK, {**TASK, "id": "t2"}])
    tasks = crossgym.load_tasks("jsonl", path=str(path), verifier={"name": "exact_match", "params": {}})
    assert [t.verifier.name for t in tasks] == ["exact_match", "exact_match"]
    assert [t.verifier.name for t in crossgym.load_tasks("jsonl", path=str(path))] == ["numeric", "numeric"]


def test_jsonl_verifier_param_unknown_is_one_line_with_did_you_mean(work: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    path = _jsonl(work / "t.jsonl", [TASK])
    line = _one_line(["tasks", "jsonl", "--params", json.dumps({"path": str(path), "verifier": "numerik"})], capsys)
    assert "task source 'jsonl': verifier: unknown verifier 'numerik'" in line and "did you mean 'numeric'?" in line
    line = _one_line(["tasks", "jsonl", "--params", json.dumps({"path": str(path), "verifier": 5})], capsys)
    assert "task source 'jsonl': verifier: a verifier is a registered name or an object" in line


# ------------------------------------------------------------------ G. numeric: an object answer is a bad task
@pytest.mark.parametrize("answer", [{"value": 5}, [{"value": 5}], [[5]]])
def test_numeric_refuses_an_answer_that_is_an_object(answer: Any) -> None:
    from crossgym.api import verify

    verdict = verify(Task.from_dict({**TASK, "answer": answer}), "<answer>5</answer>")
    assert verdict.error_kind == "exception" and not verdict.passed, verdict
    assert ("got dict" if isinstance(answer, dict) or isinstance(answer[0], dict) else "got list") in verdict.error
    assert verify(Task.from_dict({**TASK, "answer": [4, "5"]}), "<answer>5</answer>").passed
