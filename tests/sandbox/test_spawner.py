"""Where a tests task's solution processes come from: the task forks one per solution before it reads the tests;
the slot's spawner (one per slot, restarted when it is gone) gives fresh ones after a solution's process died.
Every solution's CPU is in the result, and the processes waiting for the next solutions are out of reach."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator

import pytest

from crossgym.sandbox import Sandbox, config, run_python_tests, run_python_tests_many

TESTS = ["assert add(1, 2) == 3", "assert add(-1, 1) == 0"]
GOOD = "def add(a, b):\n    return a + b\n"


@pytest.fixture(scope="module")
def pool() -> Iterator[Sandbox]:
    sandbox = Sandbox("default", workers=1)
    yield sandbox
    sandbox.close()


def descendants(pid: int) -> dict[int, str]:
    """pid -> name of every process below ``pid`` (this test's own pool only)."""
    found: dict[int, str] = {}
    todo = [pid]
    while todo:
        parent = todo.pop()
        try:
            with open(f"/proc/{parent}/task/{parent}/children") as fh:
                kids = [int(k) for k in fh.read().split()]
        except OSError:
            continue
        for kid in kids:
            try:
                with open(f"/proc/{kid}/comm") as fh:
                    found[kid] = fh.read().strip()
            except OSError:
                continue
            todo.append(kid)
    return found


def state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def server_pid(pool: Sandbox) -> int:
    proc = getattr(pool, "_proc", None)
    assert proc is not None, "the pool's server is not running"
    return int(proc.pid)


def spawners(pool: Sandbox) -> list[int]:
    return [pid for pid, name in descendants(server_pid(pool)).items() if name == "cg-spawner"]


EXITS = "import os\ndef add(a, b):\n    os._exit(0)\n"  # every call ends its process: each unit needs a fresh one


def test_a_dead_solution_process_is_replaced_for_the_next_units(pool: Sandbox) -> None:
    results = run_python_tests_many([EXITS, GOOD, EXITS, GOOD], TESTS, sandbox=pool)
    assert [r.passed for r in results] == [0, 2, 0, 2]
    assert all(d.error is not None and "exited during the call" in d.error for d in results[0].details)
    single = run_python_tests(EXITS, TESTS, sandbox=pool)
    assert [d.error for d in single.details] == [d.error for d in results[2].details]


def test_the_slot_keeps_one_named_spawner_across_tasks(pool: Sandbox) -> None:
    assert run_python_tests_many([EXITS, GOOD], TESTS, sandbox=pool)[1].all_passed
    names = descendants(server_pid(pool))
    assert "cg-zygote" in names.values()
    first = spawners(pool)
    assert len(first) == 1
    assert not run_python_tests(EXITS, TESTS, sandbox=pool).passed
    assert spawners(pool) == first  # the same process serves the next task


def test_a_killed_spawner_is_restarted(pool: Sandbox) -> None:
    run_python_tests(EXITS, TESTS, sandbox=pool)
    (old,) = spawners(pool)
    os.kill(old, signal.SIGKILL)  # a process of this test's own pool
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and state(old) not in ("Z", "gone"):
        time.sleep(0.01)  # dead (a zombie until its zygote notices)
    results = run_python_tests_many([GOOD, EXITS, "def add(a, b):\n    return 3\n", GOOD], TESTS, sandbox=pool)
    assert [r.passed for r in results] == [2, 0, 1, 2]
    assert spawners(pool) and old not in spawners(pool)


def test_the_solutions_cpu_time_is_in_the_result(pool: Sandbox) -> None:
    busy = ("import time\ndef add(a, b):\n    end = time.process_time() + 0.3\n"
            "    while time.process_time() < end:\n        pass\n    return a + b\n")
    result = run_python_tests(busy, TESTS[:1], sandbox=pool, timeout=10.0)
    assert result.all_passed and result.exec is not None and result.exec.cpu_s >= 0.25
    group = run_python_tests_many([busy, GOOD], TESTS[:1], sandbox=pool, timeout=10.0)
    assert group[0].exec is not None and group[0].exec.cpu_s >= 0.25


SABOTEUR = ("import os, signal, time\n"
            "def gone(pid):\n"  # a kill takes effect a moment later: wait (at most a second) until it has
            "    end = time.monotonic() + 1\n"
            "    while time.monotonic() < end:\n"
            "        try:\n"
            "            with open(f'/proc/{pid}/stat') as fh:\n"
            "                if fh.read().rsplit(')', 1)[1].split()[0] in 'ZX':\n"
            "                    return\n"
            "        except OSError:\n"
            "            return\n"
            "        time.sleep(0.001)\n"
            "def reach():\n"
            "    me, parent, hits = os.getpid(), os.getppid(), 0\n"
            "    for name in os.listdir('/proc'):\n"
            "        if not name.isdigit() or int(name) == me:\n"
            "            continue\n"
            "        try:\n"
            "            with open(f'/proc/{name}/stat') as fh:\n"
            "                if int(fh.read().rsplit(')', 1)[1].split()[1]) != parent:\n"
            "                    continue\n"
            "        except (OSError, ValueError, IndexError):\n"
            "            continue\n"
            "        for attempt in ('mem', 'fd', 'kill'):\n"
            "            try:\n"
            "                if attempt == 'kill':\n"
            "                    os.kill(int(name), signal.SIGKILL)\n"
            "                    gone(int(name))\n"
            "                elif attempt == 'mem':\n"
            "                    open(f'/proc/{name}/mem', 'rb').close()\n"
            "                else:\n"
            "                    os.close(os.open(f'/proc/{name}/fd/3', os.O_WRONLY))\n"
            "                hits += 1\n"
            "            except OSError:\n"
            "                pass\n"
            "    return hits\n"
            "def add(a, b):\n    return reach() if (a, b) == (0, 0) else None\n")
REACH = ["assert add(1, 2) == 3", "assert add(0, 0) == 0"]  # the second passes only if every attempt failed


@pytest.mark.skipif(config.landlock_abi() < 6, reason="signal scoping needs Landlock ABI 6 (Linux 6.12)")
def test_the_next_solutions_waiting_process_is_out_of_reach(pool: Sandbox) -> None:
    """While its tests run, solution 0 finds its siblings (the processes forked for the solutions after it) and
    tries to kill them, open their memory and their pipes; every attempt fails, and the solutions after it are
    judged as they would be alone."""
    results = run_python_tests_many([SABOTEUR, GOOD, SABOTEUR, GOOD], REACH, sandbox=pool, timeout=5.0)
    assert [r.passed for r in results] == [1, 2, 1, 2], [r.details for r in results]


def test_a_killed_waiting_process_is_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without Landlock a solution can kill the processes waiting for the next solutions (it then fails its own
    second test); each dead one is skipped and the next solutions get fresh ones: their verdicts are unchanged."""
    monkeypatch.setenv("CROSSGYM_SANDBOX_DISABLE", "landlock")
    bare = Sandbox("default", workers=1)
    try:
        results = run_python_tests_many([SABOTEUR, GOOD, GOOD, GOOD], REACH, sandbox=bare, timeout=5.0)
    finally:
        bare.close()
    assert [r.passed for r in results] == [0, 2, 2, 2], [r.details for r in results]


def test_a_group_larger_than_the_process_limit_still_gets_every_verdict(pool: Sandbox) -> None:
    """With room for only a few processes the task forks what it can ahead and the spawner serves the rest."""
    from crossgym.sandbox import Limits

    group = [GOOD, "def add(a, b):\n    return 3\n"] * 6
    results = run_python_tests_many(group, TESTS, sandbox=pool, limits=Limits(processes=4))
    assert [r.passed for r in results] == [2, 1] * 6
