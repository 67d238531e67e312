"""instructions against IFEval's own verdicts: crossgym's per-instruction results and IFEval's, response by response.

    python bench/ifeval_reference.py INPUT_DATA RESPONSES EVAL_RESULTS_STRICT [--show N] [--width N]

INPUT_DATA is IFEval's input_data.jsonl (key, prompt, instruction_id_list, kwargs), RESPONSES a model's
input_response_data (prompt, response; IFEval ships GPT-4's, input_response_data_gpt4_20231107_145030.jsonl) and
EVAL_RESULTS_STRICT the eval_results_strict.jsonl IFEval's evaluation_main wrote for those responses
(follow_instruction_list per prompt). Each row becomes a task as the ``ifeval`` task source makes it, its response is
judged by the ``instructions`` verifier as is (strict: no think stripping, no loose variants), and each constraint's
component is compared with IFEval's result for the same instruction. Instructions crossgym cannot judge here (see
crossgym.environments.sources.ifeval.unjudgeable_here: none where langdetect is installed, else
the ids in NEEDS_LANGDETECT) are counted apart. Prints the agreement per instruction id and
overall, then every disagreement with the constraint's detail and an excerpt of the response. Not a timing; IFEval's
files are not part of this repo.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path
from typing import Any

from crossgym.environments.sources.ifeval import constraint_for, unjudgeable_here
from crossgym.protocol.messages import Message
from crossgym.protocol.task import Completion, Task, VerifierSpec
from crossgym.verifiers.constraints import CHECKS, shared_views
from crossgym.verifiers.instructions import Instructions


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _excerpt(text: str, width: int) -> str:
    flat = json.dumps(text, ensure_ascii=False)[1:-1]
    return flat if len(flat) <= width else f"{flat[: width // 2]} [...] {flat[-width // 2:]}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("input_data", type=Path)
    ap.add_argument("responses", type=Path)
    ap.add_argument("strict", type=Path)
    ap.add_argument("--show", type=int, default=1000, help="list at most this many disagreements")
    ap.add_argument("--width", type=int, default=300, help="characters of each response excerpt")
    args = ap.parse_args(argv)
    inputs = {r["prompt"]: r for r in _rows(args.input_data)}
    responses = {r["prompt"]: r["response"] for r in _rows(args.responses)}
    verifier = Instructions(think=False)
    unsupported = unjudgeable_here()
    table: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    prompts: collections.Counter[str] = collections.Counter()
    disagreements: list[str] = []
    for ref in _rows(args.strict):
        row = inputs[ref["prompt"]]
        response = responses.get(ref["prompt"], ref["response"])
        ids, expected = row["instruction_id_list"], ref["follow_instruction_list"]
        assert ids == ref["instruction_id_list"], row["key"]
        judged = [(i, iid, constraint_for(iid, kw)) for i, (iid, kw) in enumerate(zip(ids, row["kwargs"], strict=True))
                  if iid not in unsupported]
        for iid in ids:
            if iid in unsupported:
                table[iid]["unsupported"] += 1
        if not judged:
            continue
        task = Task(id=str(row["key"]), prompt=(Message(role="user", content=row["prompt"]),),
                    answer=[c for _, _, c in judged], verifier=VerifierSpec("instructions"))
        verdict = verifier.verify(task, Completion.from_text(response))
        if verdict.error is not None:
            print(f"key {row['key']}: {verdict.error_kind}: {verdict.error}", file=sys.stderr)
            continue
        all_ours = all_theirs = True
        for j, (i, iid, cons) in enumerate(judged):
            ours = verdict.components[f"{j}:{cons['type']}"] == 1.0
            theirs = bool(expected[i])
            all_ours, all_theirs = all_ours and ours, all_theirs and theirs
            table[iid]["n"] += 1
            table[iid]["agree" if ours == theirs else ("crossgym only" if ours else "IFEval only")] += 1
            if ours != theirs:
                kwargs = {k: v for k, v in cons.items() if k != "type"}
                with shared_views():
                    _, detail = CHECKS[cons["type"]](response, **kwargs)
                disagreements.append(
                    f"key {row['key']} {iid} {json.dumps(row['kwargs'][i])} -> {cons['type']} {json.dumps(kwargs)}\n"
                    f"  IFEval {'pass' if theirs else 'fail'}, crossgym {'pass' if ours else 'fail'} ({detail})\n"
                    f"  {_excerpt(response, args.width)}")
        if len(judged) == len(ids):
            prompts["n"] += 1
            prompts["agree"] += all_ours == all_theirs
            prompts["crossgym"] += all_ours
            prompts["IFEval"] += all_theirs
    head = f"{'instruction id':46} {'judged':>6} {'agree':>6} {'%':>6} {'cg only':>7} {'IF only':>7} {'unsup.':>6}"
    print(head)
    print("-" * len(head))
    total: collections.Counter[str] = collections.Counter()
    for iid in sorted(table):
        c = table[iid]
        total.update(c)
        pct = f"{100 * c['agree'] / c['n']:.1f}" if c["n"] else "-"
        print(f"{iid:46} {c['n']:>6} {c['agree']:>6} {pct:>6} {c['crossgym only']:>7} {c['IFEval only']:>7} "
              f"{c['unsupported']:>6}")
    print("-" * len(head))
    print(f"{'all judged instructions':46} {total['n']:>6} {total['agree']:>6} "
          f"{100 * total['agree'] / max(total['n'], 1):>6.1f} {total['crossgym only']:>7} {total['IFEval only']:>7} "
          f"{total['unsupported']:>6}")
    print(f"prompts with every instruction judged: {prompts['n']}; same prompt-level verdict: {prompts['agree']} "
          f"({100 * prompts['agree'] / max(prompts['n'], 1):.1f}%); all followed: crossgym {prompts['crossgym']}, "
          f"IFEval {prompts['IFEval']}")
    if disagreements:
        print(f"\n{len(disagreements)} disagreements" + (f" (first {args.show})" if len(disagreements) > args.show
                                                         else ""))
        for d in disagreements[: args.show]:
            print(d)
    return 0


if __name__ == "__main__":
    sys.exit(main())
