"""sql: questions over generated SQLite tables, answered with one query; scored by the ``sql`` verifier.

difficulty 1: filters and counts on one table; 2: grouping, ordering and limits; 3: joins, HAVING and subqueries.
``env="single_turn"`` shows the schema in the prompt; ``env="sql"`` lets the model explore it with tools first.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import Any

from crossgym.environments.sources.common import check_choice, check_count, check_int, make_task, rng_for
from crossgym.protocol.task import Task

FIRST = ["Ada", "Ben", "Cleo", "Dan", "Eve", "Finn", "Gia", "Hugo", "Ivy", "Jack", "Kim", "Leo", "Mia", "Noah",
         "Olga", "Paul", "Quinn", "Rosa", "Sam", "Tara", "Uma", "Vic", "Wen", "Yara", "Zoe"]
DEPTS = [("Sales", "Berlin"), ("Research", "Paris"), ("Support", "Lisbon"), ("Finance", "Paris"),
         ("Legal", "Berlin"), ("Design", "Oslo")]
PRODUCTS = [("pen", 2), ("notebook", 5), ("stapler", 12), ("lamp", 30), ("chair", 85), ("desk", 240),
            ("monitor", 180), ("cable", 8)]


def _q(value: Any) -> str:
    return "NULL" if value is None else str(value) if isinstance(value, (int, float)) else \
        "'" + str(value).replace("'", "''") + "'"


def build_database(rng: random.Random, size: int) -> tuple[str, dict[str, Any]]:
    """(SQL script, the generated data) for a small company: departments, employees, orders."""
    depts = rng.sample(DEPTS, k=min(len(DEPTS), 3 + size // 8))
    names = rng.sample(FIRST, k=min(len(FIRST), size))
    employees = []
    for i, name in enumerate(names, 1):
        dept_id = rng.randint(1, len(depts))
        employees.append((i, name, dept_id, rng.randrange(30, 120) * 1000, rng.randint(2012, 2024)))
    orders = []
    for i in range(1, size * 2 + 1):
        prod, price = rng.choice(PRODUCTS)
        orders.append((i, rng.randint(1, len(employees)), prod, rng.randint(1, 9), price))
    lines = [
        "CREATE TABLE departments (id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT NOT NULL);",
        "CREATE TABLE employees (id INTEGER PRIMARY KEY, name TEXT NOT NULL, dept_id INTEGER REFERENCES "
        "departments(id), salary INTEGER NOT NULL, hired INTEGER NOT NULL);",
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, employee_id INTEGER REFERENCES employees(id), product TEXT "
        "NOT NULL, quantity INTEGER NOT NULL, unit_price INTEGER NOT NULL);",
    ]
    for i, (dname, city) in enumerate(depts, 1):
        lines.append(f"INSERT INTO departments VALUES ({i}, {_q(dname)}, {_q(city)});")
    for e in employees:
        lines.append(f"INSERT INTO employees VALUES ({', '.join(_q(v) for v in e)});")
    for o in orders:
        lines.append(f"INSERT INTO orders VALUES ({', '.join(_q(v) for v in o)});")
    data = {"departments": [(i, d, c) for i, (d, c) in enumerate(depts, 1)], "employees": employees,
            "orders": orders}
    return "\n".join(lines), data


SCHEMA = """departments(id, name, city)
employees(id, name, dept_id -> departments.id, salary, hired)
orders(id, employee_id -> employees.id, product, quantity, unit_price)"""

# Each template: (question, reference query, order_matters), drawn with the generated data.
Template = Callable[[random.Random, dict[str, Any]], tuple[str, str, bool]]


def _dept(rng: random.Random, data: dict[str, Any]) -> tuple[int, str, str]:
    dept_id, name, city = rng.choice(data["departments"])
    return int(dept_id), str(name), str(city)


def _t1_filter(rng: random.Random, data: dict[str, Any]) -> tuple[str, str, bool]:
    year = rng.randint(2014, 2022)
    return (f"List the names of the employees hired after {year}.",
            f"SELECT name FROM employees WHERE hired > {year}", False)


def _t1_count(rng: random.Random, data: dict[str, Any]) -> tuple[str, str, bool]:
    salary = rng.randrange(50, 100) * 1000
    return (f"How many employees earn more than {salary}?",
            f"SELECT COUNT(*) FROM employees WHERE salary > {salary}", False)


def _t1_product(rng: random.Random, data: dict[str, Any]) -> tuple[str, str, bool]:
    prod = rng.choice(data["orders"])[2]
    return (f"What is the total quantity ordered of the product '{prod}'?",
            f"SELECT SUM(quantity) FROM orders WHERE product = '{prod}'", False)


def _t2_top(rng: random.Random, data: dict[str, Any]) -> tuple[str, str, bool]:
    k = rng.randint(2, 4)
    return (f"Give the names and salaries of the {k} best-paid employees, best paid first (break ties by name).",
            f"SELECT name, salary FROM employees ORDER BY salary DESC, name ASC LIMIT {k}", True)


def _t2_group(rng: random.Random, data: dict[str, Any]) -> tuple[str, str, bool]:
    return ("For each product, give the product and the number of orders for it.",
            "SELECT product, COUNT(*) FROM orders GROUP BY product", False)


def _t2_revenue(rng: random.Random, data: dict[str, Any]) -> tuple[str, str, bool]:
    return ("Give each product with its total revenue (quantity times unit price), highest revenue first "
            "(break ties by product name).",
            "SELECT product, SUM(quantity * unit_price) AS revenue FROM orders GROUP BY product "
            "ORDER BY revenue DESC, product ASC", True)


def _t3_join(rng: random.Random, data: dict[str, Any]) -> tuple[str, str, bool]:
    city = rng.choice(data["departments"])[2]
    return (f"List the names of the employees who work in a department located in {city}.",
            f"SELECT e.name FROM employees e JOIN departments d ON e.dept_id = d.id WHERE d.city = '{city}'", False)


def _t3_having(rng: random.Random, data: dict[str, Any]) -> tuple[str, str, bool]:
    k = rng.randint(1, 3)
    return (f"Which departments have more than {k} employees? Give the department name and its number of "
            "employees.",
            "SELECT d.name, COUNT(*) FROM departments d JOIN employees e ON e.dept_id = d.id GROUP BY d.id "
            f"HAVING COUNT(*) > {k}", False)


def _t3_sub(rng: random.Random, data: dict[str, Any]) -> tuple[str, str, bool]:
    _, dname, _ = _dept(rng, data)
    return (f"List the names of the employees in the {dname} department who earn more than that department's "
            "average salary.",
            "SELECT e.name FROM employees e JOIN departments d ON e.dept_id = d.id WHERE d.name = "
            f"'{dname}' AND e.salary > (SELECT AVG(e2.salary) FROM employees e2 WHERE e2.dept_id = d.id)", False)


def _t3_spend(rng: random.Random, data: dict[str, Any]) -> tuple[str, str, bool]:
    return ("For each employee who placed at least one order, give their name and the total amount they ordered "
            "(quantity times unit price).",
            "SELECT e.name, SUM(o.quantity * o.unit_price) FROM employees e JOIN orders o ON o.employee_id = e.id "
            "GROUP BY e.id", False)


TEMPLATES: dict[int, list[Template]] = {
    1: [_t1_filter, _t1_count, _t1_product],
    2: [_t2_top, _t2_group, _t2_revenue],
    3: [_t3_join, _t3_having, _t3_sub, _t3_spend],
}


def sql(n: int = 100, seed: int = 0, difficulty: int = 1, env: str = "single_turn", rows: int | None = None,
        system_prompt: str | None = None) -> Iterator[Task]:
    """SQL questions over generated tables (``rows`` employees; default grows with difficulty)."""
    from crossgym.verifiers.sql import QueryError, execute

    src = "sql"
    check_count(n, src)
    check_int(seed, "seed", src)
    check_int(difficulty, "difficulty", src, lo=1, hi=3)
    check_choice(env, "env", src, ("single_turn", "sql"))
    size = check_int(rows if rows is not None else 6 + 4 * difficulty, "rows", src, lo=4, hi=len(FIRST))
    for i in range(n):
        rng = rng_for(src, seed, difficulty, i)
        for _attempt in range(20):  # redraw until the answer is not empty
            script, data = build_database(rng, size)
            question, ref, ordered = rng.choice(TEMPLATES[difficulty])(rng, data)
            try:
                _, result = execute(script, ref)
            except QueryError as exc:  # a template bug: fail loudly, never ship a broken task
                raise RuntimeError(f"sql template query failed: {exc}: {ref}") from None
            if result and any(v is not None for row in result for v in row):
                break
        if env == "sql":
            prompt = (f"{question}\n\nExplore the SQLite database with the tools, then call submit(query) with one "
                      "SQL query that returns exactly the requested columns.")
        else:
            prompt = (f"SQLite database tables:\n{SCHEMA}\n\n{question}\n\nAnswer with one SQLite query in a ```sql "
                      "block that returns exactly the requested columns.")
        params = {"order_matters": True} if ordered else {}
        yield make_task(src, i, seed, prompt, {"query": ref, "rows": [list(r) for r in result]}, "sql", params,
                        env=env, tag=f"d{difficulty}", system=system_prompt,
                        metadata={"database": script, "difficulty": difficulty, "reference": ref})
