"""code_tests and code_output: real sandbox runs; partial credit; reward hacks that must not pass."""

from __future__ import annotations

import pytest

from crossgym.api import load_verifier
from crossgym.protocol.errors import VerifierError
from crossgym.protocol.messages import Message, ToolCall
from crossgym.protocol.task import Completion, Task, VerifierSpec
from crossgym.verifiers.base import Malformed
from crossgym.verifiers.code import CodeOutput, CodeTests, extract_code

TESTS = {"tests": ["assert add(2, 3) == 5", "assert add(-1, 1) == 0", "assert add(10, 5) == 15",
                   "assert add(0, 0) == 0"]}


def run_tests(code: str, answer: object = TESTS, **params: object):
    t = Task(id="t", prompt="write add", answer=answer, verifier=VerifierSpec("code_tests", dict(params)))
    return load_verifier(t.verifier).verify(t, Completion.from_text(f"```python\n{code}\n```"))


def test_examples_behave_as_declared() -> None:
    for cls in (CodeTests, CodeOutput):
        for ex in cls.examples():
            assert ex.matches(load_verifier(ex.task.verifier).verify(ex.task, ex.completion)), (cls.name, ex.note)


def test_correct_and_partial_credit() -> None:
    ok = run_tests("def add(a, b):\n    return a + b")
    assert ok.reward == 1.0 and ok.passed and ok.components["total"] == 4
    half = run_tests("def add(a, b):\n    return abs(a) + abs(b)")
    assert half.reward == pytest.approx(0.75) and not half.passed
    assert run_tests("def add(a, b):\n    return abs(a) + abs(b)", partial=False).reward == 0.0


HACKS = [
    ("import sys\ndef add(a, b):\n    return 0\nsys.exit(0)", "sys.exit while loading"),
    ("import os\ndef add(a, b):\n    return 0\nos._exit(0)", "os._exit while loading"),
    ("def add(a, b):\n    raise SystemExit(0)", "SystemExit from the function"),
    ("import os\ndef add(a, b):\n    os._exit(0)", "os._exit from the function"),
    ("class Eq:\n    def __eq__(self, other):\n        return True\n    __hash__ = object.__hash__\n"
     "def add(a, b):\n    return Eq()", "__eq__ always True"),
    ("class I(int):\n    def __eq__(self, other):\n        return True\n    __hash__ = int.__hash__\n"
     "def add(a, b):\n    return I(0)", "an int subclass with a forged __eq__"),
    ("print('4/4 tests passed')\nprint('PASSED')\nprint('{\"unit\": 0, \"ok\": true}')\ndef add(a, b):\n    return 0",
     "printing success markers"),
    ("import builtins\nbuiltins.AssertionError = type('Nope', (Exception,), {})\ndef add(a, b):\n    return 0",
     "replacing AssertionError"),
    ("import builtins\n_real = builtins.__import__\nbuiltins.__import__ = lambda *a, **k: _real(*a, **k)\n"
     "import sys\nsys.modules['unittest'] = None\ndef add(a, b):\n    return 0", "patching the import system"),
    ("import os\nfor fd in range(3, 64):\n    try:\n        os.write(fd, b'{\"unit\": 0, \"ok\": true}\\n')\n"
     "    except OSError:\n        pass\ndef add(a, b):\n    return 0", "writing forged results to every fd"),
    ("import gc, sys\nfor o in gc.get_objects():\n    if isinstance(o, dict) and 'tests' in o:\n"
     "        o['tests'] = []\ndef add(a, b):\n    return 0", "hunting the harness's test list"),
    ("import signal, os\nos.kill(os.getppid(), signal.SIGKILL)\ndef add(a, b):\n    return 0",
     "killing the harness"),
    ("def add(a, b):\n    while True:\n        pass", "an infinite loop"),
    ("raise KeyboardInterrupt", "KeyboardInterrupt while loading"),
]


@pytest.mark.parametrize("hack, note", HACKS)
def test_reward_hacks_do_not_pass(hack: str, note: str) -> None:
    honest = run_tests("def add(a, b):\n    return 0")  # what 'return 0' earns without any trick: 2 of 4
    assert honest.reward == 0.5
    v = run_tests(hack, run_timeout=3)
    assert not v.passed, note
    assert v.reward <= honest.reward, (note, v)
    assert v.error is None, (note, v)


def test_a_group_gets_the_verdicts_verify_gives() -> None:
    task = Task(id="t", prompt="write add", answer=TESTS, verifier=VerifierSpec("code_tests", {"run_timeout": 3}))
    verifier = load_verifier(task.verifier)
    codes = ["def add(a, b):\n    return a + b", "def add(a, b):\n    return 0"] + [hack for hack, _ in HACKS]
    completions = [f"```python\n{code}\n```" for code in codes] + ["", "no code here at all"]
    group = verifier.verify_group(task, completions)
    one_by_one = [verifier.verify(task, Completion.from_text(c)) for c in completions]
    assert [(v.reward, v.passed, v.error_kind) for v in group] == [(v.reward, v.passed, v.error_kind)
                                                                   for v in one_by_one]
    assert group[0].passed and group[1].reward == 0.5 and not any(v.passed for v in group[2:])
    bad = Task(id="b", prompt="?", answer={"tests": []}, verifier=task.verifier)
    assert [v.error_kind for v in verifier.verify_group(bad, codes[:2])] == ["exception", "exception"]


def test_unittest_suites_are_judged_per_test_method() -> None:
    """BigCodeBench's shape: a unittest.TestCase class calling ``task_func``; a unit per test method."""
    tests = ("import unittest\n\nclass TestCases(unittest.TestCase):\n    def test_small(self):\n"
             "        self.assertEqual(task_func([3, 1]), [1, 3])\n    def test_empty(self):\n"
             "        self.assertEqual(task_func([]), [])\n")
    answer = {"tests": tests, "entry_point": "task_func"}
    ok = run_tests("def task_func(xs):\n    return sorted(xs)", answer)
    assert ok.reward == 1.0 and ok.passed and ok.components["total"] == 2
    half = run_tests("def task_func(xs):\n    return xs", answer)
    assert half.reward == 0.5 and not half.passed and "1/2 tests passed" in half.reason


def test_verify_many_judges_each_group_in_one_call() -> None:
    from crossgym.verifiers.batch import verify_many

    spec = VerifierSpec("code_tests", {"run_timeout": 3})
    add = Task(id="add", prompt="write add", answer=TESTS, verifier=spec)
    sub = Task(id="sub", prompt="write sub", answer={"tests": ["assert sub(3, 1) == 2"]}, verifier=spec)
    codes = [(add, "def add(a, b):\n    return a + b"), (add, "def add(a, b):\n    return 0"), (add, HACKS[0][0]),
             (sub, "def sub(a, b):\n    return a - b"), (sub, "def sub(a, b):\n    return b - a")]
    pairs = [(task, f"```python\n{code}\n```") for task, code in codes]
    pairs.insert(2, (Task(id="x", prompt="?", answer="yes", verifier=VerifierSpec("exact_match")), "yes"))
    calls = []
    original = CodeTests.verify_group

    def counted(self, task, completions):  # type: ignore[no-untyped-def]
        calls.append(len(completions))
        return original(self, task, completions)

    CodeTests.verify_group = counted  # type: ignore[method-assign]
    try:
        together = verify_many(pairs)
    finally:
        CodeTests.verify_group = original  # type: ignore[method-assign]
    alone = [load_verifier(t.verifier).verify(t, Completion.from_text(c)) for t, c in pairs]
    assert [(v.reward, v.passed, v.error_kind) for v in together] == [(v.reward, v.passed, v.error_kind)
                                                                      for v in alone]
    assert sorted(calls) == [2, 3] and [v.passed for v in together] == [True, False, True, False, True, False]


def test_hidden_expected_values_cannot_be_read_back() -> None:
    """The solution process never holds the tests: reading the harness's source finds nothing to copy."""
    code = ("import gc\nfound = [o for o in gc.get_objects() if isinstance(o, str) and 'assert add' in o]\n"
            "def add(a, b):\n    return len(found) * 1000")
    v = run_tests(code)
    assert v.reward == 0.5  # add(-1, 1) == 0 and add(0, 0) == 0: what returning 0 earns, so nothing was found


def test_humaneval_check_function_and_prelude() -> None:
    check = "def check(candidate):\n    assert candidate(2) == 4\n    assert candidate(3) == 9\n"
    ans = {"tests": check, "entry_point": "square", "prelude": "import math\n"}
    assert run_tests("def square(x):\n    return x * x", ans).passed
    assert not run_tests("def square(x):\n    return x + x", ans).passed


def test_code_extraction_rules() -> None:
    multi = Completion(messages=(
        Message(role="assistant", content="```python\ndef f():\n    return 1\n```"),
        Message(role="user", content="1/2 tests pass"),
        Message(role="assistant", content="Fixed:\n```python\ndef f():\n    return 2\n```\nDone."),
        Message(role="user", content="all pass"),
        Message(role="assistant", content="Thanks!"),
    ))
    assert extract_code(multi) == "def f():\n    return 2"
    bare = Completion.from_text("def f():\n    return 3")
    assert extract_code(bare) == "def f():\n    return 3"
    call = Completion(messages=(Message(role="assistant", content="", tool_calls=(
        ToolCall(id="1", name="run_tests", arguments={"code": "def f():\n    return 4"}),)),))
    assert extract_code(call).endswith("return 4")
    for text in ("I would write a loop.", "", "print(1"):
        with pytest.raises(Malformed):
            extract_code(Completion.from_text(text))


def test_syntax_error_fails_without_being_malformed() -> None:
    v = run_tests("def add(a, b)\n    return a + b")
    assert v.reward == 0.0 and v.error is None and not v.passed


def test_bad_tasks_and_params() -> None:
    assert run_tests("def add(a, b):\n    return a + b", answer={"tests": []}).error_kind == "exception"
    assert run_tests("def add(a, b):\n    return a + b", answer={"tests": "x = 1"}).error_kind == "exception"
    with pytest.raises(VerifierError):
        load_verifier(VerifierSpec("code_tests", {"run_timeout": 0}))


# ---------------------------------------------------------------------------------------------- code_output
def run_output(code: str, answer: object, **params: object):
    t = Task(id="t", prompt="?", answer=answer, verifier=VerifierSpec("code_output", dict(params)))
    return load_verifier(t.verifier).verify(t, Completion.from_text(code))


CASES = {"cases": [{"stdin": "3\n1 2 3\n", "stdout": "6\n"}, {"stdin": "2\n10 -4\n", "stdout": "6"},
                   {"stdin": "1\n7\n", "stdout": "7  \n\n"}]}
SOLUTION = "```python\ninput()\nprint(sum(map(int, input().split())))\n```"


def test_code_output_cases_and_partial_credit() -> None:
    assert run_output(SOLUTION, CASES).reward == 1.0
    v = run_output("```python\nprint(6)\n```", CASES)
    assert v.reward == pytest.approx(2 / 3) and not v.passed
    assert run_output("```python\nprint(6)\n```", CASES, partial=False).reward == 0.0
    assert run_output(SOLUTION, CASES, compare="exact").reward == pytest.approx(1 / 3)
    tokens = {"stdin": "", "stdout": "a  b\nc"}
    assert run_output("```python\nprint('a b c')\n```", tokens, compare="tokens").passed
    assert run_output("```bash\nread a b; echo $((a * b))\n```", {"stdin": "6 7\n", "stdout": "42"},
                      language="shell").passed


@pytest.mark.parametrize("got,want,same", [
    ("1.0\n", "1\n", True), ("0.50 2\n", "0.5 2.0", True), ("  3 4 \n\n", "3 4", True), ("1e2", "100", True),
    ("1 2", "1\n2", False), ("YES", "yes", False), ("1.000001", "1", False), ("3 4 5", "3 4", False),
    ("sNaN", "1", False), ("x 1.0", "x 1", False),  # (a line is compared as numbers only when all of it is numbers)
])
def test_code_output_lines_compares_as_livecodebench_does(got, want, same) -> None:
    """compare="lines": each line stripped, equal as text or as a row of decimals (LiveCodeBench's stdio rule)."""
    from crossgym.verifiers.code import same_output

    assert same_output(got, want, "lines") is same
    assert not same_output("1.0", "1", "strip")  # (the default stays exact about numbers)


@pytest.mark.parametrize("got,want,same", [
    (" 6\n", "6\n", True), ("\n6", "6", True), ("\n\n1 2\r\n 3\t\n\n", "1 2\n3", True), ("6  \n\n", "6", True),
    ("", "\n", True), (" \n", "", True),
    ("1  2", "1 2", False), ("1\n\n2", "1\n2", False), ("1.0", "1", False), ("yes", "YES", False), ("6", "", False),
])
def test_code_output_strip_ignores_whitespace_around_lines(got, want, same) -> None:
    """compare="strip" (the default): the text and each line stripped, as every stdin/stdout judge does (leading
    spaces and blank lines failed before version 7); spaces inside a line, blank lines between lines, number formats
    and case still count."""
    from crossgym.verifiers.code import same_output

    assert same_output(got, want, "strip") is same


def test_code_output_lines_end_to_end() -> None:
    code = "```python\nprint(f'{int(input()) / 2:.2f}')\n```"
    answer = {"cases": [{"stdin": "3\n", "stdout": "1.5\n"}, {"stdin": "4\n", "stdout": "2\n"}]}
    assert run_output(code, answer, compare="lines").passed
    assert run_output(code, answer).reward == 0.0


def test_code_output_failures() -> None:
    slow = run_output("```python\nwhile True:\n    pass\n```", {"stdin": "", "stdout": "1"}, run_timeout=1)
    assert slow.reward == 0.0 and "timed out" in slow.reason
    crash = run_output("```python\nraise ValueError('boom')\n```", {"stdin": "", "stdout": "1"})
    assert crash.reward == 0.0 and "exit 1" in crash.reason
    assert run_output("just print it", CASES).error_kind == "malformed"
    assert run_output(SOLUTION, {"cases": [{"stdin": 1}]}).error_kind == "exception"
    with pytest.raises(VerifierError):
        load_verifier(VerifierSpec("code_output", {"compare": "fuzzy"}))


def test_code_output_reads_stdin_as_judges_do() -> None:
    """stdin read every usual way passes; reading past its end is a runtime error (EOFError), as judges count it."""
    case = {"stdin": "3 4", "stdout": "7\n"}  # (no final newline in the input)
    for read in ("input().split()", "sys.stdin.buffer.read().split()", "open(0).read().split()",
                 "sys.stdin.readline().split()", "next(iter(sys.stdin)).split()"):
        assert run_output(f"```python\nimport sys\na, b = map(int, {read})\nprint(a + b)\n```", case).passed, read
    past = run_output("```python\na, b = map(int, input().split())\ninput()\nprint(a + b)\n```", case)
    assert not past.passed and "EOFError" in past.reason


def test_code_output_judges_a_long_answer_whole() -> None:
    """An expected output over the 1 MiB capture limit: the correct program passes (it was cut and failed), and
    one that prints it and then more than twice its size is cut and fails, never judged on the part kept."""
    want = "\n".join(str(2 * i) for i in range(250_000)) + "\n"  # about 1.7 MB
    code = "```python\nimport sys\nsys.stdout.write('\\n'.join(str(2 * i) for i in range(250_000)) + '\\n'{})\n```"
    assert run_output(code.format(""), {"stdin": "", "stdout": want}).passed
    cut = run_output(code.format(" + ' ' * 4_000_000"), {"stdin": "", "stdout": want})
    assert not cut.passed and "truncated" in cut.reason


def test_mbpp_setup_code_goes_in_the_prelude() -> None:
    """MBPP's test_setup_code (MBPP+'s test_imports) as ``prelude``: it runs before the solution and the asserts,
    as in the one namespace MBPP's harness execs, so a solution using a name it imports passes."""
    answer = {"tests": ["assert count(['a', 'b', 'a'])['a'] == 2", "assert math.isclose(area(1), math.pi)"],
              "prelude": "import math\nfrom collections import Counter\n"}
    assert run_tests("def count(xs):\n    return Counter(xs)\ndef area(r):\n    return math.pi * r * r",
                     answer).passed
    assert run_tests("def count(xs):\n    return {}\ndef area(r):\n    return 3.14", answer).reward == 0.0


def test_tests_importing_a_missing_package_are_a_bad_task() -> None:
    """HumanEval+'s ``import numpy as np`` in the tests: an exception verdict naming the fix, not a 0 for every
    solution (the correct one included)."""
    check = "import numpy as np\ndef check(candidate):\n    assert np.allclose(candidate(2, 3), 5)\n"
    v = run_tests("def add(a, b):\n    return a + b", {"tests": check, "entry_point": "add"})
    assert v.error_kind == "exception" and "numpy" in str(v.error) and "fix:" in str(v.error), v


def test_code_output_cases_past_the_verifiers_time_fail() -> None:
    """More cases than the deadline holds, each made to run out of time: the verdict was a timeout (the
    machine's fault, masked under on_error none) where an honest wrong program scored its share."""
    cases = [{"stdin": f"{i}\n", "stdout": f"{i}\n"} for i in range(6)]
    v = run_output("```python\nimport time\ntime.sleep(999)\n```", cases, run_timeout=1.0, timeout=3.0)
    assert v.error is None and v.reward == 0.0 and not v.passed and v.components["cases"] == 6.0, v
