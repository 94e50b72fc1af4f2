#!/usr/bin/env python3
"""How many token groups RegexTokenClasses (worker/engine/regex_tokens.h) forms on a realistic
128k vocabulary, which the repository does not hold: trains a byte-level BPE of 128k entries with
Hugging Face `tokenizers` on this machine's own text (/usr/share/doc and the Python packages'
sources; no download), then counts the distinct class sequences of its tokens for the classes
json_mode_bench's free-text and e-mail patterns split characters into. A step of a guided regex
tries one token per group (plus the tokens that are byte pieces of a character).

Run with the fixtures venv (scripts/setup-deps --fixtures):
    build/venv-fixtures/bin/python bench/regex_class_groups.py [--save DIR]
--save DIR also writes DIR/tests/router/tokenizer/fixtures/llama3/tokenizer.json, so that
    HEADROOM_SOURCE_DIR=DIR build/main/bench/json_mode_bench
measures the masks on this 128k vocabulary in its "llama3" rows. Results: docs/performance.md.
"""
import argparse
import glob, os, time
from tokenizers import Tokenizer, models, trainers, pre_tokenizers, decoders
parser = argparse.ArgumentParser()
parser.add_argument('--save', help='write the trained tokenizer.json under this directory')
args = parser.parse_args()
files = [f for f in glob.glob('/usr/share/doc/**/*', recursive=True)
         if os.path.isfile(f) and not f.endswith(('.gz', '.png', '.jpg', '.svg', '.ico', '.pdf'))]
files += glob.glob('/usr/lib/python3/dist-packages/**/*.py', recursive=True)
files = [f for f in files if os.path.getsize(f) < 2_000_000][:20000]
print(len(files), 'files')
tok = Tokenizer(models.BPE())
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tok.decoder = decoders.ByteLevel()
t = time.time()
def texts():
    for f in files:
        try:
            yield open(f, encoding='utf-8').read()
        except (UnicodeDecodeError, OSError):
            pass
tok.train_from_iterator(texts(), trainers.BpeTrainer(vocab_size=128000, show_progress=False,
                                     initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
print('trained', tok.get_vocab_size(), 'in', round(time.time() - t), 's')
if args.save:
    out = os.path.join(args.save, 'tests', 'router', 'tokenizer', 'fixtures', 'llama3')
    os.makedirs(out, exist_ok=True)
    tok.save(os.path.join(out, 'tokenizer.json'))
# token bytes: byte-level alphabet back to bytes
bs = list(range(ord("!"), ord("~")+1))+list(range(ord("¡"), ord("¬")+1))+list(range(ord("®"), ord("ÿ")+1))
cs = bs[:]; n = 0
for b in range(256):
    if b not in bs: bs.append(b); cs.append(256+n); n += 1
byte_of = {chr(c): b for b, c in zip(bs, cs)}
vocab = [bytes(byte_of[ch] for ch in t) for t in tok.get_vocab()]
def cls_free(c):
    if c.isascii() and c.isalpha(): return 'L'
    return {' ': 'S', ',': 'C', "'": 'A', '.': 'D'}.get(c, 'O')
def cls_email(c):
    if 'a' <= c <= 'z': return 'l'
    if '0' <= c <= '9': return 'd'
    return {'.': '.', '_': '_', '%': '%', '+': '+', '-': '-', '@': '@'}.get(c, 'O')
for name, f in (('free text', cls_free), ('email', cls_email)):
    groups, partial = set(), 0
    for b in vocab:
        try:
            s = b.decode('utf-8')
        except UnicodeDecodeError:
            partial += 1; continue
        groups.add(''.join(f(c) for c in s))
    print(name, len(vocab), 'tokens', len(groups), 'groups', partial, 'partial-character tokens')
