"""The solution's own classes used as classes by the tests (issue 20): ``isinstance``/``issubclass`` with a class
the solution defines, and ``except``/``assertRaises`` with an exception class it defines, behave as in one process
for honest code, and cannot be gamed: the answer comes from the real type and MRO in the solution's process (no
metaclass hook, no ``__class__``), a handle of another class or a plain value is no instance, and no exception
the solution did not raise as one of its classes (a built-in ValueError, a class made with the same name) is
caught as one.

Every test runs on both tiers, alone and as the second solution of a group (the group's first is a saboteur that
defines the same names its own way: the second's verdict must be its solo verdict).
"""

from __future__ import annotations

import pytest

from crossgym.sandbox import Sandbox, TestRunResult, run_python_tests, run_python_tests_many

GROUPED = {"on": False}
# the group's first solution: the same names, forged every way this file tries (its own verdict is not looked at)
SIBLING = """
class Meta(type):
    def __instancecheck__(cls, obj):
        return True
    def __subclasscheck__(cls, sub):
        return True
class Stack(metaclass=Meta):
    pass
InvalidInput = Exception
class Base(Exception):
    pass
def make_stack():
    return 1
def parse(s):
    raise ValueError(s)
"""


def judge(sandbox: Sandbox, solution: str, tests: object, **kwargs: object) -> TestRunResult:
    kwargs.setdefault("timeout", 5.0)
    alone = run_python_tests(solution, tests, sandbox=sandbox, **kwargs)  # type: ignore[arg-type]
    if not GROUPED["on"]:
        return alone
    _, second = run_python_tests_many([SIBLING, solution], tests, sandbox=sandbox, **kwargs)  # type: ignore[arg-type]
    assert [(d.passed, d.error) for d in second.details] == [(d.passed, d.error) for d in alone.details]
    assert (second.passed, second.total, second.error) == (alone.passed, alone.total, alone.error)
    return second


CLASSES = """
class Stack:
    LIMIT = 10
    def __init__(self):
        self.items = []
    @classmethod
    def of(cls, *xs):
        s = cls()
        s.items.extend(xs)
        return s
    @staticmethod
    def version():
        return 2
    def push(self, x):
        self.items.append(x)
class LinkedStack(Stack):
    pass
class Queue:
    pass
def make_stack(linked=False):
    return LinkedStack() if linked else Stack()
def make_queue():
    return Queue()
def count(xs, kind):
    return sum(isinstance(x, kind) for x in xs)
def kinds(xs):
    return [type(x) for x in xs]
"""
INSTANCE_TESTS = [
    "assert isinstance(Stack(), Stack)",
    "assert isinstance(make_stack(), Stack)",
    "assert isinstance(make_stack(linked=True), Stack)",  # a subclass's instance
    "assert isinstance(make_stack(), (Queue, Stack))",
    "s = make_stack()\ns.push(1)\nassert isinstance(s, Stack) and s.items == [1]",
]
NOT_INSTANCE_TESTS = [
    "assert not isinstance(make_queue(), Stack)",
    "assert not isinstance(make_stack(), LinkedStack)",
    "assert not isinstance(3, Stack) and not isinstance([], Stack) and not isinstance(None, Stack)",
    "assert not isinstance(make_stack(), int) and not isinstance(object(), Stack)",
]
SUBCLASS_TESTS = [
    "assert issubclass(LinkedStack, Stack) and issubclass(Stack, Stack)",
    "assert not issubclass(Stack, LinkedStack) and not issubclass(Queue, Stack)",
    "assert not issubclass(int, Stack)",
]


TYPE_TESTS = [
    "assert type(make_stack()) is Stack and type(Stack()) == Stack",
    "assert type(make_stack(linked=True)) is LinkedStack and type(make_stack(linked=True)) is not Stack",
    "assert type(make_queue()).__name__ == 'Queue' and Queue.__name__ == 'Queue'",
    "assert issubclass(type(make_stack(linked=True)), Stack)",
    "class Mine(Stack):\n    pass\nassert not isinstance(make_stack(), Mine) and issubclass(Mine, Stack)",
]
CLASS_ATTRIBUTE_TESTS = [
    "assert Stack.LIMIT == 10 and Stack.version() == 2 and LinkedStack.LIMIT == 10",
    "s = Stack.of(1, 2)\nassert type(s) is Stack and s.items == [1, 2]",
    "assert type(LinkedStack.of(3)) is LinkedStack",
    "assert count([make_stack(), make_queue(), make_stack(linked=True)], Stack) == 2",  # a class passed to it
    "assert kinds([make_stack(), make_stack(linked=True)]) == [Stack, LinkedStack]",  # classes it returns
    "s = make_stack()\nxs = [s, Stack]\nkinds(xs)\nassert xs[0] is s and xs[1] is Stack",  # and back unchanged
]


def test_isinstance_and_issubclass_with_the_solutions_classes(sandbox: Sandbox, call: str) -> None:
    tests = INSTANCE_TESTS + NOT_INSTANCE_TESTS + SUBCLASS_TESTS + TYPE_TESTS + CLASS_ATTRIBUTE_TESTS
    r = judge(sandbox, CLASSES, tests)
    assert (r.passed, r.total) == (len(tests), len(tests)), [d for d in r.details if not d.passed]
    # a function is no class, as in one process; a class has the attributes it has
    r = judge(sandbox, CLASSES, ["isinstance(1, make_stack)", "issubclass(Stack, make_stack)", "Stack.missing"])
    assert [d.error for d in r.details] == [
        "TypeError: isinstance() arg 2 must be a type, a tuple of types, or a union",
        "TypeError: issubclass() arg 2 must be a class, a tuple of classes, or a union",
        "AttributeError: type object 'Stack' has no attribute 'missing'"]


def test_a_class_as_the_entry_point(sandbox: Sandbox, call: str) -> None:
    tests = ("def check(candidate):\n    s = candidate.of(1)\n    assert isinstance(s, candidate)\n"
             "    assert type(s) is candidate and s.items == [1]\n    assert not isinstance(make_queue(), candidate)\n")
    r = judge(sandbox, CLASSES, tests, entry_point="Stack")
    assert (r.passed, r.total) == (3, 3), r.details


HANDLE_CHEATS = {
    # the metaclass answers yes to anything: never asked
    "metaclass": ("class Meta(type):\n    def __instancecheck__(cls, obj):\n        return True\n"
                  "    def __subclasscheck__(cls, sub):\n        return True\n"
                  "class Stack(metaclass=Meta):\n    pass\nclass LinkedStack(Stack):\n    pass\n"
                  "class Queue(metaclass=Meta):\n    pass\n"
                  "def make_stack(linked=False):\n    return object()\ndef make_queue():\n    return Stack()\n"),
    # an object of another class that says it is a Stack
    "__class__": ("class Stack:\n    pass\nclass LinkedStack(Stack):\n    pass\nclass Queue:\n    pass\n"
                  "class Fake:\n    __class__ = property(lambda self: LinkedStack)\n"
                  "def make_stack(linked=False):\n    return Fake()\ndef make_queue():\n    return Fake()\n"),
    # the name is rebound once the tests hold it (every object then is an ``object``)
    "rebinding": ("class Stack:\n    pass\nclass LinkedStack(Stack):\n    pass\nclass Queue:\n    pass\n"
                  "def make_stack(linked=False):\n    global Stack, LinkedStack\n    Stack = LinkedStack = object\n"
                  "    return Queue()\ndef make_queue():\n    return make_stack()\n"),
    # a plain value, from a function or built in the class's __new__
    # an object of another class of the same name (nested, or renamed)
    "same-name": ("class Stack:\n    pass\nclass LinkedStack(Stack):\n    pass\nclass Queue:\n    pass\n"
                  "class Other:\n    pass\nOther.__name__ = Other.__qualname__ = 'Stack'\n"
                  "def make_stack(linked=False):\n    class Stack:\n        pass\n    return Stack() if linked else Other()\n"
                  "def make_queue():\n    return Queue()\n"),
    "plain": ("class Stack:\n    def __new__(cls):\n        return 7\nclass LinkedStack(Stack):\n    pass\n"
              "class Queue:\n    pass\ndef make_stack(linked=False):\n    return 1\n"
              "def make_queue():\n    return Stack()\n"),
}


@pytest.mark.parametrize("cheat", sorted(HANDLE_CHEATS))
def test_a_handle_of_another_class_is_no_instance(sandbox: Sandbox, call: str, cheat: str) -> None:
    tests = INSTANCE_TESTS[1:4] + TYPE_TESTS[:2] + ["assert not isinstance(make_queue(), Stack)",
                                                    "assert not isinstance(make_stack(), LinkedStack)"]
    got = judge(sandbox, HANDLE_CHEATS[cheat], tests)
    honest_wrong = judge(sandbox, CLASSES.replace("return LinkedStack() if linked else Stack()", "return Queue()"),
                         tests)
    assert got.passed <= honest_wrong.passed == 3, (got.details, honest_wrong.details)


ERRORS = """
class AppError(Exception):
    pass
class InvalidInput(AppError, ValueError):
    pass
class TooLarge(InvalidInput):
    pass
def parse(s):
    if not s.isdigit():
        raise InvalidInput('not a number: ' + s)
    if len(s) > 3:
        raise TooLarge(s)
    return int(s)
"""
EXCEPT_TESTS = [
    "try:\n    parse('x')\nexcept InvalidInput as e:\n    assert str(e) == 'not a number: x'\nelse:\n"
    "    raise AssertionError('no InvalidInput')",
    "try:\n    parse('12345')\nexcept InvalidInput:\n    pass\nelse:\n    raise AssertionError('no InvalidInput')",
    "try:\n    parse('x')\nexcept ValueError:\n    pass\nelse:\n    raise AssertionError('no ValueError')",
    "try:\n    parse('x')\nexcept AppError as e:\n    assert isinstance(e, InvalidInput) and not isinstance(e, TooLarge)\n"
    "else:\n    raise AssertionError('no AppError')",
    "assert issubclass(TooLarge, InvalidInput) and issubclass(InvalidInput, ValueError)",
    "assert parse('12') == 12",
]
UNITTEST = """
import unittest

class TestParse(unittest.TestCase):
    def test_invalid(self):
        with self.assertRaises(InvalidInput):
            parse('x')

    def test_message(self):
        with self.assertRaises(InvalidInput) as cm:
            parse('y')
        self.assertEqual(str(cm.exception), 'not a number: y')

    def test_callable_form(self):
        self.assertRaises(TooLarge, parse, '99999')

    def test_value_error_still(self):
        self.assertRaises(ValueError, parse, 'z')

    def test_regex(self):
        with self.assertRaisesRegex(InvalidInput, 'number'):
            parse('q')

    def test_instance(self):
        self.assertIsInstance(make(), Parser)
        self.assertNotIsInstance(make(), InvalidInput)
"""
PARSER = "class Parser:\n    pass\ndef make():\n    return Parser()\n"


def test_the_tests_catch_the_solutions_exception_classes(sandbox: Sandbox, call: str) -> None:
    r = judge(sandbox, ERRORS, EXCEPT_TESTS)
    assert (r.passed, r.total) == (6, 6), [d for d in r.details if not d.passed]
    r = judge(sandbox, ERRORS + PARSER, UNITTEST)
    assert (r.passed, r.total) == (6, 6), [d for d in r.details if not d.passed]
    # a pytest.raises-style helper of the tests, and the error reads as the solution's class
    raises = ("import contextlib\n@contextlib.contextmanager\ndef raises(kind):\n    try:\n        yield\n"
              "    except kind:\n        return\n    raise AssertionError('did not raise')\n\n"
              "def test_raises():\n    with raises(InvalidInput):\n        parse('x')\n\n"
              "def test_shown():\n    assert parse('x') == 0\n")
    r = judge(sandbox, ERRORS, raises)
    assert [d.passed for d in r.details] == [True, False]
    assert r.details[1].error == "InvalidInput: not a number: x"


EXCEPTION_CHEATS = {
    # a built-in ValueError where the tests expect the solution's InvalidInput
    "builtin": "class InvalidInput(ValueError):\n    pass\ndef parse(s):\n    raise ValueError('not a number: ' + s)\n",
    # a class made with the same name, not the one the solution defines
    "same-name": ("class InvalidInput(ValueError):\n    pass\n"
                  "def parse(s):\n    raise type('InvalidInput', (ValueError,), {})('not a number: ' + s)\n"),
    "nested": ("class InvalidInput(ValueError):\n    pass\ndef parse(s):\n"
               "    class InvalidInput(ValueError):\n        pass\n    raise InvalidInput('not a number: ' + s)\n"),
    "renamed": ("class InvalidInput(ValueError):\n    pass\nclass Other(ValueError):\n    pass\n"
                "Other.__name__ = Other.__qualname__ = 'InvalidInput'\nOther.__module__ = 'solution'\n"
                "def parse(s):\n    raise Other('not a number: ' + s)\n"),
    "__class__": ("class InvalidInput(ValueError):\n    pass\nclass Other(ValueError):\n"
                  "    __class__ = property(lambda self: InvalidInput)\n"
                  "def parse(s):\n    raise Other('not a number: ' + s)\n"),
    "metaclass": ("class Meta(type):\n    def __instancecheck__(cls, obj):\n        return True\n"
                  "    def __subclasscheck__(cls, sub):\n        return True\n"
                  "class InvalidInput(ValueError, metaclass=Meta):\n    pass\n"
                  "def parse(s):\n    raise KeyError('not a number: ' + s)\n"),
    # rebound after loading: the tests' InvalidInput is the class the solution loaded with
    "rebinding": ("class InvalidInput(ValueError):\n    pass\n"
                  "def parse(s):\n    global InvalidInput\n    InvalidInput = ValueError\n"
                  "    raise InvalidInput('not a number: ' + s)\n"),
    # a built-in class under the name: it stays a class of the solution, not every ValueError
    "alias": "InvalidInput = ValueError\ndef parse(s):\n    return int(s)\n",
}


@pytest.mark.parametrize("cheat", sorted(EXCEPTION_CHEATS))
def test_no_other_exception_is_caught_as_the_solutions_class(sandbox: Sandbox, call: str, cheat: str) -> None:
    for tests in ([EXCEPT_TESTS[0]], "import unittest\nclass T(unittest.TestCase):\n    def test_it(self):\n"
                  "        self.assertRaises(InvalidInput, parse, 'x')\n"):
        got = judge(sandbox, EXCEPTION_CHEATS[cheat], tests)
        assert (got.passed, got.total) == (0, 1), got.details
        assert judge(sandbox, ERRORS, tests).passed == 1


def test_control_flow_subclasses_named_by_the_tests_still_pass_nothing(sandbox: Sandbox, call: str) -> None:
    """A class of the solution deriving from StopIteration (or any BaseException but Exception) that the tests
    name stays a SolutionError: rebuilt, it would end the test's own ``all(map(...))``."""
    for base in ("StopIteration", "StopAsyncIteration", "KeyboardInterrupt", "BaseException", "GeneratorExit"):
        cheat = f"class Done({base}):\n    pass\ndef is_even(n):\n    raise Done()\n"
        tests = "KIND = Done\nassert all(map(is_even, [2, 4]))\nassert not any(map(is_even, [1]))\n"
        got = judge(sandbox, cheat, tests)
        assert (got.passed, got.total) == (0, 2), (base, got.details)


FORGED_TYPE_NAMES = (
    "import os, struct\nint_ = type('int', (), {})\nclass generator:\n    pass\nclass M(type):\n"
    "    __name__ = property(lambda cls: 'list')\nclass L(metaclass=M):\n    pass\n"
    "def f(x):\n    return [int_(), generator(), L(), ValueError('v')][x]\n"
    "def g(n):\n    return (i for i in range(n))\n"
    "def forged(x):\n    d = b'[\"ok\",[[\"h\",12345,\"str\"],{}]]'\n    os.write(4, struct.pack('>I', len(d)) + d)\n"
    "    return 0\n")


def test_a_class_named_like_a_built_in_type_is_not_taken_for_it(sandbox: Sandbox, call: str) -> None:
    """``type(x).__name__ == 'int'`` is no test a handle passes (issue 20): an object of a class of the solution
    named like a built-in type (made with ``type()``, or a metaclass's ``__name__``) is ``solution.<name>``, and a
    handle of a type whose objects cross as plain values (a forged frame) is too; built-in types keep their names."""
    tests = ["assert type(f(0)).__name__ == 'int'", "assert type(f(1)).__name__ == 'generator'",
             "assert type(f(2)).__name__ == 'list'",
             "assert type(g(2)).__name__ == 'generator' and type(f(3)).__name__ == 'ValueError'",
             "assert [type(f(i)).__name__ for i in range(2)] == ['solution.int', 'solution.generator']",
             "assert type(forged(1)).__name__ == 'str'"]  # (last: its forged frame answers the call)
    r = judge(sandbox, FORGED_TYPE_NAMES, tests)
    assert [d.passed for d in r.details] == [False, False, False, True, True, False], r.details


RAISING = """
import errno
class ParseError(ValueError):
    def __init__(self, code, where):
        super().__init__(code, where)
        self.code, self.where = code, where
class Shown(ValueError):
    def __str__(self):
        return 'shown its own way'
def f(x):
    if x == 'args':
        raise ValueError('negative', -1, 2.5, None, True)
    if x == 'key':
        raise KeyError('k')
    if x == 'own':
        raise ParseError(7, 'line 3')
    if x == 'os':
        raise FileNotFoundError(errno.ENOENT, 'No such file', 'a.txt')
    if x == 'shown':
        raise Shown(1, 2)
    if x == 'big':
        raise ValueError(10 ** 100)
    if x == 'bare':
        raise ValueError
    if x == 'shadow':
        e = ValueError('v')
        e.__dict__.update(args=5, with_traceback=1, _private=2, __class__=3)
        raise e
    return x
"""

RAISING_TESTS = [
    "try:\n    f('args')\nexcept ValueError as e:\n    assert e.args == ('negative', -1, 2.5, None, True), e.args\n",
    "try:\n    f('key')\nexcept KeyError as e:\n    assert e.args == ('k',) and str(e) == \"'k'\", (e.args, str(e))\n",
    "try:\n    f('own')\nexcept ParseError as e:\n    assert (e.args, e.code, e.where) == ((7, 'line 3'), 7, 'line 3')\n",
    "import errno\ntry:\n    f('os')\nexcept OSError as e:\n"
    "    assert (e.errno, e.strerror, e.filename) == (errno.ENOENT, 'No such file', 'a.txt')\n"
    "    assert isinstance(e, FileNotFoundError)\n",
    "try:\n    f('shown')\nexcept ValueError as e:\n    assert str(e) == 'shown its own way', str(e)\n",
    "try:\n    f('big')\nexcept ValueError as e:\n    assert str(e) == str(10 ** 100)\n",
    "try:\n    f('bare')\nexcept ValueError as e:\n    assert e.args == () and str(e) == '', e.args\n",
    "try:\n    f('shadow')\nexcept ValueError as e:\n"
    "    assert e.args == ('v',) and callable(e.with_traceback) and type(e) is ValueError\n"
    "    assert not hasattr(e, '_private')\n",
]


def test_a_raised_exception_keeps_its_arguments_and_attributes(sandbox: Sandbox, call: str) -> None:
    """An honest solution's exception reads as in one process: ``e.args``, ``str(e)``, ``e.errno``, its own
    attributes (plain values only; a message its ``__str__`` wrote is kept over the arguments), and nothing it
    sets can shadow what the class defines."""
    r = judge(sandbox, RAISING, RAISING_TESTS, entry_point="f")
    assert (r.passed, r.total) == (len(RAISING_TESTS), len(RAISING_TESTS)), [d for d in r.details if not d.passed]
