"""arithmetic and word_problems: seeded arithmetic, scored by ``numeric`` (or ``math``).

arithmetic difficulty: 1 two small terms (+ -), 2 three terms with *, 3 four terms with parentheses,
4 five terms with exact division, 5 decimals and negative numbers. word_problems difficulty 1-3 = steps needed.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from fractions import Fraction

from crossgym.environments.sources.common import check_choice, check_count, check_int, make_task, rng_for
from crossgym.protocol.task import Task

ANSWER_HINT = "Give the final answer inside <answer></answer>."
#: (terms, max operand, operators, parentheses, decimals) per difficulty
LEVELS = {1: (2, 20, "+-", False, False), 2: (3, 50, "+-*", False, False), 3: (4, 99, "+-*", True, False),
          4: (5, 99, "+-*/", True, False), 5: (5, 999, "+-*/", True, True)}


def _number_text(x: Fraction) -> str:
    if x.denominator == 1:
        return str(x.numerator)
    return format(float(x), ".10g")


def make_expression(rng: random.Random, difficulty: int) -> tuple[str, Fraction]:
    """(expression text, exact value); division only where it comes out even."""
    terms, hi, ops, parens, decimals = LEVELS[difficulty]

    def operand() -> tuple[str, Fraction]:
        if decimals and rng.random() < 0.4:
            v = Fraction(rng.randint(1, hi * 10), 10)
        else:
            v = Fraction(rng.randint(1, hi))
        if decimals and rng.random() < 0.3:
            v = -v
        text = _number_text(v)
        return (f"({text})" if v < 0 else text), v

    text, value = operand()
    kind = "atom"  # atom | sum | product: decides where parentheses are needed
    for _ in range(terms - 1):
        op = rng.choice(ops)
        t, v = operand()
        if op == "/":
            # divide by a divisor of the running value so the result stays exact and short
            divisors = [d for d in range(2, 13) if value.denominator == 1 and value.numerator % d == 0]
            if not divisors:
                op = "+"
            else:
                d = rng.choice(divisors)
                t, v = str(d), Fraction(d)
        if op == "*" and abs(value) > 2000:
            op = "-"
        if op in "+-":
            text, value, kind = f"{text} {op} {t}", value + v if op == "+" else value - v, "sum"
            if parens and rng.random() < 0.5:
                text, kind = f"({text})", "atom"
        else:
            if kind == "sum":
                text = f"({text})"
            text, value, kind = f"{text} {op} {t}", value * v if op == "*" else value / v, "product"
    return text, value


def arithmetic(n: int = 100, seed: int = 0, difficulty: int = 1, system_prompt: str | None = None) -> Iterator[Task]:
    """Arithmetic expressions to evaluate; answers are exact (numeric verifier)."""
    src = "arithmetic"
    check_count(n, src)
    check_int(seed, "seed", src)
    check_int(difficulty, "difficulty", src, lo=1, hi=5)
    for i in range(n):
        rng = rng_for(src, seed, difficulty, i)
        text, value = make_expression(rng, difficulty)
        answer = value.numerator if value.denominator == 1 else float(value)
        yield make_task(src, i, seed, f"Compute {text}. {ANSWER_HINT}", answer, "numeric",
                        tag=f"d{difficulty}", system=system_prompt,
                        metadata={"expression": text, "difficulty": difficulty})


# ---------------------------------------------------------------- word problems
NAMES = ["Ana", "Bilal", "Chen", "Dara", "Elif", "Femi", "Goran", "Hana", "Ines", "Jonas", "Kofi", "Lena"]
ITEMS = [("apple", "apples"), ("pencil", "pencils"), ("ticket", "tickets"), ("book", "books"),
         ("cookie", "cookies"), ("marble", "marbles")]
Problem = Callable[[random.Random, int], tuple[str, Fraction]]


def _shopping(rng: random.Random, steps: int) -> tuple[str, Fraction]:
    name = rng.choice(NAMES)
    (_, items), price, k = rng.choice(ITEMS), rng.randint(2, 9), rng.randint(2, 12)
    text = f"{name} buys {k} {items} at {price} dollars each."
    total = Fraction(k * price)
    if steps >= 2:
        (_, items2), price2, k2 = rng.choice(ITEMS), rng.randint(2, 9), rng.randint(2, 6)
        text += f" Then {name} buys {k2} {items2} at {price2} dollars each."
        total += k2 * price2
    if steps >= 3:
        paid = (int(total) // 10 + 1 + rng.randint(0, 3)) * 10
        text += f" {name} pays with {paid} dollars. How much change does {name} get, in dollars?"
        return text, paid - total
    return text + f" How much does {name} spend in total, in dollars?", total


def _travel(rng: random.Random, steps: int) -> tuple[str, Fraction]:
    speed, hours = rng.randint(3, 12) * 10, rng.randint(2, 6)
    text = f"A train travels at {speed} km per hour for {hours} hours."
    dist = Fraction(speed * hours)
    if steps >= 2:
        speed2, hours2 = rng.randint(3, 12) * 10, rng.randint(1, 4)
        text += f" It then travels at {speed2} km per hour for {hours2} more hours."
        dist += speed2 * hours2
    if steps >= 3:
        legs = rng.choice([2, 4, 5])
        text += f" The whole trip is split into {legs} equal legs. How many km long is each leg?"
        return text, dist / legs
    return text + " How many km does it travel in total?", dist


def _ages(rng: random.Random, steps: int) -> tuple[str, Fraction]:
    a, b = rng.sample(NAMES, 2)
    age_b, diff = rng.randint(5, 30), rng.randint(2, 15)
    text = f"{b} is {age_b} years old. {a} is {diff} years older than {b}."
    age_a = age_b + diff
    if steps == 1:
        return text + f" How old is {a}?", Fraction(age_a)
    years = rng.randint(2, 10)
    if steps == 2:
        return text + f" How old will {a} be in {years} years?", Fraction(age_a + years)
    return text + f" What will the sum of their ages be in {years} years?", Fraction(age_a + age_b + 2 * years)


def _sharing(rng: random.Random, steps: int) -> tuple[str, Fraction]:
    people = rng.randint(2, 6)
    per = rng.randint(3, 12)
    (item, items) = rng.choice(ITEMS)
    total = people * per
    text = f"{total} {items} are shared equally among {people} friends."
    ans = Fraction(per)
    if steps >= 2:
        eaten = rng.randint(1, per - 1)
        text += f" Each friend gives away {eaten} of their {items}."
        ans -= eaten
    if steps >= 3:
        text += f" How many {items} do the friends have left altogether?"
        return text, ans * people
    return text + f" How many {items} does each friend have{' left' if steps >= 2 else ''}?", ans


def _percent(rng: random.Random, steps: int) -> tuple[str, Fraction]:
    price = rng.randint(2, 40) * 10
    pct = rng.choice([10, 20, 25, 50])
    text = f"A jacket costs {price} dollars and is on sale for {pct}% off."
    ans = Fraction(price) * (100 - pct) / 100
    if steps >= 2:
        tax = rng.choice([10, 20])
        text += f" A {tax}% tax is then added to the sale price."
        ans = ans * (100 + tax) / 100
    if steps >= 3:
        k = rng.randint(2, 4)
        text += f" How much do {k} such jackets cost, in dollars?"
        return text, ans * k
    return text + " What is the final price, in dollars?", ans


PROBLEMS: tuple[Problem, ...] = (_shopping, _travel, _ages, _sharing, _percent)


def word_problems(n: int = 100, seed: int = 0, difficulty: int = 1, verifier: str = "numeric",
                  system_prompt: str | None = None) -> Iterator[Task]:
    """Word problems needing ``difficulty`` steps; ``verifier`` is numeric (number) or math (LaTeX-safe text)."""
    src = "word_problems"
    check_count(n, src)
    check_int(seed, "seed", src)
    check_int(difficulty, "difficulty", src, lo=1, hi=3)
    check_choice(verifier, "verifier", src, ("numeric", "math"))
    for i in range(n):
        rng = rng_for(src, seed, difficulty, i)
        text, value = rng.choice(PROBLEMS)(rng, difficulty)
        if value.denominator == 1:
            answer: int | float | str = value.numerator
        else:
            answer = float(value)
        if verifier == "math":
            answer = str(answer) if value.denominator == 1 or float(value) == round(float(value), 6) \
                else f"\\frac{{{value.numerator}}}{{{value.denominator}}}"
        yield make_task(src, i, seed, f"{text} {ANSWER_HINT}", answer, verifier, tag=f"d{difficulty}",
                        system=system_prompt, metadata={"difficulty": difficulty})
