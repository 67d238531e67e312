"""Bad data on the bulk paths (verify-batch, reverify, compare, eval's task files) found by the data-path audit:
a stored verdict of another type, a resume against an input that changed, a hard link or an unquoted glob as
arguments, Ctrl-C, repeated task ids and ids holding a lone surrogate. Each is refused in one line that names
where, or read correctly; none is scored silently wrong and no record is lost.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest
from cli_lines import one_line as _one_line

from crossgym.cli import main
from crossgym.protocol import Completion, Task, Verdict, VerifierSpec
from crossgym.scoring import Provenance, append_records, rollout_record


def _task(tid: str) -> Task:
    return Task(id=tid, prompt="p", answer="Paris", verifier=VerifierSpec("exact_match"), metadata={"source": "x"})


def _rollouts(path: Path, n: int = 4) -> list[dict[str, object]]:
    """``n`` eval-like rollout records (every one stored as failed), written to ``path``; returns them."""
    docs = [rollout_record(_task(f"x-{i}"), Completion.from_text("Rome"), Verdict.ok(0.0, reason="stored"),
                           provenance=Provenance.new(_task(f"x-{i}").verifier, source="eval", model="m"))
            for i in range(n)]
    append_records(path, docs)
    return docs


def _plain(path: Path, n: int) -> list[str]:
    """``n`` bare {task, completion} lines written to ``path``."""
    lines = [json.dumps({"task": _task(f"t{i}").to_dict(), "completion": "Paris" if i % 2 else "Rome"}) + "\n"
             for i in range(n)]
    path.write_text("".join(lines))
    return lines


# ------------------------------------------------------------------ a stored verdict of another type
@pytest.mark.parametrize(("verdict", "words"), [
    ({"reward": 0.0, "passed": "false"}, "'passed' must be true or false, got text ('false')"),
    ({"reward": "1.0", "passed": True}, "'reward' must be a number, got text ('1.0')"),
    ({"reward": True, "passed": True}, "'reward' must be a number, got true/false"),
    ({"reward": 0.0, "passed": 2}, "'passed' must be true or false, got a number (2)"),
])
def test_a_stored_verdict_of_another_type_is_refused_not_converted(verdict: dict[str, object], words: str) -> None:
    """Before: ``bool("false")`` made every such verdict a pass (compare, reverify and eval's resumed metrics
    counted failures as passes), and a reward of text or true/false was converted."""
    with pytest.raises(ValueError, match="a verdict's " + words.replace("(", r"\(").replace(")", r"\)")):
        Verdict.from_dict(verdict)


def test_a_stored_verdict_reads_the_types_writers_use() -> None:
    np = pytest.importorskip("numpy")
    assert Verdict.from_dict({"reward": 1, "passed": 1}) == Verdict(1.0, True)
    assert Verdict.from_dict({"reward": np.float32(0.5), "passed": np.bool_(True)}).passed is True
    none = Verdict.from_dict({"reward": None, "passed": None})
    assert none.reward != none.reward and none.passed is False  # null reward: NaN, "no reward"


def test_compare_does_not_count_a_text_false_as_a_pass(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                       caplog: pytest.LogCaptureFixture) -> None:
    a = tmp_path / "a.jsonl"
    docs = _rollouts(a)
    b = tmp_path / "b.jsonl"
    edited = [dict(d, verdict={**d["verdict"], "passed": "false"}) if i == 0 else d  # type: ignore[dict-item]
              for i, d in enumerate(docs)]
    b.write_text("".join(json.dumps(d) + "\n" for d in edited))
    with caplog.at_level(logging.WARNING), pytest.raises(SystemExit) as exc:
        main(["compare", str(a), str(b), "--json"])
    assert exc.value.code == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["b"]["skipped"] == 1 and doc["b"]["n_rollouts"] == 3
    assert f"{b}:1" in caplog.text and "'passed' must be true or false" in caplog.text


def test_reverify_names_why_the_first_record_is_no_rollout(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """A Parquet file whose ``passed`` is a text column: before, "none of its 2 records is a rollout", no why."""
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    par = tmp_path / "r.parquet"
    task = json.dumps(_task("t").to_dict())
    pq.write_table(pa.Table.from_pylist([{"task": task, "completion": "Paris",
                                          "verdict": json.dumps({"reward": 0.0, "passed": "False"})}] * 2), par)
    msg = _one_line(["reverify", str(par)], capsys)
    assert f"(the first: {par}:row 1: " in msg and "'passed' must be true or false, got text ('False')" in msg, msg


def test_a_line_that_is_null_is_named_in_json_words(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from crossgym.scoring.records import iter_records

    path = tmp_path / "r.jsonl"
    path.write_text('{"a": 1}\nnull\n')
    with caplog.at_level(logging.WARNING):
        assert list(iter_records(path)) == [{"a": 1}]
    assert f"{path}:2: ignoring a line that is not a JSON object (null)" in caplog.text
    assert "NoneType" not in caplog.text


# ------------------------------------------------------------------ verify-batch: resume against another input
def _refused_resume(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The error line of a refused resume (after its "resumed: N records" line): exit 2, no traceback."""
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert exc.value.code == 2 and "Traceback" not in err and len(lines) == 2, err
    assert lines[0].startswith("resumed: ") and lines[1].startswith("crossgym: error: --out: "), err
    return lines[1]


def test_resume_refuses_an_input_edited_between_its_checkpoints(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """Before: only --out's last record was checked, so an input edited (or reordered) before it was resumed,
    --out then holding verdicts of records the input no longer has."""
    from crossgym.serve.batch_cmd import verify_batch

    src = tmp_path / "in.jsonl"
    lines = _plain(src, 400)
    full = tmp_path / "full.jsonl"
    verify_batch(src, out=full, progress=False)
    kept = full.read_text().splitlines(keepends=True)[:300]
    out = tmp_path / "out.jsonl"
    edited = tmp_path / "edited.jsonl"  # record 200: no checkpoint there (every 4th by then)
    edited.write_text("".join(lines[:199]) + lines[199].replace('"Paris"', '"Lyon"') + "".join(lines[200:]))
    out.write_text("".join(kept))
    msg = _refused_resume(["verify-batch", str(edited), "--out", str(out), "--no-progress"], capsys)
    assert "--out's 300 records are not this input's first 300: one of them differs" in msg, msg
    assert out.read_text() == "".join(kept)  # left as it was
    moved = tmp_path / "moved.jsonl"  # one record moved from the front to record 300: named where it shows
    moved.write_text("".join(lines[1:300]) + lines[0] + "".join(lines[300:]))
    msg = _refused_resume(["verify-batch", str(moved), "--out", str(out), "--no-progress"], capsys)
    assert f"--out's record 1 is not this input's record at {moved}:1" in msg, msg
    verify_batch(src, out=out, progress=False)  # the right input: resumed, nothing lost or twice
    assert out.read_bytes() == full.read_bytes()


def test_a_hard_link_to_the_input_is_refused_as_the_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "in.jsonl"
    _plain(src, 3)
    link = tmp_path / "link.jsonl"
    os.link(src, link)
    msg = _one_line(["verify-batch", str(src), "--out", str(link), "--no-progress"], capsys)
    assert f"{link} is also an input file" in msg, msg
    assert link.read_text() == src.read_text()


def test_ctrl_c_says_what_is_kept_and_how_to_resume(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: typer made Ctrl-C a silent exit 130 (main's own 'interrupted' line was never reached)."""
    import crossgym.serve.batch_cmd as batch_cmd

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(batch_cmd, "verify_batch", interrupted)
    src = tmp_path / "in.jsonl"
    _plain(src, 3)
    out = tmp_path / "out.jsonl"
    with pytest.raises(SystemExit) as exc:
        main(["verify-batch", str(src), "--out", str(out), "--no-progress"])
    assert exc.value.code == 130
    err = capsys.readouterr().err
    assert f"interrupted; the records scored so far are kept in {out}: run the same command again to resume" in err


def test_a_ctrl_c_that_typer_swallowed_is_said(monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    import crossgym.cli as cli

    monkeypatch.setattr(cli, "app", lambda **kwargs: 130)  # what typer returns for a KeyboardInterrupt
    with pytest.raises(SystemExit) as exc:
        cli.main(["list"])
    assert exc.value.code == 130 and capsys.readouterr().err == "crossgym: interrupted\n"


@pytest.mark.parametrize("command", ["verify-batch", "reverify", "compare"])
def test_an_unquoted_glob_says_to_quote_it(tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str) -> None:
    files = [tmp_path / f"s{i}.jsonl" for i in range(3)]
    for f in files:
        _plain(f, 1)
    msg = _one_line([command, *map(str, files)], capsys)  # what the shell passes for shards/*.jsonl
    assert "unexpected extra argument" in msg and "quote it, e.g. 'shards/*.jsonl', or pass the folder" in msg, msg


# ------------------------------------------------------------------ eval's tasks
def test_a_repeated_task_id_names_both_tasks_and_the_file(tmp_path: Path) -> None:
    from crossgym.eval.run import load_task_list
    from crossgym.protocol.errors import ConfigError

    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(_task(t).to_json() + "\n" for t in ("a", "b", "a")))
    with pytest.raises(ConfigError) as exc:
        load_task_list(str(path))
    assert exc.value.where == str(path)
    assert f"task id 'a' is used twice (tasks 1 and 3 of {path}" in str(exc.value), str(exc.value)
    assert [t.id for t in load_task_list(str(path), limit=2)] == ["a", "b"]  # the first two are fine


def test_a_task_id_with_a_lone_surrogate_resets_its_environment() -> None:
    """Before: every episode of such a task (its id read from a JSON escape "\\ud800") failed in reset(): the
    id seeded random.Random, which encodes it as strict UTF-8. The seed of every other id is unchanged."""
    import random

    from crossgym.api import load_environment

    env = load_environment("single_turn")
    obs = env.reset(_task("\ud800"))
    assert obs.messages[0].content == "p"
    env.reset(_task("t-é"))
    assert env.rng.random() == random.Random("t-é").random()
