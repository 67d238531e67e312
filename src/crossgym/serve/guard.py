"""What a request may not ask of a verifier, and which verifiers may run on the event loop.

A verifier spec in a request is the client's choice, params included, and the server runs it with its own
environment and threads:

- ``judge`` sends ``Authorization: Bearer $<api_key_env>`` to ``base_url``: a client naming both got any of the
  server's environment variables posted to its own address (and the server's requests sent anywhere). A request may
  name neither unless it names what the server is configured with (CROSSGYM_JUDGE_BASE_URL, the default key
  variable); this holds at any depth (a composite's components).
- ``timeout`` (and ``run_timeout``, ``command_timeout``...) past the server's ``--timeout`` kept a job slot (and,
  for an inline verifier, the event loop) for as long as the client said, though its reply was a 504 long before.
- An "inline" verifier runs on the event loop when its completion is short, to skip a thread hand-off; one whose
  cost the request decides (a regex pattern, a JSON schema, a composite) blocked every client, /health included,
  for its whole timeout. Only ``LOOP_SAFE`` verifiers, whose work is a linear pass over the text, run there now.
"""

from __future__ import annotations

import os
from typing import Any

from crossgym.protocol.task import Task, VerifierSpec
from crossgym.serve.errors import ApiError

#: inline verifiers cheap enough to run on the event loop whatever their params and answer (a pass over the text)
LOOP_SAFE = frozenset({"exact_match", "numeric", "multiple_choice", "json_match"})
#: the judge's key variable when a spec names none (crossgym.verifiers.judge)
JUDGE_KEY_ENV = "CROSSGYM_JUDGE_API_KEY"
#: nesting followed into params (a composite of composites); deeper is refused rather than walked
MAX_DEPTH = 32


def check_spec(spec: VerifierSpec, limit_s: float, where: str) -> None:
    """Raise ApiError 422 when the request's verifier spec asks for what only the server may decide."""
    _check({"name": spec.name, "params": dict(spec.params)}, limit_s, where, 0)


def check_wire(raw: Any, limit_s: float, where: str) -> None:
    """``check_spec`` on a spec as JSON (a name, or {"name", "params"}), before it is parsed (OpenRLHF labels)."""
    if isinstance(raw, dict):
        _check(raw, limit_s, where, 0)


def refusal(task: Task, limit_s: float, where: str) -> ApiError | None:
    """The ApiError ``check_spec`` raises for the task's verifier, or None."""
    try:
        check_spec(task.verifier, limit_s, where)
    except ApiError as exc:
        return exc
    return None


def _check(value: Any, limit_s: float, where: str, depth: int) -> None:
    """Walk params: every timeout within the limit, no judge endpoint or key chosen by the request."""
    if depth > MAX_DEPTH:
        raise ApiError(422, "bad_verifier", f"the verifier spec is nested over {MAX_DEPTH} levels deep", where=where,
                       fix="flatten the spec (a composite of composites rarely needs more than two levels)")
    if isinstance(value, dict):
        if value.get("name") == "judge" and isinstance(value.get("params"), dict):
            _check_judge(value["params"], f"{where}.params")
        for key, item in value.items():
            _check_timeout(key, item, limit_s, f"{where}.{key}")
            _check(item, limit_s, f"{where}.{key}", depth + 1)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check(item, limit_s, f"{where}[{i}]", depth + 1)


def _check_timeout(key: Any, value: Any, limit_s: float, where: str) -> None:
    if not (isinstance(key, str) and (key == "timeout" or key.endswith("_timeout"))):
        return
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > limit_s:
        raise ApiError(422, "over_limit", f"{key} {value:g} s is over this server's {limit_s:g} s per request",
                       where=where, fix=f"pass {key} <= {limit_s:g}, or leave it out (the verifier's default); "
                                        "a longer one needs a server started with a larger --timeout")


def _check_judge(params: dict[str, Any], where: str) -> None:
    own_url = (os.environ.get("CROSSGYM_JUDGE_BASE_URL") or "").rstrip("/")
    url = params.get("base_url")
    if url is not None and (not own_url or str(url).rstrip("/") != own_url):
        raise ApiError(422, "forbidden_param", "a request cannot choose the judge's base_url: the server would send "
                       "its judge key (and the prompt) to that address", where=f"{where}.base_url",
                       fix="leave base_url out; start the server with CROSSGYM_JUDGE_BASE_URL (and "
                           "CROSSGYM_JUDGE_MODEL, CROSSGYM_JUDGE_API_KEY) set to the judge it should call")
    key_env = params.get("api_key_env")
    if key_env is not None and key_env != JUDGE_KEY_ENV:
        raise ApiError(422, "forbidden_param", "a request cannot choose which of the server's environment variables "
                       "is sent as the judge's key", where=f"{where}.api_key_env",
                       fix=f"leave api_key_env out; the server sends ${JUDGE_KEY_ENV}")


def loop_safe(spec: VerifierSpec, verifier: Any) -> bool:
    """Whether this verifier may score on the event loop (inline, and its work bounded by the text alone)."""
    return spec.name in LOOP_SAFE and getattr(verifier, "isolation", None) == "inline"
