"""Every generator: seeded and reproducible, difficulty params validated, reference answers pass and wrong ones
fail through the real verifiers, tasks survive JSON, and `crossgym tasks` writes them."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

import crossgym
from crossgym.api import load_verifier
from crossgym.environments.sources.json_addition import split_pairs
from crossgym.protocol.errors import ConfigError
from crossgym.protocol.messages import Message, ToolCall
from crossgym.protocol.task import Completion, Task

GENERATORS = ["arithmetic", "word_problems", "json_extraction", "tool_choice", "shell_tasks", "python_functions",
              "sql", "instructions", "multiple_choice", "json_addition"]
#: generators whose verifiers run in the sandbox: fewer tasks per check keeps the suite quick
SANDBOXED = {"shell_tasks", "python_functions"}


def count(name: str) -> int:
    return 4 if name in SANDBOXED else 25


@pytest.mark.parametrize("name", GENERATORS)
def test_registered_seeded_and_reproducible(name: str) -> None:
    a = crossgym.load_tasks(name, n=count(name), seed=3)
    b = crossgym.load_tasks(name, n=count(name), seed=3)
    c = crossgym.load_tasks(name, n=count(name), seed=4)
    assert len(a) == count(name)
    assert [t.to_dict() for t in a] == [t.to_dict() for t in b]
    assert [t.to_dict() for t in a] != [t.to_dict() for t in c]
    assert len({t.id for t in a}) == len(a)
    for t in a:
        assert Task.from_json(t.to_json()) == t
        assert t.metadata.get("family") == name or name == "sql" and t.metadata["family"] == "sql"
        assert t.prompt[-1].role == "user" and t.prompt[-1].content
        assert t.verifier.name in crossgym.plugins.registry("verifiers")
        assert t.env in crossgym.plugins.registry("environments")


def test_same_tasks_in_a_fresh_process() -> None:
    """Generators depend on nothing process-local (no hash randomisation, no global RNG)."""
    code = ("import crossgym, json; print(json.dumps([t.to_dict() for n in "
            "('arithmetic', 'sql', 'instructions', 'tool_choice') for t in crossgym.load_tasks(n, n=5, seed=9)]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True,
                         env={"PYTHONHASHSEED": "123", "PATH": "/usr/bin:/bin"})
    here = [t.to_dict() for n in ("arithmetic", "sql", "instructions", "tool_choice")
            for t in crossgym.load_tasks(n, n=5, seed=9)]
    assert json.loads(out.stdout) == here


@pytest.mark.parametrize("name, params", [
    ("arithmetic", {"difficulty": 0}), ("arithmetic", {"difficulty": 6}), ("arithmetic", {"n": -1}),
    ("word_problems", {"verifier": "exact_match"}), ("json_extraction", {"verifier": "regex"}),
    ("json_extraction", {"split": "test"}), ("json_extraction", {"ask": "yaml"}),
    ("tool_choice", {"mode": "both"}), ("shell_tasks", {"env": "tool_use"}), ("python_functions", {"visible": 0}),
    ("sql", {"difficulty": 4}), ("instructions", {"difficulty": "hard"}), ("multiple_choice", {"seed": -2}),
    ("json_addition", {"split": "test"}), ("json_addition", {"digits": 3}),
])
def test_bad_params_are_config_errors(name: str, params: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        crossgym.load_tasks(name, **params)


def test_unknown_param_names_the_accepted_ones() -> None:
    with pytest.raises(ConfigError, match="accepted params: n, seed, difficulty"):
        crossgym.load_tasks("arithmetic", level=3)


def _say(text: str) -> Completion:
    return Completion.from_text(text)


def _calls(calls: list[dict[str, Any]]) -> Completion:
    tcs = tuple(ToolCall(id=f"c{i}", name=c["name"], arguments=c["arguments"]) for i, c in enumerate(calls))
    return Completion(messages=(Message(role="assistant", content="", tool_calls=tcs),))


def _break_instructions(t: Task) -> Completion:
    """A response that breaks every constraint of the task (each type has a way to fail here)."""
    excluded = [w for c in t.answer if c["type"] == "keywords_exclude" for w in c["keywords"]]
    short = any(c["type"] == "word_count" and "min" in c for c in t.answer)
    text = "Mixed, Case " + " ".join(excluded)
    if not short:
        text += " " + " ".join(["Words, and more."] * 100)
    return _say(text)


def _num(v: Any) -> str:
    return f"<answer>{v}</answer>"


def _wrong_num(v: Any) -> str:
    return f"<answer>{v + 1}</answer>"


# family -> (params, solve(task) -> Completion, fail(task) -> Completion)
SOLVERS: dict[str, tuple[dict[str, Any], Callable[[Task], Completion], Callable[[Task], Completion]]] = {
    "arithmetic": ({}, lambda t: _say(_num(t.answer)), lambda t: _say(_wrong_num(t.answer))),
    "word_problems": ({}, lambda t: _say("Step by step... " + _num(t.answer)), lambda t: _say(_wrong_num(t.answer))),
    "json_extraction": ({}, lambda t: _say(json.dumps(t.metadata["record"])),
                        lambda t: _say(json.dumps({**t.metadata["record"], "name": "Nobody"}))),
    "multiple_choice": ({}, lambda t: _say(_num(t.answer["answer"])),
                        lambda t: _say(_num("A" if t.answer["answer"] != "A" else "B"))),
    "json_addition": ({}, lambda t: _say(json.dumps({"answer": t.answer})), lambda t: _say("no idea")),
    "instructions": ({}, lambda t: _say(t.metadata["reference"]), _break_instructions),
    "sql": ({}, lambda t: _say(f"```sql\n{t.metadata['reference']}\n```"),
            lambda t: _say("```sql\nSELECT 'nothing'\n```")),
    "tool_choice": ({"mode": "call"}, lambda t: _calls(t.answer),
                    lambda t: _calls([{"name": "add", "arguments": {"a": 1, "b": 2}}])),
    "shell_tasks": ({}, lambda t: _say("```bash\n" + "\n".join(t.metadata["reference"]) + "\n```"),
                    lambda t: _say("```bash\ntrue\n```")),
    "python_functions": ({}, lambda t: _say(f"```python\n{t.metadata['reference']}```"),
                         lambda t: _say(f"```python\ndef {t.metadata['entry_point']}(*a):\n    return None\n```")),
}


@pytest.mark.parametrize("name, difficulty", [(n, d) for n in sorted(SOLVERS) for d in (1, 2, 3)
                                              if not (n == "json_addition" and d == 3)])  # its digits are 1 or 2
def test_reference_solutions_pass_and_wrong_answers_fail(name: str, difficulty: int) -> None:
    params, solve, fail = SOLVERS[name]
    if name == "json_addition":
        params = {"digits": difficulty}
    else:
        params = {**params, "difficulty": difficulty}
    n = 2 if name in SANDBOXED else 12
    for task in crossgym.load_tasks(name, n=n, seed=difficulty, **params):
        v = load_verifier(task.verifier)
        good = v.verify(task, solve(task))
        assert good.passed and good.error is None, (task.id, good)
        bad = v.verify(task, fail(task))
        assert not bad.passed and bad.reward < good.reward, (task.id, bad)


@pytest.mark.parametrize("level", [1, 2, 3, 4, 5])
def test_arithmetic_answers_equal_the_expression(level: int) -> None:
    for t in crossgym.load_tasks("arithmetic", n=100, seed=0, difficulty=level):
        value = eval(t.metadata["expression"], {"__builtins__": {}})  # our own generated arithmetic
        assert abs(value - t.answer) <= 1e-6 * max(1.0, abs(value))


def test_difficulty_makes_arithmetic_longer() -> None:
    lengths = [sum(len(t.metadata["expression"]) for t in crossgym.load_tasks("arithmetic", n=50, difficulty=d))
               for d in (1, 3, 5)]
    assert lengths == sorted(lengths) and lengths[0] < lengths[-1]


def test_json_addition_splits_never_overlap_and_match_the_demo_rules() -> None:
    for digits in (1, 2):
        train = {(t.metadata["a"], t.metadata["b"]) for t in crossgym.load_tasks("json_addition", n=3000, seed=1,
                                                                                   digits=digits)}
        held = crossgym.load_tasks("json_addition", split="heldout", digits=digits)
        held_pairs = {(t.metadata["a"], t.metadata["b"]) for t in held}
        assert not train & held_pairs
        assert len(held) == (36 if digits == 1 else 400) and len(held_pairs) == len(held)
        pool_train, pool_held = split_pairs(digits)
        assert train <= set(pool_train) and held_pairs == set(pool_held)
        assert len(set(pool_train) | set(pool_held)) == (100 if digits == 1 else 1600)
    t = crossgym.load_tasks("json_addition", n=1, seed=0)[0]
    a, b = t.metadata["a"], t.metadata["b"]
    assert t.prompt[0].content == (f'What is {a}+{b}? Reply with only a JSON object of the form {{"answer": <int>}} '
                                   "and nothing else.")
    assert t.answer == a + b and t.verifier.name == "json_answer"
    # heldout ignores seed: the same pool, in the same order
    assert [x.to_dict()["prompt"] for x in crossgym.load_tasks("json_addition", split="heldout", seed=5)] == \
        [x.to_dict()["prompt"] for x in crossgym.load_tasks("json_addition", split="heldout", seed=0)]


def test_json_extraction_splits_share_no_name_or_city_and_pay_fields_right() -> None:
    kw = {"ask": "keys", "reward": "fraction", "allow_surrounding": True}
    train = crossgym.load_tasks("json_extraction", n=400, split="train", **kw)
    held = crossgym.load_tasks("json_extraction", n=30, split="heldout", **kw)
    assert len(train) == 400 and len(held) == 30 and len({t.id for t in train + held}) == 430
    names = lambda ts: {t.answer["name"].split()[0] for t in ts}  # noqa: E731
    cities = lambda ts: {t.answer["city"] for t in ts}  # noqa: E731
    assert not names(train) & names(held) and not cities(train) & cities(held)
    assert names(held) <= {"Greta", "Hiro", "Isla", "Jamal"} and cities(held) <= {"Bergen", "Osaka", "Dundee", "Dakar"}
    t = held[0]
    assert t.prompt[-1].content.endswith('What are the name, age and city of this person? Reply with only a JSON '
                                         'object like {"name": <string>, "age": <integer>, "city": <string>}.')
    assert "Schema" not in t.prompt[-1].content and t.answer["name"] in t.prompt[-1].content
    v = load_verifier(t.verifier.name, **t.verifier.params)
    rec = dict(t.answer)
    assert v.score(t, _say(f"JSON:\n{json.dumps(rec)}")).passed  # text around the object is allowed
    wrong = v.score(t, _say(json.dumps({**rec, "age": rec["age"] + 1})))
    assert not wrong.passed and wrong.reward == pytest.approx(2 / 3)  # the share of fields right, nothing for form
    assert v.score(t, _say(json.dumps({k: "x" for k in rec}))).reward == 0.0
    # the defaults are the schema prompt, all-or-nothing, and no split
    d = crossgym.load_tasks("json_extraction", n=1)[0]
    assert "JSON Schema" in d.prompt[-1].content and d.verifier.params == {"list_order": False}
    with pytest.raises(ConfigError):
        crossgym.load_tasks("json_extraction", ask="keys", difficulty=3)


def test_env_modes_point_at_the_multi_turn_environments() -> None:
    assert {t.env for t in crossgym.load_tasks("tool_choice", n=3)} == {"tool_use"}
    assert {t.env for t in crossgym.load_tasks("shell_tasks", n=3, env="shell")} == {"shell"}
    assert {t.env for t in crossgym.load_tasks("python_functions", n=3, env="code")} == {"code"}
    assert {t.env for t in crossgym.load_tasks("sql", n=3, env="sql")} == {"sql"}
    t = crossgym.load_tasks("tool_choice", n=1, difficulty=1)[0]
    assert len(t.tools) == 3 and t.metadata["toolset"] == "utilities"


def test_python_function_tests_hide_some_and_catch_the_typical_bug() -> None:
    for t in crossgym.load_tasks("python_functions", n=6, seed=2, difficulty=2, visible=2, hidden=4):
        assert t.answer["tests"][:2] == t.metadata["visible_tests"]
        assert len(t.answer["tests"]) == 6
        assert all(vt in t.prompt[0].content for vt in t.metadata["visible_tests"])
        assert not any(h in t.prompt[0].content for h in t.answer["tests"][2:])


def test_cli_tasks_writes_jsonl(tmp_path: Any) -> None:
    out = tmp_path / "t.jsonl"
    proc = subprocess.run([sys.executable, "-m", "crossgym.cli", "tasks", "sql", "--params", '{"difficulty": 2}',
                           "--n", "3", "--seed", "5", "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    rows = [Task.from_json(line) for line in out.read_text().splitlines()]
    assert [r.to_dict() for r in rows] == [t.to_dict() for t in crossgym.load_tasks("sql", n=3, seed=5, difficulty=2)]
    bad = subprocess.run([sys.executable, "-m", "crossgym.cli", "tasks", "arithmetic", "--params",
                          '{"difficulty": 9}'], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "difficulty must be an integer 1..5" in bad.stderr
    assert "Traceback" not in bad.stderr
