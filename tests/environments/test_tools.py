"""Tools from callables: specs from signatures and docstrings, safe calls, rebuilding from a task anywhere."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Literal

import pytest

from crossgym.environments.tools import Tool, json_schema_for, parse_docstring, tool_spec, tools_for_task
from crossgym.protocol.errors import ConfigError
from crossgym.protocol.messages import ToolSpec
from crossgym.protocol.task import Task, VerifierSpec


def search(query: str, limit: int = 5, exact: bool = False, tags: list[str] | None = None) -> list[str]:
    """Search the catalogue.

    Longer explanation that is part of the description.

    Args:
        query: What to look for.
        limit: How many results
            to return at most.
        exact: Match the whole title.
        tags: Only items with these tags.

    Returns:
        Matching titles.
    """
    return [query] * limit


def sphinx_style(x: float, mode: Literal["fast", "slow"] = "fast") -> float:
    """Scale a number.

    :param x: The number.
    :param mode: How to do it.
    :returns: The result.
    """
    return x * 2


def numpy_style(a: int, b: dict[str, int]) -> int:
    """Combine things.

    Parameters
    ----------
    a : int
        The first thing.
    b : dict
        The mapping.
    """
    return a + sum(b.values())


def broken_tool(x: int) -> int:
    """Always fails.

    Args:
        x: ignored.
    """
    raise RuntimeError("tool exploded")


def test_google_docstring_spec() -> None:
    spec = tool_spec(search)
    assert spec.name == "search"
    assert spec.description == "Search the catalogue. Longer explanation that is part of the description."
    props = spec.parameters["properties"]
    assert props["query"] == {"type": "string", "description": "What to look for."}
    assert props["limit"] == {"type": "integer", "description": "How many results to return at most.", "default": 5}
    assert props["exact"]["type"] == "boolean" and props["exact"]["default"] is False
    assert props["tags"]["type"] == ["array", "null"] and props["tags"]["items"] == {"type": "string"}
    assert spec.parameters["required"] == ["query"]
    assert spec.to_openai()["type"] == "function"


def test_sphinx_and_numpy_docstrings() -> None:
    s = tool_spec(sphinx_style)
    assert s.description == "Scale a number."
    assert s.parameters["properties"]["x"] == {"type": "number", "description": "The number."}
    assert s.parameters["properties"]["mode"]["enum"] == ["fast", "slow"]
    assert s.parameters["properties"]["mode"]["description"] == "How to do it."
    n = tool_spec(numpy_style)
    assert n.parameters["properties"]["a"]["description"] == "The first thing."
    assert n.parameters["properties"]["b"] == {"type": "object", "additionalProperties": {"type": "integer"},
                                               "description": "The mapping."}


def test_json_schema_for_types() -> None:
    assert json_schema_for(tuple[int, ...]) == {"type": "array", "items": {"type": "integer"}}
    assert json_schema_for(int | str) == {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    assert json_schema_for(Literal[1, 2]) == {"enum": [1, 2], "type": "integer"}
    assert json_schema_for(object) == {}
    assert parse_docstring(None) == ("", {})


def test_tool_call_checks_arguments_and_never_raises() -> None:
    t = Tool.from_callable(search)
    assert json.loads(t.call({"query": "x", "limit": 2})) == ["x", "x"]
    assert t.call({}).startswith("Error: missing required argument 'query'")
    assert "unknown argument 'nope'" in t.call({"query": "x", "nope": 1})
    assert "must be integer" in t.call({"query": "x", "limit": "2"})
    assert "must be integer" in t.call({"query": "x", "limit": True})  # bool is not an int here
    assert Tool.from_callable(broken_tool).call({"x": 1}) == "Error: RuntimeError: tool exploded"
    assert "must be one of" in Tool.from_callable(sphinx_style).call({"x": 1, "mode": "medium"})


def _task(metadata: dict, tools: tuple = ()) -> Task:
    return Task(id="t", prompt="q", answer=None, verifier=VerifierSpec("exact_match"), env="tool_use",
                tools=tools, metadata=metadata)


def test_tools_for_task_from_toolset_and_refs() -> None:
    tools = tools_for_task(_task({"toolset": "calculator"}))
    assert [t.name for t in tools] == ["add", "subtract", "multiply", "divide", "sqrt"]
    refs = tools_for_task(_task({"tool_refs": ["crossgym.environments.toolsets:get_weather"]}))
    assert [t.name for t in refs] == ["get_weather"]
    assert json.loads(refs[0].call({"city": "Oslo"}))["temperature_c"] == 6
    both = tools_for_task(_task({"toolset": "crossgym.environments.toolsets:calculator",
                                 "tool_refs": ["crossgym.environments.toolsets:days_between"]}))
    assert {t.name for t in both} == {"add", "subtract", "multiply", "divide", "sqrt", "days_between"}


def test_task_tools_select_and_keep_the_declared_specs() -> None:
    declared = ToolSpec(name="add", description="custom text", parameters=tool_spec(search).parameters)
    tools = tools_for_task(_task({"toolset": "calculator"}, tools=(declared,)))
    assert len(tools) == 1 and tools[0].spec == declared
    with pytest.raises(ConfigError, match="declares tool 'lookup'"):
        tools_for_task(_task({"toolset": "calculator"}, tools=(ToolSpec(name="lookup"),)))


@pytest.mark.parametrize("meta, match", [
    ({"toolset": "no_such_toolset"}, "unknown toolset"),
    ({"tool_refs": ["crossgym.nope:fn"]}, "cannot import tool"),
    ({"tool_refs": ["not-a-ref"]}, "is not 'module:attr'"),
])
def test_bad_tool_references_are_config_errors(meta: dict, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        tools_for_task(_task(meta))


def test_tools_rebuild_from_task_json_in_a_fresh_process() -> None:
    """The adapters rebuild environments from tasks in their own processes: only the task JSON travels."""
    from crossgym.environments.sources.tool_choice import tool_choice

    task = next(iter(tool_choice(n=1, seed=1, difficulty=2)))
    call = task.metadata["expected_calls"][0]
    code = (
        "import json, sys\n"
        "from crossgym.protocol.task import Task\n"
        "from crossgym.environments.tools import tools_for_task\n"
        "task = Task.from_json(sys.stdin.read())\n"
        "tools = {t.name: t for t in tools_for_task(task)}\n"
        f"print(json.dumps([sorted(tools), tools[{call['name']!r}].call({call['arguments']!r})]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], input=task.to_json(), capture_output=True, text=True,
                         timeout=60, check=True)
    names, result = json.loads(out.stdout)
    here = {t.name: t for t in tools_for_task(task)}
    assert names == sorted(here)
    assert result == here[call["name"]].call(call["arguments"])


def test_stateful_toolset_factory_gives_each_episode_its_own_state() -> None:
    from crossgym.environments.tool_use import ToolUseEnv
    from crossgym.protocol.messages import Message, ToolCall

    def call(name: str, **args: object) -> Message:
        return Message(role="assistant", content="", tool_calls=(ToolCall(id="c", name=name, arguments=args),))

    task = _task({"toolset": "notes"})
    a, b = ToolUseEnv(), ToolUseEnv()
    assert {t.name for t in a.reset(task).tools} == {"remember", "recall"}
    b.reset(task)
    a.step(call("remember", key="k", value="from a"))
    assert a.step(call("recall", key="k")).messages[0].content == "from a"
    assert "no note named 'k'" in b.step(call("recall", key="k")).messages[0].content
    a.reset(task)  # a new episode starts with an empty scratchpad
    assert "no note named" in a.step(call("recall", key="k")).messages[0].content
