#!/usr/bin/env python3
"""Builds tests/router/openai/fixtures/continue_final_message.json: vLLM's continue_final_message
as transformers' apply_chat_template(continue_final_message=True) renders it.

Recent transformers (4.57 here; vLLM requires >= 4.56) append a sentinel to the final message's
content, render without a generation prompt, and cut the text where the sentinel starts (dropping
trailing whitespace too where the template trimmed the content). The 4.46 that the model fixtures
pin did it differently (it always stripped), so this script runs in its own virtual environment.

Templates: the two built-in ones (tests/router/openai/fixtures/chat_templates.json) and the real
models' templates of tests/router/jinja/fixtures/jinja_chat_templates.json, with their special
tokens and strftime_now frozen at the same instant as there; plus one template that drops the
final message's content, which transformers refuses. Each case records the rendered text, or the
error transformers raised.

Run: scripts/setup-deps --fixtures && build/venv-chat/bin/python
     scripts/gen_continue_final_message_fixtures.py
"""
import json
import os
from datetime import datetime

import jinja2
import transformers
from transformers import PreTrainedTokenizerFast
from transformers.utils import chat_template_utils

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "router", "openai", "fixtures", "continue_final_message.json")
BUILTINS = os.path.join(ROOT, "tests", "router", "openai", "fixtures", "chat_templates.json")
REAL = os.path.join(ROOT, "tests", "router", "jinja", "fixtures", "jinja_chat_templates.json")
# Any committed tokenizer.json will do: only the template and the special-token strings matter.
TOKENIZER = os.path.join(ROOT, "tests", "router", "tokenizer", "fixtures", "qwen2", "tokenizer.json")

with open(REAL, encoding="utf-8") as f:
    REAL_FIXTURE = json.load(f)
FROZEN_AT = datetime.fromisoformat(REAL_FIXTURE["strftime_now_frozen_at"])


class _FrozenDatetime(datetime):
    @classmethod
    def now(cls, tz=None):
        return cls(*FROZEN_AT.timetuple()[:6], tzinfo=tz)


chat_template_utils.datetime = _FrozenDatetime


def m(role, content):
    return {"role": role, "content": content}


# (name, messages): the final message is the one continued.
CONVERSATIONS = [
    ("assistant_prefix", [m("user", "Write a haiku about rain."), m("assistant", "Soft rain on")]),
    ("trailing_newline_kept_or_trimmed",
     [m("user", "List three colors."), m("assistant", "Sure, here they are:\n")]),
    ("leading_spaces_and_system",
     [m("system", "You are terse."), m("user", "Say hi"), m("assistant", "  Hi")]),
    ("text_also_earlier", [m("user", "Repeat: ping"), m("assistant", "ping")]),
    ("empty_assistant", [m("user", "Hello"), m("assistant", "")]),
    ("user_message_continued", [m("user", "Finish my sentence: The cat")]),
]

# A template that prints no content: the final message cannot be continued.
DROPPING = "{% for message in messages %}<{{ message['role'] }}>{% endfor %}"


def render(tok, template, messages):
    out = {"messages": messages}
    try:
        out["expected"] = tok.apply_chat_template(json.loads(json.dumps(messages)),
                                                  chat_template=template, tokenize=False,
                                                  add_generation_prompt=False,
                                                  continue_final_message=True)
    except Exception as e:  # noqa: BLE001
        out["error"] = f"{type(e).__name__}: {e}"
    return out


def main():
    with open(BUILTINS, encoding="utf-8") as f:
        builtins = json.load(f)["templates"]
    templates = [{"name": t["template_name"], "template": t["template"],
                  "special_tokens": {"bos_token": t["bos_token"]}} for t in builtins]
    # hermes3 and command-r-plus iterate tools unconditionally: their cases all give tools.
    templates += [{"name": t["name"], "template": t["template"],
                   "special_tokens": t["special_tokens"]} for t in REAL_FIXTURE["templates"]
                  if t["name"] not in ("hermes3", "command-r-plus")]
    templates.append({"name": "drops_content", "template": DROPPING, "special_tokens": {}})
    out = []
    for t in templates:
        tok = PreTrainedTokenizerFast(tokenizer_file=TOKENIZER, **t["special_tokens"])
        conversations = CONVERSATIONS[:1] if t["name"] == "drops_content" else CONVERSATIONS
        cases = []
        for name, messages in conversations:
            cases.append({"name": name, **render(tok, t["template"], messages)})
        out.append({**t, "cases": cases})
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump({"generator": f"transformers {transformers.__version__}, "
                                f"jinja2 {jinja2.__version__}",
                   "strftime_now_frozen_at": FROZEN_AT.isoformat(), "templates": out},
                  f, ensure_ascii=False, indent=1)
        f.write("\n")
    n = sum(len(t["cases"]) for t in out)
    errors = sum(1 for t in out for c in t["cases"] if "error" in c)
    print(f"wrote {OUT}: {n} cases, {errors} errors")


if __name__ == "__main__":
    main()
