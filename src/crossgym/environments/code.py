"""code: write a function, see which of the shown tests fail, fix it.

Each reply with a ```python block (or a ``run_tests(code)`` tool call) is run against the task's visible tests
(``metadata["visible_tests"]``) in the sandbox; the model sees the pass count and the failures. The episode ends when
the visible tests all pass, when a reply holds no code, or at max_turns. The reward is the ``code_tests`` verifier on
the final code with every test, hidden ones included.
"""

from __future__ import annotations

from typing import Any

from crossgym.environments.base import BaseEnvironment, Reply, tool_message
from crossgym.environments.tools import tool_spec
from crossgym.protocol.episode import Observation
from crossgym.protocol.errors import ConfigError, CrossgymError
from crossgym.protocol.messages import Message
from crossgym.protocol.task import Completion, Task
from crossgym.verifiers.base import Malformed
from crossgym.verifiers.code import extract_code

#: failures listed per feedback message
MAX_FAILURES_SHOWN = 5


def run_tests(code: str) -> str:
    """Run the shown tests on your code and report which fail.

    Args:
        code: The complete Python code of your solution.
    """
    raise NotImplementedError("executed by the code environment")  # only the signature and docstring are used


class CodeEnv(BaseEnvironment):
    """Write, test, fix. params: max_turns, run_timeout (s per test run), tier (sandbox)."""

    name = "code"
    default_max_turns = 3

    def __init__(self, *, max_turns: int | None = None, run_timeout: float = 10.0, tier: str | None = None) -> None:
        super().__init__(max_turns=max_turns)
        self.run_timeout = float(run_timeout)
        self.tier = tier
        self.visible: list[str] = []
        self.spec = tool_spec(run_tests)

    def start(self, task: Task) -> Observation:
        visible = task.metadata.get("visible_tests")
        if visible is None and isinstance(task.answer, dict):
            visible = task.answer.get("tests")
        if not isinstance(visible, list) or not visible or not all(isinstance(t, str) for t in visible):
            raise ConfigError(f"task {task.id!r}: the code environment needs metadata['visible_tests'] (test strings)",
                              fix="generate tasks with python_functions(env='code')")
        self.visible = list(visible)
        return Observation(messages=task.prompt, tools=(self.spec,))

    def respond(self, action: Message) -> Reply:
        try:
            code = extract_code(Completion(messages=(action,)))
        except Malformed:
            return Reply(done=True, info={"final": "no code"})
        call = next((c for c in action.tool_calls if c.name == "run_tests"), None)
        text, all_passed, info = self._feedback(code)
        if all_passed:
            return Reply(messages=[tool_message(call, text)] if call else [], done=True, info=info)
        msg = tool_message(call, text) if call else Message(role="user", content=text)
        return Reply(messages=[msg], info=info)

    def _feedback(self, code: str) -> tuple[str, bool, dict[str, Any]]:
        from crossgym import sandbox

        assert self.task is not None
        ans = self.task.answer if isinstance(self.task.answer, dict) else {}
        try:
            res = sandbox.run_python_tests(code, self.visible, entry_point=ans.get("entry_point"),
                                           prelude=ans.get("prelude"), timeout=self.run_timeout, tier=self.tier)
        except CrossgymError as exc:
            return f"The tests could not run: {exc}", False, {"error": str(exc)}
        info = {"visible_passed": res.passed, "visible_total": res.total}
        if res.all_passed:
            return f"All {res.total} shown tests pass.", True, info
        lines = [f"{res.passed}/{res.total} tests pass."]
        if res.error:
            lines.append(f"Problem: {res.error}")
        failed = [d for d in res.details if not d.passed]
        for d in failed[:MAX_FAILURES_SHOWN]:
            lines.append(f"FAILED {d.name}: {d.error or 'failed'}")
        if len(failed) > MAX_FAILURES_SHOWN:
            lines.append(f"... and {len(failed) - MAX_FAILURES_SHOWN} more")
        lines.append("Fix the code and reply with the complete corrected code in a ```python block.")
        return "\n".join(lines), False, info
