"""sql: explore an SQLite database with read-only tools, then answer with one query.

Tools: ``list_tables()``, ``describe(table)``, ``query(sql)`` (first rows of a read-only query, run in the verifier
worker pool so that its deadline holds: ``sql.execute_bounded``) and
``submit(query)`` (the final answer; ends the episode). A plain-text reply with a ```sql block also ends the episode
with that query as the answer. The database is ``task.metadata["database"]`` (a SQL script); the ``sql`` verifier
scores the submitted query on a fresh copy, so the episode's reward never depends on what exploration did.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from crossgym.environments.base import BaseEnvironment, Reply, read_tool_calls, tool_message, within_the_cap
from crossgym.environments.tools import Tool
from crossgym.protocol.episode import Observation
from crossgym.protocol.errors import ConfigError
from crossgym.protocol.messages import Message
from crossgym.protocol.task import Task
from crossgym.verifiers.sql import QueryError, execute_bounded, open_readonly, run_query


def format_rows(cols: list[str], rows: list[tuple[Any, ...]], limit: int) -> str:
    """A small pipe-separated table of the first ``limit`` rows."""
    lines = [" | ".join(cols)] if cols else []
    for r in rows[:limit]:
        lines.append(" | ".join("NULL" if v is None else str(v) for v in r))
    more = len(rows) - limit
    if more > 0:
        lines.append(f"... ({more} more rows)")
    if not rows:
        lines.append("(no rows)")
    return "\n".join(lines)


class SqlEnv(BaseEnvironment):
    """Multi-turn SQL: explore, then ``submit(query)``. ``row_limit`` caps rows shown per exploration query."""

    name = "sql"
    default_max_turns = 8

    def __init__(self, *, max_turns: int | None = None, row_limit: int = 20, query_timeout: float = 2.0) -> None:
        super().__init__(max_turns=max_turns)
        self.row_limit = int(row_limit)
        self.query_timeout = float(query_timeout)
        self.conn: sqlite3.Connection | None = None
        self.script: str | None = None
        self.tools = {t.name: t for t in (Tool.from_callable(f) for f in (
            self.list_tables, self.describe, self.query, self.submit))}

    # ------------------------------------------------------------------ tools (their docstrings are the specs)
    def list_tables(self) -> str:
        """List the tables in the database."""
        cols, rows = self._run("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        return ", ".join(str(r[0]) for r in rows) or "(no tables)"

    def describe(self, table: str) -> str:
        """Show a table's columns and types.

        Args:
            table: The table name.
        """
        if not table.replace("_", "").isalnum():
            raise ValueError(f"not a table name: {table!r}")
        cols, rows = self._run(f"PRAGMA table_info({table})")
        if not rows:
            raise ValueError(f"no table named {table!r}")
        return "\n".join(f"{r[1]} {r[2]}" for r in rows)

    def query(self, sql: str) -> str:
        """Run a read-only SQL query and show the first rows of its result.

        Args:
            sql: One SQLite SELECT statement.
        """
        assert self.script is not None
        try:  # the model's SQL: in the worker pool, whose deadline holds (see SQL.isolation)
            cols, rows = execute_bounded(self.script, sql, timeout=self.query_timeout, max_rows=1000)
        except QueryError as exc:
            raise ValueError(str(exc)) from None
        return format_rows(cols, rows, self.row_limit)

    def submit(self, query: str) -> str:
        """Submit your final answer: the one SQL query that answers the question. Ends the episode.

        Args:
            query: The SQLite query.
        """
        return "submitted"

    def _run(self, sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
        """One of the environment's own queries (bounded: the table list, a table's columns) on its connection."""
        assert self.conn is not None
        try:
            return run_query(self.conn, sql, timeout=self.query_timeout, max_rows=1000)
        except QueryError as exc:
            raise ValueError(str(exc)) from None

    # ------------------------------------------------------------------ the episode
    def start(self, task: Task) -> Observation:
        script = task.metadata.get("database")
        if not isinstance(script, str) or not script.strip():
            raise ConfigError(f"task {task.id!r}: the sql environment needs metadata['database'] (a SQL script)",
                              fix="generate tasks with the 'sql' source or add the CREATE/INSERT script")
        self.conn, self.script = open_readonly(script), script
        return Observation(messages=task.prompt, tools=tuple(t.spec for t in self.tools.values()))

    def respond(self, action: Message) -> Reply:
        calls, error = read_tool_calls(action, [t.spec for t in self.tools.values()])
        if error is not None:
            return Reply(messages=[tool_message(None, f"Error: could not read the tool call: {error}")],
                         info={"malformed_call": error})
        if not calls:
            return Reply(done=True, info={"final": "text"})
        calls, left_out = within_the_cap(calls)
        out = []
        for call in calls:
            tool = self.tools.get(call.name)
            if tool is None:
                out.append(tool_message(call, f"Error: unknown tool {call.name!r}; available: "
                                              f"{', '.join(self.tools)}"))
                continue
            out.append(tool_message(call, tool.call(call.arguments)))
            if call.name == "submit" and not out[-1].content.startswith("Error"):
                return Reply(messages=out, done=True, info={"final": "submit"})
        return Reply(messages=[*out, *left_out])

    def release(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None
