"""tool_call's reading of calls in text against the tool parsers that serve the models: generated completions in
each text syntax crossgym reads (Hermes ``<tool_call>{json}</tool_call>``, Python call syntax), each read by the
``tool_call`` verifier and by each reference parser, and the agreement of the two.

    OMP_NUM_THREADS=1 python bench/tool_parse_reference.py [--show 4] [--n 400] [--seed 0]

References:

- ``vllm-hermes`` / ``vllm-pythonic`` / ``vllm-llama4-pythonic``: vLLM's own ``hermes`` (also ``qwen3_json``),
  ``pythonic`` and ``llama4_pythonic`` tool parsers, called directly (``extract_tool_calls``). vLLM runs where
  ``import vllm`` works; this script re-runs itself under ``.nox/vllm/bin/python`` when that exists, else those
  columns are skipped. The reasoning is taken out first as vLLM's reasoning parsers do for the tool parser
  (content after the first ``</think>``; an unclosed ``<think>`` is all reasoning).
- ``sglang-hermes`` / ``sglang-qwen25`` / ``sglang-pythonic``: SGLang's ``HermesDetector``, ``Qwen25Detector`` and
  ``PythonicDetector`` (python/sglang/srt/function_call/), ``detect_and_parse``, reimplemented from their public
  source (sglang is not installed; no code of theirs is used): hermes decodes one JSON value after each
  ``<tool_call>`` (``raw_decode``, no closing tag needed) and stops at the first that fails; qwen25 reads
  ``<tool_call>\\n(.*?)\\n</tool_call>`` blocks and skips those that fail; both take ``parameters or arguments``,
  a JSON list of calls, and drop names that are not tools. pythonic needs the whole text to be ``[...]`` of calls
  with plain names and keyword arguments (constants, lists, dicts).

A served call counts as made when its ``arguments`` text decodes to a JSON object (what a client can execute);
a parser that makes no call (or drops some, or whose arguments are no object) agrees with crossgym reading the
text as malformed or as no call. Agreement is on the whole completion: the same calls (names and arguments) or
both no executable call.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

try:  # vLLM lives in its own venv (.nox/vllm): re-run there when it is not importable here
    import vllm  # noqa: F401
    HAVE_VLLM = True
except ImportError:
    HAVE_VLLM = False
    alt = ROOT / ".nox" / "vllm" / "bin" / "python"
    if alt.exists() and os.environ.get("TOOL_PARSE_REEXEC") != "1":
        os.environ["TOOL_PARSE_REEXEC"] = "1"
        os.execv(str(alt), [str(alt), __file__, *sys.argv[1:]])

from crossgym.protocol.messages import ToolSpec  # noqa: E402
from crossgym.protocol.task import Completion  # noqa: E402
from crossgym.verifiers.base import Malformed  # noqa: E402
from crossgym.verifiers.tool_call import ToolCallVerifier  # noqa: E402

TOOLS = [
    {"name": "get_weather", "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "unit": {"type": "string"}}, "required": ["city"]}},
    {"name": "search", "parameters": {"type": "object", "properties": {
        "query": {"type": "string"}, "filters": {"type": "object"}, "limit": {"type": "integer"}}}},
    {"name": "get_time", "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}}},
    {"name": "ping", "parameters": {"type": "object", "properties": {}}},
]
SPECS = tuple(ToolSpec(**t) for t in TOOLS)
NAMES = {t["name"] for t in TOOLS}

Calls = list[tuple[str, Any]]  # [(name, arguments object)]; None: no executable call

# ------------------------------------------------------------------ crossgym


def crossgym_read(text: str) -> Calls | None:
    try:
        calls = ToolCallVerifier().calls(Completion.from_text(text), SPECS)
    except Malformed:
        return None
    return [(c.name, c.arguments) for c in calls] or None


# ------------------------------------------------------------------ reasoning, as vLLM's reasoning parsers cut it


def content_of(text: str) -> str:
    if "</think>" in text:
        return text.split("</think>", 1)[1]
    return "" if "<think>" in text else text


def served(calls: list[tuple[str, str]]) -> Calls | None:
    """Calls as a client executes them: arguments text that decodes to an object, else no executable call."""
    out = []
    for name, args in calls:
        try:
            obj = json.loads(args)
        except ValueError:
            return None
        if not isinstance(obj, dict):
            return None
        out.append((name, obj))
    return out or None


# ------------------------------------------------------------------ vLLM (its own parsers)

_VLLM: dict[str, Any] = {}


def vllm_parser(name: str) -> Any:
    if name not in _VLLM:
        from vllm.tool_parsers import ToolParserManager

        class Tok:  # the parsers read nothing from the tokenizer in extract_tool_calls
            def get_vocab(self) -> dict[str, int]:
                return {"<tool_call>": 1, "</tool_call>": 2}

        _VLLM[name] = ToolParserManager.get_tool_parser(name)(Tok())
    return _VLLM[name]


def vllm_read(parser: str, text: str) -> Calls | None:
    import logging
    logging.disable(logging.CRITICAL)
    info = vllm_parser(parser).extract_tool_calls(content_of(text), None)
    if not info.tools_called:
        return None
    return served([(c.function.name, c.function.arguments) for c in info.tool_calls])


# ------------------------------------------------------------------ SGLang (reimplemented from its detectors)


def _sgl_base(obj: Any) -> list[tuple[str, str]]:
    acts = obj if isinstance(obj, list) else [obj]
    out = []
    for act in acts:
        name = act.get("name")  # AttributeError on a non-object: the caller's except drops everything
        if name and name in NAMES:
            out.append((name, json.dumps(act.get("parameters") or act.get("arguments", {}), ensure_ascii=False)))
    return out


def sglang_hermes(text: str) -> Calls | None:
    text = content_of(text)
    pos, calls, dec = 0, [], json.JSONDecoder()
    try:
        while (start := text.find("<tool_call>", pos)) != -1:
            cur = start + len("<tool_call>")
            while cur < len(text) and text[cur] in " \t\r\n":
                cur += 1
            try:
                obj, pos = dec.raw_decode(text, cur)
            except ValueError:
                break
            calls.extend(_sgl_base(obj))
    except Exception:
        return None
    return served(calls)


def sglang_qwen25(text: str) -> Calls | None:
    text = content_of(text)
    if "<tool_call>\n" not in text:
        return None
    calls = []
    for body in re.findall(r"<tool_call>\n(.*?)\n</tool_call>", text, re.DOTALL):
        try:
            obj = json.loads(body.strip())
        except ValueError:
            continue
        try:
            calls.extend(_sgl_base(obj))
        except Exception:
            return None
    return served(calls)


def sglang_pythonic(text: str) -> Calls | None:
    import ast
    text = content_of(text).strip()
    if not (text.startswith("[") and text.endswith("]")):
        return None

    def lit(v: ast.expr) -> Any:
        if isinstance(v, ast.Constant):
            return v.value
        if isinstance(v, ast.Dict):
            return {k.value: lit(x) for k, x in zip(v.keys, v.values, strict=True)}  # type: ignore[union-attr]
        if isinstance(v, ast.List):
            return [lit(x) for x in v.elts]
        raise ValueError("not a literal")

    try:
        mod = ast.parse(text)
        lst = getattr(mod.body[0], "value", None)
        if not (isinstance(lst, ast.List) and all(isinstance(e, ast.Call) for e in lst.elts)):
            return None
        calls = [(e.func.id, json.dumps({k.arg: lit(k.value) for k in e.keywords}, ensure_ascii=False))
                 for e in lst.elts if isinstance(e, ast.Call) and isinstance(e.func, ast.Name)]
    except Exception:
        return None
    return served(calls)


# ------------------------------------------------------------------ generated completions

CITIES = ["Paris", "São Paulo", "東京", "Zürich", "New York", "Kraków", "O'Hare", "Reykjavík"]
QUERIES = ["cheap flights", "naïve bayes", "日本語 テキスト", "emoji 🚀 launch", "a \"quoted\" term", "back\\slash"]
THINK = ["Let me think about which tool to use.", "The user wants data; I will call the tool.",
         "Maybe <tool_call>{\"name\": \"ping\", \"arguments\": {}}</tool_call> would help."]


def rand_call(r: random.Random) -> tuple[str, dict[str, Any]]:
    k = r.randrange(4)
    if k == 0:
        a: dict[str, Any] = {"city": r.choice(CITIES)}
        if r.random() < 0.5:
            a["unit"] = r.choice(["celsius", "fahrenheit"])
        return "get_weather", a
    if k == 1:
        a = {"query": r.choice(QUERIES)}
        if r.random() < 0.6:
            a["filters"] = {"lang": r.choice(["en", "ja"]), "tags": [r.choice(["x", "y"]), {"deep": [1, 2.5, None]}],
                            "safe": r.random() < 0.5}
        if r.random() < 0.5:
            a["limit"] = r.choice([1, 10, -3])
        return "search", a
    if k == 2:
        return "get_time", {"tz": r.choice(["Europe/Paris", "Asia/Tokyo"])}
    return "ping", {}


def hermes_block(r: random.Random, name: str, args: dict[str, Any], variant: str) -> str:
    obj: dict[str, Any] = {"name": name, "arguments": args}
    nl = r.choice(["", "\n"])
    if variant == "string_args":
        obj["arguments"] = json.dumps(args, ensure_ascii=r.random() < 0.5)
    elif variant == "parameters":
        obj = {"name": name, "parameters": args}
    elif variant == "no_arguments_key":
        obj = {"name": name}
    elif variant == "null_arguments":
        obj["arguments"] = None
    elif variant == "openai_wrapper":
        obj = {"type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
    elif variant == "space_name":
        obj["name"] = r.choice([" ", "", "\n"]) + name + r.choice([" ", "\n"])
    elif variant == "id_field":
        obj = {"id": "call_1", **obj}
    body = json.dumps(obj, ensure_ascii=r.random() < 0.3, indent=r.choice([None, 2]))
    if variant == "dup_key":
        body = body[:-1].rstrip() + ', "name": "get_time"}'
    elif variant == "malformed_json":
        body = body[:-r.randrange(1, 4)]
    elif variant == "nan":
        body = body.replace('"arguments": {', '"arguments": {"x": NaN, ', 1) if args else body
    elif variant == "fence":
        body = f"```{r.choice(['json', ''])}\n{body}\n```"
    elif variant == "trailing_in_tag":
        body = body + r.choice([" thanks", "\n{}", " }"])
    elif variant == "list_in_tag":
        body = json.dumps([obj, obj])
    elif variant == "close_in_string":
        body = json.dumps({"name": name, "arguments": {**args, "note": "a </tool_call> b"}})
    pad = r.choice(["", " ", "\n"])
    close = "" if variant == "unclosed" else "</tool_call>"
    return f"<tool_call>{nl}{pad}{body}{pad}{nl}{close}"


HERMES_VARIANTS = ["plain"] * 6 + ["string_args", "parameters", "no_arguments_key", "null_arguments",
                                   "openai_wrapper", "space_name", "id_field", "dup_key", "malformed_json", "nan",
                                   "fence", "trailing_in_tag", "list_in_tag", "close_in_string", "unclosed"]


def gen_hermes(r: random.Random, n: int) -> list[tuple[str, str]]:
    out = []
    for _ in range(n):
        variant = r.choice(HERMES_VARIANTS)
        k = r.choice([1, 1, 1, 2, 3])
        blocks = [hermes_block(r, *rand_call(r), variant if i == k - 1 or r.random() < 0.3 else "plain")
                  for i in range(k)]
        if variant == "unclosed":
            blocks = [b if b.endswith("</tool_call>") or i == k - 1 else b + "</tool_call>"
                      for i, b in enumerate(blocks)]
        text = r.choice(["\n", "", "\n\n"]).join(blocks)
        pre = r.choice(["", "", "I'll look that up.\n", "Sure!\n\n"])
        ctx = r.choice(["none", "none", "after_think", "in_think", "unclosed_think", "text_after", "python_mix"])
        label = variant + ("/" + ctx if ctx != "none" else "") + (f"/x{k}" if k > 1 else "")
        if ctx == "after_think":
            text = f"<think>\n{r.choice(THINK)}\n</think>\n\n{pre}{text}"
        elif ctx == "in_think":
            text = f"<think>\n{text}\n</think>\n\nHere is my answer without tools."
        elif ctx == "unclosed_think":
            text = f"<think>\n{r.choice(THINK)}\n{text}"
        elif ctx == "text_after":
            text = f"{pre}{text}\n\nI will report back once the tool answers."
        elif ctx == "python_mix":
            text = f"{text}\nget_time(tz=\"Europe/Paris\")"
        else:
            text = pre + text
        out.append((label, text))
    return out


def py_value(r: random.Random, v: Any, style: str) -> str:
    if style == "json_literals":
        return json.dumps(v, ensure_ascii=False)
    return repr(v)


def py_call(r: random.Random, name: str, args: dict[str, Any], variant: str) -> str:
    items = list(args.items())
    style = "json_literals" if variant == "json_literals" else "python"
    parts = [f"{k}={py_value(r, v, style)}" for k, v in items]
    if variant == "positional" and items:
        parts[0] = py_value(r, items[0][1], style)
    elif variant == "tuple_arg":
        parts.append("size=(800, 600)")
    elif variant == "set_arg":
        parts.append("tags={'a'}")
    elif variant == "fstring":
        parts.append("note=f'hi'")
    elif variant == "expression":
        parts.append("limit=2 + 3")
    elif variant == "dup_kw" and items:
        parts.append(parts[0])
    elif variant == "int_key":
        parts.append("filters={1: 'a'}")
    elif variant == "dotted":
        name = "api." + name
    elif variant == "spaces":
        return f"{name} ( {' , '.join(parts)} )"
    sep = r.choice([", ", ",", ",\n  "])
    return f"{name}({sep.join(parts)})"


PY_VARIANTS = ["plain"] * 6 + ["json_literals", "positional", "tuple_arg", "set_arg", "fstring", "expression",
                               "dup_kw", "int_key", "dotted", "spaces", "negative"]


def gen_pythonic(r: random.Random, n: int) -> list[tuple[str, str]]:
    out = []
    for _ in range(n):
        variant = r.choice(PY_VARIANTS)
        k = r.choice([1, 1, 2, 3])
        calls = []
        for i in range(k):
            name, args = rand_call(r)
            if variant == "negative":
                name, args = "search", {"query": "x", "limit": -r.randrange(1, 9)}
            calls.append(py_call(r, name, args, variant if i == k - 1 else "plain"))
        shape = r.choice(["list", "list", "list", "bare", "lines", "fence", "prose_before", "text_after",
                          "after_think", "in_think", "unclosed_bracket", "space_list", "python_tag"])
        if shape == "bare" and k > 1:
            shape = "lines"
        if shape == "list":
            text = "[" + ", ".join(calls) + "]"
        elif shape == "space_list":
            text = "[ " + ", ".join(calls) + " ]\n"
        elif shape == "bare":
            text = calls[0]
        elif shape == "lines":
            text = "\n".join(calls)
        elif shape == "fence":
            text = "```python\n[" + ", ".join(calls) + "]\n```"
        elif shape == "prose_before":
            text = "Calling the tool now: [" + ", ".join(calls) + "]"
        elif shape == "text_after":
            text = "[" + ", ".join(calls) + "]\nDone."
        elif shape == "after_think":
            text = "<think>\nI should call a tool.\n</think>\n[" + ", ".join(calls) + "]"
        elif shape == "in_think":
            text = "<think>\n[" + ", ".join(calls) + "]\n</think>\nNo tool needed."
        elif shape == "python_tag":
            text = "<|python_start|>[" + ", ".join(calls) + "]<|python_end|>"
        else:
            text = "[" + ", ".join(calls)
        out.append((f"{variant}/{shape}" + (f"/x{k}" if k > 1 else ""), text))
    return out


# ------------------------------------------------------------------ report

FORMATS = {
    "hermes": (gen_hermes, {"vllm-hermes": lambda t: vllm_read("hermes", t), "sglang-hermes": sglang_hermes,
                            "sglang-qwen25": sglang_qwen25}),
    "pythonic": (gen_pythonic, {"vllm-pythonic": lambda t: vllm_read("pythonic", t),
                                "vllm-llama4-pythonic": lambda t: vllm_read("llama4_pythonic", t),
                                "sglang-pythonic": sglang_pythonic}),
}


def show(v: Calls | None) -> str:
    return "none/malformed" if v is None else json.dumps(v, ensure_ascii=False)[:160]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=400, help="completions per format")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--show", type=int, default=2, help="examples per disagreement class")
    args = ap.parse_args()
    if not HAVE_VLLM:
        print("vllm is not importable (no .nox/vllm): the vllm-* columns are skipped")
    for fmt, (gen, refs) in FORMATS.items():
        cases = gen(random.Random(f"{args.seed}:{fmt}"), args.n)
        print(f"\n== {fmt}: {len(cases)} completions")
        ours = [crossgym_read(t) for _, t in cases]
        for ref, read in refs.items():
            if ref.startswith("vllm") and not HAVE_VLLM:
                continue
            agree = 0
            classes: dict[str, list[tuple[str, Any, Any]]] = collections.defaultdict(list)
            for (label, text), mine in zip(cases, ours, strict=True):
                theirs = read(text)
                if mine == theirs:
                    agree += 1
                    continue
                kind = ("crossgym reads calls, parser none" if theirs is None else
                        "parser reads calls, crossgym none/malformed" if mine is None else "both read, differ")
                if mine is not None and any(n not in NAMES for n, _ in mine):
                    kind += " (crossgym's call names no tool: the verifier fails it)"
                key = label.split("/")[0] if fmt == "hermes" else re.sub(r"/x\d$", "", label)
                classes[f"{kind} | {key}"].append((text, mine, theirs))
            print(f"  {ref:22s} agreement {agree}/{len(cases)} = {agree / len(cases):.1%}")
            for cls, items in sorted(classes.items(), key=lambda kv: -len(kv[1])):
                print(f"    {len(items):4d}  {cls}")
                for text, mine, theirs in items[:args.show]:
                    print(f"          {text[:150]!r}\n            crossgym {show(mine)}\n            {ref} {show(theirs)}")


if __name__ == "__main__":
    main()
