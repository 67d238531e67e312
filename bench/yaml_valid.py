"""yaml_valid: the same verdict with and without libyaml, and what the libyaml fast path still buys, in one run.

    OMP_NUM_THREADS=1 python bench/yaml_valid.py [--n 3000] [--agree 20000] [--seed 0] [--json]

Timing set: tests/verifiers/yaml_texts.py's ``realistic`` (config-like documents, about a quarter broken: bad
indentation, unclosed flow, a tab after ':', truncation, a second document). Per document, CPU microseconds of
this process, best of --repeat, for:

* before (yaml_valid 2's load_yaml, copied below): libyaml when present, else the pure-Python loader;
* after (load_yaml now): the pure-Python loader is the reference, libyaml answers only where it cannot differ;

each with libyaml (this machine) and with it forced off (``yaml.CSafeLoader`` removed, as on a PyYAML built
without libyaml). Agreement: ``documents`` (mutated YAML-like texts), every verdict (reward, passed, error kind,
reason) of yaml_valid with libyaml against yaml_valid without it, before and after.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "verifiers"))

import yaml  # noqa: E402
import yaml_texts  # noqa: E402  (tests/verifiers/yaml_texts.py: the seeded texts the tests use)

from crossgym.protocol.task import Completion  # noqa: E402
from crossgym.verifiers import markup  # noqa: E402
from crossgym.verifiers.markup import YamlValid  # noqa: E402


def load_yaml_v2(text: str) -> Any:
    """yaml_valid version 2's load_yaml, verbatim but for the names: libyaml where PyYAML has it."""
    if len(markup._ALIAS.findall(text)) > markup.MAX_YAML_ALIASES:
        raise markup._Refused("aliases")
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        docs = list(yaml.load_all(text, Loader=loader))
    except RecursionError:
        raise markup._Refused("YAML nests too deeply") from None
    except yaml.YAMLError as exc:
        if "nesting depth" in str(getattr(exc, "problem", None) or ""):
            raise markup._Refused("YAML nests too deeply") from None
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ValueError(f"invalid YAML: {getattr(exc, 'problem', None) or exc}{where}") from None
    if len(docs) != 1:
        raise ValueError(f"{len(docs)} YAML documents, expected one")
    return docs[0]


@contextmanager
def without_libyaml() -> Iterator[None]:
    saved = yaml.__dict__.pop("CSafeLoader", None)
    try:
        yield
    finally:
        if saved is not None:
            yaml.CSafeLoader = saved


@contextmanager
def loader(fn: Callable[[str], Any]) -> Iterator[None]:
    saved = markup.load_yaml
    markup.load_yaml = fn
    try:
        yield
    finally:
        markup.load_yaml = saved


def verdicts(texts: list[str]) -> list[tuple[Any, ...]]:
    v, task = YamlValid(), YamlValid.task(None)
    out = []
    for t in texts:
        r = v.verify(task, Completion.from_text(t))
        out.append((r.reward, r.passed, r.error_kind, r.reason))
    return out


def per_doc(fn: Callable[[str], Any], texts: list[str], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        for t in texts:
            try:
                fn(t)
            except (ValueError, markup._Refused):
                pass
        best = min(best, time.process_time() - t0)
    return best / len(texts) * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=3000, help="documents in the timing set")
    ap.add_argument("--agree", type=int, default=20000, help="mutated texts in the agreement check (0: skip)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if not hasattr(yaml, "CSafeLoader"):
        sys.exit("this PyYAML has no libyaml (yaml.CSafeLoader): install a PyYAML wheel to compare both loaders")
    texts = yaml_texts.realistic(a.seed, a.n)
    fast = sum(not markup.libyaml_may_differ(t) for t in texts)
    res: dict[str, Any] = {"n": a.n, "fast_path_share": fast / a.n}
    for name, fn in (("before", load_yaml_v2), ("after", markup.load_yaml)):
        res[f"{name}_libyaml_us"] = per_doc(fn, texts, a.repeat)
        with without_libyaml():
            res[f"{name}_pure_us"] = per_doc(fn, texts, a.repeat)
    if a.agree:
        docs = yaml_texts.documents(a.seed + 1, a.agree)
        for name, fn in (("before", load_yaml_v2), ("after", markup.load_yaml)):
            with loader(fn):
                c = verdicts(docs)
                with without_libyaml():
                    p = verdicts(docs)
            res[f"{name}_verdict_diffs"] = sum((x[:3] != y[:3]) for x, y in zip(c, p, strict=True))
            res[f"{name}_reason_diffs"] = sum((x[:3] == y[:3] and x[3] != y[3]) for x, y in zip(c, p, strict=True))
        res["agree_n"] = a.agree
    if a.json:
        print(json.dumps(res, indent=1))
        return
    print(f"timing set: {a.n} config-like documents (seed {a.seed}), {res['fast_path_share']:.0%} on the libyaml path")
    print(f"{'us per document':<28}{'before (v2)':>14}{'after (v3)':>14}")
    print(f"{'with libyaml':<28}{res['before_libyaml_us']:>14.1f}{res['after_libyaml_us']:>14.1f}")
    print(f"{'without libyaml':<28}{res['before_pure_us']:>14.1f}{res['after_pure_us']:>14.1f}")
    if a.agree:
        print(f"agreement, {a.agree} mutated texts (seed {a.seed + 1}), libyaml vs none:")
        print(f"{'verdict differences':<28}{res['before_verdict_diffs']:>14}{res['after_verdict_diffs']:>14}")
        print(f"{'reason-only differences':<28}{res['before_reason_diffs']:>14}{res['after_reason_diffs']:>14}")


if __name__ == "__main__":
    main()
