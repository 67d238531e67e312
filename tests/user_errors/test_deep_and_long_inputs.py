"""rt2 1-7 and 11: long option text, deep or huge JSON/YAML, bad completion files, unwritable outputs, corrupt
Parquet and damaged provenance are each one line and exit 2 (or a record skipped and named), never a traceback."""

from __future__ import annotations

import errno
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from crossgym.cli import main

FILES = Path(__file__).parent / "files"
DEEP = "[" * 100_000
HUGE = "9" * 5000


@pytest.fixture()
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    shutil.copy(FILES / "task.json", tmp_path / "task.json")
    task = json.loads((tmp_path / "task.json").read_text(encoding="utf-8"))
    (tmp_path / "deep.json").write_text(DEEP, encoding="utf-8")
    (tmp_path / "deep.jsonl").write_text(DEEP + "\n", encoding="utf-8")
    huge = json.dumps(task).replace(json.dumps(task["answer"]), HUGE, 1) if "answer" in task else "{\"id\": " + HUGE
    (tmp_path / "huge.json").write_text(huge, encoding="utf-8")
    (tmp_path / "huge.jsonl").write_text(huge + "\n", encoding="utf-8")
    (tmp_path / "good.jsonl").write_text(json.dumps({"task": task, "completion": {"messages": [
        {"role": "assistant", "content": "<answer>5</answer>"}]}}) + "\n",
                                         encoding="utf-8")
    yaml = "model: ./m\ntasks: {source: json_addition}\n"
    (tmp_path / "deep.yaml").write_text(yaml + "a: " + "[" * 5000 + "]" * 5000 + "\n", encoding="utf-8")
    (tmp_path / "huge.yaml").write_text(yaml + f"grpo: {{max_steps: {HUGE}}}\n", encoding="utf-8")
    (tmp_path / "bad.parquet").write_bytes(b"PAR1" + bytes(range(256)) * 2 + b"PAR1")
    for name, doc in {"c1": {"messages": 5}, "c2": {"messages": [{"role": "assistant", "content": "x"}],
                                                    "token_ids": ["a"]},
                      "c4": {"messages": [{"role": "assistant", "content": "x", "tool_calls": "x"}]},
                      "c5": {"messages": [{"role": "assistant", "content": "x"}], "logprobs": ["x"]}}.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(doc), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    yield tmp_path


def _one_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    captured = capsys.readouterr()
    assert exc.value.code == 2, (argv, exc.value.code, captured.err[-2000:])
    assert "Traceback" not in captured.err
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("crossgym: error: "), captured.err[-2000:]
    return lines[0]


LONG_PARAMS = json.dumps({"schema": {"type": "object", "properties": {f"f{i:03d}": {"type": "integer"}
                                                                      for i in range(12)}}})
CASES: list[tuple[str, list[str], list[str]]] = [
    ("params-deep-file", ["verify", "--task", "task.json", "--verifier", "numeric", "--params", "deep.json",
                          "--completion", "5"], ["deep.json", "nests too deeply"]),
    ("params-deep-text", ["verify", "--task", "task.json", "--verifier", "numeric", "--params", DEEP[:5000],
                          "--completion", "5"], ["--params", "nests too deeply"]),
    ("params-missing-file", ["verify", "--task", "task.json", "--verifier", "numeric", "--params", "./nope.json",
                             "--completion", "5"], ["nope.json", "not found"]),
    ("tasks-params-huge", ["tasks", "arithmetic", "--params", '{"n": ' + HUGE + "}"], ["--params", "digits"]),
    ("task-deep", ["verify", "--task", "deep.json", "--completion", "1"], ["deep.json", "nests too deeply"]),
    ("task-huge", ["verify", "--task", "huge.json", "--completion", "1"], ["huge.json", "digits"]),
    ("completion-deep", ["verify", "--task", "task.json", "--completion", "deep.json"],
     ["deep.json", "nests too deeply"]),
    ("completion-messages-int", ["verify", "--task", "task.json", "--completion", "c1.json"], ["c1.json", "'messages'"]),
    ("completion-token-ids", ["verify", "--task", "task.json", "--completion", "c2.json"], ["c2.json", "'token_ids'"]),
    ("completion-tool-calls", ["verify", "--task", "task.json", "--completion", "c4.json"],
     ["c4.json", "tool_calls"]),
    ("completion-logprobs", ["verify", "--task", "task.json", "--completion", "c5.json"], ["c5.json", "'logprobs'"]),
    ("jsonl-source-deep", ["tasks", "jsonl", "--params", '{"path": "deep.jsonl"}'], ["deep.jsonl:1", "deeply"]),
    ("jsonl-source-huge", ["tasks", "jsonl", "--params", '{"path": "huge.jsonl"}'], ["huge.jsonl:1", "digits"]),
    ("eval-tasks-deep", ["eval", "--tasks", "deep.jsonl", "--model", "m"], ["deep.jsonl:1", "deeply"]),
    ("synth-seeds-huge", ["synth", "arithmetic", "--seeds", "huge.jsonl", "-n", "1", "--out", "o.jsonl"],
     ["huge.jsonl:1", "digits"]),
    ("yaml-deep", ["plan", "deep.yaml"], ["deep.yaml", "nests too deeply"]),
    ("yaml-huge", ["plan", "huge.yaml"], ["huge.yaml", "digits"]),
    ("serve-config-huge", ["serve", "--config", "huge.yaml"], ["huge.yaml", "digits"]),
    ("parquet-corrupt", ["tasks", "parquet", "--params", '{"path": "bad.parquet"}'],
     ["bad.parquet", "not a readable Parquet file"]),
    ("parquet-not-parquet", ["tasks", "parquet", "--params", '{"path": "task.json"}'],
     ["task.json", "not a readable Parquet file"]),
]


@pytest.mark.parametrize(("argv", "words"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_bad_input_is_one_line_exit_2(work: Path, argv: list[str], words: list[str],
                                        capsys: pytest.CaptureFixture[str]) -> None:
    line = _one_line(argv, capsys)
    assert "(fix: " in line, line
    for w in words:
        assert w in line, (w, line)


def test_long_option_text_is_text_not_a_file_name(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Over 255 characters with no "/" was probed as a file name: OSError ENAMETOOLONG, a traceback."""
    with pytest.raises(SystemExit) as exc:
        main(["verify", "--task", "task.json", "--verifier", "json_schema", "--params", LONG_PARAMS,
              "--completion", '{"f000": 1}'])
    assert "Traceback" not in capsys.readouterr().err and exc.value.code in (0, 1)
    with pytest.raises(SystemExit) as exc:
        main(["verify", "--task", "task.json", "--completion", "word " * 100 + "<answer>5</answer>"])
    assert exc.value.code == 0 and capsys.readouterr().out.startswith("PASS")


@pytest.mark.parametrize("code", [errno.EROFS, errno.ENOSPC])
def test_a_read_only_or_full_disk_is_one_line_naming_the_path(work: Path, code: int,
                                                              monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """The partial file's removal fails on a read-only disk too: that second error must not hide the first."""
    real_open, real_unlink = Path.open, Path.unlink

    def failing_open(self: Path, mode: str = "r", *a: object, **kw: object) -> object:
        if self.name.endswith(".partial") and "w" in mode:
            raise OSError(code, "simulated", str(self))
        return real_open(self, mode, *a, **kw)  # type: ignore[call-overload]

    def failing_unlink(self: Path, missing_ok: bool = False) -> None:
        if self.name.endswith(".partial"):
            raise OSError(errno.EROFS, "Read-only file system", str(self))
        real_unlink(self, missing_ok=missing_ok)

    monkeypatch.setattr(Path, "open", failing_open)
    monkeypatch.setattr(Path, "unlink", failing_unlink)
    line = _one_line(["tasks", "arithmetic", "--n", "2", "--out", "t.jsonl"], capsys)
    assert "t.jsonl: cannot write" in line


def test_an_os_error_reaching_main_is_one_line(work: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    import crossgym.cli as cli

    def boom(*a: object, **kw: object) -> None:
        raise OSError(errno.EROFS, "Read-only file system", "/ro/o.jsonl")

    monkeypatch.setattr(cli, "_call", boom)
    line = _one_line(["reverify", "x.jsonl"], capsys)
    assert "/ro/o.jsonl: Read-only file system" in line and "read-only" in line


def test_verify_batch_full_disk_names_out(work: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    from crossgym.rollout.store import RolloutStore

    def full(self: object, *a: object, **kw: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")  # write() names no file

    monkeypatch.setattr(RolloutStore, "append_docs", full)
    line = _one_line(["verify-batch", "good.jsonl", "--out", "o.jsonl"], capsys)
    assert "o.jsonl: cannot write: No space left on device" in line


def test_verify_batch_out_holding_the_input_is_refused(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copy("good.jsonl", "out.jsonl")
    line = _one_line(["verify-batch", "good.jsonl", "--out", "out.jsonl"], capsys)
    assert "not the output of verify-batch" in line and "no verdict at line 1" in line
    assert Path("out.jsonl").read_bytes() == Path("good.jsonl").read_bytes()


@pytest.mark.parametrize("damage", ["schema", "params"])
def test_damaged_provenance_is_a_skipped_record_named_by_line(work: Path, damage: str,
                                                              capsys: pytest.CaptureFixture[str],
                                                              caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["verify-batch", "good.jsonl", "--out", "scored.jsonl"])
    assert exc.value.code == 0
    capsys.readouterr()
    doc = json.loads(Path("scored.jsonl").read_text(encoding="utf-8"))
    if damage == "schema":
        doc["provenance"]["schema"] = "x"
    else:
        doc["provenance"]["verifier"]["params"] = [1]
    Path("bad.jsonl").write_text(Path("scored.jsonl").read_text(encoding="utf-8") + json.dumps(doc) + "\n",
                                 encoding="utf-8")
    with pytest.raises(SystemExit) as exc:
        main(["reverify", "bad.jsonl"])
    captured = capsys.readouterr()
    assert exc.value.code == 0 and "Traceback" not in captured.err, captured.err[-2000:]
    assert "1 line(s) skipped" in captured.out and "bad.jsonl:2" in captured.err + caplog.text, captured
    with pytest.raises(SystemExit) as exc:
        main(["compare", "scored.jsonl", "bad.jsonl"])
    captured = capsys.readouterr()
    assert exc.value.code == 0 and "Traceback" not in captured.err and "bad.jsonl:2" in captured.err + caplog.text
