"""format_tags: the completion is made of required tag blocks, e.g. ``<think>...</think><answer>...</answer>``."""

from __future__ import annotations

import re
from typing import Any

from crossgym.protocol.errors import VerifierError
from crossgym.protocol.task import Completion, Example, Task, Verdict
from crossgym.text import is_blank
from crossgym.verifiers.base import BadTask, BaseVerifier, Malformed

_NAME = re.compile(r"[A-Za-z_][\w.:-]{0,63}")


class FormatTags(BaseVerifier):
    """Each required tag appears exactly once, as ``<tag>...</tag>``, in order, not nested, and (strict) with only
    whitespace outside the blocks.

    answer: null (use the ``tags`` param) or a list of tag names overriding it.
    params: tags (["think", "answer"]), order (True: blocks in the listed order), strict (True: nothing but
    whitespace outside the blocks), nonempty (True: every block has visible content; zero-width and other invisible characters are blank), reward ("all": 1.0 only
    when every rule holds | "fraction": the share of rules that hold, reported per rule in components).
    A missing, repeated or unclosed tag fails (it is what this verifier checks); only a blank completion is
    malformed.
    """

    name = "format_tags"
    version = "2"  # 2: a block holding only invisible characters (zero-width space, joiners, fillers) is empty
    description = "required <tag>...</tag> blocks: exactly one each, in order, nothing outside (strict)"

    def __init__(self, *, tags: list[str] | tuple[str, ...] = ("think", "answer"), order: bool = True,
                 strict: bool = True, nonempty: bool = True, reward: str = "all", **params: Any) -> None:
        super().__init__(**params)
        self.tags = self._check_tags(tags, VerifierError)
        if reward not in ("all", "fraction"):
            raise VerifierError(f"verifier 'format_tags': reward={reward!r} must be 'all' or 'fraction' "
                                "(fix: pass one of them, or leave it out for all)")
        self.order, self.strict, self.nonempty, self.reward = bool(order), bool(strict), bool(nonempty), reward
        self._re = self._pattern(self.tags)

    @staticmethod
    def _check_tags(tags: Any, err: type[Exception]) -> tuple[str, ...]:
        if isinstance(tags, str) or not isinstance(tags, (list, tuple)) or not tags:
            raise err(f"format_tags: tags must be a non-empty list of tag names, got {tags!r} "
                      "(fix: e.g. tags: [think, answer])")
        for t in tags:
            if not isinstance(t, str) or not _NAME.fullmatch(t):
                raise err(f"format_tags: {t!r} is not a valid tag name (fix: start with a letter or _, then "
                          "letters, digits, _ . : or -, e.g. answer)")
        if len(set(tags)) != len(tags):
            raise err(f"format_tags: tags repeat in {list(tags)!r} (fix: name each tag once)")
        return tuple(tags)

    @staticmethod
    def _pattern(tags: tuple[str, ...]) -> re.Pattern[str]:
        alt = "|".join(re.escape(t) for t in sorted(tags, key=len, reverse=True))
        return re.compile(rf"<(/?)({alt})\s*>")

    def score(self, task: Task, completion: Completion) -> Verdict:
        tags, rx = self.tags, self._re
        if task.answer is not None:
            tags = self._check_tags(task.answer, BadTask)
            rx = self._pattern(tags)
        text = completion.text
        if not text.strip():
            raise Malformed("blank completion")
        counts = {t: [0, 0] for t in tags}
        events = []
        for m in rx.finditer(text):
            counts[m.group(2)][1 if m.group(1) else 0] += 1
            events.append((m.group(1) == "/", m.group(2), m.start(), m.end()))
        rules: dict[str, bool] = {}
        for t in tags:
            rules[f"one_{t}"] = counts[t] == [1, 1]
        # well-formed blocks: open/close pairs with no other required tag in between
        blocks: list[tuple[str, int, int, int, int]] = []
        well = all(rules.values())
        if well:
            for k in range(0, len(events), 2):
                o, c = events[k], events[k + 1] if k + 1 < len(events) else None
                if o[0] or c is None or not c[0] or c[1] != o[1]:
                    well = False
                    break
                blocks.append((o[1], o[2], o[3], c[2], c[3]))
        rules["not_nested"] = well
        if self.order:
            rules["order"] = well and [b[0] for b in blocks] == list(tags)
        if self.nonempty:
            rules["nonempty"] = well and not any(is_blank(text[b[2]:b[3]]) for b in blocks)
        if self.strict:
            outside, pos = [], 0
            for b in blocks:
                outside.append(text[pos:b[1]])
                pos = b[4]
            outside.append(text[pos:])
            rules["nothing_outside"] = well and not "".join(outside).strip()
        broken = [k for k, v in rules.items() if not v]
        comps = {k: float(v) for k, v in rules.items()}
        if self.reward == "fraction":
            reward = sum(comps.values()) / len(comps)
        else:
            reward = float(not broken)
        reason = "format ok" if not broken else "broken: " + ", ".join(broken)
        return Verdict.ok(reward, passed=not broken, components=comps, reason=reason)

    @classmethod
    def examples(cls) -> list[Example]:
        return [
            cls.example(None, "<think>2+2 is 4</think>\n<answer>4</answer>", "pass"),
            cls.example(None, "<answer>4</answer><think>2+2</think>", "fail", "wrong order"),
            cls.example(None, "<think>x</think><answer>4</answer><answer>5</answer>", "fail", "two answers"),
            cls.example(None, "Sure! <think>x</think><answer>4</answer>", "fail", "text outside the tags"),
            cls.example(None, "<think><answer>4</answer></think>", "fail", "nested"),
            cls.example(None, "", "malformed", "blank"),
        ]
