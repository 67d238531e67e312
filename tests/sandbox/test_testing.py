"""run_python_tests: partial credit, the accepted test shapes, and the reward hacks it must not reward.

Every test runs twice: once through run_python_tests, once as the second solution of a group of two identical
ones through run_python_tests_many (both verdicts of the group must agree).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator

import pytest

from crossgym.sandbox import Sandbox, TestRunResult, run_python_tests, run_python_tests_many

ADD = "def add(a, b):\n    return a + b\n"
ASSERTS = ["assert add(1, 2) == 3", "assert add(-1, 1) == 0", "assert add('a', 'b') == 'ab'"]
GROUPED = {"on": False}


@pytest.fixture(autouse=True, params=["single", "group"])
def _call(request: pytest.FixtureRequest) -> Iterator[None]:
    """Which call the module's tests go through."""
    GROUPED["on"] = request.param == "group"
    yield
    GROUPED["on"] = False


def judge(sandbox: Sandbox, solution: str, tests: object = ASSERTS, **kwargs: object) -> TestRunResult:
    timeout = kwargs.pop("timeout", 5.0)
    if not GROUPED["on"]:
        return run_python_tests(solution, tests, sandbox=sandbox, timeout=timeout, **kwargs)  # type: ignore[arg-type]
    first, second = run_python_tests_many([solution, solution], tests, sandbox=sandbox,  # type: ignore[arg-type]
                                          timeout=timeout, **kwargs)  # type: ignore[arg-type]
    assert [(d.passed, d.error) for d in first.details] == [(d.passed, d.error) for d in second.details]
    assert (first.passed, first.total, first.error) == (second.passed, second.total, second.error)
    return second


# ------------------------------------------------------------------------------------ shapes
def test_list_of_asserts_gives_partial_credit(sandbox: Sandbox) -> None:
    good = judge(sandbox, ADD)
    assert (good.passed, good.total, good.all_passed, good.error) == (3, 3, True, None)
    half = judge(sandbox, "def add(a, b):\n    return a + b if isinstance(a, int) and a > 0 else None\n")
    assert (half.passed, half.total, half.fraction) == (1, 3, 1 / 3)
    assert [d.passed for d in half.details] == [True, False, False]
    assert half.details[1].name == "assert add(-1, 1) == 0" and half.details[1].error == "AssertionError"
    assert half.exec is not None and half.exec.tier == sandbox.tier


def test_humaneval_check_with_entry_point_and_prelude(sandbox: Sandbox) -> None:
    prompt = 'def helper(x):\n    return x * 2\n\n\ndef double_all(xs):\n    """Double every item."""\n'
    completion = "    return [helper(x) for x in xs]\n"
    tests = ("METADATA = {}\n\n\ndef check(candidate):\n    assert candidate([]) == []\n"
             "    assert candidate([1, 2]) == [2, 4]\n    for i in range(20):\n        assert candidate([i]) == [helper(i)]\n")
    r = judge(sandbox, prompt + completion, tests, entry_point="double_all", prelude=prompt)
    assert (r.passed, r.total, r.error) == (3, 3, None)
    cheat = judge(sandbox, prompt.replace("x * 2", "0") + "    return [0 for x in xs]\n", tests,
                  entry_point="double_all", prelude=prompt)  # redefines the prompt's helper: the prelude's wins
    assert cheat.passed == 1 and not cheat.all_passed


def test_pytest_style_functions_and_top_level_asserts(sandbox: Sandbox) -> None:
    tests = "import math\nTOL = 1e-9\n\ndef test_small():\n    assert add(2, 2) == 4\n\n" \
            "def test_float():\n    assert math.isclose(add(0.1, 0.2), 0.3, rel_tol=TOL)\n\nassert add(0, 0) == 0\n"
    r = judge(sandbox, ADD, tests)
    assert (r.passed, r.total) == (3, 3)
    assert [d.name for d in r.details] == ["assert add(0, 0) == 0", "test_small()", "test_float()"]


def test_exceptions_cross_as_builtin_types(sandbox: Sandbox) -> None:
    solution = "def parse(s):\n    return int(s)\n"
    tests = ["assert parse('12') == 12",
             "try:\n    parse('x')\n    raise AssertionError('no error')\nexcept ValueError:\n    pass"]
    assert judge(sandbox, solution, tests).passed == 2


def test_in_place_changes_generators_and_objects(sandbox: Sandbox) -> None:
    solution = ("def sort_in_place(xs):\n    xs.sort()\n\ndef count(n):\n    yield from range(n)\n\n"
                "class Box:\n    def __init__(self):\n        self.items = []\n    def put(self, x):\n"
                "        self.items.append(x)\n        return len(self.items)\n")
    tests = ["xs = [3, 1, 2]\nsort_in_place(xs)\nassert xs == [1, 2, 3]",
             "assert list(count(3)) == [0, 1, 2] and sum(count(4)) == 6",
             "b = Box()\nassert b.put('a') == 1 and b.put('b') == 2 and b.items == ['a', 'b']"]
    r = judge(sandbox, solution, tests)
    assert (r.passed, r.total) == (3, 3), r.details


def test_one_hanging_unit_keeps_the_others(sandbox: Sandbox) -> None:
    solution = "def f(x):\n    while x == 2:\n        pass\n    return x\n"
    tests = ["assert f(1) == 1", "assert f(2) == 2", "assert f(3) == 3"]
    start = time.monotonic()
    r = judge(sandbox, solution, tests, timeout=6.0, test_timeout=0.5)
    assert time.monotonic() - start < 4.0 * (1 + GROUPED["on"])
    assert [d.passed for d in r.details] == [True, False, True]
    assert r.details[1].error == "timeout" and r.passed == 2


def test_whole_run_timeout_marks_the_rest(sandbox: Sandbox) -> None:
    r = judge(sandbox, "def f(x):\n    while True:\n        pass\n", ["assert f(1) == 1", "assert f(2) == 2"],
              timeout=1.0)
    assert r.passed == 0 and r.total == 2 and not r.all_passed
    assert all(d.error == "timeout" for d in r.details)


def test_broken_solution_and_broken_tests(sandbox: Sandbox) -> None:
    bad = judge(sandbox, "def add(a, b) return a + b")
    assert bad.passed == 0 and bad.total == 3 and bad.error is not None and bad.error.startswith("solution:")
    broken_tests = judge(sandbox, ADD, "assert add(1, 2) ==")
    assert broken_tests.total == 0 and broken_tests.error is not None and broken_tests.error.startswith("tests:")
    empty = judge(sandbox, ADD, "x = 1")
    assert empty.total == 0 and not empty.all_passed and "no test" in str(empty.error)


def test_tests_that_import_what_the_sandbox_lacks_are_a_bad_task(sandbox: Sandbox) -> None:
    """HumanEval+'s and MBPP+'s ``import numpy as np``: every solution failed at the set-up, the task's fault
    scored as a wrong answer; the run is now a "tests:" error naming the module, whatever the solution."""
    check = "import numpy as np\ndef check(candidate):\n    assert np.allclose(candidate(1, 2), 3)\n"
    for tests, kwargs in ((check, {"entry_point": "add"}), (["import no_such_pkg.sub\nassert add(1, 2) == 3"], {}),
                          (ASSERTS, {"prelude": "from no_such_pkg import x\n"})):
        r = judge(sandbox, ADD, tests, **kwargs)
        assert r.total == 0 and not r.all_passed and str(r.error).startswith("tests: the tests import "), r.error
        assert ("numpy" if tests is check else "no_such_pkg") in str(r.error)
    guarded = ("try:\n    import numpy\nexcept ImportError:\n    numpy = None\n"
               "def helper():\n    import no_such_pkg\nimport math, os.path\nfrom . import x\n"
               "assert add(1, 2) == 3\n")  # a guarded, a lazy, a standard and a relative import: judged as before
    r = judge(sandbox, ADD, guarded)
    assert r.total == 2 and r.passed == 1 and str(r.error).startswith("setup: ImportError"), r


def test_solution_output_is_kept_but_never_judged(sandbox: Sandbox) -> None:
    r = judge(sandbox, "print('loading')\ndef add(a, b):\n    print('adding', a, b)\n    return a + b\n",
              ["assert add(1, 2) == 3"])
    assert r.all_passed and r.exec is not None and "loading" in r.exec.stdout and "adding 1 2" in r.exec.stdout


# ------------------------------------------------------------------------------ reward hacks
def test_printing_a_success_marker_does_not_pass(sandbox: Sandbox) -> None:
    solution = ("import sys\nprint('passed'); print('All tests passed'); print('OK')\n"
                "print('{\"unit\": 0, \"ok\": true, \"error\": null}')\ndef add(a, b):\n    return None\n")
    r = judge(sandbox, solution)
    assert r.passed == 0 and r.total == 3


def test_exiting_early_does_not_pass(sandbox: Sandbox) -> None:
    for exit_call in ("import os\nos._exit(0)", "import sys\nsys.exit(0)", "raise SystemExit(0)", "exit()"):
        at_import = judge(sandbox, exit_call + "\n" + ADD)
        assert at_import.passed == 0 and at_import.error is not None, exit_call
        in_call = judge(sandbox, "def add(a, b):\n    " + exit_call.replace("\n", "\n    ") + "\n")
        assert in_call.passed == 0 and in_call.total == 3, exit_call


def test_objects_equal_to_everything_do_not_pass(sandbox: Sandbox) -> None:
    """A forged __eq__ earns what the plain value it holds earns (a subclass of int or str travels as its data)."""
    for cheat, plain in (("class Any:\n    def __eq__(self, other):\n        return True\n    __hash__ = None\n",
                          "None"),
                         ("class Any(int):\n    def __eq__(self, other):\n        return True\n"
                          "    __hash__ = int.__hash__\n", "0"),
                         ("class Any(str):\n    def __eq__(self, other):\n        return True\n"
                          "    __ne__ = lambda s, o: False\n", "''")):
        r = judge(sandbox, cheat + "def add(a, b):\n    return Any()\n")
        honest = judge(sandbox, f"def add(a, b):\n    return {plain}\n")
        assert r.passed == honest.passed < 2, cheat


def test_tampering_with_the_checker_does_not_pass(sandbox: Sandbox) -> None:
    solution = """
import builtins, gc, os, sys
builtins.AssertionError = type('Nope', (Exception,), {})
for name, mod in list(sys.modules.items()):
    if 'runtime' in name or 'harness' in name:
        for attr in dir(mod):
            obj = getattr(mod, attr)
            if isinstance(obj, type):
                for meth in ('fail', 'ok', 'begin', '_write', 'emit'):
                    if hasattr(obj, meth):
                        try:
                            setattr(obj, meth, lambda *a, **k: None)
                        except Exception:
                            pass
for fd in range(3, 64):
    try:
        os.write(fd, b'{"unit": 0, "ok": true, "error": null}\\n{"unit": 1, "ok": true, "error": null}\\n')
    except OSError:
        pass
try:
    os.kill(os.getpgrp(), 9)
except OSError:
    pass
def abs(x):
    return 0
def add(a, b):
    return None
"""
    r = judge(sandbox, solution, ASSERTS + ["assert abs(add(0.5, 0.25) - 0.75) < 1e-9"])
    assert r.passed == 0 and r.total == 4


def test_expected_values_are_not_in_the_solutions_memory(sandbox: Sandbox) -> None:
    expected = "CGEXPECT" + secrets.token_hex(10)
    head, tail = expected[:10], expected[10:]
    solution = f"""
import ctypes
HEAD, TAIL = {head.encode()!r}, {tail.encode()!r}
def answer():
    with open('/proc/self/maps') as maps:
        for line in maps:
            f = line.split()
            lo, hi = (int(x, 16) for x in f[0].split('-'))
            if f[1][0] != 'r' or '[v' in line or hi - lo > 1 << 28:
                continue
            data = ctypes.string_at(lo, hi - lo)
            i = data.find(HEAD)
            while i >= 0:
                if data[i + len(HEAD):i + len(HEAD) + len(TAIL)] == TAIL:
                    return (HEAD + TAIL).decode()
                i = data.find(HEAD, i + 1)
    return 'not found'
"""
    r = judge(sandbox, solution, [f"assert answer() == {expected!r}"], timeout=10.0)
    assert r.passed == 0 and r.total == 1
    control = judge(sandbox, solution + "KEPT = HEAD + TAIL\n", [f"assert answer() == {expected!r}"], timeout=10.0)
    assert control.passed == 1  # the same scan finds the value when the solution's process does hold it


def test_only_the_tests_leading_imports_must_be_installed() -> None:
    """The tests' leading block of imports is their set-up (HumanEval+'s ``import numpy as np``); an import after
    other code may be of a module that code made (a file the solution wrote, a path the tests added), judged as the
    unit runs."""
    from crossgym.sandbox._runtime import plan

    assert plan.imports('"""doc"""\nimport numpy as np\nfrom os import path\nx = 1\nimport planted', None) == \
        ["numpy", "os"]
    assert plan.imports(["import sys\nstamp('p.py')\nimport planted", "from __future__ import annotations\n"
                         "import json"], "import re\nprint(1)\nimport later") == ["sys", "json", "re"]
