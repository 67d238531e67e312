"""PrimeIntellect verifiers (0.4.0, v1) <-> crossgym: the same completions get the same rewards on both sides.

Every verifiers-side score here is computed by verifiers' own ``Task.score`` on a ``vf.Trace`` that the test builds
from verifiers' own classes; every crossgym-side score by ``load_verifier(spec).verify``.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("verifiers.v1", reason="needs PyPI verifiers==0.4.0 (pip install 'crossgym[interop]')")

import verifiers.v1 as vf  # noqa: E402
from verifiers.v1.agent import Segment  # noqa: E402
from verifiers.v1.graph import MessageNode  # noqa: E402
from verifiers.v1.trace import AgentInfo, Trace, TraceTask  # noqa: E402

import crossgym  # noqa: E402
from crossgym.environments.cases import sql_case, tool_use_case  # noqa: E402
from crossgym.environments.conformance import run_episode  # noqa: E402
from crossgym.interop import prime_export  # noqa: E402
from crossgym.interop.prime_export import MODULE, CrossgymEnv, drive, load_environment  # noqa: E402
from crossgym.protocol.messages import Message, ToolCall  # noqa: E402
from crossgym.protocol.task import Completion, Task, VerifierSpec  # noqa: E402
from crossgym.verifiers.selfcheck import check_verifier  # noqa: E402

# a verifiers-native environment package (what `vf.load_taskset` imports by id)
ENVS = str(Path(__file__).parent / "prime_envs")
sys.path.insert(0, ENVS)
NATIVE = "crossgym-test-boxed-math"


@pytest.fixture(scope="module", autouse=True)
def _workers_see_the_test_env():
    """prime_rubric scores in the verifier worker pool, whose processes take sys.path when the pool starts: start a
    fresh pool after the path is in (an earlier test may have started one without it), and drop it afterwards."""
    from crossgym.verifiers.pool import shutdown_pool

    shutdown_pool()
    yield
    shutdown_pool()
    if ENVS in sys.path:
        sys.path.remove(ENVS)


def vf_message(m: Message):  # written here with verifiers' classes, independently of the bridge's converter
    if m.role == "system":
        return vf.SystemMessage(content=m.content)
    if m.role == "user":
        return vf.UserMessage(content=m.content)
    if m.role == "tool":
        return vf.ToolMessage(tool_call_id=m.tool_call_id or "", content=m.content, name=m.name)
    calls = [vf.ToolCall(id=c.id, name=c.name, arguments=json.dumps(c.arguments)) for c in m.tool_calls]
    return vf.AssistantMessage(content=m.content, tool_calls=calls or None)


def vf_score(vf_task, prompt, completion: Completion, info: dict | None = None) -> Trace:
    """verifiers' own scoring of one conversation (prompt as context, completion turns sampled)."""
    msgs = [*prompt, *completion.messages]
    nodes = [MessageNode(message=vf_message(m), parent=i - 1 if i else None,
                         sampled=i >= len(prompt) and m.role == "assistant") for i, m in enumerate(msgs)]
    trace = Trace(task=TraceTask(type=type(vf_task).__name__, data=vf_task.data), nodes=nodes,
                  agent=AgentInfo(config=vf.AgentConfig()), info=dict(info or {}))
    asyncio.run(vf_task.score(trace))
    return trace


def native_vf_tasks(n: int = 3) -> list:
    ts = vf.load_taskset(vf.taskset_config_type(NATIVE).model_validate({"id": NATIVE, "n": n}))
    return list(ts)


# ------------------------------------------------------------------------------ a verifiers env in crossgym
def test_native_taskset_loads_as_crossgym_tasks() -> None:
    tasks = crossgym.load_tasks("prime_verifiers", taskset=NATIVE, config={"n": 3})
    assert [t.id for t in tasks] == ["sum-0", "sum-1", "sum-2"]
    t = tasks[1]
    assert [m.role for m in t.prompt] == ["system", "user"] and t.prompt[1].content == "What is 1 + 3?"
    assert t.answer == "4" and t.verifier == VerifierSpec("prime_rubric", {"taskset": NATIVE, "threshold": 1.0})
    assert Task.from_json(t.to_json()) == t
    assert crossgym.load_tasks("prime_verifiers", taskset=NATIVE, config={"n": 5}, n=2)[-1].id == "sum-1"


REPLIES = ["\\boxed{4}", "The sum is \\boxed{4}.", "\\boxed{5}", "4", "<think>1+3</think> so \\boxed{4}",
           "Let me explain at length why one plus three equals \\boxed{4} here.", ""]


@pytest.mark.parametrize("reply", REPLIES)
def test_prime_rubric_reward_equals_verifiers_score(reply: str) -> None:
    task = crossgym.load_tasks("prime_verifiers", taskset=NATIVE, config={"n": 3})[1]
    completion = Completion.from_text(reply)
    verdict = crossgym.verify(task, completion)
    trace = vf_score(native_vf_tasks()[1], task.prompt, completion)
    assert verdict.error is None
    assert verdict.reward == trace.reward
    assert verdict.components == {k: r.value for k, r in trace.rewards.items()}
    assert verdict.passed == (trace.reward >= 1.0)


def test_prime_rubric_multi_turn_with_tool_messages() -> None:
    """A tool call and its result inside the completion reach verifiers' rewards as vf tool messages."""
    task = crossgym.load_tasks("prime_verifiers", taskset=NATIVE, config={"n": 3})[2]
    completion = Completion(messages=(
        Message(role="assistant", content="", tool_calls=(ToolCall(id="c1", name="add", arguments={"a": 2, "b": 4}),)),
        Message(role="tool", content="6", tool_call_id="c1", name="add"),
        Message(role="assistant", content="\\boxed{6}"),
    ))
    verdict = crossgym.verify(task, completion)
    trace = vf_score(native_vf_tasks()[2], task.prompt, completion)
    assert verdict.reward == trace.reward and verdict.components["used_calculator"] == 0.1
    assert trace.rewards["correct"].score == 1.0


def test_task_config_reaches_the_rubric() -> None:
    """verifiers' run-time task knobs (here a plugged weight on the `correct` reward) travel in the verifier spec."""
    config = {"n": 2, "task": {"rewards": {"correct": {"weight": 2.0}}}}
    task = crossgym.load_tasks("prime_verifiers", taskset=NATIVE, config=config)[1]
    assert task.verifier.params["task_config"] == {"rewards": {"correct": {"weight": 2.0}}}
    ts = vf.load_taskset(vf.taskset_config_type(NATIVE).model_validate({"id": NATIVE, **config}))
    completion = Completion.from_text("\\boxed{4}")
    trace = vf_score(list(ts)[1], task.prompt, completion)
    verdict = crossgym.verify(task, completion)
    assert verdict.components["correct"] == 2.0 and verdict.reward == trace.reward == 2.0 + 0.25 + 0.5 + 0.5


def test_prime_rubric_never_raises_on_bad_input() -> None:
    task = crossgym.load_tasks("prime_verifiers", taskset=NATIVE, config={"n": 1})[0]
    only_user = Completion(messages=(Message(role="user", content="\\boxed{2}"),))
    assert crossgym.verify(task, only_user).error == "malformed: no assistant message"
    stripped = Task(id="x", prompt="hi", answer="2", verifier=task.verifier)
    assert crossgym.verify(stripped, "\\boxed{2}").error.startswith("exception: bad task")


def test_prime_rubric_selfcheck() -> None:
    row = check_verifier("prime_rubric")
    assert row["ok"], row


# ------------------------------------------------------------------------------ crossgym tasks as a verifiers env
def _example_tasks() -> list[tuple[Task, Completion]]:
    out = []
    for name in ("math", "numeric", "exact_match", "json_match", "json_schema", "tool_call"):
        for i, ex in enumerate(crossgym.load_verifier(name).examples()):
            task = Task.from_dict({**ex.task.to_dict(), "id": f"{name}-{i}"})
            out.append((task, ex.completion))
    return out


EXAMPLES = _example_tasks()


def test_exported_rewards_equal_crossgym_verdicts_both_ways() -> None:
    """Each verifier's own examples: crossgym Verdict.reward == verifiers' score of the exported task, and the
    exported taskset loaded back through prime_verifiers scores the same again (prime_rubric)."""
    tasks = [t for t, _ in EXAMPLES]
    config = {"tasks": [t.to_dict() for t in tasks]}
    ts = vf.load_taskset(vf.taskset_config_type(MODULE).model_validate({"id": MODULE, **config}))
    vf_tasks = {vt.data.id: vt for vt in ts}
    back = {t.id: t for t in crossgym.load_tasks("prime_verifiers", taskset=MODULE, config=config)}
    assert len(vf_tasks) == len(back) == len(tasks) >= 18
    seen = set()
    for task, completion in EXAMPLES:
        verdict = crossgym.verify(task, completion)
        trace = vf_score(vf_tasks[task.id], task.prompt, completion)
        assert trace.rewards["crossgym"].score == verdict.reward, (task.id, verdict)
        assert trace.info["crossgym_verdict"] == verdict.to_dict()
        again = crossgym.verify(back[task.id], completion)
        assert again.reward == verdict.reward and again.components == {"crossgym": verdict.reward}, task.id
        seen.add(verdict.reward)
    assert {0.0, 1.0} <= seen


def test_exported_task_data_keeps_the_prompt() -> None:
    task, _ = EXAMPLES[0]
    data = prime_export.vf_data(Task.from_dict({**task.to_dict(), "prompt": [
        {"role": "system", "content": "sys"}, {"role": "user", "content": "q"}]}))
    assert data.system_prompt == "sys" and data.prompt_text == "q" and Task.from_dict(data.task).id == task.id


def _scripted_turn(actions: list[Message]):
    """A model that replies with the scripted actions, one per verifiers turn (verifiers' own Segment type)."""
    replies = iter(actions)
    sent: list[str | None] = []

    async def turn(text: str | None) -> Segment:
        sent.append(text)
        nxt = next(replies, None)
        if nxt is None:
            return Segment(messages=[], terminated=True)
        return Segment(messages=[vf_message(nxt)])

    return turn, sent


@pytest.mark.parametrize("make_case", [tool_use_case, sql_case], ids=["tool_use", "sql"])
def test_multi_turn_export_matches_the_crossgym_episode(make_case) -> None:
    """A multi-turn crossgym environment driven through verifiers turns: the same transcript as a crossgym episode,
    and verifiers' score of it equals the crossgym Verdict, for the correct and the wrong script."""
    case = make_case()
    exported = prime_export.CrossgymTask(prime_export.vf_data(case.task))
    rewards = []
    for actions in (case.correct, case.wrong):
        ep = run_episode(case.make_env(), case.task, actions, seed=None)
        turn, sent = _scripted_turn(list(actions))
        completion = asyncio.run(drive(case.make_env(), case.task, turn))
        assert completion == ep.completion
        assert sent[0] is None and len(sent) == len(actions)  # the prompted opening, then one turn per step
        trace = vf_score(exported, case.task.prompt, Completion.from_text("(ignored)"),
                         info={prime_export.INFO_KEY: completion.to_dict()})
        assert trace.rewards["crossgym"].score == ep.verdict.reward
        rewards.append(ep.verdict.reward)
    assert rewards == [case.correct_reward, case.wrong_reward]


def test_render_turn_labels_tool_results() -> None:
    text = prime_export.render_turn((Message(role="tool", content="42", name="add", tool_call_id="c"),
                                     Message(role="user", content="go on")))
    assert text == "[tool add]\n42\n\ngo on"


def test_load_environment_for_prime_rl() -> None:
    env = load_environment("arithmetic", {"n": 2, "seed": 3})
    assert isinstance(env, CrossgymEnv) and isinstance(env, vf.Env)
    assert [t.data.id for t in env.taskset] == [t.id for t in crossgym.load_tasks("arithmetic", n=2, seed=3)]
    same = vf.load_environment(vf.resolve_env_config({"taskset": {"id": MODULE, "source": "arithmetic",
                                                                  "params": {"n": 2, "seed": 3}}}))
    assert type(same) is CrossgymEnv
    with pytest.raises(ValueError, match="names no tasks"):
        list(load_environment().taskset)


def test_import_crossgym_does_not_import_verifiers() -> None:
    code = ("import sys, crossgym; from crossgym.plugins import registry; registry('verifiers').names(); "
            "print(any(m == 'verifiers' or m.startswith(('verifiers.', 'crossgym.interop')) for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "False", out.stderr


def test_an_unreadable_tool_call_crosses_to_verifiers_unreadable() -> None:
    # written as json.dumps(call.arguments), a malformed call reached verifiers as a readable call with {} arguments
    from crossgym.interop.prime_verifiers import from_vf_message, to_vf_message

    msg = Message.from_dict({"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "ping", "arguments": "{bad"}}]})
    vf_msg = to_vf_message(msg)
    assert vf_msg.tool_calls[0].arguments == "{bad"
    (back,) = from_vf_message(vf_msg).tool_calls
    assert back.error is not None and back.arguments == {} and back.raw_arguments == "{bad"
    good = to_vf_message(Message(role="assistant", tool_calls=(ToolCall("c1", "ping", {"n": 1}),)))
    assert json.loads(good.tool_calls[0].arguments) == {"n": 1}
