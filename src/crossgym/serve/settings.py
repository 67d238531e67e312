"""A server's options and limits, and the bind rule: only loopback without a bearer token."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any

from crossgym.protocol.errors import ConfigError, UnknownNameError
from crossgym.scoring.rule import RewardRule

#: shortest bearer token accepted when binding a non-loopback address
MIN_TOKEN_CHARS = 16
#: special tokens cut from the end of an OpenRLHF query's response unless the server names its own
DEFAULT_STRIP_TOKENS = ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|end_of_text|>", "</s>", "<eos>",
                        "<|end|>", "<end_of_turn>", "<pad>", "<|pad|>")


@dataclass(frozen=True)
class ServeSettings:
    """Everything one server needs; the defaults suit a trainer on the same machine."""

    host: str = "127.0.0.1"
    port: int = 8000
    #: bearer token; when set, every route but /health requires ``Authorization: Bearer <token>``
    token: str | None = None
    #: requests with a larger body get 413
    max_body_bytes: int = 8 * 1024 * 1024
    #: seconds a request may take, waiting for a slot included; then 504
    request_timeout_s: float = 120.0
    #: verification and environment jobs running at once (threads)
    max_concurrency: int = 32
    #: jobs waiting for a slot before new ones get 503 with Retry-After
    max_queue: int = 4096
    #: items in one POST /verify/batch
    max_batch: int = 1024
    #: worker processes/threads verify_many uses for one batch (None: its default)
    batch_workers: int | None = None
    #: open environment sessions at once; more gets 429
    max_sessions: int = 256
    #: a session untouched this long is closed
    session_idle_s: float = 600.0
    #: also accept NeMo Gym's resources-server request and reply shape on POST /verify
    nemo_gym: bool = False
    #: verifier for NeMo Gym requests that name none (their rows carry "verifier" or a whole "task" otherwise)
    nemo_gym_verifier: str | None = None
    #: reward for a verifier error or timeout in the OpenRLHF and veRL shapes (crossgym's on_error)
    on_error: float = 0.0
    #: special tokens cut from the end of an OpenRLHF response
    strip_tokens: tuple[str, ...] = field(default=DEFAULT_STRIP_TOKENS)
    #: the run's reward rule for the OpenRLHF, veRL and NeMo Gym shapes (task_weight, extra terms, on_error);
    #: None: each task's verifier alone, errors scoring ``on_error`` (``crossgym serve --config RUN.yaml`` sets it)
    rule: RewardRule | None = None
    #: the policy's tokenizer (a local directory), for cutting OpenRLHF responses after a tokenizer round trip
    model: str | None = None
    #: seconds a client may take to send a request's headers (from its first byte, or from connecting), and again
    #: its body; then 408 and the connection is closed (a slow or stalled client must not hold a connection forever)
    read_timeout_s: float = 30.0
    #: bytes of request line and headers before 431 (the body cap does not bound headers: uvicorn keeps them all)
    max_header_bytes: int = 64 * 1024
    #: open connections; past it the longest-waiting connection that is not mid-request is closed for the new one,
    #: or, when every one is mid-request, the new one gets 503 (kept below the process's open-file limit)
    max_connections: int = 4096
    #: on SIGINT/SIGTERM, seconds in-flight requests get to finish; then each gets 503 and the server exits (it
    #: waited for them however long they took, and a client's verifier timeout could make that an hour)
    shutdown_grace_s: float = 10.0
    #: the Host header names a request may carry, besides IP addresses (None: any). ``crossgym serve`` on loopback
    #: without a token sets ("localhost",): a web page the user opens could otherwise reach it through DNS
    #: rebinding (its own name re-pointed at 127.0.0.1) and use it as its own
    allowed_hosts: tuple[str, ...] | None = None

    @property
    def reward_rule(self) -> RewardRule:
        return self.rule if self.rule is not None else RewardRule(on_error=float(self.on_error))

    def __post_init__(self) -> None:
        for name in POSITIVE:
            check_field(name, getattr(self, name))
        if self.nemo_gym_verifier is not None:
            check_field("nemo_gym_verifier", self.nemo_gym_verifier)
        if self.max_queue < 0:
            raise ConfigError(f"must be 0 or more, got {self.max_queue!r}", where="serve max_queue",
                              fix="pass max_queue >= 0")
        if not 0 < self.port < 65536:
            raise ConfigError(f"not a TCP port: {self.port!r}", where="--port", fix="pass a port in 1..65535")


#: the fields that must be above 0
POSITIVE = ("max_body_bytes", "request_timeout_s", "max_concurrency", "max_batch", "max_sessions", "session_idle_s",
            "read_timeout_s", "max_header_bytes", "max_connections", "shutdown_grace_s")
#: the `crossgym serve` flag that sets each field checked here: an error about a value the user typed names what
#: they typed (``--timeout``), not the field (``request_timeout_s``); --max-body-mb (in MiB, not the field's bytes)
#: is checked where it is converted (crossgym.serve.command.build_settings)
FLAGS = {"request_timeout_s": "--timeout", "max_concurrency": "--max-concurrency", "max_batch": "--max-batch",
         "max_sessions": "--max-sessions", "session_idle_s": "--session-idle",
         "nemo_gym_verifier": "--nemo-gym-verifier", "read_timeout_s": "--read-timeout",
         "max_connections": "--max-connections", "shutdown_grace_s": "--shutdown-grace"}


def check_field(name: str, value: Any, flag: str | None = None) -> None:
    """One ConfigError line when a settings field's value is wrong: a limit not above 0, a NeMo Gym verifier that
    is not registered (refused here, at startup, instead of every request failing as if its body were wrong).
    ``flag``: the CLI flag the value came from, named in the error and its fix instead of the field."""
    if name == "nemo_gym_verifier":
        _check_verifier(value, flag)
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        default = ServeSettings.__dataclass_fields__[name].default
        fix = f"e.g. {flag} {default:g}" if flag else f"pass a value above 0 for {name}"
        raise ConfigError(f"must be a positive number, got {value!r}", where=flag or f"serve {name}", fix=fix)


def _check_verifier(name: Any, flag: str | None) -> None:
    """The NeMo Gym default verifier is a registered name (a typo gets the registry's did-you-mean)."""
    from crossgym.plugins.manager import registry

    where = flag or "serve nemo_gym_verifier"
    if not isinstance(name, str) or not name:
        raise ConfigError(f"must be a verifier's registered name, got {name!r}", where=where,
                          fix="pass a name `crossgym list` shows, e.g. exact_match")
    try:
        registry("verifiers").entry(name)
    except UnknownNameError as exc:
        raise ConfigError(exc.message, where=where, fix=exc.fix) from None


def is_loopback(host: str) -> bool:
    """Whether ``host`` names only this machine (127.0.0.0/8, ::1, localhost)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


#: the host names a loopback server without a token answers (IP addresses always pass)
LOOPBACK_NAMES = ("localhost",)


def host_allowed(header: str, allowed: tuple[str, ...]) -> bool:
    """Whether a request's Host header (``name[:port]``) names an IP address, one of ``allowed`` or a subdomain of
    ``localhost`` (which resolves to loopback only). A rebinding page's own name ("evil.example") fails."""
    name = header.strip().lower()
    if name.startswith("["):  # [::1]:8000
        name = name[1:].split("]", 1)[0]
    elif name.count(":") == 1:
        name = name.split(":", 1)[0]
    name = name.rstrip(".")
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        pass
    return name in allowed or ("localhost" in allowed and name.endswith(".localhost"))


def check_bind(host: str, token: str | None) -> None:
    """Refuse a non-loopback bind without a (long enough) bearer token: one ConfigError line."""
    if is_loopback(host):
        return
    if not token:
        raise ConfigError(f"refusing to bind {host} without a bearer token", where="--host",
                          fix=f"pass --token (or set CROSSGYM_TOKEN) to a secret of {MIN_TOKEN_CHARS}+ characters, "
                              "or bind 127.0.0.1")
    if len(token) < MIN_TOKEN_CHARS:
        raise ConfigError(f"the bearer token is shorter than {MIN_TOKEN_CHARS} characters", where="--token",
                          fix="use a longer random secret, e.g. `python -c 'import secrets; "
                              "print(secrets.token_urlsafe(32))'`")
