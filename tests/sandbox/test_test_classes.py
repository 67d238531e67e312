"""Test classes as test suites: unittest.TestCase subclasses (BigCodeBench's shape) and pytest's ``class Test*``.

Each ``test*`` method is one unit, with unittest's set-up and tear-down around it; every test runs through
run_python_tests and as the second of a group of two identical solutions (both verdicts must agree).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from crossgym.sandbox import Sandbox, TestRunResult, run_python_tests, run_python_tests_many

SQUARE = "def task_func(x):\n    return x * x\n"
UNITTEST = '''
import unittest

class TestCases(unittest.TestCase):
    def test_two(self):
        self.assertEqual(task_func(2), 4)

    def test_three(self):
        self.assertEqual(task_func(3), 9)

    def test_negative(self):
        for x in (-1, -2):
            with self.subTest(x=x):
                self.assertEqual(task_func(x), x * x)

if __name__ == "__main__":
    unittest.main()
'''
GROUPED = {"on": False}


@pytest.fixture(autouse=True, params=["single", "group"])
def _call(request: pytest.FixtureRequest) -> Iterator[None]:
    GROUPED["on"] = request.param == "group"
    yield
    GROUPED["on"] = False


def judge(sandbox: Sandbox, solution: str, tests: str, **kwargs: object) -> TestRunResult:
    kwargs.setdefault("timeout", 10.0)
    if not GROUPED["on"]:
        return run_python_tests(solution, tests, sandbox=sandbox, **kwargs)  # type: ignore[arg-type]
    first, second = run_python_tests_many([solution, solution], tests, sandbox=sandbox, **kwargs)  # type: ignore[arg-type]
    assert [(d.passed, d.error) for d in first.details] == [(d.passed, d.error) for d in second.details]
    assert (first.passed, first.total, first.error) == (second.passed, second.total, second.error)
    return second


def test_each_test_method_is_a_unit_in_unittest_order(sandbox: Sandbox) -> None:
    good = judge(sandbox, SQUARE, UNITTEST, entry_point="task_func")
    assert good.all_passed and (good.passed, good.total) == (3, 3) and good.error is None
    assert [d.name for d in good.details] == ["TestCases.test_negative()", "TestCases.test_three()",
                                              "TestCases.test_two()"]  # by name, as unittest's loader runs them
    wrong = judge(sandbox, "def task_func(x):\n    return x * 2\n", UNITTEST, entry_point="task_func")
    assert (wrong.passed, wrong.total) == (1, 3)  # 2 * 2 == 4: only test_two
    assert [d.passed for d in wrong.details] == [False, False, True]
    assert wrong.details[0].error == "AssertionError: -2 != 1"  # the first failing subTest ends the test


def test_set_up_and_tear_down_run_around_each_test_as_unittest_runs_them(sandbox: Sandbox) -> None:
    tests = '''
import unittest
EVENTS = []

class TestOrder(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        EVENTS.append("class")
        cls.base = task_func(1)

    def setUp(self):
        EVENTS.append("setUp")
        self.value = task_func(2)
        self.addCleanup(EVENTS.append, "cleanup")

    def tearDown(self):
        EVENTS.append("tearDown")

    def test_a(self):
        self.assertEqual(self.value, 4)
        self.assertEqual(self.base, 1)

    def test_b(self):
        self.assertEqual(EVENTS, ["class", "setUp", "tearDown", "cleanup", "setUp"])

    @classmethod
    def tearDownClass(cls):
        print("tearDownClass after", EVENTS)
'''
    got = judge(sandbox, SQUARE, tests, entry_point="task_func")
    assert got.all_passed and (got.passed, got.total) == (2, 2), got.details
    assert [d.name for d in got.details] == ["TestOrder.test_a()", "TestOrder.test_b()"]
    assert ("tearDownClass after ['class', 'setUp', 'tearDown', 'cleanup', 'setUp', 'tearDown', 'cleanup']"
            in got.exec.stdout)


def test_a_failing_set_up_class_fails_every_test_of_the_class(sandbox: Sandbox) -> None:
    tests = '''
import unittest

class TestBroken(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        raise ValueError("no fixture")

    def test_a(self):
        self.assertEqual(task_func(2), 4)

    def test_b(self):
        self.assertEqual(task_func(3), 9)
'''
    got = judge(sandbox, SQUARE, tests, entry_point="task_func")
    assert (got.passed, got.total) == (0, 2) and not got.all_passed
    assert "no fixture" in (got.details[0].error or "") and "set-up of TestBroken failed" in (got.details[1].error or "")


def test_skips_pass_as_in_unittest_but_a_solution_cannot_skip(sandbox: Sandbox) -> None:
    tests = '''
import unittest

class TestSkips(unittest.TestCase):
    @unittest.skip("not here")
    def test_decorated(self):
        self.assertEqual(task_func(2), 5)

    def test_skipped_inside(self):
        self.skipTest("no network")

    def test_real(self):
        self.assertEqual(task_func(2), 4)
'''
    got = judge(sandbox, SQUARE, tests, entry_point="task_func")
    assert got.all_passed and (got.passed, got.total) == (3, 3)
    hack = "import unittest\n\ndef task_func(x):\n    raise unittest.SkipTest('skip me')\n"
    tricked = judge(sandbox, hack, tests, entry_point="task_func")
    assert (tricked.passed, tricked.total) == (2, 3)  # the two skips the tests make, never the solution's
    assert [d.name for d in tricked.details] == ["TestSkips.test_decorated()", "TestSkips.test_real()",
                                                 "TestSkips.test_skipped_inside()"]
    assert [d.passed for d in tricked.details] == [True, False, True] and "SkipTest" in (tricked.details[1].error or "")


def test_pytest_style_classes_with_their_hooks(sandbox: Sandbox) -> None:
    tests = '''
class TestSquare:
    def setup_method(self, method):
        self.inputs = [1, 2, 3]

    def test_values(self):
        assert [task_func(x) for x in self.inputs] == [1, 4, 9]

    def test_zero(self):
        assert task_func(0) == 0

    def helper(self):
        assert False, "not a test: never run"

class Helpers:
    def test_not_collected(self):
        assert False
'''
    got = judge(sandbox, SQUARE, tests, entry_point="task_func")
    assert got.all_passed and [d.name for d in got.details] == ["TestSquare.test_values()", "TestSquare.test_zero()"]
    wrong = judge(sandbox, "def task_func(x):\n    return 0\n", tests, entry_point="task_func")
    assert (wrong.passed, wrong.total) == (1, 2)


def test_a_test_method_that_hangs_times_out_and_the_next_still_runs(sandbox: Sandbox) -> None:
    tests = '''
import unittest

class TestTime(unittest.TestCase):
    def test_a_hangs(self):
        self.assertEqual(task_func(-1), 1)

    def test_b_quick(self):
        self.assertEqual(task_func(3), 9)
'''
    solution = "def task_func(x):\n    while x < 0:\n        pass\n    return x * x\n"
    got = judge(sandbox, solution, tests, entry_point="task_func", test_timeout=0.5)
    assert [d.passed for d in got.details] == [False, True]
    assert got.details[0].error == "timeout" and (got.passed, got.total) == (1, 2)


def test_in_place_changes_in_a_test_method_are_seen_by_its_later_statements(sandbox: Sandbox) -> None:
    tests = '''
import unittest

class TestInPlace(unittest.TestCase):
    def test_sorts_in_place(self):
        xs = [3, 1, 2]
        task_func(xs)
        self.assertEqual(xs, [1, 2, 3])

    def test_returns_sorted_copy_of_its_argument(self):
        xs = [3, 1, 2]
        self.assertEqual(task_func(xs), sorted(xs))
'''
    honest = judge(sandbox, "def task_func(xs):\n    xs.sort()\n    return xs\n", tests, entry_point="task_func")
    assert honest.all_passed
    emptying = "def task_func(xs):\n    del xs[:]\n    return []\n"
    got = judge(sandbox, emptying, tests, entry_point="task_func")
    assert (got.passed, got.total) == (0, 2)  # sorted(xs) is taken of the argument as it was passed


CLEANUPS = '''
import os
import unittest

class TestReport(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.addClassCleanup(os.remove, "index.txt")  # the class's files must exist by the end

    def test_report(self):
        self.addCleanup(os.remove, "report.txt")  # the test's file must exist: removing it checks that
        self.assertEqual(task_func(2), 4)

    def test_index(self):
        self.assertEqual(task_func(3), 9)
'''
WRITES = ("def task_func(x):\n    for name in ('report.txt', 'index.txt'):\n        open(name, 'w').close()\n"
          "    return x * x\n")


def test_a_cleanup_that_fails_fails_as_unittest_counts_it(sandbox: Sandbox) -> None:
    """A failing ``addCleanup`` is the test's error and a failing ``addClassCleanup`` the class's, as unittest's
    runner counts them: the cleanups ran through ``doCleanups()``, which swallowed what they raised (so a solution
    that never wrote the file the cleanup removes passed), and class cleanups never ran."""
    honest = judge(sandbox, WRITES, CLEANUPS, entry_point="task_func")
    assert honest.all_passed and (honest.passed, honest.total) == (2, 2), honest.details
    lazy = judge(sandbox, SQUARE, CLEANUPS, entry_point="task_func")
    assert (lazy.passed, lazy.total) == (1, 3), lazy.details  # one more failure: the class's cleanup
    assert [(d.name, d.passed) for d in lazy.details] == [("TestReport.test_index()", True),
                                                          ("TestReport.test_report()", False),
                                                          ("setup", False)]
    assert "report.txt" in (lazy.details[1].error or "") and "index.txt" in (lazy.details[2].error or "")


def test_pytest_hooks_that_take_no_method_run_as_pytest_runs_them(sandbox: Sandbox) -> None:
    """pytest calls ``setup_method(self)`` and ``teardown_method(self)`` without the method (the argument is
    optional): each test of such a class failed with a TypeError, the correct solution's too; a check in the
    tear-down counts."""
    tests = '''
class TestSquare:
    def setup_method(self):
        self.inputs = [1, 2, 3]

    def teardown_method(self):
        assert task_func(0) == 0

    def test_values(self):
        assert [task_func(x) for x in self.inputs] == [1, 4, 9]
'''
    good = judge(sandbox, SQUARE, tests, entry_point="task_func")
    assert good.all_passed and (good.passed, good.total) == (1, 1), good.details
    off = judge(sandbox, "def task_func(x):\n    return x * x + (x == 0)\n", tests, entry_point="task_func")
    assert (off.passed, off.total) == (0, 1), off.details


MODULE_SET_UP = '''
import unittest

def setUpModule():
    global TABLE
    TABLE = task_table(3)

class TestSquare(unittest.TestCase):
    def test_one(self):
        self.assertEqual(task_func(2), 4)

    def test_two(self):
        self.assertEqual(task_func(3), 9)
'''
PYTEST_MODULE_SET_UP = '''
def setup_module(module):
    global TABLE
    TABLE = task_table(3)

def test_one():
    assert task_func(2) == 4

def test_two():
    assert task_func(3) == 9
'''


@pytest.mark.parametrize("tests", [MODULE_SET_UP, PYTEST_MODULE_SET_UP], ids=["unittest", "pytest"])
def test_a_failing_module_set_up_fails_every_test_after_it(sandbox: Sandbox, tests: str) -> None:
    """unittest runs no test of a module whose ``setUpModule`` raised, and pytest errors each test after a failing
    ``setup_module``: the tests ran on, so a solution that broke the set-up kept the credit of every test that did
    not read what it built (2 of 3)."""
    table = "def task_table(n):\n    return list(range(n))\n"
    honest = judge(sandbox, SQUARE + table, tests, entry_point="task_func")
    assert honest.all_passed and (honest.passed, honest.total) == (2, 2), honest.details
    broken = judge(sandbox, SQUARE + "def task_table(n):\n    raise ValueError('no table')\n", tests,
                   entry_point="task_func")
    assert broken.passed == 0 and broken.total == 3, broken.details  # both tests, and the set-up itself
    assert all("no table" in (d.error or "") for d in broken.details), broken.details
