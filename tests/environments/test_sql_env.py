"""The sql environment: read-only exploration tools, submit or a ```sql reply, scored on a fresh database."""

from __future__ import annotations

import pytest

from crossgym.environments.sources.sql_tasks import sql
from crossgym.environments.sql import SqlEnv
from crossgym.protocol.errors import ConfigError
from crossgym.protocol.messages import Message, ToolCall
from crossgym.protocol.task import Task, VerifierSpec


def call(name: str, **args: object) -> Message:
    return Message(role="assistant", content="", tool_calls=(ToolCall(id="c", name=name, arguments=dict(args)),))


@pytest.fixture
def task() -> Task:
    return next(iter(sql(n=1, seed=7, difficulty=2, env="sql")))


def test_exploration_tools(task: Task) -> None:
    env = SqlEnv(row_limit=3)
    obs = env.reset(task)
    assert [t.name for t in obs.tools] == ["list_tables", "describe", "query", "submit"]
    assert env.step(call("list_tables")).messages[0].content == "departments, employees, orders"
    desc = env.step(call("describe", table="orders")).messages[0].content
    assert "unit_price INTEGER" in desc
    rows = env.step(call("query", sql="SELECT id, name FROM employees ORDER BY id")).messages[0].content
    lines = rows.splitlines()
    assert lines[0] == "id | name" and lines[-1].startswith("... (") and len(lines) == 5
    assert "no table named" in env.step(call("describe", table="nope")).messages[0].content
    assert "not a table name" in env.step(call("describe", table="x; DROP TABLE t")).messages[0].content


def test_writes_and_attach_are_refused_and_change_nothing(task: Task) -> None:
    env = SqlEnv(max_turns=10)
    env.reset(task)
    for bad in ("DELETE FROM employees", "DROP TABLE orders", "ATTACH DATABASE 'x.db' AS x",
                "UPDATE employees SET salary = 0", "PRAGMA query_only = 0", "SELECT 1; DELETE FROM orders"):
        out = env.step(call("query", sql=bad)).messages[0].content
        assert out.startswith("Error"), (bad, out)
    count = env.step(call("query", sql="SELECT COUNT(*) FROM employees")).messages[0].content
    assert int(count.splitlines()[1]) > 0


def test_submit_ends_and_scores(task: Task) -> None:
    env = SqlEnv()
    env.reset(task)
    result = env.step(call("submit", query=task.metadata["reference"]))
    assert result.done and result.info["final"] == "submit"
    assert env.verdict().reward == 1.0


def test_plain_sql_reply_ends_and_scores(task: Task) -> None:
    env = SqlEnv()
    env.reset(task)
    assert env.step(Message(role="assistant", content="```sql\nSELECT 1\n```")).done
    assert env.verdict().reward == 0.0 and env.verdict().error is None


def test_slow_exploration_query_times_out_as_a_tool_error(task: Task) -> None:
    env = SqlEnv(query_timeout=0.2)
    env.reset(task)
    out = env.step(call("query", sql="WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM c) "
                                     "SELECT COUNT(*) FROM c")).messages[0].content
    assert "ran over" in out


def test_missing_database_is_a_config_error() -> None:
    t = Task(id="x", prompt="q", answer=[], verifier=VerifierSpec("sql"), env="sql")
    with pytest.raises(ConfigError, match="metadata\\['database'\\]"):
        SqlEnv().reset(t)


def test_an_exploration_query_that_outlives_sqlites_checks_ends_on_time(task: Task) -> None:
    """The query tool ran the model's SQL in the rollout's thread: 100 LIKEs over one 1 MB row (no jump between
    them, so SQLite never read its interrupt flag) held the episode ~9 s against a 0.3 s query_timeout. It runs in
    the worker pool now, killed past the timeout: a tool error on time, and the episode goes on."""
    import time

    many_likes = ("WITH x(s) AS (SELECT printf('%.*c', 999999, 'a')) SELECT "
                  + " + ".join("(s LIKE '%" + "a" * 98 + "b')" for _ in range(100)) + " FROM x")
    env = SqlEnv(query_timeout=0.3)
    env.reset(task)
    assert "| " in env.step(call("query", sql="SELECT id, name FROM employees")).messages[0].content  # (pool warm)
    t0 = time.monotonic()
    step = env.step(call("query", sql=many_likes))
    took = time.monotonic() - t0
    assert took < 0.3 + 1.0 + 1.0, took
    assert "ran over" in step.messages[0].content and not step.done
    assert "unit_price" in env.step(call("describe", table="orders")).messages[0].content


def _play(task: Task, action: Message) -> tuple[bool, float, str]:
    """(done, reward, reason) of a one-turn episode through the driver."""
    from crossgym.api import load_verifier
    from crossgym.rollout.driver import Episode

    ep = Episode.open(task, "sql", seed=0, max_turns=1)
    ep.take(action)
    verdict = ep.verdict(load_verifier(task.verifier))
    ep.close()
    return ep.done, verdict.reward, verdict.reason


def test_the_verifier_scores_the_submit_the_environment_took(task: Task) -> None:
    """The first submit ends the episode; a later one, or one past the per-turn cap, was never taken."""
    from crossgym.environments.base import MAX_CALLS_PER_TURN

    right, wrong = task.answer["query"], "SELECT 1"

    def many(*calls: ToolCall) -> Message:
        return Message(role="assistant", content="", tool_calls=calls)

    sub = lambda q: ToolCall(id="s", name="submit", arguments={"query": q})  # noqa: E731
    assert _play(task, many(sub(right)))[1] == 1.0
    assert _play(task, many(sub(wrong), sub(right)))[1] == 0.0  # it was scored 1.0: the last submit
    padded = many(*[ToolCall(id=f"l{i}", name="list_tables", arguments={}) for i in range(MAX_CALLS_PER_TURN)],
                  sub(right))
    assert _play(task, padded)[1] == 0.0  # the submit was answered "not run"; it was scored 1.0
    block = Message(role="assistant", content=f"```sql\n{right}\n```",
                    tool_calls=(ToolCall(id="l", name="list_tables", arguments={}),))
    assert _play(task, block)[1] == 0.0  # a final message of other calls submits nothing, as in Hermes text
