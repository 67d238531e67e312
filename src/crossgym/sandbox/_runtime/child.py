"""One task's process, forked from the server: confine, read the private payload, seed files, run."""

from __future__ import annotations

import fcntl
import io
import os
import sys

if False:  # annotations only: the server does not import typing
    from typing import Any

from . import confine, fixtures, wire

# fds inside a task: 0 payload (then stdin), 1 stdout, 2 stderr, 3 private result pipe (tests mode), 5 the slot's
# solution spawner (tests mode in a slot), 8 a zygote's Landlock ruleset, 9 status, 10... a group's solution rulesets
RESULT_FD = 3
SPAWN_FD = 5  # tests mode in a slot: the socket to the slot's solution spawner
READY: dict[str, Any] = {}  # what a zygote prepared once for its tasks: "path", "modules", "streams"
RULESET_FD = 8  # a zygote's prepared Landlock ruleset (close-on-exec)
SOLUTION_RULES_FD = 10  # and from here, one per solution directory of a group (close-on-exec)
SETUP_FAILED = 125


def main(server_pid: int, conf: confine.Confinement, hdr: dict[str, Any], fds: dict[str, int],
         scratch: str, uid: int | None, nproc_base: int, ruleset: int | None = None,
         solution_rules: list[int] | None = None) -> None:
    """Never returns. ``fds`` maps payload/stdout/stderr/status[/result] to fds inherited from the server.
    ``ruleset``: forked by a slot's zygote, which prepared the Landlock ruleset and the signal dispositions (and,
    for a group, ``solution_rules``: one ruleset per solution directory of ``hdr["dirs"]``)."""
    status = fds["status"]
    try:
        confine.start_session(server_pid)
        confine.name(b"cg-task")
        mode = hdr["mode"]
        high = {name: fcntl.fcntl(fd, fcntl.F_DUPFD, 200) for name, fd in fds.items()}
        targets = {"payload": 0, "stdout": 1, "stderr": 2, "result": RESULT_FD, "spawn": SPAWN_FD, "status": 9}
        if ruleset is not None:
            high["ruleset"], targets["ruleset"] = fcntl.fcntl(ruleset, fcntl.F_DUPFD, 200), RULESET_FD
        own_rules = [fcntl.fcntl(fd, fcntl.F_DUPFD, 200) for fd in solution_rules or ()]
        # in tests mode only the standard streams cross an exec: a program the tests run (os.system, a solution's
        # script) got the result pipe and the spawner's socket, and wrote every unit of the group "passed" on it
        private = ("ruleset", "result", "spawn", "status") if mode == "tests" else ("ruleset",)
        for name, fd in high.items():
            os.dup2(fd, targets[name], inheritable=name not in private)
        for i, fd in enumerate(own_rules):
            os.dup2(fd, SOLUTION_RULES_FD + i, inheritable=False)
        status = 9
        used = {targets[name] for name in high}
        for fd in range(3, 10):
            if fd not in used:
                os.closerange(fd, fd + 1)
        os.closerange(SOLUTION_RULES_FD + len(own_rules), 1 << 16)
        if ruleset is None:
            confine.reset_signals(for_exec=(mode == "exec"))
        elif mode == "exec":  # the zygote reset the rest; these two are ignored in Python, default in programs
            confine.default_pipe_signals()
        if mode == "tests":  # loaded before Landlock closes the runtime's directory (a zygote has them already)
            from . import harness, prefork
            from . import spawner as spawners
        os.chdir(scratch)
        os.umask(0o022)
        conf.apply(hdr.get("limits", {}), scratch, uid, nproc_base, ruleset=None if ruleset is None else RULESET_FD,
                   keep_rules=(mode == "tests"))
        if uid is None and ruleset is None:  # a zygote's tasks inherit it
            confine.set_dumpable(False)
        spawner: Any = None
        if mode == "tests":  # the solution processes, forked before the payload
            # fresh ones later come from the slot's spawner, or (no slot) from a spawner of the task's own
            shared = bool(hdr.get("shared"))  # one solution, with seed files: it works in the task's directory
            fallback = spawners.Client(SPAWN_FD) if "spawn" in fds else spawners.local(conf, shared)
            spawner = prefork.Prefork(conf, int(hdr.get("solutions", 1)), fallback, shared, hdr.get("dirs"),
                                      [SOLUTION_RULES_FD + i for i in range(len(own_rules))])
        conf.drop_rules()
        payload = wire.read_obj(0)
        seeded = _seed(payload.get("files", []))
        if mode == "tests":  # the harness keeps the fixtures as seeded: a solution's change to one is undone
            payload["seeded"] = seeded
        env = base_env(scratch)
        extra = payload.get("env")
        if extra or ruleset is None:  # a zygote set the base environment already
            env.update(extra or {})
            os.environ.clear()
            os.environ.update(env)
    except BaseException as exc:  # the task never started: tell the server, not the task's stderr
        try:
            wire.write_all(status, wire.line({"setup_error": f"{type(exc).__name__}: {exc}"}))
        finally:
            os._exit(SETUP_FAILED)
    os.close(status)
    if mode == "exec":
        _exec(payload["argv"], env)
    elif mode == "python":
        _run_python(payload["source"], payload.get("filename") or "main.py", scratch)
    else:
        try:
            import time

            harness._flushed[0] = time.monotonic()  # the header goes out with the first lines (one wake-up less)
            harness.main(payload, spawner, scratch)  # tests mode: made above
        except BaseException:
            import traceback

            traceback.print_exc()  # a harness bug: show it in the task's stderr
    os._exit(SETUP_FAILED)


class Quitter:
    """``exit`` and ``quit`` as ``site`` makes them (the sandbox's interpreter runs with ``-S``, where they do not
    exist): a program that ends with ``exit()`` ran as under ``python3``, where it was a NameError here."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"Use {self.name}() or Ctrl-D (i.e. EOF) to exit"

    def __call__(self, code: Any = None) -> None:
        try:
            sys.stdin.close()
        except BaseException:
            pass
        raise SystemExit(code)


def install_quitters() -> None:
    """Once in a server or zygote: every task it forks has them."""
    import builtins

    for name in ("exit", "quit"):
        if not hasattr(builtins, name):
            setattr(builtins, name, Quitter(name))


def environ_now() -> Any:
    """``os.environ`` in a form that is cheap to take and compare (its bytes, copied in C: a call of the solution
    asks whether it changed the environment, and the tests' side whether they did, every call)."""
    env = os.environ
    return env._data.copy() if type(env) is _ENVIRON else dict(env)  # type: ignore[attr-defined]


def environ_text(snapshot: Any) -> dict[str, str]:
    """The environment a snapshot of :func:`environ_now` holds, as ``dict(os.environ)`` gives it."""
    return {os.fsdecode(k): os.fsdecode(v) for k, v in snapshot.items()}


_ENVIRON = type(os.environ)


def base_env(scratch: str) -> dict[str, str]:
    """The environment every task starts from (a call's ``env`` adds to it)."""
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": scratch, "TMPDIR": scratch, "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0"}


def _seed(files: list[list[Any]]) -> dict[str, tuple[bytes, int]]:
    """Write the task's seed files (sizes in the header, bytes follow in the payload stream); returns them."""
    seeded: dict[str, tuple[bytes, int]] = {}
    for rel, size, mode in files:
        data = wire.read_exact(0, size) if size else b""
        parts = [p for p in rel.split("/") if p]
        if not parts or any(p in (".", "..") or "\0" in p for p in parts):
            raise ValueError(f"bad seed path {rel!r}")
        fixtures.write_file("/".join(parts), data, (mode or 0o644) & 0o777)
        seeded["/".join(parts)] = (data, (mode or 0o644) & 0o777)
    return seeded


def _exec(argv: list[str], env: dict[str, str]) -> None:
    try:
        os.execvpe(argv[0], argv, env)
    except OSError as exc:
        os.write(2, f"sandbox: cannot run {argv[0]!r}: {exc.strerror}\n".encode())
        os._exit(127)


def _run_python(source: str, filename: str, scratch: str) -> None:
    """Run source the way ``python3 main.py`` would, in this already-running interpreter."""
    import atexit
    import builtins

    hide_runtime(READY.get("modules"))
    install_quitters()  # (done already where a zygote or server prepared the interpreter)
    sys.path[:] = READY.get("path") or [scratch] + confine.stdlib_path()
    sys.argv[:] = [filename]
    if not READY.get("streams"):
        set_streams()
    atexit._clear()
    rc = 0
    try:
        code = compile(source, filename, "exec", dont_inherit=True, optimize=0)
        exec(code, {"__name__": "__main__", "__file__": filename, "__builtins__": builtins})
    except SystemExit as exc:
        rc = exit_code(exc)
    except BaseException as exc:
        rc = 1
        _print_exc(exc, (filename, source))
    os._exit(finish(rc))


def hide_runtime(names: list[str] | None = None, keep: tuple[str, ...] = ()) -> None:
    """Take the sandbox's own modules out of sys.modules (``import _runtime`` fails, as under ``python3``), but
    keep them alive: freeing them would touch (and copy) thousands of pages this process shares with its parent."""
    names = names or [m for m in sys.modules if m == "_runtime" or m.startswith("_runtime.")]
    HIDDEN.extend(sys.modules.pop(name) for name in names if name in sys.modules and name not in keep)


HIDDEN: list[Any] = []


def set_streams() -> None:
    """sys.stdin/stdout/stderr as ``python3`` makes them for pipes (UTF-8; strict, but backslashreplace on
    stderr, which is line-buffered)."""
    sys.stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "rb", closefd=False)), encoding="utf-8",
                                 errors="strict")
    sys.stdout = io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, "wb", closefd=False)), encoding="utf-8",
                                  errors="strict")
    sys.stderr = io.TextIOWrapper(io.BufferedWriter(io.FileIO(2, "wb", closefd=False)), encoding="utf-8",
                                  errors="backslashreplace", line_buffering=True)


def exit_code(exc: SystemExit) -> int:
    """The exit status ``python3`` gives for a SystemExit."""
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        print(code, file=sys.stderr)
    except BaseException:
        pass
    return 1


def finish(rc: int) -> int:
    """Interpreter shutdown steps that matter to a task: threads, atexit, flushing."""
    import atexit

    try:
        if "threading" in sys.modules:
            sys.modules["threading"]._shutdown()
        atexit._run_exitfuncs()
    except SystemExit as exc:
        rc = exit_code(exc)
    except BaseException as exc:
        _print_exc(exc)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            rc = rc or 120
    return rc


def _print_exc(exc: BaseException, main: tuple[str, str] | None = None) -> None:
    """Print a traceback the way ``python3`` does (traceback is imported only now: most tasks never need it)."""
    try:
        import linecache
        import traceback

        if main is not None:
            linecache.cache[main[0]] = (len(main[1]), None, main[1].splitlines(True), main[0])
        tb = exc.__traceback__.tb_next if exc.__traceback__ else None
        traceback.print_exception(type(exc), exc, tb)
        sys.stderr.flush()
    except BaseException:
        pass
