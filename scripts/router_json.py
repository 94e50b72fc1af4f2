"""For the tool-call parsers' fixture generators (gen_pythonic_fixtures.py,
gen_qwen3_coder_fixtures.py, gen_granite_fixtures.py): what JSON the router holds, and writing the
labelled cases."""
import json
import math


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
