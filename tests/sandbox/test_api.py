"""The public functions: run_python, run_program, run_shell, their async twins, limits and errors."""

from __future__ import annotations

import asyncio
import threading

import pytest

from crossgym.protocol.errors import ConfigError, SandboxError
from crossgym.sandbox import (
    Limits,
    Sandbox,
    arun_python,
    close_all,
    describe,
    get_sandbox,
    run_program,
    run_python,
    run_shell,
)


def test_python_like_the_interpreter(sandbox: Sandbox) -> None:
    r = run_python("import sys, json\nprint(json.dumps({'a': 1}))\nprint(input().upper())\nsys.exit(3)",
                   stdin="hello\n", sandbox=sandbox)
    assert (r.exit_code, r.stdout, r.timed_out, r.signal, r.limit_hit) == (3, '{"a": 1}\nHELLO\n', False, None, None)
    assert r.tier == sandbox.tier and r.wall_s > 0 and r.cpu_s >= 0 and not r.ok
    crash = run_python("def f():\n    return 1 / 0\nf()", sandbox=sandbox)
    assert crash.exit_code == 1 and 'File "main.py", line 2, in f' in crash.stderr
    assert "ZeroDivisionError" in crash.stderr and "_runtime" not in crash.stderr
    message = run_python("raise SystemExit('bye')", sandbox=sandbox)
    assert message.exit_code == 1 and message.stderr == "bye\n"


def test_python_environment_files_and_imports(sandbox: Sandbox) -> None:
    files = {"helper.py": "VALUE = 41\n", "data/in.txt": b"\x00\x01"}
    src = ("import os, helper\nprint(helper.VALUE + 1, open('data/in.txt', 'rb').read(), os.environ['MODE'])\n"
           "print(sorted(k for k in os.environ if k not in ('MODE',)))\nprint(os.getcwd() == os.environ['HOME'])")
    r = run_python(src, files=files, env={"MODE": "eval"}, sandbox=sandbox)
    assert r.ok, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "42 b'\\x00\\x01' eval"
    assert lines[1] == "['HOME', 'LANG', 'PATH', 'PYTHONDONTWRITEBYTECODE', 'PYTHONHASHSEED', 'TMPDIR']"
    assert lines[2] == "True"


def test_the_standard_library_is_there(sandbox: Sandbox) -> None:
    src = ("import decimal, fractions, sqlite3, heapq, statistics, datetime, zoneinfo, threading\n"
           "db = sqlite3.connect(':memory:')\nprint(db.execute('select 6 * 7').fetchone()[0], "
           "decimal.Decimal('0.1') + decimal.Decimal('0.2'), fractions.Fraction(1, 3) * 3)\n"
           "t = threading.Thread(target=print, args=('thread',))\nt.start()\nt.join()")
    r = run_python(src, sandbox=sandbox)
    assert r.ok and r.stdout == "42 0.3 1\nthread\n", r.stderr


def test_program_with_stdin_and_exit_codes(sandbox: Sandbox) -> None:
    r = run_program(["sort", "-r"], stdin="a\nc\nb\n", sandbox=sandbox)
    assert r.ok and r.stdout == "c\nb\na\n"
    assert run_program(["sh", "-c", "exit 5"], sandbox=sandbox).exit_code == 5
    missing = run_program(["no-such-program-xyz"], sandbox=sandbox)
    assert missing.exit_code == 127 and "cannot run" in missing.stderr
    killed = run_program(["sh", "-c", "kill -SEGV $$"], sandbox=sandbox)
    assert killed.signal == 11 and killed.exit_code == -11 and killed.signal_name == "SIGSEGV"


def test_program_returns_files_when_asked(sandbox: Sandbox) -> None:
    r = run_program(["python3", "-c", "open('out.txt', 'w').write('made')"], files={"in.txt": "x"},
                    return_files=True, sandbox=sandbox)
    assert r.ok, r.stderr
    assert r.files == {"in.txt": b"x", "out.txt": b"made"} and r.files_changed == ("out.txt",)
    assert run_program(["true"], sandbox=sandbox).files is None


def test_shell_returns_the_final_tree(sandbox: Sandbox) -> None:
    seeds = {"keep.txt": "same", "edit.txt": "old", "gone.txt": "bye", "dir/a.txt": "a"}
    r = run_shell(["echo new >> edit.txt", "rm gone.txt", "mkdir -p out/deep", "printf x > out/deep/b.txt",
                   "cat keep.txt"], files=seeds, sandbox=sandbox)
    assert r.ok and r.stdout == "same"
    assert r.files == {"dir/a.txt": b"a", "edit.txt": b"oldnew\n", "keep.txt": b"same", "out/deep/b.txt": b"x"}
    assert r.files_changed == ("edit.txt", "gone.txt", "out/deep/b.txt")
    assert r.text("edit.txt") == "oldnew\n"


def test_file_caps(sandbox: Sandbox) -> None:
    limits = Limits(max_files=2, max_file_bytes=4)
    r = run_shell("for i in 1 2 3; do echo 0123456789 > f$i; done", limits=limits, sandbox=sandbox)
    assert r.truncated and r.files == {"f1": b"0123", "f2": b"0123"}


def test_output_cap_keeps_the_start(sandbox: Sandbox) -> None:
    r = run_python("print('x' * 5000)", limits=Limits(output_bytes=100), sandbox=sandbox)
    assert r.ok and r.truncated and r.stdout == "x" * 100


def test_many_threads_never_mix_results(sandbox: Sandbox) -> None:
    results: dict[int, str] = {}

    def worker(k: int) -> None:
        for j in range(4):
            r = run_python(f"import sys\nprint(int(sys.stdin.read()) * {k})", stdin=str(j), sandbox=sandbox)
            results[k * 10 + j] = r.stdout

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {k * 10 + j: f"{j * k}\n" for k in range(8) for j in range(4)}


def test_asyncio_gather(sandbox: Sandbox) -> None:
    async def main() -> list[str]:
        done = await asyncio.gather(*(arun_python(f"print({i} ** 2)", sandbox=sandbox) for i in range(6)))
        return [r.stdout for r in done]

    assert asyncio.run(main()) == [f"{i * i}\n" for i in range(6)]


def test_bad_requests_raise(sandbox: Sandbox) -> None:
    for path in ("/etc/x", "../x", "a/../../x", ""):
        with pytest.raises(SandboxError, match="bad file path"):
            run_python("pass", files={path: "x"}, sandbox=sandbox)
    with pytest.raises(SandboxError, match="timeout"):
        run_python("pass", timeout=0, sandbox=sandbox)
    with pytest.raises(SandboxError, match="environment"):
        run_python("pass", env={"A=B": "x"}, sandbox=sandbox)


def test_tier_selection_and_describe(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="unknown sandbox tier"):
        Sandbox("bogus")
    monkeypatch.setenv("CROSSGYM_SANDBOX_TIER", "default")
    info = describe()
    assert info["tier"] == "default" and info["requested"] == "default" and "default" in info["available"]
    assert {"python", "workers", "seccomp", "landlock_abi", "contains", "running"} <= set(info)
    try:
        assert get_sandbox() is get_sandbox("default")
        assert run_python("print(1)").tier == "default"
        assert "default" in describe()["running"]
    finally:
        close_all()
    assert describe()["running"] == []
