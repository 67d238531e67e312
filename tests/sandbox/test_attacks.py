"""The attack corpus, run against every tier. Contained means: the task ends by its deadline plus one
second, nothing outside its scratch directory changes, and the caller and other tasks are unaffected.

Every attack is bounded on its own (counted forks, finite writes, `sleep` below 30 s, signals only to its
own parent, sockets only towards 127.0.0.1 listeners this test opened) and looks only for canaries this test
planted; attacks print whether they found a canary, never what they read.
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from crossgym.sandbox import ExecResult, Limits, Sandbox, ShellSession, run_python, run_shell


def attack(sandbox: Sandbox, source: str, timeout: float = 5.0, **kwargs: object) -> ExecResult:
    """Run one attack and check the parts of containment every attack shares."""
    start = time.monotonic()
    result = run_python(source, timeout=timeout, sandbox=sandbox, **kwargs)  # type: ignore[arg-type]
    elapsed = time.monotonic() - start
    assert elapsed <= timeout + 1.0, f"ended {elapsed:.2f}s after start with a {timeout}s deadline"
    after = run_python("print(6 * 7)", timeout=5, sandbox=sandbox)  # the pool is still serving
    assert after.ok and after.stdout == "42\n", after
    return result


def canary() -> str:
    return "CGCANARY" + secrets.token_hex(12)


def split(secret: str) -> tuple[str, str]:
    """Two halves, so an attack can search for the canary without ever holding it whole."""
    return secret[:10], secret[10:]


# ------------------------------------------------------------------------------------------ time
def test_infinite_loop(sandbox: Sandbox) -> None:
    r = attack(sandbox, "while True: pass", timeout=1.0)
    assert r.timed_out and r.limit_hit == "wall" and r.signal == 9


def test_sleep(sandbox: Sandbox) -> None:
    r = attack(sandbox, "import time\ntime.sleep(29)", timeout=1.0)
    assert r.timed_out and r.exit_code == -9


def test_sigterm_ignored(sandbox: Sandbox) -> None:
    r = attack(sandbox, "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                        "signal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: time.sleep(0.01)", timeout=1.0)
    assert r.timed_out and r.signal == 9


def test_cpu_limit_before_wall(sandbox: Sandbox) -> None:
    r = attack(sandbox, "while True: pass", timeout=10.0, limits=Limits(cpu_s=1))
    assert not r.timed_out and r.limit_hit == "cpu" and r.signal in (9, 24)


# ----------------------------------------------------------------------------------- resources
def test_memory_bomb(sandbox: Sandbox) -> None:
    r = attack(sandbox, "x = bytearray(4 << 30)\nprint('allocated')")
    assert r.exit_code == 1 and r.limit_hit == "memory" and "allocated" not in r.stdout


def test_memory_growth(sandbox: Sandbox) -> None:
    r = attack(sandbox, "chunks = []\nfor _ in range(1024):\n    chunks.append(bytearray(1 << 20))\nprint('grew')",
               limits=Limits(memory_mb=256))
    assert r.exit_code == 1 and r.limit_hit == "memory" and "grew" not in r.stdout


def test_fork_bomb(sandbox: Sandbox, marker: Any) -> None:
    src = ("import os\nn = 0\ntry:\n    for _ in range(300):\n        if os.fork() == 0:\n"
           f"            os.execv('/bin/sleep', ['sleep', {marker.arg!r}])\n        n += 1\n"
           "except OSError:\n    pass\nprint('forked', n)")
    bystander: list[ExecResult] = []
    other = threading.Thread(target=lambda: bystander.append(run_python("print('fine')", sandbox=sandbox)))
    other.start()
    r = attack(sandbox, src, timeout=3.0)
    other.join()
    assert r.ok and int(r.stdout.split()[1]) < 300  # stopped by the process limit
    assert bystander[0].ok and bystander[0].stdout == "fine\n"
    assert marker.survivors() == []


def test_fd_bomb(sandbox: Sandbox) -> None:
    r = attack(sandbox, "import os\nfds = []\ntry:\n    while len(fds) < 100000:\n"
                        "        fds.append(os.open('/dev/null', os.O_RDONLY))\nexcept OSError:\n    pass\nprint(len(fds))")
    assert r.ok and int(r.stdout) < 300


def test_disk_fill_one_file(sandbox: Sandbox) -> None:
    r = attack(sandbox, "with open('big.bin', 'wb') as f:\n    for _ in range(256):\n"
                        "        f.write(bytes(1 << 20))\nprint('wrote 256 MB')", limits=Limits(file_size_mb=8))
    assert r.exit_code == 1 and r.limit_hit == "file_size" and "wrote" not in r.stdout


def test_disk_fill_many_files(sandbox: Sandbox) -> None:
    src = ("n = 0\nfor i in range(20):\n    try:\n        with open(f'f{i}', 'wb') as f:\n"
           "            for _ in range(8):\n                f.write(bytes(1 << 20))\n        n += 1\n"
           "    except OSError:\n        pass\nprint('files', n)")
    r = attack(sandbox, src, limits=Limits(file_size_mb=4), timeout=10.0)
    assert r.ok and r.stdout == "files 0\n"  # every file stopped at the size limit; scratch removed after


def test_raise_rlimits(sandbox: Sandbox) -> None:
    src = ("import resource\nraised = []\nfor name in ('RLIMIT_AS', 'RLIMIT_CPU', 'RLIMIT_NPROC', 'RLIMIT_NOFILE'):\n"
           "    res = getattr(resource, name)\n    try:\n"
           "        resource.setrlimit(res, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))\n"
           "        raised.append(name)\n    except (ValueError, OSError):\n        pass\nprint('raised', raised)")
    r = attack(sandbox, src)
    assert r.ok and r.stdout == "raised []\n"


# -------------------------------------------------------------------------------------- output
def test_huge_stdout(sandbox: Sandbox) -> None:
    r = attack(sandbox, "import sys\nwhile True:\n    sys.stdout.write('A' * 65536)", timeout=10.0)
    assert r.limit_hit == "output" and r.truncated and len(r.stdout) == Limits().output_bytes


def test_huge_stderr(sandbox: Sandbox) -> None:
    r = attack(sandbox, "import os\nwhile True:\n    os.write(2, b'E' * 65536)", timeout=10.0)
    assert r.limit_hit == "output" and len(r.stderr) == Limits().output_bytes and r.stdout == ""


def test_non_utf8_output(sandbox: Sandbox) -> None:
    r = attack(sandbox, "import os\nos.write(1, bytes([0xff, 0xfe, 0x80]) + b' ok')\nos.write(2, bytes([0xc3]))")
    assert r.ok and r.stdout == "\ufffd\ufffd\ufffd ok" and r.stderr == "\ufffd"


def test_os_exit(sandbox: Sandbox) -> None:
    r = attack(sandbox, "import os\nprint('buffered, lost like in CPython')\nos._exit(7)")
    assert r.exit_code == 7 and not r.timed_out


def test_c_recursion_segfault(sandbox: Sandbox) -> None:
    src = "import json, sys\nsys.setrecursionlimit(10 ** 8)\nx = []\nfor _ in range(10 ** 5):\n    x = [x]\nprint(len(json.dumps(x)))"
    r = attack(sandbox, src)
    assert r.signal == 11 and r.exit_code == -11 and not r.timed_out


def test_background_children_hold_the_pipes(sandbox: Sandbox, marker: Any) -> None:
    src = ("import os\nfor _ in range(3):\n    if os.fork() == 0:\n"
           f"        os.execv('/bin/sleep', ['sleep', {marker.arg!r}])\nprint('parent done')")
    start = time.monotonic()
    r = attack(sandbox, src, timeout=10.0)
    assert r.ok and r.stdout == "parent done\n"
    assert time.monotonic() - start < 5.0  # returned when the task's main process ended, not at the deadline
    assert marker.survivors() == []


def test_setsid_daemon(sandbox: Sandbox, marker: Any) -> None:
    src = ("import os\nif os.fork() == 0:\n    try:\n        os.setsid()\n    except OSError:\n        pass\n"
           f"    if os.fork() == 0:\n        os.execv('/bin/sleep', ['sleep', {marker.arg!r}])\n    os._exit(0)\n"
           "os.wait()\nprint('daemonized')")
    r = attack(sandbox, src)
    assert r.ok
    assert marker.survivors() == []


# ------------------------------------------------------------------------------------ processes
def test_kill_the_parent(sandbox: Sandbox) -> None:
    src = ("import os, signal\ntry:\n    os.kill(os.getppid(), signal.SIGKILL)\n    print('sent')\n"
           "except OSError as e:\n    print('denied', e.errno)")
    bystander: list[ExecResult] = []
    other = threading.Thread(target=lambda: bystander.append(
        run_python("import time\ntime.sleep(0.3)\nprint('fine')", sandbox=sandbox)))
    other.start()
    r = attack(sandbox, src)
    other.join()
    assert r.stdout.startswith("denied")
    assert bystander[0].ok and bystander[0].stdout == "fine\n"


def test_ptrace_the_parent(sandbox: Sandbox) -> None:
    src = ("import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
           "print(libc.ptrace(16, os.getppid(), 0, 0), libc.ptrace(0, 0, 0, 0))")  # ATTACH, TRACEME
    r = attack(sandbox, src)
    assert r.ok and r.stdout == "-1 -1\n"


def test_new_namespaces(sandbox: Sandbox) -> None:
    src = ("import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
           "# CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWNET, CLONE_NEWPID\n"
           "print([flag for flag in (0x10000000, 0x20000, 0x40000000, 0x20000000) if libc.unshare(flag) == 0])")
    r = attack(sandbox, src)
    assert r.ok and r.stdout == "[]\n"


# ------------------------------------------------------------------------------------- network
def test_no_internet_socket_at_all(sandbox: Sandbox) -> None:
    src = ("import socket\nmade = []\nfor fam, kind in [(socket.AF_INET, socket.SOCK_STREAM), (socket.AF_INET, "
           "socket.SOCK_DGRAM), (socket.AF_INET6, socket.SOCK_STREAM), (socket.AF_INET, socket.SOCK_RAW), "
           "(socket.AF_PACKET, socket.SOCK_RAW), (socket.AF_NETLINK, socket.SOCK_RAW)]:\n    try:\n"
           "        socket.socket(fam, kind).close()\n        made.append((fam, kind))\n    except OSError:\n"
           "        pass\nprint(made)")
    r = attack(sandbox, src)  # creates sockets only: not one connection is attempted
    assert r.ok and r.stdout == "[]\n"


@pytest.fixture
def listener() -> Iterator[tuple[int, list[bytes]]]:
    """A TCP listener on 127.0.0.1 that records every connection it accepts."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    server.settimeout(0.2)
    got: list[bytes] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            got.append(b"connection")
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1], got
    stop.set()
    thread.join()
    server.close()


def test_connect_to_local_listener(sandbox: Sandbox, listener: tuple[int, list[bytes]]) -> None:
    port, got = listener
    src = (f"import socket\ntry:\n    s = socket.create_connection(('127.0.0.1', {port}), timeout=1)\n"
           "    print('connected')\nexcept OSError as e:\n    print('denied', e.errno)")
    r = attack(sandbox, src)
    time.sleep(0.3)
    assert r.stdout.startswith("denied") and got == []


def test_abstract_unix_socket_outside(sandbox: Sandbox) -> None:
    name = b"\0crossgym-test-" + secrets.token_hex(6).encode()
    server = socket.socket(socket.AF_UNIX)
    server.bind(name)
    server.listen(1)
    try:
        src = (f"import socket\ns = socket.socket(socket.AF_UNIX)\ntry:\n    s.connect({name!r})\n    print('connected')\n"
               "except OSError as e:\n    print('denied', e.errno)")
        r = attack(sandbox, src)
        assert r.stdout.startswith("denied")
    finally:
        server.close()


def test_ipc_objects_that_outlive_the_task(sandbox: Sandbox) -> None:
    """System V message queues, shared memory and semaphores, and POSIX message queues outlive a task and would
    reach the next task of the same uid; the attack removes anything it did manage to create."""
    key = 0x43470000 + secrets.randbelow(1 << 16)
    src = ("import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\nmade = []\n"
           f"for name, get, rm in (('msg', lambda: libc.msgget({key}, 0o1600), lambda i: libc.msgctl(i, 0, None)),\n"
           f"                      ('shm', lambda: libc.shmget({key}, 4096, 0o1600), lambda i: libc.shmctl(i, 0, None)),\n"
           f"                      ('sem', lambda: libc.semget({key}, 1, 0o1600), lambda i: libc.semctl(i, 0, 0))):\n"
           "    ident = get()\n"
           "    if ident >= 0:\n"
           "        made.append(name)\n"
           "        rm(ident)\n"
           f"q = libc.mq_open(b'/cg-{key:x}', os.O_CREAT | os.O_RDWR, 0o600, None)\n"
           "if q >= 0:\n"
           "    made.append('mq')\n"
           f"    libc.mq_unlink(b'/cg-{key:x}')\n"
           "print('made', made)")
    r = attack(sandbox, src)
    assert r.ok and r.stdout == "made []\n", r.stdout + r.stderr[-300:]


# ---------------------------------------------------------------------------------- filesystem
def test_writes_outside_scratch(sandbox: Sandbox) -> None:
    name = "cg-attack-" + secrets.token_hex(6)
    targets = [f"/{name}", f"/tmp/{name}", f"/var/tmp/{name}", f"/dev/shm/{name}",
               os.path.join(os.path.expanduser("~"), name), os.path.join(os.getcwd(), name)]
    src = (f"wrote = []\nfor p in {targets!r}:\n    try:\n        with open(p, 'w') as f:\n            f.write('x')\n"
           "        wrote.append(p)\n    except OSError:\n        pass\nprint(len(wrote))")
    try:
        r = attack(sandbox, src)
        assert r.ok and r.stdout == "0\n"
        assert [p for p in targets if os.path.exists(p)] == []
    finally:
        for p in targets:
            if os.path.exists(p):
                os.remove(p)


def test_read_canary_files_outside_scratch(sandbox: Sandbox, tmp_path: os.PathLike[str]) -> None:
    secret = canary()
    private, public = os.path.join(tmp_path, "private.txt"), os.path.join(tmp_path, "public.txt")
    for path, mode in ((private, 0o600), (public, 0o644)):
        with open(path, "w") as fh:
            fh.write(secret)
        os.chmod(path, mode)
    os.chmod(tmp_path, 0o755)
    head, tail = split(secret)
    src = (f"found = 0\nfor p in {[private, public]!r}:\n    try:\n        data = open(p).read()\n"
           f"        i = data.find({head!r})\n        found += i >= 0 and data[i + {len(head)}:].startswith({tail!r})\n"
           "    except OSError:\n        pass\nprint('found', found)")
    r = attack(sandbox, src)
    assert r.ok and r.stdout == "found 0\n"
    control = attack(sandbox, src.replace(repr([private, public]), repr(["mine.txt"])), files={"mine.txt": secret})
    assert control.stdout == "found 1\n"  # the same reader finds the canary where it may read
    assert secret not in r.stdout + r.stderr


def test_environment_canary_through_proc(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch, marker: Any) -> None:
    secret = canary()
    monkeypatch.setenv("CROSSGYM_TEST_CANARY", secret)  # in the caller's environment
    helper = subprocess.Popen(["/bin/sleep", marker.arg], env={"CROSSGYM_TEST_CANARY": secret})  # in a real environ
    head, tail = split(secret)
    src = (f"import glob, os\ndef has(data):\n    i = data.find({head.encode()!r})\n    return i >= 0 and data[i + {len(head)}:].startswith({tail.encode()!r})\n"
           "found = sum(has(k.encode() + b'=' + v.encode()) for k, v in os.environ.items())\n"
           f"paths = glob.glob('/proc/[0-9]*/environ') + ['/proc/{os.getpid()}/environ', '/proc/{helper.pid}/environ', '/proc/{os.getpid()}/mem']\n"
           "for p in paths:\n    try:\n        with open(p, 'rb') as f:\n            found += has(f.read(1 << 20))\n"
           "    except OSError:\n        pass\nprint('found', found)")
    try:
        r = attack(sandbox, src)
    finally:
        helper.kill()
        helper.wait()
    assert r.ok and r.stdout == "found 0\n"
    control = attack(sandbox, src, env={"CROSSGYM_TEST_CANARY": secret})  # given on purpose: found
    assert control.ok and control.stdout != "found 0\n"


MEMORY_SCAN = """
import ctypes
def has(data):
    found, start = 0, 0
    while True:
        i = data.find(HEAD, start)
        if i < 0:
            return found
        found += data[i + len(HEAD):i + len(HEAD) + len(TAIL)] == TAIL
        start = i + 1
regions = []
with open('/proc/self/maps') as maps:
    for line in maps:
        fields = line.split()
        lo, hi = (int(x, 16) for x in fields[0].split('-'))
        if fields[1][0] == 'r' and '[v' not in line and hi - lo < 1 << 28:
            regions.append((lo, hi))
found = sum(has(ctypes.string_at(lo, hi - lo)) for lo, hi in regions)
print('found', found, 'scanned', sum(hi - lo for lo, hi in regions) > 1 << 20)
"""


def test_canary_in_pool_memory(sandbox: Sandbox) -> None:
    secret_source, secret_stdin = canary(), canary()
    held_by_caller = canary()  # noqa: F841  (lives in the caller's memory during the scan)
    earlier = run_python(f"x = {secret_source!r}\ny = input()\nprint(len(x + y))", stdin=secret_stdin + "\n",
                         sandbox=sandbox)
    assert earlier.ok
    head, tail = split(canary())
    control = attack(sandbox, f"HEAD, TAIL = {head.encode()!r}, {tail.encode()!r}\nmine = HEAD + TAIL\n" + MEMORY_SCAN)
    assert control.stdout.startswith("found ") and control.stdout != "found 0 scanned True\n"  # the scan works
    for secret in (secret_source, secret_stdin, held_by_caller):
        head, tail = split(secret)
        r = attack(sandbox, f"HEAD, TAIL = {head.encode()!r}, {tail.encode()!r}\n" + MEMORY_SCAN, timeout=10.0)
        assert r.ok and r.stdout == "found 0 scanned True\n", r.stderr[-500:]


def test_read_another_tasks_scratch(sandbox: Sandbox) -> None:
    secret = canary()
    head, tail = split(secret)
    with ShellSession({"secret.txt": secret}, sandbox=sandbox) as other:
        assert other.run("test -s secret.txt").ok
        target = other.path
        src = (f"import os\nfound = 0\nfor top in ({target!r}, os.path.dirname(os.getcwd())):\n    try:\n"
               "        for root, dirs, files in os.walk(top):\n            for name in files:\n"
               "                data = open(os.path.join(root, name)).read()\n"
               f"                i = data.find({head!r})\n                found += i >= 0 and data[i + {len(head)}:].startswith({tail!r})\n"
               "    except OSError:\n        pass\nprint('found', found)")
        r = attack(sandbox, src)
        assert r.ok and r.stdout == "found 0\n"
        assert other.files == {"secret.txt": secret.encode()}


def test_symlink_out_of_scratch_is_not_returned(sandbox: Sandbox, tmp_path: os.PathLike[str]) -> None:
    secret = canary()
    outside = os.path.join(tmp_path, "outside.txt")
    with open(outside, "w") as fh:
        fh.write(secret)
    os.chmod(tmp_path, 0o755)
    os.chmod(outside, 0o644)
    start = time.monotonic()
    r = run_shell(f"ln -s {outside} link.txt; ln -s /etc/hostname host.txt; mkdir d; ln -s {tmp_path} d/dir",
                  sandbox=sandbox, timeout=5)
    assert time.monotonic() - start <= 6.0
    assert r.files is not None and set(r.files) == set()  # links are never followed into the result
    assert secret.encode() not in b"".join(r.files.values())
