#!/usr/bin/env python3
"""Builds the guided-regex fixtures for worker/engine/regex_matcher.h
(tests/worker/regex_matcher_test.cc).

vLLM's guided_regex (structured_outputs.regex) asks that the whole output match a pattern, as
Python's `re.fullmatch` decides. For each pattern below (the kinds people constrain replies with:
phone numbers, dates, e-mail addresses, IPv4, labels, numbers, short sentences, plus the corners
of the syntax), strings labelled by `re.fullmatch`: the pattern's own examples and random
mutations of them (a character dropped, replaced or inserted).

The patterns and strings stay where Python's `re` (with re.ASCII, so \\d \\w \\s are ASCII as in
ECMA-262) and the ECMA-262 subset headroom implements agree: no \\r, no U+2028/9, no non-ASCII
space (where `.` and `\\s` differ), no `$` before a trailing newline.

Writes tests/worker/fixtures/regex_cases.json: {generator, patterns: [{pattern, strings: [{text,
match}]}]}. Standard library only; deterministic (seeded).
"""
import json
import os
import platform
import random
import re

import text_mutation

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "worker",
                   "fixtures", "regex_cases.json")

PATTERNS = {
    r"\d{3}-\d{3}-\d{4}": ["555-123-4567", "555-1234-567", "5551234567", "555-123-45678"],
    r"[A-Z][a-z]+ [A-Z][a-z]+": ["Ada Lovelace", "ada Lovelace", "Ada  Lovelace", "Ad L"],
    r"(yes|no|maybe)": ["yes", "no", "maybe", "yesno", "mayb", ""],
    r"[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,4}": ["a.b@example.com", "x@y.io", "x@y.c",
                                               "@y.io", "x@y.info", "x@y.infos"],
    r"((25[0-5]|2[0-4]\d|[01]?\d\d?)\.){3}(25[0-5]|2[0-4]\d|[01]?\d\d?)": [
        "192.168.0.1", "255.255.255.255", "256.1.1.1", "1.2.3", "01.02.003.4", "0.0.0.0"],
    r"\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])": ["2024-11-24", "2024-13-01", "2024-00-10",
                                                     "2024-1-1", "1999-12-31"],
    r"-?(0|[1-9]\d*)(\.\d+)?": ["0", "-12.5", "012", "3.", "-0.001", "1e5"],
    r"(Positive|Negative|Neutral)": ["Positive", "Neutral", "positive", "Negativ"],
    r"\w+( \w+)*\.": ["Hello world.", "Hi.", "Hello  world.", "Hello world", " Hi."],
    r"^abc$": ["abc", "abcd", "ab", ""],
    r"a|ab|abc": ["a", "ab", "abc", "abcd", "b"],
    r"[😀-😂]+é?": ["😀", "😀😂é", "😃", "é", "😁ée"],
    r".{2,5}": ["ab", "abcde", "abcdef", "a", "a\nb", "é😀"],
    r"\s*\{\"a\": \d+\}\s*": ["{\"a\": 1}", " {\"a\": 12} ", "{\"a\":1}", "{\"a\": }"],
    r"(?:ab)*c?": ["", "ab", "ababc", "abac", "c", "cc"],
    r"x*": ["", "x", "xxxx", "xy"],
    r"[^aeiou\s]{3}": ["bcd", "bad", "b d", "xyz", "xy"],
    r"(?<word>[a-z]+)-\d{1,3}": ["ab-1", "ab-1234", "-12", "AB-12"],
    r"\$\d+(\.\d{2})?": ["$12", "$12.50", "$12.5", "12.50"],
    r"Answer: [A-D]\n": ["Answer: A\n", "Answer: E\n", "Answer: A", "Answer:  B\n"],
}

ALPHABET = list("abcxyzABC0129 -._@$+{}\":é") + ["😀", "😃", "\n", "\t"]


def main():
    rng = random.Random(20261124)
    patterns = []
    for pattern, examples in PATTERNS.items():
        # Python spells named groups (?P<name>...).
        compiled = re.compile(pattern.replace("(?<", "(?P<"), re.ASCII)
        texts = set(examples)
        for _ in range(40):
            text = rng.choice(examples)
            for _ in range(rng.randint(1, 2)):
                text = text_mutation.mutate(rng, text, ALPHABET)
            texts.add(text)
        strings = [{"text": t, "match": compiled.fullmatch(t) is not None} for t in sorted(texts)]
        patterns.append({"pattern": pattern, "strings": strings})
        print(f"pattern {pattern!r}: {len(strings)} strings, "
              f"{sum(s['match'] for s in strings)} match")
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump({"generator": f"scripts/gen_regex_fixtures.py, Python {platform.python_version()} "
                                f"re.fullmatch", "patterns": patterns}, f, ensure_ascii=False,
                  indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
