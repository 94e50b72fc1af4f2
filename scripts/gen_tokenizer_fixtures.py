#!/usr/bin/env python3
"""Builds the tokenizer parity fixtures with Hugging Face `tokenizers`.

Writes tests/router/tokenizer/fixtures/<name>/{tokenizer.json, tokenizer_config.json,
expected.jsonl, decode.jsonl} for seven small tokenizers that mirror the families real checkpoints
ship:

  gpt2      byte-level BPE, ByteLevel pre-tokenizer with GPT-2's regex (incl. `\\s+(?!\\S)`)
  llama3    byte-level BPE, Split(Llama-3 regex) + ByteLevel, ignore_merges, BOS template
  qwen2     byte-level BPE, NFC normalizer, Split(Qwen2 regex) + ByteLevel
  llama2    SentencePiece-style BPE: Prepend/Replace normalizer, byte_fallback, Replace/ByteFallback/
            Fuse/Strip decoder, BOS template (the legacy Llama-2 / Mistral v0.1 layout)
  mistral   the same model with a Metaspace(prepend_scheme=first) pre-tokenizer and a Metaspace
            decoder (the layout newer conversions use)
  phi4      byte-level BPE, Split(o200k regex: tiktoken's o200k_base pattern, with case-split
            words, `(?i:'s|...)` suffixes and `[\\r\\n/]*`) + ByteLevel, as GPT-4o's and
            microsoft/Phi-4-mini-instruct's tokenizer.json; Phi-4-mini's specials and chat template
  gemma     the same model in Gemma's layout: a Replace(" " -> "▁") normalizer with no
            prefix, a Split(" ", MergedWithPrevious) pre-tokenizer (a no-op after the normalizer,
            as in Gemma's files), a Replace/ByteFallback/Fuse decoder with no Strip, and the
            <start_of_turn>/<end_of_turn> specials with Gemma's chat template

expected.jsonl: one JSON object per corpus string (the hand-written corpus, whitespace runs and
seeded random mixes of character classes): text, ids (add_special_tokens=True), ids_plain
(add_special_tokens=False), decoded (decode(ids), skip_special_tokens=True) and decoded_special
(skip_special_tokens=False). decode.jsonl: seeded random id sequences (biased towards byte tokens
and special tokens) with what `tokenizers` decodes them to.

Usage: build/venv/bin/pip install -r scripts/requirements-fixtures.txt
       build/venv/bin/python scripts/gen_tokenizer_fixtures.py
The output is deterministic for a given `tokenizers` version; the fixtures are committed so the
C++ tests never need Python.
"""
import collections
import json
import os
import random
import sys

from tokenizers import (AddedToken, Regex, Tokenizer, __version__, decoders, models,
                        normalizers, pre_tokenizers, processors, trainers)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "router", "tokenizer", "fixtures")

GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
LLAMA3_PATTERN = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"""
                  r""" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""")
QWEN2_PATTERN = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"""
                 r""" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""")
# tiktoken's o200k_base pattern (GPT-4o; Phi-4-mini's tokenizer.json splits with it).
O200K_PATTERN = "|".join([
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""\p{N}{1,3}""",
    r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
    r"""\s*[\r\n]+""",
    r"""\s+(?!\S)""",
    r"""\s+""",
])

# microsoft/Phi-4-mini-instruct's chat template (tokenizer_config.json; the same text as in
# scripts/gen_jinja_fixtures.py).
PHI4_MINI_CHAT_TEMPLATE = (
    "{% for message in messages %}{% if message['role'] == 'system' and 'tools' in message and "
    "message['tools'] is not none %}{{ '<|' + message['role'] + '|>' + message['content'] + "
    "'<|tool|>' + message['tools'] + '<|/tool|>' + '<|end|>' }}{% else %}{{ '<|' + message['role'] "
    "+ '|>' + message['content'] + '<|end|>' }}{% endif %}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|assistant|>' }}{% else %}{{ eos_token }}{% endif %}"
)

# Training text, composed for this repository (no third-party text).
TRAINING_PARAGRAPHS = [
    "The lighthouse keeper climbed the stairs every evening at six. He counted the steps, "
    "one hundred and twelve of them, and wrote the number in a small brown notebook that "
    "he kept in the pocket of his coat.",
    "When the storm arrived, the harbour emptied quickly. Fishing boats turned for home, "
    "their lamps swinging, and the gulls gathered on the roofs of the warehouses to wait.",
    "She said that the garden would be finished by the spring, but nobody believed her. "
    "There were stones to move, a wall to rebuild, and a pond that had not held water for "
    "twenty years.",
    "In the morning the market opened before the sun was fully up. Bakers carried trays of "
    "bread, farmers set out baskets of apples and pears, and a man with a cart sold hot tea "
    "to anyone who looked cold.",
    "It's not that I don't like the city; it's that I've never learned how to be quiet in it. "
    "You'll understand when you've lived there a while, and they'd tell you the same.",
    "The committee met on Tuesday to discuss the new schedule. After three hours of debate, "
    "they agreed to move the weekly meeting to Thursday afternoon and to publish the notes "
    "online within two days.",
    "Our train left the station at 7:45 and arrived 3 hours and 20 minutes later, which was "
    "15 minutes behind the timetable. The ticket cost 42.50 and the coffee cost 3.75.",
    "Reading a map is a skill that takes practice. Rivers, roads and railways are drawn in "
    "different colours, and the contour lines tell you how steep the ground will be.",
    "The server answered every request within a few milliseconds, until the cache filled up "
    "and the memory planner began to reject new sequences with a clear error message.",
    "Tokens are the units that a language model reads and writes. A tokenizer splits text "
    "into pieces, maps each piece to an integer, and maps integers back to text again.",
]

CODE_SNIPPETS = [
    "def fibonacci(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n",
    "int main(int argc, char** argv) {\n  std::vector<int> xs = {1, 2, 3};\n  for (int x : xs) {\n"
    "    printf(\"%d\\n\", x);\n  }\n  return 0;\n}\n",
    "SELECT name, COUNT(*) AS n FROM users WHERE age >= 18 GROUP BY name ORDER BY n DESC;",
    "const total = items.reduce((sum, item) => sum + item.price * item.qty, 0);\n",
    "if [[ -z \"$HOME\" ]]; then\n\techo 'no home' >&2\n\texit 1\nfi\n",
    "{\"model\": \"tiny\", \"prompt\": \"Hello\", \"max_tokens\": 16, \"temperature\": 0.7}",
]

MULTILINGUAL = [
    "今天的天气很好，我们去公园散步吧。",
    "東京は日本の首都です。カタカナとひらがなも使います。",
    "안녕하세요. 만나서 반갑습니다.",
    "مرحبا بكم في المدينة. الكتاب على الطاولة.",
    "Привет, как дела? Сегодня хорошая погода.",
    "Η γλώσσα είναι όμορφη και παλιά.",
    "नमस्ते, आप कैसे हैं?",
    "Ça va très bien, merci. Où est la gare? Voilà!",
    "Größe, Straße, Übung, Ärger und Öl.",
]

# The parity corpus: every string here is encoded by `tokenizers` and by headroom.
CORPUS = [
    "",
    " ",
    "Hello",
    "Hello world",
    " Hello world",
    "Hello, world! How are you today?",
    "The quick brown fox jumps over the lazy dog.",
    "I'm sure you'll see they've said it's what we'd do. I'M SURE YOU'LL SEE IT'S DONE.",
    "Don't stop; it'S fine, THEY'RE here and we'Ve won.",
    "email: someone@example.com, url: https://example.com/path?q=1&x=2#frag",
    "Numbers: 1 12 123 1234 12345 1234567890 3.14159 -42 +7 1e10 0x1F",
    "Prices 1,000,000 and 2024-11-22 at 23:59:59.",
    "١٢٣ ٤٥٦ Arabic-Indic digits and ५६७ Devanagari digits and Ⅻ roman numeral",
    "def f(x):\n    return x * 2\n",
    "for (int i = 0; i < n; ++i) { sum += a[i]; }",
    "    indented four spaces",
    "\tTabbed\tline\t",
    "trailing spaces   ",
    "a  b   c    d     e",
    "line one\nline two\n\nline four\n\n\n",
    "windows\r\nline\r\n",
    " \n \n  \n",
    "   ",
    "\n",
    "\n\n\n",
    "x\u3000y\u3000\u3000z ideographic spaces",
    "no\u00a0break\u00a0\u00a0spaces",
    "vertical\u000btab and form\u000cfeed",
    "next\u0085line and line\u2028separator and para\u2029sep",
    "thin\u2009space and en\u2002space and narrow\u202fnbsp",
    "ogham\u1680space",
    "今天的天气很好，我们去公园散步吧。",
    "日本語のテキストとカタカナ、そして漢字。",
    "한국어 문장입니다.",
    "مرحبا بالعالم، هذا نص عربي.",
    "שלום עולם",
    "Привет мир",
    "Emoji: 😀 😃 😄 😁 🎉 🚀",
    "Family: 👨‍👩‍👧‍👦 and 🏳️‍🌈 and 👩🏽‍💻",
    "Flags: 🇺🇸🇫🇷🇯🇵",
    "Keycaps: 1️⃣ #️⃣",
    "Combining: e\u0301 a\u0300 n\u0303 o\u0308 (decomposed) vs é à ñ ö (composed)",
    "Stacked marks: Z\u0351\u0352\u0353a\u0354\u0355l\u0356\u0357g\u0358\u0359o",
    "Hangul jamo: \u1100\u1161\u11a8 vs 각",
    "Angstrom \u212b and Ohm \u2126 and Kelvin \u212a",
    "ﬁ ligature and ｆｕｌｌｗｉｄｔｈ text",
    "Mathematical: ∀x ∈ ℝ, ∃y: x² + y² ≤ 1 → √2 ≈ 1.414",
    "Replacement char \ufffd and BOM \ufeff and noncharacter \uffff",
    "Looks like bad bytes: Ã© Ã¨ Ã¢â‚¬â„¢ Ã\u0083Â© (mojibake, valid UTF-8)",
    "Latin-1 look: \u00c0\u00af \u00e2\u0080\u0099 \u00ed\u00a0\u0080",
    "Private use: \ue000\uf8ff and supplementary private \U000F0000",
    "NUL \x00 and controls \x01\x02\x1b[31m red \x1b[0m and DEL \x7f",
    "Zero width: a\u200bb\u200cc\u200dd\u2060e",
    "Bidi: abc \u202eevil\u202c def \u200fRTL mark",
    "Surrogates are not representable in UTF-8; U+D800..U+DFFF never reach the tokenizer.",
    "Max code point: \U0010FFFD and U+10000: \U00010000",
    "Mixed: Hello世界مرحبا🌍123abc",
    "'s 't 're 've 'm 'll 'd ’s",
    "Punctuation!!! ??? ... --- *** ### @@@ $$$ %%% ^^^ &&& ((( ))) ___ +++ === ~~~",
    "\"Quoted\" 'single' `backtick` «guillemets» „German“ 「Japanese」",
    "CamelCaseIdentifier snake_case_identifier kebab-case-identifier SCREAMING_CASE",
    "https://example.org/a/b/c?d=e&f=g",
    "<html><body><p class=\"x\">Hi</p></body></html>",
    "path/to/file.txt C:\\Windows\\System32",
    "The year 2025 has 365 days and 8760 hours.",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "ab" * 40,
    "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!",
    "              many spaces before",
    "ends with newline after spaces   \n",
    "spaces then tab  \t x",
    "\u00a0leading nbsp",
    "trailing nbsp\u00a0",
    "   \t\n  mixed leading whitespace",
    "x \u3000 y",
]

# Special tokens in the middle of text, per fixture (each fixture has its own specials).
SPECIAL_TEXTS = {
    "gpt2": ["Hello<|endoftext|>world", "end <|endoftext|> start", "<|endoftext|>",
             "a<|endoftext|><|endoftext|>b", "<|endoftext", "Fill <mask> in", "Fill<mask>in",
             "x   <mask>   y", "say hello_world now", "say hello_worldly"],
    "llama3": ["<|begin_of_text|>Hello", "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>",
               "text<|eot_id|>  more", "<|reserved_special_token_0|>x", "<|eot_id", "<|eot_id|>"],
    "qwen2": ["<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi<|im_end|>",
              "a<|endoftext|>b", "<|im_end|>", "foo bar foobar foo. xfoo foo_", "foo"],
    "llama2": ["Hi <s> there", "<s>Hello</s>", "a</s>b", "<unk>", "x <s>", "I said wow!", "wowza",
               "[INST] question [/INST] answer", "<0x41> is not a byte token in text"],
    "mistral": ["[INST] Hello [/INST] Hi", "<s>[INST]x[/INST]", "a </s> b", "[INST]", "</s>"],
    "phi4": ["<|system|>You are helpful.<|end|><|user|>Hi<|end|><|assistant|>", "<|end|>",
             "a<|endoftext|>b", "HTTPServer's URLs/paths/ and CamelCaseWords WE'LL", "x/\n/y",
             "ÉCOLE d'été ǅungla ÀÉ", "<|tool|>[]<|/tool|>", "<|end"],
    "gemma": ["<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n", " leading space",
              "trailing space ", "  two leading", "<end_of_turn>", "a<start_of_turn>b"],
}

# Gemma's chat template (google/gemma-2-2b-it's tokenizer_config.json).
GEMMA_CHAT_TEMPLATE = (
    "{{ bos_token }}{% if messages[0]['role'] == 'system' %}"
    "{{ raise_exception('System role not supported') }}{% endif %}"
    "{% for message in messages %}"
    "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}"
    "{% endif %}{% if (message['role'] == 'assistant') %}{% set role = 'model' %}"
    "{% else %}{% set role = message['role'] %}{% endif %}"
    "{{ '<start_of_turn>' + role + '\n' + message['content'] | trim + '<end_of_turn>\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\n'}}{% endif %}")


def whitespace_runs():
    """Whitespace runs around words: exercises GPT-2's `\\s+(?!\\S)` lookahead."""
    pieces = [" ", "  ", "   ", "\t", "\n", " \n", "\n ", "  \n  ", "\u3000", "\u00a0 ", " \u00a0",
              "\u000b", "\r\n", " \t "]
    out = []
    for p in pieces:
        out.append("a" + p + "b")
        out.append(p + "a")
        out.append("a" + p)
        out.append("1" + p + "2")
        out.append("." + p + ".")
        out.append("x" + p + p + "y")
    return out


def random_strings(rng, count=60):
    """Seeded random mixes of the character classes the split regexes care about."""
    pools = [
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", "0123456789", " ", "  ", "\t", "\n",
        "\r\n", "'", "'s", "'LL", ".,;:!?-_()[]{}<>/\\|@#$%^&*+=~`\"", "\u00e9\u00fc\u00df\u00f1",
        "\u4f60\u597d\u4e16\u754c\u3002", "\u3042\u30a2\u6f22", "\u0645\u0631\u062d\u0628\u0627",
        "\u0301\u0308\u0327", "\U0001F600\U0001F680\u2764\ufe0f", "\u200d", "\u3000\u00a0\u2009",
        "\u0661\u0662\u0663\u2167", "\u000b\u000c\u0085", "\ufffd\ufeff",
    ]
    out = []
    for _ in range(count):
        parts = []
        for _ in range(rng.randint(1, 12)):
            pool = rng.choice(pools)
            parts.append("".join(rng.choice(pool) for _ in range(rng.randint(1, 5))))
        out.append("".join(parts))
    return out


def training_iterator():
    lines = TRAINING_PARAGRAPHS * 6 + CODE_SNIPPETS * 4 + MULTILINGUAL * 3 + CORPUS
    return lines


def byte_level_tokenizer(name):
    tok = Tokenizer(models.BPE(ignore_merges=(name == "llama3")))
    if name == "gpt2":
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
        specials = ["<|endoftext|>"]
    elif name == "llama3":
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False)])
        specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
                    "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]
    elif name == "phi4":
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(O200K_PATTERN), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False)])
        specials = ["<|endoftext|>", "<|system|>", "<|end|>", "<|user|>", "<|assistant|>",
                    "<|tool|>", "<|/tool|>", "<|tool_call|>", "<|/tool_call|>"]
    else:
        tok.normalizer = normalizers.NFC()
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(QWEN2_PATTERN), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)])
        specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=256 + len(specials) + 1000, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(training_iterator(), trainer)
    if name == "gpt2":
        tok.post_processor = processors.ByteLevel(trim_offsets=True)
        tok.add_special_tokens([AddedToken("<mask>", lstrip=True, rstrip=False, normalized=False,
                                           special=True)])
        tok.add_tokens([AddedToken("hello_world", normalized=True)])
        config = {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>",
                  "unk_token": "<|endoftext|>", "add_bos_token": False,
                  "model_max_length": 1024, "tokenizer_class": "GPT2Tokenizer"}
    elif name == "llama3":
        bos = tok.token_to_id("<|begin_of_text|>")
        tok.post_processor = processors.Sequence([
            processors.ByteLevel(trim_offsets=False),
            processors.TemplateProcessing(
                single="<|begin_of_text|> $A",
                pair="<|begin_of_text|> $A:0 <|begin_of_text|>:1 $B:1",
                special_tokens=[("<|begin_of_text|>", bos)])])
        config = {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>",
                  "model_max_length": 131072, "tokenizer_class": "PreTrainedTokenizerFast",
                  "chat_template": (
                      "{{ bos_token }}{% for message in messages %}"
                      "{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' }}"
                      "{{ message['content'] | trim }}{{ '<|eot_id|>' }}{% endfor %}"
                      "{% if add_generation_prompt %}"
                      "{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}")}
    elif name == "phi4":
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
        config = {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>",
                  "pad_token": "<|endoftext|>", "unk_token": "<|endoftext|>",
                  "add_bos_token": False, "add_eos_token": False, "model_max_length": 131072,
                  "tokenizer_class": "GPT2Tokenizer", "chat_template": PHI4_MINI_CHAT_TEMPLATE}
    else:
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
        tok.add_tokens([AddedToken("foo", single_word=True, normalized=False)])
        config = {"bos_token": None, "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>",
                  "add_prefix_space": False, "model_max_length": 32768,
                  "tokenizer_class": "Qwen2Tokenizer",
                  "chat_template": (
                      "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' "
                      "+ message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}"
                      "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")}
    return tok, config


def sentencepiece_tokenizer(name):
    specials = ["<unk>", "<s>", "</s>"]
    byte_tokens = [f"<0x{i:02X}>" for i in range(256)]
    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always",
                                                 split=True)
    # The byte tokens go in as trainer specials so they get ids 3..258 as in Llama-2; they are
    # taken out of added_tokens below (in Llama-2 they are plain vocabulary entries).
    # The 180 most frequent characters form the alphabet (ties broken by code point, so the
    # output is deterministic); the rest are left to byte fallback.
    counts = collections.Counter()
    for line in training_iterator():
        counts.update("\u2581" + line.replace(" ", "\u2581"))
    alphabet = [c for c, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:180]]
    trainer = trainers.BpeTrainer(vocab_size=len(specials) + 256 + 1250,
                                  special_tokens=specials + byte_tokens, initial_alphabet=alphabet,
                                  limit_alphabet=len(alphabet), show_progress=False)
    tok.train_from_iterator(training_iterator(), trainer)
    spec = json.loads(tok.to_str())
    spec["added_tokens"] = [t for t in spec["added_tokens"] if t["content"] in specials]
    bos_id = spec["model"]["vocab"]["<s>"]
    spec["post_processor"] = {
        "type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                   {"Sequence": {"id": "A", "type_id": 0}}],
        "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                 {"Sequence": {"id": "A", "type_id": 0}},
                 {"SpecialToken": {"id": "<s>", "type_id": 1}},
                 {"Sequence": {"id": "B", "type_id": 1}}],
        "special_tokens": {"<s>": {"id": "<s>", "ids": [bos_id], "tokens": ["<s>"]}}}
    if name == "llama2":
        spec["normalizer"] = {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "\u2581"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]}
        spec["pre_tokenizer"] = None
        spec["decoder"] = {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
    elif name == "gemma":
        spec["normalizer"] = {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}
        spec["pre_tokenizer"] = {"type": "Split", "pattern": {"String": " "},
                                 "behavior": "MergedWithPrevious", "invert": False}
        spec["decoder"] = {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"}]}
    else:
        spec["normalizer"] = None
        spec["pre_tokenizer"] = {"type": "Metaspace", "replacement": "\u2581",
                                 "prepend_scheme": "first", "split": False}
        spec["decoder"] = {"type": "Sequence", "decoders": [
            {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first",
             "split": False},
            {"type": "ByteFallback"}, {"type": "Fuse"}]}
    tok = Tokenizer.from_str(json.dumps(spec))
    if name == "llama2":
        tok.add_tokens([AddedToken("wow", normalized=True)])
        tok.add_special_tokens([AddedToken("[INST]", normalized=False, special=True),
                                AddedToken("[/INST]", normalized=False, special=True)])
    elif name == "gemma":
        tok.add_special_tokens([AddedToken("<start_of_turn>", normalized=False, special=True),
                                AddedToken("<end_of_turn>", normalized=False, special=True)])
    else:
        tok.add_special_tokens([AddedToken("[INST]", normalized=False, special=True),
                                AddedToken("[/INST]", normalized=False, special=True)])
    config = {"add_bos_token": True, "add_eos_token": False, "bos_token": "<s>",
              "eos_token": "</s>", "unk_token": "<unk>", "legacy": name == "llama2",
              "model_max_length": 4096, "tokenizer_class": "LlamaTokenizer",
              "chat_template": (
                  "{{ bos_token }}{% for message in messages %}"
                  "{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + "
                  "' [/INST]' }}{% else %}{{ message['content'] + eos_token }}{% endif %}"
                  "{% endfor %}")}
    if name == "gemma":
        config.update({"tokenizer_class": "GemmaTokenizer", "legacy": False,
                       "chat_template": GEMMA_CHAT_TEMPLATE})
    return tok, config


def write_jsonl(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def decode_cases(tok, rng):
    vocab_size = tok.get_vocab_size(with_added_tokens=True)
    byte_ids = [tok.token_to_id(f"<0x{i:02X}>") for i in range(256)]
    byte_ids = [i for i in byte_ids if i is not None]
    if not byte_ids:  # byte-level: single-byte tokens are the 256 alphabet entries
        byte_ids = [tok.token_to_id(c) for c in sorted(pre_tokenizers.ByteLevel.alphabet())]
    cases = []
    for n in range(60):
        length = rng.randint(1, 24)
        ids = []
        for _ in range(length):
            r = rng.random()
            if r < 0.45:
                ids.append(rng.choice(byte_ids))
            elif r < 0.55:
                ids.append(rng.randrange(vocab_size - 8, vocab_size))
            else:
                ids.append(rng.randrange(vocab_size))
        cases.append({"ids": ids, "decoded": tok.decode(ids),
                      "decoded_special": tok.decode(ids, skip_special_tokens=False)})
    return cases


def main():
    rng = random.Random(20261122)
    corpus_base = (CORPUS + whitespace_runs() + MULTILINGUAL + CODE_SNIPPETS +
                   random_strings(random.Random(1122)))
    # New layouts go last: decode_cases draws from one shared rng in this order.
    for name in ["gpt2", "llama3", "qwen2", "llama2", "mistral", "gemma", "phi4"]:
        if name in ("gpt2", "llama3", "qwen2", "phi4"):
            tok, config = byte_level_tokenizer(name)
        else:
            tok, config = sentencepiece_tokenizer(name)
        d = os.path.join(OUT, name)
        os.makedirs(d, exist_ok=True)
        tok.save(os.path.join(d, "tokenizer.json"), pretty=False)
        # Re-load from disk so the expected output is what the committed file produces.
        tok = Tokenizer.from_file(os.path.join(d, "tokenizer.json"))
        with open(os.path.join(d, "tokenizer_config.json"), "w", encoding="utf-8") as f:
            json.dump(config, f, indent=2, ensure_ascii=False)
            f.write("\n")
        rows = []
        for text in corpus_base + SPECIAL_TEXTS[name]:
            enc = tok.encode(text)
            plain = tok.encode(text, add_special_tokens=False)
            rows.append({"text": text, "ids": enc.ids, "ids_plain": plain.ids,
                         "decoded": tok.decode(enc.ids),
                         "decoded_special": tok.decode(enc.ids, skip_special_tokens=False)})
        write_jsonl(os.path.join(d, "expected.jsonl"), rows)
        write_jsonl(os.path.join(d, "decode.jsonl"), decode_cases(tok, rng))
        print(f"{name}: vocab {tok.get_vocab_size()} rows {len(rows)}")
    with open(os.path.join(OUT, "VERSION"), "w", encoding="utf-8") as f:
        f.write(f"tokenizers=={__version__}\n")


if __name__ == "__main__":
    sys.exit(main())
