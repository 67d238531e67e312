"""sql verifier: result-set comparison on a read-only copy of the task's database, under a deadline."""

from __future__ import annotations

import threading

import pytest

from crossgym.api import load_verifier
from crossgym.protocol.errors import VerifierError
from crossgym.protocol.messages import Message, ToolCall
from crossgym.protocol.task import Completion, Task, VerifierSpec
from crossgym.verifiers.sql import SQL, compare, execute, extract_query

DB = """
CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, price REAL, qty INTEGER);
INSERT INTO items VALUES (1, 'pen', 1.5, 10), (2, 'ink', 7.25, 3), (3, 'pad', 3.0, 10), (4, 'clip', 0.1, 200);
"""


def task(answer: object, **params: object) -> Task:
    return Task(id="q", prompt="?", answer=answer, verifier=VerifierSpec("sql", dict(params)),
                metadata={"database": DB})


def score(answer: object, text: str | Completion, **params: object):
    comp = text if isinstance(text, Completion) else Completion.from_text(text)
    return load_verifier(VerifierSpec("sql", dict(params))).verify(task(answer, **params), comp)


def test_examples_behave_as_declared() -> None:
    for ex in SQL.examples():
        assert ex.matches(load_verifier(ex.task.verifier).verify(ex.task, ex.completion)), ex.note


@pytest.mark.parametrize("text", [
    "```sql\nSELECT name FROM items WHERE qty = 10\n```",
    "SELECT name FROM items WHERE qty >= 10 AND qty < 11",
    "Here you go:\n```sqlite\nselect i.name from items as i where i.qty=10 order by name desc\n```",
    "```\nWITH t AS (SELECT * FROM items) SELECT name FROM t WHERE qty = 10\n```",
    "First attempt:\n```sql\nSELECT 1\n```\nand the final one:\n```sql\nSELECT name FROM items WHERE qty = 10;\n```",
])
def test_equivalent_queries_pass(text: str) -> None:
    v = score({"query": "SELECT name FROM items WHERE qty = 10"}, text)
    assert v.passed and v.reward == 1.0, v


def test_rows_answer_floats_ints_and_order() -> None:
    rows = {"rows": [["ink", 7.25], ["pad", 3], ["pen", 1.5]]}
    q = "SELECT name, price FROM items WHERE price > 1 ORDER BY price DESC"
    assert score(rows, q).passed  # 3.0 equals 3; order ignored by default
    assert not score(rows, "SELECT name, price FROM items WHERE price > 1 ORDER BY price ASC",
                     order_matters=True).passed
    assert score({"rows": [["ink", 7.25], ["pad", 3.0], ["pen", 1.5]]}, q, order_matters=True).passed
    assert score([["ink", 7.25000000001], ["pad", 3], ["pen", 1.5]], q).passed  # bare list, float_digits=6
    assert not score(rows, "SELECT name, price, qty FROM items WHERE price > 1").passed
    assert not score(rows, "SELECT name, price FROM items").passed


def test_duplicates_count_as_a_multiset() -> None:
    want = {"query": "SELECT qty FROM items WHERE qty = 10"}
    assert score(want, "SELECT qty FROM items WHERE qty = 10").passed
    assert not score(want, "SELECT DISTINCT qty FROM items WHERE qty = 10").passed


def test_check_columns() -> None:
    want = {"rows": [[4]], "columns": ["n"]}
    assert score(want, "SELECT COUNT(*) AS n FROM items", check_columns=True).passed
    assert not score(want, "SELECT COUNT(*) FROM items", check_columns=True).passed
    assert score(want, "SELECT COUNT(*) FROM items").passed


@pytest.mark.parametrize("query", [
    "DELETE FROM items", "DROP TABLE items", "INSERT INTO items VALUES (9, 'x', 1, 1)",
    "UPDATE items SET qty = 0", "ATTACH DATABASE '/tmp/crossgym-sql-test.db' AS other",
    "PRAGMA query_only = 0", "SELECT load_extension('/tmp/x')", "SELECT 1; DELETE FROM items",
    "CREATE TABLE t(x)", "SELECT randomblob(200000000)",
])
def test_writes_and_escapes_fail_without_changing_the_database(query: str) -> None:
    v = score({"query": "SELECT COUNT(*) FROM items"}, f"```sql\n{query}\n```")
    assert v.reward == 0.0 and not v.passed and v.error is None
    assert execute(DB, "SELECT COUNT(*) FROM items") == (["COUNT(*)"], [(4,)])


def test_runaway_query_is_stopped_by_the_deadline() -> None:
    v = score({"query": "SELECT 1"}, "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM c) SELECT max(n) "
                                     "FROM c", query_timeout=0.3)
    assert v.reward == 0.0 and "ran over" in v.reason


def test_too_many_rows() -> None:
    v = score({"query": "SELECT 1"}, "SELECT * FROM items a, items b, items c", max_rows=10)
    assert v.reward == 0.0 and "more than 10 rows" in v.reason


def test_submit_tool_call_forms() -> None:
    want = {"query": "SELECT name FROM items WHERE id = 2"}
    openai = Completion(messages=(Message(role="assistant", content="", tool_calls=(
        ToolCall(id="1", name="submit", arguments={"query": "SELECT name FROM items WHERE id=2"}),)),))
    assert score(want, openai).passed
    hermes = Completion.from_text('<tool_call>{"name": "submit", "arguments": {"query": "SELECT \'ink\'"}}</tool_call>')
    assert score(want, hermes).passed
    explore_only = Completion(messages=(Message(role="assistant", content="", tool_calls=(
        ToolCall(id="1", name="query", arguments={"sql": "SELECT 1"}),)),))
    assert score(want, explore_only).error_kind == "malformed"
    empty_submit = Completion(messages=(Message(role="assistant", content="", tool_calls=(
        ToolCall(id="1", name="submit", arguments={}),)),))
    assert score(want, empty_submit).error_kind == "malformed"


@pytest.mark.parametrize("text", ["", "I don't know", "<tool_call>{bad</tool_call>", "The answer is ink."])
def test_no_query_is_malformed(text: str) -> None:
    v = score({"query": "SELECT 1"}, text)
    assert v.error_kind == "malformed" and v.reward == 0.0


def test_bad_tasks_are_exceptions_not_crashes() -> None:
    v = load_verifier("sql").verify(Task(id="x", prompt="?", answer={"query": "SELECT 1"}, verifier=VerifierSpec("sql")),
                                    Completion.from_text("SELECT 1"))
    assert v.error_kind == "exception" and "metadata['database']" in v.reason
    assert score({"query": "SELECT nope FROM nothing"}, "SELECT 1").error_kind == "exception"
    assert score("not rows", "SELECT 1").error_kind == "exception"


def test_bad_params_raise_verifier_error() -> None:
    for params in ({"float_digits": 40}, {"max_rows": 0}, {"query_timeout": -1}, {"nope": 1}):
        with pytest.raises(VerifierError):
            load_verifier(VerifierSpec("sql", params))


def test_compare_reasons() -> None:
    assert compare([(1,)], [(1,), (2,)], order_matters=False, digits=6) == (False, "1 rows, expected 2")
    ok, reason = compare([(2,), (1,)], [(1,), (2,)], order_matters=True, digits=6)
    assert not ok and reason.startswith("row 1 is")
    assert compare([(None,)], [(None,)], order_matters=False, digits=6)[0]


def test_extract_query_reads_only_the_last_assistant_message() -> None:
    comp = Completion(messages=(Message(role="assistant", content="```sql\nSELECT 1\n```"),
                                Message(role="tool", content="1"),
                                Message(role="assistant", content="```sql\nSELECT 2\n```")))
    assert extract_query(comp) == "SELECT 2"


def test_thread_safe_under_concurrency() -> None:
    v = load_verifier("sql")
    t = task({"query": "SELECT name FROM items WHERE qty = 10"})
    results: list[bool] = []

    def work(i: int) -> None:
        q = "SELECT name FROM items WHERE qty = 10" if i % 2 == 0 else "SELECT name FROM items"
        results.append(v.verify(t, Completion.from_text(q)).passed == (i % 2 == 0))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(32)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(results) == 32 and all(results)


def test_the_query_is_read_after_the_reasoning() -> None:
    """A ```sql block written only in the reasoning was run; a bare statement after the reasoning was malformed."""
    want = {"query": "SELECT name FROM items WHERE qty = 10"}
    right = "SELECT name FROM items WHERE qty = 10"
    v = score(want, f"<think>\nlet me think\n</think>\n{right}")
    assert v.passed, v
    v = score(want, f"<think>\n```sql\n{right}\n```\n</think>\nThe answer is pen and pad.")
    assert v.error_kind == "malformed", v
    v = score(want, f"<think>\nthe plan: {right}\n</think>\n```sql\nSELECT 1\n```")
    assert not v.passed and v.error is None, v
    assert score(want, f"<think>I will try {right}").error_kind == "malformed"


@pytest.mark.parametrize("columns", ["zeroblob(999999), zeroblob(999999), zeroblob(999999), zeroblob(999999)",
                                     ", ".join(["1"] * 500)])
def test_a_huge_result_is_an_error_not_the_callers_memory(columns: str) -> None:
    """sql ran in the caller's process, and up to 10,001 rows were read whole before anything was compared:
    four 1 MB blobs a row took ~5 GB. A result is read a row at a time, up to 64 MiB and 128 columns."""
    import resource

    query = f"WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r LIMIT 10000) SELECT {columns} FROM r"
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    v = score({"rows": [["pen"]]}, query)
    assert not v.passed and v.error is None and ("64 MiB" in v.reason or "too many columns" in v.reason), v
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 512 * 1024  # (KiB: well under 5 GB)


def test_a_query_that_makes_sqlite_run_long_single_steps_is_bounded() -> None:
    """One LIKE over a long string with a long pattern is one VM instruction (the progress handler never ran): an
    87-character query ran 14.7 s past its 5 s timeout. Patterns over 100 characters and values over 1 MB fail."""
    from crossgym.verifiers.sql import QueryError

    script = "CREATE TABLE t(x);"
    for query in ("SELECT 1 WHERE hex(zeroblob(200000)) LIKE '%' || hex(zeroblob(12000)) || '1'",
                  "SELECT length(hex(zeroblob(2000000)))"):
        with pytest.raises(QueryError):
            execute(script, query, timeout=2.0)
    assert execute(script, "SELECT 'abc' LIKE '%b%'", timeout=2.0)[1] == [(1,)]


#: 100 LIKEs of a 100-character pattern over one 1 MB string: one row, no jump between them, so SQLite never reads its
#: interrupt flag or progress handler (~0.1 s each: 9.2 s inline against a 5 s query_timeout and a 10 s timeout)
MANY_LIKES = ("WITH x(s) AS (SELECT printf('%.*c', 999999, 'a')) SELECT "
              + " + ".join("(s LIKE '%" + "a" * 98 + "b')" for _ in range(100)) + " FROM x")
#: instr() (and replace()) compare the needle at every offset: three calls in 142 characters ran 12.7 s inline
#: against a 1 s query_timeout, so overriding like()/glob() alone would not bound the query
INSTRS = ("WITH x(a, b) AS (SELECT printf('%.*c', 999999, 'a'), printf('%.*c', 400000, 'a') || 'b') "
          "SELECT instr(a, b) + instr(a, b) + instr(a, b) FROM x")


@pytest.mark.parametrize("query", [MANY_LIKES, INSTRS], ids=["many-likes", "instr-chain"])
def test_a_query_that_outlives_the_deadline_between_sqlites_checks_is_the_completions_failure(query: str) -> None:
    """sql ran inline: a query whose one row costs seconds of CPU between two jump instructions ran on past the
    query_timeout and the verifier's timeout (and passed when its row was right). It is scored in the worker pool now,
    killed at the deadline: verify returns on time, and a query that spent its time on CPU is malformed, not a
    timeout a trainer could mask."""
    import os
    import time

    params = {"timeout": 1.0, "query_timeout": 0.5}
    want = {"rows": [[0]]}
    assert score(want, "SELECT 0", **params).passed  # (and the pool is started: its start is not the query's time)
    loaded = os.getloadavg()[0] >= (os.cpu_count() or 1)
    t0 = time.monotonic()
    v = score(want, query, **params)
    took = time.monotonic() - t0
    # the deadline + 1 s; a machine with more runnable jobs than cores (other test runs beside this one) may take
    # longer to kill and replace the worker, which is the machine's time, not the query's
    assert took < 1.0 + (1.0 if not loaded else 5.0), (took, v)
    assert v.reward == 0.0 and not v.passed, v
    # a pool job killed at its deadline is the completion's failure when it had used half its timeout as CPU; a
    # machine too loaded to give it that (another job on every core) makes it a timeout, the machine's failure
    loaded = loaded or os.getloadavg()[0] >= (os.cpu_count() or 1)
    assert v.error_kind == "malformed" or (loaded and v.error == "timeout"), v
    assert score(want, "SELECT count(*) - count(*) FROM items WHERE name LIKE 'p%' ESCAPE '!'", **params).passed


GOLD = {"query": "SELECT name, qty FROM items WHERE qty >= 10 ORDER BY qty"}


@pytest.mark.parametrize("like,query,passed", [
    # crossgym's default: rows as a multiset, the columns in the reference's order, row order ignored
    (None, "SELECT name, qty FROM items WHERE qty >= 10", True),
    (None, "SELECT qty, name FROM items WHERE qty >= 10", False),
    # BIRD's evaluation: set(predicted) == set(gold)
    ("bird", "SELECT name, qty FROM items WHERE qty >= 10 ORDER BY name DESC", True),
    ("bird", "SELECT qty, name FROM items WHERE qty >= 10", False),
    # Spider's test-suite evaluation: order counts when the gold query sorts, columns in any order
    ("spider", "SELECT qty, name FROM items WHERE qty >= 10 ORDER BY qty", True),
    ("spider", "SELECT name, qty FROM items WHERE qty >= 10 ORDER BY qty DESC", False),
])
def test_like_a_benchmark_compares_as_its_own_evaluation_does(like, query, passed) -> None:
    params = {} if like is None else {"like": like}
    v = score(GOLD, f"```sql\n{query}\n```", **params)
    assert v.error is None and v.passed is passed, (like, query, v)


def test_set_rows_ignore_duplicates_and_multiset_rows_count_them() -> None:
    gold = {"query": "SELECT qty FROM items WHERE qty = 10"}  # two rows of 10
    assert score(gold, "SELECT DISTINCT qty FROM items WHERE qty = 10", rows="set").passed
    assert not score(gold, "SELECT DISTINCT qty FROM items WHERE qty = 10").passed
    assert score(gold, "SELECT DISTINCT qty FROM items WHERE qty = 10", like="bird").passed
    assert not score(gold, "SELECT DISTINCT qty FROM items WHERE qty = 10", like="spider", keep_distinct=True).passed


def test_like_spider_drops_distinct_from_both_queries_as_spiders_evaluation_does() -> None:
    """Spider's test-suite evaluation (without --keep_distinct, its default) drops DISTINCT from the gold and the
    predicted query before running them: SELECT DISTINCT a reads as SELECT a, count(DISTINCT a) as count(a)."""
    from crossgym.verifiers.sql import drop_distinct

    assert drop_distinct("SELECT DISTINCT a FROM t") == "SELECT  a FROM t"
    assert drop_distinct("select count(distinct a), 'distinct' AS \"distinct\" FROM t -- distinct") == \
        "select count( a), 'distinct' AS \"distinct\" FROM t -- distinct"
    assert drop_distinct("SELECT distinct_name, a.distinct$ FROM t") == "SELECT distinct_name, a.distinct$ FROM t"
    gold = {"query": "SELECT qty FROM items WHERE qty = 10"}  # two rows of 10
    assert score(gold, "SELECT DISTINCT qty FROM items WHERE qty = 10", like="spider").passed
    assert score({"query": "SELECT count(DISTINCT qty) FROM items"}, "SELECT count(*) FROM items", like="spider").passed
    assert not score({"query": "SELECT count(DISTINCT qty) FROM items"}, "SELECT count(*) FROM items").passed
    assert score({"rows": [[10], [10]]}, "SELECT DISTINCT qty FROM items WHERE qty = 10", keep_distinct=False).passed


def test_like_compares_floats_exactly_as_the_benchmarks_do() -> None:
    """BIRD's and Spider's evaluations compare the values with Python's ==: 0.1 + 0.2 is not 0.3 there, 1.0 is 1.
    ``like`` rounded floats to float_digits (6) places, so it passed what the benchmark fails."""
    for like in ("bird", "spider"):
        assert not score({"query": "SELECT 0.3"}, "SELECT 0.1 + 0.2", like=like).passed, like
        assert not score({"query": "SELECT 1"}, "SELECT 1.000000001", like=like).passed, like
        assert score({"query": "SELECT 1"}, "SELECT 1.0", like=like).passed, like
        assert score({"query": "SELECT 0.3"}, "SELECT 0.1 + 0.2", like=like, float_digits=6).passed, like
    assert score({"query": "SELECT 0.3"}, "SELECT 0.1 + 0.2").passed  # (crossgym's default: 6 places)


def test_order_matters_auto_reads_only_the_reference_querys_own_order_by() -> None:
    from crossgym.verifiers.sql import sorts_result

    assert sorts_result("SELECT a FROM t ORDER BY a") and sorts_result("select a from t order\n by a")
    for q in ("SELECT a FROM (SELECT a FROM t ORDER BY a LIMIT 3)", "SELECT row_number() OVER (ORDER BY a) FROM t",
              "SELECT 'order by' FROM t", 'SELECT "order by" FROM t', "SELECT a FROM t -- order by a",
              "SELECT a FROM t /* order by a */", "SELECT a FROM [order by]"):
        assert not sorts_result(q), q
    backwards = "SELECT name, qty FROM items WHERE qty >= 10 ORDER BY qty DESC, name DESC"
    assert not score(GOLD, backwards, order_matters="auto").passed
    assert score({"query": "SELECT name, qty FROM items WHERE qty >= 10"}, backwards, order_matters="auto").passed
    assert score({"rows": [["pen", 10], ["pad", 10], ["clip", 200]]}, backwards, order_matters="auto").passed


def test_columns_in_another_order_are_matched_by_their_values() -> None:
    from crossgym.verifiers.sql import compare

    want = [("a", 1, 1), ("b", 2, 2)]
    assert compare([(1, "a", 1), (2, "b", 2)], want, order_matters=False, digits=6, column_order=False)[0]
    assert not compare([(1, "a", 1), (2, "b", 3)], want, order_matters=False, digits=6, column_order=False)[0]
    # two columns with the same values: either order is tried, and the rows decide
    assert compare([(1, 2, "a"), (2, 1, "b")], [("a", 2, 1), ("b", 1, 2)], order_matters=False, digits=6,
                   column_order=False)[0]
    assert not compare([(1, 2, "a"), (2, 1, "b")], [("a", 1, 1), ("b", 2, 2)], order_matters=False, digits=6,
                       column_order=False)[0]
    wide = [tuple([1] * 12)] * 3  # 12 equal columns: 12! orders, tried up to MAX_COLUMN_ORDERS, at once
    assert compare(wide, wide, order_matters=False, digits=6, column_order=False)[0]


@pytest.mark.parametrize("params,match", [
    ({"like": "mysql"}, "like must be one of bird, spider"), ({"rows": "bag"}, "rows must be 'multiset' or 'set'"),
    ({"order_matters": "false"}, "order_matters must be true, false or 'auto'"),
    ({"column_order": "no"}, "column_order must be true or false"),
    ({"keep_distinct": "no"}, "keep_distinct must be true or false"),
])
def test_bad_comparison_params_are_config_errors(params, match) -> None:
    with pytest.raises(VerifierError, match=match):
        load_verifier(VerifierSpec("sql", params))


def test_a_blob_is_no_text_of_its_hex_digits() -> None:
    """_norm_value wrote a blob as its hex digits: SELECT X'4142' passed a column holding the text '4142', and a blob
    reference passed hex(b). BIRD's and Spider's evaluations compare the values SQLite returns (b'AB' != '4142')."""
    from crossgym.verifiers.sql import compare, normalize_rows

    assert not compare(normalize_rows([(b"AB",)], 6), normalize_rows([("4142",)], 6), order_matters=False,
                       digits=6)[0]
    assert not compare(normalize_rows([("4142",)], 6), normalize_rows([(b"AB",)], 6), order_matters=False,
                       digits=6)[0]
    assert compare(normalize_rows([(b"AB",)], 6), normalize_rows([(bytearray(b"AB"),)], 6), order_matters=False,
                   digits=6)[0]
    for like in ("bird", "spider"):
        assert not compare(normalize_rows([(b"AB",)], 6), normalize_rows([("4142",)], 6), order_matters=False,
                           digits=6, rows="set" if like == "bird" else "multiset")[0]
    # end to end: the model's blob against the reference query's text, and back
    for like in ({}, {"like": "bird"}, {"like": "spider"}):
        assert not score({"query": "SELECT '4142'"}, "SELECT X'4142'", **like).passed, like
        assert not score({"query": "SELECT X'4142'"}, "SELECT hex(X'4142')", **like).passed, like
        assert score({"query": "SELECT X'4142'"}, "SELECT CAST('AB' AS BLOB)", **like).passed, like


def test_a_querys_scratch_data_stays_under_the_workers_memory_budget_not_on_disk() -> None:
    """DISTINCT over a million 900 KB values wrote its temp B-tree to /var/tmp: 1.2 GB of disk in 8 s, none of
    it bounded (3 GB of memory with temp_store = MEMORY and no limit). In a pool worker the scratch data stays in
    memory, under the worker's budget: past it the query fails (reward 0) and the worker is replaced."""
    from crossgym.verifiers.pool import get_pool

    query = ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 1000000) "
             "SELECT count(DISTINCT zeroblob(900000) || x) FROM c")
    kills = get_pool().kills
    v = score({"rows": [[3]]}, query)
    assert not v.passed and v.error is None and "MiB of memory" in v.reason, v  # (it was "ran over 5 s")
    assert get_pool().kills > kills  # its worker was replaced
    assert score({"rows": [[4]]}, "SELECT count(*) FROM items").passed  # the pool goes on
