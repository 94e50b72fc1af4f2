#!/usr/bin/env python3
"""Builds the JSON Schema fixtures for worker/engine/json_schema.h (tests/worker/json_schema_test.cc).

For each schema below (the shapes OpenAI's strict mode and pydantic emit: nested objects with
$defs/$ref, Optional fields as anyOf with null, enums, arrays with bounds, strings with lengths,
maps, a recursive tree, type lists), writes documents labelled by the `jsonschema` package
(Draft 2020-12 validator) as valid or not: random instances and random mutations of them (a key
dropped or added, a value of another type, a string or array stretched or cut, an enum value
changed), serialized with random key order and spacing.

The schemas and documents stay inside the conventions the matcher documents, so that its
answer must equal jsonschema's: every object with properties says additionalProperties false,
enum values are plain ASCII, numbers are short, whitespace runs are short, an "integer" slot
never holds 1.0 (which jsonschema counts as an integer and the matcher, reading integer syntax,
does not).

Patterns: for each pattern below (the ECMA-262 subset JSON Schema patterns use), strings labelled
by Python's `re.search` (ASCII classes, as ECMA-262's \\d and \\w are; no string ends with a newline
or holds the characters where Python's `.`, `$` and `\\s` differ from ECMA-262's), each with a
JSON spelling of it (escapes and surrogate pairs at random). Formats (date, time, date-time, uuid,
ipv4) are labelled by jsonschema's format checker (rfc3339-validator for the times).

Writes tests/worker/fixtures/json_schema_cases.json: {generator, cases: [{schema, documents:
[{text, valid}]}], patterns: [{pattern, strings: [{text, json, match}]}]}. Needs jsonschema and
rfc3339-validator (scripts/requirements-fixtures.txt, into build/venv).
"""
import copy
import json
import os
import random
from importlib.metadata import version

import re

import jsonschema

import text_mutation

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "worker",
                   "fixtures", "json_schema_cases.json")

STRICT_OBJECT = {"additionalProperties": False}

SCHEMAS = [
    # A pydantic model with a nested model, an Optional field and a list (strict mode).
    {
        "$defs": {
            "Address": {
                "type": "object",
                "title": "Address",
                "properties": {"city": {"type": "string", "maxLength": 12},
                               "zip": {"type": "string", "minLength": 5, "maxLength": 5}},
                "required": ["city", "zip"],
                **STRICT_OBJECT,
            }
        },
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "full name"},
            "age": {"type": "integer"},
            "height": {"type": "number"},
            "admin": {"type": "boolean"},
            "address": {"$ref": "#/$defs/Address"},
            "nickname": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
            "tags": {"type": "array", "items": {"type": "string", "maxLength": 6},
                     "maxItems": 3},
        },
        "required": ["name", "age", "address"],
        **STRICT_OBJECT,
    },
    # Enums and consts, with values that share prefixes.
    {
        "type": "object",
        "properties": {
            "color": {"enum": ["red", "green", "greenish", "blue"]},
            "size": {"type": "integer", "enum": [1, 12, 123, 2]},
            "kind": {"const": "fixed"},
            "mixed": {"enum": ["a", 1, True, None, 2.5]},
        },
        "required": ["color", "size", "kind"],
        **STRICT_OBJECT,
    },
    # Arrays with bounds, nested.
    {
        "type": "object",
        "properties": {
            "matrix": {"type": "array", "minItems": 1, "maxItems": 3,
                       "items": {"type": "array", "minItems": 2, "maxItems": 2,
                                 "items": {"type": "number"}}},
            "ids": {"type": "array", "items": {"type": "integer"}, "minItems": 2},
        },
        "required": ["matrix"],
        **STRICT_OBJECT,
    },
    # A map, and a type list.
    {
        "type": "object",
        "properties": {
            "scores": {"type": "object", "additionalProperties": {"type": "integer"}},
            "value": {"type": ["string", "integer", "null"]},
            "anything": {},
        },
        "required": ["scores", "value"],
        **STRICT_OBJECT,
    },
    # A recursive tree through $ref, and a discriminated union (oneOf with a const tag).
    {
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {
                    "label": {"type": "string", "maxLength": 4},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/Node"},
                                 "maxItems": 2},
                },
                "required": ["label", "children"],
                **STRICT_OBJECT,
            },
            "Cat": {"type": "object",
                    "properties": {"pet": {"const": "cat"}, "lives": {"type": "integer"}},
                    "required": ["pet", "lives"], **STRICT_OBJECT},
            "Dog": {"type": "object",
                    "properties": {"pet": {"const": "dog"}, "good": {"type": "boolean"}},
                    "required": ["pet", "good"], **STRICT_OBJECT},
        },
        "type": "object",
        "properties": {
            "tree": {"$ref": "#/$defs/Node"},
            "animal": {"oneOf": [{"$ref": "#/$defs/Cat"}, {"$ref": "#/$defs/Dog"}]},
        },
        "required": ["tree", "animal"],
        **STRICT_OBJECT,
    },
    # Strings with patterns and formats (a pydantic model with constr(pattern=...), datetime,
    # date, time, UUID, IPv4Address).
    {
        "type": "object",
        "properties": {
            "code": {"type": "string", "pattern": "^[A-Z]{2}-\\d{3}$"},
            "tag": {"type": "string", "pattern": "^(red|gre+n|blue?)$"},
            "when": {"type": "string", "format": "date-time"},
            "day": {"type": "string", "format": "date"},
            "at": {"type": "string", "format": "time"},
            "id": {"type": "string", "format": "uuid"},
            "ip": {"type": "string", "format": "ipv4"},
        },
        "required": ["code", "when"],
        **STRICT_OBJECT,
    },
    # Bounded integers (pydantic's conint(ge=...), Field(gt=..., le=...)).
    {
        "type": "object",
        "properties": {
            "age": {"type": "integer", "minimum": 0, "maximum": 130},
            "delta": {"type": "integer", "exclusiveMinimum": -5, "exclusiveMaximum": 5},
            "below": {"type": "integer", "maximum": -10},
            "big": {"type": "integer", "minimum": 1000},
            "ratio": {"type": "number"},
        },
        "required": ["age", "delta"],
        **STRICT_OBJECT,
    },
    # A top-level array of short strings, and an empty object allowed.
    {"type": "array", "items": {"anyOf": [{"type": "string", "minLength": 1, "maxLength": 3},
                                          {"type": "object", "properties": {},
                                           **STRICT_OBJECT}]},
     "maxItems": 4},
]

ALPHABET = list("abcxyz019 ") + ["é", "→", "😀", '"', "\\", "\n", "/"]

# Strings of the right shape for the patterns and formats above, the first two valid; mutate()
# and mutate_text() make wrong ones of them.
SHAPED = {
    "^[A-Z]{2}-\\d{3}$": ["AB-123", "ZZ-000", "QX-909"],
    "^(red|gre+n|blue?)$": ["green", "blu", "gren", "reds"],
    "date-time": ["2024-02-29T12:30:00Z", "1999-12-31T23:59:59.5+05:30", "2023-02-28t00:00:00z",
                  "2023-02-29T12:00:00Z", "2024-04-31T10:00:00Z", "0000-01-01T00:00:00Z",
                  "2024-01-01T24:00:00Z", "2024-01-01T12:00:60Z", "2100-02-29T01:02:03Z",
                  "2000-02-29T01:02:03-00:00"],
    "date": ["2024-02-29", "2000-02-29", "2023-02-29", "1900-02-29", "2024-11-31", "0001-01-01"],
    "time": ["12:30:00Z", "23:59:59.999+01:00", "24:00:00Z", "12:60:00Z", "08:15:00-08:00"],
    "uuid": ["123e4567-e89b-12d3-a456-426614174000", "123E4567-E89B-12D3-A456-426614174000",
             "123e4567e89b12d3a456426614174000", "123e4567-e89b-12d3-a456-42661417400g"],
    "ipv4": ["192.168.0.1", "255.255.255.255", "256.1.1.1", "01.2.3.4", "1.2.3", "0.0.0.0"],
}

PATTERNS = {
    "^[a-z]+$": ["abc", "a", "", "aBc", "abc1"],
    "^\\d{3}-\\d{4}$": ["555-1234", "55-1234", "555-12345", "abc-defg"],
    "colou?r": ["color", "colour", "discolored", "colouur", "COLOR"],
    "^(foo|bar)baz$": ["foobaz", "barbaz", "bazbaz", "foobar"],
    "^[A-Z][a-z]*( [A-Z][a-z]*)*$": ["Hello World", "Hello world", "A B C", "Ab  Cd"],
    "^\\S+@\\S+\\.\\S+$": ["a@b.co", "a b@c.d", "a@b", "x@y.z.w"],
    "^[^\\s]{2,5}$": ["ab", "abcde", "abcdef", "a", "a b"],
    "^#[0-9a-fA-F]{6}$": ["#00ff00", "#00FF0", "00ff00", "#GGGGGG"],
    "^\\+?[1-9]\\d{1,14}$": ["+14155552671", "04155552671", "+1", "123456789012345"],
    "a.c": ["abc", "a\nc", "ac", "xa😀cx"],
    "^(?:\\w+\\.)+\\w+$": ["www.example.com", "a.b", "ab", "a..b", "a_b.c-d"],
    "^[\\u00e9-\\u00ff]+$": ["é", "éÿ", "e", "éa"],
    "^\\$\\d+(\\.\\d{2})?$": ["$12", "$12.50", "$12.5", "12.50"],
    "^(a|ab)(c|bcd)$": ["abcd", "ac", "abc", "abd"],
    "é+": ["é", "café", "cafe", "éé"],
    "^(?<year>\\d{4})-\\d{2}$": ["2024-11", "24-11", "2024-1"],
    "^[\\w.-]+$": ["a.b-c_d", "a b", "a/b"],
    "^x*?y{2,}$": ["yy", "xxyyy", "xy", "y"],
    "^[😀-😂]$": ["😀", "😂", "😃", "a"],
}

# Python's `re` and ECMA-262 agree on these strings: no trailing newline, no \r, no U+2028/9,
# no non-ASCII space.
PATTERN_ALPHABET = list("abcABC019 -._@#$+é") + ["😀", "\n", "\"", "\\", "\u00ff"]


def mutate_text(rng, text):
    return text_mutation.mutate(rng, text, PATTERN_ALPHABET)


def resolve(schema, root):
    while isinstance(schema, dict) and "$ref" in schema:
        node = root
        for part in schema["$ref"][2:].split("/"):
            node = node[part]
        schema = node
    return schema


def random_string(rng, lo=0, hi=8):
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(lo, hi)))


def instance(rng, schema, root, depth=0):
    """A random value meant to satisfy `schema` (jsonschema has the last word)."""
    schema = resolve(schema, root)
    if schema is True or schema == {}:
        return rng.choice([None, True, 3, -2.5, "any", [1, "x"], {"k": [None]}])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return instance(rng, rng.choice(schema[key]), root, depth)
    if "const" in schema:
        return copy.deepcopy(schema["const"])
    if "enum" in schema:
        return copy.deepcopy(rng.choice(schema["enum"]))
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = rng.choice(kind)
    if kind == "object":
        properties = schema.get("properties", {})
        if not properties and isinstance(schema.get("additionalProperties"), dict):
            return {random_string(rng, 1, 4): instance(rng, schema["additionalProperties"], root,
                                                       depth + 1)
                    for _ in range(rng.randint(0, 3))}
        required = set(schema.get("required", []))
        return {name: instance(rng, sub, root, depth + 1) for name, sub in properties.items()
                if name in required or (depth < 3 and rng.random() < 0.6)}
    if kind == "array":
        lo = schema.get("minItems", 0)
        hi = schema.get("maxItems", lo + 3)
        if depth >= 3:
            hi = lo
        return [instance(rng, schema.get("items", {}), root, depth + 1)
                for _ in range(rng.randint(lo, hi))]
    if kind == "string":
        shaped = SHAPED.get(schema.get("pattern", schema.get("format")))
        if shaped:
            text = rng.choice(shaped[:2] if rng.random() < 0.8 else shaped)
            return mutate_text(rng, text) if rng.random() < 0.1 else text
        lo = schema.get("minLength", 0)
        return random_string(rng, lo, schema.get("maxLength", lo + 8))
    if kind == "integer":
        lo = schema.get("minimum", schema.get("exclusiveMinimum", -1000))
        hi = schema.get("maximum", schema.get("exclusiveMaximum", lo + 2000))
        return rng.randint(lo - 2, hi + 2)
    if kind == "number":
        return rng.choice([rng.randint(-50, 50), round(rng.uniform(-1e4, 1e4), 3), 1.5e-7])
    if kind == "boolean":
        return rng.random() < 0.5
    return None


def mutate(rng, value):
    """`value` with one random change somewhere inside it."""
    paths = []

    def walk(v, path):
        paths.append(path)
        if isinstance(v, dict):
            for k, sub in v.items():
                walk(sub, path + [k])
        elif isinstance(v, list):
            for i, sub in enumerate(v):
                walk(sub, path + [i])

    walk(value, [])
    path = rng.choice(paths)
    value = copy.deepcopy(value)
    parent, target = None, value
    for step in path:
        parent, target = target, target[step]
    change = rng.randrange(7)
    if change == 0 and isinstance(target, dict) and target:
        del target[rng.choice(list(target))]
        return value
    if change == 1 and isinstance(target, dict):
        target[rng.choice(["extra", "name", "zz"])] = rng.choice([1, "x", None])
        return value
    if change == 2 and isinstance(target, list):
        if target and rng.random() < 0.5:
            target.pop()
        else:
            target.append(copy.deepcopy(target[0]) if target else "x")
        return value
    if change == 3 and isinstance(target, str):
        replacement = target + random_string(rng, 1, 6)
    elif change == 4 and isinstance(target, str):
        replacement = target[:-1]
    elif change == 5 and isinstance(target, (int, float)) and not isinstance(target, bool):
        replacement = target + 0.5
    else:
        replacement = rng.choice([None, "red", "greenis", 7, 13, True, [], {}, "cat", "dog"])
    if parent is None:
        return replacement
    parent[path[-1]] = replacement
    return value


def serialize(rng, value):
    def shuffle(v):
        if isinstance(v, dict):
            items = [(k, shuffle(sub)) for k, sub in v.items()]
            rng.shuffle(items)
            return dict(items)
        if isinstance(v, list):
            return [shuffle(sub) for sub in v]
        return v

    style = rng.randrange(3)
    separators = [(",", ":"), (", ", ": "), (",", ": ")][style]
    return json.dumps(shuffle(value), ensure_ascii=rng.random() < 0.3, separators=separators)


def main():
    rng = random.Random(20261124)
    cases = []
    for schema in SCHEMAS:
        validator = jsonschema.Draft202012Validator(
            schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
        documents = {}
        for _ in range(40):
            value = instance(rng, schema, schema)
            for candidate in [value] + [mutate(rng, value) for _ in range(3)]:
                text = serialize(rng, candidate)
                documents[text] = validator.is_valid(json.loads(text))
        cases.append({"schema": schema,
                      "documents": [{"text": t, "valid": v} for t, v in documents.items()]})
        valid = sum(documents.values())
        print(f"schema {len(cases)}: {len(documents)} documents, {valid} valid")
    patterns = []
    for pattern, examples in PATTERNS.items():
        # Python spells named groups (?P<name>...).
        compiled = re.compile(pattern.replace("(?<", "(?P<"), re.ASCII)
        texts = set(examples)
        for _ in range(30):
            texts.add(mutate_text(rng, rng.choice(examples)))
        texts = sorted(t for t in texts if not t.endswith("\n"))
        strings = [{"text": t, "json": json.dumps(t, ensure_ascii=rng.random() < 0.5),
                    "match": compiled.search(t) is not None} for t in texts]
        patterns.append({"pattern": pattern, "strings": strings})
        print(f"pattern {pattern!r}: {len(strings)} strings, "
              f"{sum(s['match'] for s in strings)} match")
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump({"generator": f"scripts/gen_json_schema_fixtures.py, jsonschema "
                                f"{version('jsonschema')}, rfc3339-validator "
                                f"{version('rfc3339-validator')}",
                   "cases": cases, "patterns": patterns}, f, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
