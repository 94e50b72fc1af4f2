#!/usr/bin/env python3
"""Builds the Lark-grammar fixtures for vLLM's guided_grammar given in Lark's syntax (vLLM reads a
grammar without a `::=` line as Lark): each grammar below with inputs labelled by the real Lark
parser, so that headroom's Lark translation (worker/engine/lark_grammar.h) is checked against
Lark rather than against itself.

Inputs: each grammar's hand-picked sentences and non-sentences, then random one-character
mutations of them (text_mutation.py). Label: `complete`, whether Lark (parser="earley",
lexer="dynamic_complete": every way of cutting the text into terminals is tried, which is the
language of the grammar as a whole, as headroom's character-level matcher reads it) parses the
whole input from the start rule. The start rule is `start` if the grammar defines it, else the
first rule (as vLLM's converter picks it).

Writes tests/worker/fixtures/lark_grammar.json: {generator, lark, grammars: [{name, lark, start,
cases: [{text, complete}]}]}. Deterministic (seeded).

Needs lark (build/venv: build/venv/bin/pip install lark==1.2.2). Run from the repository root:
  build/venv/bin/python scripts/gen_lark_fixtures.py
"""
import json
import os
import random
import re

import lark

import text_mutation

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
OUT = os.path.join(ROOT, "tests", "worker", "fixtures", "lark_grammar.json")

MUTATIONS_PER_TEXT = 8
MAX_CASES = 48

# (name, lark grammar, hand-picked inputs)
GRAMMARS = [
    # vLLM's own Lark test grammar (tests/entrypoints: sample_sql_lark).
    ("vllm_sql", r'''
start: select_statement
select_statement: "SELECT " column " from " table " where " condition
column: "col_1" | "col_2"
table: "table_1" | "table_2"
condition: column "=" number
number: "1" | "2"
''', ["SELECT col_1 from table_1 where col_1=1", "SELECT col_2 from table_2 where col_1=2",
      "SELECT col_3 from table_1 where col_1=1", "SELECT col_1 from table_1 where col_1=",
      "select col_1 from table_1 where col_1=1", ""]),
    # vLLM's grammar docs' JSON example, with the whitespace Lark's JSON tutorial ignores.
    ("json_tutorial", r'''
?value: dict
      | list
      | string
      | SIGNED_NUMBER      -> number
      | "true"             -> true
      | "false"            -> false
      | "null"             -> null

list : "[" [value ("," value)*] "]"

dict : "{" [pair ("," pair)*] "}"
pair : string ":" value

string : ESCAPED_STRING

%import common.ESCAPED_STRING
%import common.SIGNED_NUMBER
%import common.WS
%ignore WS
''', ['{"a": [1, -2.5e3, true, null], "b": {"c": "d\\"e"}}', ' [ ] ', '{}', '[1,]', '{"a" 1}',
      '"unclosed', '"a"b"', '"back\\\\"', '"odd\\"', '-0.5E+2', '+1', '.5', '1.', '[true false]',
      '{"k": "v"}\n', 'nul']),
    # Arithmetic: inline rules, aliases, imports by list and by alias, %ignore of inline spaces.
    ("calculator", r'''
?start: sum
?sum: product
    | sum "+" product   -> add
    | sum "-" product   -> sub
?product: atom
    | product "*" atom  -> mul
    | product "/" atom  -> div
?atom: NUMBER           -> number
     | "-" atom         -> neg
     | NAME             -> var
     | "(" sum ")"
%import common (NUMBER, WS_INLINE)
%import common.CNAME -> NAME
%ignore WS_INLINE
''', ["1 + 2 * 3", "(a - 4.5) / -b_1", "1+", "--x", " 7 ", "2 3", "x*(y+z", "1e5 * _k",
      "3\t*\t4", "3\n*4"]),
    # Regex terminals: classes, escapes, quantifiers, flags, groups.
    ("regex_terminals", r'''
start: item ("," item)*
item: IDENT | DATE | HEX | WORDS | QUOTED | TAG
IDENT: /[a-z_][a-z0-9_]*/i
DATE: /\d{4}-\d{2}(-\d{2})?/
HEX: /0x[0-9a-f]{1,4}/i
WORDS: /(?:ab|cd)+e?/
QUOTED: /'[^'\n]*'/
TAG: /<(?P<t>[a-z]+)>/
''', ["abc,Foo_1,2024-01,2024-01-31,0xBEEF,abcde,'x y',<b>", "2024-1", "0x12345", "abab,cdcde",
      "'it''s'", "<B>", "_,A9", "9a", "0XFf", "cdab,e", "'\n'", ""]),
    # Regex corners: dot (with and without s), negated and escaped classes, alternation,
    # {m,}, {,n}, (?i:...), (?s:...), \s \S \W.
    ("regex_corners", r'''
start: LINE | BLOCK | CSV | SPACED | UPPER | ANY
LINE: /L:.+/
BLOCK: /B:(?s:.+)/
CSV: /[\w.-]+(,[\w.-]+){1,}/
SPACED: /S\s+\S{,3}\W?/
UPPER: /U(?i:x)y+/
ANY: /A[^]z]*/
''', ["L:anything here", "L:", "L:two\nlines", "B:two\nlines", "a.b,c-d", "a,b,c", "abc",
      "S  xyz!", "S\t", "S x1234", "UXy", "UXY", "Uxyyy", "A", "Aab[", "Az", "Ab]"]),
    # Strings: escapes, the i flag, ranges, ~ repetition, optionals.
    ("literals", r'''
start: greeting? code name
greeting: "hello"i " " | "hi" " "
code: HEXD~2 | HEXD~4..5 | "#" DIGIT~1..3
name: ("é".."ü" | "x")+ "\t\u00e9\x41"?
HEXD: "a".."f" | "0".."9"
DIGIT: "0".."9"
''', ["HeLLo ab12x", "hi ffé", "hi fffff\té\x41", "#123ü", "#1234x", "abx", "abcx", "abcdx",
      "Hi abx", "hello 12ß", "x", "#é"]),
    # Underscore rules and terminals, priorities, !-rules, a rule named root, comments, nullable.
    ("names_and_priorities", r'''
// a comment
start: root _sep?   # another comment
root: keyword "=" VALUE
!keyword: "let" | "var"
_sep: _SEMI
_SEMI.2: ";"
VALUE.-1: /[0-9]+/ | "none"
''', ["let=1", "var=none;", "let=", "let=12;;", "const=1", "var =1", ""]),
    # Common terminals through a list import; NEWLINE-separated records; comments ignored.
    ("records", r'''
start: (record NEWLINE)* record?
record: WORD ":" INT ("," SIGNED_FLOAT)*
%import common (WORD, INT, SIGNED_FLOAT, NEWLINE, HEXDIGIT)
%import common.C_COMMENT
%import common.SH_COMMENT
%ignore C_COMMENT
%ignore SH_COMMENT
''', ["a:1\nb:2,-3.5,+1e2\n", "a:1/* x */\n", "a:1#note\r\nb:2", "a:1,", "a:1\n\n", "a1:1",
      "a:1,.5e-1", "a:/*/*/1", "a:1,1.5E"]),
    # Unicode text in strings, ranges and regex classes.
    ("unicode", r'''
start: GREEK+ " " CJK "!"?
GREEK: /[α-ω]/ | "Ω"
CJK: "中文" | "日本" /[\u3040-\u309f]+/
''', ["αβΩ 中文", "αβ 日本ひらがな!", "a 中文", "Ω 日本", "Ωω 中文!!", "α 中", "ω 日本ゐ"]),
]


def start_rule(grammar):
    """`start` if the grammar defines it, else its first rule (as vLLM's converter picks)."""
    names = []
    for line in grammar.split("\n"):
        m = re.match(r"\s*[?!]?([_a-zA-Z][_a-zA-Z0-9]*)(\.-?\d+)?\s*:", line)
        if m and not line.lstrip().startswith("%"):
            names.append(m.group(1))
    return "start" if "start" in names else names[0]


def main():
    rng = random.Random(20261126)
    grammars = []
    for name, text, picked in GRAMMARS:
        start = start_rule(text)
        parser = lark.Lark(text, parser="earley", lexer="dynamic_complete", start=start)
        alphabet = sorted(set("".join(picked)) | set(' "\\\n,;'))
        cases = []
        for candidate in text_mutation.with_mutations(rng, picked, alphabet, MUTATIONS_PER_TEXT):
            if len(cases) >= MAX_CASES and candidate not in picked:
                continue
            try:
                parser.parse(candidate)
                complete = True
            except lark.exceptions.LarkError:
                complete = False
            cases.append({"text": candidate, "complete": complete})
        accepted = sum(c["complete"] for c in cases)
        print(f"{name}: {len(cases)} cases, {accepted} sentences (start: {start})")
        grammars.append({"name": name, "lark": text, "start": start, "cases": cases})
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump({"generator": "scripts/gen_lark_fixtures.py", "lark": lark.__version__,
                   "grammars": grammars}, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
