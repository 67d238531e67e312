"""sql against the execution-match evaluators of the text-to-SQL benchmarks users compare it with: small SQLite
databases, hundreds of (gold, predicted) query pairs that probe each rule, and the agreement of every sql mode with
each evaluator's verdict.

    OMP_NUM_THREADS=1 python bench/sql_reference.py [--show 8] [--family NAME]

The evaluators, reimplemented from their public source (no code of theirs is used):

- ``spider``: Spider's test-suite evaluation (taoyds/test-suite-sql-eval ``exec_eval.eval_exec_match`` as
  ``evaluation.py`` calls it by default, without ``--keep_distinct`` or ``--plug_value``): both queries get
  ``> =`` -> ``>=`` (and ``< =``, ``! =``) and the ``distinct`` tokens dropped; order matters when ``order by`` is a
  substring of the lowered gold query; text is decoded ignoring bad UTF-8; a failing prediction scores 0; then
  ``result_eq``: two empty results are equal, else as many rows and as many columns (of the first row), the
  "quick rejection" (each row's values sorted by ``str(v) + str(type(v))``, those rows as a set, or a list when
  order matters), then some permutation of the predicted columns under which the rows are equal as lists (order
  matters) or as a set and a multiset. Values compare as Python does: 1 == 1.0, '1' != 1, no float tolerance.
- ``spider-keep``: the same with ``--keep_distinct`` (DISTINCT kept).
- ``bird``: BIRD's ``evaluation.py`` (DAMO-ConvAI bird/llm/src, and bird-bench/mini_dev's ``evaluation_ex.py``, the
  same rule): ``set(predicted_rows) == set(gold_rows)`` over the tuples sqlite3 returns; an error scores 0.
- ``spider2``/``spider2-unordered``: Spider 2.0-lite's ``compare_pandas_table`` (xlang-ai/Spider2
  spider2-lite/evaluation_suite/evaluate.py) with no ``condition_cols``, ``ignore_order`` false/true: both results
  go through pandas ``read_sql_query`` -> CSV -> ``read_csv``; NaN is 0; every gold column must equal some
  predicted column (extra predicted columns allowed, one may serve two gold columns), numbers within 1e-2
  absolute, others with ``==``; ``ignore_order`` sorts each column by itself. Needs pandas (skipped without it).

The original Spider ``evaluation.py`` exec match keys each column by the gold/predicted SELECT item as Spider's
parser reads it against the schema (tables.json) and compares the columns as lists (row order always matters);
it needs that parser, so it is described in docs/verifiers.md, not run here.

Every pair runs through the sql verifier (``verify``, in the worker pool) in each mode below; a reference that
errors (BIRD and Spider assert the gold runs) drops the pair. Prints agreement per mode and evaluator, and the
disagreeing pairs of the modes meant to match (``like: bird`` with bird, ``like: spider`` with spider).
"""

from __future__ import annotations

import argparse
import collections
import io
import itertools
import math
import re
import sqlite3
import sys
from collections.abc import Callable
from typing import Any

from crossgym.api import load_verifier
from crossgym.protocol.task import Completion, Task, VerifierSpec

# ------------------------------------------------------------------ databases
SHOP = """
CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, kind TEXT, price REAL, qty INTEGER, code TEXT, data BLOB,
                    note TEXT);
INSERT INTO items VALUES
 (1, 'pen',  'office', 1.5,  10, '1',  X'41',   NULL),
 (2, 'ink',  'office', 7.25, 3,  '01', X'4142', 'blue'),
 (3, 'pad',  'office', 3.0,  10, '2',  NULL,    ''),
 (4, 'Clip', 'office', 0.1,  200, 'A', X'00',   'Metal'),
 (5, 'mug',  'kitchen', 0.2, 3,  'a',  X'41',   'metal'),
 (6, 'cup',  'kitchen', NULL, 7,  '1.0', NULL,  NULL),
 (7, 'cup',  'kitchen', 2.5, 7,  '3',  X'43',   'tall');
CREATE TABLE typed (n NUMERIC, i INTEGER, r REAL, s TEXT, b BLOB, x);
INSERT INTO typed VALUES ('1', '1', '1', 1, 1, '1'), ('2.0', '2.5', 2, 2.0, '2', 2.0), ('abc', 'x', 'y', 'z', X'7A', 'z'),
 (NULL, NULL, NULL, NULL, NULL, NULL), ('1e3', ' 4', '5.5e0', '6', X'36', 6);
CREATE TABLE big (n INTEGER, m INTEGER);
WITH RECURSIVE c(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM c LIMIT 12000) INSERT INTO big SELECT k, k % 3 FROM c;
"""

# ------------------------------------------------------------------ query families (every ordered pair in a family)
FAMILIES: dict[str, list[str]] = {
    "distinct": [
        "SELECT kind FROM items", "SELECT DISTINCT kind FROM items", "SELECT kind FROM items GROUP BY kind",
        "SELECT kind FROM items ORDER BY kind", "SELECT DISTINCT kind FROM items ORDER BY kind DESC",
        "SELECT kind FROM items WHERE id < 5", "SELECT distinct kind FROM items WHERE qty > 5",
    ],
    "count-distinct": [
        "SELECT count(DISTINCT kind) FROM items", "SELECT count(kind) FROM items", "SELECT count(*) FROM items",
        "SELECT count(DISTINCT name) FROM items", "SELECT count(name) FROM items", "SELECT 2",
    ],
    "order": [
        "SELECT name, qty FROM items ORDER BY qty", "SELECT name, qty FROM items ORDER BY qty DESC",
        "SELECT name, qty FROM items ORDER BY qty, name", "SELECT name, qty FROM items ORDER BY qty, name DESC",
        "SELECT name, qty FROM items", "SELECT name, qty FROM items ORDER BY name",
        "SELECT name, qty FROM items ORDER  BY qty DESC", "SELECT name, qty FROM items order\nby qty DESC",
        "SELECT name, qty FROM (SELECT name, qty FROM items ORDER BY qty DESC)",
        "SELECT name, qty FROM (SELECT name, qty, row_number() OVER (ORDER BY qty DESC) AS r FROM items)",
        "SELECT name, qty FROM items WHERE name <> 'order by' ORDER BY id DESC",
    ],
    "columns": [
        "SELECT name, qty FROM items", "SELECT qty, name FROM items", "SELECT name AS n, qty AS q FROM items",
        "SELECT name FROM items", "SELECT name, qty, kind FROM items", "SELECT name, qty, qty FROM items",
        "SELECT qty, name FROM items ORDER BY qty", "SELECT name, qty FROM items ORDER BY qty",
        "SELECT id, qty, name FROM items", "SELECT qty, id, name FROM items", "SELECT name, id FROM items",
    ],
    "equal-columns": [
        "SELECT qty, qty FROM items", "SELECT qty, 10 FROM items WHERE qty = 10", "SELECT 10, qty FROM items WHERE "
        "qty = 10", "SELECT qty, id FROM items WHERE id IN (3, 7)", "SELECT id, qty FROM items WHERE id IN (3, 7)",
        "SELECT 7, 3", "SELECT 3, 7", "SELECT 1, 2, 3, 4", "SELECT 4, 3, 2, 1", "SELECT 1, 2, 4, 3",
    ],
    "numbers": [
        "SELECT 1", "SELECT 1.0", "SELECT '1'", "SELECT 1 + 0.0000001", "SELECT 1.000000001", "SELECT 1e0",
        "SELECT true", "SELECT 1.004", "SELECT 0.999", "SELECT CAST(1 AS TEXT)", "SELECT '1.0'",
    ],
    "floats": [
        "SELECT 0.1 + 0.2", "SELECT 0.3", "SELECT 0.30000001", "SELECT 0.304", "SELECT 0.3 + 1e-12",
        "SELECT round(0.1 + 0.2, 2)", "SELECT 3.0 / 10", "SELECT 0.29", "SELECT 0.1234565", "SELECT 0.1234564999",
    ],
    "aggregates": [
        "SELECT avg(price) FROM items", "SELECT sum(price) / count(price) FROM items",
        "SELECT round(avg(price), 2) FROM items", "SELECT avg(price) + 0.001 FROM items",
        "SELECT avg(price) + 0.00000001 FROM items", "SELECT sum(price) / count(*) FROM items",
        "SELECT avg(coalesce(price, 0)) FROM items", "SELECT CAST(avg(price) AS TEXT) FROM items",
    ],
    "mixed-row": [
        "SELECT 1, 1.5", "SELECT 1.0, 1.5", "SELECT 1.5, 1", "SELECT 1, 1.5 UNION ALL SELECT 2, 2.5",
        "SELECT 1.0, 1.5 UNION ALL SELECT 2.0, 2.5", "SELECT qty, price FROM items WHERE id = 1",
        "SELECT qty * 1.0, price FROM items WHERE id = 1", "SELECT 10, 1.5", "SELECT 10.0, 1.5",
    ],
    "nulls": [
        "SELECT note FROM items", "SELECT coalesce(note, '') FROM items", "SELECT coalesce(note, 0) FROM items",
        "SELECT ifnull(note, 'NULL') FROM items", "SELECT NULL", "SELECT ''", "SELECT 0", "SELECT 'None'",
        "SELECT price FROM items", "SELECT coalesce(price, 0) FROM items", "SELECT price FROM items WHERE price "
        "IS NOT NULL",
    ],
    "case": [
        "SELECT name FROM items", "SELECT upper(name) FROM items", "SELECT lower(name) FROM items",
        "SELECT name || ' ' FROM items", "SELECT note FROM items WHERE note LIKE 'metal'",
        "SELECT note FROM items WHERE note = 'metal'", "SELECT lower(note) FROM items WHERE note LIKE 'metal'",
    ],
    "empty": [
        "SELECT name FROM items WHERE 0", "SELECT name, qty FROM items WHERE 0", "SELECT 1 WHERE 0",
        "SELECT NULL", "SELECT count(*) FROM items WHERE 0", "SELECT max(qty) FROM items WHERE 0", "SELECT 0",
        "SELECT name FROM items WHERE name = 'nothing'",
    ],
    "limit-ties": [
        "SELECT name FROM items ORDER BY qty LIMIT 1", "SELECT name FROM items ORDER BY qty, name DESC LIMIT 1",
        "SELECT name FROM items ORDER BY qty LIMIT 2", "SELECT name FROM items ORDER BY qty DESC LIMIT 3",
        "SELECT name FROM items WHERE qty = (SELECT min(qty) FROM items)",
        "SELECT name FROM items ORDER BY qty DESC, id LIMIT 3", "SELECT name FROM items ORDER BY qty DESC, id DESC "
        "LIMIT 3",
    ],
    "affinity": [
        "SELECT n FROM typed", "SELECT i FROM typed", "SELECT r FROM typed", "SELECT s FROM typed",
        "SELECT b FROM typed", "SELECT x FROM typed", "SELECT CAST(s AS INTEGER) FROM typed",
        "SELECT n FROM typed WHERE n = 1", "SELECT s FROM typed WHERE s = 1", "SELECT x FROM typed WHERE x = 1",
        "SELECT typeof(n) FROM typed",
    ],
    "blobs": [
        "SELECT data FROM items", "SELECT hex(data) FROM items", "SELECT CAST(data AS TEXT) FROM items",
        "SELECT X'41'", "SELECT 'A'", "SELECT '41'", "SELECT CAST('A' AS BLOB)", "SELECT CAST(X'41FF' AS TEXT)",
        "SELECT data FROM items WHERE data IS NOT NULL",
    ],
    "big": [
        "SELECT n FROM big", "SELECT n FROM big ORDER BY n DESC", "SELECT n FROM big WHERE n > 1",
        "SELECT m FROM big", "SELECT DISTINCT m FROM big", "SELECT n, m FROM big", "SELECT m, n FROM big",
    ],
    "errors": [
        "SELECT name FROM items", "SELECT nme FROM items", "SELECT name FROM items WHERE qty > = 10",
        "SELECT name FROM items WHERE qty >= 10", "SELEC name FROM items",
    ],
}


def pairs() -> list[tuple[str, str, str]]:
    """(family, gold, predicted) for every ordered pair of queries in each family, a query with itself included."""
    return [(fam, g, p) for fam, qs in FAMILIES.items() for g, p in itertools.product(qs, qs)]


# ------------------------------------------------------------------ the evaluators
class GoldError(Exception):
    """The gold query does not run: the evaluators assert it does, so the pair is dropped."""


def _conn(text_factory: Callable[[bytes], Any] | None = None) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.executescript(SHOP)
    if text_factory is not None:
        conn.text_factory = text_factory
    return conn


def _run(query: str, *, lenient_text: bool = False) -> list[tuple[Any, ...]] | None:
    conn = _conn((lambda b: b.decode(errors="ignore")) if lenient_text else None)
    try:
        return conn.execute(query).fetchall()
    except Exception:  # noqa: BLE001 (any failure is a failed execution, as the evaluators count it)
        return None
    finally:
        conn.close()


def bird(gold: str, pred: str) -> bool:
    want = _run(gold)
    if want is None:
        raise GoldError(gold)
    got = _run(pred)
    return got is not None and set(got) == set(want)


_SPIDER_QUOTED = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|`[^`]*`|\[[^\]]*\]|--[^\n]*|/\*.*?(?:\*/|\Z)", re.S)


def drop_distinct(query: str) -> str:
    """The query without its DISTINCT keywords outside strings, quoted names and comments (as sqlparse's tokens
    are dropped when a token is the word ``distinct``)."""
    out, last = [], 0
    for m in _SPIDER_QUOTED.finditer(query):
        out.append(re.sub(r"(?i)(?<![\w$])distinct(?![\w$])", "", query[last:m.start()]))
        out.append(m.group(0))
        last = m.end()
    out.append(re.sub(r"(?i)(?<![\w$])distinct(?![\w$])", "", query[last:]))
    return "".join(out)


def _spider_unorder(row: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(sorted(row, key=lambda v: str(v) + str(type(v))))


def spider_result_eq(want: list[tuple[Any, ...]], got: list[tuple[Any, ...]], order_matters: bool) -> bool:
    if not want and not got:
        return True
    if len(want) != len(got):
        return False
    n = len(want[0])
    if len(got[0]) != n:
        return False
    a, b = [_spider_unorder(r) for r in want], [_spider_unorder(r) for r in got]
    if (a != b) if order_matters else (set(a) != set(b)):
        return False
    column_values = [{row[i] for row in want} for i in range(n)]
    allowed = [[j for j in range(n) if all(row[j] in column_values[i] for row in got)] for i in range(n)]
    for perm in itertools.product(*allowed):  # (Spider samples 20 rows to prune; a valid order survives either way)
        if len(set(perm)) != n:
            continue
        moved = [tuple(row[j] for j in perm) for row in got]
        if order_matters:
            if moved == want:
                return True
        elif set(moved) == set(want) and collections.Counter(moved) == collections.Counter(want):
            return True
    return False


def _spider_post(query: str) -> str:
    return query.replace("> =", ">=").replace("< =", "<=").replace("! =", "!=")


def spider(gold: str, pred: str, *, keep_distinct: bool = False) -> bool:
    g, p = _spider_post(gold), _spider_post(pred)
    if not keep_distinct:
        g, p = drop_distinct(g), drop_distinct(p)
    order_matters = "order by" in g.lower()
    want = _run(g, lenient_text=True)
    if want is None:
        raise GoldError(gold)
    got = _run(p, lenient_text=True)
    return got is not None and spider_result_eq(want, got, order_matters)


def _frame(query: str) -> Any:
    """The query's result as Spider 2.0-lite sees it: read_sql_query, written to CSV and read back."""
    import pandas as pd

    conn = _conn()
    try:
        df = pd.read_sql_query(query, conn)
    except Exception:  # noqa: BLE001
        return None
    finally:
        conn.close()
    buf = io.StringIO()
    df.to_csv(buf, index=False)
    buf.seek(0)
    try:
        return pd.read_csv(buf)
    except Exception:  # noqa: BLE001 (an empty result with no columns: pandas' EmptyDataError)
        return pd.DataFrame()


def _spider2_vectors_match(v1: list[Any], v2: list[Any], ignore_order: bool) -> bool:
    import pandas as pd

    v1 = [0 if pd.isna(x) else x for x in v1]
    v2 = [0 if pd.isna(x) else x for x in v2]
    if ignore_order:
        def key(x: Any) -> tuple[bool, str, bool]:
            return (x is None, str(x), isinstance(x, (int, float)))
        v1, v2 = sorted(v1, key=key), sorted(v2, key=key)
    if len(v1) != len(v2):
        return False
    for a, b in zip(v1, v2, strict=True):
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            if not math.isclose(float(a), float(b), abs_tol=1e-2):
                return False
        elif a != b:
            return False
    return True


def spider2(gold: str, pred: str, *, ignore_order: bool = False) -> bool:
    want = _frame(gold)
    if want is None:
        raise GoldError(gold)
    got = _frame(pred)
    if got is None:
        return False
    gold_cols = want.transpose().values.tolist()
    pred_cols = got.transpose().values.tolist()
    return all(any(_spider2_vectors_match(gv, pv, ignore_order) for pv in pred_cols) for gv in gold_cols)


def _have_pandas() -> bool:
    try:
        import pandas  # noqa: F401
    except ImportError:
        return False
    return True


REFERENCES: dict[str, Callable[[str, str], bool]] = {
    "spider": spider,
    "spider-keep": lambda g, p: spider(g, p, keep_distinct=True),
    "bird": bird,
}
if _have_pandas():
    REFERENCES["spider2"] = spider2
    REFERENCES["spider2-unordered"] = lambda g, p: spider2(g, p, ignore_order=True)

# ------------------------------------------------------------------ crossgym's modes
MODES: dict[str, dict[str, Any]] = {
    "default": {},
    "order_matters": {"order_matters": True},
    "order_auto": {"order_matters": "auto"},
    "rows=set": {"rows": "set"},
    "column_order=false": {"column_order": False},
    "like=bird": {"like": "bird"},
    "like=spider": {"like": "spider"},
    "like=spider,keep_distinct": {"like": "spider", "keep_distinct": True},
    "float_digits=15": {"float_digits": 15},
    "max_rows=20000": {"max_rows": 20000},
    "like=bird,max_rows=20000": {"like": "bird", "max_rows": 20000},
    "like=spider,max_rows=20000": {"like": "spider", "max_rows": 20000},
}
#: the mode meant to match each evaluator (its disagreements are listed)
MATCHES = {"bird": "like=bird", "spider": "like=spider", "spider-keep": "like=spider,keep_distinct"}


def crossgym_verdict(params: dict[str, Any], gold: str, pred: str) -> bool:
    spec = VerifierSpec("sql", dict(params))
    task = Task(id="bench", prompt="?", answer={"query": gold}, verifier=spec, metadata={"database": SHOP})
    return load_verifier(spec).verify(task, Completion.from_text(f"```sql\n{pred}\n```")).passed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--show", type=int, default=8, help="disagreeing pairs to print per evaluator and mode")
    ap.add_argument("--family", default=None, help="only this query family")
    args = ap.parse_args(argv)
    todo = [t for t in pairs() if args.family in (None, t[0])]
    modes = {}
    for name, params in MODES.items():
        try:
            load_verifier(VerifierSpec("sql", dict(params)))
        except Exception as exc:  # noqa: BLE001 (a param this crossgym does not know)
            print(f"mode {name}: skipped ({exc})", file=sys.stderr)
            continue
        modes[name] = params
    ref: dict[str, list[bool | None]] = {r: [] for r in REFERENCES}
    for _, gold, pred in todo:
        for r, rule in REFERENCES.items():
            try:
                ref[r].append(rule(gold, pred))
            except GoldError:
                ref[r].append(None)
    ours = {m: [crossgym_verdict(p, g, q) for _, g, q in todo] for m, p in modes.items()}
    print(f"{len(todo)} pairs in {len(FAMILIES)} families; passes per evaluator: "
          + ", ".join(f"{r} {sum(bool(v) for v in vs)}" for r, vs in ref.items()))
    width = max(len(m) for m in modes)
    print(f"{'agreement':<{width}}  " + "  ".join(f"{r:>17}" for r in REFERENCES))
    for m in modes:
        cells = []
        for r in REFERENCES:
            judged = [(a, b) for a, b in zip(ours[m], ref[r], strict=True) if b is not None]
            agree = sum(a == b for a, b in judged)
            cells.append(f"{agree:>5}/{len(judged):<5} {100 * agree / len(judged):5.1f}%")
        print(f"{m:<{width}}  " + "  ".join(f"{c:>17}" for c in cells))
    for r, m in MATCHES.items():
        if m not in modes:
            continue
        wrong = [(t, a, b) for t, a, b in zip(todo, ours[m], ref[r], strict=True) if b is not None and a != b]
        by_family = collections.Counter(t[0] for t, _, _ in wrong)
        print(f"\n{m} vs {r}: {len(wrong)} disagreements" + (f" ({dict(by_family)})" if wrong else ""))
        for (fam, gold, pred), a, b in wrong[:args.show]:
            print(f"  [{fam}] gold {gold!r} / pred {pred!r}: crossgym {'pass' if a else 'fail'}, {r} "
                  f"{'pass' if b else 'fail'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
