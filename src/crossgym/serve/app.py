"""``create_app(settings)``: the FastAPI application behind `crossgym serve`.

Routes: POST /verify, POST /verify/batch, POST /openrlhf/reward, POST /envs, GET /envs/{id}, POST /envs/{id}/step,
DELETE /envs/{id}, GET /verifiers, GET /health, GET /openapi.json (and /docs). Verification and environments run
on threads through ``Runner`` (concurrency limit, queue bound, deadline); replies are JSON written directly.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Annotated, Any, Union

from fastapi import FastAPI, Request
from fastapi.responses import Response
from fastapi.routing import APIRoute
from pydantic import Discriminator, Tag

from crossgym import __version__
from crossgym.protocol.errors import ConfigError, CrossgymError, UnknownNameError, VerifierError
from crossgym.protocol.task import Completion, Task, Verdict, VerifierSpec
from crossgym.serve import jsonio, nemo_gym, openrlhf
from crossgym.serve import models as m
from crossgym.serve.batch_body import add_request_body, parse_batch, to_pair
from crossgym.serve.envs import add_env_routes
from crossgym.serve.errors import ApiError, error_responses, install_handlers
from crossgym.serve.guard import check_spec, check_wire, loop_safe, refusal
from crossgym.serve.middleware import BearerAuth, BodyLimit, Draining, HostCheck, media_problem
from crossgym.serve.runner import Runner
from crossgym.serve.sessions import SessionStore
from crossgym.serve.settings import ServeSettings

log = logging.getLogger(__name__)

#: completions up to this many characters are scored by "inline" verifiers on the event loop itself
INLINE_CHARS = 16_384


def _json(doc: Any, status: int = 200) -> Response:
    return Response(content=jsonio.dumps(doc), status_code=status, media_type="application/json")


class _Request(Request):
    """A request whose JSON body is parsed by jsonio (orjson when installed): FastAPI calls ``request.json()``."""

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = jsonio.loads(await self.body())
        return self._json


class _Route(APIRoute):
    """FastAPI's route with the faster JSON body parser (FastAPI's documented custom-route pattern), and only JSON
    bodies."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def with_fast_json(request: Request) -> Response:
            problem = media_problem(request.scope)  # 415 unless the body is declared JSON (after routing: 405 first)
            if problem is not None:
                raise problem
            return await handler(_Request(request.scope, request.receive))

        return with_fast_json


_errors = error_responses


def _build_verifier(spec: VerifierSpec, where: str) -> Any:
    from crossgym.api import load_verifier

    try:
        return load_verifier(spec)
    except UnknownNameError as exc:
        raise ApiError(422, "unknown_verifier", exc.message, where=where,
                       fix="see GET /verifiers for the registered names") from None
    except ConfigError as exc:
        raise ApiError(422, "bad_verifier", exc.message, where=where,
                       fix=exc.fix or "check the verifier's params (GET /verifiers, docs/verifiers.md)") from None
    except (VerifierError, CrossgymError) as exc:
        raise ApiError(422, "bad_verifier", str(exc), where=where,
                       fix="check the verifier's params (GET /verifiers, docs/verifiers.md)") from None


def _ref(spec: VerifierSpec, verifier: Any) -> dict[str, Any]:
    return {"name": spec.name, "version": str(getattr(verifier, "version", "") or "") or None}


def _chars(completion: Completion) -> int:
    return sum(len(x.content) for x in completion.messages)


def _verifier_list() -> list[dict[str, Any]]:
    from crossgym.plugins.manager import registry

    reg = registry("verifiers")
    rows = []
    for entry in reg:
        row: dict[str, Any] = {"name": entry.name, "version": None, "description": entry.description,
                               "isolation": None, "error": None}
        try:
            cls = reg.load(entry.name)
            row["version"] = str(getattr(cls, "version", "") or "") or None
            row["isolation"] = getattr(cls, "isolation", None)
            if not row["description"]:
                row["description"] = (cls.__doc__ or "").strip().split("\n")[0]
        except CrossgymError as exc:
            row["error"] = str(exc)
        rows.append(row)
    return rows


def _shape(v: Any) -> str:
    """Which /verify shape a body is: NeMo Gym's carries responses_create_params."""
    if isinstance(v, dict):
        return "nemo_gym" if "responses_create_params" in v else "crossgym"
    return "nemo_gym" if isinstance(v, nemo_gym.NemoGymVerifyRequest) else "crossgym"


#: the /verify body with --nemo-gym: crossgym's shape or NeMo Gym's, told apart by responses_create_params
AnyVerifyBody = Annotated[Union[Annotated[m.VerifyRequest, Tag("crossgym")],  # noqa: UP007
                                Annotated[nemo_gym.NemoGymVerifyRequest, Tag("nemo_gym")]], Discriminator(_shape)]


def create_app(settings: ServeSettings | None = None) -> FastAPI:
    """The application for ``settings`` (defaults: loopback, no token, the limits in ServeSettings)."""
    settings = settings or ServeSettings()
    runner = Runner(settings.max_concurrency, settings.max_queue, settings.request_timeout_s)
    store = SessionStore(settings.max_sessions, settings.session_idle_s)
    verifier_rows: list[dict[str, Any]] = []

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async def sweep() -> None:
            while True:
                await asyncio.sleep(min(30.0, max(0.05, settings.session_idle_s / 4)))
                await asyncio.to_thread(store.expire)

        sweeper = asyncio.create_task(sweep())
        try:
            yield
        finally:
            sweeper.cancel()
            await asyncio.to_thread(store.close_all)

    app = FastAPI(title="crossgym", version=__version__, lifespan=lifespan,
                  description="crossgym verifiers and environments over HTTP. Errors are "
                              '{"error": {status, code, what, where, fix, problems}}.')
    app.router.route_class = _Route
    app.state.settings = settings
    app.state.runner = runner
    app.state.sessions = store
    install_handlers(app)
    auth = (401,) if settings.token else ()

    # ------------------------------------------------------------------ service
    @app.api_route("/health", methods=["GET", "HEAD"], response_model=m.Health, tags=["service"])
    async def health() -> Response:
        """Liveness and load; never needs the token. HEAD too (load balancers' health checks use it)."""
        return _json({"status": "ok", "version": __version__, "sessions": len(store), "in_flight": runner.running,
                      "queued": runner.queued})

    @app.get("/verifiers", response_model=m.VerifierList, responses=_errors(*auth, 503, 504), tags=["service"])
    async def verifiers() -> Response:
        """The registered verifiers: name, version, description, isolation."""
        if not verifier_rows:
            verifier_rows.extend(await runner.run(_verifier_list))
        return _json({"verifiers": verifier_rows})

    # ------------------------------------------------------------------ verification
    verify_errors = _errors(*auth, 408, 413, 415, 422, 503, 504)

    scorers: list[Any] = []

    def openrlhf_scorer() -> Any:
        """The QueryScorer of OpenRLHF's reward file, built once with this server's rule, tokens and model."""
        if not scorers:
            from crossgym.adapters.openrlhf.scoring import QueryScorer, ScoreConfig, special_tail_tokens

            tail = special_tail_tokens(settings.model) if settings.model else None
            scorers.append(QueryScorer(ScoreConfig(rule=settings.reward_rule.numeric("OpenRLHF"),
                                                   strip_tokens=tail or settings.strip_tokens,
                                                   model=settings.model)))
        return scorers[0]

    warm: dict[str, Any] = {}  # built verifiers by spec key (load_verifier caches too; this skips the thread)
    tasks = m.TaskCache()

    async def score(task: Task, completion: Completion, where: str) -> tuple[Verdict, dict[str, Any]]:
        """The Verdict: cheap "inline" verifiers on small completions run right here (a thread hand-off costs
        more than they do); everything else, and every first build, runs on a thread through the runner."""
        from crossgym.scoring.rule import safe_verify as _safe_verify

        check_spec(task.verifier, settings.request_timeout_s, where)
        key = task.verifier.key()
        verifier = warm.get(key)
        if verifier is None:
            verifier = await runner.run(_build_verifier, task.verifier, where)
            if len(warm) >= 1024:
                warm.clear()
            warm[key] = verifier
        if loop_safe(task.verifier, verifier) and _chars(completion) <= INLINE_CHARS:
            verdict = _safe_verify(verifier, task, completion)
        else:
            verdict = await runner.run(_safe_verify, verifier, task, completion)
        return verdict, _ref(task.verifier, verifier)

    async def verify_crossgym(body: m.VerifyRequest, raw: Any) -> Response:
        task, completion = to_pair(body, cache=tasks, raw=raw)
        verdict, ref = await score(task, completion, "body.verifier" if body.verifier is not None
                                   else "body.task.verifier")
        return _json({"verdict": m.verdict_dict(verdict), "verifier": ref})

    async def verify_nemo(body: nemo_gym.NemoGymVerifyRequest, raw: dict[str, Any]) -> Response:
        task, completion = nemo_gym.to_pair(body, settings.nemo_gym_verifier)
        verdict, ref = await score(task, completion, "body.task.verifier" if body.task is not None
                                   else "body.verifier")
        rule = settings.reward_rule
        scored = rule.combine(verdict, {}) if not rule.extras else await runner.run(
            lambda: rule.score(task, completion, verdict=verdict))
        return _json(nemo_gym.reply(raw, scored, ref))

    if settings.nemo_gym:
        @app.post("/verify", response_model=Union[m.VerifyResponse, nemo_gym.NemoGymVerifyResponse],  # noqa: UP007
                  responses=verify_errors, tags=["verify"])
        async def verify_any(body: AnyVerifyBody, request: Request) -> Response:
            """Score one completion: crossgym's shape, or NeMo Gym's resources-server /verify shape (the request
            echoed with ``reward``)."""
            if isinstance(body, nemo_gym.NemoGymVerifyRequest):
                return await verify_nemo(body, await request.json())
            return await verify_crossgym(body, await request.json())
    else:
        @app.post("/verify", response_model=m.VerifyResponse, responses=verify_errors, tags=["verify"])
        async def verify(body: m.VerifyRequest, request: Request) -> Response:
            """Score one completion with the task's verifier (or ``verifier``); an unknown verifier is a 422."""
            return await verify_crossgym(body, await request.json())

    def guarded_many(pairs: list[tuple[Task, Completion]]) -> list[Verdict]:
        """``verify_many`` on the pairs whose verifier spec the guard allows; the others get an "exception" Verdict
        saying why (one bad record does not fail its batch, as with a verifier that cannot be built)."""
        from crossgym.verifiers.batch import verify_many

        refused: dict[int, ApiError | None] = {}  # by spec object: a batch's items share a few
        out: list[Verdict | None] = []
        for i, (task, _) in enumerate(pairs):
            spec = task.verifier
            if id(spec) not in refused:
                refused[id(spec)] = refusal(task, settings.request_timeout_s, f"body.items[{i}].verifier")
            err = refused[id(spec)]
            out.append(None if err is None else Verdict.exception(f"{err.what} (at {err.where}; fix: {err.fix})"))
        todo = [p for p, v in zip(pairs, out, strict=True) if v is None]
        scored = iter(verify_many(todo, workers=settings.batch_workers) if todo else [])
        return [v if v is not None else next(scored) for v in out]

    @app.post("/verify/batch", response_model=m.BatchResponse, responses=verify_errors, tags=["verify"])
    async def verify_batch(request: Request) -> Response:
        """Score many pairs (``verify_many``: one Verdict each, in order; a verifier that cannot be built gives an
        "exception" Verdict for its items). The body is a BatchRequest."""
        body = await request.body()

        def work() -> bytes:  # parsing, checking, scoring and writing the reply, all off the event loop
            verdicts = guarded_many(parse_batch(body, tasks, settings.max_batch))
            return jsonio.dumps({"verdicts": [m.verdict_dict(v) for v in verdicts]})

        return Response(content=await runner.run(work), media_type="application/json")

    def check_label(label: Any, where: str) -> None:
        """The guard on a label's verifier spec (a label is Task JSON, as text or an object; one that is not a
        Task scores on_error)."""
        doc = label
        if isinstance(label, str) and '"verifier"' in label:
            try:
                doc = jsonio.loads(label)
            except ValueError:
                return
        if isinstance(doc, dict):
            check_wire(doc.get("verifier"), settings.request_timeout_s, where)

    @app.post("/openrlhf/reward", response_model=openrlhf.OpenRLHFRewardResponse, responses=verify_errors,
              tags=["verify"])
    async def openrlhf_reward(body: openrlhf.OpenRLHFRewardRequest) -> Response:
        """OpenRLHF's remote reward (``--reward.remote_url http://HOST:PORT/openrlhf/reward``): labels are crossgym
        Task JSON; the reply is {rewards, scores, extra_logs}."""
        if len(body.query) > settings.max_batch:
            raise ApiError(413, "batch_too_large", f"{len(body.query)} queries is over this server's "
                           f"{settings.max_batch}", where="body.query",
                           fix=f"send at most {settings.max_batch} queries per request")
        for i, label in enumerate(body.labels):
            check_label(label, f"body.labels[{i}].verifier")

        def work() -> dict[str, Any]:
            n = len(body.query)
            prompts = [body.prompts[i] if i < len(body.prompts) else "" for i in range(n)]
            labels = [body.labels[i] if i < len(body.labels) else None for i in range(n)]
            reply: dict[str, Any] = openrlhf_scorer().reply(body.query, prompts, labels)
            return reply

        return _json(await runner.run(work))

    # ------------------------------------------------------------------ environment sessions
    add_env_routes(app, settings, runner, store, auth)

    base_openapi = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:  # the batch route reads its body itself: document it as a BatchRequest
            add_request_body(base_openapi(), "/verify/batch", m.BatchRequest)
        return app.openapi_schema  # type: ignore[return-value]

    app.openapi = openapi  # type: ignore[method-assign]

    # middleware: the body limit first (outermost after auth), so unauthenticated clients cannot send big bodies
    app.add_middleware(Draining)
    app.add_middleware(BodyLimit, limit=settings.max_body_bytes, timeout_s=settings.read_timeout_s)
    if settings.token:
        app.add_middleware(BearerAuth, token=settings.token)
    if settings.allowed_hosts is not None:  # outermost: a rebinding page's request reaches nothing else
        app.add_middleware(HostCheck, allowed=settings.allowed_hosts)
    return app
