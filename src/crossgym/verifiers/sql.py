"""sql: run the model's query against an SQLite database built from the task and compare result sets.

The database is the SQL script in ``task.metadata["database"]`` (CREATE/INSERT statements). ``answer`` is the
expected result: ``{"rows": [[...], ...]}`` (or a bare list of rows), or ``{"query": "SELECT ..."}`` whose result
on the same database is the reference (``rows`` wins when both are given). The model's query is the ``query``/``sql`` argument of its last ``submit``
tool call, else the last ```sql block of its final message, else that message when it is one SELECT/WITH statement.
It runs read-only (query_only, an authorizer that allows reads only, one statement, length limits) under a deadline
enforced by SQLite's progress handler, in crossgym's worker-process pool (isolation "process": see ``SQL``), which
kills a query that outlives the verifier's timeout between SQLite's own checks. Rows compare as multisets unless
``order_matters``; floats compare to ``float_digits`` places (exactly under ``like``); column names are
ignored unless ``check_columns``; ``like`` selects BIRD's or Spider's own comparison.
"""

from __future__ import annotations

import hashlib
import math
import re
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

from crossgym.protocol.errors import VerifierError
from crossgym.protocol.messages import Message
from crossgym.protocol.task import Completion, Example, Task, Verdict
from crossgym.text import extract_fenced
from crossgym.verifiers.base import BadTask, BaseVerifier, Malformed, clip, time_left

#: tool names whose ``query`` argument is a final answer
SUBMIT_TOOLS = ("submit", "submit_query", "answer", "final_answer")
_STATEMENT = re.compile(r"^\s*(select|with|values)\b", re.I)


class QueryError(Exception):
    """The query could not run (syntax, not read-only, too slow, too big)."""


# ------------------------------------------------------------------ databases
_DB_CACHE: dict[str, bytes] = {}
_DB_LOCK = threading.Lock()
_DB_CACHE_MAX = 512


def build_database(script: str) -> bytes:
    """The serialized SQLite database a setup script builds (cached by the script's hash)."""
    key = hashlib.sha256(script.encode("utf-8")).hexdigest()
    with _DB_LOCK:
        data = _DB_CACHE.get(key)
    if data is not None:
        return data
    conn = sqlite3.connect(":memory:")
    try:
        conn.executescript(script)
        conn.commit()
        data = conn.serialize()
    finally:
        conn.close()
    with _DB_LOCK:
        if len(_DB_CACHE) >= _DB_CACHE_MAX:
            _DB_CACHE.clear()
        _DB_CACHE[key] = data
    return data


_READ_ACTIONS = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION}
_RECURSIVE = getattr(sqlite3, "SQLITE_RECURSIVE", 33)
#: schema-reading pragmas allowed without an argument (``PRAGMA table_info(t)`` passes the table as arg2)
_READ_PRAGMAS = {"table_info", "table_xinfo", "index_list", "index_info", "index_xinfo", "foreign_key_list",
                 "table_list"}
_DENIED_FUNCTIONS = {"load_extension"}


def _authorizer(action: int, arg1: Any, arg2: Any, db: Any, source: Any) -> int:
    if action == sqlite3.SQLITE_FUNCTION:
        return sqlite3.SQLITE_DENY if str(arg2).lower() in _DENIED_FUNCTIONS else sqlite3.SQLITE_OK
    if action in _READ_ACTIONS or action == _RECURSIVE:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_PRAGMA and str(arg1).lower() in _READ_PRAGMAS:
        return sqlite3.SQLITE_OK
    return sqlite3.SQLITE_DENY


def open_readonly(script: str, *, max_length: int = 1_000_000, temp_in_memory: bool = False) -> sqlite3.Connection:
    """A private, read-only in-memory copy of the database the script builds. ``temp_in_memory``: the query's
    scratch B-trees (DISTINCT, GROUP BY, a recursive CTE's queue) in memory, not temp files: for a pool worker,
    whose memory budget bounds them where nothing bounded the files (``SELECT count(DISTINCT zeroblob(900000)||x)``
    over a counting CTE wrote 1.2 GB to /var/tmp in 8 s)."""
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    conn.deserialize(build_database(script))
    if temp_in_memory:
        conn.execute("PRAGMA temp_store = MEMORY")
    conn.execute("PRAGMA query_only = ON")
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, max_length)
    conn.setlimit(sqlite3.SQLITE_LIMIT_SQL_LENGTH, 100_000)
    conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
    conn.setlimit(sqlite3.SQLITE_LIMIT_EXPR_DEPTH, 200)
    conn.setlimit(sqlite3.SQLITE_LIMIT_COLUMN, MAX_COLUMNS)  # (a row is at most this many values of max_length)
    conn.set_authorizer(_authorizer)
    return conn


#: the most bytes of values a query's result may hold (its text and blobs; 8 a number): past it, an error
MAX_RESULT_BYTES = 64 * 2**20
#: the most columns a result (or a table read) may have
MAX_COLUMNS = 128


#: the longest string or blob a query may make, and the longest LIKE/GLOB pattern: one LIKE costs the string's length
#: times the pattern's, in one VM instruction (a 87-character query ran 14.7 s past its 5 s timeout)
MAX_VALUE_BYTES, MAX_PATTERN = 1_000_000, 100


def _bound(conn: sqlite3.Connection) -> None:
    setlimit = getattr(conn, "setlimit", None)  # (Python 3.11+)
    if setlimit is not None:
        setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
        setlimit(sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH, MAX_PATTERN)


def run_query(conn: sqlite3.Connection, query: str, *, timeout: float, max_rows: int) -> tuple[list[str], list[tuple[Any, ...]]]:
    """(column names, rows) of one read-only statement; raises QueryError on anything else."""
    deadline = time.monotonic() + timeout
    conn.set_progress_handler(lambda: 1 if time.monotonic() > deadline else 0, 2000)
    _bound(conn)
    watchdog = threading.Timer(timeout, conn.interrupt)  # (one VM instruction, a LIKE over a long string, can run
    watchdog.daemon = True  # for seconds: the progress handler comes only every 2000 of them)
    watchdog.start()
    try:
        cur = conn.execute(query)
        rows: list[tuple[Any, ...]] = []
        size = 0
        while len(rows) <= max_rows:  # a row at a time, counting the bytes: 10,001 rows of 4 MB took ~5 GB
            row = cur.fetchone()
            if row is None:
                break
            rows.append(row)
            size += sum(len(v) if isinstance(v, (str, bytes)) else 8 for v in row)
            if size > MAX_RESULT_BYTES:
                raise QueryError(f"query result over {MAX_RESULT_BYTES // 2**20} MiB")
        cols = [d[0] for d in cur.description or ()]
    except sqlite3.OperationalError as exc:
        if time.monotonic() > deadline or "interrupted" in str(exc):
            raise QueryError(f"query ran over {timeout:g} s") from None
        raise QueryError(str(exc)) from None
    except MemoryError:
        from crossgym.verifiers.pool import note_out_of_memory, worker_memory

        budget = worker_memory()
        if budget is None:
            raise QueryError("the query ran out of memory") from None
        note_out_of_memory()  # (its worker retires: SQLite's freed pages may stay in the heap)
        raise QueryError(f"the query needed over {budget / 2**20:,.0f} MiB of memory (the verifier worker's "
                         "budget)") from None
    except (sqlite3.Error, ValueError, OverflowError) as exc:
        raise QueryError(f"{type(exc).__name__}: {exc}") from None
    finally:
        watchdog.cancel()
        conn.set_progress_handler(None, 0)
    if len(rows) > max_rows:
        raise QueryError(f"query returned more than {max_rows} rows")
    return cols, rows


def execute(script: str, query: str, *, timeout: float = 5.0, max_rows: int = 10_000) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Run one read-only query on a fresh copy of the database; raises QueryError. In a memory-limited pool worker
    its scratch data stays in memory, under the worker's budget (``open_readonly``)."""
    from crossgym.verifiers.pool import worker_memory

    conn = open_readonly(script, temp_in_memory=worker_memory() is not None)
    try:
        return run_query(conn, query, timeout=timeout, max_rows=max_rows)
    finally:
        conn.close()


#: seconds a pool-bounded query may outlive its own timeout (the hand-off to the worker and back) before it is killed
HAND_OFF_S = 1.0


def _execute_job(script: str, query: str, timeout: float, max_rows: int) -> tuple[str, Any]:
    """``execute`` in a pool worker: ("ok", (columns, rows)) or ("error", why), no exception crossing back."""
    try:
        return "ok", execute(script, query, timeout=timeout, max_rows=max_rows)
    except QueryError as exc:
        return "error", str(exc)


def execute_bounded(script: str, query: str, *, timeout: float = 5.0,
                    max_rows: int = 10_000) -> tuple[list[str], list[tuple[Any, ...]]]:
    """``execute`` in crossgym's worker-process pool, the worker killed when the query outlives ``timeout`` by
    HAND_OFF_S: for model-written queries outside the verifier (the sql environment's query tool), where no
    in-process deadline holds (see ``SQL.isolation``). Raises QueryError."""
    from crossgym.verifiers.pool import PoolError, PoolTimeout, get_pool

    pool = get_pool()
    pool.require(__name__)
    try:
        tag, value = pool.call(_execute_job, (script, query, timeout, max_rows), timeout + HAND_OFF_S)
    except PoolTimeout:
        raise QueryError(f"query ran over {timeout:g} s") from None
    except PoolError as exc:
        raise QueryError(f"the query could not run: {exc}") from None
    if tag != "ok":
        raise QueryError(value)
    return value  # type: ignore[no-any-return]


# ------------------------------------------------------------------ reading the answer
def _episode_answer(last: Message) -> str:
    """The query the sql environment took from its final message's tool calls: the first ``submit`` with a query
    among the calls it runs (its first ``MAX_CALLS_PER_TURN``), which ends the episode there. The last submit of
    the message was scored: ``submit(wrong), submit(right)`` ended the episode on the wrong one and scored 1.0, and
    a submit past the cap, answered "not run", was scored too; a final message of other calls (OpenAI form) had
    its ```sql block scored though it submitted nothing (Hermes text was malformed)."""
    from crossgym.environments.base import MAX_CALLS_PER_TURN, read_tool_calls

    calls, error = read_tool_calls(last)
    if error is not None:
        raise Malformed(f"unreadable tool call: {error}")
    for call in calls[:MAX_CALLS_PER_TURN]:
        q = call.arguments.get("query")
        if call.name == "submit" and set(call.arguments) == {"query"} and isinstance(q, str):  # what its check takes
            if not q.strip():
                raise Malformed("submit with an empty query (the environment ended the episode on it)")
            return q.strip()
    raise Malformed("the final message calls tools but the environment took no submit(query) from it")


def extract_query(completion: Completion, *, env: str | None = None) -> str:
    """The model's final query (see the module docstring); raises Malformed when there is none. ``env="sql"`` (a
    completion from the sql environment): the answer the environment took, see :func:`_episode_answer`."""
    last = next((m for m in reversed(completion.messages) if m.role == "assistant"), None)
    if last is None:
        raise Malformed("no assistant message")
    if env == "sql" and (last.tool_calls or "<tool_call>" in (last.content or "")):
        return _episode_answer(last)
    for call in reversed(last.tool_calls):
        if call.name in SUBMIT_TOOLS:
            q = call.arguments.get("query", call.arguments.get("sql"))
            if isinstance(q, str) and q.strip():
                return q.strip()
            raise Malformed(f"{call.name} call without a 'query' string")
    text = last.content or ""
    if "<tool_call>" in text:
        from crossgym.text import MalformedToolCall, parse_tool_calls

        try:
            calls = parse_tool_calls(last)
        except MalformedToolCall as exc:
            raise Malformed(f"unreadable tool call: {exc}") from None
        for call in reversed(calls):
            if call.name in SUBMIT_TOOLS:
                q = call.arguments.get("query", call.arguments.get("sql"))
                if isinstance(q, str) and q.strip():
                    return q.strip()
        if calls:
            raise Malformed("the final message calls a tool but does not submit a query")
    from crossgym.text import MalformedToolCall, after_reasoning

    try:
        text = after_reasoning(text)  # a query written in the reasoning is not the answer, as a call there is not made
    except MalformedToolCall as exc:
        raise Malformed(str(exc)) from None
    body = extract_fenced(text, ("sql", "sqlite", ""))
    if body is not None and body.strip():
        return body.strip()
    if _STATEMENT.match(text):
        return text.strip()
    raise Malformed("no SQL query in the final message (use a ```sql block or the submit tool)")


# ------------------------------------------------------------------ comparing
def _norm_value(v: Any, digits: int | None) -> Any:
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, float):
        if math.isnan(v):
            return ("nan",)
        if v.is_integer() and abs(v) < 2**53:
            return int(v)
        return v if digits is None else round(v, digits)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return ("blob", bytes(v))  # (its hex digits as text were equal to it: SELECT X'4142' passed '4142')
    return v


def normalize_rows(rows: Sequence[Sequence[Any]], digits: int | None) -> list[tuple[Any, ...]]:
    """Rows of comparable values: floats rounded to ``digits`` places (None: as they are, 1.0 still equal to 1)."""
    return [tuple(_norm_value(v, digits) for v in row) for row in rows]


def _sort_key(row: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple((0, "") if v is None else (1, v) if isinstance(v, (int, float)) else (2, str(v)) for v in row)


#: column orders tried at most when ``column_order`` is off (each a full comparison of the rows)
MAX_COLUMN_ORDERS = 1000


def compare(got: Sequence[Sequence[Any]], want: Sequence[Sequence[Any]], *, order_matters: bool,
            digits: int | None, rows: str = "multiset", column_order: bool = True) -> tuple[bool, str]:
    """(equal, reason) for two result sets. ``rows``: "multiset" (each row as often as in ``want``) or "set"
    (duplicates ignored, as BIRD's evaluation compares); ``column_order`` False: the columns may come in another
    order (as Spider's test-suite evaluation allows: ``SELECT age, name`` for ``SELECT name, age``)."""
    g, w = normalize_rows(got, digits), normalize_rows(want, digits)
    if g and w and len(g[0]) != len(w[0]):
        return False, f"{len(g[0])} columns, expected {len(w[0])}"
    if rows == "set":
        g, w = list(dict.fromkeys(g)), list(dict.fromkeys(w))
        if not order_matters and set(g) == set(w):
            return True, f"{len(w)} distinct rows match"
    if not column_order and g and w:
        for order in _column_orders(g, w):
            moved = [tuple(row[i] for i in order) for row in g]
            if _same(moved, w, order_matters):
                return True, f"{len(w)} rows match, columns reordered" if order != tuple(range(len(order))) else \
                    f"{len(w)} rows match"
    return _compare_rows(g, w, order_matters)


def _same(g: list[tuple[Any, ...]], w: list[tuple[Any, ...]], order_matters: bool) -> bool:
    return g == w if order_matters else len(g) == len(w) and Counter(g) == Counter(w)


def _column_orders(g: list[tuple[Any, ...]], w: list[tuple[Any, ...]]) -> Any:
    """Orders of ``g``'s columns (a tuple: position i takes g's column order[i]) under which each column holds the
    same values as ``want``'s column i, at most MAX_COLUMN_ORDERS of them, the identity first when it qualifies."""
    n = len(w[0])
    values = [Counter(row[j] for row in g) for j in range(n)]
    wanted = [Counter(row[i] for row in w) for i in range(n)]
    fits = [[j for j in range(n) if values[j] == wanted[i]] for i in range(n)]
    for i in range(n):
        if i in fits[i]:
            fits[i].remove(i)
            fits[i].insert(0, i)
    found, used, order = [0], [False] * n, [0] * n

    def walk(i: int) -> Any:
        if found[0] >= MAX_COLUMN_ORDERS:
            return
        if i == n:
            found[0] += 1
            yield tuple(order)
            return
        for j in fits[i]:
            if not used[j]:
                used[j], order[i] = True, j
                yield from walk(i + 1)
                used[j] = False

    return walk(0)


def _compare_rows(g: list[tuple[Any, ...]], w: list[tuple[Any, ...]], order_matters: bool) -> tuple[bool, str]:
    """(equal, reason) for two normalised result sets, columns as they are."""
    if len(g) != len(w):
        return False, f"{len(g)} rows, expected {len(w)}"
    if order_matters:
        for i, (a, b) in enumerate(zip(g, w, strict=True)):
            if a != b:
                return False, f"row {i + 1} is {clip(repr(a), 60)}, expected {clip(repr(b), 60)}"
        return True, f"{len(w)} rows match in order"
    if Counter(g) == Counter(w):
        return True, f"{len(w)} rows match"
    missing = sorted((Counter(w) - Counter(g)).elements(), key=_sort_key)
    return False, f"rows differ (e.g. missing {clip(repr(missing[0]), 60)})" if missing else "rows differ"


#: the ``like`` param: the comparison a text-to-SQL benchmark's own evaluation makes. BIRD (evaluation.py):
#: ``set(predicted) == set(gold)``, rows as tuples in their column order, duplicates and row order ignored. Spider
#: (test-suite-sql-eval, exec_eval.result_eq): rows as a multiset, in order when the gold query has an ORDER BY,
#: the columns in any order that makes them equal, DISTINCT dropped from both queries (evaluation.py without
#: --keep_distinct). Both compare the values as Python does: floats exactly (float_digits None), 1.0 equal to 1.
LIKE: dict[str, dict[str, Any]] = {
    "bird": {"rows": "set", "column_order": True, "order_matters": False, "float_digits": None},
    "spider": {"rows": "multiset", "column_order": False, "order_matters": "auto", "float_digits": None,
               "keep_distinct": False},
}
_QUOTED = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|`[^`]*`|\[[^\]]*\]|--[^\n]*|/\*.*?(?:\*/|\Z)", re.S)
_ORDER_BY = re.compile(r"\border\s+by\b", re.I)


_DISTINCT = re.compile(r"(?<![\w$])distinct(?![\w$])", re.I)


def drop_distinct(query: str) -> str:
    """``query`` without the keyword DISTINCT where it stands outside strings, quoted names and comments, as
    Spider's test-suite evaluation drops it from both queries unless ``--keep_distinct`` (``SELECT DISTINCT a`` reads
    as ``SELECT a``, ``count(DISTINCT a)`` as ``count(a)``)."""
    out, last = [], 0
    for m in _QUOTED.finditer(query):
        out += [_DISTINCT.sub("", query[last:m.start()]), m.group(0)]
        last = m.end()
    out.append(_DISTINCT.sub("", query[last:]))
    return "".join(out)


def _reference_query(answer: Any) -> str | None:
    """The task's reference query, whose result is the expected one (``{"query": ...}`` without ``rows``), or None."""
    if isinstance(answer, dict) and "rows" not in answer and isinstance(answer.get("query"), str):
        return answer["query"]  # type: ignore[no-any-return]
    return None


def sorts_result(query: str) -> bool:
    """Whether ``query`` sorts its result: an ORDER BY outside parentheses (not a subquery's or a window's), in
    the query as written without its strings, quoted names and comments."""
    text = _QUOTED.sub(" ", query)
    depth, flat = 0, []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        flat.append(ch if depth == 0 else " ")
    return _ORDER_BY.search("".join(flat)) is not None


class SQL(BaseVerifier):
    """The model's query, run read-only on the task's SQLite database, must return the expected rows."""

    name = "sql"
    # 2: a submit call in the reasoning (before the last </think>) is not made; 3: the reasoning ends at the first
    # </think>, as vLLM's reasoning parsers read it; 4: so does a query in a ```sql block or bare statement (one
    # written only in the reasoning was run, a bare statement after it was malformed); 5: a result over 64 MiB or
    # 128 columns is an error (10,001 rows of four 1 MB blobs took ~5 GB of the caller's memory); 6: values over 1 MB
    # and LIKE/GLOB patterns over 100 characters are errors, and a watchdog interrupts a query at its timeout (one
    # LIKE of a long pattern over a long string is one VM instruction: 14.7 s against a 5 s timeout); 7: scored in the
    # worker-process pool, killed at the timeout: a query whose instructions between two jumps outlived it is
    # malformed, not late (800 LIKEs in 8 columns of one row ran 77.7 s against the 10 s timeout)
    # 8: a blob is no text: it was compared as its hex digits, so SELECT X'4142' passed the text '4142' (BIRD's and
    # Spider's evaluations compare the values as SQLite returns them)
    # 9: in the pool a query's scratch B-trees stay in memory under the worker's budget (pool.DEFAULT_WORKER_MEMORY),
    # where temp files took any size of disk: a query that needs more fails (reward 0) and its worker is replaced
    # 10: ``like`` compares floats exactly, as BIRD's and Spider's evaluations do (0.1 + 0.2 is not 0.3: they were
    # rounded to float_digits), and ``like: spider`` drops DISTINCT from both queries, as Spider's evaluation does
    # by default (``keep_distinct: true`` keeps it)
    # 11: a task of the sql environment takes the answer the environment took: the first submit(query) within the
    # per-turn cap of the final message (the last one was scored, and one past the cap), and a final message of
    # other tool calls submits nothing in OpenAI form too (its ```sql block was scored)
    version = "11"
    description = "run the model's SQL read-only on the task's SQLite database; compare result sets"
    default_timeout = 10.0
    #: "process", not "inline": SQLite reads its interrupt flag and progress handler only at jump instructions, and
    #: the model controls how much CPU one row's expressions take between two of them: ~0.1 s per LIKE/GLOB over
    #: 1 MB, up to 200 chained in an expression and 128 columns of them; instr() and replace() compare the needle at
    #: every offset (three instr calls, 142 characters: 12.7 s against a 1 s query_timeout); printf widths,
    #: zeroblob, sorts... No in-process deadline holds (a thread left running burns its core on). Weighed and
    #: measured: like()/glob() as Python functions that read the deadline were ~8x slower on an honest 100,000-row
    #: scan (49 vs 6 ms), must copy SQLite's ESCAPE, case and UTF-8 rules exactly, and leave instr/replace open;
    #: caps low enough to bound one call (~30 KB values for 10 ms of instr) fail honest group_concat results and
    #: still multiply over a 100,000-character query. The pool kills the worker at the deadline whatever SQLite is
    #: doing, so verify() returns on time, and a job killed having used CPU_FAULT_SHARE of its timeout as CPU is the
    #: completion's failure (malformed, never masked). Honest queries keep their verdicts (query_timeout still fails
    #: a slow query by itself); the hand-off costs ~0.3 ms a call (0.6 -> 0.9 ms on the examples' database, 3.7 ->
    #: 4.5 ms with a 235 KB script), and a result's rows (up to 64 MiB) sit in the worker, not the caller.
    isolation = "process"

    def __init__(self, *, order_matters: bool | str | None = None, check_columns: bool = False,
                 float_digits: int | None = None, query_timeout: float = 5.0, max_rows: int = 10_000,
                 rows: str | None = None, column_order: bool | None = None, like: str | None = None,
                 keep_distinct: bool | None = None, **params: Any) -> None:
        super().__init__(**params)
        if like is not None and like not in LIKE:
            raise VerifierError(f"verifier 'sql': like must be one of {', '.join(LIKE)}, got {like!r} (fix: leave it "
                                "out and set rows, column_order and order_matters yourself)")
        preset = LIKE.get(like or "", {})  # (the benchmark's choices; a param given as well wins)
        order_matters = preset.get("order_matters", False) if order_matters is None else order_matters
        rows = preset.get("rows", "multiset") if rows is None else rows
        column_order = preset.get("column_order", True) if column_order is None else column_order
        keep_distinct = preset.get("keep_distinct", True) if keep_distinct is None else keep_distinct
        if not isinstance(keep_distinct, bool):
            raise VerifierError(f"verifier 'sql': keep_distinct must be true or false, got {keep_distinct!r} (fix: "
                                "keep_distinct: false to drop DISTINCT from both queries, as Spider's evaluation does)")
        self.keep_distinct = keep_distinct
        if rows not in ("multiset", "set"):
            raise VerifierError(f"verifier 'sql': rows must be 'multiset' or 'set', got {rows!r} (fix: rows: set to ignore duplicate rows, as BIRD does)")
        if isinstance(order_matters, str) and order_matters != "auto":  # ("false" read as true before)
            raise VerifierError(f"verifier 'sql': order_matters must be true, false or 'auto' (order matters when "
                                f"the reference query sorts its result), got {order_matters!r} (fix: order_matters: auto)")
        if not isinstance(column_order, bool):
            raise VerifierError(f"verifier 'sql': column_order must be true or false, got {column_order!r} (fix: column_order: false to allow any column order)")
        self.rows, self.column_order = rows, column_order
        if float_digits is None:
            self.digits: int | None = preset["float_digits"] if "float_digits" in preset else 6
        elif isinstance(float_digits, bool) or not isinstance(float_digits, int) or not 0 <= float_digits <= 15:
            raise VerifierError(f"verifier 'sql': float_digits must be an int in 0..15, got {float_digits!r} (fix: e.g. float_digits: 6)")
        else:
            self.digits = float_digits
        if isinstance(max_rows, bool) or not isinstance(max_rows, int) or max_rows < 1:
            raise VerifierError(f"verifier 'sql': max_rows must be a positive int, got {max_rows!r} (fix: e.g. max_rows: 10000)")
        if isinstance(query_timeout, bool) or not isinstance(query_timeout, (int, float)) or query_timeout <= 0:
            raise VerifierError(f"verifier 'sql': query_timeout must be positive seconds, got {query_timeout!r} (fix: e.g. query_timeout: 5)")
        self.order_matters: bool | str = order_matters if order_matters == "auto" else bool(order_matters)
        self.check_columns = bool(check_columns)
        self.query_timeout = float(query_timeout)
        self.max_rows = max_rows

    def expected(self, task: Task, script: str) -> tuple[list[str] | None, list[Any]]:
        ans = task.answer
        query = _reference_query(ans)
        if query is not None:
            if not self.keep_distinct:
                query = drop_distinct(query)
            try:
                ref_cols, ref_rows = execute(script, query, timeout=max(self.query_timeout, 5.0),
                                             max_rows=self.max_rows)
            except QueryError as exc:
                raise BadTask(f"reference query fails: {exc}") from None
            return ref_cols, ref_rows
        rows: Any = ans.get("rows") if isinstance(ans, dict) else ans
        if not isinstance(rows, list) or not all(isinstance(r, (list, tuple)) for r in rows):
            raise BadTask("answer must be {'rows': [[...], ...]}, {'query': 'SELECT ...'} or a list of rows")
        cols: Any = ans.get("columns") if isinstance(ans, dict) else None
        return cols, [tuple(r) for r in rows]

    def score(self, task: Task, completion: Completion) -> Verdict:
        script = task.metadata.get("database")
        if not isinstance(script, str) or not script.strip():
            raise BadTask("metadata['database'] must hold the SQL script that builds the database")
        query = extract_query(completion, env=task.env)
        if not self.keep_distinct:
            query = drop_distinct(query)
        want_cols, want = self.expected(task, script)
        timeout = max(0.05, min(self.query_timeout, time_left(self.query_timeout) - 0.05))
        try:
            cols, got = execute(script, query, timeout=timeout, max_rows=self.max_rows)
        except QueryError as exc:
            return Verdict.ok(0.0, reason=clip(f"query failed: {exc}", 200), components={"executed": 0.0})
        order = self.order_matters
        if order == "auto":
            ref = _reference_query(task.answer)
            order = ref is not None and sorts_result(ref)
        ok, reason = compare(got, want, order_matters=bool(order), digits=self.digits, rows=self.rows,
                             column_order=self.column_order)
        if ok and self.check_columns and want_cols is not None:
            if [c.lower() for c in cols] != [c.lower() for c in want_cols]:
                ok, reason = False, f"columns {cols}, expected {want_cols}"
        return Verdict.ok(1.0 if ok else 0.0, reason=reason, components={"executed": 1.0, "rows": float(ok)})

    @classmethod
    def examples(cls) -> list[Example]:
        db = ("CREATE TABLE pets(name TEXT, kind TEXT, age INT);"
              "INSERT INTO pets VALUES ('Rex','dog',3),('Tom','cat',5),('Kit','cat',1);")
        meta = {"database": db}
        ans = {"query": "SELECT name FROM pets WHERE kind = 'cat'"}
        return [
            cls.example(ans, "```sql\nSELECT name FROM pets WHERE kind='cat' ORDER BY age\n```", "pass",
                        "same rows; order ignored", metadata=meta),
            cls.example(ans, "SELECT name FROM pets", "fail", "too many rows", metadata=meta),
            cls.example(ans, "```sql\nDELETE FROM pets\n```", "fail", "writes are refused", metadata=meta),
            cls.example(ans, "I think the cats are Tom and Kit.", "malformed", "no query", metadata=meta),
        ]
