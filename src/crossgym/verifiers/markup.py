"""xml_valid and yaml_valid: the completion is well-formed XML / safe YAML, with attack inputs refused.

XML is parsed by expat with DTDs refused outright (no DOCTYPE, no entity declarations), so entity-expansion
("billion laughs") and external-entity attacks cannot start. YAML goes through ``safe_load`` (no Python objects)
with alias counts and nesting capped (alias bombs, deep nesting).
"""

from __future__ import annotations

import re
from typing import Any, NoReturn

from crossgym.protocol.errors import VerifierError
from crossgym.protocol.task import Completion, Example, Task, Verdict
from crossgym.text import extract_fenced
from crossgym.verifiers.base import BadTask, BaseVerifier, Malformed
from crossgym.verifiers.extract import strip_think
from crossgym.verifiers.json_checks import JSON_TYPES, json_type

#: YAML documents with more aliases than this are refused (alias expansion bombs)
MAX_YAML_ALIASES = 100
_ALIAS = re.compile(r"(?:^|[\s\[{,:-])\*[^\s,\[\]{}]+")


class _Refused(Exception):
    pass


def _body(text: str, fenced: str, langs: tuple[str, ...]) -> str:
    text = text.strip()
    if fenced == "forbid":
        return text
    block = extract_fenced(text, langs)
    if block is not None and (fenced == "require" or text.startswith(("```", "~~~"))):
        return block.strip()
    if fenced == "require":
        raise Malformed(f"no ```{langs[0]} fenced block")
    return text


class _MarkupBase(BaseVerifier):
    langs: tuple[str, ...] = ()

    def __init__(self, *, fenced: str = "allow", think: bool = True, **params: Any) -> None:
        super().__init__(**params)
        if fenced not in ("allow", "require", "forbid"):
            raise VerifierError(f"verifier {self.name!r}: fenced={fenced!r} must be allow, require or forbid")
        self.fenced, self.think = fenced, bool(think)

    def text(self, completion: Completion) -> str:
        text = strip_think(completion.text) if self.think else completion.text
        if not text.strip():
            raise Malformed("blank completion")
        body = _body(text, self.fenced, self.langs)
        if not body:
            raise Malformed("empty fenced block")
        return body


def parse_xml(text: str) -> str:
    """The root element's name of well-formed XML; _Refused for DTDs, ValueError for bad XML."""
    from xml.parsers import expat

    p = expat.ParserCreate()
    root: list[str] = []

    def refuse(*_: Any) -> NoReturn:
        raise _Refused("DTDs and entity declarations are refused")

    def start(name: str, _attrs: Any) -> None:
        if not root:
            root.append(name)

    p.StartDoctypeDeclHandler = refuse
    p.EntityDeclHandler = refuse
    p.ExternalEntityRefHandler = refuse
    p.StartElementHandler = start
    try:
        p.Parse(text.encode("utf-8"), True)
    except expat.ExpatError as exc:
        raise ValueError(f"not well-formed XML: {expat.ErrorString(exc.code)} at line {exc.lineno}") from None
    return root[0] if root else ""


class XmlValid(_MarkupBase):
    """The completion is one well-formed XML document.

    answer: null, or the required root element name ("config").
    params: fenced ("allow": bare or one ```xml block | "require" | "forbid"), think (True).
    Not-well-formed XML or the wrong root fails; a DOCTYPE or entity declaration (entity-expansion attacks) and a
    blank completion are malformed.
    """

    name = "xml_valid"
    version = "1"
    description = "well-formed XML (DTDs refused: no entity-expansion attacks), optional root element"
    langs = ("xml", "html", "")

    def score(self, task: Task, completion: Completion) -> Verdict:
        if task.answer is not None and not isinstance(task.answer, str):
            raise BadTask("xml_valid answer must be null or the root element name")
        body = self.text(completion)
        try:
            root = parse_xml(body)
        except _Refused as exc:
            raise Malformed(str(exc)) from None
        except ValueError as exc:
            return Verdict.ok(0.0, reason=str(exc))
        if task.answer and root != task.answer:
            return Verdict.ok(0.0, reason=f"root element <{root}>, expected <{task.answer}>")
        return Verdict.ok(1.0, reason=f"well-formed XML, root <{root}>")

    @classmethod
    def examples(cls) -> list[Example]:
        bomb = ('<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;">]>'
                "<lolz>&lol2;</lolz>")
        return [
            cls.example("note", '```xml\n<note><to>Ada</to><body>Hi &amp; bye</body></note>\n```', "pass"),
            cls.example(None, "<a><b></a></b>", "fail", "crossed tags"),
            cls.example("note", "<memo/>", "fail", "wrong root"),
            cls.example(None, bomb, "malformed", "billion laughs refused"),
        ]


def load_yaml(text: str) -> Any:
    """``yaml.safe_load`` (C loader when present) with alias bombs refused; ValueError for bad YAML."""
    import yaml

    if len(_ALIAS.findall(text)) > MAX_YAML_ALIASES:
        raise _Refused(f"more than {MAX_YAML_ALIASES} YAML aliases (alias expansion attack?)")
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        docs = list(yaml.load_all(text, Loader=loader))
    except RecursionError:
        raise _Refused("YAML nests too deeply") from None
    except yaml.YAMLError as exc:
        if "nesting depth" in str(getattr(exc, "problem", None) or ""):  # libyaml's limit; str(exc) quotes the text
            raise _Refused("YAML nests too deeply") from None
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ValueError(f"invalid YAML: {getattr(exc, 'problem', None) or exc}{where}") from None
    if len(docs) != 1:
        raise ValueError(f"{len(docs)} YAML documents, expected one")
    return docs[0]


class YamlValid(_MarkupBase):
    """The completion is one YAML document (safe_load: plain data only).

    answer: null, or the required top-level type as a JSON type name ("object" for a mapping, "array", ...).
    params: fenced ("allow": bare or one ```yaml block | "require" | "forbid"), think (True),
    plain_scalar (False: a document that is a single plain string, i.e. any prose, fails unless True).
    Invalid YAML, several documents or the wrong type fails; alias bombs, nesting deeper than the parser allows
    and a blank completion are malformed.
    """

    name = "yaml_valid"
    version = "2"  # 2: only libyaml's depth limit is "nests too deeply", not an error quoting "nesting depth"
    description = "one safe YAML document (alias bombs and deep nesting refused), optional top-level type"
    langs = ("yaml", "yml", "")

    def __init__(self, *, plain_scalar: bool = False, **params: Any) -> None:
        super().__init__(**params)
        self.plain_scalar = bool(plain_scalar)

    def score(self, task: Task, completion: Completion) -> Verdict:
        want = task.answer
        if want is not None and want not in JSON_TYPES:
            raise BadTask(f"yaml_valid answer must be null or one of {', '.join(JSON_TYPES)}")
        body = self.text(completion)
        try:
            value = load_yaml(body)
        except _Refused as exc:
            raise Malformed(str(exc)) from None
        except ValueError as exc:
            return Verdict.ok(0.0, reason=str(exc))
        got = json_type(value) if isinstance(value, (dict, list, str, int, float, bool, type(None))) else "other"
        if want is None and got == "string" and not self.plain_scalar:
            return Verdict.ok(0.0, reason="the document is a plain string (prose), not structured YAML")
        if want is not None and not (got == want or (want == "number" and got == "integer")):
            return Verdict.ok(0.0, reason=f"YAML {got}, expected {want}")
        return Verdict.ok(1.0, reason=f"valid YAML {got}")

    @classmethod
    def examples(cls) -> list[Example]:
        bomb = "a: &a [x, x]\n" + "".join(f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}]\n"
                                           for i in range(20)) + "z: " + ", ".join(["*a"] * 100)
        return [
            cls.example("object", "```yaml\nname: Ada\nlanguages: [en, fr]\n```", "pass"),
            cls.example("object", "name: Ada\n  bad: indent: here", "fail", "invalid YAML"),
            cls.example(None, "Just some prose.", "fail", "prose is a YAML string"),
            cls.example(None, bomb, "malformed", "alias bomb refused"),
            cls.example(None, "", "malformed", "blank"),
        ]
