"""Deadlines hold whatever a task leaves behind, and nothing it leaves reaches the next task of its slot.

A task plants what clean-up finds hardest (tens of thousands of empty directories, a tree deeper than clean-up
walks, a huge sparse file, directories with mode 000, extended attributes, changed modes and timestamps on its
own directory and its parent); the call still returns by its deadline + 1 s, and the next task in the same slot
(a one-worker pool) sees exactly what a task saw before the attack. Every attack is bounded (a counted number of
directories, a deadline of a few seconds)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator

import pytest

from crossgym.sandbox import Sandbox, config, run_python, run_python_tests_many, run_shell

TIERS = [pytest.param("default", id="default"),
         pytest.param("strong", id="strong", marks=pytest.mark.skipif(not config.bwrap_works(),
                                                                      reason="bubblewrap cannot run here"))]

PLANT = """
import os, time
end = time.monotonic() + {budget}
fd = os.open('.', os.O_RDONLY)
for _ in range(1200):  # deeper than any clean-up walks (and than recursion goes)
    os.mkdir('d', dir_fd=fd)
    sub = os.open('d', os.O_RDONLY, dir_fd=fd)
    os.close(fd)
    fd = sub
os.close(fd)
with open('sparse', 'wb') as fh:
    fh.seek(60 << 20)
    fh.write(b'x')
os.makedirs('locked/inner/leaf')
open('locked/inner/leaf/f', 'w').close()
os.chmod('locked/inner', 0)
os.chmod('locked', 0o500)
for path in ('.', '..', 'sparse'):
    for step in (lambda: os.setxattr(path, 'user.cg', b'1'), lambda: os.utime(path, (0, 0)),
                 lambda: os.chmod(path, 0o777 if path == '..' else 0o500)):
        try:
            step()
        except OSError:
            pass
n = 0
try:
    while n < 15000 and time.monotonic() < end:  # empty directories until the budget is spent
        os.mkdir('e%d' % n)
        n += 1
except OSError:
    pass
while True:
    time.sleep(0.01)  # the deadline ends it
"""

LOOK = """
import json, os, time
def xattrs(path):
    try:
        return sorted(os.listxattr(path))
    except OSError as exc:
        return exc.errno
st, up = os.stat('.'), os.stat('..')
print(json.dumps({'entries': sorted(os.listdir('.')), 'mode': st.st_mode & 0o7777, 'xattrs': xattrs('.'),
                  'fresh': st.st_mtime > time.time() - 600, 'parent_mode': up.st_mode & 0o7777,
                  'parent_xattrs': xattrs('..'), 'parent_touched': up.st_mtime < 1}))
"""


@pytest.fixture(scope="module", params=TIERS)
def slot(request: pytest.FixtureRequest) -> Iterator[Sandbox]:
    """A one-worker pool: every task runs in the same slot."""
    pool = Sandbox(request.param, workers=1)
    yield pool
    pool.close()
    assert pool._scratch_root is None


def look(pool: Sandbox) -> dict[str, object]:
    r = run_python(LOOK, sandbox=pool, timeout=5)
    assert r.ok, r.stderr
    return json.loads(r.stdout)  # type: ignore[no-any-return]


def wait_for_the_sweeper(pool: Sandbox, within: float = 60.0) -> list[str]:
    trash = os.path.join(pool.scratch_root, ".trash")
    deadline = time.monotonic() + within
    while os.listdir(trash) and time.monotonic() < deadline:
        time.sleep(0.1)
    return os.listdir(trash)


def test_a_task_that_leaves_everything_returns_by_its_deadline(slot: Sandbox) -> None:
    before = look(slot)
    assert before["entries"] == [] and before["xattrs"] in ([], 95) and before["fresh"]
    timeout = 3.0
    start = time.monotonic()
    r = run_python(PLANT.format(budget=timeout), sandbox=slot, timeout=timeout)
    elapsed = time.monotonic() - start
    assert r.timed_out, r.stderr[-500:]
    assert elapsed <= timeout + 1.0, f"returned {elapsed:.2f}s after start with a {timeout}s deadline"
    after = look(slot)  # the same slot, right after: nothing of the attack
    assert after == before
    assert wait_for_the_sweeper(slot) == []  # and the sweeper removes it all in the background


def test_a_group_member_that_leaves_everything_delays_no_sibling(slot: Sandbox) -> None:
    planter = PLANT.format(budget=1.0) + "\ndef add(a, b):\n    return a + b\n"
    good = "def add(a, b):\n    return a + b\n"
    tests = ["assert add(1, 2) == 3", "assert add(2, 2) == 4"]
    start = time.monotonic()
    results = run_python_tests_many([planter, good, planter, good], tests, sandbox=slot, timeout=1.0)
    elapsed = time.monotonic() - start
    assert [r.passed for r in results] == [0, 2, 0, 2], [r.error for r in results]
    assert elapsed <= 4 * 1.0 + 1.0, f"the group took {elapsed:.2f}s"
    assert look(slot)["entries"] == []


def test_a_shell_task_that_leaves_everything_returns_by_its_deadline(slot: Sandbox) -> None:
    """A shell task's directory is the caller's: it goes to the trash too, not removed on the call's path."""
    timeout = 3.0
    start = time.monotonic()
    r = run_shell("python3 plant.py", files={"plant.py": PLANT.format(budget=timeout)}, sandbox=slot,
                  timeout=timeout)
    elapsed = time.monotonic() - start
    assert r.timed_out or r.exit_code == 0, r.stderr[-500:]
    assert elapsed <= timeout + 1.0, f"returned {elapsed:.2f}s after start with a {timeout}s deadline"
    assert r.truncated  # the snapshot looked at what it may, said it was cut, and did not walk the rest
    assert wait_for_the_sweeper(slot) == []
