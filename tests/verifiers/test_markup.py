"""xml_valid and yaml_valid: well-formedness, attack documents refused, type checks."""

from __future__ import annotations

import pytest

from crossgym.protocol.errors import VerifierError
from crossgym.protocol.task import Completion
from crossgym.verifiers.markup import XmlValid, YamlValid


def xml(text, answer=None, **params):
    return XmlValid(**params).verify(XmlValid.task(answer, params=params), Completion.from_text(text))


def yml(text, answer=None, **params):
    return YamlValid(**params).verify(YamlValid.task(answer, params=params), Completion.from_text(text))


@pytest.mark.parametrize("text", [
    "<a/>", '<?xml version="1.0" encoding="UTF-8"?><a x="1"><b>t &amp; &lt;</b><!-- c --></a>',
    "```xml\n<root><item id='1'/></root>\n```", "<a><![CDATA[<not a tag>]]></a>", "<ns:a xmlns:ns='u'/>",
])
def test_xml_valid(text):
    assert xml(text).passed, text


@pytest.mark.parametrize("text", ["<a>", "<a></b>", "<a/><b/>", "plain text", "<a>&nbsp;</a>", "<a x=1/>"])
def test_xml_invalid(text):
    v = xml(text)
    assert not v.passed and v.error is None, v


@pytest.mark.parametrize("text", [
    '<!DOCTYPE a [<!ENTITY x "xxxxxxxx"><!ENTITY y "&x;&x;&x;&x;">]><a>&y;</a>',
    '<!DOCTYPE a SYSTEM "file:///etc/passwd"><a/>',
    '<!DOCTYPE a [<!ENTITY ext SYSTEM "file:///etc/passwd">]><a>&ext;</a>',
    "",
])
def test_xml_attacks_and_blank_are_malformed(text):
    assert xml(text).error_kind == "malformed"


def test_xml_root_and_params():
    assert xml("<note/>", "note").passed
    assert not xml("<memo/>", "note").passed
    assert not xml("Here: ```xml\n<a/>\n```", fenced="forbid").passed
    assert xml("<a/>", 5).error_kind == "exception"
    with pytest.raises(VerifierError):
        XmlValid(fenced="sometimes")


@pytest.mark.parametrize("text,kind", [
    ("a: 1\nb: [x, y]", "object"), ("- 1\n- 2", "array"), ("```yaml\nkey: value\n```", "object"),
    ("---\nname: Ada\n...", "object"), ("a: &x 1\nb: *x", "object"), ("3", "integer"),
])
def test_yaml_valid(text, kind):
    assert yml(text).passed if kind != "integer" else yml(text, "integer").passed
    assert yml(text, kind).passed


@pytest.mark.parametrize("text", [
    "a: 1\n  b: 2: 3", "key: [unclosed", "a: 1\n---\nb: 2", "Just prose.", "!!python/object/apply:os.system ['ls']",
    "a: !!python/name:os.system",
])
def test_yaml_invalid(text):
    v = yml(text)
    assert not v.passed and v.error is None, v


def test_yaml_attacks_and_options():
    bomb = "a: &a [x, x]\n" + "".join(f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}]\n"
                                       for i in range(20)) + "z: " + ", ".join(["*a"] * 100)
    assert yml(bomb).error_kind == "malformed"
    assert yml("[" * 5000 + "]" * 5000).error_kind == "malformed"
    assert yml("").error_kind == "malformed"
    assert yml("Just prose.", plain_scalar=True).passed
    assert not yml("a: 1", "array").passed
    assert yml("a: 1", "mapping").error_kind == "exception"


def test_an_error_quoting_nesting_depth_fails_on_either_yaml_loader(monkeypatch: pytest.MonkeyPatch) -> None:
    """yaml_valid took "nesting depth" anywhere in str(exc) for the depth limit, and PyYAML's own loader (where
    libyaml is missing) quotes the document there: invalid YAML holding those words was malformed there and a
    fail with libyaml. Both loaders now fail it; libyaml's real depth limit is still malformed."""
    import yaml

    text = 'key: "nesting depth" : x'
    assert yml(text).error is None and yml(text).reward == 0.0
    assert yml("[" * 2000 + "]" * 2000).error_kind == "malformed"
    monkeypatch.delattr(yaml, "CSafeLoader", raising=False)  # the pure-Python loader, as without libyaml
    v = yml(text)
    assert (v.reward, v.passed, v.error) == (0.0, False, None), v
