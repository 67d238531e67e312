"""The backend kit: launch (log streaming, stop ends the whole process group, escalating), GPU detection, files."""

from __future__ import annotations

import os
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from crossgym.adapters.kit import files, gpu
from crossgym.adapters.kit.launch import launch

#: a stand-in for a training framework's command line: prints a step line every 50 ms and starts a worker in its
#: process group (as Ray or torchrun do); argv[1] says what it does on SIGINT / SIGTERM
STAND_IN = textwrap.dedent("""
    import os, signal, subprocess, sys, time
    mode = sys.argv[1]
    if mode in ("ignore_int", "ignore_all"):
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    if mode == "ignore_all":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    print("worker", worker.pid, flush=True)
    for step in range(1, 2400):
        print(f"step:{step} - reward:0.5", flush=True)
        time.sleep(0.05)
""")


def _argv(mode: str) -> list[str]:
    return [sys.executable, "-c", STAND_IN, mode]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0): read its state
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _stop_after_steps(stop: threading.Event, seen: list[str], steps: int):
    def on_line(line: str) -> None:
        seen.append(line)
        if sum(ln.startswith("step:") for ln in seen) >= steps:
            stop.set()
    return on_line


def test_launch_streams_every_line_to_the_log_and_the_callback(tmp_path: Path) -> None:
    seen: list[str] = []
    done = launch([sys.executable, "-c", "print('a'); print('b'); raise SystemExit(3)"], cwd=tmp_path,
                  log_path=tmp_path / "logs" / "train.log", on_line=seen.append)
    assert (done.returncode, done.stopped, done.signals) == (3, False, [])
    assert seen == ["a", "b"] and (tmp_path / "logs" / "train.log").read_text() == "a\nb\n"
    assert done.last_line() == "b"


@pytest.mark.parametrize(("mode", "signals"), [
    ("default", ["SIGINT"]),  # a framework that stops (and may save) on SIGINT
    ("ignore_int", ["SIGINT", "SIGTERM"]),  # one that ignores it: SIGTERM after the grace period
    ("ignore_all", ["SIGINT", "SIGTERM", "SIGKILL"]),  # one that ignores both
])
def test_stop_ends_the_whole_group_escalating(tmp_path: Path, mode: str, signals: list[str]) -> None:
    stop = threading.Event()
    seen: list[str] = []
    t0 = time.monotonic()
    # a process that stops on SIGINT gets a grace period a loaded machine cannot overrun; the others 0.5 s
    grace = 10.0 if mode == "default" else 0.5
    done = launch(_argv(mode), cwd=tmp_path, log_path=tmp_path / "train.log", stop=stop, grace_s=grace,
                  on_line=_stop_after_steps(stop, seen, 3))
    assert done.stopped and done.signals == signals
    assert time.monotonic() - t0 < 30
    worker = int(next(ln for ln in seen if ln.startswith("worker")).split()[1])
    deadline = time.monotonic() + 10
    while _alive(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(worker)  # the framework's workers go too, not only its main process


def test_no_stop_runs_to_the_end(tmp_path: Path) -> None:
    stop = threading.Event()
    done = launch([sys.executable, "-c", "import time; time.sleep(0.3); print('done')"], cwd=tmp_path,
                  log_path=tmp_path / "train.log", stop=stop, grace_s=0.5)
    assert (done.returncode, done.stopped, done.signals, done.tail) == (0, False, [], ["done"])


def test_visible_gpus_reads_cuda_visible_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,3")
    assert gpu.visible_gpus() == 2
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert gpu.visible_gpus() == 0
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")
    assert gpu.visible_gpus() == 0


def test_write_files_and_the_launch_script(tmp_path: Path) -> None:
    script = files.launch_script(["python", "-m", "pkg.main", "a=1", "b c"], comment=["made here"],
                                 workdir=str(tmp_path), python_var=True, pass_args=True)
    written = files.write_files({str(tmp_path / "sub" / "run.sh"): script, str(tmp_path / "x.txt"): "x"})
    assert [p.name for p in written] == ["run.sh", "x.txt"]
    assert os.access(written[0], os.X_OK) and not os.access(written[1], os.X_OK)
    import subprocess

    echo = files.launch_script(["echo", "a=1", "b c"], pass_args=True)
    (tmp_path / "echo.sh").write_text(echo)
    out = subprocess.run(["bash", str(tmp_path / "echo.sh"), "more"], capture_output=True, text=True, check=True)
    assert out.stdout == "a=1 b c more\n"
    assert script.startswith("#!/usr/bin/env bash\n# made here\n") and '"${PYTHON:-python}"' in script
    assert files.describe_lines("1\n2\n3\n") == "# 3 rows; the first 2:\n1\n2\n"
