"""json_extraction: pull a record out of prose as JSON that follows a schema.

``verifier="json_match"`` compares the extracted record with the truth (lists in any order);
``verifier="json_schema"`` validates against the task's schema with every value pinned by ``const`` (the model is
shown the same schema without the pins). difficulty 1: three flat fields; 2: five fields and a list;
3: seven fields, a nested address and a second person as a distractor.

``split``: "all" (default), or "train" / "heldout", which never share a first name or a home city: held out are the
people whose first name is in HELD_FIRST and whose city is in HELD_CITY, trained on those with neither (`make demo`
trains on one and evaluates on the other). ``ask``: "schema" (default) shows the JSON Schema; "keys" names the
fields and shows the object's shape (SmolLM2-135M echoes a schema back). ``reward``: json_match's "all" or
"fraction" (the share of fields right); ``allow_surrounding``: text around the object is allowed (content counts).
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Iterator
from typing import Any

from crossgym.environments.sources.common import check_choice, check_count, check_int, make_task, rng_for
from crossgym.protocol.errors import ConfigError
from crossgym.protocol.task import Task

FIRST = ["Amara", "Bruno", "Chiara", "Dmitri", "Esther", "Farid", "Greta", "Hiro", "Isla", "Jamal", "Katya", "Luis"]
LAST = ["Okafor", "Silva", "Rossi", "Ivanov", "Cohen", "Haddad", "Berg", "Tanaka", "Murray", "Diallo", "Novak"]
CITIES = ["Lagos", "Porto", "Turin", "Kazan", "Haifa", "Beirut", "Bergen", "Osaka", "Dundee", "Dakar", "Brno"]
JOBS = ["nurse", "engineer", "baker", "pilot", "teacher", "chemist", "architect", "plumber", "editor"]
SKILLS = ["Python", "welding", "Spanish", "accounting", "first aid", "photography", "SQL", "carpentry", "piano"]
STREETS = ["Oak Street", "Harbour Road", "Mill Lane", "Station Avenue", "Rose Court", "King's Way"]


def _person(rng: random.Random) -> dict[str, Any]:
    first, last = rng.choice(FIRST), rng.choice(LAST)
    return {"name": f"{first} {last}", "age": rng.randint(19, 78), "city": rng.choice(CITIES),
            "occupation": rng.choice(JOBS), "email": f"{first.lower()}.{last.lower()}@example.org",
            "skills": rng.sample(SKILLS, rng.randint(2, 3)),
            "address": {"street": f"{rng.randint(1, 99)} {rng.choice(STREETS)}", "city": rng.choice(CITIES),
                        "zip": f"{rng.randint(10000, 99999)}"},
            "years_experience": rng.randint(1, 20)}


HELD_FIRST = ("Greta", "Hiro", "Isla", "Jamal")
HELD_CITY = ("Bergen", "Osaka", "Dundee", "Dakar")
#: the "keys" question per difficulty: the fields named, the object's shape shown
KEYS = {1: '{"name": <string>, "age": <integer>, "city": <string>}',
        2: '{"name": <string>, "age": <integer>, "city": <string>, "occupation": <string>, "skills": [<string>]}'}


def split_of(person: dict[str, Any]) -> str:
    """"heldout", "train", or "" (neither: first name and city on different sides) for a drawn person."""
    h_first, h_city = person["name"].split()[0] in HELD_FIRST, person["city"] in HELD_CITY
    return "heldout" if h_first and h_city else "train" if not (h_first or h_city) else ""


FIELDS = {1: ["name", "age", "city"], 2: ["name", "age", "city", "occupation", "skills"],
          3: ["name", "age", "occupation", "email", "skills", "address", "years_experience"]}
TYPES: dict[str, dict[str, Any]] = {"name": {"type": "string"}, "age": {"type": "integer"}, "city": {"type": "string"},
         "occupation": {"type": "string"}, "email": {"type": "string"},
         "skills": {"type": "array", "items": {"type": "string"}},
         "address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"},
                                                      "zip": {"type": "string"}},
                     "required": ["street", "city", "zip"], "additionalProperties": False},
         "years_experience": {"type": "integer"}}


def _a(word: str) -> str:
    return f"an {word}" if word[0] in "aeiou" else f"a {word}"


def _prose(rng: random.Random, p: dict[str, Any], other: dict[str, Any] | None) -> str:
    skills = ", ".join(p["skills"][:-1]) + " and " + p["skills"][-1]
    first = p["name"].split()[0]
    sentences = [
        f"{p['name']} is {_a(str(p['age']) + '-year-old')} {p['occupation']} who lives in {p['city']}.",
        f"Over {p['years_experience']} years of work, {first} has picked up {skills}.",
        f"You can write to {first} at {p['email']}.",
        f"{first}'s home address is {p['address']['street']}, {p['address']['zip']} {p['address']['city']}.",
    ]
    if other is not None:  # a second person, named in full, between the facts about the first
        sentences.insert(rng.randint(1, 3), f"{first}'s neighbour, {other['name']}, is {other['age']} and works "
                                            f"as {_a(other['occupation'])}.")
    return " ".join(sentences)


def schema_for(fields: list[str], record: dict[str, Any] | None = None) -> dict[str, Any]:
    """The object schema of ``fields``; with ``record`` every value is pinned by ``const``."""
    props = {f: copy.deepcopy(TYPES[f]) for f in fields}
    if record is not None:
        for f in fields:
            if f == "skills":
                props[f].update({"minItems": len(record[f]), "maxItems": len(record[f]),
                                 "items": {"enum": record[f]}, "uniqueItems": True})
            elif f == "address":
                for k, v in record[f].items():
                    props[f]["properties"][k]["const"] = v
            else:
                props[f]["const"] = record[f]
    return {"type": "object", "properties": props, "required": list(fields), "additionalProperties": False}


def json_extraction(n: int = 100, seed: int = 0, difficulty: int = 1, verifier: str = "json_match",
                    system_prompt: str | None = None, split: str = "all", ask: str = "schema", reward: str = "all",
                    allow_surrounding: bool = False) -> Iterator[Task]:
    """Extract the person described in a paragraph as JSON."""
    src = "json_extraction"
    check_count(n, src)
    check_int(seed, "seed", src)
    check_int(difficulty, "difficulty", src, lo=1, hi=3)
    check_choice(verifier, "verifier", src, ("json_match", "json_schema"))
    check_choice(split, "split", src, ("all", "train", "heldout"))
    check_choice(ask, "ask", src, ("schema", "keys"))
    check_choice(reward, "reward", src, ("all", "fraction"))
    if ask == "keys" and difficulty not in KEYS:
        raise ConfigError(f"task source {src!r}: ask='keys' needs difficulty 1 or 2, got {difficulty}",
                          fix="use difficulty 1 or 2, or ask: schema")
    if not isinstance(allow_surrounding, bool):
        raise ConfigError(f"task source {src!r}: allow_surrounding must be true or false, got {allow_surrounding!r}")
    fields = FIELDS[difficulty]
    made = 0
    for i in range(n if split == "all" else n * 200):
        if made == n:
            return
        rng = rng_for(src, seed, difficulty, i)
        person = _person(rng)
        other = _person(rng) if difficulty >= 3 else None
        if other is not None and other["name"].split()[0] == person["name"].split()[0]:
            other["name"] = rng.choice([x for x in FIRST if x not in person["name"]]) + " " + \
                other["name"].split()[1]
        if split != "all" and split_of(person) != split:
            continue
        record = {f: person[f] for f in fields}
        if ask == "keys":
            prompt = (f"{_prose(rng, person, other)}\n\nWhat are the {', '.join(fields[:-1])} and {fields[-1]} of "
                      f"this person? Reply with only a JSON object like {KEYS[difficulty]}.")
        else:
            prompt = (f"Text: {_prose(rng, person, other)}\n\nExtract the {'main ' if other else ''}person as a "
                      f"JSON object that follows this JSON Schema:\n{json.dumps(schema_for(fields))}\n"
                      "Reply with only the JSON object.")
        if verifier == "json_match":
            answer: Any = record
            params: dict[str, Any] = {"list_order": False}
            if reward != "all":
                params["reward"] = reward
        else:
            answer = schema_for(fields, record)
            params = {}
        if allow_surrounding:
            params["allow_surrounding"] = True
        tag = f"d{difficulty}" + ("" if split == "all" else f"-{split}")
        yield make_task(src, made if split != "all" else i, seed, prompt, answer, verifier, params, tag=tag,
                        system=system_prompt, metadata={"difficulty": difficulty, "record": record,
                                                       **({} if split == "all" else {"split": split})})
        made += 1
