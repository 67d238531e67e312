"""The CLI surface: --version, list --json shape, one-line user errors with exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from crossgym import __version__
from crossgym.cli import app, main

runner = CliRunner()


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.strip() == f"crossgym {__version__}"


def test_list_json_shape() -> None:
    result = runner.invoke(app, ["list", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert {"verifiers", "environments", "task_sources", "backends", "engines"} <= set(doc)
    for v in doc["verifiers"]:
        assert {"name", "version", "description"} <= set(v)
    for kind in ("backends", "engines"):
        names = {b["name"] for b in doc[kind]}
        assert names >= ({"trl", "unsloth", "verl", "openrlhf"} if kind == "backends"
                         else {"hf", "vllm", "sglang", "openai"})
        for row in doc[kind]:
            assert {"name", "available", "reason", "install", "capabilities"} <= set(row)
            if not row["available"]:
                assert row["reason"], row


def test_list_human_output() -> None:
    result = runner.invoke(app, ["list"])
    assert result.exit_code == 0 and "backends" in result.output and "openrlhf" in result.output


def _run_main(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(args)
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out, err


def test_unknown_verifier_is_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run_main(["check", "no_such_verifier"], capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "unknown verifier 'no_such_verifier'" in err and "Traceback" not in err


def test_bad_config_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("model: m\ntasks: {source: a}\ngrpo: {learnin_rate: 1}\n")
    code, _, err = _run_main(["plan", str(cfg)], capsys)
    assert code == 2 and err.count("\n") == 1
    assert "bad.yaml: grpo.learnin_rate" in err and "learning_rate" in err


def test_bad_params_json_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    task = tmp_path / "t.json"
    task.write_text(json.dumps({"id": "t", "prompt": "p", "answer": 1, "verifier": {"name": "x"}}))
    code, _, err = _run_main(["verify", "--task", str(task), "--completion", "1", "--params", "{oops"], capsys)
    assert code == 2 and "--params: not valid JSON" in err


def test_debug_shows_traceback(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "crossgym.cli", "--debug", "check", "no_such_verifier"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "Traceback" in proc.stderr


def test_an_error_message_with_newlines_is_still_one_line(monkeypatch, capsys):  # type: ignore[no-untyped-def]
    """A library's message may hold newlines (pyarrow's, a YAML parser's): the user still gets one line, exit 2."""
    import crossgym.cli as cli
    from crossgym.protocol.errors import ConfigError

    def broken(**_: object) -> None:
        raise ConfigError("could not read shard.parquet:\n  footer corrupt\n\n  (magic bytes)", where="in.parquet",
                          fix="re-export it")

    monkeypatch.setattr(cli, "app", broken)
    with pytest.raises(SystemExit) as info:
        cli.main(["verify-batch", "in.parquet"])
    err = capsys.readouterr().err
    assert info.value.code == 2 and err.count("\n") == 1
    assert err == ("crossgym: error: in.parquet: could not read shard.parquet: footer corrupt; (magic bytes) "
                   "(fix: re-export it)\n")


@pytest.mark.parametrize(("args", "words"), [
    (["eval", "--tasks", "arithmetic", "--n", "abc"], ["crossgym eval", "--n", "crossgym eval --help"]),
    (["verify", "--task", "t.json"], ["crossgym verify", "--completion"]),
    (["nosuchcmd"], ["No such command 'nosuchcmd'", "crossgym --help"]),
    (["eval", "--max-token", "5"], ["--max-token", "--max-tokens"]),
])
def test_command_line_errors_are_one_line_exit_2(args: list[str], words: list[str],
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """A bad option, a missing one or an unknown command was click's usage line, a hint and a five-line box."""
    code, out, err = _run_main(args, capsys)
    assert code == 2 and out == "" and err.count("\n") == 1 and err.startswith("crossgym: error: "), err
    assert all(w in err for w in words) and "(fix: " in err, err


def test_no_command_shows_the_help_and_success_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run_main([], capsys)
    assert code == 2 and "Usage: crossgym" in out
    code, out, _ = _run_main(["--version"], capsys)
    assert code == 0 and out.strip() == f"crossgym {__version__}"
