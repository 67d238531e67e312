"""shell verifier: the model's commands replayed in a seeded sandbox directory; final state compared."""

from __future__ import annotations

import json

import pytest

from crossgym.api import load_verifier
from crossgym.protocol.errors import VerifierError
from crossgym.protocol.messages import Message, ToolCall
from crossgym.protocol.task import Completion, Task, VerifierSpec
from crossgym.verifiers.base import Malformed
from crossgym.verifiers.shell import Shell, extract_commands

FILES = {"data.txt": "pear\napple\npear\nfig\n", "notes/readme.md": "# notes\n"}


def task(answer: dict, **params: object) -> Task:
    return Task(id="s", prompt="?", answer=answer, verifier=VerifierSpec("shell", dict(params)),
                metadata={"files": FILES})


def bash(script: str) -> Completion:
    return Completion.from_text(f"```bash\n{script}\n```")


def runs(*commands: str) -> Completion:
    msgs = []
    for i, c in enumerate(commands):
        msgs.append(Message(role="assistant", content="", tool_calls=(
            ToolCall(id=f"c{i}", name="run", arguments={"command": c}),)))
        msgs.append(Message(role="tool", content="exit code 0", tool_call_id=f"c{i}", name="run"))
    msgs.append(Message(role="assistant", content="done"))
    return Completion(messages=tuple(msgs))


def verify(answer: dict, completion: Completion, **params: object):
    t = task(answer, **params)
    return load_verifier(t.verifier).verify(t, completion)


UNIQUE = {"files": {"unique.txt": "apple\nfig\npear\n", "data.txt": FILES["data.txt"]}}


def test_examples_behave_as_declared() -> None:
    for ex in Shell.examples():
        assert ex.matches(load_verifier(ex.task.verifier).verify(ex.task, ex.completion)), ex.note


def test_script_and_tool_call_forms() -> None:
    assert verify(UNIQUE, bash("sort -u data.txt > unique.txt")).passed
    assert verify(UNIQUE, runs("cat data.txt", "sort data.txt | uniq > unique.txt")).passed
    hermes = Completion.from_text('<tool_call>{"name": "run", "arguments": {"command": "sort -u data.txt > '
                                  'unique.txt"}}</tool_call>')
    assert verify(UNIQUE, hermes).passed


def test_commands_run_one_by_one_like_the_environment() -> None:
    # the working directory does not carry over between commands, files do
    assert not verify({"files": {"notes/x.txt": "1\n"}}, runs("cd notes", "echo 1 > x.txt")).passed
    assert verify({"files": {"notes/x.txt": "1\n"}}, runs("cd notes && echo 1 > x.txt")).passed
    assert verify({"files": {"b.txt": "1\n"}}, runs("echo 1 > a.txt", "mv a.txt b.txt")).passed


def test_missing_extra_and_deleted_files() -> None:
    ans = {"files": {"data.txt": None, "moved/data.txt": FILES["data.txt"]}}
    assert verify(ans, bash("mkdir moved && mv data.txt moved/")).passed
    keep = verify(ans, bash("mkdir moved && cp data.txt moved/"))
    assert not keep.passed and "data.txt should not exist" in keep.reason
    extra = verify(UNIQUE, bash("sort -u data.txt > unique.txt; touch junk"), forbid_extra=True)
    assert not extra.passed and "junk" in extra.reason
    assert verify(UNIQUE, bash("sort -u data.txt > unique.txt; touch junk")).passed


def test_whitespace_output_and_partial_credit() -> None:
    assert verify(UNIQUE, bash("printf 'apple  \\nfig\\npear' > unique.txt")).passed
    assert not verify(UNIQUE, bash("printf 'apple  \\nfig\\npear' > unique.txt"), strict_whitespace=True).passed
    out = {"output": "3"}
    assert verify(out, bash("sort -u data.txt | wc -l")).passed
    assert not verify(out, bash("wc -l < data.txt")).passed
    half = verify(UNIQUE, bash("rm data.txt; sort -u notes/readme.md > unique.txt"), partial=True)
    assert half.reward == 0.0
    one = verify(UNIQUE, bash("echo x > unique.txt"), partial=True)
    assert one.reward == 0.5 and not one.passed


def test_sandbox_confines_the_commands() -> None:
    """Writes outside the scratch directory fail or stay inside the sandbox; the verdict only sees scratch."""
    v = verify(UNIQUE, bash("echo x > /etc/crossgym-shell-test 2>/dev/null; sort -u data.txt > unique.txt"))
    assert v.passed
    import os

    assert not os.path.exists("/etc/crossgym-shell-test")


def test_timeouts_fail_the_check() -> None:
    v = verify(UNIQUE, bash("sleep 30; sort -u data.txt > unique.txt"), command_timeout=1)
    assert not v.passed and v.error is None


def test_extract_commands() -> None:
    assert extract_commands(runs("a", "b")) == ["a", "b"]
    with pytest.raises(Malformed):
        extract_commands(Completion.from_text("I would sort it."))
    with pytest.raises(Malformed):
        extract_commands(Completion(messages=(Message(role="tool", content="x"),)))
    too_many = runs(*["true"] * 70)
    with pytest.raises(Malformed):
        extract_commands(too_many)


def test_bad_tasks_and_params() -> None:
    assert verify({"nothing": 1}, bash("true")).error_kind == "exception"
    bad = Task(id="s", prompt="?", answer=UNIQUE, verifier=VerifierSpec("shell"), metadata={"files": ["x"]})
    assert load_verifier(bad.verifier).verify(bad, bash("true")).error_kind == "exception"
    assert verify(UNIQUE, Completion.from_text("no commands")).error_kind == "malformed"
    with pytest.raises(VerifierError):
        load_verifier(VerifierSpec("shell", {"command_timeout": -1}))
    json.dumps(verify(UNIQUE, bash("true")).to_dict())


def test_commands_that_use_up_the_verifiers_time_fail() -> None:
    """Thirteen ``sleep 30`` calls ran the replay out of time: an exception verdict, the machine's fault (masked
    under on_error none). Now a failed answer, returned before the deadline."""
    v = verify(UNIQUE, runs(*["sleep 30"] * 4), timeout=4.0, command_timeout=1.5)
    assert v.error is None and v.reward == 0.0 and not v.passed and "ran out of the verifier's time" in v.reason, v
