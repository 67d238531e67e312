"""Reward hacks of issue 20 against run_python_tests, as a policy would try them: the caller's interpreter flags,
checks written without assert, exceptions used as control flow, objects that answer the test's question
themselves, and fixtures rewritten under the tests. Each hack must earn no more than the honest wrong answer.

Every test runs on both tiers and (where the call allows it) both as run_python_tests and as the second solution
of a group through run_python_tests_many.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap

import pytest

from crossgym.sandbox import Sandbox, TestRunResult, run_python_tests, run_python_tests_many

GROUPED = {"on": False}


def judge(sandbox: Sandbox, solution: str, tests: object, **kwargs: object) -> TestRunResult:
    timeout = kwargs.pop("timeout", 5.0)
    if not GROUPED["on"]:
        return run_python_tests(solution, tests, sandbox=sandbox, timeout=timeout, **kwargs)  # type: ignore[arg-type]
    honest = "def unused():\n    return 1\n"
    _, second = run_python_tests_many([honest, solution], tests, sandbox=sandbox,  # type: ignore[arg-type]
                                      timeout=timeout, **kwargs)  # type: ignore[arg-type]
    return second


def worth(sandbox: Sandbox, cheat: str, honest: str, tests: object, **kwargs: object) -> tuple[float, float]:
    """(the cheat's fraction, the honest wrong answer's fraction)."""
    return judge(sandbox, cheat, tests, **kwargs).fraction, judge(sandbox, honest, tests, **kwargs).fraction


# ------------------------------------------------------------------ the caller's flags (python -O, environment)
_VERIFY = textwrap.dedent("""
    import json, sys
    from crossgym import load_verifier
    from crossgym.protocol.task import Completion, Task, VerifierSpec
    spec = VerifierSpec("code_tests", {"tier": sys.argv[1]})
    tests = ["assert add(1, 2) == 3", "assert add(2, 2) == 4", "assert add(0, 0) == 0 and len('\\\\d') == 2"]
    task = Task(id="add", prompt="add", answer={"tests": tests}, verifier=spec)  # '\\d' warns while compiled
    v = load_verifier(spec)
    out = [v.verify(task, Completion.from_text("```python\\n" + code + "\\n```")).reward
           for code in ("def add(a, b):\\n    return None", "def add(a, b):\\n    return a + b")]
    print(json.dumps([sys.flags.optimize, out]))
""")


@pytest.mark.parametrize("how", [["-O"], ["-OO", "-W", "error::SyntaxWarning"], "env"])
def test_the_callers_flags_do_not_change_the_judgement(sandbox: Sandbox, how: object) -> None:
    env = dict(os.environ, CROSSGYM_DISABLE_PLUGINS=os.environ.get("CROSSGYM_DISABLE_PLUGINS", ""))
    flags: list[str] = []
    if how == "env":
        env.update(PYTHONOPTIMIZE="1", PYTHONHASHSEED="12345", PYTHONSAFEPATH="1", PYTHONDONTWRITEBYTECODE="1",
                   PYTHONWARNINGS="error::SyntaxWarning")
    else:
        flags = list(how)  # type: ignore[call-overload]
    done = subprocess.run([sys.executable, *flags, "-c", _VERIFY, sandbox.tier], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    optimize, (wrong, right) = json.loads(done.stdout.strip().splitlines()[-1])
    assert optimize >= 1  # the caller really ran without asserts
    assert (wrong, right) == (0.0, 1.0)


_DEEP = textwrap.dedent("""
    import json, sys
    from crossgym.sandbox import run_python_tests
    sol = ("import sys\\nsys.setrecursionlimit(10**7)\\n"
           "def f(n):\\n    return 0 if n == 0 else sum(map(f, [n - 1])) + 1\\n")  # C stack at every level
    print(json.dumps(run_python_tests(sol, ["assert f(150000) == 150000"], timeout=20, tier=sys.argv[1]).passed))
""")


@pytest.mark.skipif(resource.getrlimit(resource.RLIMIT_STACK)[1] != resource.RLIM_INFINITY,
                    reason="the hard stack limit is not unlimited here")
def test_the_callers_stack_limit_does_not_change_the_judgement(sandbox: Sandbox) -> None:
    """A trainer started under ``ulimit -s unlimited`` judges deep recursion as one started under 8 MiB."""
    def start(limit: int) -> int:
        def pre() -> None:
            resource.setrlimit(resource.RLIMIT_STACK, (limit, resource.RLIM_INFINITY))
        done = subprocess.run([sys.executable, "-c", _DEEP, sandbox.tier], capture_output=True, text=True,
                              timeout=120, preexec_fn=pre)
        assert done.returncode == 0, done.stderr[-2000:]
        return int(done.stdout.strip().splitlines()[-1])

    assert start(resource.RLIM_INFINITY) == start(8 << 20)


_BIG = textwrap.dedent("""
    import json, sys
    from crossgym.sandbox import run_python_tests
    r = run_python_tests("def big():\\n    return 10 ** 5000\\n", ["assert big() == 1" + "0" * 5000], tier=sys.argv[1])
    print(json.dumps([r.passed, (r.error or "").split(":")[0]]))
""")


def test_the_callers_int_digit_limit_does_not_change_the_judgement(sandbox: Sandbox) -> None:
    """A 5000-digit literal in the tests parses in a caller run with -X int_max_str_digits=0, not in the harness:
    the tests are then planned by the harness, as for any other caller."""
    got = []
    for flags in ([], ["-X", "int_max_str_digits=0"]):
        done = subprocess.run([sys.executable, *flags, "-c", _BIG, sandbox.tier], capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        got.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert got[0] == got[1] == [0, "tests"]


_SIGNALS = textwrap.dedent("""
    import json, sys
    from crossgym.sandbox import run_program, run_python_tests
    sol = "import os, signal\\ndef f():\\n    os.kill(os.getpid(), signal.SIGUSR2)\\n    return 1\\n"
    r = run_python_tests(sol, ["assert f() == 1"], timeout=5, tier=sys.argv[1])
    p = run_program(["/bin/sh", "-c", "kill -USR2 $$; echo alive"], timeout=5, tier=sys.argv[1])
    print(json.dumps([r.passed, p.stdout, p.exit_code]))
""")


def test_signals_the_caller_ignores_do_not_change_the_judgement(sandbox: Sandbox) -> None:
    """A trainer started with SIGUSR2 ignored (a launcher, nohup for SIGHUP) judges as any other: an ignored
    disposition survives exec, so the sandbox resets every one."""
    def run(ignore: bool) -> list[object]:
        def pre() -> None:
            if ignore:
                for sig in (signal.SIGUSR2, signal.SIGHUP, signal.SIGTERM):
                    signal.signal(sig, signal.SIG_IGN)
        done = subprocess.run([sys.executable, "-c", _SIGNALS, sandbox.tier], capture_output=True, text=True,
                              timeout=120, preexec_fn=pre)
        assert done.returncode == 0, done.stderr[-2000:]
        return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]

    assert run(True) == run(False) == [0, "", -signal.SIGUSR2]


_DATA = textwrap.dedent("""
    import json, sys
    from crossgym.sandbox import run_python_tests, run_python_tests_many
    sol = "def big():\\n    return len(bytearray(300 << 20))\\n"  # within the task's 1 GiB
    one = run_python_tests(sol, ["assert big() == 300 << 20"], timeout=10, tier=sys.argv[1])
    two = run_python_tests_many([sol, sol], ["assert big() == 300 << 20"], timeout=10, tier=sys.argv[1])
    print(json.dumps([one.passed] + [r.passed for r in two]))
""")


def test_the_callers_other_limits_do_not_change_the_judgement(sandbox: Sandbox) -> None:
    """A soft limit the caller lowered and the task does not set (``ulimit -d``) is lifted for the task."""
    def pre() -> None:
        resource.setrlimit(resource.RLIMIT_DATA, (200 << 20, resource.getrlimit(resource.RLIMIT_DATA)[1]))

    done = subprocess.run([sys.executable, "-c", _DATA, sandbox.tier], capture_output=True, text=True, timeout=120,
                          preexec_fn=pre)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [1, 1, 1]


_STATE = textwrap.dedent("""
    import json, sys
    from crossgym.sandbox import run_python_tests, run_python_tests_many
    sols = ["def add(a, b):\\n    return a + b\\n",
            "import time\\ndef add(a, b):\\n    t = time.monotonic()\\n    time.sleep(0.01)\\n"
            "    return a + b if time.monotonic() - t < 0.4 else None\\n"]
    tests = ["assert add(1, 2) == 3", "assert add(2, 2) == 4"]
    one = [run_python_tests(s, tests, timeout=5, tier=sys.argv[1]).passed for s in sols]
    print(json.dumps(one + [r.passed for r in run_python_tests_many(sols, tests, timeout=5, tier=sys.argv[1])]))
""")


def _caller_state(how: str) -> None:
    """The process state a trainer may be started with (a hardened login's umask, ``ulimit -n 64``, systemd's
    TimerSlackNSec): all of it survives fork and exec into the sandbox's server."""
    if how == "umask":
        os.umask(0o077)
    elif how == "nofile":
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    elif how == "timerslack":
        import ctypes

        ctypes.CDLL(None).prctl(29, 1 << 30, 0, 0, 0)  # PR_SET_TIMERSLACK: every sleep up to 1 s late


@pytest.mark.parametrize("how", ["umask", "nofile", "timerslack", "nested_tmpdir"])
def test_the_callers_process_state_does_not_change_the_judgement(sandbox: Sandbox, how: str) -> None:
    """Before: a caller umask of 077 (or 027) scored every solution 0 (the slots could not reach their own
    directories), ``ulimit -n 64`` failed every task's set-up, a caller's timer slack made sleeps late, and in the
    strong tier a $TMPDIR below /tmp (bubblewrap made its parents 0700) scored every solution 0."""
    env = dict(os.environ)
    if how == "nested_tmpdir":  # below /tmp, every directory open to others (pytest's own tmp_path is 0700)
        top = tempfile.mkdtemp(prefix="cg-nested-", dir="/tmp")
        os.chmod(top, 0o755)
        env["TMPDIR"] = nested = os.path.join(top, "a b", "c")
        os.makedirs(nested, mode=0o755)
    done = subprocess.run([sys.executable, "-c", _STATE, sandbox.tier], env=env, capture_output=True, text=True,
                          timeout=120, preexec_fn=lambda: _caller_state(how))
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [2, 2, 2, 2]
    if how == "nested_tmpdir":
        shutil.rmtree(top)


def test_a_scratch_directory_the_tasks_cannot_reach_is_refused_not_scored_zero(sandbox: Sandbox) -> None:
    """$TMPDIR inside a private (0700) directory: with a uid per slot the default tier's tasks could not reach
    their directories and every verdict was 0; now the call says why (the strong tier builds its own parents)."""
    top = tempfile.mkdtemp(prefix="cg-private-", dir="/tmp")  # mkdtemp: 0700
    try:
        env = dict(os.environ, TMPDIR=os.path.join(top, "inner"))
        os.makedirs(env["TMPDIR"], mode=0o755)
        done = subprocess.run([sys.executable, "-c", _STATE, sandbox.tier], env=env, capture_output=True,
                              text=True, timeout=120)
        if done.returncode == 0:
            assert json.loads(done.stdout.strip().splitlines()[-1]) == [2, 2, 2, 2]
        else:
            assert sandbox.tier == "default" and "cannot pass through" in done.stderr, done.stderr[-2000:]
    finally:
        shutil.rmtree(top)


def test_plan_made_under_O_keeps_its_asserts() -> None:
    """The plan is made in the caller: compiled with optimize=0 whatever the caller's flags."""
    code = ("import marshal, base64, dis, io\nfrom crossgym.sandbox import testing\n"
            "p = testing._planned(('assert add(1, 2) == 3',), None, None)\n"
            "co = marshal.loads(base64.b64decode(p['module']))\n"
            "out = io.StringIO(); dis.dis(co, file=out); print('LOAD_ASSERTION_ERROR' in out.getvalue())")
    done = subprocess.run([sys.executable, "-O", "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "True", done.stderr[-2000:]


# ------------------------------------------------------------------------------ checks written without assert
CHECK = '''
def verify(got, want):
    if got != want:
        raise AssertionError(f"{got!r} != {want!r}")


def check(candidate):
    assert candidate(1, 2) == 3
    if candidate(2, 2) != 4:
        raise AssertionError("2 + 2")
    if candidate(0, 5) == 5:
        pass
    else:
        assert False
    verify(candidate(3, 3), 6)
'''


def test_checks_without_assert_are_counted(sandbox: Sandbox, call: str) -> None:
    three = judge(sandbox, "def add(a, b):\n    return 3\n", CHECK, entry_point="add")
    assert (three.passed, three.total) == (1, 4) and not three.all_passed
    right = judge(sandbox, "def add(a, b):\n    return a + b\n", CHECK, entry_point="add")
    assert (right.passed, right.total, right.error) == (4, 4, None)


def test_a_failed_statement_outside_the_units_is_counted(sandbox: Sandbox, call: str) -> None:
    tests = "assert add(1, 2) == 3\nprint(add('a', 1))\nassert add(0, 0) == 0\n"
    r = judge(sandbox, "def add(a, b):\n    if type(a) is str:\n        raise TypeError('no')\n    return a + b\n",
              tests)
    assert (r.passed, r.total) == (2, 3) and r.details[-1].error == "TypeError: no"
    assert r.error is not None and r.error.startswith("setup:")


def test_a_hanging_statement_outside_the_units_counts_but_the_unrun_do_not(sandbox: Sandbox, call: str) -> None:
    solution = "def f(x):\n    while x == 2:\n        pass\n    return x\n"
    hang = judge(sandbox, solution, "assert f(1) == 1\nv = f(2)\nw = 1\nassert f(3) == 3\n", timeout=4.0,
                 test_timeout=0.5)
    assert (hang.passed, hang.total) == (2, 3) and hang.details[-1].error == "timeout"
    late = judge(sandbox, "def f(x):\n    while True:\n        pass\n", "assert f(1) == 1\nx = 1\ny = 2\n"
                 "assert f(2) == 2\n", timeout=1.0)
    assert (late.passed, late.total) == (0, 2)  # the statements after the deadline never ran: no failures of theirs


STALE = {
    "check": ("def check(candidate):\n    result = candidate('')\n    assert result == []\n"
              "    result = candidate('   ')\n    assert result == []\n    result = candidate('a b')\n"
              "    assert result == ['a', 'b']\n"),
    "module": "result = f('')\nassert result == []\nresult = f('   ')\nassert result == []\n"
              "first, *rest = f('a')\nassert rest == []\nfirst, *rest = f('   ') + ['z']\nassert rest == []\n",
}


@pytest.mark.parametrize("shape", sorted(STALE))
def test_a_failed_assignment_leaves_no_stale_value_for_the_next_unit(sandbox: Sandbox, call: str,
                                                                       shape: str) -> None:
    """``result = candidate(x)`` raising left ``result`` from the call before, so the next ``assert result == ...``
    passed on the stale value: raising on an input earned more than answering it wrong. A failed assignment now
    unbinds the names it assigns."""
    cheat = "def f(s):\n    if s == '   ':\n        raise RuntimeError('no')\n    return s.split()\n"
    wrong = "def f(s):\n    if s == '   ':\n        return ['?']\n    return s.split()\n"
    kwargs = {"entry_point": "f"} if shape == "check" else {}
    got, base = worth(sandbox, cheat, wrong, STALE[shape], **kwargs)
    assert got < base, (got, base)
    right = judge(sandbox, "def f(s):\n    return s.split()\n", STALE[shape], **kwargs)
    assert right.all_passed, right.details


def test_a_context_manager_that_swallows_everything_passes_nothing_inside_it(sandbox: Sandbox, call: str) -> None:
    """A solution's ``__exit__`` that returns True would swallow a failed assert, or the solution's own error, in
    every unit written inside its block (one process is fooled so): only what the tests' own code raised may be."""
    tests = ["with session() as s:\n    assert s.answer() == 42", "with session() as s:\n    assert s.answer() + 1 == 43"]
    honest = "class S:\n    def __enter__(self):\n        return self\n    def __exit__(self, *a):\n        return False\n" \
             "    def answer(self):\n        return 41\ndef session():\n    return S()\n"
    for answer in ("return 41", "raise ValueError('no')"):
        cheat = ("class S:\n    def __enter__(self):\n        return self\n    def __exit__(self, *a):\n"
                 f"        return True\n    def answer(self):\n        {answer}\ndef session():\n    return S()\n")
        got, base = worth(sandbox, cheat, honest, tests)
        assert got <= base == 0.0, answer


def test_what_a_check_raises_is_never_swallowed(sandbox: Sandbox, call: str) -> None:
    """A check that raises something else than AssertionError on the solution's answer (None + 0, None[0],
    len(None), a Decimal sNaN compared) inside a block whose ``__exit__`` returns True: every unit passed, as the
    correct ledger did (in one process too). What the tests raise outside their checks is still the block's."""
    tests = ["with Ledger() as led:\n    led.add(3)\n    led.add(4)\n    assert led.total() + 0 == 7",
             "with Ledger() as led:\n    led.add(5)\n    assert led.entries()[0] == 5",
             "with Ledger() as led:\n    led.add(5)\n    assert len(led.entries()) == 1",
             "with Ledger() as led:\n    led.add(2)\n    assert led.total() == 2",
             "import unittest\nwith Ledger() as led:\n    unittest.TestCase().assertEqual(led.total() + 1, 1)",
             "with Ledger() as led:\n    led.add(1)\n    if led.total() + 0 != 1:\n        raise AssertionError('sum')",
             "with Ledger() as led:\n    {}['missing']\nassert True"]  # suppressed, as contextlib.suppress would
    base = ("class Ledger:\n    def __init__(self):\n        self.xs = []\n    def __enter__(self):\n"
            "        return self\n    def __exit__(self, *a):\n        return True\n"
            "    def add(self, x):\n        self.xs.append(x)\n")
    right = base + "    def total(self):\n        return sum(self.xs)\n    def entries(self):\n        return list(self.xs)\n"
    r = judge(sandbox, right, tests)
    assert (r.passed, r.total) == (7, 7), r.details
    for total in ("None", "__import__('decimal').Decimal('sNaN')"):
        cheat = base + f"    def total(self):\n        return {total}\n    def entries(self):\n        return None\n"
        r = judge(sandbox, cheat, tests)
        assert r.passed == 1 and r.details[-1].passed, (total, r.details)


# ------------------------------------------------------------------------- exceptions used as control flow
def test_exceptions_used_as_control_flow_do_not_pass(sandbox: Sandbox, call: str) -> None:
    tests = ["assert all(map(is_even, [2, 4, 6]))", "assert not any(map(is_odd, [2, 4]))",
             "for ok in map(is_even, [2, 3]):\n    assert ok"]
    honest = "def is_even(n):\n    return False\n\ndef is_odd(n):\n    return True\n"
    for escape in ("raise StopIteration", "raise StopIteration('done')", "raise StopAsyncIteration",
                   "raise GeneratorExit", "raise KeyboardInterrupt", "raise SystemExit(0)",
                   "class Out(BaseException):\n        pass\n    raise Out()"):
        cheat = f"def is_even(n):\n    {escape}\n\ndef is_odd(n):\n    {escape}\n"
        got, base = worth(sandbox, cheat, honest, tests)
        assert got <= base == 0.0, escape


def test_an_exception_that_cannot_be_rebuilt_is_not_the_one_the_test_expects(sandbox: Sandbox, call: str) -> None:
    tests = ["try:\n    parse(None)\nexcept TypeError:\n    pass\nelse:\n    raise AssertionError('no TypeError')"]
    cheat = "def parse(s):\n    raise UnicodeDecodeError('utf-8', b'x', 0, 1, 'nope')\n"
    assert judge(sandbox, cheat, tests).passed == 0
    assert judge(sandbox, "def parse(s):\n    raise TypeError('None')\n", tests).passed == 1


# ------------------------------------------------------------- objects that answer the test's question themselves
LIARS = {
    "contains": "class Yes:\n    def __contains__(self, x):\n        return True\n    def __iter__(self):\n"
                "        return iter(())\n",
    "list-contains": "class Yes(list):\n    def __contains__(self, x):\n        return True\n",
    "list-iter": "class Yes(list):\n    def __iter__(self):\n        return iter(range(100))\n"
                 "    def __contains__(self, x):\n        return True\n    def __len__(self):\n        return 3\n",
    "str": "class Yes(str):\n    def __contains__(self, x):\n        return True\n"
           "    def __eq__(self, o):\n        return True\n    __hash__ = str.__hash__\n",
    "dict": "class Yes(dict):\n    def __contains__(self, k):\n        return True\n"
            "    def __getitem__(self, k):\n        return 1\n    def __eq__(self, o):\n        return True\n",
    "int": "class Yes(int):\n    def __eq__(self, o):\n        return True\n    def __ne__(self, o):\n"
           "        return False\n    __hash__ = int.__hash__\n    def __contains__(self, x):\n        return True\n",
}


@pytest.mark.parametrize("liar", sorted(LIARS))
def test_objects_that_answer_the_question_earn_no_more_than_the_honest_wrong_answer(sandbox: Sandbox, call: str,
                                                                                      liar: str) -> None:
    tests = ["assert 4 in evens(5)", "assert 2 in evens(5)", "assert 3 not in evens(5)",
             "assert evens(5) == [0, 2, 4]", "assert len(evens(5)) == 3", "assert sorted(evens(5))[:1] == [0]",
             "assert 'b' in evens(5)"]
    cheat = LIARS[liar] + "def evens(n):\n    return Yes()\n"
    got, base = worth(sandbox, cheat, "def evens(n):\n    return Yes()\n".replace("Yes()", "[]"), tests)
    assert got <= base <= 1 / len(tests), liar  # "3 not in" holds for the honest empty list


def test_honest_values_and_objects_still_cross(sandbox: Sandbox, call: str) -> None:
    """Subclasses of built-in types travel as their data (they were opaque handles, never equal to anything);
    ``in`` on the solution's generators, views and iterable objects still answers as Python does."""
    solution = ("import collections, enum\nPoint = collections.namedtuple('Point', 'x y')\n"
                "class Color(enum.IntEnum):\n    RED = 1\n"
                "def point():\n    return Point(1, 2)\n\ndef red():\n    return Color.RED\n\n"
                "def counts(s):\n    return collections.Counter(s)\n\ndef ordered():\n"
                "    return collections.OrderedDict(a=1)\n"
                "def count(n):\n    yield from range(n)\n\ndef keys():\n    return {'a': 1, 'b': 2}.keys()\n\n"
                "class Bag:\n    def __init__(self):\n        self.items = [1, 2]\n    def __iter__(self):\n"
                "        return iter(self.items)\n")
    tests = ["assert point() == (1, 2)", "assert red() == 1", "assert counts('aab') == {'a': 2, 'b': 1}",
             "assert ordered() == {'a': 1}",
             "assert list(count(3)) == [0, 1, 2]", "assert 2 in count(5) and 7 not in count(5)",
             "assert 'a' in keys() and 'z' not in keys()", "assert 2 in Bag() and 3 not in Bag()",
             "assert 150 in count(200)"]
    r = judge(sandbox, solution, tests)
    assert (r.passed, r.total) == (9, 9), r.details


# ------------------------------------------------------------------------- fixtures rewritten under the tests
FIXTURE_TESTS = ["assert total() == sum(map(int, open('data/nums.txt').read().split()))",
                 "assert total() == 6 and open('data/nums.txt').read() == '1 2 3\\n'"]


@pytest.mark.parametrize("rewrite", [
    "open('data/nums.txt', 'w').write('5\\n')",
    "import os\n    os.remove('data/nums.txt')\n    open('data/nums.txt', 'w').write('5\\n')",
    "import os\n    open('forged', 'w').write('5\\n')\n    os.remove('data/nums.txt')\n"
    "    os.symlink('../forged', 'data/nums.txt')",
    "import os, shutil\n    shutil.rmtree('data')\n    os.mkdir('data')\n    open('data/nums.txt', 'w').write('5')",
    "import os\n    st = os.stat('data/nums.txt')\n    open('data/nums.txt', 'w').write('5 0 0\\n')\n"
    "    os.utime('data/nums.txt', ns=(st.st_atime_ns, st.st_mtime_ns))",  # same size, same mtime
])
def test_a_solution_cannot_rewrite_a_fixture_the_tests_read(sandbox: Sandbox, rewrite: str) -> None:
    files = {"data/nums.txt": "1 2 3\n"}
    cheat = f"def total():\n    {rewrite}\n    return 5\n"
    r = run_python_tests(cheat, FIXTURE_TESTS, files=files, sandbox=sandbox, timeout=5.0)
    assert r.passed == 0, r.details
    at_import = f"def _forge():\n    {rewrite}\n_forge()\n\ndef total():\n    return 5\n"
    r = run_python_tests(at_import, FIXTURE_TESTS, files=files, sandbox=sandbox, timeout=5.0)
    assert r.passed == 0, r.details
    honest = "def total():\n    return sum(map(int, open('data/nums.txt').read().split()))\n"
    r = run_python_tests(honest, FIXTURE_TESTS, files=files, sandbox=sandbox, timeout=5.0)
    assert (r.passed, r.total) == (2, 2), r.details


@pytest.mark.parametrize("read", ["open('data/nums.txt').read()", "pathlib.Path('data/nums.txt').read_text()",
                                  "os.read(os.open('data/nums.txt', os.O_RDONLY), 100).decode()"])
def test_a_thread_the_solution_leaves_cannot_rewrite_a_fixture(sandbox: Sandbox, read: str) -> None:
    """The rewrite comes after the reply, while the tests wait: found when the tests open the file."""
    cheat = ("import threading, time\ndef _later():\n    time.sleep(0.05)\n"
             "    open('data/nums.txt', 'w').write('5\\n')\n"
             "def total():\n    threading.Thread(target=_later).start()\n    return 5\n")
    tests = [f"import os, pathlib, time\nt = total()\ntime.sleep(0.4)\nassert t == sum(map(int, {read}.split()))",
             "import time\ntime.sleep(0.2)\nassert total() == 5 == sum(map(int, open('data/nums.txt').read().split()))"]
    r = run_python_tests(cheat, tests, files={"data/nums.txt": "1 2 3\n"}, sandbox=sandbox, timeout=5.0)
    assert r.passed == 0, r.details
    # what the tests themselves do to their fixtures is kept
    tests = ["open('nums.txt', 'w').write('4 4')\nassert total() == 8",
             "with open('nums.txt', 'a') as f:\n    f.write(' 1')\nassert total() == 9",
             "assert total() == 9 and open('nums.txt').read() == '4 4 1'",
             "import os\nos.rename('nums.txt', 'old.txt')\nopen('nums.txt', 'w').write('7')\nassert total() == 7",
             "import os\nos.remove('nums.txt')\ntry:\n    total()\nexcept FileNotFoundError:\n    pass\n"
             "else:\n    raise AssertionError('still there')"]
    honest = "def total():\n    return sum(map(int, open('nums.txt').read().split()))\n"
    r = run_python_tests(honest, tests, files={"nums.txt": "1 2 3"}, sandbox=sandbox, timeout=5.0)
    assert (r.passed, r.total) == (5, 5), r.details


_REWRITE_LOOP = ("        while True:\n            try:\n                with open('data/nums.txt', 'w') as f:\n"
                 "                    f.write('5\\n')\n            except OSError:\n                pass\n")


@pytest.mark.parametrize("writer", [
    "    threading.Thread(target=_loop, daemon=True).start()\n",  # a thread of the solution's process
    "    if os.fork() == 0:\n        _loop()\n",  # a child process
    "    if os.fork() == 0:\n        if os.fork() == 0:\n            _loop()\n        os._exit(0)\n",  # an orphan
], ids=["thread", "child", "orphan"])
def test_nothing_the_solution_left_running_writes_while_the_tests_read(sandbox: Sandbox, writer: str) -> None:
    """A writer rewriting the fixture in a loop raced the harness's check before each read (3 runs in 10 of the
    child passed): now every process of the solution is stopped while the tests run their own code."""
    cheat = ("import os, threading\ndef _loop():\n" + _REWRITE_LOOP.replace("        ", "    ", 1).replace(
        "\n        ", "\n    ") + "def total():\n" + writer + "    return 5\n")
    tests = ["t = total()\nfor _ in range(300):\n    s = sum(map(int, open('data/nums.txt').read().split()))\n"
             "    if s == t:\n        break\nassert t == s, (t, s)"]
    for _ in range(3):  # (a write that still got through is put back, or fails the unit: FixtureError)
        r = run_python_tests(cheat, tests, files={"data/nums.txt": "1 2 3\n"}, sandbox=sandbox, timeout=5.0)
        assert r.passed == 0 and r.total == 1, r.details
        assert any(e in (r.details[0].error or "") for e in ("AssertionError", "FixtureError")), r.details


def test_a_thread_the_solution_started_runs_during_its_calls(sandbox: Sandbox) -> None:
    """Stopped only while the tests run: a call that waits for the solution's own thread still gets its work."""
    honest = ("import threading, queue\n_jobs, _done = queue.Queue(), queue.Queue()\n"
              "def _work():\n    while True:\n        _done.put(sum(map(int, open(_jobs.get()).read().split())))\n"
              "threading.Thread(target=_work, daemon=True).start()\n"
              "def total():\n    _jobs.put('data/nums.txt')\n    return _done.get(timeout=2)\n")
    tests = ["assert total() == 6", "import time\ntime.sleep(0.1)\nassert total() == 6"]
    r = run_python_tests(honest, tests, files={"data/nums.txt": "1 2 3\n"}, sandbox=sandbox, timeout=5.0)
    assert (r.passed, r.total) == (2, 2), r.details


# ------------------------------------------------------------------- what a call did before it raised stays done
ROLLBACK_TESTS = ["acc = {'a': 50, 'b': 0}\ntry:\n    transfer(acc, 'a', 'b', 100)\nexcept ValueError:\n    pass\n"
                  "assert acc == {'a': 50, 'b': 0}, acc",
                  "acc = {'a': 50, 'b': 0}\ntransfer(acc, 'a', 'b', 20)\nassert acc == {'a': 30, 'b': 20}",
                  "rows = [[1], [2]]\ntry:\n    append_all(rows, 'x')\nexcept TypeError:\n    pass\n"
                  "assert rows == [[1], [2]], rows",
                  "try:\n    log_and_fail()\nexcept RuntimeError:\n    pass\nassert LOG == [], LOG"]


def test_a_call_that_raises_keeps_what_it_did_before(sandbox: Sandbox, call: str) -> None:
    """Changes made before the raise were dropped: code that mutates first and checks after passed the tests'
    check that a refused call changes nothing, as the correct code did (in one process it fails)."""
    correct = ("LOG = []\ndef transfer(acc, src, dst, amt):\n    if acc[src] < amt:\n        raise ValueError('no')\n"
               "    acc[src] -= amt\n    acc[dst] += amt\n"
               "def append_all(rows, x):\n    if not isinstance(x, int):\n        raise TypeError('int')\n"
               "    for r in rows:\n        r.append(x)\n"
               "def log_and_fail():\n    raise RuntimeError('no')\n")
    cheat = ("LOG = []\ndef transfer(acc, src, dst, amt):\n    acc[src] -= amt\n    acc[dst] += amt\n"
             "    if acc[src] < 0:\n        raise ValueError('no')\n"
             "def append_all(rows, x):\n    for r in rows:\n        r.append(x)\n"
             "    if not isinstance(x, int):\n        raise TypeError('int')\n"
             "def log_and_fail():\n    LOG.append(1)\n    raise RuntimeError('no')\n")
    good, bad = judge(sandbox, correct, ROLLBACK_TESTS), judge(sandbox, cheat, ROLLBACK_TESTS)
    assert (good.passed, good.total) == (4, 4), good.details
    assert (bad.passed, bad.total) == (1, 4), bad.details
    assert [d.error for d in bad.details if not d.passed] == [
        "AssertionError: {'a': -50, 'b': 100}", "AssertionError: [[1, 'x'], [2, 'x']]", "AssertionError: [1]"]


# --------------------------------------------------------------------------------- text that must serialise
def test_a_lone_surrogate_in_the_solutions_exception_serialises(sandbox: Sandbox, call: str) -> None:
    r = judge(sandbox, "def add(a, b):\n    raise ValueError('bad \\ud800 \\udfff end')\n", ["assert add(1, 2) == 3"])
    assert r.passed == 0 and r.details[0].error is not None and "end" in r.details[0].error
    r.details[0].error.encode("utf-8")
    loading = judge(sandbox, "raise ValueError('\\ud800')\n", ["assert add(1, 2) == 3"])
    assert loading.error is not None
    loading.error.encode("utf-8")


def test_the_solutions_own_exception_classes_are_caught_by_their_builtin_base(sandbox: Sandbox, call: str) -> None:
    """``class ParseError(ValueError)`` raised by the solution is caught by the tests' ``except ValueError``, as in
    one process (it was an opaque SolutionError); subclasses of the control-flow exceptions still pass nothing."""
    tests = ["try:\n    parse('x')\nexcept ValueError as e:\n    assert str(e) == 'bad x'\nelse:\n"
             "    raise AssertionError('no ValueError')",
             "try:\n    parse('')\nexcept LookupError:\n    pass\nelse:\n    raise AssertionError('no LookupError')"]
    honest = ("class ParseError(ValueError):\n    pass\nclass Missing(KeyError):\n    pass\n"
              "def parse(s):\n    if not s:\n        raise Missing(s)\n    raise ParseError('bad ' + s)\n")
    r = judge(sandbox, honest, tests)
    assert (r.passed, r.total) == (2, 2), r.details
    escape = "class Stop(StopIteration):\n    pass\nclass Out(KeyboardInterrupt):\n    pass\n"
    for kind in ("Stop", "Out"):
        cheat = escape + f"def is_even(n):\n    raise {kind}()\n"
        got = judge(sandbox, cheat, ["assert all(map(is_even, [2, 4]))", "assert not any(map(is_even, [1]))"])
        assert got.passed == 0, (kind, got.details)


# ------------------------------------------------------------------- units the tests run more than once
REPEATED = {
    "loop": ("def check(candidate, x):\n    assert candidate(x) == 2 * x\n\nfor x in range(4):\n    check(f, x)\n", None),
    "twice": "def check(candidate):\n    assert candidate(X[0]) == 2 * X[0]\n\nX = [0]\ncheck(f)\nX = [3]\ncheck(f)\n",
    "list": "def check(candidate, x):\n    assert candidate(x) == 2 * x\n\n[check(f, x) for x in range(4)]\n",
    "recursion": ("def check(candidate, x=0):\n    assert candidate(x) == 2 * x\n    if x < 3:\n"
                  "        check(candidate, x + 1)\n", "f"),
}


@pytest.mark.parametrize("suite", sorted(REPEATED))
def test_a_unit_run_more_than_once_passes_only_if_every_run_does(sandbox: Sandbox, call: str, suite: str) -> None:
    """A check() the tests call in a loop: its statements are units, and each reported its first run only, so a
    solution right for the first input alone passed them all (and the failure, stopped in the unit, never reached
    the loop)."""
    tests, entry = REPEATED[suite] if isinstance(REPEATED[suite], tuple) else (REPEATED[suite], None)
    first_only = "def f(x):\n    return 2 * x if x == 0 else -1\n"
    got, base = worth(sandbox, first_only, "def f(x):\n    return -1\n", tests, entry_point=entry)
    assert got <= base == 0.0, suite
    right = judge(sandbox, "def f(x):\n    return 2 * x\n", tests, entry_point=entry)
    assert right.all_passed, right.details


def test_the_rest_of_a_statement_around_a_helpers_units_keeps_its_timer(sandbox: Sandbox, call: str) -> None:
    """A loop that calls a helper whose statements are units: each unit's end used to disarm the loop's timer, so
    a solution's iterator that hung on its second item (after the helper's unit passed) held the harness until the
    call's deadline, and the run's fraction was 1.0 with a timeout."""
    solution = ("import time\ndef f(x):\n    time.sleep(0.06)\n    return 2 * x\n"
                "def xs():\n    yield 0\n    while True:\n        pass\n")  # (the sleep lets the pass line out)
    tests = "def check(candidate, x):\n    assert candidate(x) == 2 * x\n\nfor x in xs():\n    check(f, x)\n"
    r = judge(sandbox, solution, tests, timeout=3.0, test_timeout=0.4)
    assert r.fraction < 1.0 and r.total == 2 and r.details[-1].error == "timeout", r.details


# A call of the solution could rebind, or read, the tests' own variables: the globals the two share "as in one
# namespace" took in every name the tests use, the ones they bind themselves too. Each hack is wrong (returns
# None or 0) and earned what the correct answer earns.
_REBIND_TESTS = '''
import sys
_srv = sys.modules["_runtime.solution"]
_srv._shared_value = lambda v: True  # (the filter in its own process, undone)
def _rebind():
    import gc
    server = next(o for o in gc.get_objects() if type(o) is _srv._Server)
    for name in list(server.watched):
        if name.startswith("test"):
            globals()[name] = lambda *a, **k: None
        elif name.startswith("Test"):
            globals()[name] = type(name, (), {"__getattr__": lambda self, n: (lambda *a, **k: None)})
def add(a, b):
    _rebind()
    return None
'''
TESTS_OWN_NAMES = {
    "rebinds-expected": ("def f(n):\n    global expected\n    expected = -1\n    return -1\n",
                         "def f(n):\n    return None\n",
                         "expected = 6\nresult = f(3)\nassert result == expected\nexpected = 10\nresult = f(5)\n"
                         "assert result == expected\n"),
    "reads-expected": ("want = expected = cases = None\ndef f(x):\n    if cases is not None:\n"
                       "        return dict(cases).get(x, want if want is not None else expected)\n"
                       "    return want if want is not None else expected\n",
                       "def f(x):\n    return None\n",
                       "expected = 6\nassert f(3) == expected\nexpected = 14\nassert f(7) == expected\n"
                       "cases = [(1, 2), (2, 4)]\nfor x, want in cases:\n    assert f(x) == want\n"),
    "fakes-a-module": ("class _M:\n    pass\n_fake = _M()\n_fake.isclose = lambda *a, **k: True\n"
                       "def area(r):\n    global math\n    math = _fake\n    return 0\n",
                       "def area(r):\n    return 0\n",
                       "import math\nassert math.isclose(area(1), 3.14159, rel_tol=1e-3)\n"
                       "assert math.isclose(area(2), 12.566, rel_tol=1e-3)\n"),
    "replaces-a-helper": ("import sys\nsys.modules['_runtime.solution']._shared_value = lambda v: True\n"
                          "def f(x):\n    global close\n    close = lambda a, b: True\n    return 0\n",
                          "def f(x):\n    return 0\n",
                          "def close(a, b):\n    return abs(a - b) < 1e-6\nassert close(f(1), 0.5)\n"
                          "assert close(f(2), 1.0)\nassert close(f(3), 1.5)\n"),
    "rebinds-test-functions": (_REBIND_TESTS, "def add(a, b):\n    return None\n",
                               "def test_one():\n    assert add(1, 2) == 3\ndef test_two():\n    assert add(2, 2) == 4\n"
                               "def test_three():\n    assert add(0, 0) == 0\n"),
    "rebinds-a-test-class": (_REBIND_TESTS, "def add(a, b):\n    return None\n",
                             "import unittest\nclass TestCases(unittest.TestCase):\n    def test_a(self):\n"
                             "        self.assertEqual(add(1, 2), 3)\n    def test_b(self):\n"
                             "        self.assertEqual(add(2, 2), 4)\n    def test_c(self):\n"
                             "        self.assertEqual(add(5, 5), 10)\n"),
    # names the tests bind with no assignment the bytecode shows: a star import, globals()[k] = v
    "rebinds-a-star-import": ("def circle_area(r):\n    global pi\n    pi = 0.0\n    return 0.0\n",
                              "def circle_area(r):\n    return 3.0 * r * r\n",
                              "from math import *\nassert abs(circle_area(1) - pi) < 1e-9\n"
                              "assert isclose(circle_area(3), 9 * pi)\n"),
    "reads-a-dynamic-global": ("expected = want2 = None\ndef f(x):\n    return expected if x == 3 else want2\n",
                               "def f(x):\n    return x\n",
                               ["for _k, _v in {'expected': 6, 'want2': 10}.items():\n    globals()[_k] = _v",
                                "assert f(3) == expected", "assert f(4) == want2"]),
    "rebinds-a-dynamic-global": ("def f(x):\n    global expected, want2\n    expected = want2 = 0\n    return 0\n",
                                 "def f(x):\n    return x\n",
                                 ["for _k, _v in {'expected': 6, 'want2': 10}.items():\n    globals()[_k] = _v",
                                  "assert f(3) == expected", "assert f(4) == want2"]),
    # a name bound later (by setUpModule, which never ran) took the solution's value meanwhile
    "fills-a-name-setUpModule-binds": ("CASES = []\ndef square(x):\n    return 0\n", "def square(x):\n    return x + x\n",
                                       "import unittest\ndef setUpModule():\n    global CASES\n"
                                       "    CASES = [(2, 4), (3, 9), (5, 25)]\n"
                                       "class TestSquare(unittest.TestCase):\n    def test_cases(self):\n"
                                       "        for x, want in CASES:\n            self.assertEqual(square(x), want)\n"),
    # the tests' text holds "6" and "9": a piece of it passed the text guard
    "evals-a-piece-of-the-tests": ("def to_expr(xs):\n    return str(sum(xs))\n", "def to_expr(xs):\n    return '0'\n",
                                   ["assert eval(to_expr([1, 2, 3])) == 6", "assert eval(to_expr([4, 5])) == 9"]),
}


@pytest.mark.parametrize("hack", sorted(TESTS_OWN_NAMES))
def test_a_call_can_neither_rebind_nor_read_the_tests_own_variables(sandbox: Sandbox, call: str, hack: str) -> None:
    cheat, honest, tests = TESTS_OWN_NAMES[hack]
    got, wrong = judge(sandbox, cheat, tests), judge(sandbox, honest, tests)
    assert got.total == wrong.total > 0 and got.passed <= wrong.passed, [(d.name, d.error) for d in got.details]


def test_globals_the_solution_owns_are_still_shared(sandbox: Sandbox, call: str) -> None:
    """What the shared globals are for stays: a counter of the solution's the tests read, a global its function
    sets when called, and a list the tests change in place that the solution then reads."""
    solution = ("count = 0\nitems = []\ndef bump():\n    global count, last\n    count += 1\n    last = count\n"
                "    return count\ndef total():\n    return sum(items)\n")
    tests = ("bump()\nbump()\nassert count == 2\nassert last == 2\nitems.append(5)\nassert total() == 5\n")
    assert judge(sandbox, solution, tests).all_passed


def test_unittests_setUpModule_and_tearDownModule_run_once_around_the_tests(sandbox: Sandbox, call: str) -> None:
    tests = ("import unittest\nlog = []\ndef setUpModule():\n    global CASES\n    CASES = [(2, 4), (3, 9)]\n"
             "    log.append('up')\ndef tearDownModule():\n    log.append('down')\n"
             "class TestSquare(unittest.TestCase):\n    def test_cases(self):\n        for x, want in CASES:\n"
             "            self.assertEqual(square(x), want)\n    def test_once(self):\n"
             "        self.assertEqual(log, ['up'])\n")
    assert judge(sandbox, "def square(x):\n    return x * x\n", tests).all_passed
    assert judge(sandbox, "def square(x):\n    return x + x\n", tests).passed == 1


STOPPER = r'''
import os, signal
me, harness, mine = os.getpid(), os.getppid(), MINE
for p in os.listdir("/proc"):
    if not p.isdigit() or int(p) in (me, harness, mine):
        continue
    try:
        status = open("/proc/%s/status" % p).read()
    except OSError:
        continue
    if "\\nUid:\\t%d\\t" % os.getuid() in status:
        try:
            os.kill(int(p), signal.SIGSTOP)
        except OSError:
            pass
print("hello")
'''


def test_a_program_the_tests_run_cannot_stop_the_next_solutions_processes(sandbox: Sandbox) -> None:
    """The tests run a script the solution wrote; as a child of the tests' process it could SIGSTOP the processes
    waiting for the group's next solutions, which then timed out loading (0 for them, 1.0 kept by the saboteur)."""
    tests = ["import subprocess, sys\nmake_script('hello.py')\nr = subprocess.run([sys.executable, 'hello.py'], "
             "capture_output=True, text=True, timeout=5)\nassert r.stdout == 'hello\\n'",
             "assert make_script('x.py') is None"]
    saboteur = ("import os\nSCRIPT = " + repr(STOPPER) + "\n"
                "def make_script(path):\n    open(path, 'w').write(SCRIPT.replace('MINE', str(os.getpid())))\n")
    honest = "def make_script(path):\n    open(path, 'w').write('print(\"hello\")\\n')\n"
    alone = run_python_tests(honest, tests, sandbox=sandbox, timeout=6)
    assert alone.all_passed, alone
    group = run_python_tests_many([honest, saboteur, honest, honest], tests, sandbox=sandbox, timeout=6)
    assert [(r.passed, r.total, r.error) for r in group[2:]] == [(alone.passed, alone.total, alone.error)] * 2


def test_a_program_the_tests_run_gets_no_private_pipe_of_the_harness(sandbox: Sandbox, call: str) -> None:
    """os.system in the tests handed the result pipe (fd 3) and the spawner's socket (fd 5) to the program it
    ran; a sitecustomize.py the solution planted (on a PYTHONPATH it set) wrote every unit of the group "passed"
    there: the saboteur got 5/5 and every sibling 0."""
    tests = ["import os, sys\nassert os.system(sys.executable + ' -c \"import os; os.fstat(3)\" 2>/dev/null') != 0",
             "import os, sys\nassert os.system(sys.executable + ' -c \"import os; os.fstat(5)\" 2>/dev/null') != 0",
             "import subprocess, sys\nr = subprocess.run([sys.executable, '-c', 'import os; os.write(3, b\"{}\")'], "
             "close_fds=False, capture_output=True)\nassert r.returncode != 0",
             "assert f() == 1"]
    assert judge(sandbox, "def f():\n    return 1\n", tests).all_passed


def test_a_solution_cannot_steer_what_the_tests_programs_run(sandbox: Sandbox, call: str) -> None:
    """A solution's os.environ changes come back to the tests (as in one process), but not the variables that
    choose what a program runs (PYTHONPATH, PATH, LD_*): its planted sitecustomize.py or `sort` ran as the tests'."""
    solution = ("import os\ndef f():\n    os.environ['PYTHONPATH'] = os.getcwd()\n    os.environ['PATH'] = '/nowhere'\n"
                "    os.environ['LD_PRELOAD'] = 'x.so'\n    os.environ['MODE'] = 'fast'\n"
                "    os.environ['PATH_TO_DATA'] = 'd'\n    os.environ['ENVIRONMENT'] = 'prod'\n    return 1\n")
    tests = ("import os\nbefore = dict(os.environ)\nassert f() == 1\nassert os.environ.get('MODE') == 'fast'\n"
             "assert os.environ.get('PATH_TO_DATA') == 'd' and os.environ.get('ENVIRONMENT') == 'prod'\n"
             "assert [os.environ.get(k) for k in ('PYTHONPATH', 'PATH', 'LD_PRELOAD')] == "
             "[before.get(k) for k in ('PYTHONPATH', 'PATH', 'LD_PRELOAD')]\n")
    assert judge(sandbox, solution, tests).all_passed


def test_a_solution_cannot_choose_what_the_tests_draw_next(sandbox: Sandbox, call: str) -> None:
    """The random state a call left was the tests' next: an all-zero state made every later draw the minimum, and
    a solution that drew until the tests' next ``randint(0, 20)`` came out 0 or 1 (a state reached by draws) made
    their next input trivially sorted: a wrong sort passed 20 of 21 seeded cases. The tests' draws go on from their
    own state: the solution's draws start from it and never come back."""
    tests = ["import random\nrandom.seed(2024)\nassert sort_list([3, 1, 2]) == [1, 2, 3]\n"
             "xs = [random.randint(-100, 100) for _ in range(20)]\nassert len(set(xs)) > 1",
             "import random\nrandom.seed(7)\nassert sort_list([2, 1]) == [1, 2]\n"
             "assert random.random() == random.Random(7).random()"]  # (its draws did not move the tests' generator)
    tests += [f"import random\nrandom.seed({seed})\nsort_list([])\nxs = [random.randint(0, 99) for _ in "
              f"range(random.randint(0, 20))]\nassert sort_list(xs) == sorted(xs)" for seed in range(12)]
    forger = ("import random\ndef sort_list(xs):\n    random.setstate((3, tuple([0] * 624 + [624]), None))\n"
              "    return sorted(xs)\n")
    drawer = "import random\ndef sort_list(xs):\n    random.random()\n    return sorted(xs)\n"
    steerer = ("import random\ndef sort_list(xs):\n    for _ in range(100000):\n        st = random.getstate()\n"
               "        if random.randint(0, 20) <= 1:\n            random.setstate(st)\n            break\n"
               "    return list(xs)\n")
    honest_wrong = "def sort_list(xs):\n    return list(xs)\n"
    assert judge(sandbox, drawer, tests).all_passed
    assert judge(sandbox, forger, tests).all_passed  # (it sorts: its state is its own)
    assert judge(sandbox, steerer, tests).passed <= judge(sandbox, honest_wrong, tests).passed


# ------------------------------------------------------------------ objects of the solution's classes compared
FRAC_TESTS = ["assert add(Frac(1, 2), Frac(1, 2)) == Frac(1, 1)", "assert add(Frac(1, 3), Frac(1, 3)) == Frac(2, 3)",
              "assert add(Frac(1, 2), Frac(1, 4)) != Frac(1, 1)", "assert add(Frac(1, 2), Frac(0, 1)) != 1"]
FRAC = ("class Frac:\n    def __init__(self, n, d):\n        self.n, self.d = n, d\n"
        "    def __eq__(self, other):\n{eq}\n    __hash__ = None\n"
        "def add(a, b):\n    return Frac({n}, a.d * b.d)\n")
RIGHT_EQ = ("        if not isinstance(other, Frac):\n            return NotImplemented\n"
            "        return self.n * other.d == other.n * self.d")


def test_a_class_with_its_own_eq_compares_its_objects_as_it_says(sandbox: Sandbox, call: str) -> None:
    """Two objects of a class with an ``__eq__`` of its own compared by identity: a correct Frac (4/4 == 1/1 by
    cross-multiplication) failed every such check, as the wrong one did. Its ``__eq__`` answers now, unless it
    says it equals an object it cannot know of; and a plain value is never compared there."""
    right = FRAC.format(eq=RIGHT_EQ, n="a.n * b.d + b.n * a.d")
    wrong = FRAC.format(eq=RIGHT_EQ, n="a.n + b.n")
    always = FRAC.format(eq="        return True", n="0")
    r = judge(sandbox, right, FRAC_TESTS)
    assert (r.passed, r.total) == (4, 4), r.details
    assert judge(sandbox, wrong, FRAC_TESTS).passed < 4
    assert judge(sandbox, always, FRAC_TESTS).passed <= judge(sandbox, wrong, FRAC_TESTS).passed


def test_dataclasses_that_compare_nothing_compare_their_state(sandbox: Sandbox, call: str) -> None:
    """Every field ``compare=False``, or slots with no field declared: every object equalled every other."""
    tests = ["assert midpoint(Point(0, 0), Point(2, 2)) == Point(1, 1)",
             "assert midpoint(Point(0, 0), Point(4, 0)) == Point(2, 0)"]
    right = "    return Point((a.x + b.x) // 2, (a.y + b.y) // 2)\n"
    for head in ("from dataclasses import dataclass, field\n@dataclass\nclass Point:\n"
                 "    x: int = field(compare=False)\n    y: int = field(compare=False)\n",
                 "from dataclasses import dataclass\n@dataclass\nclass Point:\n    __slots__ = ('x', 'y')\n"
                 "    def __init__(self, x, y):\n        self.x, self.y = x, y\n"):
        assert judge(sandbox, head + "def midpoint(a, b):\n" + right, tests).all_passed, head
        got = judge(sandbox, head + "def midpoint(a, b):\n    return Point(0, 0)\n", tests)
        assert got.passed == 0, (head, got.details)


def test_correct_classes_compare_as_in_one_process(sandbox: Sandbox, call: str) -> None:
    """An ``__eq__`` that reads what the other has (``getattr(other, 'items', [])``) equals the probe when empty,
    which made it equal only to itself; a SimpleNamespace subclass's ``__eq__`` is no Python function; a real
    dataclass's extra state (a serial set after __init__) is not what @dataclass compares: each correct answer
    failed where one process passes it."""
    solution = ("import itertools, types\nfrom dataclasses import dataclass, field\n_serial = itertools.count()\n"
                "class Stack:\n    def __init__(self, items=()):\n        self.items = list(items)\n"
                "    def __eq__(self, other):\n        return self.items == getattr(other, 'items', [])\n"
                "    __hash__ = None\n"
                "def make(xs):\n    return Stack(xs)\n"
                "class P(types.SimpleNamespace):\n    pass\n"
                "def mk(x):\n    return P(x=x)\n"
                "@dataclass\nclass Rect:\n    w: int\n    h: int\n    def __post_init__(self):\n"
                "        self.serial = next(_serial)\n"
                "def grow(r, k):\n    return Rect(r.w * k, r.h * k)\n")
    tests = ["assert make([]) == Stack()", "assert make([1]) == Stack([1]) and make([1]) != Stack([2])",
             "assert mk(1) == P(x=1) and mk(1) != P(x=2)", "assert grow(Rect(1, 2), 2) == Rect(2, 4)"]
    got = judge(sandbox, solution, tests)
    assert (got.passed, got.total) == (4, 4), got.details
