"""For the tool-call parsers' fixture generators (gen_pythonic_fixtures.py,
gen_qwen3_coder_fixtures.py, gen_granite_fixtures.py, gen_phi4_mini_fixtures.py): what JSON the
router holds, random argument values, and writing the labelled cases."""
import json
import math

STRINGS = ["Paris", "a b", "", "quote \" and \\ back", "line\nbreak", "é☕"]
CALL_NAMES = ["get_weather", "search", "send_email", "f", "lookup_2", "x"]
ARGUMENT_KEYS = ["city", "q", "n", "to", "body", "opts", "tags", "ok"]


def random_value(rng, depth, strings=STRINGS):
    """A random JSON value for a generated call's arguments: strings, integers, floats, literals,
    and below depth 3 lists and objects of such values."""
    kind = rng.randrange(7 if depth < 3 else 5)
    if kind == 0:
        return rng.choice(strings)
    if kind == 1:
        return rng.randint(-10**6, 10**6)
    if kind == 2:
        return rng.choice([0.5, -3.25, 1e-7, 2.0, 123456.789])
    if kind == 3:
        return rng.choice([True, False, None])
    if kind == 4:
        return rng.randint(0, 9)
    if kind == 5:
        return [random_value(rng, depth + 1, strings) for _ in range(rng.randint(0, 3))]
    return {rng.choice(ARGUMENT_KEYS): random_value(rng, depth + 1, strings)
            for _ in range(rng.randint(0, 3))}


def random_calls(rng, arguments_key, strings=STRINGS):
    """One to three calls {"name", arguments_key: {...}} with random names and arguments."""
    return [{"name": rng.choice(CALL_NAMES),
             arguments_key: {rng.choice(ARGUMENT_KEYS): random_value(rng, 1, strings)
                             for _ in range(rng.randint(0, 4))}}
            for _ in range(rng.randint(1, 3))]


def dumps_in_random_style(rng, value):
    """`value` as json.dumps writes it by default, indented, or compact (ASCII only)."""
    style = rng.randrange(3)
    if style == 0:
        return json.dumps(value, ensure_ascii=False)
    if style == 1:
        return json.dumps(value, ensure_ascii=False, indent=2)
    return json.dumps(value, separators=(",", ":"))


def fits(value, depth=0):
    """Integers within int64, finite floats, string dict keys, strings without lone surrogates,
    lists and tuples, no sets, bytes or complex numbers, nesting at most 128 deep."""
    if depth > 128:
        return False
    if isinstance(value, bool) or value is None:
        return True
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True
    if isinstance(value, int):
        return -2**63 <= value < 2**63
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, (list, tuple)):
        return all(fits(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and fits(k) and fits(v, depth + 1)
                   for k, v in value.items())
    return False


def write_cases(path, header, cases):
    """Writes {**header, "cases": cases} as JSON with one case per line (readable diffs), and
    reports how many cases have calls."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps(header, ensure_ascii=False)[:-1] + ', "cases": [\n')
        f.write(",\n".join(json.dumps(c, ensure_ascii=False) for c in cases))
        f.write("\n]}\n")
    called = sum(1 for c in cases if c["calls"])
    print(f"wrote {path}: {len(cases)} replies, {called} with calls")
