"""reasoning_gym against reasoning-gym's own scorers: the same answers scored by ``score_answer`` directly and by
crossgym's ``reasoning_gym`` verifier (in this process, through ``run_score``), dataset by dataset.

    OMP_NUM_THREADS=1 python bench/reasoning_gym_reference.py [--n 8] [--seed 0] [--datasets a,b] [--show 20]

For every registered dataset (or those named), ``--n`` entries; each is scored with its oracle answer and with a
wrong one (the oracle with its last character replaced by a 1, or a 2). An agreement is the same reward from both. Where crossgym
differs on purpose the difference is counted apart: a dataset whose scorer it corrects (``_CORRECTED``), an
answer that holds the oracle among other text (``_holds_oracle``), or one that states an unevaluated operation
(``Integral(...)``: reasoning-gym's own oracle where sympy could not integrate). Anything else is listed: an honest answer that
``expr_guard`` refused would show here. Not a timing.
"""

from __future__ import annotations

import argparse
import collections
import sys
import warnings


def _unevaluated(answer: str) -> bool:
    """The answer states an operation instead of its result (expr_guard refuses those): reasoning-gym writes an
    integral sympy could not do as its own oracle ("3*Integral(x**3*cos(3*x), x) + C")."""
    return any(f"{op}(" in answer for op in ("Integral", "Derivative", "Sum", "Product", "Limit"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--datasets", default="")
    ap.add_argument("--show", type=int, default=20)
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    import reasoning_gym
    from reasoning_gym.factory import DATASETS

    from crossgym.protocol.task import Completion, Task, VerifierSpec
    from crossgym.verifiers.reasoning_gym import _CORRECTED, ReasoningGym, _holds_oracle, jsonable

    names = [d for d in args.datasets.split(",") if d] or sorted(DATASETS)
    verifier = ReasoningGym()
    counts: dict[str, collections.Counter[str]] = {}
    shown: list[str] = []
    for name in names:
        c = counts.setdefault(name, collections.Counter())
        config = {"seed": args.seed, "size": args.n}
        try:
            ds = reasoning_gym.create_dataset(name, **config)
            entries = [ds[i] for i in range(args.n)]
        except Exception as exc:  # noqa: BLE001 - a dataset that needs what is not installed here
            c["unbuildable"] += 1
            shown.append(f"{name}: cannot build ({type(exc).__name__}: {str(exc)[:80]})")
            continue
        for i, entry in enumerate(entries):
            oracle = entry.get("answer")
            if not isinstance(oracle, str) or not oracle.strip():
                c["no text oracle"] += 1
                continue
            meta = {"reasoning_gym": {"dataset": name, "config": config, "index": i, "entry": jsonable(entry)}}
            task = Task(id=f"{name}-{i}", prompt="q", answer=None, verifier=VerifierSpec("reasoning_gym", {}),
                        metadata=meta)
            wrong = oracle.rstrip()[:-1] + ("1" if oracle.rstrip()[-1] != "1" else "2")
            for kind, answer in (("oracle", oracle), ("wrong", wrong)):
                try:
                    theirs = float(ds.score_answer(answer, entry))
                except Exception:  # noqa: BLE001 - crossgym counts a raising scorer as 0
                    theirs = 0.0
                ours = verifier.run_score(task, Completion.from_text(f"<answer>{answer}</answer>"))
                if ours.reward == theirs:
                    c["agree"] += 1
                elif name in _CORRECTED or _holds_oracle(answer.strip(), entry) or _unevaluated(answer):
                    c["corrected"] += 1
                else:
                    c["differ"] += 1
                    shown.append(f"{name}[{i}] {kind} {answer[:60]!r}: reasoning-gym {theirs:g}, crossgym "
                                 f"{ours.reward:g} ({(ours.error or ours.reason)[:120]})")
    total = collections.Counter[str]()
    print(f"{'dataset':34s} {'agree':>6s} {'corr.':>6s} {'differ':>6s}")
    for name, c in counts.items():
        total.update(c)
        if c["differ"] or args.datasets:
            print(f"{name:34s} {c['agree']:6d} {c['corrected']:6d} {c['differ']:6d}")
    judged = total["agree"] + total["corrected"] + total["differ"]
    print(f"{len(counts)} datasets, {judged} answers: {total['agree']} agree, {total['corrected']} differ on "
          f"purpose (corrected scorers, oracle among other text, unevaluated operations), {total['differ']} differ "
          f"otherwise; "
          f"{total['no text oracle']} entries without a text oracle, {total['unbuildable']} datasets not buildable")
    for line in shown[: args.show]:
        print(" ", line)
    return 1 if total["differ"] else 0


if __name__ == "__main__":
    sys.exit(main())
