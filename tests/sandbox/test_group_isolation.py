"""Group isolation: in run_python_tests_many every solution gets exactly the verdict run_python_tests gives it alone,
whatever its siblings do. A correct saboteur that made its siblings fail would raise its own GRPO advantage, so
each saboteur below is correct itself and tries to break the solutions judged after it (and before, through what
they share: pipes, directories, the harness, signals). Every attack is bounded (finite writes, counted forks,
children that end by themselves within seconds, signals only to its own task's processes, files only below this
test's own pool: without Landlock a planter could otherwise write to /tmp)."""

from __future__ import annotations

import os
from typing import Any

import pytest

from crossgym.sandbox import Sandbox, run_python_tests, run_python_tests_many

TESTS = ["assert add(1, 2) == 3", "assert add(-1, 1) == 0", "assert add(20, 22) == 42"]
GOOD = "def add(a, b):\n    return a + b\n"
WRONG = "def add(a, b):\n    return a - b\n"
# honest, and it checks its own world: an empty directory of its own, working stdlib imports, temporary files,
# a child process, output on both streams (more than a shrunken pipe holds); anything a sibling left makes it wrong
PROBE = """
import collections, json, os, subprocess, sys, tempfile
def add(a, b):
    names = sorted(os.listdir('.'))
    with open('mine.txt', 'w') as fh:
        fh.write(json.dumps([a, b]))
    with open('mine.txt') as fh:
        x, y = json.loads(fh.read())
    with tempfile.NamedTemporaryFile() as tmp:
        tmp.write(b'y' * 1000)
    child = subprocess.run(['/bin/echo', 'hi'], capture_output=True).stdout == b'hi\\n'
    print('probe', a, b, flush=True)
    sys.stderr.write('e' * 70000)
    sys.stderr.flush()
    ok = names in ([], ['mine.txt']) and collections.Counter('aab')['a'] == 2 and child and os.umask(0o22) == 0o22
    return x + y if ok else None
"""

CORRECT = "\ndef add(a, b):\n    return a + b\n"
SABOTEURS = {
    # floods the output it shares with (before: the whole task's stdout, whose limit ends the task)
    "flood": "import os\nfor _ in range(640):\n    os.write(1, b'A' * 65536)\nos.write(2, b'E' * 65536)\n",
    # non-blocking, shrunken pipes: a sibling's print then fails with BlockingIOError
    "nonblocking": ("import fcntl, os\nfor fd in (0, 1, 2):\n    try:\n"
                    "        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)\n"
                    "        fcntl.fcntl(fd, 1031, 4096)\n    except OSError:\n        pass\n"
                    "for fd in (1, 2):\n    try:\n        for _ in range(64):\n            os.write(fd, b'x' * 4096)\n"
                    "    except OSError:\n        pass\n"),
    # plants modules named like the stdlib (and a helper) wherever it can write, then makes them hard to remove
    "plants": """
import os, sys
BAD = 'raise ImportError("planted")\\n'
def plant(d):
    try:
        os.makedirs(os.path.join(d, 'json'), exist_ok=True)
        for name in ('json/__init__.py', 'collections.py', 'tempfile.py', 'subprocess.py', 'helper.py'):
            with open(os.path.join(d, name), 'w') as fh:
                fh.write(BAD)
        os.chmod(os.path.join(d, 'json'), 0o555)
        os.makedirs(os.path.join(d, 'locked', 'inner'), exist_ok=True)
        os.chmod(os.path.join(d, 'locked'), 0)
        return True
    except OSError:
        return False
places = {os.getcwd(), os.environ.get('HOME', '.'), os.environ.get('TMPDIR', '.')} | set(sys.path)
d = os.getcwd()
for _ in range(6):
    d = os.path.dirname(d)
    places.add(d)
    try:
        places.update(os.path.join(d, n) for n in os.listdir(d))
    except OSError:
        pass
places = {p for p in places if p.startswith(ROOT)}  # bounded: never outside this test's own pool
for p in sorted(places):
    if p and os.path.isdir(p):
        plant(p)
for p in sorted(places):
    try:
        os.chmod(p, 0o500)
    except OSError:
        pass
""",
    # forged result lines and frames on every fd it has
    "forges": ("import os, struct\nline = b'{\"unit\": 0, \"ok\": true, \"error\": null}\\n{\"done\": true}\\n'\n"
               "frame = b'[\"ok\",[\"ok\",{}]]'\nfor fd in range(0, 64):\n    try:\n"
               "        os.write(fd, line + struct.pack('>I', len(frame)) + frame)\n    except OSError:\n        pass\n"),
    # names modules so that a harness importing what a solution imported spends the group's time
    "imports": ("import importlib\nfor name in ('this', 'asyncio', 'email.mime.text', 'http.server', 'xml.dom.minidom',\n"
                "             'unittest', 'doctest', 'pydoc', 'sqlite3', 'multiprocessing.pool', 'tkinter', 'idlelib',\n"
                "             'turtle', 'concurrent.futures', 'logging.handlers', 'ftplib', 'smtplib', 'tarfile'):\n"
                "    try:\n        globals()[name.replace('.', '_')] = importlib.import_module(name)\n"
                "    except Exception:\n        pass\n"),
    # changes everything a process can change about itself and its directory
    "environment": ("import os, resource, sys\nos.umask(0o777)\nos.environ.update(PATH='', HOME='/nonexistent')\n"
                    "resource.setrlimit(resource.RLIMIT_NOFILE, (16, 16))\n"
                    "for res in (resource.RLIMIT_NPROC, resource.RLIMIT_FSIZE):\n    try:\n"
                    "        resource.setrlimit(res, (1, 1))\n    except (OSError, ValueError):\n        pass\n"
                    "os.chmod('.', 0)\nos.chdir('/')\nsys.setrecursionlimit(60)\n"),
    # kills its harness, its process group and every other child of its parent (the siblings waiting their turn)
    "signals": ("import os, signal\nme, parent = os.getpid(), os.getppid()\n"
                "for name in os.listdir('/proc'):\n    if not name.isdigit() or int(name) == me:\n        continue\n"
                "    try:\n        with open(f'/proc/{name}/stat') as fh:\n"
                "            ppid = int(fh.read().rsplit(')', 1)[1].split()[1])\n"
                "        if ppid == parent:\n            os.kill(int(name), signal.SIGKILL)\n"
                "    except (OSError, ValueError, IndexError):\n        pass\n"
                "for target in (parent, 0):\n    try:\n"
                "        (os.killpg if target == 0 else os.kill)(target, signal.SIGKILL)\n"
                "    except OSError:\n        pass\n"),
    # (ours) leaves children that keep planting into every directory they can reach for three seconds
    "lingers": ("import os, time\nif os.fork() == 0:\n    end = time.monotonic() + 3\n"
                "    top = os.path.dirname(os.getcwd())\n"
                "    if not top.startswith(ROOT):\n        os._exit(0)\n"  # bounded: only inside this test's own pool
                "    while time.monotonic() < end:\n        try:\n"
                "            for n in os.listdir(top):\n                try:\n"
                "                    with open(os.path.join(top, n, 'json.py'), 'w') as fh:\n"
                "                        fh.write('raise ImportError')\n                except OSError:\n"
                "                    pass\n        except OSError:\n            pass\n        time.sleep(0.01)\n"
                "    os._exit(0)\n"),
    # (ours) takes every process its uid may still start, and leaves them waiting
    "processes": ("import os, time\nn = 0\ntry:\n    while n < 200:\n        if os.fork() == 0:\n"
                  "            time.sleep(5)\n            os._exit(0)\n        n += 1\nexcept OSError:\n    pass\n"),
}


def outcome(result: Any) -> tuple[Any, ...]:
    return result.passed, result.total, result.error, tuple((d.passed, d.error) for d in result.details)


@pytest.fixture(scope="module")
def alone(sandbox: Sandbox) -> dict[str, tuple[Any, ...]]:
    """Each honest solution's verdict judged alone (its baseline)."""
    return {name: outcome(run_python_tests(src, TESTS, sandbox=sandbox, timeout=5.0))
            for name, src in (("good", GOOD), ("wrong", WRONG), ("probe", PROBE))}


def test_the_probe_passes_alone(alone: dict[str, tuple[Any, ...]]) -> None:
    assert alone["probe"][0] == 3 and alone["good"][0] == 3 and alone["wrong"][0] == 0


@pytest.mark.parametrize("attack", sorted(SABOTEURS))
def test_no_saboteur_changes_a_siblings_verdict(sandbox: Sandbox, alone: dict[str, tuple[Any, ...]],
                                                attack: str) -> None:
    saboteur = f"ROOT = {sandbox.scratch_root + os.sep!r}\n" + SABOTEURS[attack] + CORRECT
    members = [("probe", PROBE), ("saboteur", saboteur), ("good", GOOD), ("saboteur", saboteur),
               ("wrong", WRONG), ("probe", PROBE)]
    group = run_python_tests_many([src for _, src in members], TESTS, sandbox=sandbox, timeout=5.0)
    solo_saboteur = outcome(run_python_tests(saboteur, TESTS, sandbox=sandbox, timeout=5.0))
    for (name, _), result in zip(members, group, strict=True):
        expected = solo_saboteur if name == "saboteur" else alone[name]
        assert outcome(result) == expected, (attack, name, result.details, result.error)
    assert group[1].passed == solo_saboteur[0]  # the saboteur gains nothing


REBORN = ("import os\ndef add(a, b):\n    if os.path.exists('state.txt'):\n        return a + b\n"
          "    with open('state.txt', 'w') as fh:\n        fh.write('x')\n    os._exit(0)\n")


def test_a_fresh_process_works_in_its_solutions_directory_only(sandbox: Sandbox,
                                                               alone: dict[str, tuple[Any, ...]]) -> None:
    """A solution whose process died goes on in a fresh one, in its own directory (it finds what it wrote there,
    as alone), and nobody else's: the next solution finds nothing of it."""
    solo = outcome(run_python_tests(REBORN, TESTS, sandbox=sandbox, timeout=5.0))
    assert solo[0] == 2 and not solo[3][0][0]  # the first call ended its process; the next ones found the file
    group = run_python_tests_many([REBORN, PROBE, REBORN, GOOD], TESTS, sandbox=sandbox, timeout=5.0)
    assert [outcome(r) for r in group] == [solo, alone["probe"], solo, alone["good"]]


# a member whose solution makes the harness load a module (an import it names, a Decimal it returns) changed what
# a later member's tests saw: an exception class caught by name, a module the tests had from the solution's imports
BY_NAME = ["def test_frozen():\n    p = make_point(1, 2)\n    try:\n        p.x = 5\n    except Exception as e:\n"
           "        assert type(e).__name__ == 'FrozenInstanceError', type(e).__name__\n    else:\n"
           "        assert False, 'mutable'",
           "def test_bad():\n    try:\n        to_dec('abc')\n    except Exception as e:\n"
           "        assert type(e).__name__ == 'InvalidOperation', type(e).__name__\n    else:\n        assert False",
           "assert inspect.signature(make_point).parameters['x'].name == 'x'"]
FROZEN = ("import inspect\nfrom dataclasses import dataclass\nfrom decimal import Decimal\n"
          "@dataclass(frozen=True)\nclass Point:\n    x: int\n    y: int\n"
          "def make_point(x, y):\n    return Point(x, y)\ndef to_dec(s):\n    return Decimal(s)\n")
LOADERS = ["import dataclasses, decimal, inspect\ndef make_point(x, y):\n    return None\ndef to_dec(s):\n    return None\n",
           "from decimal import Decimal\ndef make_point(x, y):\n    return Decimal(1)\ndef to_dec(s):\n"
           "    raise __import__('decimal').InvalidOperation('x')\n"]


@pytest.mark.parametrize("loader", [0, 1])
def test_what_an_earlier_member_loaded_changes_no_verdict(sandbox: Sandbox, loader: int) -> None:
    solo = outcome(run_python_tests(FROZEN, BY_NAME, sandbox=sandbox, timeout=5.0))
    assert solo[:2] == (2, 3), solo  # as in one process, but for the module the tests never imported themselves
    group = run_python_tests_many([LOADERS[loader], FROZEN, FROZEN], BY_NAME, sandbox=sandbox, timeout=5.0)
    assert [outcome(r) for r in group[1:]] == [solo, solo]


# every process of the slot's uid (the harness, the group's waiting solution processes, the slot's spawner) set to
# SCHED_IDLE, nice 19 and one CPU: no Landlock rule covers that (the same uid is enough), and what the spawner is
# given, every process it makes in the later tasks of the slot inherits
DESCHEDULE = """
import os
for entry in os.listdir('/proc'):
    if entry.isdigit() and int(entry) != os.getpid():
        for change in (lambda pid: os.sched_setaffinity(pid, {min(os.sched_getaffinity(0))}),
                       lambda pid: os.setpriority(os.PRIO_PROCESS, pid, 19),
                       lambda pid: os.sched_setscheduler(pid, os.SCHED_IDLE, os.sched_param(0))):
            try:
                change(int(entry))
            except OSError:
                pass
for which in (os.PRIO_USER, os.PRIO_PGRP):
    try:
        os.setpriority(which, 0, 19)
    except OSError:
        pass
"""
SCHEDULING = "[os.getpriority(os.PRIO_PROCESS, 0), os.sched_getscheduler(0), sorted(os.sched_getaffinity(0))]"


def test_no_solution_changes_another_processs_scheduling(sandbox: Sandbox) -> None:
    """A saboteur that deschedules every process of its uid left its siblings' units (and the harness's own
    checks) failing, and the spawner's processes in a later task too; now each process's scheduling is its own."""
    mine = [os.getpriority(os.PRIO_PROCESS, 0), os.sched_getscheduler(0), sorted(os.sched_getaffinity(0))]  # (the
    # pool's processes inherit this process's scheduling)
    probe = f"import os\ndef add(a, b):\n    return a + b if {SCHEDULING} == {mine!r} else None\n"
    reborn = REBORN.replace("return a + b", f"return a + b if {SCHEDULING} == {mine!r} else None")
    tests = TESTS + [f"import os\nassert {SCHEDULING} == {mine!r}"]
    before = outcome(run_python_tests(reborn, tests, sandbox=sandbox, timeout=5.0))  # (a spawner's process)
    alone = outcome(run_python_tests(probe, tests, sandbox=sandbox, timeout=5.0))
    assert before[:2] == (3, 4) and alone[:2] == (4, 4), (before, alone)
    group = run_python_tests_many([DESCHEDULE + CORRECT, probe, probe], tests, sandbox=sandbox, timeout=5.0)
    assert [outcome(r) for r in group[1:]] == [alone, alone]
    for _ in range(2):  # (a later task of either slot: the spawner of each was within the saboteur's reach)
        assert outcome(run_python_tests(reborn, tests, sandbox=sandbox, timeout=5.0)) == before
