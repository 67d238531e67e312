"""The pool itself: a clean server, recovery after it dies, fork safety, and the strong tier's own shell."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest

from crossgym.protocol.errors import SandboxError
from crossgym.sandbox import Sandbox, config, run_python, run_python_tests, run_python_tests_many, run_shell


def test_server_starts_with_an_empty_environment(sandbox: Sandbox) -> None:
    assert run_python("pass", sandbox=sandbox).ok
    assert sandbox._proc is not None
    if sandbox.tier == "default":
        with open(f"/proc/{sandbox._proc.pid}/environ", "rb") as fh:
            assert fh.read() == b""
    r = run_python("import os\nprint(len(os.environ), os.getuid() == 0)", sandbox=sandbox)
    assert r.stdout == f"6 {config.uid_base() is None and os.geteuid() == 0}\n"


def test_recovers_when_the_server_dies() -> None:
    pool = Sandbox("default", workers=1)
    try:
        assert run_python("print(1)", sandbox=pool).ok
        proc = pool._proc
        assert proc is not None
        os.kill(proc.pid, signal.SIGKILL)  # our own child
        proc.wait()
        r = run_python("print(2)", sandbox=pool)
        assert r.ok and r.stdout == "2\n" and pool._proc is not proc
    finally:
        pool.close()


def test_tasks_run_when_zygotes_cannot_start(tmp_path: os.PathLike[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A slot's zygote that dies before its first task (here: its interpreter cannot import it) costs that task
    a SandboxError; after three, the server forks tasks itself."""
    copy = os.path.join(tmp_path, "runtime")
    shutil.copytree(os.path.join(config.RUNTIME_PARENT, "_runtime"), os.path.join(copy, "_runtime"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    with open(os.path.join(copy, "_runtime", "zygote.py"), "a") as fh:
        fh.write("\nBOOT = 'raise SystemExit(3)'\n")
    os.chmod(tmp_path, 0o755)
    monkeypatch.setattr(config, "RUNTIME_PARENT", copy)
    pool = Sandbox("default", workers=1)
    try:
        failed = 0
        for _ in range(3):
            try:
                run_python("print(1)", sandbox=pool)
            except SandboxError:
                failed += 1
        assert failed == 3
        for n in range(3):
            r = run_python(f"print({n})", sandbox=pool)
            assert r.ok and r.stdout == f"{n}\n"
        # tests too: the task forks its solution processes and a spawner of its own (fresh ones after a death)
        exits = "import os\ndef add(a, b):\n    os._exit(0)\n"
        good, tests = "def add(a, b):\n    return a + b\n", ["assert add(1, 2) == 3", "assert add(2, 2) == 4"]
        group = run_python_tests_many([good, exits, good], tests, sandbox=pool)
        assert [r.passed for r in group] == [2, 0, 2]
        assert all(d.error is not None and "exited during the call" in d.error for d in group[1].details)
        assert [d.error for d in run_python_tests(exits, tests, sandbox=pool).details] == \
            [d.error for d in group[1].details]
    finally:
        pool.close()


def test_closing_with_a_task_in_flight_ends_it_at_once() -> None:
    pool = Sandbox("default", workers=1)
    assert run_python("pass", sandbox=pool).ok
    got: list[object] = []

    def call() -> None:
        try:
            got.append(run_python("import time\ntime.sleep(20)", sandbox=pool, timeout=25))
        except SandboxError as exc:
            got.append(exc)

    caller = threading.Thread(target=call)
    caller.start()
    time.sleep(0.5)
    start = time.monotonic()
    pool.close()
    caller.join(10)
    assert time.monotonic() - start < 3.0 and not caller.is_alive()
    assert len(got) == 1 and (isinstance(got[0], SandboxError) or got[0].signal == 9)  # type: ignore[attr-defined]


def test_a_forked_caller_gets_its_own_server(sandbox: Sandbox) -> None:
    assert run_python("pass", sandbox=sandbox).ok
    parent_server = sandbox._proc
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child reports through the pipe and leaves without running pytest's teardown
        try:
            r = run_python("print('from child')", sandbox=sandbox)
            os.write(write, json.dumps([r.stdout, sandbox._proc is not parent_server]).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as fh:
        report = fh.read()
    os.waitpid(pid, 0)
    assert json.loads(report) == ["from child\n", True]
    assert sandbox._proc is parent_server and run_python("print(3)", sandbox=sandbox).stdout == "3\n"


def test_strong_tier_runs_each_shell_task_in_its_own_namespaces() -> None:
    if not config.bwrap_works():
        pytest.skip("bubblewrap cannot run here (apt-get install bubblewrap)")
    with Sandbox("strong", workers=1) as pool:
        r = run_shell("pwd; ls /tmp | wc -l; ps -e --no-headers | wc -l", sandbox=pool)
        assert r.ok and r.tier == "strong"
        cwd, tmp_entries, processes = r.stdout.split()
        assert cwd == "/scratch" and tmp_entries == "0" and int(processes) <= 6  # bwrap, our server, the shell, ps and wc


def test_stale_scratch_roots_of_dead_processes_are_swept(tmp_path: object) -> None:
    from crossgym.sandbox.pool import STALE_ROOT_S, _sweep_stale_roots

    base = str(tmp_path)
    dead = subprocess_pid_that_exited()
    stale, fresh, alive = (os.path.join(base, f"crossgym-sbx-{pid}-x{i}") for i, pid in
                           enumerate((dead, dead, os.getpid())))
    for path in (stale, fresh, alive):
        os.makedirs(os.path.join(path, "task"))
    old = time.time() - STALE_ROOT_S - 60
    os.utime(stale, (old, old))
    os.utime(alive, (old, old))
    _sweep_stale_roots(base)
    assert not os.path.exists(stale) and os.path.exists(fresh) and os.path.exists(alive)


def subprocess_pid_that_exited() -> int:
    proc = subprocess.Popen(["/bin/true"])
    proc.wait()
    return proc.pid


_DIES = """
import os, signal, sys
from crossgym.sandbox import Sandbox, run_python
pool = Sandbox(sys.argv[1], workers=2)
assert run_python("open('left.txt', 'w').write('x' * 100000)", sandbox=pool).ok
print(pool._scratch_root, flush=True)
os.kill(os.getpid(), signal.SIGKILL)  # (itself: a trainer killed for its memory)
"""


@pytest.mark.parametrize("tier", [pytest.param("default"), pytest.param("strong", marks=pytest.mark.skipif(
    not config.bwrap_works(), reason="bubblewrap cannot run here"))])
def test_a_killed_caller_leaves_no_scratch_behind(tier: str) -> None:
    """A caller killed without closing its pool (no atexit runs) left its scratch root in /tmp, one per killed
    trainer; the server, seeing the caller's end close without the goodbye an orderly close sends, removes it (on
    the strong tier the root is bubblewrap's mount point there, so its contents: the empty directory stays)."""
    out = subprocess.run([sys.executable, "-c", _DIES, tier], capture_output=True, text=True, timeout=60)
    root = out.stdout.strip()
    assert root.startswith("/") and os.path.basename(root).startswith("crossgym-sbx-"), out.stderr
    deadline = time.monotonic() + 10
    while os.path.isdir(root) and (tier == "default" or os.listdir(root)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(root) if tier == "default" else os.listdir(root) == []
    if tier == "strong":
        os.rmdir(root)


def test_an_orderly_close_and_restart_keep_the_scratch_root() -> None:
    """The goodbye keeps a server that the pool stops to start again from removing the root the next one uses."""
    pool = Sandbox("default", workers=1)
    try:
        assert run_python("print(1)", sandbox=pool).ok
        root = pool._scratch_root
        pool._broken(pool._proc)  # (what a pool does to a server it no longer trusts: stopped, waited for)
        assert root is not None and os.path.isdir(root)
        r = run_python("print(2)", sandbox=pool)
        assert r.ok and r.stdout == "2\n" and pool._scratch_root == root and root is not None and os.path.isdir(root)
    finally:
        pool.close()
