"""Seeded YAML-like texts for yaml_valid's differential checks (tests/verifiers/test_markup.py, bench/yaml_valid.py).

``documents(seed, n)``: config-like YAML, each put through 0-3 mutations chosen from tabs, indentation shifts,
flow/block mixes, anchors/aliases, tags, several documents, BOMs, control characters and odd line breaks,
double-quoted escapes, directives, deep nesting (around the depth limit), very long lines, truncation and random
edits. ``realistic(seed, n)``: valid config-like documents and broken ones (the bench's timing set).
"""

from __future__ import annotations

import random

WORDS = ["name", "image", "port", "env", "debug", "replicas", "version", "services", "steps", "run", "with", "path",
         "timeout", "retries", "labels", "app", "db", "host", "user", "password", "url", "tags", "enabled"]
CLEAN = ["true", "false", "null", "~", "42", "-7", "3.14", "1e3", "0x1F", "0o17", "2024-01-31", "12:30:00",
         "'single quoted'", '"double quoted"', "plain text here", "http://example.com:8080/x", "yes", "No", ".inf",
         "-.nan", "''", '""', "x#y", "v1.2.3", "C:/tmp", "registry.example.com/app:1.4", "'it''s'", "a - b"]
ODD = ["a: b", "@home", "%d", "|", ">", "`x`", "- x", "? y", "*", "&"]


def _scalar(r: random.Random, clean: bool = False) -> str:
    return r.choice(CLEAN) if clean or r.random() < 0.9 else r.choice(ODD)


def _block(r: random.Random, depth: int, indent: int, clean: bool = False) -> list[str]:
    lines: list[str] = []
    pad = " " * indent
    for _ in range(r.randint(1, 5)):
        key = r.choice(WORDS)
        kind = r.random()
        if depth < 3 and kind < 0.25:
            lines.append(f"{pad}{key}:")
            lines += _block(r, depth + 1, indent + r.choice((2, 2, 4)), clean)
        elif depth < 3 and kind < 0.4:
            lines.append(f"{pad}{key}:")
            step = r.choice((0, 2))
            for _ in range(r.randint(1, 3)):
                if r.random() < 0.3:
                    lines.append(f"{pad}{' ' * step}- {r.choice(WORDS)}: {_scalar(r, clean)}")
                else:
                    lines.append(f"{pad}{' ' * step}- {_scalar(r, clean)}")
        elif kind < 0.5:
            items = ", ".join(_scalar(r, clean) for _ in range(r.randint(0, 4)))
            lines.append(f"{pad}{key}: [{items}]")
        elif kind < 0.58:
            items = ", ".join(f"{r.choice(WORDS)}: {_scalar(r, clean)}" for _ in range(r.randint(0, 3)))
            lines.append(f"{pad}{key}: {{{items}}}")
        elif kind < 0.63:
            lines.append(f"{pad}{key}: {r.choice('|>')}{r.choice(['', '-', '+', '2'])}")
            lines += [f"{pad}  {r.choice(WORDS)} {r.choice(WORDS)}" for _ in range(r.randint(1, 3))]
        else:
            lines.append(f"{pad}{key}: {_scalar(r, clean)}" + (f"  # {r.choice(WORDS)}" if r.random() < 0.1 else ""))
    return lines


def config(r: random.Random, clean: bool = False) -> str:
    return "\n".join(_block(r, 0, 0, clean)) + r.choice(["", "\n"])


def _at(r: random.Random, text: str) -> int:
    return r.randint(0, len(text))


def _insert(text: str, i: int, s: str) -> str:
    return text[:i] + s + text[i:]


def _deep(r: random.Random) -> str:
    n = r.choice((r.randint(90, 110), r.randint(1, 30), r.randint(400, 1100)))
    style = r.random()
    if style < 0.4:
        return "[" * n + r.choice(["", "x"]) + "]" * n
    if style < 0.6:
        return "{a: " * n + "x" + "}" * n
    if style < 0.8:
        return "- " * n + "x"
    return "".join(" " * i + "k:\n" for i in range(min(n, 150))) + " " * min(n, 150) + "v"


MUTATIONS = {
    "tab": lambda r, t: _insert(t, _at(r, t), "\t"),
    "tab-after-colon": lambda r, t: t.replace(": ", r.choice([":\t", ": \t", "\t: ", ":\t "]), r.randint(1, 3)),
    "tab-indent": lambda r, t: t.replace("\n  ", "\n\t", r.randint(1, 2)),
    "trailing-tab": lambda r, t: t.replace("\n", "\t\n", 1),
    "indent": lambda r, t: t.replace("\n", "\n" + " " * r.randint(1, 3), 1),
    "dedent": lambda r, t: t.replace("\n  ", "\n ", 1),
    "flow-mix": lambda r, t: t.replace(": ", r.choice([": [", ": {", ": [a, {b: ", ": {a: [", ": - "]), 1),
    "unclose": lambda r, t: t.replace("]", "", 1) if r.random() < 0.5 else t.replace("}", "", 1),
    "flow-colon": lambda r, t: t.replace(", ", r.choice([",", ":", " :", ": ", ",:", "?"]), 1),
    "anchor": lambda r, t: t.replace(": ", ": &a ", 1) + r.choice(["\nz: *a", "\nz: *b", "\nz: &a 1", "\n<<: *a",
                                                                     "\nz: [*a, *a]", "\nz: {<<: *a}"]),
    "self-alias": lambda r, t: r.choice(["&a [*a]", "&a {k: *a}", "a: &x [1, *x]", "- &a\n  - *a"]),
    "tag": lambda r, t: t.replace(": ", ": " + r.choice(["!", "!!str ", "!!int ", "!foo ", "!<tag:x> ", "!!map ",
                                                          "!!python/name:os.system ", "!!binary ", "!!set ",
                                                          "!!timestamp ", "!!float ", "! ", "!!omap "]), 1),
    "lone-tag": lambda r, t: r.choice(["!", "! ", "!!str", "--- !", "- !\n- !!null", "a: !\nb: !"]),
    "multi-doc": lambda r, t: r.choice(["---\n" + t, t + "\n---\n" + t, t + "\n...\n", t + "\n...\n---\n",
                                        "--- " + t, t + "\n--- |\n  x", "...\n" + t, "---\n---"]),
    "bom": lambda r, t: r.choice(["\ufeff" + t, _insert(t, _at(r, t), "\ufeff"), "---\n\ufeff" + t,
                                  t + "\n---\n\ufeff" + t]),
    "control": lambda r, t: _insert(t, _at(r, t), chr(r.choice([0, 1, 7, 8, 11, 12, 27, 127, 0x85, 0x2028,
                                                                 0x2029, 0xFFFE, 0xD800, 0x9F, 0xA0]))),
    "cr": lambda r, t: r.choice([t.replace("\n", "\r\n"), t.replace("\n", "\r"), t + "\r"]),
    "escape": lambda r, t: t + "\nq: \"" + r.choice(["\\uD800", "\\U00110000", "\\x80", "\\/", "\\t", "\\N",
                                                     "\\e", "\\ud83d\\ude00", "\\q", "\\", "\\U0001F600",
                                                     "a\\\n  b", "\\0", "\\L\\P\\_"]) + "\"",
    "directive": lambda r, t: r.choice(["%YAML 1.1", "%YAML 1.2", "%YAML 1.3", "%YAML 2.0", "%TAG ! tag:x,2000:",
                                        "%FOO bar", "%YAML 1.1\n%YAML 1.1"]) + r.choice(["\n---\n", "\n"]) + t,
    "deep": lambda r, t: _deep(r),
    "deep-value": lambda r, t: t + "\nz: " + _deep(r).replace("\n", "\n  "),
    "long-key": lambda r, t: "k" * r.choice((1000, 1023, 1024, 1025, 1100)) + ": v\n" + t,
    "long-line": lambda r, t: t + "\nlong: " + "word " * r.randint(200, 800),
    "long-flow-key": lambda r, t: "[" + "k" * r.choice((1020, 1030)) + ": v]",
    "truncate": lambda r, t: t[: r.randint(0, len(t))],
    "delete": lambda r, t: (lambda i: t[:i] + t[i + 1:])(_at(r, t)),
    "insert": lambda r, t: _insert(t, _at(r, t), r.choice("-?:,[]{}#&*!|>'\"%@` \n")),
    "unicode": lambda r, t: t.replace("e", r.choice(["é", "\u00a0", "\u3000", "\U0001F600", "\ue000", "\uff01"]), 2),
    "question": lambda r, t: "? " + t.replace("\n", "\n  ") + "\n: v",
    "flow-question": lambda r, t: t.replace(", ", r.choice(["?", "?x, ", " ? ", "? x: "]), 1),
    "header-comment": lambda r, t: t.replace(": ", ": " + r.choice([">#", "|#", "|-#", ">2#", "| #", ">x"]) + "\n  ", 1),
    "compact": lambda r, t: "- - - " + t.replace("\n", "\n      "),
}


def documents(seed: int, n: int) -> list[str]:
    """``n`` seeded texts: config-like YAML, most through 1-3 mutations."""
    r = random.Random(seed)
    names = sorted(MUTATIONS)
    out = []
    for _ in range(n):
        t = config(r)
        for name in r.sample(names, r.choice((0, 1, 1, 2, 2, 3))):
            t = MUTATIONS[name](r, t)
        out.append(t)
    return out


def realistic(seed: int, n: int) -> list[str]:
    """``n`` seeded config-like documents, about a quarter broken (bad indentation, unclosed flow, a stray tab,
    a second document, truncation), the rest valid."""
    r = random.Random(seed)
    out = []
    for _ in range(n):
        t = config(r, clean=True)
        if r.random() < 0.25:
            t = MUTATIONS[r.choice(["indent", "unclose", "tab-after-colon", "truncate", "multi-doc", "flow-mix"])](r, t)
        out.append(t)
    return out
