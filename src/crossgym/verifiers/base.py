"""BaseVerifier: the one class every built-in verifier derives from, and how to write your own.

Writing a verifier
------------------
1. Subclass ``BaseVerifier``; set ``name`` (the registered name), ``version`` (bump it whenever scoring changes),
   ``description`` (one line) and ``isolation``:

   * ``"inline"``  (default) ``score`` runs in the caller's thread. Only for verifiers that are linear-time on capped
     input: ``verify`` rejects completions over ``max_chars`` (1,000,000 characters) before ``score`` runs, so a
     linear scorer always finishes. No regex with nested quantifiers on model text, no sympy, no network.
   * ``"thread"``  ``score`` runs on a daemon thread and ``verify`` returns ``Verdict.timeout`` at the deadline.
     For I/O-bound scorers (HTTP judge, sandbox clients). A scorer that overruns is abandoned, not killed, so it
     should also bound its own work: read ``time_left()`` for its socket timeouts.
   * ``"process"`` ``score`` runs in crossgym's worker-process pool (``crossgym.verifiers.pool``); at the deadline
     the worker is killed and replaced, and ``verify`` returns ``Verdict.timeout``. For CPU-bound scorers that can
     blow up (sympy through math-verify). The class must be importable by module path and its params picklable.
     A completion whose scoring uses ``CPU_SHARE`` of the timeout as the worker's own CPU time is stopped there
     and malformed (the model's fault), not a timeout (the machine's): CPU time, so load cannot cause it. So is
     one whose scoring allocates more than the worker's memory budget beyond what the worker was forked with
     (``CROSSGYM_VERIFIER_WORKER_MEMORY``, default 1 GiB): a MemoryError, and the worker is replaced. Import big
     libraries (torch) at module level, so the pool's zygote holds them before forking, or raise the budget.

2. Take your params as keyword-only arguments, validate them (raise ``VerifierError`` with what/where/fix on bad
   ones) and pass ``timeout`` and the rest up::

       class Contains(BaseVerifier):
           name, version, description = "contains", "1", "the answer appears in the completion"

           def __init__(self, *, case_sensitive: bool = False, **params: Any) -> None:
               super().__init__(**params)        # takes timeout=..., rejects unknown params
               self.case_sensitive = bool(case_sensitive)

           def score(self, task: Task, completion: Completion) -> Verdict:
               text = completion.text
               if not text.strip():
                   raise Malformed("empty completion")
               found = str(task.answer) in text if self.case_sensitive else \\
                   str(task.answer).lower() in text.lower()
               return Verdict.ok(1.0 if found else 0.0, reason="found" if found else "not found")

           @classmethod
           def examples(cls) -> list[Example]:
               return [cls.example("Paris", "It is Paris.", "pass"), cls.example("Paris", "Rome", "fail"),
                       cls.example("Paris", "", "malformed")]

3. ``score`` may raise ``Malformed("why")`` for unusable completions (-> ``Verdict.malformed``) and ``BadTask("why")``
   for a task whose answer or params do not fit (-> ``Verdict.exception("bad task: ...")``); any other exception
   becomes ``Verdict.exception``. ``verify`` never raises: it checks the inputs (a Task, a Completion, at most
   ``max_chars`` characters, valid Unicode), dispatches per ``isolation`` and enforces the deadline.

4. Instances are shared between threads (``crossgym.load_verifier`` caches one per spec): keep no per-call state
   on ``self``. Be deterministic: the same task and completion always give the same Verdict.

5. Register it with one ``registry.add("contains", "yourpkg.module:Contains", description=...)`` in a
   ``crossgym_register_verifiers`` hook, and ship ``examples()`` (a pass, a fail and a malformed case at least):
   ``crossgym check contains`` runs them.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from crossgym.protocol.errors import VerifierError
from crossgym.protocol.messages import Message, ToolCall, ToolSpec
from crossgym.protocol.task import Completion, Example, Expect, Task, Verdict, VerifierSpec, carried_task

log = logging.getLogger(__name__)

Isolation = Literal["inline", "thread", "process"]

#: completions with more characters than this (over all messages) are malformed before any scoring runs
MAX_CHARS = 1_000_000
#: and so are completions with more messages than this
MAX_MESSAGES = 10_000
#: reasons in verdicts are clipped to this many characters
MAX_REASON = 400


class Malformed(Exception):
    """Raised by ``score`` when the completion cannot be scored (no answer, bad syntax): a malformed Verdict."""


class BadTask(Exception):
    """Raised by ``score`` when the task's answer or metadata does not fit this verifier: an exception Verdict."""


class OutOfTime(Exception):
    """Raised by ``score`` when work it handed to the worker pool was killed at its deadline after ``cpu_s`` CPU
    seconds: its Verdict is ``timed_out``'s, the one rule for every killed pool job (malformed when the job was busy
    with the input, a timeout when it waited for the machine)."""

    def __init__(self, timeout: float, cpu_s: float) -> None:
        super().__init__(f"exceeded {timeout:g} s after {cpu_s:.1f} s of CPU")
        self.timeout, self.cpu_s = timeout, cpu_s


_deadline = threading.local()
_isfinite = math.isfinite


def time_left(default: float = 30.0) -> float:
    """Seconds until the current ``score`` call's deadline (``default`` outside a verifier call)."""
    end: float | None = getattr(_deadline, "end", None)
    if end is None:
        return default
    return max(0.0, end - time.monotonic())


def clip(text: str, n: int = 80) -> str:
    """``text`` cut to ``n`` characters with an ellipsis, for reasons."""
    text = str(text)
    return text if len(text) <= n else text[: n - 1] + "…"


def check_inputs(task: Any, completion: Any, max_chars: int = MAX_CHARS) -> Verdict | None:
    """A malformed Verdict when the inputs cannot be scored at all, else None. Linear in the input size."""
    if not isinstance(task, Task):
        return Verdict.malformed(f"task must be a crossgym Task, got {type(task).__name__}")
    if not isinstance(completion, Completion):
        return Verdict.malformed(f"completion must be a crossgym Completion, got {type(completion).__name__}")
    msgs = completion.messages
    if not isinstance(msgs, tuple) or len(msgs) > MAX_MESSAGES:
        return Verdict.malformed(f"completion has more than {MAX_MESSAGES} messages")
    total = 0
    for m in msgs:
        if not isinstance(m, Message) or not isinstance(m.content, str):
            return Verdict.malformed("completion messages must be crossgym Messages with text content")
        if m.tool_calls and not _tool_calls_ok(m.tool_calls):
            return Verdict.malformed("completion tool_calls must be crossgym ToolCalls with a text id and name and "
                                     "an arguments object (build them with ToolCall.from_dict)")
        total += len(m.content)
        if total > max_chars:
            return Verdict.malformed(f"completion is over the {max_chars:,}-character cap")
        if not m.content.isascii():
            try:
                m.content.encode("utf-8")
            except UnicodeEncodeError as exc:
                return Verdict.malformed(f"completion text is not valid Unicode ({exc.reason} at {exc.start})")
    return None


def _tool_calls_ok(calls: Any) -> bool:
    """Whether a message's tool calls are ToolCalls verifiers can read: a dict or a string there (the public API
    takes any object) made tool_call, sql and shell raise, an infrastructure error instead of a malformed call."""
    return isinstance(calls, (tuple, list)) and all(
        isinstance(c, ToolCall) and isinstance(c.name, str) and isinstance(c.id, str)
        and isinstance(c.arguments, dict) and (c.error is None or isinstance(c.error, str))
        and (c.raw_arguments is None or isinstance(c.raw_arguments, str)) for c in calls)


#: a task nested deeper than this is the dataset's fault when scoring it runs out of stack
TASK_DEPTH = 256


def _nests_deeper(value: Any, limit: int) -> bool:
    """Whether ``value`` (lists, tuples, dicts) nests more than ``limit`` levels; iterative, so it cannot itself
    run out of stack."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend((v, depth + 1) for v in item)
    return False


def _deep_task(task: Any) -> bool:
    parts = (getattr(task, "prompt", None), getattr(task, "answer", None), getattr(task, "metadata", None),
             getattr(getattr(task, "verifier", None), "params", None))
    return any(_nests_deeper(p, TASK_DEPTH) for p in parts)


def _finite(v: Verdict) -> Verdict:
    if not isinstance(v, Verdict):
        return Verdict.exception(f"score returned {type(v).__name__}, not a Verdict")
    if not math.isfinite(v.reward):
        return Verdict.exception(f"score returned a non-finite reward {v.reward!r}")
    if len(v.reason) > MAX_REASON:
        return Verdict(reward=v.reward, passed=v.passed, components=v.components, reason=clip(v.reason, MAX_REASON),
                       error=v.error)
    return v


def _rebuild(cls: type[BaseVerifier], kwargs: dict[str, Any]) -> BaseVerifier:
    return cls(**kwargs)


_CARRIED: dict[int, tuple[Task, Task]] = {}


def judged_task(task: Task) -> Task:
    """The task ``score`` sees: its answer and metadata as JSON carries them (``carried_task``: NaN and
    infinities null, tuples lists, keys text), so a task judged in process gets the verdict it gets through serve,
    a rollout record or a trainer's task column. A pandas NaN answer passed "nan" in process while serve and
    verify-batch judged null; {"x": NaN} in json_match failed null in process and passed it through serve.
    Memoised per Task object (a GRPO group's tasks are one object)."""
    hit = _CARRIED.get(id(task))
    if hit is not None and hit[0] is task:
        return hit[1]
    out = carried_task(task)
    if len(_CARRIED) > 4096:
        _CARRIED.clear()
    _CARRIED[id(task)] = (task, out)
    return out


_WORKER_CACHE: dict[tuple[type, str], BaseVerifier] = {}


#: the share of a process-isolated verifier's timeout that scoring one completion may take as the worker's own CPU
#: time: past it the completion is unusable (the model's fault, reward 0), where the wall deadline made it a timeout,
#: the machine's fault, masked under ``on_error: none`` (``\\binom{10^9}{10^5}`` to math held a worker for its 5 s)
CPU_SHARE = 0.8


#: a pool job that ran out of wall time having used at least this share of its timeout as CPU time was busy with
#: its input, not waiting for a core: the completion's failure (a loaded machine gave the CPU budget no time)
CPU_FAULT_SHARE = 0.5


def timed_out(timeout: float, cpu_s: float) -> Verdict:
    """The Verdict of a pool job killed at its deadline after ``cpu_s`` CPU seconds: malformed (the completion's
    cost) from CPU_FAULT_SHARE of the timeout, else a timeout (the machine's)."""
    if cpu_s >= CPU_FAULT_SHARE * timeout:
        return Verdict.malformed(f"scoring it took over {cpu_s:.1f} s of CPU before the {timeout:g} s deadline: an "
                                 "answer that costs that much is unusable")
    return Verdict.timeout(timeout)


def out_of_memory(name: str) -> Verdict:
    """The Verdict of a ``score`` that raised MemoryError. In a memory-limited pool worker the completion cost more
    than the worker's budget (``pool.DEFAULT_WORKER_MEMORY``): malformed, the model's fault, and the worker retires
    (``pool.note_out_of_memory``). Anywhere else the machine ran out: an exception Verdict, as before."""
    from crossgym.verifiers.pool import note_out_of_memory, worker_memory

    budget = worker_memory()
    if budget is None:
        return Verdict.exception(f"MemoryError: verifier {name!r} ran out of memory")
    note_out_of_memory()
    return Verdict.malformed(f"scoring it needed over {budget / 2**20:,.0f} MiB of memory (the verifier worker's "
                             "budget): an answer that costs that much is unusable")


class _OverBudget(BaseException):
    """Raised in a pool worker when scoring one completion used its CPU budget (never caught as an Exception)."""


def _over_budget(signum: int, frame: Any) -> None:
    raise _OverBudget


def _pool_score(cls: type[BaseVerifier], kwargs: dict[str, Any], task: Task, completion: Completion,
                timeout: float) -> Verdict:
    """Runs in a pool worker: build (once) and score in-process, on the worker's main thread, within a CPU budget
    of ``CPU_SHARE * timeout`` (CPU time, so a loaded machine does not make an honest answer over budget)."""
    key = (cls, json.dumps(kwargs, sort_keys=True, default=repr))
    inst = _WORKER_CACHE.get(key)
    if inst is None:
        if len(_WORKER_CACHE) > 256:
            _WORKER_CACHE.clear()
        inst = _WORKER_CACHE[key] = cls(**kwargs)
    if threading.current_thread() is not threading.main_thread():
        return inst.run_score(task, completion, timeout)
    import signal

    budget = CPU_SHARE * timeout
    before = signal.signal(signal.SIGPROF, _over_budget)
    try:
        try:
            signal.setitimer(signal.ITIMER_PROF, budget, 0.05)  # (again every 50 ms, should code swallow the first)
            return inst.run_score(task, completion, timeout)
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)  # before anything else: a second expiry raised in the handler
    except _OverBudget:
        return Verdict.malformed(f"scoring it took over {budget:g} s of CPU ({CPU_SHARE:g} of the verifier's "
                                 f"{timeout:g} s timeout): an answer that costs that much is unusable")
    finally:
        signal.signal(signal.SIGPROF, before)


class BaseVerifier:
    """Base of the built-in verifiers: input checks, isolation, deadline and the never-raise guarantee."""

    #: the registered name
    name: ClassVar[str] = ""
    #: bump whenever scoring changes, so old rewards can be told apart
    version: ClassVar[str] = "1"
    #: one line for `crossgym list`
    description: ClassVar[str] = ""
    #: where ``score`` runs: "inline", "thread" or "process" (see the module docstring)
    isolation: ClassVar[Isolation] = "inline"
    #: seconds per call unless ``timeout=`` is given
    default_timeout: ClassVar[float] = 10.0
    #: completions longer than this are malformed before scoring
    max_chars: ClassVar[int] = MAX_CHARS

    _init_kwargs: dict[str, Any]

    def __new__(cls, *args: Any, **kwargs: Any) -> BaseVerifier:
        self = super().__new__(cls)
        self._init_kwargs = dict(kwargs)  # what rebuilds this instance in a worker process
        return self

    def __init__(self, *, timeout: float | None = None, **params: Any) -> None:
        label = self.name or type(self).__name__
        if params:
            raise VerifierError(f"verifier {label!r}: unknown params {sorted(params)} (fix: remove them; see "
                                f"`crossgym list` or docs/verifiers.md for the accepted ones)")
        if timeout is None:
            timeout = self.default_timeout
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout < math.inf:
            raise VerifierError(f"verifier {label!r}: timeout must be a positive number of seconds, got {timeout!r} "
                                f"(fix: pass e.g. timeout: {self.default_timeout:g}, or leave it out)")
        self.timeout = float(timeout)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self._init_kwargs))

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self._init_kwargs.items())
        return f"{type(self).__name__}({args})"

    @property
    def spec(self) -> VerifierSpec:
        """The spec that rebuilds this verifier through the registry."""
        return VerifierSpec(name=self.name, params=dict(self._init_kwargs))

    # ------------------------------------------------------------------ what subclasses write
    def score(self, task: Task, completion: Completion) -> Verdict:
        """Judge one completion; may raise Malformed or BadTask. Inputs are already checked."""
        raise NotImplementedError(f"{type(self).__name__} must implement score()")

    @classmethod
    def examples(cls) -> list[Example]:
        """Worked cases: at least one pass, one fail and one malformed."""
        return []

    # ------------------------------------------------------------------ the never-raising entry point
    def verify(self, task: Task, completion: Completion) -> Verdict:
        """Score ``completion`` for ``task``. Never raises; honours ``self.timeout`` from any thread."""
        try:
            bad = check_inputs(task, completion, self.max_chars)
            if bad is not None:
                return bad
            isolation = self.isolation
            if isolation == "inline":
                return self.run_score(task, completion, self.timeout)
            if isolation == "process":
                return self._verify_in_pool(task, completion)
            if isolation == "thread":
                return self._verify_in_thread(task, completion)
            return self.run_score(task, completion, self.timeout)
        except Exception as exc:  # the guarantee: a bug here still gives a Verdict
            log.debug("verifier %s failed outside score", self.name, exc_info=True)
            return Verdict.exception(clip(f"{type(exc).__name__}: {exc}", MAX_REASON))

    def run_score(self, task: Task, completion: Completion, timeout: float | None = None) -> Verdict:
        """``score`` in this thread with errors mapped to Verdicts (the deadline is only advisory here)."""
        local = _deadline
        outer = getattr(local, "end", None)  # a composite's own deadline, restored afterwards
        end = time.monotonic() + (self.timeout if timeout is None else timeout)
        local.end = end if outer is None or end < outer else outer
        try:
            v = self.score(judged_task(task), completion)
            if type(v) is Verdict and _isfinite(v.reward) and len(v.reason) <= MAX_REASON:
                return v  # what _finite returns for it, without the call
            return _finite(v)
        except Malformed as exc:
            return Verdict.malformed(clip(str(exc) or "unusable completion", MAX_REASON))
        except BadTask as exc:
            return Verdict.exception(clip(f"bad task {getattr(task, 'id', '?')!r}: {exc}", MAX_REASON))
        except OutOfTime as exc:
            return timed_out(exc.timeout, exc.cpu_s)
        except RecursionError:  # the task's fault when it is the deep one (its answer, metadata...), else the model's
            if _deep_task(task):
                return Verdict.exception(f"bad task {clip(str(getattr(task, 'id', '?')), 200)!r}: it nests more "
                                         f"than {TASK_DEPTH} levels deep")
            return Verdict.malformed("input is nested too deeply")
        except MemoryError:
            return out_of_memory(self.name)
        except Exception as exc:
            log.debug("verifier %s raised", self.name, exc_info=True)
            return Verdict.exception(clip(f"{type(exc).__name__}: {exc}", MAX_REASON))
        finally:
            local.end = outer

    def _verify_in_thread(self, task: Task, completion: Completion) -> Verdict:
        box: list[Verdict] = []
        done = threading.Event()

        def target() -> None:
            try:
                box.append(self.run_score(task, completion, self.timeout))
            finally:
                done.set()

        t = threading.Thread(target=target, daemon=True, name=f"crossgym-verify-{self.name}")
        t.start()
        if not done.wait(self.timeout) or not box:
            log.debug("verifier %s timed out after %g s (thread abandoned)", self.name, self.timeout)
            return Verdict.timeout(self.timeout)
        return box[0]

    def _verify_in_pool(self, task: Task, completion: Completion) -> Verdict:
        from crossgym.verifiers.pool import PoolError, PoolTimeout, get_pool

        try:
            pool = get_pool()
            pool.require(type(self).__module__)
            out = pool.call(_pool_score, (type(self), self._init_kwargs, task, completion, self.timeout),
                                  self.timeout)
        except PoolTimeout as exc:
            return timed_out(self.timeout, exc.cpu_s)
        except PoolError as exc:
            return Verdict.exception(clip(str(exc), MAX_REASON))
        return _finite(out)

    # ------------------------------------------------------------------ helpers for examples() and tests
    @classmethod
    def task(cls, answer: Any, *, params: dict[str, Any] | None = None, prompt: str = "(prompt)",
             tools: Sequence[ToolSpec | dict[str, Any]] = (), task_id: str = "example",
             metadata: dict[str, Any] | None = None) -> Task:
        """A Task scored by this verifier with ``params``."""
        return Task(id=task_id, prompt=(Message("user", prompt),), answer=answer, verifier=VerifierSpec(cls.name, dict(params or {})),
                    tools=tuple(t if isinstance(t, ToolSpec) else ToolSpec.from_dict(t) for t in tools),
                    metadata=dict(metadata or {}))

    @classmethod
    def example(cls, answer: Any, completion: str | Completion, expect: Expect, note: str = "", *,
                params: dict[str, Any] | None = None, tools: Sequence[ToolSpec | dict[str, Any]] = (),
                prompt: str = "(prompt)", metadata: dict[str, Any] | None = None) -> Example:
        """One Example for ``examples()``; ``completion`` is assistant text or a Completion."""
        comp = completion if isinstance(completion, Completion) else Completion.from_text(completion)
        return Example(task=cls.task(answer, params=params, tools=tools, prompt=prompt, metadata=metadata),
                       completion=comp, expect=expect, note=note)
