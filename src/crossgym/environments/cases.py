"""Scripted conformance cases for the built-in environments: a task from a generator, a trajectory that solves it
and one that does not, written from the task's own reference data."""

from __future__ import annotations

import json
from typing import Any

from crossgym.environments.conformance import EnvCase
from crossgym.protocol.messages import Message, ToolCall
from crossgym.protocol.task import Task


def _say(text: str) -> Message:
    return Message(role="assistant", content=text)


def _call(name: str, args: dict[str, Any], call_id: str = "call_0") -> Message:
    return Message(role="assistant", content="", tool_calls=(ToolCall(id=call_id, name=name, arguments=args),))


def _hermes(name: str, args: dict[str, Any]) -> Message:
    return _say(f'<tool_call>\n{json.dumps({"name": name, "arguments": args})}\n</tool_call>')


def _factory(name: str, **params: Any) -> Any:
    from crossgym.api import environment_factory

    return environment_factory(name, **params)


def single_turn_case() -> EnvCase:
    from crossgym.environments.sources.arithmetic import arithmetic

    task = next(iter(arithmetic(n=1, seed=11, difficulty=2)))
    return EnvCase("single_turn", _factory("single_turn"), task,
                   correct=[_say(f"Working it out... <answer>{task.answer}</answer>")],
                   wrong=[_say(f"<answer>{task.answer + 1}</answer>")])


def tool_use_case() -> EnvCase:
    """A chained two-tool question; the correct script also sends an unreadable call and an unknown tool, which
    must come back as tool messages, and mixes OpenAI and Hermes call forms."""
    from crossgym.environments.sources.tool_choice import tool_choice

    task = next(iter(tool_choice(n=1, seed=5, difficulty=3, mode="env", max_turns=6)))
    (c1, c2) = task.metadata["expected_calls"]
    correct = [
        _say('<tool_call>{"name": "get_capital", "arguments": {</tool_call>'),  # malformed: error message back
        _call("no_such_tool", {}),
        _call(c1["name"], c1["arguments"]),
        _hermes(c2["name"], c2["arguments"]),
        _say(f"<answer>{task.answer}</answer>"),
    ]
    wrong = [_call(c1["name"], c1["arguments"]), _say(f"<answer>{task.answer + 7}</answer>")]
    return EnvCase("tool_use", _factory("tool_use"), task, correct=correct, wrong=wrong,
                   notes="malformed call, unknown tool, OpenAI and Hermes forms")


def sql_case() -> EnvCase:
    from crossgym.environments.sources.sql_tasks import sql

    task = next(iter(sql(n=1, seed=3, difficulty=3, env="sql")))
    ref = task.metadata["reference"]
    correct = [
        _call("list_tables", {}),
        _hermes("describe", {"table": "employees"}),
        _call("query", {"sql": "SELECT * FROM departments"}),
        _call("submit", {"query": ref}),
    ]
    wrong = [_call("query", {"sql": "DELETE FROM employees"}), _say("```sql\nSELECT name FROM departments\n```")]
    return EnvCase("sql", _factory("sql"), task, correct=correct, wrong=wrong,
                   notes="exploration tools, a refused write, submit vs a plain-text answer")


def shell_case() -> EnvCase:
    from crossgym.environments.sources.shell_tasks import shell_tasks

    task = next(iter(shell_tasks(n=1, seed=2, difficulty=2, env="shell")))
    commands = task.metadata["reference"]
    correct = [_call("run", {"command": "ls"})]
    correct += [_call("run", {"command": c}, f"call_{i}") for i, c in enumerate(commands)]
    correct.append(_say("Done."))
    wrong = [_call("run", {"command": "echo nothing > unrelated.txt"}), _say("Done.")]
    return EnvCase("shell", _factory("shell"), task, correct=correct, wrong=wrong)


def code_case() -> EnvCase:
    from crossgym.environments.sources.python_functions import python_functions

    task = next(iter(python_functions(n=1, seed=4, difficulty=1, env="code")))
    ref, buggy, entry = task.metadata["reference"], task.metadata["buggy"], task.metadata["entry_point"]
    stub = f"def {entry}(*args, **kwargs):\n    return None\n"  # fails every test
    correct = [_say(f"First try:\n```python\n{buggy}\n```"), _say(f"Fixed:\n```python\n{ref}\n```")]
    wrong = [_say(f"```python\n{stub}```")] * int(task.metadata.get("max_turns", 3))
    return EnvCase("code", _factory("code"), task, correct=correct, wrong=wrong,
                   notes="a failing first attempt, then the fix")


CASES = {"single_turn": single_turn_case, "tool_use": tool_use_case, "sql": sql_case, "shell": shell_case,
         "code": code_case}


def builtin_cases(names: list[str] | None = None) -> list[EnvCase]:
    """Cases for the named built-in environments (default: all)."""
    return [CASES[n]() for n in (names or list(CASES))]


def case_task(name: str) -> Task:
    return CASES[name]().task
