"""The shell and code environments: sandboxed multi-turn episodes scored by replay / all tests."""

from __future__ import annotations

import pytest

import crossgym
from crossgym.environments.code import CodeEnv
from crossgym.environments.shell import ShellEnv, format_output
from crossgym.protocol.errors import ConfigError
from crossgym.protocol.messages import Message, ToolCall
from crossgym.protocol.task import Task, VerifierSpec


def run(command: str, call_id: str = "c") -> Message:
    return Message(role="assistant", content="", tool_calls=(ToolCall(id=call_id, name="run",
                                                                      arguments={"command": command}),))


def say(text: str) -> Message:
    return Message(role="assistant", content=text)


@pytest.fixture
def shell_task() -> Task:
    return crossgym.load_tasks("shell_tasks", n=1, seed=3, difficulty=2, env="shell")[0]


def test_shell_episode_sees_output_and_files_persist(shell_task: Task) -> None:
    env = ShellEnv()
    obs = env.reset(shell_task)
    assert [t.name for t in obs.tools] == ["run"]
    assert obs.tools[0].parameters["required"] == ["command"]
    listing = env.step(run("ls")).messages[0].content
    assert listing.startswith("exit code 0\n")
    for name in shell_task.metadata["files"]:
        assert name in listing
    env.step(run("echo hello > note.txt"))
    assert env.step(run("cat note.txt")).messages[0].content == "exit code 0\nhello\n"
    failed = env.step(run("cat missing.txt")).messages[0].content
    assert failed.startswith("exit code 1") and "No such file" in failed
    for cmd in shell_task.metadata["reference"]:
        env.step(run(cmd))
    assert env.step(say("Done")).done
    assert env.verdict().passed
    env.close()


def test_shell_errors_are_tool_messages(shell_task: Task) -> None:
    env = ShellEnv(command_timeout=1)
    env.reset(shell_task)
    assert "timed out after 1 s" in env.step(run("sleep 5")).messages[0].content
    assert "the only tool is run" in env.step(Message(role="assistant", content="", tool_calls=(
        ToolCall(id="x", name="python", arguments={"code": "1"}),))).messages[0].content
    assert "non-empty 'command'" in env.step(run("  ")).messages[0].content
    assert "could not read" in env.step(say("<tool_call>{oops</tool_call>")).messages[0].content
    env.close()


def test_shell_episodes_are_isolated(shell_task: Task) -> None:
    a, b = ShellEnv(), ShellEnv()
    a.reset(shell_task)
    b.reset(shell_task)
    a.step(run("echo a > mine.txt"))
    assert "No such file" in b.step(run("cat mine.txt")).messages[0].content
    a.close()
    b.close()


def test_shell_needs_files_mapping() -> None:
    t = Task(id="x", prompt="q", answer={"files": {}}, verifier=VerifierSpec("shell"), env="shell",
             metadata={"files": ["a"]})
    with pytest.raises(ConfigError, match="metadata\\['files'\\]"):
        ShellEnv().reset(t)


def test_format_output_caps_long_output() -> None:
    text = format_output(0, "x" * 10_000, "", False, 5)
    assert len(text) < 4200 and "more characters" in text
    assert format_output(2, "", "bad\n", False, 5) == "exit code 2\nbad\n"


@pytest.fixture
def code_task() -> Task:
    return crossgym.load_tasks("python_functions", n=1, seed=8, difficulty=2, env="code", max_turns=4)[0]


def test_code_episode_feedback_then_fix(code_task: Task) -> None:
    env = CodeEnv()
    obs = env.reset(code_task)
    assert env.max_turns == 4 and obs.tools[0].name == "run_tests"
    first = env.step(say(f"```python\n{code_task.metadata['buggy']}```"))
    assert not first.done and first.messages[0].role == "user"
    assert "FAILED assert" in first.messages[0].content and first.info["visible_passed"] < first.info["visible_total"]
    broken = env.step(say("```python\ndef oops(:\n```"))
    assert not broken.done and "tests pass" in broken.messages[0].content
    fixed = env.step(say(f"```python\n{code_task.metadata['reference']}```"))
    assert fixed.done and fixed.messages == ()
    assert env.verdict().reward == 1.0
    env.close()


def test_code_episode_via_tool_call_and_giving_up(code_task: Task) -> None:
    env = CodeEnv()
    env.reset(code_task)
    res = env.step(Message(role="assistant", content="", tool_calls=(
        ToolCall(id="t1", name="run_tests", arguments={"code": code_task.metadata["buggy"]}),)))
    assert res.messages[0].role == "tool" and res.messages[0].tool_call_id == "t1"
    assert env.step(say("I give up.")).done
    assert 0.0 < env.verdict().reward < 1.0  # the buggy code from the tool call is what gets scored


def test_code_hidden_tests_count(code_task: Task) -> None:
    """Passing the visible tests by hard-coding them ends the episode but does not earn full reward."""
    entry = code_task.metadata["entry_point"]
    table = {}
    for t in code_task.metadata["visible_tests"]:
        call, expected = t[len("assert "):].rsplit(" == ", 1)
        table[call] = expected
    body = "\n".join(f"    if {call!r} == _k(*args):\n        return {exp}" for call, exp in table.items())
    cheat = (f"def _k(*args):\n    return '{entry}(' + ', '.join(repr(a) for a in args) + ')'\n"
             f"def {entry}(*args):\n{body}\n    return None\n")
    env = CodeEnv()
    env.reset(code_task)
    assert env.step(say(f"```python\n{cheat}```")).done
    v = env.verdict()
    assert not v.passed and v.reward < 1.0


def test_code_needs_visible_tests() -> None:
    t = Task(id="x", prompt="q", answer={"tests": "x"}, verifier=VerifierSpec("code_tests"), env="code")
    with pytest.raises(ConfigError, match="visible_tests"):
        CodeEnv().reset(t)


def test_a_turn_runs_at_most_the_cap_of_tool_calls(shell_task: Task) -> None:
    """Every call ran, one after another: 20 `sleep 60` calls held one step 103 s. The first MAX_CALLS_PER_TURN run,
    and one reply says how many more did not."""
    from crossgym.environments.base import MAX_CALLS_PER_TURN

    env = ShellEnv()
    env.reset(shell_task)
    many = Message(role="assistant", content="", tool_calls=tuple(
        ToolCall(id=f"c{i}", name="run", arguments={"command": f"echo {i} >> ran.txt"}) for i in range(40)))
    out = env.step(many).messages
    assert len(out) == MAX_CALLS_PER_TURN + 1 and out[-1].content.endswith("the 24 after them were not run")
    assert env.step(run("wc -l < ran.txt")).messages[0].content == f"exit code 0\n{MAX_CALLS_PER_TURN}\n"
    env.close()


def test_shell_replay_skips_calls_past_the_per_turn_cap(shell_task: Task) -> None:
    """Calls past MAX_CALLS_PER_TURN are answered "not run" in the episode; the replay must not run them either."""
    from crossgym.environments.base import MAX_CALLS_PER_TURN
    from crossgym.rollout.driver import Episode

    def episode(calls: list[str]) -> float:
        ep = Episode.open(shell_task, "shell", seed=0)
        ep.take(Message(role="assistant", content="", tool_calls=tuple(
            ToolCall(id=f"c{i}", name="run", arguments={"command": c}) for i, c in enumerate(calls))))
        ep.take(say("Done"))
        reward = ep.verdict(crossgym.load_verifier(shell_task.verifier)).reward
        ep.close()
        return reward

    reference = list(shell_task.metadata["reference"])
    assert episode(reference) == 1.0
    assert episode(["true"] * MAX_CALLS_PER_TURN + reference) == 0.0  # it was 1.0: replayed, never run
