"""Clients of a crossgym server, standard library only: ``ServeClient`` and veRL's ``verl_compute_score``.

``ServeClient`` keeps one HTTP/1.1 connection per thread (keep-alive) and retries a request once on a dropped
connection. ``verl_compute_score`` is a veRL custom reward function that scores through a server::

    reward.custom_reward_function.path=pkg://crossgym.serve.client
    reward.custom_reward_function.name=verl_compute_score
    +reward.custom_reward_function.reward_kwargs.url=http://HOST:PORT
"""

from __future__ import annotations

import http.client
import json
import os
import threading
import time
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

from crossgym.protocol.errors import CrossgymError
from crossgym.protocol.task import Completion, Task, Verdict
from crossgym.serve import jsonio

#: extra_info keys crossgym's veRL dataset and agent loop write (crossgym.adapters.verl.reward)
VERL_TASK_KEY = "crossgym_task"
VERL_COMPLETION_KEY = "crossgym_completion"


class ServeError(CrossgymError):
    """The server answered with an error, or could not be reached; the message carries its what/where/fix."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class ServeClient:
    """A thread-safe client of `crossgym serve` (one keep-alive connection per thread)."""

    def __init__(self, url: str, token: str | None = None, timeout: float = 300.0) -> None:
        parts = urlsplit(url if "//" in url else f"http://{url}")
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise CrossgymError(f"not an http(s) URL: {url!r} (fix: pass e.g. http://127.0.0.1:8000)")
        self.scheme, self.host = parts.scheme, parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.base = parts.path.rstrip("/")
        self.token = token
        self.timeout = timeout
        self._local = threading.local()

    def _conn(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            cls = http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
            conn = cls(self.host, self.port, timeout=self.timeout)
            self._local.conn = conn
        return conn

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def request(self, method: str, path: str, doc: Any = None) -> Any:
        """One JSON request; the decoded reply (None for 204). Raises ServeError on an error status."""
        body = None if doc is None else jsonio.dumps(doc)
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        for attempt in range(2):
            conn = self._conn()
            try:
                conn.request(method, self.base + path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                break
            except (ConnectionError, http.client.HTTPException, OSError) as exc:
                self.close()
                if attempt:
                    raise ServeError(0, f"cannot reach the crossgym server at {self.scheme}://{self.host}:"
                                        f"{self.port}: {exc}") from None
        if resp.status == 204:
            return None
        try:
            reply = jsonio.loads(data) if data else None
        except ValueError:
            reply = None
        if resp.status >= 400:
            err = (reply or {}).get("error") if isinstance(reply, dict) else None
            if isinstance(err, dict):
                msg = f"{err.get('where')}: {err.get('what')}" if err.get("where") else str(err.get("what"))
                if err.get("fix"):
                    msg += f" (fix: {err['fix']})"
            else:
                msg = data[:200].decode("utf-8", "replace")
            raise ServeError(resp.status, f"HTTP {resp.status}: {msg}")
        return reply

    # ------------------------------------------------------------------ verification
    @staticmethod
    def _item(task: Task | Mapping[str, Any], completion: Completion | str) -> dict[str, Any]:
        return {"task": task.to_dict() if isinstance(task, Task) else dict(task),
                "completion": completion if isinstance(completion, str) else completion.to_dict()}

    def verify(self, task: Task | Mapping[str, Any], completion: Completion | str) -> Verdict:
        """POST /verify: the Verdict of one completion."""
        return Verdict.from_dict(self.request("POST", "/verify", self._item(task, completion))["verdict"])

    def verify_batch(self, pairs: Iterable[tuple[Task, Completion | str]], batch_size: int = 256,
                     concurrency: int = 2) -> list[Verdict]:
        """POST /verify/batch in chunks of ``batch_size``, ``concurrency`` requests in flight (each on its own
        keep-alive connection, so encoding one chunk overlaps scoring another): one Verdict per pair, in order.
        A task object shared by several pairs (a GRPO group) travels once per request."""
        pairs = list(pairs)
        chunks = [pairs[i:i + batch_size] for i in range(0, len(pairs), batch_size)]
        if concurrency <= 1 or len(chunks) <= 1:
            return [v for chunk in chunks for v in self._batch(chunk)]
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(concurrency, thread_name_prefix="crossgym-serve-client") as pool:
            try:
                return [v for verdicts in pool.map(self._batch, chunks) for v in verdicts]
            finally:
                for _ in range(concurrency):  # each thread's keep-alive connection
                    pool.submit(self.close)

    def _batch(self, pairs: list[tuple[Task, Completion | str]]) -> list[Verdict]:
        tasks: list[dict[str, Any]] = []
        index: dict[int, int] = {}
        items = []
        for task, completion in pairs:
            if isinstance(task, Task):
                k = index.get(id(task))
                if k is None:
                    k = index[id(task)] = len(tasks)
                    tasks.append(task.to_dict())
                ref: Any = k
            else:
                ref = dict(task)
            items.append({"task": ref, "completion": completion if isinstance(completion, str)
                          else completion.to_dict()})
        reply = self.request("POST", "/verify/batch", {"items": items, "tasks": tasks})
        return [Verdict.from_dict(v) for v in reply["verdicts"]]

    def health(self) -> dict[str, Any]:
        return self.request("GET", "/health")  # type: ignore[no-any-return]


_clients: dict[tuple[str, str | None], ServeClient] = {}
_clients_lock = threading.Lock()


def _client(url: str, token: str | None) -> ServeClient:
    with _clients_lock:
        c = _clients.get((url, token))
        if c is None:
            c = _clients[(url, token)] = ServeClient(url, token)
        return c


def _remote_verdict(client: ServeClient, task: Mapping[str, Any], completion: Any, retries: int) -> Verdict:
    """The server's Verdict for one (task, completion); a 422 (a row the verifier cannot score) is an exception
    Verdict; an unreachable server raises after ``retries`` tries."""
    for attempt in range(max(1, retries)):
        try:
            return Verdict.from_dict(client.request("POST", "/verify", {"task": task,
                                                                         "completion": completion})["verdict"])
        except ServeError as exc:
            if exc.status == 422:
                return Verdict.exception(str(exc))
            if attempt + 1 >= max(1, retries):
                raise
            time.sleep(0.5 * (attempt + 1))
    raise AssertionError("unreachable")


def verl_compute_score(data_source: str | None = None, solution_str: str = "", ground_truth: Any = None,
                       extra_info: Mapping[str, Any] | None = None, *, url: str | None = None,
                       token: str | None = None, rule: Mapping[str, Any] | None = None, on_error: float = 0.0,
                       task_weight: float = 1.0, extra: Any = (), retries: int = 3, **_: Any) -> dict[str, Any]:
    """veRL's custom reward function, scored by a crossgym server (``url``, or $CROSSGYM_SERVE_URL).

    The server judges the task term and each extra term; the run's RewardRule (``rule``, the dict crossgym's
    generated veRL module binds; or on_error/task_weight/extra) combines them here, through the same scoring core
    as the in-process module, so both return the same dict (``Scored.info()``) for the same sample. The row's task
    is ``extra_info["crossgym_task"]``; the completion is the whole episode when the agent loop left it there, else
    ``solution_str``. An unreachable server raises after ``retries`` tries: training on made-up rewards is worse
    than stopping.
    """
    from crossgym.rollout.driver import episode_from_json
    from crossgym.scoring import RewardRule
    from crossgym.scoring.parts import part_of
    from crossgym.scoring.rule import extra_task

    url = url or os.environ.get("CROSSGYM_SERVE_URL")
    token = token or os.environ.get("CROSSGYM_TOKEN")
    if not url:
        raise CrossgymError("verl_compute_score needs the server URL (fix: set "
                            "+reward.custom_reward_function.reward_kwargs.url=http://HOST:PORT or CROSSGYM_SERVE_URL)")
    # reward_kwargs may arrive as OmegaConf containers (veRL's config): plain JSON values first
    plain = json.loads(json.dumps(rule or {"on_error": on_error, "task_weight": task_weight, "extras": extra},
                                  default=lambda o: dict(o) if hasattr(o, "keys") else list(o)))
    scoring = RewardRule.from_dict(plain)
    scoring = scoring.numeric("veRL")
    keys = scoring.metric_keys()
    info = dict(extra_info or {})
    raw_task = info.get(VERL_TASK_KEY)
    raw_comp = info.get(VERL_COMPLETION_KEY)
    if not raw_task:
        return scoring.score_error(f"cannot rebuild the task: the row's extra_info has no {VERL_TASK_KEY!r}: it "
                                   "was not written by crossgym").info(keys)
    try:
        task = Task.from_dict(json.loads(raw_task) if isinstance(raw_task, str) else dict(raw_task))
    except (ValueError, KeyError, TypeError) as exc:
        return scoring.score_error(f"cannot rebuild the task: {exc}").info(keys)
    completion = Completion.from_text(solution_str or "")
    if raw_comp:
        completion, failed = episode_from_json(raw_comp)
        if failed is not None:  # the environment failed: the episode driver's exception Verdict, every term
            return scoring.score_error(failed, task=task).info(keys)
    client = _client(url, token)
    judged = task if scoring.override is None else Task.from_dict({**task.to_dict(),
                                                                   "verifier": scoring.override.to_dict()})
    verdict = _remote_verdict(client, judged.to_dict(), completion.to_dict(), retries)
    part = part_of(task)
    extras = {t.name: _remote_verdict(client, extra_task(task, t.spec).to_dict(), completion.to_dict(), retries)
              for t in scoring.extras if t.applies(part)}
    return scoring.combine(verdict, extras, part=part).info(keys)
