"""ShellSession: one scratch directory across the commands of an episode."""

from __future__ import annotations

import os

import pytest

from crossgym.protocol.errors import SandboxError
from crossgym.sandbox import Sandbox, ShellSession


def test_files_persist_and_nothing_else_does(sandbox: Sandbox) -> None:
    with ShellSession({"notes.txt": "one\n"}, sandbox=sandbox, env={"GREETING": "hi"}) as sh:
        first = sh.run("echo two >> notes.txt; mkdir sub; cd sub; export LEFT=1; echo $GREETING > g.txt")
        assert first.ok and first.files_changed == ("notes.txt", "sub/g.txt")
        second = sh.run("pwd | grep -c sub; echo ${LEFT:-unset}; cat notes.txt")
        assert second.stdout == "0\nunset\none\ntwo\n" and second.files_changed == ()
        third = sh.run("rm sub/g.txt; cat", stdin="piped")
        assert third.stdout == "piped" and third.files_changed == ("sub/g.txt",)
        assert sh.files == {"notes.txt": b"one\ntwo\n"} and len(sh.history) == 3
        assert sh.tier == sandbox.tier
        path = sh.path
    assert path is not None and not os.path.exists(path)
    with pytest.raises(SandboxError, match="closed"):
        sh.run("true")


def test_a_command_past_its_deadline(sandbox: Sandbox) -> None:
    with ShellSession(sandbox=sandbox, timeout=1.0) as sh:
        slow = sh.run("echo started > s.txt; sleep 20")
        assert slow.timed_out and slow.limit_hit == "wall" and slow.files == {"s.txt": b"started\n"}
        assert sh.run("cat s.txt", timeout=5).stdout == "started\n"


def test_close_returns_the_final_files(sandbox: Sandbox) -> None:
    sh = ShellSession(sandbox=sandbox)
    sh.run("printf done > result.txt")
    assert sh.close() == {"result.txt": b"done"}
    assert sh.close() == {"result.txt": b"done"}


def test_exists_sees_every_kind_of_entry_without_following_links(sandbox: Sandbox) -> None:
    """``files`` holds regular files only; ``exists`` answers for directories, links and fifos too, and a link is
    never followed (one to the scratch's parent names nothing beyond it)."""
    with ShellSession({"keep/a.txt": "a", "gone.txt": "g"}, sandbox=sandbox) as sh:
        sh.run("mkdir empty; ln -s /etc link; ln -s .. up; mkfifo pipe; rm gone.txt; touch f")
        assert set(sh.files) == {"keep/a.txt", "f"}
        for path in ("keep", "keep/a.txt", "./keep//a.txt", "empty", "link", "link/passwd", "up", "pipe", "f"):
            assert sh.exists(path), path
        for path in ("gone.txt", "keep/b.txt", "empty/x", "f/x", "nothing"):
            assert not sh.exists(path), path
        assert sh.entries() == ({"keep", "empty", "link", "up", "pipe"}, False)
        with pytest.raises(SandboxError, match="bad file path"):
            sh.exists("../x")
    with pytest.raises(SandboxError, match="closed"):
        sh.exists("keep")


def test_a_session_cannot_reach_another_open_session(sandbox: Sandbox) -> None:
    """Two episodes' directories live side by side (and their commands may run in one slot, as one uid): neither
    reads, lists nor writes the other's."""
    with ShellSession({"secret.txt": "A-SECRET"}, sandbox=sandbox) as a, ShellSession(sandbox=sandbox) as b:
        a.run("echo more > m.txt")
        for _ in range(3):  # over the slots
            r = b.run(f"cat {a.path}/secret.txt {a.path}/m.txt; ls {a.path}; echo pwned > {a.path}/secret.txt; "
                      f"ln {a.path}/secret.txt mine.txt; true")
            assert "A-SECRET" not in r.stdout and "more" not in r.stdout and "m.txt" not in r.stdout, r
        assert a.run("cat secret.txt").stdout == "A-SECRET" and b.files == {}


def test_a_process_left_by_a_command_never_writes_after_it(sandbox: Sandbox) -> None:
    """The snapshot is taken once the command's processes are dead: a background writer (nohup, disown) neither
    changes the files judged nor reaches the next command."""
    with ShellSession(sandbox=sandbox) as sh:
        first = sh.run("(sleep 0.2; echo late > late.txt) & disown; "
                       "nohup sh -c 'sleep 0.2; echo late > late2.txt' >/dev/null 2>&1 & echo started")
        assert first.stdout == "started\n" and first.files == {}
        second = sh.run("sleep 0.6; ls")
        assert second.stdout == "" and sh.files == {} and not sh.exists("late.txt") and not sh.exists("late2.txt")


def test_a_hard_link_to_a_file_outside_is_refused(sandbox: Sandbox, tmp_path: os.PathLike[str]) -> None:
    """A hard link is a regular file in the snapshot, read by the caller: one to a file outside the scratch
    directory would hand its content back in ``files`` (and into a verdict's reason)."""
    canary = os.path.join(str(tmp_path), "canary.txt")
    with open(canary, "w") as fh:
        fh.write("CANARY-HARDLINK")
    os.chmod(str(tmp_path), 0o755)
    os.chmod(canary, 0o644)
    with ShellSession(sandbox=sandbox) as sh:
        r = sh.run(f"ln {canary} c.txt; ln /etc/passwd p.txt; ln /etc/hostname h.txt; true")
        assert r.files == {} and all(b"CANARY" not in v for v in sh.files.values()), r


def _snapshot_as_a_plain_user(root: str) -> tuple[list[str], bool]:
    """What ``files.snapshot`` sees of ``root`` from a caller that is not root (a forked child as nobody when the
    tests run as root), after that user made one file and one directory unreadable."""
    import json

    from crossgym.sandbox import Limits
    from crossgym.sandbox import files as filetree

    def look() -> tuple[list[str], bool]:
        for name, body in (("ok.txt", "ok"), ("hidden.txt", "junk"), ("d/inner.txt", "junk")):
            os.makedirs(os.path.dirname(os.path.join(root, name)), exist_ok=True)
            with open(os.path.join(root, name), "w") as fh:
                fh.write(body)
        os.chmod(os.path.join(root, "hidden.txt"), 0)
        os.chmod(os.path.join(root, "d"), 0)
        try:
            tree, cut = filetree.snapshot(root, Limits())
        finally:
            os.chmod(os.path.join(root, "d"), 0o700)
        return sorted(tree), cut

    if os.geteuid() != 0:
        return look()
    os.chown(root, 65534, 65534)
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.setgid(65534)
            os.setuid(65534)
            os.write(wfd, json.dumps(look()).encode())
        except BaseException as exc:
            os.write(wfd, json.dumps([[f"child failed: {exc!r}"], False]).encode())
        finally:
            os._exit(0)
    os.close(wfd)
    with os.fdopen(rfd, "rb") as fh:
        data = fh.read()
    os.waitpid(pid, 0)
    names, cut = json.loads(data)
    return names, cut


def test_a_file_the_caller_cannot_read_cuts_the_snapshot() -> None:
    """A caller that is not root cannot read a file the task made mode 000: left out quietly, the directory looked
    as if it were not there ("must not exist" and forbid_extra passed); the snapshot now says it was cut."""
    import shutil
    import tempfile

    top = tempfile.mkdtemp(prefix="crossgym-snapshot-")  # under /tmp: pytest's tmp_path is root's alone
    try:
        os.chmod(top, 0o755)
        root = os.path.join(top, "scratch")
        os.mkdir(root)
        names, cut = _snapshot_as_a_plain_user(root)
    finally:
        shutil.rmtree(top)
    assert names == ["ok.txt"] and cut
