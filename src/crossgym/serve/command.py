"""`crossgym serve`: check the bind rule, build the app, run uvicorn."""

from __future__ import annotations

import errno
import logging
import socket
import sys
from typing import Any

from crossgym.protocol.errors import BackendUnavailable, ConfigError
from crossgym.serve.settings import FLAGS, LOOPBACK_NAMES, ServeSettings, check_bind, check_field, is_loopback

log = logging.getLogger(__name__)

INSTALL = "pip install 'crossgym[serve]'"


def require_serve_deps() -> None:
    """BackendUnavailable with the install command when fastapi or uvicorn is missing."""
    missing = []
    for mod in ("fastapi", "uvicorn"):
        try:
            __import__(mod)
        except ImportError:
            missing.append(mod)
    if missing:
        raise BackendUnavailable("crossgym serve", f"missing Python package(s): {', '.join(missing)}", INSTALL)


def build_settings(host: str = "127.0.0.1", port: int = 8000, token: str | None = None, **options: Any) -> ServeSettings:
    """ServeSettings from CLI values (None means the default); refuses a non-loopback bind without a token."""
    check_bind(host, token)
    given = {k: v for k, v in options.items() if v is not None}
    if "max_body_mb" in given and not float(given["max_body_mb"]) * 1024 * 1024 >= 1:  # (0.0000001 MiB is 0 bytes)
        raise ConfigError(f"must be above 0, at least one byte (1/1048576 MiB), got {given['max_body_mb']}",
                          where="--max-body-mb", fix="e.g. --max-body-mb 8")
    for name, value in given.items():  # a value the user typed: its error names the flag (--timeout), not the field
        if name in FLAGS:
            check_field(name, value, FLAGS[name])
    if "nemo_gym_verifier" in given and not given.get("nemo_gym"):  # (no NeMo Gym route: it would do nothing)
        raise ConfigError("given without --nemo-gym, so no request would use it", where="--nemo-gym-verifier",
                          fix="add --nemo-gym (or drop --nemo-gym-verifier)")
    if "max_body_mb" in given:
        given["max_body_bytes"] = int(float(given.pop("max_body_mb")) * 1024 * 1024)
    if "strip_tokens" in given:
        given["strip_tokens"] = tuple(given["strip_tokens"])
    if "config" in given:  # the run's reward rule and model, as the run's own backend files bind them
        from crossgym.config import load_run_config
        from crossgym.scoring import RewardRule

        run = load_run_config(given.pop("config"))
        rule = RewardRule.from_run(run)
        if rule.on_error == "none":
            raise ConfigError("on_error 'none' cannot be served: the OpenRLHF and veRL shapes need a number",
                              where="on_error", fix="set on_error to a number in the config")
        given.update(rule=rule, on_error=float(rule.on_error), model=run.model)
    if not token and is_loopback(host):  # no token to stop a rebinding web page: only localhost's names answer
        given.setdefault("allowed_hosts", LOOPBACK_NAMES)
    return ServeSettings(host=host, port=port, token=token or None, **given)


def run_serve_command(host: str = "127.0.0.1", port: int = 8000, token: str | None = None, **options: Any) -> None:
    """Serve until interrupted. Options are ServeSettings fields (plus max_body_mb)."""
    settings = build_settings(host, port, token, **options)
    require_serve_deps()
    import uvicorn

    from crossgym.serve.app import create_app
    from crossgym.serve.protocol import uvicorn_config

    sock = bind_socket(host, port)  # before the banner: a busy port is one line, not uvicorn's error after it
    app = create_app(settings)
    shapes = " + NeMo Gym /verify" if settings.nemo_gym else ""
    sys.stderr.write(f"crossgym serve: http://{host}:{port} ({'bearer token required' if token else 'no token'}"
                     f"{shapes}; docs at /docs)\n")
    code = 0
    try:
        uvicorn.Server(uvicorn_config(app, settings)).run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn re-raises the SIGINT it handled, once the server has stopped
        code = 130
        raise
    finally:
        _leave_stragglers(code)


def _leave_stragglers(code: int) -> None:
    """Exit now when job threads still run: their requests were answered 503 at the end of the shutdown grace, and
    Python would otherwise wait for each at exit (a verifier with a 100 s timeout kept a stopped server 100 s).
    atexit handlers (worker and sandbox pools) still run; only the thread joins are skipped."""
    import atexit
    import os
    import threading

    busy = [t for t in threading.enumerate() if t is not threading.current_thread() and not t.daemon and t.is_alive()]
    if not busy:
        return
    log.warning("exiting with %d job thread(s) still running (their requests got 503)", len(busy))
    atexit._run_exitfuncs()
    sys.stderr.flush()
    os._exit(code)


def bind_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to host:port (uvicorn listens on it); a port in use, a privileged port or an address
    this machine does not have is one ConfigError line."""
    where = f"{host}:{port}"
    if not 0 <= port <= 65535:
        raise ConfigError(f"port {port} is out of range", where="--port", fix="pass --port N with 0 <= N <= 65535")
    try:
        family, kind, proto, _, addr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as exc:
        raise ConfigError(f"cannot resolve the host ({exc.strerror})", where=where, fix="pass --host ADDRESS") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind(addr)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(f"port {port} is in use", where=where,
                              fix=f"stop what listens there (ss -ltnp 'sport = :{port}') or pass --port N") from None
        if exc.errno == errno.EACCES:
            raise ConfigError(f"port {port} needs privileges to bind", where=where, fix="pass --port N, N >= 1024") \
                from None
        raise ConfigError(f"cannot bind: {exc.strerror or exc}", where=where,
                          fix="pass a --host address this machine has (127.0.0.1, 0.0.0.0)") from None
    sock.set_inheritable(True)
    return sock
