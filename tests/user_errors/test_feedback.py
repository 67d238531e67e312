"""Feedback on long work (issue 24, item 6): what a user sees when an endpoint is dead, when an eval is stopped
and resumed, and what a short train's summary compares. Each runs the real console entry point."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

TIMEOUT = 120


def _dead_port() -> int:
    """A 127.0.0.1 port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env() -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "COLUMNS": "100"}


def test_synth_against_a_dead_endpoint_says_so_once(tmp_path: Path) -> None:
    """Eight drafts in flight, each retried four times, used to print 32 "retry k/4" lines before the error: now
    one line says the server failed and that it is being retried, then the one error line."""
    pytest.importorskip("httpx")
    url = f"http://127.0.0.1:{_dead_port()}/v1"
    proc = subprocess.run([sys.executable, "-m", "crossgym.cli", "synth", "arithmetic", "-n", "2", "--out",
                           str(tmp_path / "o.jsonl"), "--engine", "openai", "--endpoint", url, "--model", "m"],
                          capture_output=True, text=True, timeout=TIMEOUT, env=_env(), cwd=tmp_path)
    lines = proc.stderr.splitlines()
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 2, proc.stderr
    assert lines[0].startswith("openai: POST ") and "retrying up to 4 times" in lines[0] and url in lines[0]
    assert lines[1].startswith("crossgym: error: ") and "failed after 5 attempts" in lines[1]
    assert f"check that a server is running at {url}" in lines[1]
    assert not list(tmp_path.glob("o*"))


#: rollouts of the Ctrl-C eval (tasks x --n 2): enough that the tiny model is still generating when the first 32 are
#: stored and the signal goes, on a quiet machine too
TOTAL = 1200


def _eval_argv(model: Path, tasks: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "crossgym.cli", "eval", "--tasks", str(tasks), "--model", str(model), "--n", "2",
            "--max-tokens", "4", "--output-dir", str(out)]


def test_eval_ctrl_c_says_what_was_saved_and_the_rerun_says_what_it_reused(tmp_path: Path,
                                                                             tiny_model_dir: Path) -> None:
    """Ctrl-C part way: the line names how many rollouts are saved, where, and the command that resumes. The
    rerun says how many it reused and how many it generates, before it starts."""
    from crossgym.api import load_tasks

    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(t.to_json() + "\n" for t in load_tasks("arithmetic", n=TOTAL // 2)), encoding="utf-8")
    out = tmp_path / "out"
    rollouts = out / "rollouts.jsonl"
    # SIGINT at its default in the child: a test run started in the background (`make test &`) has it ignored, and
    # the eval would then never see the Ctrl-C this test sends
    proc = subprocess.Popen(_eval_argv(tiny_model_dir, tasks, out), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=_env(), cwd=tmp_path,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline and proc.poll() is None:  # wait for the first batches to be stored
        if rollouts.is_file() and len(rollouts.read_bytes().splitlines()) >= 32:
            break
        time.sleep(0.2)
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 130, stderr
    saved = len(rollouts.read_bytes().splitlines())
    assert 32 <= saved < TOTAL
    lines = [x for x in stderr.splitlines() if x.strip() and not x.startswith("Loading weights")]  # not ours
    assert "Traceback" not in stderr and len(lines) == 1, stderr
    assert lines[0].startswith(f"crossgym eval: interrupted: {saved} of {TOTAL} rollouts are saved in {rollouts}")
    assert "run the same command again to resume (it generates only the" in lines[0]
    assert lines[0].endswith(f": crossgym eval --model {tiny_model_dir} --tasks {tasks} --n 2 --output-dir {out} "
                             "--max-tokens 4")

    again = subprocess.run([*_eval_argv(tiny_model_dir, tasks, out), "--json"], capture_output=True, text=True,
                           timeout=TIMEOUT * 3, env=_env(), cwd=tmp_path)
    assert again.returncode == 0, again.stderr[-2000:]
    assert (f"resuming: {saved} of {TOTAL} rollouts reused from {rollouts} (same model and settings); {TOTAL - saved} to "
            "generate") in again.stderr
    assert json.loads(again.stdout)["n_rollouts"] == TOTAL
    assert len(rollouts.read_bytes().splitlines()) == TOTAL


@pytest.mark.parametrize(("steps", "want"), [
    (1, "mean reward 0.100 (step 1, the only logged step: nothing to compare)"),
    (2, "mean reward 0.100 (step 1) -> 0.200 (step 2)"),
    (5, "mean reward 0.150 (steps 1-2) -> 0.450 (steps 4-5)"),
    (40, "mean reward 0.550 (steps 1-10) -> 3.550 (steps 31-40)"),
])
def test_the_train_summary_says_which_steps_it_compares(steps: int, want: str) -> None:
    """A 2-step run used to print "first 10 steps 0.150 -> last 10 steps 0.150" (the same two steps twice)."""
    from crossgym.adapters.trl.outputs import summarize
    from crossgym.train import reward_line

    rows = [{"step": s, "reward": s / 10} for s in range(1, steps + 1)] + [{"step": steps, "train_runtime": 1.0}]
    assert reward_line(summarize(rows, [])) == want
    assert reward_line(summarize([], [])) is None


def test_a_rerun_with_other_settings_says_nothing_is_reused(tmp_path: Path, tiny_model_dir: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    from crossgym.api import load_tasks
    from crossgym.cli import main

    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(t.to_json() + "\n" for t in load_tasks("arithmetic", n=2)), encoding="utf-8")
    argv = ["eval", "--tasks", str(tasks), "--model", str(tiny_model_dir), "--output-dir", str(tmp_path / "out"),
            "--json", "--max-tokens"]
    for tokens, want in (("3", None), ("3", "resuming: 2 of 2 rollouts reused"), ("4", "none is reused")):
        with pytest.raises(SystemExit) as exc:
            main([*argv, tokens])
        err = capsys.readouterr().err
        assert exc.value.code in (0, None), err
        said = [x for x in err.splitlines() if x.startswith(("resuming:", "note:"))]
        assert (said == []) if want is None else (len(said) == 1 and want in said[0]), err
