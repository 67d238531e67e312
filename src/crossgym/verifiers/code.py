"""code_tests and code_output: model-written Python judged in the sandbox.

``code_tests`` runs unit tests through ``crossgym.sandbox.run_python_tests``: the solution lives in one confined
process and the tests, the expected values and the verdicts in another it cannot reach, and only values of exact
built-in types cross between them. So exiting early (sys.exit, os._exit), printing success markers, returning an
object whose ``__eq__`` is always True, or patching builtins and the harness cannot pass a test. Reward = fraction
of test units passed (``partial=False``: all or nothing).

``code_output`` runs the program with each case's stdin and compares its stdout with the expected text.

The code read from a completion is the last ```python block of the last assistant message that has one (a multi-turn
episode's final fix), else the final message itself when it parses as Python; text before a message's last
``</think>`` is reasoning, never read (code drafted there is not the answer).
"""

from __future__ import annotations

import ast
import logging
from collections.abc import Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from crossgym.protocol.errors import CrossgymError, VerifierError
from crossgym.protocol.task import Completion, Example, Task, Verdict
from crossgym.text import extract_fenced, pyast
from crossgym.verifiers.base import (
    BadTask,
    BaseVerifier,
    Malformed,
    _finite,
    check_inputs,
    clip,
    judged_task,
    time_left,
)

if TYPE_CHECKING:
    from crossgym.sandbox.result import Limits

log = logging.getLogger(__name__)

CODE_LANGS = ("python", "py", "python3", "")
#: most characters of code taken from a completion
MAX_CODE_CHARS = 200_000


def answer_text(content: str | None, final: bool = True) -> str:
    """A message's text after its reasoning (after the last ``</think>``): code or commands drafted in the reasoning
    are not the answer. An unclosed ``<think>`` in the final message is Malformed (the model never answered); in an
    earlier one, the text before it."""
    text = content or ""
    close = text.rfind("</think>")
    if close >= 0:
        return text[close + len("</think>"):]
    start = text.find("<think>")
    if start >= 0:
        if final:
            raise Malformed("<think> is never closed (no answer after the reasoning)")
        return text[:start]
    return text


def extract_code(completion: Completion, langs: tuple[str, ...] = CODE_LANGS) -> str:
    """The solution code in a completion (see the module docstring); Malformed when there is none."""
    assistant = [m for m in completion.messages if m.role == "assistant"]
    if not assistant:
        raise Malformed("no assistant message")
    for k, m in enumerate(reversed(assistant)):
        body = extract_fenced(answer_text(m.content, final=k == 0), langs)
        if body is not None and body.strip():
            return _cap(body)
        for call in m.tool_calls:  # a submit/run_tests tool call carrying the code
            code = call.arguments.get("code")
            if isinstance(code, str) and code.strip():
                return _cap(code)
    text = answer_text(assistant[-1].content).strip()
    if text and len(text) <= MAX_CODE_CHARS:
        try:
            tree = pyast.parse(text)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            tree = None
        if tree is not None and any(isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom,
                                                   ast.Assign)) for n in tree.body):
            return text
    raise Malformed("no code in the completion (put it in a ```python block)")


def _cap(code: str) -> str:
    if len(code) > MAX_CODE_CHARS:
        raise Malformed(f"the code is over {MAX_CODE_CHARS:,} characters")
    return code


def _sandbox_timeout(budget: float) -> float:
    """A sandbox deadline that leaves the verifier time to answer before its own deadline."""
    return max(0.5, min(budget, time_left(budget) - 0.5))


class CodeTests(BaseVerifier):
    """A Python solution judged by unit tests in the sandbox; reward = fraction of units passed.

    answer: {"tests": [snippet, ...] | source, "entry_point": optional name for a HumanEval ``check(candidate)``,
    "prelude": optional trusted code (imports, the problem's signature)}; a bare list or string means the tests.
    params: partial (True), run_timeout (10 s for the whole run), test_timeout (per unit, default none), tier.
    """

    name = "code_tests"
    # 2: asserts kept under python -O, raise/assert False/checking helpers are units, a failed setup statement
    # counts, StopIteration from the solution is an error, `in` is answered by the harness; 3: test classes
    # (unittest.TestCase, pytest's class Test*) are judged, one unit per test method (they were "no test found"),
    # a unit run more than once passes only if every run does, a solution's own ValueError subclass (say) is caught
    # by the tests' `except ValueError`, and a group member that hangs the harness is stopped alone; 4: code in the
    # reasoning (before the last </think>) is not the answer; 5: objects of the prompt's classes (ListNode, TreeNode)
    # cross between the tests and the solution as their attributes, the prompt runs first in the solution's process,
    # and a prompt ending in the bare signature compiles (honest LeetCode-style solutions failed every such test);
    # an argument returned unchanged is the tests' own object, attributes/items of the solution's objects are set in
    # its process, what cannot cross fails the unit (no TypeError a test catches), @expectedFailure counts as in
    # unittest, and exit()/quit() exist; 6: no text of the solution runs in the tests' process (eval of its output,
    # doctest of its docstring fail; string annotations cross as the classes they name), and a dataclass's fields
    # are read from the object's dict/slots, with its undeclared state compared too; 7: the solution's coroutines
    # run a step at a time (the tests' asyncio.wait_for cuts a slow one short, one gather's coroutines go on at
    # once, a cancelled one is cancelled in the solution's process); a name the tests bind themselves is never
    # shared with the solution (a call read their expected values, rebound their variables, helpers, imports and
    # test functions; star imports and dynamic bindings too), setUpModule runs; timeit runs only the tests' own
    # statements, importlib only modules under the harness's path, eval only whole texts of the tests; 8: the
    # tests' threads calling the solution at once take turns (one read another's reply), a group member whose
    # tests left a thread running ends the harness (the members after it judged in a fresh one), a unittest
    # cleanup that fails fails its test (class cleanups run), pytest's setup_method(self) runs, and a tests' thread
    # dying of the solution's exception fails no unit (its traceback's carets were refused as solution text), and
    # a failing setUpModule/setup_module fails every test after it (they ran on: 2 of 3 for a broken set-up); 9: more
    # values cross as in one process (a dict's views, UserDict/UserList/UserString, ChainMap, SimpleNamespace, array,
    # memoryview, timezone, struct_time and stat_result were handles equal only to themselves; a NaN keeps which
    # object it is, so f() == [math.nan] holds), operators between the solution's objects are carried out in its
    # process (Vector + Vector, Flag | Flag, sorted(cards) failed as Untransportable; never with a value of the tests'
    # nor one that answers for an object it cannot know of), `x in obj` works for a generator __iter__, a class
    # deriving from collections.abc.Mapping/Sequence is one for isinstance, the tests' dict views given to the
    # solution are views there, its in-place changes to their Counter/OrderedDict/defaultdict/deque reach them (they
    # were lost), and their list or dict subclass given back unchanged is theirs (it was a ValueError); 10: tests or
    # a prelude importing at top level a package the sandbox lacks (HumanEval+'s numpy) are a bad task (every
    # solution, the correct one too, failed at the set-up); 11: a solution may change the scheduling (nice, policy,
    # CPU affinity, I/O priority) of its own process only (one set every process of its uid to SCHED_IDLE, nice 19
    # and one CPU: the siblings judged after it in a group, and the later tasks' processes of its slot's spawner,
    # lost their solo verdicts)
    version = "11"
    description = "Python solution vs unit tests in the sandbox; harness out of the solution's reach"
    isolation = "thread"
    default_timeout = 30.0

    def __init__(self, *, partial: bool = True, run_timeout: float = 10.0, test_timeout: float | None = None,
                 tier: str | None = None, **params: Any) -> None:
        super().__init__(**params)
        for key, val in (("run_timeout", run_timeout), ("test_timeout", test_timeout)):
            if val is not None and (isinstance(val, bool) or not isinstance(val, (int, float)) or val <= 0):
                raise VerifierError(f"verifier 'code_tests': {key} must be positive seconds, got {val!r} "
                                    "(fix: pass a number above 0, e.g. 10)")
        self.partial = bool(partial)
        self.run_timeout = float(run_timeout)
        self.test_timeout = None if test_timeout is None else float(test_timeout)
        self.tier = tier

    @staticmethod
    def tests_of(task: Task) -> tuple[list[str] | str, str | None, str | None]:
        ans = task.answer
        if isinstance(ans, dict):
            tests, entry, prelude = ans.get("tests"), ans.get("entry_point"), ans.get("prelude")
        else:
            tests, entry, prelude = ans, None, None
        if isinstance(tests, str) and tests.strip():
            return tests, entry, prelude
        if isinstance(tests, list) and tests and all(isinstance(t, str) for t in tests):
            return list(tests), entry, prelude
        raise BadTask("answer must be {'tests': [...] or source, 'entry_point'?, 'prelude'?}")

    def score(self, task: Task, completion: Completion) -> Verdict:
        code = extract_code(completion)
        tests, entry, prelude = self.tests_of(task)
        from crossgym import sandbox

        try:
            res = sandbox.run_python_tests(code, tests, entry_point=entry, prelude=prelude,
                                           timeout=_sandbox_timeout(self.run_timeout),
                                           test_timeout=self.test_timeout, tier=self.tier)
        except CrossgymError as exc:
            raise RuntimeError(f"sandbox: {exc}") from None
        return self._verdict(res)

    def verify_group(self, task: Task, completions: Sequence[Completion | str]) -> list[Verdict]:
        """Verdicts for several completions of one task (a GRPO group) from one sandbox call
        (``run_python_tests_many``: the tests are planned once); each is the one :meth:`verify` gives. Never
        raises. Each completion has ``run_timeout``; the call blocks for their sum, plus at most ``CLEAR_S`` (2 s)
        a member for clearing up after it or stopping a harness it held in a C call of the tests (the members
        after that one run in a fresh harness, with their own timeouts)."""
        from crossgym import sandbox

        comps = [Completion.from_text(c) if isinstance(c, str) else c for c in completions]
        out: list[Verdict | None] = [check_inputs(task, c, self.max_chars) for c in comps]
        if isinstance(task, Task):
            task = judged_task(task)  # what score() would see (base.judged_task)
        codes: dict[int, str] = {}
        for i, comp in enumerate(comps):
            if out[i] is None:
                try:
                    codes[i] = extract_code(comp)
                except Malformed as exc:
                    out[i] = Verdict.malformed(clip(str(exc) or "unusable completion", 300))
        try:
            if codes:
                tests, entry, prelude = self.tests_of(task)
                results = sandbox.run_python_tests_many(list(codes.values()), tests, entry_point=entry,
                                                        prelude=prelude, timeout=self.run_timeout,
                                                        test_timeout=self.test_timeout, tier=self.tier)
                for i, res in zip(codes, results, strict=True):
                    out[i] = self._verdict(res)
        except BadTask as exc:
            out = [v or Verdict.exception(clip(f"bad task {getattr(task, 'id', '?')!r}: {exc}", 300)) for v in out]
        except Exception as exc:  # the sandbox failed: every completion it was judging says so
            out = [v or Verdict.exception(clip(f"sandbox: {type(exc).__name__}: {exc}", 300)) for v in out]
        return [_finite(v) if v is not None else Verdict.exception("no verdict produced") for v in out]

    def _verdict(self, res: Any) -> Verdict:
        if res.total == 0:
            if res.error and res.error.startswith("tests:"):
                raise BadTask(res.error)
            return Verdict.ok(0.0, reason=clip(f"no test ran: {res.error}", 200), components={"passed": 0.0})
        frac = res.fraction
        reward = frac if self.partial else float(res.all_passed)
        failed = [d for d in res.details if not d.passed]
        if res.all_passed:
            reason = f"{res.passed}/{res.total} tests passed"
        else:
            first = failed[0] if failed else None
            why = res.error or (f"{first.name}: {first.error}" if first else "failed")
            reason = f"{res.passed}/{res.total} tests passed; {why}"
        return Verdict.ok(reward, passed=res.all_passed, reason=clip(reason, 300),
                          components={"passed": float(res.passed), "total": float(res.total), "fraction": frac})

    @classmethod
    def examples(cls) -> list[Example]:
        tests = {"tests": ["assert add(2, 3) == 5", "assert add(-1, 1) == 0", "assert add(10, 5) == 15"]}
        return [
            cls.example(tests, "```python\ndef add(a, b):\n    return a + b\n```", "pass"),
            cls.example(tests, "```python\ndef add(a, b):\n    return abs(a) + b\n```", "fail", "2 of 3 pass: 0.67"),
            cls.example(tests, "```python\nimport sys\ndef add(a, b):\n    return 0\nsys.exit(0)\n```", "fail",
                        "exiting early passes nothing"),
            cls.example(tests, "```python\nclass Any:\n    def __eq__(self, o):\n        return True\n"
                               "def add(a, b):\n    return Any()\n```", "fail", "an always-equal object"),
            cls.example(tests, "I would add the two numbers.", "malformed", "no code"),
        ]


def _stripped_lines(text: str) -> list[str]:
    """The text stripped, split at "\\n", each line stripped: whitespace around a line (a "\\r" of CRLF, the
    leading space of ``s += " " + str(x)``) and blank lines before or after the output are no part of the answer for
    any stdin/stdout judge (LiveCodeBench, CodeContests, APPS and TACO all ignore them)."""
    return [line.strip() for line in text.strip().split("\n")]


def _normalize_output(text: str, mode: str) -> Any:
    if mode == "exact":
        return text
    if mode == "tokens":
        return text.split()
    return _stripped_lines(text)


def same_output(got: str, want: str, mode: str) -> bool:
    """Whether a program's stdout ``got`` matches ``want`` under ``mode`` (see CodeOutput). "strip" compares the
    stripped lines as text; "lines" is LiveCodeBench's stdio rule: the same lines, each equal as text or, failing
    that, as a row of decimal numbers (``1.0`` is ``1``, ``0.50`` is ``0.5``; no tolerance)."""
    a, b = _normalize_output(got, mode), _normalize_output(want, mode)
    if mode != "lines":
        return bool(a == b)
    return len(a) == len(b) and all(x == y or _same_decimals(x, y) for x, y in zip(a, b, strict=True))


def _same_decimals(a: str, b: str) -> bool:
    xs, ys = a.split(), b.split()
    if len(xs) != len(ys) or not xs:
        return False
    try:
        return all(Decimal(x) == Decimal(y) for x, y in zip(xs, ys, strict=True))
    except (ArithmeticError, ValueError):  # not numbers (InvalidOperation), or a signalling NaN compared
        return False


class CodeOutput(BaseVerifier):
    """A program (Python, or a shell script) run on each case's stdin must print the expected stdout.

    answer: {"cases": [{"stdin": "...", "stdout": "..."}, ...]} (or one case as {"stdin", "stdout"}).
    params: compare ("strip": the text and each line stripped, then equal as text | "exact" | "tokens":
    whitespace-split | "lines": LiveCodeBench's rule, the stripped lines equal as text or as decimal numbers, 1.0
    for 1),
    language ("python" | "shell"), partial (True: fraction of cases), run_timeout (5 s per case), tier.
    """

    name = "code_output"
    # 2: output cut at the capture limit fails the case; 3: a run that crashed after printing the right output fails
    # (a Python exit status other than 0, or any signal); 4: code in the reasoning (before the last </think>) is not
    # the answer; 5: a program may end with exit()/quit() (NameError under the sandbox's -S before); 6: cases the
    # verifier's time does not reach fail (the run was a timeout, the machine's fault); 7: compare="strip" strips
    # each line and the whole text at both ends (leading spaces and blank lines failed an answer that LiveCodeBench,
    # CodeContests, APPS and TACO all pass: bench/code_output_reference.py), and an expected output over 1 MiB
    # keeps the program's output up to twice its size (a correct 2 MB answer was cut at 1 MiB and failed); 8: a
    # program may change the scheduling of its own process only (renice -p, taskset -p of a pid are refused: they
    # reached the sandbox's other processes of its uid)
    version = "8"
    description = "run the model's program on stdin; compare stdout with the expected output"
    isolation = "thread"
    default_timeout = 60.0

    def __init__(self, *, compare: str = "strip", language: str = "python", partial: bool = True,
                 run_timeout: float = 5.0, tier: str | None = None, **params: Any) -> None:
        super().__init__(**params)
        if compare not in ("strip", "exact", "tokens", "lines"):
            raise VerifierError(f"verifier 'code_output': compare={compare!r} must be strip, exact, tokens or lines "
                                "(fix: pass one of them, or leave it out for strip)")
        if language not in ("python", "shell"):
            raise VerifierError(f"verifier 'code_output': language={language!r} must be python or shell "
                                "(fix: pass one of them, or leave it out for python)")
        if isinstance(run_timeout, bool) or not isinstance(run_timeout, (int, float)) or run_timeout <= 0:
            raise VerifierError(f"verifier 'code_output': run_timeout must be positive seconds, got {run_timeout!r} "
                                "(fix: pass a number above 0, e.g. 5)")
        self.compare, self.language, self.partial = compare, language, bool(partial)
        self.run_timeout, self.tier = float(run_timeout), tier

    @staticmethod
    def cases_of(task: Task) -> list[dict[str, str]]:
        ans = task.answer
        cases = ans.get("cases", [ans] if "stdout" in ans else None) if isinstance(ans, dict) else ans
        if not isinstance(cases, list) or not cases or not all(
                isinstance(c, dict) and isinstance(c.get("stdout"), str) and isinstance(c.get("stdin", ""), str)
                for c in cases):
            raise BadTask("answer must be {'cases': [{'stdin': str, 'stdout': str}, ...]}")
        return cases

    def score(self, task: Task, completion: Completion) -> Verdict:
        langs = CODE_LANGS if self.language == "python" else ("bash", "sh", "shell", "")
        code = extract_code(completion, langs) if self.language == "python" else _shell_code(completion, langs)
        cases = self.cases_of(task)
        from crossgym import sandbox

        ok = 0
        first_fail = ""
        for i, case in enumerate(cases):
            if time_left(self.run_timeout) - 0.5 < 0.5:  # the cases before it used up the verifier's time: the rest
                first_fail = first_fail or f"case {i + 1}: not run, the verifier's time ran out"  # fail (it was a
                break  # timeout, the machine's fault, masked under on_error none: 14 x sleep escaped a 0.07)
            timeout, limits = _sandbox_timeout(self.run_timeout), capture_limits(case["stdout"])
            try:
                if self.language == "python":
                    res = sandbox.run_python(code, stdin=case.get("stdin", ""), timeout=timeout, limits=limits,
                                             tier=self.tier)
                else:
                    res = sandbox.run_program(["/bin/sh", "-c", code], stdin=case.get("stdin", ""), timeout=timeout,
                                              limits=limits, tier=self.tier)
            except CrossgymError as exc:
                raise RuntimeError(f"sandbox: {exc}") from None
            cut = "stdout" in res.truncated_parts  # only part of what it printed came back: never a match
            # a run that crashed (a Python exception, a signal, a limit) fails whatever it printed first, as judges
            # count a runtime error; a shell script's status is its last command's, so there only a signal fails
            crashed = res.signal is not None or (self.language == "python" and res.exit_code != 0)
            same = same_output(res.stdout, case["stdout"], self.compare)
            good = not res.timed_out and not cut and not crashed and same
            ok += good
            if not good and not first_fail:
                if res.timed_out:
                    first_fail = f"case {i + 1}: timed out"
                elif cut:
                    first_fail = f"case {i + 1}: output truncated (over {len(res.stdout.encode()):,} bytes)"
                elif res.exit_code != 0 and (crashed or not same):
                    first_fail = f"case {i + 1}: exit {res.exit_code}" + (" (the output matched)" if same else "") \
                        + f": {clip(res.stderr.strip(), 100)}"
                else:
                    first_fail = f"case {i + 1}: printed {clip(res.stdout.strip(), 50)!r}"
            if not good and not self.partial:
                break
        frac = ok / len(cases)
        all_ok = ok == len(cases)
        reason = f"{ok}/{len(cases)} cases match" + ("" if all_ok else f"; {first_fail}")
        return Verdict.ok(frac if self.partial else float(all_ok), passed=all_ok, reason=reason,
                          components={"cases_passed": float(ok), "cases": float(len(cases))})

    @classmethod
    def examples(cls) -> list[Example]:
        cases = {"cases": [{"stdin": "3 4\n", "stdout": "7\n"}, {"stdin": "10 -2\n", "stdout": "8"}]}
        return [
            cls.example(cases, "```python\na, b = map(int, input().split())\nprint(a + b)\n```", "pass"),
            cls.example(cases, "```python\nprint(7)\n```", "fail", "right only for the first case"),
            cls.example(cases, "Add them and print the sum.", "malformed", "no code"),
        ]


def capture_limits(want: str) -> Limits | None:
    """Sandbox limits that keep the whole of an output as long as ``want`` (None: the defaults do). An output cut
    at the capture limit always fails, so with the default 1 MiB an honest program printing a 2 MB expected answer
    (2*10^5 numbers, common in CodeContests and TACO tests) failed every such case; the room is twice the expected
    size (spaces, CRLF) and at most what a task may write before it is killed."""
    from crossgym.sandbox.result import Limits

    base = Limits()
    need = 2 * len(want.encode("utf-8", "surrogatepass")) + 64 * 1024
    return None if need <= base.output_bytes else base.replace(output_bytes=min(need, base.max_output_bytes))


def _shell_code(completion: Completion, langs: tuple[str, ...]) -> str:
    for k, m in enumerate(reversed([m for m in completion.messages if m.role == "assistant"])):
        body = extract_fenced(answer_text(m.content, final=k == 0), langs)
        if body is not None and body.strip():
            return _cap(body)
    raise Malformed("no ```bash block in the completion")
