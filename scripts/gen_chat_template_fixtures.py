#!/usr/bin/env python3
"""Builds the chat template fixtures for router/openai's RenderChat.

Renders a handful of conversations with transformers' own apply_chat_template (the Jinja sandbox,
trim_blocks/lstrip_blocks and the special-token variables exactly as transformers sets them up)
for the two reference templates headroom renders natively:

  chatml   Qwen2-Instruct's template (default system message when the first message is not one)
  llama3   Meta-Llama-3-8B-Instruct's template (bos_token on the first message, content | trim)

Writes tests/router/openai/fixtures/chat_templates.json: {generator, templates: [...]}, each
{template_name, template, bos_token, cases: [{messages, add_generation_prompt, expected}]}.

Usage: scripts/setup-deps --fixtures   (build/venv-fixtures with transformers and jinja2)
       build/venv-fixtures/bin/python scripts/gen_chat_template_fixtures.py
The output is deterministic; it is committed so the C++ tests never need Python.
"""
import json
import os

import jinja2
import transformers
from transformers import PreTrainedTokenizerFast

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "router", "openai", "fixtures", "chat_templates.json")
# Any committed tokenizer.json will do: only the template and the special-token strings matter.
TOKENIZER = os.path.join(ROOT, "tests", "router", "tokenizer", "fixtures", "qwen2", "tokenizer.json")

# Qwen/Qwen2-7B-Instruct tokenizer_config.json "chat_template".
QWEN2_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}{% endif %}"
    "{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")

# meta-llama/Meta-Llama-3-8B-Instruct tokenizer_config.json "chat_template".
LLAMA3_TEMPLATE = (
    "{% set loop_messages = messages %}{% for message in loop_messages %}"
    "{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'"
    "+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}"
    "{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}"
    "{% endif %}")

TEMPLATES = [
    ("chatml", QWEN2_TEMPLATE, "<|endoftext|>"),
    ("llama3", LLAMA3_TEMPLATE, "<|begin_of_text|>"),
]


def m(role, content):
    return {"role": role, "content": content}


# (messages, add_generation_prompt)
CONVERSATIONS = [
    ([m("user", "Hello!")], True),
    ([m("system", "You are terse."), m("user", "What is 2+2?")], True),
    ([m("system", "Be kind."), m("user", "Hi"), m("assistant", "Hello! How can I help?"),
      m("user", "Tell me a joke.")], True),
    ([m("user", "Hi"), m("assistant", "Hey.")], False),
    ([m("user", "")], True),
    ([m("system", ""), m("user", "  padded both sides \n\n"), m("assistant", "\tok\t")], False),
    ([m("user", "line one\nline two\n\n  indented\n"),
      m("assistant", "\u3000ideographic space, NBSP\u00a0\u00a0")], True),
    ([m("user", "Grüße, 世界! 🌈 ¿qué?"), m("assistant", "\u2003em space\u2028"),
      m("user", "\x1c\x1fcontrol separators\x85")], True),
    ([m("assistant", "I start."), m("user", "ok")], False),
]


def main():
    cases_out = []
    for name, template, bos in TEMPLATES:
        tok = PreTrainedTokenizerFast(tokenizer_file=TOKENIZER, bos_token=bos)
        cases = []
        for messages, add_gen in CONVERSATIONS:
            expected = tok.apply_chat_template(messages, chat_template=template, tokenize=False,
                                               add_generation_prompt=add_gen)
            cases.append({"messages": messages, "add_generation_prompt": add_gen,
                          "expected": expected})
        cases_out.append({"template_name": name, "template": template, "bos_token": bos,
                          "cases": cases})
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump({"generator": f"transformers {transformers.__version__}, "
                                f"jinja2 {jinja2.__version__}",
                   "templates": cases_out}, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
