"""A group member that makes the harness's own process hang in C code (issue 20, class 2): no signal handler runs
there, so its unit timer cannot stop it. The harness's hard stop ends the process past the member's budget and the
caller judges the members after it anew: every honest sibling gets its solo verdict, and the call still returns
within the group's deadline. Both tiers, as the rest of tests/sandbox.

Attacks tried by hand that are already contained (and kept as instructive tests below): frames forged on the reply
pipe ahead of the call's own, a thread that keeps forging replies after the call returned, objects that lie in
``__index__``/``__float__``/``__bool__``, and a solution that stops itself with SIGSTOP.
"""

from __future__ import annotations

import time

import pytest

from crossgym.sandbox import Sandbox, run_python_tests, run_python_tests_many

P = (1 << 61) - 1  # k * P for every k: one hash, so a set of them is built in quadratic time, in one C call
TESTS = ["assert f(1) == 2", "assert f(2) == 3", "assert f(5) == 6"]
HONEST = "def f(n):\n    return n + 1\n"
WRONG = "def f(n):\n    return 2\n"

HANGS = {
    # a reply written on the solution's own reply pipe, whose set took the harness minutes to build (now refused
    # when decoded: see the last test)
    "forged set reply": (
        "import os, struct\nP = (1 << 61) - 1\ndef f(n):\n    if n == 5:\n"
        "        items = ','.join('[\"i\",\"%x\"]' % (k * P) for k in range(1, 120001))\n"
        "        data = ('[\"ok\",[[\"s\",[' + items + ']],{}]]').encode()\n"
        "        os.write(4, struct.pack('>I', len(data)) + data)\n        import time\n        time.sleep(20)\n"
        "    return n + 1\n", TESTS),
    # the tests' own set() on a list the solution returned
    "colliding list": (
        "P = (1 << 61) - 1\ndef f(n):\n    return [k * P for k in range(1, 60001)] if n == 5 else n + 1\n",
        ["assert f(1) == 2", "assert f(2) == 3", "assert len(set(f(5))) == 1"]),
}


@pytest.mark.parametrize("attack", sorted(HANGS))
def test_a_member_that_hangs_the_harness_in_c_leaves_its_siblings_verdicts(sandbox: Sandbox, attack: str) -> None:
    saboteur, tests = HANGS[attack]
    timeout = 0.5
    alone = [run_python_tests(s, tests, sandbox=sandbox, timeout=timeout) for s in (HONEST, WRONG)]
    group = [HONEST, saboteur, WRONG, HONEST]
    start = time.monotonic()
    got = run_python_tests_many(group, tests, sandbox=sandbox, timeout=timeout)
    took = time.monotonic() - start
    want = [alone[0], None, alone[1], alone[0]]
    for i, (r, w) in enumerate(zip(got, want, strict=True)):
        if w is not None:
            assert (r.passed, r.total, r.error) == (w.passed, w.total, w.error), (i, r)
    assert got[1].passed <= 2  # no more than its two right answers (whether it hangs in time depends on the load)
    assert took < timeout * len(group) + 2.0 * (len(group) - 1) + 1.0  # the group's own deadline holds


def test_the_hard_stop_stays_off_the_honest_path(sandbox: Sandbox) -> None:
    """A member that uses most of its time (in Python, where its timer holds) is no hard stop for the others."""
    slow = "import time\ndef f(n):\n    time.sleep(0.1)\n    return n + 1\n"
    got = run_python_tests_many([slow, HONEST, slow], TESTS, sandbox=sandbox, timeout=1.0)
    assert [(r.passed, r.total, r.error) for r in got] == [(3, 3, None)] * 3


CONTAINED = {
    "a reply forged ahead of the call's own": "import os\ndef f(n):\n    d = b'[\"ok\",[%d,{}]]' % (n + 2)\n"
                                              "    os.write(4, len(d).to_bytes(4, 'big') + d)\n    return 2\n",
    "a thread forging replies after the call": "import os, threading, time\ndef _w():\n    while True:\n"
                                               "        os.write(4, b'\\x00\\x00\\x00\\x0b[\"ok\",[7,{}]]')\n"
                                               "        time.sleep(0.001)\n"
                                               "def f(n):\n    threading.Thread(target=_w, daemon=True).start()\n"
                                               "    return 2\n",
    "lying numeric dunders": "class I:\n    def __index__(self):\n        return 6\n    def __int__(self):\n"
                             "        return 6\n    def __float__(self):\n        return 6.0\n"
                             "    def __eq__(self, o):\n        return True\n    __hash__ = object.__hash__\n"
                             "def f(n):\n    return I()\n",
    "SIGSTOP to itself": "import os, signal\ndef f(n):\n    if n == 1:\n        os.kill(os.getpid(), signal.SIGSTOP)\n"
                         "    return 2\n",
}


@pytest.mark.parametrize("attack", sorted(CONTAINED))
def test_contained_attacks_earn_no_more_than_the_honest_wrong_answer(sandbox: Sandbox, attack: str) -> None:
    tests = TESTS + ["assert int(f(3)) == 4", "assert [0, 1, 2, 3, 4, 5][f(4)] == 5"]
    base = run_python_tests(WRONG, tests, sandbox=sandbox, timeout=1.0, test_timeout=0.3)
    cheat = run_python_tests(CONTAINED[attack], tests, sandbox=sandbox, timeout=1.0, test_timeout=0.3)
    assert cheat.passed <= base.passed, (attack, cheat.details)
    _, grouped, honest = run_python_tests_many([HONEST, CONTAINED[attack], HONEST], tests, sandbox=sandbox,
                                               timeout=1.0, test_timeout=0.3)
    assert grouped.passed <= base.passed, (attack, grouped.details)
    assert (honest.passed, honest.total) == (5, 5), honest.details


@pytest.mark.parametrize("tag", ["s", "z", "d"])
def test_a_forged_reply_whose_keys_share_one_hash_is_refused_not_built(sandbox: Sandbox, tag: str) -> None:
    """Alone there is no later member to save, but a unit the tests run twice (a check() in a loop) passed its
    first run, and a harness stuck building the second reply's set until the deadline never reported its failure:
    the run kept 1/1. Such keys are refused in linear time, and the unit fails then and there."""
    item = "[\"i\",\"%x\"]" if tag != "d" else "[[\"i\",\"%x\"],0]"
    forge = ("import os, struct, time\nP = (1 << 61) - 1\nCALLS = [0]\ndef f(x):\n    CALLS[0] += 1\n"
             "    if CALLS[0] == 1:\n        time.sleep(0.06)\n        return 2 * x\n"
             f"    items = ','.join('{item}' % (k * P) for k in range(1, 60001))\n"
             f"    data = ('[\"ok\",[[\"{tag}\",[' + items + ']],{{}}]]').encode()\n"
             "    os.write(4, struct.pack('>I', len(data)) + data)\n    time.sleep(5)\n")
    tests = "def check(candidate, x):\n    assert candidate(x) == 2 * x\n\nfor x in range(3):\n    check(f, x)\n"
    start = time.monotonic()
    r = run_python_tests(forge, tests, sandbox=sandbox, timeout=3.0, test_timeout=1.0)
    assert time.monotonic() - start < 2.5, r
    assert r.passed == 0 and "equal hashes" in (r.details[0].error or ""), r.details


def test_a_run_held_past_its_last_unit_never_scores_a_full_fraction(sandbox: Sandbox) -> None:
    """Every unit reported passed, then a later statement of the tests holds the harness in one C call until the
    deadline (a repeated check(), a trailing statement on the solution's data): the run never ended, so it counts
    one failure more (2/3), never 2/2 with a timeout, which partial credit would have paid in full."""
    tests = "import time\nassert f(1) == 2\ntime.sleep(0.3)\nassert f(2) == 3\nx = sum(range(10 ** 13))\n"
    got = run_python_tests(HONEST, tests, sandbox=sandbox, timeout=1.0)
    assert (got.passed, got.total) == (2, 3) and got.error == "timeout" and not got.all_passed
    assert got.details[-1].name == "unfinished" and got.fraction < 1.0


def test_the_hard_stop_is_the_kernel_timer_not_a_thread(sandbox: Sandbox) -> None:
    """Here (glibc has timer_create) the hard stop is a POSIX timer whose signal is SIGKILL, not faulthandler's
    watchdog (a thread started for every member: about 5% of a group's CPU): the stopped harness ends by SIGKILL."""
    saboteur, tests = HANGS["colliding list"]
    got = run_python_tests_many([HONEST, saboteur, HONEST], tests, sandbox=sandbox, timeout=0.5)
    stopped = got[1]
    if stopped.error is None or "ended early" not in stopped.error:
        pytest.skip(f"the saboteur did not hang the harness in time here: {stopped.error}")
    assert stopped.error == "the harness ended early (exit -9)" and stopped.exec.signal == 9
    assert (got[2].passed, got[2].total) == (got[0].passed, got[0].total)
