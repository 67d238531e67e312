"""reasoning_gym: any reasoning-gym task scored by that dataset's own ``score_answer`` (those that reward answers
that do not solve the task, game_of_life_halting, coin_flip, complex_arithmetic, propositional_logic, puzzle24,
countdown, prime_factorization, time_intervals and rectangle_count, are corrected here: see ``_CORRECTED``; and no dataset's substring credit is paid
to an answer that holds the oracle among other text: see ``_holds_oracle``). Scorers that evaluate the answer as
Python (``eval``, sympy's ``parse_expr``) see plain expressions only: an answer holding code is malformed
(``crossgym.verifiers.expr_guard``).

The task carries ``metadata["reasoning_gym"] = {"dataset", "config", "index", "entry"}`` (the bridge in
``crossgym.environments.sources.reasoning_gym`` writes it). The entry scored is regenerated from dataset, config and
index (reasoning-gym is deterministic), so ``score_answer`` sees exactly the entry it produced, tuples and all; the
stored JSON ``entry`` is used when regeneration is off or impossible. The model's answer is read the way
reasoning-gym reads it (``extract="reasoning_gym"``: the last ``<answer>...</answer>``), or by any crossgym extract
mode. Runs in the worker-process pool: some scorers are CPU-heavy (sympy) and reasoning-gym takes ~3 s to import.
"""

from __future__ import annotations

import ast
import functools
import json
import operator
import re
from fractions import Fraction
from typing import Any

from crossgym.protocol.errors import VerifierError
from crossgym.protocol.task import Completion, Example, Task, Verdict
from crossgym.verifiers.base import BadTask, BaseVerifier, Malformed, clip
from crossgym.verifiers.expr_guard import plain_expressions
from crossgym.verifiers.extract import EXTRACT_MODES, locate_answer

INSTALL = "pip install 'crossgym[tasks]'  (or: pip install reasoning-gym)"


def _import_rg() -> Any:
    try:
        import reasoning_gym
    except ImportError:
        raise BadTask(f"reasoning-gym is not installed ({INSTALL})") from None
    return reasoning_gym


@functools.lru_cache(maxsize=256)
def _dataset(name: str, config_json: str) -> Any:
    rg = _import_rg()
    return rg.create_dataset(name, **json.loads(config_json))


def dataset_for(name: str, config: dict[str, Any]) -> Any:
    """The reasoning-gym dataset ``name`` built with ``config`` (cached per process)."""
    return _dataset(name, json.dumps(config, sort_keys=True))


def jsonable(value: Any, depth: int = 0) -> Any:
    """A JSON-safe copy (tuples -> lists, sets -> sorted lists, other objects -> str)."""
    if depth > 50:
        return str(value)
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else str(value)
    if isinstance(value, dict):
        return {str(k): jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v, depth + 1) for v in value]
    if isinstance(value, (set, frozenset)):
        items = [jsonable(v, depth + 1) for v in value]
        try:
            return sorted(items)
        except TypeError:
            return sorted(items, key=repr)
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        try:
            return jsonable(value.item(), depth + 1)
        except Exception:
            pass
    return str(value)


def _game_of_life_halting(ds: Any, answer: str, entry: dict[str, Any]) -> float:
    """Its score_answer compares ``bool(answer) == bool(entry["answer"])``: every non-empty text (``"banana"``, the
    wrong truth value) scored 1.0. The answer is its truth value, as the entry writes it."""
    return float(answer.strip().casefold() == str(entry["answer"]).strip().casefold())


def _coin_flip(ds: Any, answer: str, entry: dict[str, Any]) -> float:
    """Its partial credit divides the digits an answer shares with the probability by the *shorter* of the two, so
    "0" earned 1.0 against 0.234375 (and any prefix did): divided by the longer one here. Its tolerance, 1e-4 of
    probability, is also 5% of the probability at most: "0" passed every probability below 1e-4 (15 heads in a row:
    3.05e-05), as it passed numeric's tiny references before numeric 5; 0.000031 for it still passes. The digits
    shared are the significant ones, from the same power of ten: every probability's "0." made "0.5" worth 0.17 to
    0.33 on every task."""
    from fractions import Fraction

    if not answer.strip():
        return 0.0
    try:
        a, o = float(Fraction(answer.replace(",", ""))), float(Fraction(str(entry["answer"]).replace(",", "")))
    except (ValueError, ZeroDivisionError):
        return 0.0
    if abs(a - o) <= min(1e-4, 0.05 * abs(o)) or a == o:  # (its own 1e-4, and 5% of a probability below 0.002)
        return 1.0
    return _shared_significant_digits(a, o)


def _shared_significant_digits(a: float, o: float) -> float:
    """The share of ``o``'s significant digits (10 at most) that ``a`` repeats from the first, when both are written
    with the same sign and power of ten; 0.0 otherwise."""
    mine, theirs = f"{a:.9e}", f"{o:.9e}"
    (m_digits, m_exp), (t_digits, t_exp) = mine.split("e"), theirs.split("e")
    if m_exp != t_exp or (a < 0) != (o < 0):
        return 0.0
    m_digits, t_digits = (d.lstrip("-").replace(".", "").rstrip("0") for d in (m_digits, t_digits))
    pairs = enumerate(zip(m_digits, t_digits, strict=False))
    shared = next((i for i, (x, y) in pairs if x != y), min(len(m_digits), len(t_digits)))
    return shared / max(len(m_digits), len(t_digits), 1)


def _complex_arithmetic(ds: Any, answer: str, entry: dict[str, Any]) -> float:
    """Its score is ``min(1.0, exp(-|answer - result|))``: "nan" makes the distance NaN, ``min(1.0, nan)`` is 1.0, so
    "nan" (or "nan+nanj") earned 1.0 on every task. An answer that is no finite number earns nothing."""
    import cmath

    try:
        value = ds.parse_string_to_complex(answer)
    except Exception:  # (its scorer gives such an answer 0.0 itself)
        value = None
    if isinstance(value, complex) and not cmath.isfinite(value):
        return 0.0
    return float(ds.score_answer(answer, entry))


def _propositional_logic(ds: Any, answer: str, entry: dict[str, Any]) -> float:
    """It pays 0.25 for a valid but "trivial" conclusion and 0.05 for one that does not follow: a tautology such as
    "(P ∨ ¬P)" follows from any premises, so it earned 0.25 on every task, five times an honest wrong conclusion.
    A tautology is no conclusion drawn from these premises: it earns what one that does not follow earns."""
    import sys

    score = float(ds.score_answer(answer, entry))
    if score != 0.25:
        return score
    try:
        expr = sys.modules[type(ds).__module__].Expression.from_string(answer)
        variables = ds._collect_variables([expr])
        if len(variables) <= 12 and all(expr.evaluate(a) for a in ds._generate_assignments(variables)):
            return 0.05
    except Exception:  # (reasoning-gym's internals moved: its own score stands)
        pass
    return score


#: how near (a share of the scorer's whole range) a time_intervals answer must be to earn partial credit
NEAR_MISS = 0.02


def _time_intervals(ds: Any, answer: str, entry: dict[str, Any]) -> float:
    """Its partial credit falls linearly to 0 over the task's whole range (100 days, 24 hours), so one constant
    answer in the format ("50 days", "12:00") earned 0.68 to 0.76 on average, above 0.5 on nearly every task. The
    credit falls to 0 over ``NEAR_MISS`` of the range instead (a day off of 100: 0.5; 15 minutes of 24 hours: 0.5).
    Its score is ``1 - diff / range``, so the distance is read from it."""
    score = float(ds.score_answer(answer, entry))
    if score >= 1.0:
        return score
    return max(0.0, 1.0 - (1.0 - score) / NEAR_MISS)


def _rectangle_count(ds: Any, answer: str, entry: dict[str, Any]) -> float:
    """It paid 0.8 * (1 - distance / 5) to a count within 4 of the right one; the counts cluster, so the constant "6"
    earned 0.40 on average. A count is right or wrong here (its 0.0 otherwise)."""
    score = float(ds.score_answer(answer, entry))
    return 1.0 if score >= 1.0 else 0.0


#: what ``_arithmetic`` reads: integers, the four operations, parentheses and spaces (no other character, so no
#: name, power, float or other number form reaches the parser)
_ARITHMETIC = re.compile(r"[\d\s+\-*/()]{1,1000}")
_OPS: dict[type, Any] = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
                         ast.Div: operator.truediv}


def _arithmetic(text: str) -> tuple[Fraction, list[int]] | None:
    """The exact value of ``text`` and the integers it is written with, when it is an expression of integers with
    ``+ - * /`` (a minus sign too) and parentheses only; else None (no expression, a power, a name, a division by
    zero). Evaluated here in fractions: never by Python or sympy."""
    text = text.strip()
    if not _ARITHMETIC.fullmatch(text):
        return None
    numbers: list[int] = []

    def value(node: ast.AST) -> Fraction:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            numbers.append(node.value)
            return Fraction(node.value)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            left, right = value(node.left), value(node.right)
            return _OPS[type(node.op)](left, right)  # type: ignore[no-any-return]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            inner = value(node.operand)
            return -inner if isinstance(node.op, ast.USub) else inner
        raise ValueError("not + - * / of integers")

    try:
        return value(ast.parse(text, mode="eval").body), numbers
    except (SyntaxError, ValueError, ZeroDivisionError, RecursionError, MemoryError):
        return None


def _puzzle24(ds: Any, answer: str, entry: dict[str, Any]) -> float:
    """Its scorer checked only that the answer holds four integers within the config's bounds and that sympy's
    value of it, cut to an integer, is 24: "1*2*3*4" solved every puzzle, and 24.8 counted as 24 ("5*5-1/5"). The
    answer must be the puzzle's four numbers, each used once, with + - * / and parentheses, worth exactly 24 (its
    0.01 otherwise)."""
    got = _arithmetic(answer)
    if got is None:
        return 0.01
    value, numbers = got
    return 1.0 if value == 24 and sorted(numbers) == sorted(entry["metadata"]["numbers"]) else 0.01


def _countdown(ds: Any, answer: str, entry: dict[str, Any]) -> float:
    """Its scorer compared the answer's integers with the given numbers and sympy's value of it with the target:
    any name sympy knows was a free number ("(6+61+94+4)*(pi-pi) + (pi/pi) + ..." reached every target), and so
    were ``**`` and ``!``. The answer must be the given numbers, each once, with + - * / and parentheses; its tiers
    stand (0.05 for other numbers or another value, 0.01 for no such expression)."""
    got = _arithmetic(answer)
    if got is None:
        return 0.01
    value, numbers = got
    if sorted(numbers) != sorted(entry["metadata"]["numbers"]):
        return 0.05
    return 1.0 if value == entry["metadata"]["target"] else 0.05


def _prime_factorization(ds: Any, answer: str, entry: dict[str, Any]) -> float:
    """Its scorer paid 0.5 to any answer whose factors multiply to the number: the number itself ("980", or
    "1 × 980") earned half credit, fifty times an honest wrong factorisation. Half credit needs a factorisation
    now: two factors or more, each above 1 (its 0.01 otherwise)."""
    score = float(ds.score_answer(answer, entry))
    if score != 0.5:
        return score
    factors = ds._normalize_answer(answer)
    return 0.5 if len(factors) >= 2 and all(f > 1 for f in factors) else 0.01


def _holds_oracle(answer: str, entry: dict[str, Any]) -> bool:
    """The answer holds the entry's whole answer and more. Reasoning-gym's default scorer (inherited by ~35
    datasets) and several of its own (tsumego, manipulate_matrix, codeio) pay ``len(oracle) / len(answer)`` to an
    answer that contains the oracle: "TrueFalse" earned ~0.5 on every yes/no task, "-3" 0.5 for 3, "1 2 3 4 5 6 7 8
    9" something on any one-digit task. Listing candidates is no step towards the answer: such partial credit is
    not paid (crossgym's rule; an answer equal to the oracle after the dataset's own normalisation scores 1.0)."""
    oracle = entry.get("answer") if isinstance(entry, dict) else None
    if isinstance(oracle, bool) or not isinstance(oracle, (str, int, float)):
        return False
    want, got = str(oracle).strip().casefold(), answer.strip().casefold()
    return bool(want) and want in got and want != got


#: reasoning-gym datasets whose own scorer rewards answers that do not solve the task: scored by these instead
_CORRECTED = {"game_of_life_halting": _game_of_life_halting, "coin_flip": _coin_flip,
              "complex_arithmetic": _complex_arithmetic, "propositional_logic": _propositional_logic,
              "puzzle24": _puzzle24, "countdown": _countdown, "prime_factorization": _prime_factorization,
              "time_intervals": _time_intervals, "rectangle_count": _rectangle_count}


class ReasoningGym(BaseVerifier):
    """A reasoning-gym task, scored by its dataset's own score_answer (reward in 0..1)."""

    name = "reasoning_gym"
    version = "9"  # 2: the answer marker in any case mix; 3: "the answer is: X" reads X, not ": X"; 4: two upstream
    # scorers corrected (_CORRECTED): game_of_life_halting passed any text, coin_flip gave "0" full credit; 5: no
    # partial credit for an answer that holds the oracle among other text (_holds_oracle: hedges earned ~0.5); an
    # answer whose scoring uses 80% of the timeout as CPU time is malformed (base.CPU_SHARE; it was a timeout)
    # 6: three more scorers corrected: complex_arithmetic paid "nan" 1.0 on every task, propositional_logic paid a
    # tautology 0.25 (an honest wrong conclusion 0.05), coin_flip's tolerance passed "0" for probabilities below 1e-4
    # 7: the scorers that run the answer as Python (eval, sympy's parse_expr) see plain expressions only (expr_guard):
    # an answer holding code is malformed (it wrote files and patched math_verify in the shared worker pool); three
    # more scorers corrected: puzzle24 solved every puzzle with "1*2*3*4", countdown reached every target with pi/pi,
    # prime_factorization paid the number itself half credit
    # 8: an answer whose scoring needs more than the pool worker's memory budget (pool.DEFAULT_WORKER_MEMORY) is
    # malformed and its worker replaced (one grew to any size)
    # 9: constant answers no longer earn partial credit: time_intervals' credit for closeness spans NEAR_MISS of its
    # range ("50 days" earned 0.76 on average), rectangle_count pays exact counts only ("6" earned 0.40), coin_flip's
    # shared digits are significant ones ("0.5" earned 0.17-0.33 for the "0." every probability starts with)
    description = "reasoning-gym tasks scored by the dataset's own score_answer"
    isolation = "process"
    default_timeout = 30.0

    def __init__(self, *, extract: str = "reasoning_gym", tag: str = "answer", regenerate: bool = True,
                 threshold: float = 1.0, **params: Any) -> None:
        super().__init__(**params)
        if extract != "reasoning_gym" and extract not in EXTRACT_MODES:
            raise VerifierError(f"verifier 'reasoning_gym': extract={extract!r} is not one of reasoning_gym, "
                                f"{', '.join(EXTRACT_MODES)} (fix: leave it out to read the last <answer>, as "
                                "reasoning-gym does)")
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 < threshold <= 1:
            raise VerifierError(f"verifier 'reasoning_gym': threshold must be in (0, 1], got {threshold!r} (fix: e.g. threshold: 1.0)")
        self.extract = extract
        self.tag = str(tag)
        self.regenerate = bool(regenerate)
        self.threshold = float(threshold)

    def answer_text(self, text: str) -> str:
        if self.extract == "reasoning_gym":
            from crossgym.verifiers.extract import strip_think

            text = strip_think(text)
            close = f"</{self.tag}>"
            start = text.rfind(f"<{self.tag}>")
            end = text.find(close, start + 1) if start >= 0 else -1
            if start < 0 or end < 0:
                raise Malformed(f"no <{self.tag}>...</{self.tag}> in the completion")
            return text[start + len(self.tag) + 2:end].strip()
        span, _ = locate_answer(text, self.extract, tag=self.tag)
        return span

    def entry(self, task: Task) -> tuple[Any, dict[str, Any]]:
        """(dataset object, entry) for the task."""
        meta = task.metadata.get("reasoning_gym")
        if not isinstance(meta, dict) or not isinstance(meta.get("dataset"), str):
            raise BadTask("metadata['reasoning_gym'] must hold {'dataset', 'config', 'index', 'entry'}")
        config = meta.get("config") or {}
        try:
            ds = dataset_for(meta["dataset"], dict(config))
        except BadTask:
            raise
        except Exception as exc:
            raise BadTask(f"cannot build reasoning-gym dataset {meta['dataset']!r}: {exc}") from None
        index = meta.get("index")
        if self.regenerate and isinstance(index, int) and not isinstance(index, bool):
            try:
                return ds, ds[index]
            except Exception as exc:
                if not isinstance(meta.get("entry"), dict):
                    raise BadTask(f"cannot regenerate entry {index}: {exc}") from None
        stored = meta.get("entry")
        if not isinstance(stored, dict):
            raise BadTask("no 'index' to regenerate and no stored 'entry'")
        return ds, stored

    def score(self, task: Task, completion: Completion) -> Verdict:
        text = completion.text
        if not text.strip():
            raise Malformed("empty completion")
        answer = self.answer_text(text)
        ds, entry = self.entry(task)
        corrected = _CORRECTED.get(str(task.metadata["reasoning_gym"]["dataset"]))
        failed: Exception | None = None
        with plain_expressions() as guard:  # scorers that eval() or parse_expr() the answer see plain expressions
            try:
                value = corrected(ds, answer, entry) if corrected else ds.score_answer(answer, entry)
            except Exception as exc:  # noqa: BLE001 - the dataset's scorer failing on odd model text: wrong answer
                failed = exc
        if guard.refused:  # whatever the scorer made of the refusal
            raise Malformed(f"{guard.refused}: {clip(answer, 60)!r}")
        if failed is not None:
            return Verdict.ok(0.0, reason=clip(f"score_answer raised {type(failed).__name__}: {failed}", 200))
        try:
            reward = float(value)
        except (TypeError, ValueError):
            raise BadTask(f"score_answer returned {value!r}, not a number") from None
        if reward < 1.0 and _holds_oracle(answer, entry):
            return Verdict.ok(0.0, threshold=self.threshold, components={"score_answer": reward},
                              reason=f"{clip(answer, 60)!r} holds the answer among other text: reasoning-gym's "
                                     f"substring credit ({reward:g}) is not paid")
        return Verdict.ok(reward, threshold=self.threshold,
                          reason=f"score_answer gave {reward:g} for {clip(answer, 60)!r}",
                          components={"score_answer": reward})

    @classmethod
    def examples(cls) -> list[Example]:
        config = {"seed": 7, "size": 10}
        meta = {"reasoning_gym": {"dataset": "basic_arithmetic", "config": config, "index": 0, "entry": None}}
        try:
            entry = dataset_for("basic_arithmetic", config)[0]
            right = str(entry["answer"])
        except Exception:  # reasoning-gym missing: the examples then show the bad-task path honestly
            entry, right = None, "0"
        meta["reasoning_gym"]["entry"] = jsonable(entry)
        wrong = str(int(right) + 1) if right.lstrip("-").isdigit() else right + "0"
        return [
            cls.example(right, f"Let me compute.\n<answer>{right}</answer>", "pass", metadata=meta),
            cls.example(right, f"<answer>{wrong}</answer>", "fail", metadata=meta),
            cls.example(right, f"The answer is {right}", "malformed", "no <answer> tag", metadata=meta),
        ]
