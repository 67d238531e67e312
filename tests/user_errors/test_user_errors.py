"""A corpus of the mistakes a new user makes (issue 24), each run through the real entry point `crossgym.cli:main`:
every one must exit 2 with exactly one line on stderr, "crossgym: error: ...", naming what is wrong, where, and the
fix, with no traceback, and before anything slow (a model, a backend) loads.

The bad inputs are the files in files/ (a UTF-16 and a Latin-1 config and tasks file, a duplicate YAML key, a
top-level typo, a typo'd task field, several tasks where one is expected, an empty file) and paths made per test
(a directory where a file is written, a file where a directory is, a busy port).
"""

from __future__ import annotations

import re
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_lines import one_line

from crossgym.cli import main

FILES = Path(__file__).parent / "files"
SRC = Path(__file__).resolve().parents[2] / "src" / "crossgym"
ROOT = SRC.parents[1]


@pytest.fixture()
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder holding the corpus, a folder (``adir``) and a file (``afile``); the command runs from it."""
    for f in FILES.iterdir():
        shutil.copy(f, tmp_path / f.name)
    (tmp_path / "adir").mkdir()
    (tmp_path / "afile").write_text("x\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    yield tmp_path


def _not_installed_backend() -> str | None:
    from crossgym.plugins.manager import registry

    reg = registry("backends")
    return next((n for n in reg.names() if reg.entry(n).missing_requirements()), None)


# (id, argv, words the one line must hold)
CASES: list[tuple[str, list[str], list[str]]] = [
    # 2. tracebacks: files that are not UTF-8
    ("config-utf16", ["plan", "config_utf16.yaml"], ["config_utf16.yaml", "not UTF-8", "UTF-16", "save it as UTF-8"]),
    ("config-latin1", ["train", "config_latin1.yaml", "--dry-run"], ["config_latin1.yaml", "Latin-1", "UTF-8"]),
    ("eval-config-utf16", ["eval", "config_utf16.yaml"], ["config_utf16.yaml", "UTF-16"]),
    ("verify-task-utf16", ["verify", "--task", "tasks_utf16.jsonl", "--completion", "5"],
     ["tasks_utf16.jsonl", "UTF-16", "save it as UTF-8"]),
    ("verify-task-latin1", ["verify", "--task", "tasks_latin1.jsonl", "--completion", "5"],
     ["tasks_latin1.jsonl", "Latin-1"]),
    ("eval-tasks-utf16", ["eval", "--tasks", "tasks_utf16.jsonl", "--model", "m"], ["tasks_utf16.jsonl", "UTF-16"]),
    ("eval-tasks-latin1", ["eval", "--tasks", "tasks_latin1.jsonl", "--model", "m"], ["tasks_latin1.jsonl", "Latin-1"]),
    ("synth-seeds-latin1", ["synth", "arithmetic", "--seeds", "tasks_latin1.jsonl", "-n", "1", "--out", "o.jsonl"],
     ["tasks_latin1.jsonl", "Latin-1"]),
    ("verify-batch-utf16", ["verify-batch", "tasks_utf16.jsonl"], ["tasks_utf16.jsonl", "UTF-16"]),
    ("verify-batch-latin1", ["verify-batch", "tasks_latin1.jsonl"], ["tasks_latin1.jsonl", "Latin-1"]),
    ("reverify-utf16", ["reverify", "tasks_utf16.jsonl"], ["tasks_utf16.jsonl", "UTF-16"]),
    ("verify-params-file-latin1", ["verify", "--task", "task.json", "--verifier", "numeric", "--params",
                                   "config_latin1.yaml", "--completion", "5"], ["config_latin1.yaml", "Latin-1"]),
    ("compare-utf16", ["compare", "tasks_utf16.jsonl", "tasks_utf16.jsonl"], ["tasks_utf16.jsonl", "UTF-16"]),
    ("plan-a-directory", ["plan", "adir"], ["adir", "is a directory"]),
    # 2. tracebacks: output paths that cannot be one
    ("tasks-out-dir", ["tasks", "arithmetic", "--n", "1", "--out", "adir"], ["--out", "adir is a directory"]),
    ("tasks-out-below-file", ["tasks", "arithmetic", "--n", "1", "--out", "afile/t.jsonl"], ["--out", "afile is a file"]),
    ("eval-output-dir-file", ["eval", "--tasks", "task.json", "--model", "m", "--output-dir", "afile"],
     ["--output-dir", "afile is a file"]),
    ("compat-out-dir", ["compat", "--out", "adir"], ["--out", "adir is a directory"]),
    ("compat-html-dir", ["compat", "--html", "adir"], ["--html", "adir is a directory"]),
    ("compare-html-dir", ["compare", "tasks_two.jsonl", "tasks_two.jsonl", "--html", "adir"],
     ["--html", "adir is a directory"]),
    ("compat-corpus-missing", ["compat", "--corpus", "no-such-corpus"], ["--corpus", "no-such-corpus"]),
    ("compat-corpus-a-file", ["compat", "--corpus", "afile"], ["--corpus", "afile"]),
    # (an existing folder is verify-batch's sharded output: one <input>.jsonl per input file)
    ("verify-batch-out-parquet", ["verify-batch", "tasks_two.jsonl", "--out", "x.parquet"], ["--out", "JSONL"]),
    ("synth-out-dir", ["synth", "arithmetic", "-n", "1", "--out", "adir"], ["--out", "adir is a directory"]),
    ("train-output-dir-file", ["train", "config_output_dir_is_a_file.yaml", "--skip-gate"],
     ["config_output_dir_is_a_file.yaml: output_dir", "afile is a file"]),
    ("train-blend-typo", ["train", "config_blend_typo.yaml", "--dry-run"],
     ["config_blend_typo.yaml: tasks.parts.1.sorce", "did you mean 'source'"]),
    ("plan-blend-size", ["plan", "config_blend_size.yaml"], ["tasks.size", "size 3", "weight"]),
    ("plan-tasks-string", ["plan", "config_tasks_string.yaml"],
     ["config_tasks_string.yaml: tasks", "'source: arithmetic'", "'files: [arithmetic]'"]),
    ("train-watch-no-eval-tasks", ["train", "config_watch_no_eval.yaml", "--skip-gate"],
     ["grpo.eval_steps", "eval_tasks"]),
    ("eval-config-output-dir-file", ["eval", "config_output_dir_is_a_file.yaml", "--limit", "1"],
     ["config_output_dir_is_a_file.yaml: output_dir", "afile is a file"]),
    # 2. tracebacks: sampling numbers out of range, refused before any model loads
    ("eval-max-tokens", ["eval", "--tasks", "task.json", "--model", "m", "--max-tokens", "-5"],
     ["--max-tokens", ">= 1", "-5"]),
    ("eval-temperature", ["eval", "--tasks", "task.json", "--model", "m", "--temperature", "-1"],
     ["--temperature", ">= 0"]),
    ("eval-n", ["eval", "--tasks", "task.json", "--model", "m", "--n", "0"], ["--n", "in 1..10000"]),
    ("synth-temperature", ["synth", "arithmetic", "-n", "1", "--out", "o.jsonl", "--temperature", "nan"],
     ["--temperature"]),
    ("synth-max-tokens", ["synth", "arithmetic", "-n", "1", "--out", "o.jsonl", "--max-tokens", "0"],
     ["--max-tokens", ">= 1"]),
    ("synth-max-attempts", ["synth", "arithmetic", "-n", "1", "--out", "o.jsonl", "--max-attempts", "0"],
     ["--max-attempts", ">= 1"]),
    ("serve-max-body", ["serve", "--max-body-mb", "-2"], ["--max-body-mb", "above 0"]),
    # 4. silent mistakes
    ("config-empty", ["plan", "empty.jsonl"], ["empty.jsonl", "got an empty document"]),
    ("config-a-task-file", ["plan", "task.json"], ["task.json", "this is a task, not a RunConfig"]),
    ("yaml-duplicate-key", ["plan", "config_duplicate_key.yaml"],
     ["config_duplicate_key.yaml:11", "duplicate key 'grpo'", "line 6"]),
    ("config-top-level-typo", ["plan", "config_typo_top_level.yaml"],
     ["modle", "unknown key", "did you mean 'model'"]),
    ("verify-params-without-verifier", ["verify", "--task", "task.json", "--params", "{}", "--completion", "5"],
     ["--params", "without --verifier"]),
    ("verify-completion-missing-file", ["verify", "--task", "task.json", "--completion", "answer.txt"],
     ["answer.txt", "not found"]),
    ("verify-completion-missing-path", ["verify", "--task", "task.json", "--completion", "./out/completion"],
     ["completion", "not found"]),
    ("verify-task-several", ["verify", "--task", "tasks_two.jsonl", "--completion", "5"],
     ["tasks_two.jsonl", "holds 2 tasks", "--task-id", "t1, t2"]),
    ("verify-task-id-typo", ["verify", "--task", "tasks_two.jsonl", "--task-id", "t3", "--completion", "5"],
     ["--task-id", "no task 't3' among the 2", "ids here: t1, t2"]),
    ("verify-task-typo-field", ["verify", "--task", "task_typo_field.json", "--completion", "5"],
     ["task_typo_field.json", "unknown task field 'answr'", "did you mean 'answer'"]),
    ("eval-tasks-typo-field", ["eval", "--tasks", "tasks_typo_field.jsonl", "--model", "m"],
     ["tasks_typo_field.jsonl:2", "'answr'", "did you mean 'answer'"]),
    # 1. a model path that does not exist is not taken for a hub id (and ~ is expanded)
    ("eval-model-missing-dir", ["eval", "--tasks", "task.json", "--model", "adir/smollm2"],
     ["--model", "no such model directory: adir/smollm2"]),
    ("eval-model-home", ["eval", "--tasks", "task.json", "--model", "~/no-such-crossgym-model"],
     ["no such model directory: " + str(Path.home() / "no-such-crossgym-model")]),
    ("eval-model-is-a-file", ["eval", "--tasks", "task.json", "--model", "afile"], ["afile is a file"]),
    ("eval-config-model", ["eval", "config_model_missing.yaml"],
     ["config_model_missing.yaml: model", "no such model directory: ./no-such-model"]),
    ("plan-model-missing", ["plan", "config_model_missing.yaml"], ["no such model directory: ./no-such-model"]),
    ("train-dry-run-model-missing", ["train", "config_model_missing.yaml", "--dry-run"],
     ["no such model directory"]),
    ("synth-model-missing", ["synth", "arithmetic", "-n", "1", "--out", "o.jsonl", "--model", "./m"],
     ["--model", "no such model directory: ./m"]),
    # 5. false successes
    ("tasks-none", ["tasks", "jsonl", "--params", '{"path": "empty.jsonl"}'], ["no tasks were produced"]),
    ("tasks-n-0", ["tasks", "arithmetic", "--n", "0", "--out", "t.jsonl"], ["no tasks were produced"]),
    ("reverify-empty", ["reverify", "empty.jsonl"], ["empty.jsonl", "no rollouts", "empty"]),
    ("reverify-tasks-file", ["reverify", "tasks_two.jsonl"], ["tasks_two.jsonl", "no rollouts", "2 records"]),
]


def _one_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    return one_line(argv, capsys, fix=False)


@pytest.mark.parametrize(("argv", "words"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_mistake_is_one_line_exit_2(work: Path, argv: list[str], words: list[str],
                                      capsys: pytest.CaptureFixture[str]) -> None:
    line = _one_line(argv, capsys)
    assert "(fix: " in line, line  # what and where, then how to fix it
    for w in words:
        assert w in line, (w, line)
    assert not (work / "runs").exists()  # refused before any work wrote a file


def test_the_console_script_prints_the_same_one_line(work: Path) -> None:
    """The same through a fresh interpreter (nothing captured in process): stderr is the one line, stdout empty."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "crossgym.cli", "plan", "config_utf16.yaml"], capture_output=True,
                          text=True, timeout=120, cwd=work)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("crossgym: error: config_utf16.yaml: not UTF-8 text (it looks like UTF-16)")
    assert proc.stderr.count("\n") == 1


def test_serve_on_a_busy_port_is_one_line_before_the_banner(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("uvicorn")
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        line = _one_line(["serve", "--port", str(port)], capsys)
    assert f"port {port} is in use" in line and "--port" in line


def test_compat_on_a_backend_that_is_not_installed_is_no_success(work: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    name = _not_installed_backend()
    if name is None:
        pytest.skip("every backend is installed here")
    line = _one_line(["compat", "--backend", name, "--checks", "conformance", "--verifier", "exact_match"], capsys)
    assert f"{name} is not available: not installed" in line and "install it with" in line


def test_task_id_picks_one_task_of_several(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["verify", "--task", "tasks_two.jsonl", "--task-id", "t2", "--completion", "<answer>6</answer>"])
    assert exc.value.code == 0 and capsys.readouterr().out.startswith("PASS reward=1")


def test_a_completion_that_is_text_stays_text(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The path rule (docs in `crossgym verify --help`): '3/4' or a sentence is text, not a file."""
    from crossgym.verify_cmd import looks_like_path

    assert not looks_like_path("3/4") and not looks_like_path("The answer is 5. See notes.txt")
    assert looks_like_path("answer.txt") and looks_like_path("./x") and looks_like_path("adir/x")
    with pytest.raises(SystemExit) as exc:
        main(["verify", "--task", "task.json", "--completion", "<answer>5</answer>"])
    assert exc.value.code == 0 and capsys.readouterr().out.startswith("PASS")


def test_an_output_file_that_cannot_be_written_is_one_line(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if not Path("/proc/version").is_file():
        pytest.skip("no /proc here")
    line = _one_line(["tasks", "arithmetic", "--n", "1", "--out", "/proc/version"], capsys)
    assert "/proc/version: cannot write" in line and "--out" in line


def test_every_docs_path_named_in_src_exists() -> None:
    """Fix hints and docstrings that send the user to docs/... name files that exist."""
    named: dict[str, str] = {}
    for py in SRC.rglob("*.py"):
        for m in re.finditer(r"docs/[A-Za-z0-9_./-]*[A-Za-z0-9_-]\.md", py.read_text(encoding="utf-8")):
            named.setdefault(m.group(0), str(py.relative_to(ROOT)))
    assert named, "the scan found no docs path at all"
    missing = {doc: where for doc, where in named.items() if not (ROOT / doc).is_file()}
    assert not missing, missing
