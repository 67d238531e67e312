"""Environment-session routes: POST /envs, POST /envs/{id}/step, GET /envs/{id}, DELETE /envs/{id}.

One session is one episode (``load_environment(env, **params).reset(task, seed=seed)``), held in a SessionStore
(cap, idle expiry); steps run on the Runner's threads, one at a time per session.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.responses import Response

from crossgym.protocol.errors import ConfigError
from crossgym.protocol.messages import Message
from crossgym.protocol.task import Task, Verdict
from crossgym.serve import jsonio
from crossgym.serve import models as m
from crossgym.serve.errors import ApiError, error_responses
from crossgym.serve.guard import check_wire
from crossgym.serve.runner import Runner
from crossgym.serve.sessions import Session, SessionStore
from crossgym.serve.settings import ServeSettings


def _json(doc: Any, status: int = 200) -> Response:
    return Response(content=jsonio.dumps(doc), status_code=status, media_type="application/json")


def _messages(msgs: Any) -> list[dict[str, Any]]:
    return [x.to_dict() for x in msgs]


def _episode_verdict(env: Any) -> Verdict | None:
    judge = getattr(env, "verdict", None)
    if callable(judge):
        result = judge()
        return result if isinstance(result, Verdict) else None
    return None


def add_env_routes(app: FastAPI, settings: ServeSettings, runner: Runner, store: SessionStore,
                   auth: tuple[int, ...]) -> None:
    """Register the session routes on ``app``."""
    _errors = error_responses

    @app.post("/envs", status_code=201, response_model=m.EnvCreated,
              responses=_errors(*auth, 408, 413, 415, 422, 429, 503, 504), tags=["environments"])
    async def create_env(body: m.EnvCreateRequest) -> Response:
        """Start an episode: builds the environment, resets it on the task, returns the session id."""
        check_wire(body.task.model_dump()["verifier"], settings.request_timeout_s, "body.task.verifier")
        store.reserve()
        try:
            def work() -> tuple[str, Any, Any, Task]:
                from crossgym.api import load_environment

                task = m.to_task(body.task)
                name = body.env or task.env
                try:
                    env = load_environment(name, **body.params)
                except ConfigError as exc:
                    raise ApiError(422, "bad_environment", exc.message, where=exc.where or "body.env",
                                   fix=exc.fix or "see `crossgym list` for the environments") from None
                try:
                    obs = env.reset(task, seed=body.seed)
                except BaseException:
                    env.close()
                    raise
                return name, env, obs, task

            try:
                name, env, obs, task = await runner.run(work)
            except ConfigError as exc:
                raise ApiError(422, "bad_task", exc.message, where=exc.where or "body.task",
                               fix=exc.fix or "check the task fits the environment") from None
        except BaseException:
            store.unreserve()
            raise
        session = store.add(name, env, task.id)
        return _json({"id": session.id, "env": name, "idle_timeout_s": settings.session_idle_s,
                      "observation": obs.to_dict()}, status=201)

    def _locked_step(s: Session, action: Message | str) -> dict[str, Any]:
        from crossgym.environments.base import EpisodeError

        if not s.lock.acquire(blocking=False):
            raise ApiError(409, "session_busy", "another step of this session is running", where="path id",
                           fix="wait for the previous step's reply before sending the next action")
        try:
            if s.closed:  # deleted or expired while this request waited for a thread
                raise ApiError(404, "unknown_session", f"session {s.id!r} was closed", where="path id",
                               fix="create a new session with POST /envs")
            if s.failed is not None:
                raise ApiError(409, "episode_state", "the episode ended: its environment failed", where="body.action",
                               fix="create a new session for a new episode (POST /envs)")
            s.steps += 1
            try:
                res = s.env.step(action)
            except EpisodeError as exc:
                raise ApiError(409, "episode_state", str(exc), where="body.action",
                               fix="create a new session for a new episode (POST /envs)") from None
            except Exception as exc:  # the episode driver's rule: the episode ends on an exception Verdict
                s.failed = Verdict.exception(f"environment {s.env_name!r} step {s.steps} failed: "
                                             f"{type(exc).__name__}: {exc}")
                return {"messages": [], "done": True, "info": {"error": s.failed.reason}, "turn": s.steps,
                        "verdict": m.verdict_dict(s.failed)}
            verdict = _episode_verdict(s.env) if res.done else None
        finally:
            s.lock.release()
        return {"messages": _messages(res.messages), "done": res.done, "info": res.info,
                "turn": int(res.info.get("turn", getattr(s.env, "turns", 0)) or 0),
                "verdict": None if verdict is None else m.verdict_dict(verdict)}

    @app.post("/envs/{sid}/step", response_model=m.StepResponse,
              responses=_errors(*auth, 404, 408, 409, 413, 415, 422, 503, 504), tags=["environments"])
    async def step_env(sid: str, body: m.StepRequest) -> Response:
        """One assistant action; when the episode ends, the reply carries the task verifier's Verdict."""
        session = store.get(sid)
        action: Message | str = body.action if isinstance(body.action, str) else m.to_message(body.action)
        if isinstance(action, Message) and action.role != "assistant":
            raise ApiError(422, "invalid_request", f"an action must have role 'assistant', got {action.role!r}",
                           where="body.action.role", fix="send the assistant's message (or just its text)")
        return _json(await runner.run(_locked_step, session, action))

    @app.get("/envs/{sid}", response_model=m.EnvState, responses=_errors(*auth, 404, 503, 504),
             tags=["environments"])
    async def get_env(sid: str) -> Response:
        """The episode so far (messages after the prompt), and its Verdict once done."""
        s = store.get(sid)

        def work() -> dict[str, Any]:
            done = bool(getattr(s.env, "done", False)) or s.failed is not None
            verdict = s.failed or (_episode_verdict(s.env) if done else None)
            return {"id": s.id, "env": s.env_name, "task_id": s.task_id, "turns": int(getattr(s.env, "turns", 0)),
                    "done": done, "messages": _messages(getattr(s.env, "messages", ())),
                    "verdict": None if verdict is None else m.verdict_dict(verdict)}

        return _json(await runner.run(work))

    @app.delete("/envs/{sid}", status_code=204, responses=_errors(*auth, 404, 503, 504), tags=["environments"])
    async def delete_env(sid: str) -> Response:
        """Close the session and free what it holds (sandbox sessions...)."""
        s = store.pop(sid)
        if s is None:
            raise ApiError(404, "unknown_session", f"no open session {sid!r}", where="path id",
                           fix="it may have expired or been deleted already")
        await runner.run(s.close)
        return Response(status_code=204)

