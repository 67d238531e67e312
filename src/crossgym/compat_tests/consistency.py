"""The "consistency" checks: every reward path a backend has gives the reward its trainer gets, not only the
trainer's own path. They would have caught each disagreement of crossgym 0.1 (issue 19):

* ``records``: the rollouts a backend records while training (its own recording path, through its own reward path)
  re-score with `crossgym reverify` with zero drift, and carry schema-2 provenance naming the backend. A driver
  opts in with ``record_rollouts(tasks, completions, path)``.
* ``route``: the backend's HTTP route on `crossgym serve` (OpenRLHF's remote reward, veRL's remote reward function)
  gives the same reward as its native file or module for the same samples, under a weighted rule with an extra
  term. A driver opts in with ``route_rewards(tasks, completions, url, rule) -> rewards`` and ``native_rewards``
  taking ``rule=``.
* ``nemo_gym`` (backend-independent, in every venv with the serve extra): NeMo Gym's /verify shape gives the
  scoring core's reward for the same (task, completion).
"""

from __future__ import annotations

import json
import logging
import tempfile
from pathlib import Path
from typing import Any

from crossgym.compat_tests.results import CheckResult, explain_difference, same_reward
from crossgym.protocol.task import Completion, Task, VerifierSpec

log = logging.getLogger(__name__)

#: single-turn verifiers whose examples need no service, sandbox or tools: the samples of these checks
VERIFIERS = ("exact_match", "numeric", "json_answer", "multiple_choice", "format_tags", "json_schema", "math")


def samples(*, surrogate: bool = False) -> tuple[list[Task], list[Completion]]:
    """The examples of VERIFIERS (pass, fail and malformed of each); with ``surrogate``, also a reply holding a lone
    surrogate (text a tool or a JSON escape can carry; a tokenizer cannot, so paths that tokenize go without)."""
    from crossgym.api import load_verifier

    tasks: list[Task] = []
    comps: list[Completion] = []
    for name in VERIFIERS:
        for ex in load_verifier(name).examples():
            if not ex.task.tools and ex.task.env == "single_turn" and len(ex.completion.messages) == 1:
                tasks.append(ex.task)
                comps.append(ex.completion)
    if tasks and surrogate:
        tasks.append(tasks[0])
        comps.append(Completion.from_text("odd text \udcff from a tool"))
    return tasks, comps


def weighted_rule() -> Any:
    """A rule that exercises every part of the reward: a task weight, an extra term and a non-zero on_error."""
    from crossgym.scoring import ExtraTerm, RewardRule

    return RewardRule(on_error=-0.5, task_weight=2.0,
                      extras=(ExtraTerm("format", VerifierSpec("length", {"max": 40, "unit": "chars"}), 0.25),))


def check_records(driver: Any, backend: str) -> CheckResult:
    """The backend's recorded rollouts re-score with zero drift (see the module docstring)."""
    from crossgym.scoring import read_rollouts
    from crossgym.scoring.drift import reverify

    res = CheckResult("records")
    hook = getattr(driver, "record_rollouts", None)
    if hook is None:
        res.status, res.detail = "skip", "n/a: the backend records no rollouts of its own (its driver has no " \
                                         "record_rollouts)"
        return res
    tasks, comps = samples()
    with tempfile.TemporaryDirectory(prefix="crossgym-compat-records-") as tmp:
        path = Path(tmp) / "rollouts.jsonl"
        hook(tasks, comps, path)
        records = read_rollouts(path)
        res.checked = len(records)
        if len(records) != len(tasks):
            return res.fail(f"{len(records)} records for {len(tasks)} scored samples")
        bad = [r.provenance for r in records
               if r.provenance.get("schema") != 2 or r.provenance.get("backend") != backend]
        if bad:
            return res.fail(f"provenance is not schema 2 naming {backend!r}", {"provenance": bad[0]})
        doc = reverify(path)
        if not doc["ok"]:
            first = doc["changes"][0] if doc["changes"] else doc["unavailable"]
            return res.fail(f"reverify found drift: {doc['changed']} of {doc['checked']} changed", {"first": first})
    res.detail = f"{res.checked} recorded rollouts re-scored by `crossgym reverify`: no drift"
    return res


def check_route(driver: Any) -> CheckResult:
    """The backend's serve route gives the native reward for the same samples (see the module docstring)."""
    res = CheckResult("route")
    hook = getattr(driver, "route_rewards", None)
    if hook is None:
        res.status, res.detail = "skip", "n/a: the backend has no serve route (its driver has no route_rewards)"
        return res
    missing = _serve_missing()
    if missing:
        res.status, res.detail = "skip", f"needs {missing} to run `crossgym serve` here (pip install 'crossgym[serve]')"
        return res
    from crossgym.serve.live import LiveServer
    from crossgym.serve.settings import ServeSettings

    tasks, comps = samples()
    rule = weighted_rule()
    native = driver.native_rewards(tasks, comps, rule=rule)
    with LiveServer(ServeSettings(rule=rule, on_error=float(rule.on_error))) as srv:
        remote = hook(tasks, comps, srv.url, rule)
    res.checked = len(tasks)
    for i, (a, b) in enumerate(zip(native, remote, strict=True)):
        if not same_reward(a, b):
            return res.fail(f"{sum(not same_reward(x, y) for x, y in zip(native, remote, strict=True))} of "
                            f"{len(tasks)} differ; first: {explain_difference(a, b)}",
                            {"task": tasks[i].id, "verifier": tasks[i].verifier.name, "text": comps[i].text[:200]})
    res.detail = f"{res.checked} samples: the route's rewards equal the native file's, under a weighted rule"
    return res


def check_nemo_gym() -> CheckResult:
    """NeMo Gym's /verify shape gives the scoring core's reward (backend-independent)."""
    res = CheckResult("nemo_gym")
    missing = _serve_missing()
    if missing:
        res.status, res.detail = "skip", f"needs {missing} (pip install 'crossgym[serve]')"
        return res
    from fastapi.testclient import TestClient

    from crossgym.serve.app import create_app
    from crossgym.serve.settings import ServeSettings

    tasks, comps = samples(surrogate=True)
    rule = weighted_rule()
    with TestClient(create_app(ServeSettings(nemo_gym=True, rule=rule, on_error=float(rule.on_error)))) as client:
        for task, comp in zip(tasks, comps, strict=True):
            body = {"responses_create_params": {"input": [{"role": "user", "content": m.content}
                                                          for m in task.prompt if m.role == "user"] or "?"},
                    "response": {"output": [{"type": "message", "role": "assistant",
                                             "content": [{"type": "output_text", "text": comp.text}]}]},
                    "task": task.to_dict()}
            # JSON escapes: a lone surrogate (text from a tool) is valid JSON that way, and the server must cope
            reply = client.post("/verify", content=json.dumps(body).encode("ascii"),
                                headers={"content-type": "application/json"})
            if reply.status_code != 200:
                return res.fail(f"/verify answered {reply.status_code}", {"task": task.id, "body": reply.text[:300]})
            want = rule.score(task, Completion.from_text(comp.text)).reward_or(0.0)
            got = reply.json()["reward"]
            res.checked += 1
            if not same_reward(want, got):
                return res.fail(f"NeMo Gym reward {got!r} != the scoring core's {want!r}",
                                {"task": task.id, "text": comp.text[:200]})
    res.detail = f"{res.checked} NeMo Gym /verify requests: rewards equal the scoring core's, under a weighted rule"
    return res


def _serve_missing() -> str | None:
    import importlib.util

    missing = [m for m in ("fastapi", "uvicorn", "httpx") if importlib.util.find_spec(m) is None]
    return ", ".join(missing) or None
