"""run_python_tests_many: a group judged in one harness gives each solution the verdict run_python_tests gives
it, and nothing one solution does (processes, files, signals) reaches the next one's verdict."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from crossgym.sandbox import Sandbox, arun_python_tests_many, run_python_tests, run_python_tests_many, testing

TESTS = ["assert add(1, 2) == 3", "assert add(-1, 1) == 0", "assert add('a', 'b') == 'ab'"]
GOOD = "def add(a, b):\n    return a + b\n"
GROUP = [
    GOOD,
    "def add(a, b):\n    return a - b\n",
    "import sys\ndef add(a, b):\n    sys.exit(0)\n",
    "class Any:\n    def __eq__(self, other):\n        return True\ndef add(a, b):\n    return Any()\n",
    "def add(a, b)\n    return a + b\n",
    "def add(a, b):\n    return a + b if isinstance(a, int) else None\n",
    GOOD,
]


def outcome(result: Any) -> tuple[Any, ...]:
    return result.passed, result.total, result.error, tuple((d.passed, d.error) for d in result.details)


def test_each_verdict_is_the_one_a_single_call_gives(sandbox: Sandbox) -> None:
    group = run_python_tests_many(GROUP, TESTS, sandbox=sandbox, timeout=5.0)
    single = [run_python_tests(s, TESTS, sandbox=sandbox, timeout=5.0) for s in GROUP]
    assert [outcome(r) for r in group] == [outcome(r) for r in single]
    assert [r.passed for r in group] == [3, 0, 0, 0, 0, 2, 3]
    assert all(r.exec is not None and r.exec.tier == sandbox.tier for r in group)
    assert run_python_tests_many([], TESTS, sandbox=sandbox) == []


def test_nothing_a_solution_leaves_reaches_the_next(sandbox: Sandbox, marker: Any) -> None:
    leaves = ("import os\nopen('helper.py', 'w').write('def add(a, b):\\n    return a + b\\n')\n"
              "if os.fork() == 0:\n"
              f"    os.execv('/bin/sleep', ['sleep', {marker.arg!r}])\n"
              "def add(a, b):\n    return None\n")
    finds = ("import os\n"
             "def add(a, b):\n"
             "    from helper import add as borrowed\n"  # only a file the previous solution wrote would have it
             "    return borrowed(a, b)\n"
             "def alive():\n"
             "    n = 0\n"
             "    for pid in filter(str.isdigit, os.listdir('/proc')):\n"
             "        try:\n"
             "            with open(f'/proc/{pid}/cmdline', 'rb') as fh:\n"
             f"                n += fh.read().endswith(b'\\0' + {marker.arg.encode()!r} + b'\\0')\n"
             "        except OSError:\n"
             "            pass\n"
             "    return n\n")
    first, second = run_python_tests_many([leaves, finds], TESTS + ["assert alive() == 0"], sandbox=sandbox,
                                          timeout=5.0)
    assert first.passed == 0 and first.total == 4
    assert second.passed == 1 and second.details[0].error is not None and "helper" in second.details[0].error
    assert marker.survivors() == []


def test_signals_and_forged_results_do_not_reach_the_next(sandbox: Sandbox) -> None:
    saboteur = ("import os, signal\n"
                "for fd in range(3, 64):\n"
                "    try:\n"
                "        os.write(fd, b'{\"unit\": 0, \"ok\": true, \"error\": null}\\nok')\n"
                "    except OSError:\n"
                "        pass\n"
                "for target in (os.getppid(), os.getpgrp()):\n"
                "    try:\n"
                "        (os.killpg if target == os.getpgrp() else os.kill)(target, signal.SIGKILL)\n"
                "    except OSError:\n"
                "        pass\n"
                "def add(a, b):\n    return None\n")
    results = run_python_tests_many([saboteur, GOOD, saboteur, GOOD], TESTS, sandbox=sandbox, timeout=5.0)
    assert [r.passed for r in results] == [0, 3, 0, 3]
    assert results[1].all_passed and results[3].all_passed


def test_each_solution_has_its_own_time_budget(sandbox: Sandbox) -> None:
    hangs = "def add(a, b):\n    while True:\n        pass\n"
    results = run_python_tests_many([hangs, GOOD, hangs, GOOD], TESTS, sandbox=sandbox, timeout=1.0)
    assert [r.passed for r in results] == [0, 3, 0, 3]
    assert results[0].details[0].error == "timeout" and results[1].error is None


def test_async_twin(sandbox: Sandbox) -> None:
    results = asyncio.run(arun_python_tests_many([GOOD, "def add(a, b):\n    return 7\n"], TESTS, sandbox=sandbox))
    assert [r.passed for r in results] == [3, 0]


def test_the_harness_plans_itself_when_the_callers_bytecode_differs(sandbox: Sandbox,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    tests = "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate('a', 'b') == 'ab'\n"
    planned_here = run_python_tests_many([GOOD, "def add(a, b):\n    return 3\n"], tests, entry_point="add",
                                         prelude="def add(a, b):\n    pass\n", sandbox=sandbox)
    monkeypatch.setattr(testing, "MAGIC_NUMBER", b"\0\0\r\n")
    testing._planned.cache_clear()
    planned_there = run_python_tests_many([GOOD, "def add(a, b):\n    return 3\n"], tests, entry_point="add",
                                          prelude="def add(a, b):\n    pass\n", sandbox=sandbox)
    testing._planned.cache_clear()
    assert [outcome(r) for r in planned_here] == [outcome(r) for r in planned_there]
    assert [r.passed for r in planned_there] == [2, 1]
