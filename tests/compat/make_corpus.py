"""Freeze the compat corpus: tests/compat/corpus/garbage.jsonl and verifiers/<name>.jsonl. Run once, commit the files.

    python tests/compat/make_corpus.py              # write what is missing (new verifiers), keep frozen files
    python tests/compat/make_corpus.py --force math # re-freeze one verifier (after a deliberate scoring change)

Per verifier: completions beyond its examples, made from them (padding, case, fences, prose around the answer,
truncation, think blocks, special tokens, multi-turn and tool-call wrappings, and each example's completion on the
other examples' tasks), each stored with its full task and the verdict it got when frozen (with the verifier's
version), so later runs can tell a scoring change from a version bump.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from crossgym.compat_tests.garbage import GARBAGE_VERSION, garbage_specs
from crossgym.protocol.messages import Message, ToolCall
from crossgym.protocol.task import Completion, Example

HERE = Path(__file__).resolve().parent / "corpus"

TEXT_MUTATIONS: dict[str, Callable[[str], str]] = {
    "padded": lambda t: "  \n" + t + "\n\n  ",
    "upper": str.upper,
    "lower": str.lower,
    "fenced": lambda t: "```\n" + t + "\n```",
    "prose-before": lambda t: "Sure! Here is my answer.\n\n" + t,
    "prose-after": lambda t: t + "\n\nHope that helps.",
    "doubled": lambda t: t + "\n" + t,
    "half": lambda t: t[: len(t) // 2],
    "think": lambda t: "<think>Let me work this out step by step.</think>\n" + t,
    "boxed": lambda t: "\\boxed{" + t + "}",
    "crlf": lambda t: t.replace("\n", "\r\n") + "\r\n",
    "end-token": lambda t: t + "<|im_end|>",
}


def _with_final_text(c: Completion, text: str) -> Completion:
    """``c`` with its last assistant message's content replaced (tool calls and earlier turns kept)."""
    msgs = list(c.messages)
    for i in range(len(msgs) - 1, -1, -1):
        if msgs[i].role == "assistant":
            m = msgs[i]
            msgs[i] = Message(role="assistant", content=text, tool_calls=m.tool_calls, tool_call_id=m.tool_call_id,
                              name=m.name)
            return Completion(messages=tuple(msgs))
    return Completion(messages=(*msgs, Message(role="assistant", content=text)))


def _multi_turn(c: Completion) -> dict[str, Completion]:
    """The same final answer reached over several turns: a clarification round, and a tool call first."""
    talk = (Message(role="assistant", content="Let me think about it first."), Message(role="user", content="Go on."))
    call = ToolCall(id="call_0", name="lookup", arguments={"query": "the question"})
    tool = (Message(role="assistant", content="", tool_calls=(call,)),
            Message(role="tool", content='{"result": "see above"}', tool_call_id="call_0", name="lookup"))
    return {"two-turns": Completion(messages=(*talk, *c.messages)),
            "tool-first": Completion(messages=(*tool, *c.messages))}


def verifier_records(name: str, examples: list[Example]) -> list[dict[str, Any]]:
    """The corpus records for one verifier, each scored now for its reference verdict."""
    from crossgym.api import load_verifier
    from crossgym.plugins import registry

    version = str(getattr(registry("verifiers").load(name), "version", ""))
    items: list[tuple[str, str, Any, Completion]] = []
    for i, ex in enumerate(examples):
        text = ex.completion.text
        for mname, fn in TEXT_MUTATIONS.items():
            items.append((f"ex{i}-{mname}", f"example {i} ({ex.expect}), {mname}", ex.task,
                          _with_final_text(ex.completion, fn(text))))
        if len(ex.completion.messages) == 1:
            for mname, comp in _multi_turn(ex.completion).items():
                items.append((f"ex{i}-{mname}", f"example {i} ({ex.expect}), {mname}", ex.task, comp))
        for j, other in enumerate(examples):
            if j != i and other.task.to_json() != ex.task.to_json():
                items.append((f"ex{j}-on-task{i}", f"example {j}'s completion on example {i}'s task", ex.task,
                              other.completion))
    out = []
    seen: set[str] = set()
    for id_, note, task, comp in items:
        key = task.to_json() + json.dumps(comp.to_dict(), sort_keys=True)
        if key in seen:
            continue
        seen.add(key)
        v = load_verifier(task.verifier).verify(task, comp)
        out.append({"id": id_, "note": note, "task": task.to_dict(), "completion": comp.to_dict(),
                    "reference": {"version": version, "reward": v.reward, "passed": v.passed,
                                  "error": v.error_kind}})
    return out


def _dump(records: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=True, sort_keys=True) + "\n" for r in records)


def main(argv: list[str] | None = None) -> int:
    from crossgym.compat_tests.verifier_checks import get_examples, unavailable_reason
    from crossgym.plugins import registry

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="verifiers to (re)freeze (default: every registered one missing a file)")
    ap.add_argument("--force", action="store_true", help="overwrite existing files")
    ap.add_argument("--out", type=Path, default=HERE)
    args = ap.parse_args(argv)
    (args.out / "verifiers").mkdir(parents=True, exist_ok=True)
    garbage = args.out / "garbage.jsonl"
    text = _dump(garbage_specs())
    if garbage.exists() and garbage.read_text(encoding="utf-8") != text and not args.force:
        print(f"{garbage} differs from the generator (GARBAGE_VERSION {GARBAGE_VERSION}); use --force to re-freeze")
    elif not garbage.exists() or args.force:
        garbage.write_text(text, encoding="utf-8")
        print(f"wrote {garbage}")
    manifest_path = args.out / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {"verifiers": {}}
    manifest["garbage_version"] = GARBAGE_VERSION
    for name in args.names or registry("verifiers").names():
        path = args.out / "verifiers" / f"{name}.jsonl"
        if path.exists() and not args.force:
            continue
        why = unavailable_reason(name)
        if why:
            print(f"skip {name}: {why}")
            continue
        records = verifier_records(name, get_examples(name))
        path.write_text(_dump(records), encoding="utf-8")
        manifest["verifiers"][name] = {"version": records[0]["reference"]["version"] if records else None,
                                       "records": len(records)}
        print(f"wrote {path} ({len(records)} records)")
    manifest_path.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
