#!/usr/bin/env python3
"""Builds the guided-grammar fixtures for vLLM's guided_grammar (structured_outputs.grammar):
EBNF grammars in xgrammar's dialect (GBNF-compatible), labelled by the real xgrammar library so
that headroom's grammar matcher is checked against xgrammar rather than against itself.

For each grammar below (string literals with every escape, raw non-ASCII, character classes with
ranges, negation, [^] and escapes, unicode and 4-byte ranges, rule references, groups,
alternatives, every repetition form, left/right/mutual recursion, nullable rules, comments and
multi-line rules, a JSON grammar, arithmetic, CSV, a "reasoning" grammar), inputs as bytes: the
grammar's hand-picked sentences and non-sentences, random sentences derived from the grammar (a
small parser of the grammar text below and a depth-limited random derivation), prefixes of them
cut at a random byte (often inside a multi-byte UTF-8 character) and random byte-level mutations
(a byte dropped, a byte replaced or a character inserted, including invalid UTF-8). Each input is
labelled by xgrammar with:
  complete: the whole input is a sentence of the grammar (GrammarMatcher.accept_string(bytes) then
            is_completed(); cross-checked with xgrammar.testing._is_grammar_accept_string),
  viable:   the length in bytes of the longest prefix xgrammar still accepts as a prefix of some
            sentence (accept_string fed one byte at a time, cross-checked with fresh matchers).
Also: grammars xgrammar refuses (Grammar.from_ebnf raises) with its message (the "[hh:mm:ss]
file:line: " log prefix removed), and token masks for small trained tokenizers
(tests/router/tokenizer/fixtures): after a prefix, the token ids GrammarMatcher
.fill_next_token_bitmask allows, without the stop tokens (can_end says whether a stop token is
allowed) and without the tokenizer's special tokens (allowed_special lists those xgrammar allows:
it treats their text as ordinary text).

Writes tests/worker/fixtures/grammar.json: {generator, xgrammar, grammars: [{name, ebnf, cases:
[{hex, text?, complete, viable}]}], refused: [{name, ebnf, error}], tokenizers: {name:
{vocab_size, vocab_type, add_prefix_space, stop_token_ids, special_token_ids,
hf_special_token_ids}}, masks: [{tokenizer, name, ebnf, prefix_hex, prefix_text?, allowed,
allowed_special, can_end}]}. Deterministic (seeded; no set iteration).

Needs xgrammar 0.2.8 next to the fixtures venv (torch, transformers):
  build/venv-fixtures/bin/pip install --target build/pydeps-xgr xgrammar==0.2.8 \
      apache-tvm-ffi pydantic
Run from the repository root:
  PYTHONPATH=build/pydeps-xgr build/venv-fixtures/bin/python scripts/gen_grammar_fixtures.py
"""
import json
import os
import random
import re
from importlib.metadata import version

import transformers
import xgrammar as xgr
from xgrammar import testing as xgr_testing

import text_mutation

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
OUT = os.path.join(ROOT, "tests", "worker", "fixtures", "grammar.json")
TOKENIZERS = os.path.join(ROOT, "tests", "router", "tokenizer", "fixtures")

MAX_CASES = 40

# (name, ebnf, hand-picked inputs: str, or bytes for what str cannot spell)
GRAMMARS = [
    ("literal_escapes",
     r'''root ::= "say \"hi\"\n" | "tab\there" | "back\\slash" | "\x41\u00e9\U0001F600" | "é中文" | "a\/b\'c"''',
     ["say \"hi\"\n", "say \"hi\"", "say \"hi\"\\n", "tab\there", "tab here", "back\\slash",
      "back\\\\slash", "Aé😀", "Aé", "A\u00e9\U0001F601", "é中文", "é中", "e中文", "a/b'c",
      "a\\/b'c", "", b"A\xc3\xa9\xf0\x9f\x98", b"\xc3", b"\xc3\xa9\xe4\xb8", b"\xc3\xa9\xe4\xb8\xae",
      "say \"hi\"\n\n"]),
    ("greedy_hex_escape",
     r'''root ::= "\x41a" | "\x4" "-" | "\x1F600" | "\x41" "a"{0} "\u00e9\U0001f600"''',
     ["\u041a", "Aa", "\x04-", "\x04", "😀", "Aé😀", "A", "\u041aa", b"\xd0", b"\xf0\x9f"]),
    ("empty_literal",
     r'''root ::= "" | "a" "" "b" | ""? "c"''',
     ["", "ab", "a", "b", "c", "cc", "abc", " "]),
    ("empty_group",
     'root ::= "a" ( ) "b" | ( ) | "c" () ()*',
     ["", "ab", "a b", "c", "ac", "abab"]),
    ("classes",
     r'''root ::= [a-zA-Z_] [a-zA-Z0-9_]* ":" [0-9a-fA-F]{2,4} [+-]? [a-]?''',
     ["x:ff", "_a9:0F1e", "Zz:00+", "a:123-a", "a:12-", "9a:ff", "a:f", "a:fffff", "ab:1g",
      "a-b:12", "a:12--", ":12", "a_:AB+-", "a:12+a"]),
    ("negated_class",
     r'''root ::= "<" [^<>\n]* ">" [^0-9]?''',
     ["<>", "<abc>", "<a<b>", "<a\nb>", "<é中😀>x", "<a>1", "<a>\n", "<a>>", "<", "<a",
      b"<\xed\xa0\x80>", b"<\xff>", b"<\x80>", b"<\xc0\x80>", b"<\xc3>", b"<>\xc3", b"<>\xe4\xb8",
      b"<\xf4\x8f\xbf\xbf>", b"<\xf4\x90\x80\x80>", b"<\x00>"]),
    ("not_a",
     'root ::= [^a]+ "a"',
     ["ba", "a", "aa", "bba", "éa", "😀a", "\na", "b", b"\xed\xa0\x80a", b"\xed\xa0a", b"\xffa",
      b"\x80a", b"\xc0\x80a", b"\xc1\xbfa", b"\xe0\x80\x80a", b"\xf5\x80\x80\x80a", b"\xc3a",
      b"\xc3\xa9", b"\xe4\xb8", b"\x00a", b"\x7fa", b"\xef\xbf\xbfa", b"\xf4\x8f\xbf\xbfa"]),
    ("any_char",
     'root ::= "[" [^] [^]? "]"',
     ["[a]", "[ab]", "[]]", "[]", "[abc]", "[é]", "[😀😀]", "[\n]", b"[\xed\xa0\x80]",
      b"[\xff]", b"[\x80]", b"[\xc0\x80]", b"[\xc3", b"[\xf0\x9f\x98", b"[\xf0\x9f\x98]",
      b"[\x00]", b"[\xf4\x90\x80\x80]"]),
    ("class_escapes",
     r'''root ::= [\-\]\\a-c]+ ";" [\^x] [a\-z] [\[\n\t ] ["'#.]''',
     ["-];^-[.", "a\\b;x-\n\"", "];xa '", "c;^z\t#", "-;^b .", ";^- .", "a;y- .", "a;^-]", "\\;^-[#"]),
    ("unicode_classes",
     r'''root ::= [\u4e00-\u9fff]+ ("," [\u00c0-\u00ff\u0100-\u017f]*)? [😀-🙏]?''',
     ["中", "中文", "中文,", "中,éÿĀſ", "中,é😀", "中😀", "中🙏", "中🙐", "😀", ",é", "中,ƀ", "中,¿",
      b"\xe4", b"\xe4\xb8", b"\xe4\xb8\xad\xe4", b"\xe4\xb8\xad,\xc3", b"\xe4\xb8\xad\xf0\x9f",
      b"\xe4\xb8\xad\xf0\x9f\x99\x8f", b"\xe4\xb8\xad\xf0\x9f\x99\x90", b"\xe3\x80\x80",
      b"\xe4\x00", b"\xed\xa0\x80", b"\xe9\xbf\xbf", b"\xea\x80\x80", b"\xe4\xb8\xad\xff"]),
    ("four_byte_ranges",
     r'''root ::= [\U0001F600-\U0001F64F]{1,2} [\U00010000-\U0010FFFF]? "."''',
     ["😀.", "😀🙏.", "😀😀😀.", "😀𐀀.", "😀\U0010FFFF.", "😀\U0001F650.", ".", "😀",
      b"\xf0\x9f\x98", b"\xf0\x9f\x98\x80\xf4\x8f\xbf", b"\xf0\x9f\x98\x80\xf4\x90", b"\xf0\x9f\x97\xbf.",
      b"\xf0\x9f\x98\x80\xf0\x8f\xbf\xbf.", b"\xf0\x9f\x98\x80\xed\xa0\x80."]),
    ("mixed_width_range",
     r'''root ::= [\u007e-\u0801]+ "."''',
     ["~.", "\u007f.", "é.", "\u07ff.", "\u0800.", "\u0801.", "\u0802.", "}.", "~é\u0800.",
      b"\xe0\xa0", b"\xe0\xa0\x82.", b"\xc2\x80.", b"\xdf", b"\xe0\x9f\xbf."]),
    ("rule_references",
     '''root ::= greeting ", " name "!"
greeting ::= "hello" | "hi"
name ::= first (" " last)?
first ::= [A-Z] [a-z]*
last ::= [A-Z] [a-z]+''',
     ["hello, Ada!", "hi, Ada Lovelace!", "hi, A!", "hi, A B!", "hi, A Bc!", "hello, ada!",
      "hey, Ada!", "hello,Ada!", "hi, Ada", "hi, Ada Lovelace", "hello, Ada!!"]),
    ("nested_groups",
     'root ::= ("a" ("b" | "c" ("d" | "e")*) | "f")+ "."',
     [".", "ab.", "ac.", "acde.", "f.", "abf.", "acdedef.", "a.", "ad.", "abab.", "ffff", "acx."]),
    ("repetition",
     '''root ::= "x"{3} "-" [0-9]{2,4} "-" ab{2,} "-" ("p" | "q"){0} "z"? ("k" "l"){0,2} "."
ab ::= "a" "b"?''',
     ["xxx-12-aa-.", "xxx-1234-abab-zklkl.", "xxx-123-aaa-z.", "xx-12-aa-.", "xxxx-12-aa-.",
      "xxx-1-aa-.", "xxx-12345-aa-.", "xxx-12-a-.", "xxx-12-aa-p.", "xxx-12-aa-klklkl.",
      "xxx-12-aab-kl.", "xxx-12-abb-."]),
    ("left_recursion",
     '''root ::= root "a" | "b"
''',
     ["b", "ba", "baaaa", "", "a", "ab", "bab", "bb"]),
    ("left_recursion_nullable",
     'root ::= root "a" | ""',
     ["", "a", "aaa", "b", "ab"]),
    ("right_recursion",
     'root ::= "(" root ")" | "x"',
     ["x", "(x)", "((x))", "(((x)))", "()", "(x", "((x)", "(x))", "x)", "(y)"]),
    ("mutual_recursion",
     '''root ::= a
a ::= "a" b | "a"
b ::= "b" a | "b"''',
     ["a", "ab", "aba", "abab", "aa", "b", "", "abba", "ababa"]),
    ("nullable",
     '''root ::= x y "end" w
x ::= "x"*
y ::= z
z ::= "z" | ""
w ::= v v
v ::= ("v"?)*''',
     ["end", "xend", "xxzend", "zend", "zzend", "endv", "endvvv", "xzendvv", "en", "xze"]),
    ("comments_and_names",
     '''# a comment line
root ::= rule-1   # trailing comment
         rule_2.x
  | "alt"   # an alternative on its own line
  # a comment between alternatives
  | -dash9
rule-1 ::= "a"
  "b"
rule_2.x ::= [0-9]
-dash9 ::= "-" "9"
''',
     ["ab1", "ab", "alt", "-9", "a b1", "ab12", "a", "ab9", "-", "alt9"]),
    ("digits",
     'root ::= [0-9]+',
     ["0", "12345", "", "12a", "a", "007", " 1", "1 "]),
    ("keywords",
     'root ::= "yes" | "yesterday" | "no" | "none" | "maybe" | "n/a"',
     ["yes", "yesterday", "yest", "no", "non", "none", "nones", "maybe", "n/a", "n", "", "Yes"]),
    ("sentence",
     'root ::= [a-z ]+ "."',
     ["a.", "hello world.", " .", ".", "hello", "Hello.", "a..", "a b c."]),
    ("json",
     r'''root ::= ws value ws
value ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ws ( member ( ws "," ws member )* ws )? "}"
member ::= string ws ":" ws value
array ::= "[" ws ( value ( ws "," ws value )* ws )? "]"
string ::= "\"" char* "\""
char ::= [^"\\\x00-\x1f] | "\\" ( ["\\/bfnrt] | "u" hex hex hex hex )
hex ::= [0-9a-fA-F]
number ::= "-"? ( "0" | [1-9] [0-9]* ) ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?
ws ::= [ \t\n]*''',
     ['{"a": 1}', ' [1, 2.5e-3, "x\\n\\u00e9"] ', '{"a":{"b":[true,false,null]}}', '{}', '[]',
      '"é中😀"', '-0', '01', '1.', '.5', '{"a" 1}', '{"a": 1,}', '[1 2]', '"\\x"', '"a\nb"',
      'tru', '{"a": [', '"\\u12"', '"\\u12G4"', '1e', '1E+5', b'"\xed\xa0\x80"', b'"\xff"',
      b'"\xc3', '{"k": "v"} x']),
    ("arithmetic",
     '''root ::= expr
expr ::= term (("+" | "-") term)*
term ::= factor (("*" | "/") factor)*
factor ::= number | "(" expr ")" | "-" factor
number ::= [0-9]+ ("." [0-9]+)?''',
     ["1", "1+2*3", "(1+2)*3", "--1", "1.5/-(2-3)", "1+", "1++2", "(1", "1)", "()", "1.", ".5",
      "2*(3+(4-5))/6"]),
    ("csv",
     r'''root ::= row ("\n" row)* "\n"?
row ::= field ("," field)*
field ::= [^,"\n]* | "\"" ([^"] | "\"\"")* "\""''',
     ["a,b,c", "a,b\n1,2\n", "", "\"x,y\",z", "\"a\"\"b\"", "\"a\"b\"", "\"unterminated",
      "a,\"b\nc\",d", ",,", "\n\n", "a\"b"]),
    ("reasoning",
     'root ::= "<think>" [^<]* "</think>" [a-z]+',
     ["<think>hmm</think>ok", "<think></think>a", "<think>a<b</think>ok", "<think>x</think>",
      "<think>x</think>OK", "<think>", "<think>é\n中</think>z", "<thin>x</think>a",
      "<think>x</thinkk>a", "<think>x</think>ok<"]),
    ("unproductive_rules",
     '''root ::= "a" b? | c "z"
b ::= b "x"
c ::= c
unused ::= unused "y"''',
     ["a", "ax", "z", "", "axx", "b"]),
    ("empty_class_and_zero_repeat",
     'root ::= "a" []? "b"{0} ("c" | []) | [] "d"',
     ["ac", "a", "abc", "ab", "d", "c", ""]),
]

# (name, ebnf): grammars xgrammar refuses at construction.
REFUSED = [
    ("undefined_rule", 'root ::= "a" b'),
    ("duplicate_rule", 'root ::= "a"\nroot ::= "b"'),
    ("no_root", 'a ::= "x"'),
    ("root_wrong_case", 'ROOT ::= "a"'),
    ("unterminated_string", 'root ::= "abc'),
    ("newline_in_literal", 'root ::= "a\nb"'),
    ("bad_escape", r'root ::= "\q"'),
    ("bad_hex_escape", r'root ::= "\xzz"'),
    ("short_unicode_escape", r'root ::= "\u12"'),
    ("escaped_dot_in_literal", r'root ::= "\."'),
    ("single_quotes", "root ::= 'a'"),
    ("repeat_no_lower", 'root ::= "a"{,4}'),
    ("repeat_negative", 'root ::= "a"{-1}'),
    ("repeat_reversed", 'root ::= "a"{3,2}'),
    ("double_quantifier", 'root ::= "a"++'),
    ("star_question", 'root ::= "a"*?'),
    ("repeat_twice", 'root ::= "a"{2}{3}'),
    ("class_escape_d", r'root ::= [\d]'),
    ("class_escape_w", r'root ::= [\w]'),
    ("reversed_range", 'root ::= [z-a]'),
    ("unterminated_class", 'root ::= [abc'),
    ("newline_in_class", 'root ::= [a\nb]'),
    ("bare_close_bracket_in_class", 'root ::= []]'),
    ("unknown_macro", 'root ::= Foo("a")'),
    ("unclosed_paren", 'root ::= ("a"'),
    ("unopened_paren", 'root ::= "a")'),
    ("empty_file", ''),
    ("missing_assign", 'root "a"'),
    ("empty_body", 'root ::= x\nx ::= '),
    ("leading_pipe", 'root ::= | "a"'),
    ("trailing_pipe", 'root ::= "a" |'),
    ("empty_alternative_in_group", 'root ::= ("a" | )'),
    ("two_rules_one_line", 'root ::= "a" b ::= "c"'),
    ("rule_name_starts_with_digit", 'root ::= 9a\n9a ::= "x"'),
    ("dot_wildcard", 'root ::= .'),
    ("rule_named_true", 'root ::= true\ntrue ::= "x"'),
    ("backslash_continuation", 'root ::= "a" \\\n "b"'),
    ("huge_repeat_bound", 'root ::= "a"{99999999999999999}'),
]

# Mask grammars (by name in GRAMMARS) and the prefixes after which the mask is taken.
MASKS = [
    ("literal", 'root ::= "Hello, world! " ("The answer is " | "It is ") ("yes" | "no") "."',
     [b"", b"Hel", b"Hello, world! ", b"Hello, world! It is n", b"Hello, world! It is no"]),
    ("sentence", None, [b"", b"hello", b"hello world ", b"a"]),
    ("keywords", None, [b"", b"n", b"no", b"yes"]),
    ("json", None, [b"", b'{"a', b'{"key": [1, ', b'{"k": "\xc3', b'[1', b'{"a": 1}']),
    ("unicode_classes", None, [b"", b"\xe4\xb8", b"\xe4\xb8\xad", b"\xe4\xb8\xad,\xc3"]),
    ("reasoning", None,
     [b"", b"<thi", b"<think>let me", b"<think>ok</think>", b"<think>ok</think>ab"]),
    ("digits", None, [b"", b"12"]),
    ("special_text", 'root ::= "<" [a-z/|_]+ ">" | [a-z]+', [b"", b"<", b"<|"]),
]
MASK_TOKENIZERS = ["gpt2", "llama2", "llama3", "gemma"]


# --- a small reader of the grammars above (the subset they use) and a random derivation ---

ESCAPES = {"n": 10, "t": 9, "r": 13, '"': 34, "\\": 92, "'": 39, "/": 47, "a": 7, "b": 8,
           "f": 12, "v": 11, "0": 0, "e": 27}
CLASS_ESCAPES = "^$\\.*+?()[]{}|/-"
HEX = "0123456789abcdefABCDEF"
NAME_CHARS = "_-.abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def read_char(src, i, in_class):
    """(codepoint, next index) of the character or escape at src[i]."""
    if src[i] != "\\":
        return ord(src[i]), i + 1
    c = src[i + 1]
    if in_class and c in CLASS_ESCAPES:
        return ord(c), i + 2
    if c in ESCAPES:
        return ESCAPES[c], i + 2
    if c == "x":
        j = i + 2
        while j < len(src) and src[j] in HEX:
            j += 1
        return int(src[i + 2:j], 16), j
    width = {"u": 4, "U": 8}[c]
    return int(src[i + 2:i + 2 + width], 16), i + 2 + width


def tokenize(src):
    tokens = []
    i = 0
    while i < len(src):
        c = src[i]
        if c in " \t\r\n":
            i += 1
        elif c == "#":
            while i < len(src) and src[i] != "\n":
                i += 1
        elif src.startswith("::=", i):
            tokens.append(("assign",))
            i += 3
        elif c == '"':
            i += 1
            cps = []
            while src[i] != '"':
                cp, i = read_char(src, i, False)
                cps.append(cp)
            tokens.append(("lit", "".join(map(chr, cps)).encode("utf-8", "surrogatepass")))
            i += 1
        elif c == "[":
            i += 1
            negated = src[i] == "^"
            i += negated
            items = []
            while src[i] != "]":
                if src[i] == "-":
                    items.append("-")
                    i += 1
                else:
                    cp, i = read_char(src, i, True)
                    items.append(cp)
            i += 1
            ranges = []
            k = 0
            while k < len(items):
                lo = ord("-") if items[k] == "-" else items[k]
                if k + 2 < len(items) and items[k + 1] == "-":
                    hi = ord("-") if items[k + 2] == "-" else items[k + 2]
                    ranges.append((lo, hi))
                    k += 3
                else:
                    ranges.append((lo, lo))
                    k += 1
            tokens.append(("cls", tuple(ranges), negated))
        elif c == "{":
            j = src.index("}", i)
            parts = src[i + 1:j].split(",")
            lo = int(parts[0])
            hi = lo if len(parts) == 1 else (int(parts[1]) if parts[1].strip() else None)
            tokens.append(("range", lo, hi))
            i = j + 1
        elif c in "()|*+?":
            tokens.append((c,))
            i += 1
        else:
            j = i
            while j < len(src) and src[j] in NAME_CHARS:
                j += 1
            assert j > i, (src, i)
            tokens.append(("id", src[i:j]))
            i = j
    return tokens


def parse_grammar(src):
    """{rule name: expression}; expressions are tuples: ("lit", bytes), ("cls", ranges, negated),
    ("ref", name), ("seq", [..]), ("alt", [..]), ("rep", expr, lo, hi or None)."""
    tokens = tokenize(src)
    pos = [0]

    def peek():
        return tokens[pos[0]][0] if pos[0] < len(tokens) else None

    def rule_starts():
        p = pos[0]
        return p + 1 < len(tokens) and tokens[p][0] == "id" and tokens[p + 1][0] == "assign"

    def element():
        tok = tokens[pos[0]]
        pos[0] += 1
        if tok[0] == "(":
            if peek() == ")":
                pos[0] += 1
                return ("seq", [])
            expr = choices()
            assert peek() == ")"
            pos[0] += 1
            return expr
        if tok[0] == "lit":
            return tok
        if tok[0] == "cls":
            return tok
        assert tok[0] == "id", tok
        return ("ref", tok[1])

    def quantified():
        expr = element()
        kind = peek()
        if kind in ("*", "+", "?"):
            pos[0] += 1
            return ("rep", expr, 1 if kind == "+" else 0, 1 if kind == "?" else None)
        if kind == "range":
            _, lo, hi = tokens[pos[0]]
            pos[0] += 1
            return ("rep", expr, lo, hi)
        return expr

    def sequence():
        items = []
        while peek() not in (None, "|", ")") and not rule_starts():
            items.append(quantified())
        return ("seq", items)

    def choices():
        alts = [sequence()]
        while peek() == "|":
            pos[0] += 1
            alts.append(sequence())
        return ("alt", alts)

    rules = {}
    while pos[0] < len(tokens):
        assert rule_starts(), tokens[pos[0]:pos[0] + 3]
        name = tokens[pos[0]][1]
        pos[0] += 2
        rules[name] = choices()
    return rules


INF = float("inf")

# Characters a negated class may draw from.
POOL = ([chr(c) for c in range(0x20, 0x7f)] + ["\t", "\n", "é", "ß", "€", "中", "文", "😀",
                                                 "\u07ff", "\u0800", "\U0010ffff"])


def height(expr, heights):
    """Least derivation depth of `expr` (INF: derives nothing)."""
    kind = expr[0]
    if kind == "lit":
        return 0
    if kind == "cls":
        return 0 if expr[1] or expr[2] else INF
    if kind == "ref":
        return 1 + heights[expr[1]]
    if kind == "seq":
        return max([height(e, heights) for e in expr[1]], default=0)
    if kind == "alt":
        return min(height(e, heights) for e in expr[1])
    return 0 if expr[2] == 0 else height(expr[1], heights)


def rule_heights(rules):
    heights = {name: INF for name in rules}
    changed = True
    while changed:
        changed = False
        for name, body in rules.items():
            h = height(body, heights)
            if h < heights[name]:
                heights[name] = h
                changed = True
    return heights


def class_char(rng, ranges, negated):
    def inside(cp):
        return any(lo <= cp <= hi for lo, hi in ranges)

    if negated:
        return rng.choice([c for c in POOL if not inside(ord(c))])
    lo, hi = rng.choice(ranges)
    cp = rng.choice([lo, hi, rng.randint(lo, hi)])
    if 0xD800 <= cp <= 0xDFFF:
        cp = lo
    return chr(cp)


def derive(rng, rules, heights, expr, budget):
    kind = expr[0]
    if kind == "lit":
        return expr[1]
    if kind == "cls":
        return class_char(rng, expr[1], expr[2]).encode("utf-8")
    if kind == "ref":
        return derive(rng, rules, heights, rules[expr[1]], budget - 1)
    if kind == "seq":
        return b"".join(derive(rng, rules, heights, e, budget) for e in expr[1])
    if kind == "alt":
        options = [e for e in expr[1] if height(e, heights) < INF]
        if budget <= 0:
            least = min(height(e, heights) for e in options)
            options = [e for e in options if height(e, heights) == least]
        return derive(rng, rules, heights, rng.choice(options), budget)
    _, sub, lo, hi = expr
    if height(sub, heights) == INF:
        count = 0
    elif budget <= 0:
        count = lo
    else:
        top = lo + 3 if hi is None else min(hi, lo + 3)
        count = rng.randint(lo, top)
    return b"".join(derive(rng, rules, heights, sub, budget - 1) for _ in range(count))


def random_sentences(rng, ebnf, count):
    rules = parse_grammar(ebnf)
    heights = rule_heights(rules)
    if heights["root"] == INF:
        return []
    out = []
    for _ in range(count * 6):
        sentence = derive(rng, rules, heights, rules["root"], rng.randint(2, 9))
        if len(sentence) <= 60 and sentence not in out:
            out.append(sentence)
        if len(out) == count:
            break
    return out


# --- labelling with xgrammar ---

EMPTY_COMPILER = xgr.GrammarCompiler(xgr.TokenizerInfo([]), cache_enabled=False)


def label(compiled, ebnf, data):
    """(complete, viable) of `data` under the compiled grammar."""
    matcher = xgr.GrammarMatcher(compiled)
    viable = 0
    while viable < len(data) and matcher.accept_string(data[viable:viable + 1]):
        viable += 1
    # Cross-checks: a fresh matcher takes the viable prefix whole and refuses one byte more.
    fresh = xgr.GrammarMatcher(compiled)
    assert fresh.accept_string(data[:viable]), data
    if viable < len(data):
        assert not xgr.GrammarMatcher(compiled).accept_string(data[:viable + 1]), data
    whole = xgr.GrammarMatcher(compiled)
    complete = whole.accept_string(data) and whole.is_completed()
    assert complete == (viable == len(data) and matcher.is_completed()), data
    assert complete == xgr_testing._is_grammar_accept_string(ebnf, data), data
    return complete, viable


def text_fields(key, data):
    try:
        return {key: data.decode("utf-8")}
    except UnicodeDecodeError:
        return {}


def build_grammars(rng):
    grammars = []
    for name, ebnf, hand in GRAMMARS:
        compiled = EMPTY_COMPILER.compile_grammar(ebnf)
        inputs = {}
        for text in hand:
            inputs[text if isinstance(text, bytes) else text.encode("utf-8")] = None
        sentences = random_sentences(rng, ebnf, 8)
        for s in sentences:
            inputs[s] = None
        units = {}
        for s in list(inputs):
            try:
                for ch in s.decode("utf-8"):
                    units[ch.encode("utf-8")] = None
            except UnicodeDecodeError:
                pass
        units = list(units) + [b" ", "é".encode(), b"\x80", b"\xc3", b"\xff"]
        seeds = sentences or [k for k in inputs if k]
        for _ in range(4):
            s = rng.choice(seeds)
            if len(s) > 1:
                inputs[s[:rng.randint(1, len(s) - 1)]] = None
        attempts = 0
        while len(inputs) < MAX_CASES and attempts < 200:
            attempts += 1
            data = rng.choice(seeds)
            for _ in range(rng.randint(1, 2)):
                data = text_mutation.mutate(rng, data, units)
            inputs[data] = None
        cases = []
        for data in list(inputs)[:MAX_CASES]:
            complete, viable = label(compiled, ebnf, data)
            cases.append({"hex": data.hex(), **text_fields("text", data), "complete": complete,
                          "viable": viable})
        grammars.append({"name": name, "ebnf": ebnf, "cases": cases})
        print(f"grammar {name}: {len(cases)} cases, {sum(c['complete'] for c in cases)} complete")
    return grammars


def clean_error(message):
    return re.sub(r"^\[[0-9:]+\] \S+:\d+: ", "", str(message)).strip()


def build_refused():
    refused = []
    for name, ebnf in REFUSED:
        try:
            xgr.Grammar.from_ebnf(ebnf)
        except RuntimeError as e:
            refused.append({"name": name, "ebnf": ebnf, "error": clean_error(e)})
            continue
        raise AssertionError(f"xgrammar accepts {name}: {ebnf!r}")
    print(f"refused: {len(refused)}")
    return refused


def hf_special_ids(tok):
    ids = {i: None for i in tok.all_special_ids}
    for i, added in sorted(tok.added_tokens_decoder.items()):
        if added.special:
            ids[i] = None
    return sorted(ids)


def build_masks():
    ebnf_by_name = {name: ebnf for name, ebnf, _ in GRAMMARS}
    tokenizers = {}
    masks = []
    for tok_name in MASK_TOKENIZERS:
        tok = transformers.AutoTokenizer.from_pretrained(os.path.join(TOKENIZERS, tok_name))
        info = xgr.TokenizerInfo.from_huggingface(tok, vocab_size=len(tok))
        stop = sorted(info.stop_token_ids)
        special = sorted(info.special_token_ids)
        hf_special = hf_special_ids(tok)
        tokenizers[tok_name] = {"vocab_size": info.vocab_size, "vocab_type": info.vocab_type.name,
                                "add_prefix_space": info.add_prefix_space,
                                "stop_token_ids": stop, "special_token_ids": special,
                                "hf_special_token_ids": hf_special}
        excluded = {i: None for i in stop + special + hf_special}
        compiler = xgr.GrammarCompiler(info, cache_enabled=False)
        for name, ebnf, prefixes in MASKS:
            ebnf = ebnf or ebnf_by_name[name]
            compiled = compiler.compile_grammar(ebnf)
            for prefix in prefixes:
                matcher = xgr.GrammarMatcher(compiled)
                assert matcher.accept_string(prefix), (name, prefix)
                bitmask = xgr.allocate_token_bitmask(1, info.vocab_size)
                matcher.fill_next_token_bitmask(bitmask)
                rejected = xgr_testing._get_masked_tokens_from_bitmask(bitmask, info.vocab_size)
                rejected = {i: None for i in rejected}
                allowed = [i for i in range(info.vocab_size) if i not in rejected]
                can_end = any(i not in rejected for i in stop)
                assert can_end == matcher.is_completed(), (tok_name, name, prefix)
                masks.append({"tokenizer": tok_name, "name": name, "ebnf": ebnf,
                              "prefix_hex": prefix.hex(), **text_fields("prefix_text", prefix),
                              "allowed": [i for i in allowed if i not in excluded],
                              "allowed_special": [i for i in allowed
                                                  if i in excluded and i not in stop],
                              "can_end": can_end})
        print(f"masks {tok_name}: vocab {info.vocab_size}, stop {stop}, special {special}")
    return tokenizers, masks


def compact_int_lists(text):
    """json.dumps(indent=1) puts every list item on its own line; keep integer lists on one."""
    return re.sub(r"\[\n\s*(-?\d+(?:,\n\s*-?\d+)*)\n\s*\]",
                  lambda m: "[" + re.sub(r",\n\s*", ", ", m.group(1)) + "]", text)


def main():
    rng = random.Random(20261126)
    grammars = build_grammars(rng)
    refused = build_refused()
    tokenizers, masks = build_masks()
    print(f"masks: {len(masks)}")
    doc = {"generator": "scripts/gen_grammar_fixtures.py", "xgrammar": version("xgrammar"),
           "grammars": grammars, "refused": refused, "tokenizers": tokenizers, "masks": masks}
    with open(OUT, "w", encoding="utf-8") as f:
        f.write(compact_int_lists(json.dumps(doc, ensure_ascii=False, indent=1)))
        f.write("\n")


if __name__ == "__main__":
    main()
