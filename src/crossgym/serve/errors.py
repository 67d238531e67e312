"""Structured errors: every 4xx/5xx body is {"error": {status, code, what, where, fix, problems}}."""

from __future__ import annotations

import json
import logging
from typing import Any

log = logging.getLogger(__name__)

#: problems listed per validation error body
MAX_PROBLEMS = 20

_FIXES = {
    "missing": "add the field",
    "extra_forbidden": "remove the field (see the schema at GET /openapi.json)",
    "json_invalid": "send one valid JSON document with Content-Type: application/json",
    "model_attributes_type": "send a JSON object",
    "dict_type": "send a JSON object",
    "list_type": "send a JSON array",
    "string_type": "send a string",
    "int_type": "send an integer",
    "int_parsing": "send an integer",
    "float_type": "send a number",
    "float_parsing": "send a number",
    "bool_type": "send true or false",
    "bool_parsing": "send true or false",
    "literal_error": "use one of the values the message lists",
    "too_short": "send at least the minimum number of items",
    "too_long": "send fewer items (split the batch)",
    "string_too_short": "send a non-empty string",
    "union_tag_invalid": "see the schema at GET /openapi.json",
}


class ApiError(Exception):
    """An error answered with a structured body: what went wrong, where, and how to fix it."""

    def __init__(self, status: int, code: str, what: str, *, where: str | None = None, fix: str | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(what)
        self.status, self.code, self.what, self.where, self.fix = status, code, what, where, fix
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        return error_body(self.status, self.code, self.what, where=self.where, fix=self.fix)


def error_body(status: int, code: str, what: str, *, where: str | None = None, fix: str | None = None,
               problems: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"error": {"status": status, "code": code, "what": what, "where": where, "fix": fix,
                      "problems": problems or []}}


def error_bytes(status: int, code: str, what: str, *, where: str | None = None, fix: str | None = None) -> bytes:
    return json.dumps(error_body(status, code, what, where=where, fix=fix)).encode()


def error_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` for these error statuses, all with the ErrorResponse body."""
    from crossgym.serve.models import ErrorResponse

    text = {401: "Missing or wrong bearer token", 404: "Unknown session", 408: "Body not sent in time",
            409: "Session busy or episode over", 415: "Body not declared JSON, or compressed",
            413: "Body too large", 422: "Invalid request", 429: "Too many sessions", 503: "Overloaded",
            504: "Timed out"}
    return {c: {"model": ErrorResponse, "description": text[c]} for c in codes}


def _loc(loc: Any) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            # pydantic names union members and tagged branches in the location; they are noise to a client
            text = str(part)
            if text.startswith(("function-", "tagged-union", "list[", "dict[")) or \
                    text in ("str", "int", "crossgym", "nemo_gym") or \
                    text.endswith(("In", "Request")) and text[:1].isupper():
                continue
            out += f".{text}" if out else text
    return out or "body"


def validation_error(errors: list[dict[str, Any]]) -> dict[str, Any]:
    """The 422 body for pydantic/FastAPI validation errors: the first as what/where/fix, all as problems."""
    problems = []
    for err in errors[:MAX_PROBLEMS]:
        msg = str(err.get("msg", "invalid value"))
        if err.get("type") == "extra_forbidden":
            msg = "unknown field"
        elif err.get("type") == "json_invalid" and (err.get("ctx") or {}).get("error"):  # say why, not just "error"
            msg = f"the body is not valid JSON ({err['ctx']['error']})"
        problems.append({"what": msg, "where": _loc(err.get("loc", ()))})
    # the headline is the deepest problem: for a union (text or messages) it is the branch the client meant
    depth = [p["where"].count(".") + p["where"].count("[") for p in problems]
    k = max(range(len(problems)), key=lambda i: (depth[i], -i)) if problems else 0
    kind = str(errors[k].get("type", "")) if errors else ""
    what = problems[k]["what"] if problems else "invalid request"
    if len(errors) > 1:
        what = f"{what} [+{len(errors) - 1} more problem{'s' if len(errors) > 2 else ''}]"
    return error_body(422, "invalid_request", what, where=problems[k]["where"] if problems else "body",
                      fix=_FIXES.get(kind, "see the schema at GET /openapi.json"), problems=problems)


def _allowed_methods(request: Any) -> list[str]:
    from starlette.routing import Match

    methods: set[str] = set()
    for route in request.app.router.routes:
        match, _ = route.matches({**request.scope, "method": "GET"})
        if match != Match.NONE:
            methods |= set(getattr(route, "methods", None) or ())
    return sorted(methods)


def install_handlers(app: Any) -> None:
    """Map FastAPI/Starlette errors and our own to structured bodies."""
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse
    from starlette.exceptions import HTTPException as StarletteHTTPException
    from starlette.requests import ClientDisconnect

    from crossgym.protocol.errors import ConfigError, CrossgymError

    async def on_api_error(request: Any, exc: ApiError) -> JSONResponse:
        return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers)

    async def on_validation(request: Any, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse(validation_error(list(exc.errors())), status_code=422)

    async def on_http(request: Any, exc: StarletteHTTPException) -> JSONResponse:
        headers = dict(getattr(exc, "headers", None) or {})
        if exc.status_code == 400:  # FastAPI could not read the body (not UTF-8, cut off...): a bad request body
            return JSONResponse(error_body(422, "invalid_request", "the body could not be read as JSON", where="body",
                                           fix=_FIXES["json_invalid"]), status_code=422)
        if exc.status_code == 405:  # every method of every route on this path (Starlette names only one route's)
            headers["Allow"] = ", ".join(_allowed_methods(request))
        codes = {404: ("not_found", "no such route", "see GET /openapi.json for the routes"),
                 405: ("method_not_allowed", f"{request.method} is not allowed here",
                       "see GET /openapi.json for each route's methods"),
                 408: ("request_timeout", str(exc.detail), "send the whole body at once, with a Content-Length "
                                                           "that matches it"),
                 413: ("body_too_large", str(exc.detail), "split the batch, or start the server with a larger "
                                                          "--max-body-mb")}
        code, what, fix = codes.get(exc.status_code, ("http_error", str(exc.detail), None))
        return JSONResponse(error_body(exc.status_code, code, what, where=request.url.path, fix=fix),
                            status_code=exc.status_code, headers=headers or None)

    async def on_config(request: Any, exc: ConfigError) -> JSONResponse:
        return JSONResponse(error_body(422, "invalid_request", exc.message, where=exc.where, fix=exc.fix),
                            status_code=422)

    async def on_crossgym(request: Any, exc: CrossgymError) -> JSONResponse:
        return JSONResponse(error_body(422, "invalid_request", str(exc)), status_code=422)

    async def on_disconnect(request: Any, exc: Exception) -> JSONResponse:
        """The client left mid-body: nobody reads a reply. Not a 500 with two tracebacks in the log per disconnect
        (a client could flood the log that way)."""
        return JSONResponse(error_body(400, "client_disconnected", "the client disconnected before sending the body",
                                       where="body"), status_code=400)

    async def on_other(request: Any, exc: Exception) -> JSONResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return JSONResponse(error_body(500, "internal_error", f"{type(exc).__name__} (see the server log)"),
                            status_code=500)

    app.add_exception_handler(ApiError, on_api_error)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(StarletteHTTPException, on_http)
    app.add_exception_handler(ConfigError, on_config)
    app.add_exception_handler(CrossgymError, on_crossgym)
    app.add_exception_handler(ClientDisconnect, on_disconnect)
    app.add_exception_handler(Exception, on_other)
