"""`crossgym serve`: check the bind rule, build the app, run uvicorn."""

from __future__ import annotations

import logging
import sys
from typing import Any

from crossgym.protocol.errors import BackendUnavailable, ConfigError
from crossgym.serve.settings import ServeSettings, check_bind

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
    return ServeSettings(host=host, port=port, token=token or None, **given)


def run_serve_command(host: str = "127.0.0.1", port: int = 8000, token: str | None = None, **options: Any) -> None:
    """Serve until interrupted. Options are ServeSettings fields (plus max_body_mb)."""
    settings = build_settings(host, port, token, **options)
    require_serve_deps()
    import uvicorn

    from crossgym.serve.app import create_app

    app = create_app(settings)
    shapes = " + NeMo Gym /verify" if settings.nemo_gym else ""
    sys.stderr.write(f"crossgym serve: http://{host}:{port} ({'bearer token required' if token else 'no token'}"
                     f"{shapes}; docs at /docs)\n")
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False, backlog=2048,
                timeout_keep_alive=30)
