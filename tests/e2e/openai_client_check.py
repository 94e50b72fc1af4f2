"""Drives a headroom router with the official `openai` Python client (run by http_e2e_test).

Usage: openai_client_check.py BASE_URL API_KEY
Checks completions and chat, streaming and not, agree with each other at temperature 0, that
usage is reported, that n > 1 gives n indexed choices, that echo + logprobs scores the prompt,
that response_format json_object answers what Python's json module reads as an object, that
response_format json_schema answers what pydantic (the client's parse()) and jsonschema validate,
that
function calling with a named function or "required" answers calls whose arguments jsonschema
validates, that the Responses API answers what chat does (typed models, the stream accumulator), that vLLM's guided_choice (extra_body) answers one of the choices, that its
guided_regex / structured_outputs.regex answer what Python's re.fullmatch matches, that its
guided_grammar / structured_outputs.grammar (EBNF, and Lark as vLLM reads a grammar without
`::=`) answer sentences of the grammar (checked with an equivalent regular expression), that embeddings
(base64, the client's default, and float) agree, and that a bad
request surfaces as openai.BadRequestError naming the field.
Exits non-zero with the failed check on stderr.
"""
import datetime
import json
import re
import sys
import uuid
from typing import List, Literal, Optional

import jsonschema
import openai
import pydantic


def check(condition, message):
    if not condition:
        sys.exit(f"FAILED: {message}")


WEATHER = {"type": "object",
           "properties": {"city": {"enum": ["Paris", "Oslo"]},
                          "days": {"type": "integer", "minimum": 1, "maximum": 7}},
           "required": ["city", "days"], "additionalProperties": False}
CLOCK = {"type": "object", "properties": {"zone": {"enum": ["UTC", "CET"]}},
         "required": ["zone"], "additionalProperties": False}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Forecast",
                                           "parameters": WEATHER}},
         {"type": "function", "function": {"name": "get_time", "parameters": CLOCK}}]


def check_tool_calls(client, model, messages, bias):
    """Function calling: a named function and "required" make the reply the call(s), whose
    arguments jsonschema validates against the function's parameters; the calls stream; a
    conversation carrying the calls and their results goes on; "auto" is refused with a reason."""
    def valid_calls(calls, what):
        check(calls, f"{what}: no tool calls")
        schemas = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
        for call in calls:
            check(call.type == "function" and call.function.name in schemas, f"{what}: {call}")
            try:
                jsonschema.validate(json.loads(call.function.arguments),
                                    schemas[call.function.name])
            except (ValueError, jsonschema.ValidationError) as error:
                check(False, f"{what}: arguments {call.function.arguments!r}: {error}")

    named = client.chat.completions.create(
        model=model, messages=messages, max_tokens=64, temperature=0, logit_bias=bias,
        tools=TOOLS, tool_choice={"type": "function", "function": {"name": "get_weather"}})
    message = named.choices[0].message
    valid_calls(message.tool_calls, "named")
    check(message.tool_calls[0].function.name == "get_weather", f"named: {message.tool_calls}")

    required = client.chat.completions.create(
        model=model, messages=messages, max_tokens=96, temperature=1.0, seed=2, logit_bias=bias,
        tools=TOOLS, tool_choice="required", parallel_tool_calls=False)
    valid_calls(required.choices[0].message.tool_calls, "required")

    # Streamed, the named call's deltas join into the same call.
    arguments, names = "", []
    for chunk in client.chat.completions.create(
            model=model, messages=messages, max_tokens=64, temperature=0, logit_bias=bias,
            tools=TOOLS, tool_choice={"type": "function", "function": {"name": "get_weather"}},
            stream=True):
        for delta in chunk.choices[0].delta.tool_calls or [] if chunk.choices else []:
            names += [delta.function.name] if delta.function.name else []
            arguments += delta.function.arguments or ""
    check(names == ["get_weather"] and arguments == message.tool_calls[0].function.arguments,
          f"streamed call {names} {arguments!r} != {message.tool_calls[0]}")

    # Streamed "required" calls (same seed, same tokens): each call's name in its first delta,
    # its arguments in pieces; joined by index they are the non-streamed calls.
    streamed = {}
    for chunk in client.chat.completions.create(
            model=model, messages=messages, max_tokens=96, temperature=1.0, seed=2,
            logit_bias=bias, tools=TOOLS, tool_choice="required", parallel_tool_calls=False,
            stream=True):
        for delta in chunk.choices[0].delta.tool_calls or [] if chunk.choices else []:
            name, pieces = streamed.setdefault(delta.index, [delta.function.name, []])
            check(delta.index == len(streamed) - 1 or not delta.function.name,
                  f"a second name for call {delta.index}: {delta}")
            pieces.append(delta.function.arguments or "")
    whole = [(c.function.name, c.function.arguments) for c in required.choices[0].message.tool_calls]
    joined = [(name, "".join(pieces)) for name, pieces in
              (streamed[k] for k in sorted(streamed))]
    check(joined == whole, f"streamed required calls {joined} != {whole}")

    # The next turn carries the call and its result (the model answers in text: "none").
    call = message.tool_calls[0]
    followed = client.chat.completions.create(
        model=model, max_tokens=4, tools=TOOLS, tool_choice="none",
        messages=messages + [
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": call.id, "type": "function",
                 "function": {"name": call.function.name, "arguments": call.function.arguments}}]},
            {"role": "tool", "tool_call_id": call.id, "content": "12 C, light rain"}])
    check(followed.choices[0].message.tool_calls is None, f"none called: {followed.choices[0]}")

    try:
        client.chat.completions.create(model=model, messages=messages, max_tokens=4, tools=TOOLS)
        check(False, "tool_choice auto (the default with tools) was accepted without a parser")
    except openai.BadRequestError as error:
        check('tool_choice "auto"' in str(error), f"error does not say why: {error}")


def check_responses(client, model, messages, bias):
    """The Responses API, read by the client's typed models and its stream accumulator (which
    fails on an event out of place): a reply is the chat reply to the same messages (instructions
    as the system message), streamed or not; max_output_tokens cuts it as "incomplete"; a named
    function's call is a function_call item whose arguments validate, and the conversation goes
    on with the call and its output as input items; a stored-response id is not found."""
    system, user = messages[0]["content"], messages[1]["content"]
    chat = client.chat.completions.create(model=model, messages=messages, max_tokens=12,
                                          temperature=0)
    response = client.responses.create(model=model, instructions=system, input=user,
                                       max_output_tokens=12, temperature=0)
    check(response.object == "response" and response.id.startswith("resp_"), f"{response}")
    check(response.output_text == chat.choices[0].message.content,
          f"responses {response.output_text!r} != chat {chat.choices[0].message.content!r}")
    check(response.usage.input_tokens == chat.usage.prompt_tokens and
          response.usage.output_tokens == chat.usage.completion_tokens,
          f"usage {response.usage} != {chat.usage}")
    if chat.choices[0].finish_reason == "length":
        check(response.status == "incomplete" and
              response.incomplete_details.reason == "max_output_tokens", f"{response}")

    with client.responses.stream(model=model, instructions=system, input=user,
                                 max_output_tokens=12, temperature=0) as stream:
        deltas = [event.delta for event in stream if event.type == "response.output_text.delta"]
        final = stream.get_final_response()
    check("".join(deltas) == response.output_text and final.output_text == response.output_text,
          f"streamed {''.join(deltas)!r} / {final.output_text!r} != {response.output_text!r}")
    check(final.usage.output_tokens == response.usage.output_tokens, f"usage {final.usage}")

    tools = [{"type": "function", "name": t["function"]["name"],
              "parameters": t["function"]["parameters"]} for t in TOOLS]
    called = client.responses.create(model=model, input=messages, max_output_tokens=64,
                                     temperature=0, tools=tools,
                                     tool_choice={"type": "function", "name": "get_weather"},
                                     extra_body={"logit_bias": bias})
    calls = [item for item in called.output if item.type == "function_call"]
    check(len(calls) == 1 and calls[0].name == "get_weather", f"calls {called.output}")
    try:
        jsonschema.validate(json.loads(calls[0].arguments), WEATHER)
    except (ValueError, jsonschema.ValidationError) as error:
        check(False, f"call arguments {calls[0].arguments!r}: {error}")
    with client.responses.stream(model=model, input=messages, max_output_tokens=64,
                                 temperature=0, tools=tools,
                                 tool_choice={"type": "function", "name": "get_weather"},
                                 extra_body={"logit_bias": bias}) as stream:
        streamed = [item for item in stream.get_final_response().output
                    if item.type == "function_call"]
    check([(c.name, c.arguments) for c in streamed] == [(calls[0].name, calls[0].arguments)],
          f"streamed calls {streamed} != {calls}")
    followed = client.responses.create(
        model=model, max_output_tokens=4, tools=tools, tool_choice="none",
        input=messages + [{"type": "function_call", "call_id": calls[0].call_id,
                           "name": calls[0].name, "arguments": calls[0].arguments},
                          {"type": "function_call_output", "call_id": calls[0].call_id,
                           "output": "12 C, light rain"}])
    check([item.type for item in followed.output] == ["message"], f"{followed.output}")

    try:
        client.responses.create(model=model, input=user, previous_response_id="resp_missing")
        check(False, "a previous_response_id was found though nothing is stored")
    except openai.NotFoundError as error:
        check("resp_missing" in str(error), f"error does not name the id: {error}")


def check_sentences(texts, pattern, what):
    """Each of `texts` is whole under `pattern` (re.fullmatch)."""
    for text in texts:
        check(re.fullmatch(pattern, text), f"{what} {text!r} does not match {pattern}")


def check_each_stops(client, model, prompt, extra_body, pattern, what, seed, max_tokens=24):
    """Six sampled completions under a constraint whose every sentence ends by itself: each
    finishes with "stop" and matches `pattern`."""
    sampled = client.completions.create(model=model, prompt=prompt, max_tokens=max_tokens,
                                        temperature=1.0, seed=seed, n=6, extra_body=extra_body)
    for c in sampled.choices:
        check(c.finish_reason == "stop", f"{what} {c.text!r} ended by {c.finish_reason}")
    check_sentences([c.text for c in sampled.choices], pattern, what)


def check_finished_chats(client, model, messages, extra_body, pattern, what, seed):
    """Six sampled chats under a constraint with an open end (EOS offered once the text is whole):
    at least two finish with "stop", and those match `pattern`."""
    chat = client.chat.completions.create(model=model, messages=messages, max_tokens=24,
                                          temperature=1.0, seed=seed, n=6, extra_body=extra_body)
    finished = [c.message.content for c in chat.choices if c.finish_reason == "stop"]
    check(len(finished) >= 2, f"only {len(finished)} of 6 {what} replies finished")
    check_sentences(finished, pattern, what)


def check_refused(client, model, extra_body, what, *expected):
    """A completion with `extra_body` is a BadRequestError whose message holds each of
    `expected`."""
    try:
        client.completions.create(model=model, prompt="hi", max_tokens=8, extra_body=extra_body)
        check(False, f"{what} was accepted")
    except openai.BadRequestError as error:
        check(all(e in str(error) for e in expected), f"error does not say why: {error}")


def check_guided_regex(client, model, messages):
    # One length: every sampled reply ends by itself (nothing can follow), and matches.
    phone = r"\(\d{3}\) \d{3}-\d{4}"
    check_each_stops(client, model, "Call", {"guided_regex": phone}, phone, "phone reply", seed=5)
    # Characters of several bytes (a token may end inside one) and an open end (EOS is offered
    # once the text matches, and is not part of the text), in vLLM's newer spelling, in chat.
    mood = r"(calm|busy) [😀-😂]{1,3}é?"
    check_finished_chats(client, model, messages, {"structured_outputs": {"regex": mood}}, mood,
                         "mood", seed=9)
    check_refused(client, model, {"guided_regex": r"(a)\1"}, "a regex with a backreference",
                  "guided_regex: backreferences are not supported")


def check_guided_grammar(client, model, messages):
    # One length per alternative: every sampled reply ends by itself.
    check_each_stops(client, model, "Sure?", {"guided_grammar": 'root ::= ("yes" | "no") "."'},
                     r"(yes|no)\.", "answer", seed=3, max_tokens=16)
    # Rules, repetition and an open end (EOS is offered once the text is a sentence), in vLLM's
    # newer spelling, in chat. The grammar's language is regular, so re.fullmatch checks it.
    items = ('root ::= item ("," item){0,2}\n'
             'item ::= "[" [a-c]{0,3} "]" | [0-9]{1,3}  # a list or a number')
    same = r"(\[[a-c]{0,3}\]|[0-9]{1,3})(,(\[[a-c]{0,3}\]|[0-9]{1,3})){0,2}"
    check_finished_chats(client, model, messages, {"structured_outputs": {"grammar": items}},
                         same, "item", seed=11)
    check_refused(client, model, {"guided_grammar": 'root ::= "a" b'},
                  "a grammar with an undefined rule",
                  "guided_grammar: EBNF parser error at line 1, column 14", "is not defined")
    # A grammar without a `::=` line is Lark, as vLLM reads it: vLLM's own Lark test grammar.
    sql = ('start: select_statement\n'
           'select_statement: "SELECT " column " from " table " where " condition\n'
           'column: "col_1" | "col_2"\n'
           'table: "table_1" | "table_2"\n'
           'condition: column "=" number\n'
           'number: "1" | "2"\n')
    check_each_stops(client, model, "SQL:", {"structured_outputs": {"grammar": sql}},
                     r"SELECT col_[12] from table_[12] where col_[12]=[12]", "query", seed=5,
                     max_tokens=64)
    check_refused(client, model, {"guided_grammar": 'start: "a" x'},
                  "a Lark grammar with an undefined rule",
                  "guided_grammar: Lark grammar error at line 1, column 12: 'x' is not defined")


def check_structural_tag(client, model, messages):
    # vLLM's docs example (a weather call inside free text), with the trigger cut to "<" and a
    # bias on it so that this small random model starts tags: every "<" in a reply begins a whole
    # tag whose JSON validates against the schema (read here with json and jsonschema); a reply
    # cut by max_tokens may end inside its last one. EOS ends replies only in free text.
    city = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 8}},
            "required": ["city"]}
    tag = {"type": "structural_tag",
           "structures": [{"begin": "<get_weather>", "schema": city, "end": "</get_weather>"}],
           "triggers": ["<"]}
    bias = {str(ord(c)): b for c, b in (("<", 5), ('"', 4), ("}", 6))}
    chat = client.chat.completions.create(model=model, messages=messages, max_tokens=96,
                                          temperature=1.0, seed=4, n=6, logit_bias=bias,
                                          response_format=tag)
    decoder = json.JSONDecoder()
    tags = 0
    for c in chat.choices:
        text = c.message.content
        at = text.find("<")
        while at >= 0:
            begin = at + len("<get_weather>")
            if c.finish_reason == "length" and "</get_weather>" not in text[at:]:
                break
            check(text.startswith("<get_weather>", at), f"tag without its begin: {text!r}")
            try:
                value, end = decoder.raw_decode(text, begin)
                jsonschema.validate(value, city)
            except (ValueError, jsonschema.ValidationError) as error:
                check(False, f"tag value in {text!r} is not valid: {error}")
            check(text.startswith("</get_weather>", end), f"tag without its end: {text!r}")
            tags += 1
            at = text.find("<", end + len("</get_weather>"))
    check(tags >= 3, f"only {tags} tags in 6 replies")
    # xgrammar's newer form, with stop_after_first: a reply that stopped ends with its first tag.
    first = {"type": "structural_tag", "format": {
        "type": "triggered_tags", "triggers": ["<"], "stop_after_first": True,
        "tags": [{"type": "tag", "begin": "<get_weather>",
                  "content": {"type": "json_schema", "json_schema": city},
                  "end": "</get_weather>"}]}}
    chat = client.chat.completions.create(model=model, messages=messages, max_tokens=96,
                                          temperature=1.0, seed=4, n=6, logit_bias=bias,
                                          response_format=first)
    ended = [c.message.content for c in chat.choices
             if c.finish_reason == "stop" and "<" in c.message.content]
    check(len(ended) >= 2, f"only {len(ended)} of 6 replies stopped after their tag")
    for text in ended:
        at = text.index("<") + len("<get_weather>")
        value, end = decoder.raw_decode(text, at)
        check(text[end:] == "</get_weather>", f"more after the first tag: {text!r}")
    check_refused(client, model, {"structured_outputs": {"structural_tag": json.dumps(
        {"structures": [{"begin": "<x>", "schema": city, "end": ""}], "triggers": ["["]})}},
                  "a structural tag whose begin starts with no trigger",
                  "structured_outputs.structural_tag: structures[0].begin",
                  "does not start with any of the triggers")


def check_embeddings(client, model):
    """/v1/embeddings through the client: its default asks for base64 and decodes the bytes
    itself, which must give the float format's numbers (to float32 rounding of two runs), unit
    length, one vector per input in order; dimensions on a model not trained for truncation is a
    BadRequestError saying so."""
    inputs = ["the cat sat", "on the mat", "headroom"]
    default = client.embeddings.create(model=model, input=inputs)
    floats = client.embeddings.create(model=model, input=inputs, encoding_format="float")
    check([d.index for d in default.data] == [0, 1, 2], f"embedding indices {default.data}")
    check(default.usage.prompt_tokens > 0 and
          default.usage.total_tokens == default.usage.prompt_tokens,
          f"embedding usage {default.usage}")
    for i, (a, b) in enumerate(zip(default.data, floats.data)):
        check(len(a.embedding) == len(b.embedding) > 0, f"embedding {i} sizes")
        check(all(abs(x - y) <= 1e-4 + 1e-4 * abs(y) for x, y in zip(a.embedding, b.embedding)),
              f"embedding {i}: base64 {a.embedding[:4]} vs float {b.embedding[:4]}")
        norm = sum(x * x for x in a.embedding) ** 0.5
        check(abs(norm - 1) < 1e-4, f"embedding {i} has norm {norm}")
    try:
        client.embeddings.create(model=model, input="x", dimensions=8)
        check(False, "dimensions on a non-Matryoshka model was accepted")
    except openai.BadRequestError as error:
        check("matryoshka" in str(error), f"dimensions refusal: {error}")


def main():
    base_url, api_key = sys.argv[1], sys.argv[2]
    client = openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=60)

    models = client.models.list()
    check(len(models.data) == 1, f"one model listed, got {models.data}")
    model = models.data[0].id

    params = dict(model=model, max_tokens=16, temperature=0, extra_body={"ignore_eos": True})
    completion = client.completions.create(prompt="Once upon a time", **params)
    text = completion.choices[0].text
    check(completion.choices[0].finish_reason == "length", f"finish {completion.choices[0]}")
    check(completion.usage.completion_tokens == 16, f"usage {completion.usage}")
    check(completion.usage.prompt_tokens == len("Once upon a time"), f"usage {completion.usage}")

    streamed = "".join(chunk.choices[0].text
                       for chunk in client.completions.create(prompt="Once upon a time",
                                                              stream=True, **params)
                       if chunk.choices)
    check(streamed == text, f"streamed {streamed!r} != {text!r}")

    # n samples: one choice each, indexed; the prompt counts once in usage.
    multi = client.completions.create(model=model, prompt="Once upon a time", n=2, seed=5,
                                      temperature=1.0, max_tokens=8,
                                      extra_body={"ignore_eos": True})
    check(sorted(c.index for c in multi.choices) == [0, 1], f"choices {multi.choices}")
    check(multi.usage.prompt_tokens == len("Once upon a time"), f"usage {multi.usage}")
    check(multi.usage.completion_tokens == 16, f"usage {multi.usage}")

    # lm-eval-harness's loglikelihood request: the prompt's logprobs, echoed.
    scored = client.completions.create(model=model, prompt="Once upon a time", echo=True,
                                       logprobs=1, max_tokens=1, temperature=0)
    lp = scored.choices[0].logprobs
    check(scored.choices[0].text.startswith("Once upon a time"), f"echo {scored.choices[0].text!r}")
    check(len(lp.tokens) == len("Once upon a time") + 1, f"tokens {lp.tokens}")
    check(lp.token_logprobs[0] is None and all(x <= 0 for x in lp.token_logprobs[1:]),
          f"token_logprobs {lp.token_logprobs}")

    messages = [{"role": "system", "content": "You are terse."},
                {"role": "user", "content": "Name a colour."}]
    chat = client.chat.completions.create(messages=messages, **params)
    reply = chat.choices[0].message.content
    check(chat.choices[0].message.role == "assistant", f"role {chat.choices[0].message}")
    check(chat.choices[0].finish_reason == "length", f"finish {chat.choices[0]}")
    check(chat.usage.completion_tokens == 16, f"usage {chat.usage}")

    pieces = []
    usage = None
    for chunk in client.chat.completions.create(messages=messages, stream=True,
                                                stream_options={"include_usage": True}, **params):
        if chunk.usage is not None:
            usage = chunk.usage
        if chunk.choices and chunk.choices[0].delta.content:
            pieces.append(chunk.choices[0].delta.content)
    check("".join(pieces) == reply, f"streamed chat {''.join(pieces)!r} != {reply!r}")
    check(usage is not None and usage.completion_tokens == 16, f"stream usage {usage}")

    # JSON mode; the bias nudges this small random model to close what it opens.
    bias = {str(ord(c)): b for c, b in (('"', 6), (":", 6), ("}", 8))}
    structured = client.chat.completions.create(
        model=model, messages=messages, max_tokens=64, temperature=0, logit_bias=bias,
        response_format={"type": "json_object"})
    content = structured.choices[0].message.content
    check(isinstance(json.loads(content), dict), f"json_object content {content!r}")
    check(structured.choices[0].finish_reason == "stop", f"finish {structured.choices[0]}")

    # JSON schema through the client's parse(): the reply must validate as the pydantic model
    # (the client builds OpenAI's strict schema from it: anyOf with null, additionalProperties).
    class Verdict(pydantic.BaseModel):
        answer: Literal["yes", "no"]
        score: int
        note: Optional[str]
        tags: List[Literal["a", "b"]]

    schema_bias = {str(ord(c)): b for c, b in (('"', 4), (",", 4), ("]", 4), ("}", 6))}
    parsed = client.beta.chat.completions.parse(model=model, messages=messages, max_tokens=128,
                                                temperature=0, logit_bias=schema_bias,
                                                response_format=Verdict)
    check(isinstance(parsed.choices[0].message.parsed, Verdict), f"parsed {parsed.choices[0]}")
    check(parsed.choices[0].finish_reason == "stop", f"finish {parsed.choices[0]}")

    # Formats, patterns and bounds: pydantic parses the datetime, the UUID, the patterned code and
    # the bounded integer.
    class Ticket(pydantic.BaseModel):
        code: pydantic.constr(pattern=r"^[A-Z]{2}-\d{3}$")
        opened: datetime.datetime
        id: uuid.UUID
        priority: pydantic.conint(ge=1, le=5)

    # This random model likes \u escapes (six tokens a character) and whitespace: push them down.
    ticket_bias = dict(schema_bias, **{str(ord(c)): -6 for c in "\\\t\r\n"})
    try:
        ticket = client.beta.chat.completions.parse(model=model, messages=messages,
                                                    max_tokens=140, temperature=0,
                                                    logit_bias=ticket_bias, response_format=Ticket)
    except openai.LengthFinishReasonError as error:
        check(False, f"ticket cut by max_tokens: {error.completion.choices[0].message.content!r}")
    check(isinstance(ticket.choices[0].message.parsed, Ticket), f"parsed {ticket.choices[0]}")

    # Sampled replies to a recursive schema (a tree through $defs), each validated by jsonschema
    # when it finished.
    tree = {"$defs": {"Node": {"type": "object",
                               "properties": {"label": {"type": "string", "maxLength": 3},
                                              "kids": {"type": "array", "maxItems": 2,
                                                       "items": {"$ref": "#/$defs/Node"}}},
                               "required": ["label"], "additionalProperties": False}},
            "type": "object",
            "properties": {"root": {"$ref": "#/$defs/Node"},
                           "mood": {"enum": ["calm", "busy"]},
                           "count": {"anyOf": [{"type": "integer"}, {"type": "null"}]}},
            "required": ["root", "mood"], "additionalProperties": False}
    sampled = client.chat.completions.create(
        model=model, messages=messages, max_tokens=140, temperature=1.0, seed=3, n=8,
        logit_bias=schema_bias,
        response_format={"type": "json_schema", "json_schema": {"name": "tree", "schema": tree}})
    finished = [c for c in sampled.choices if c.finish_reason == "stop"]
    check(len(finished) >= 2, f"only {len(finished)} of 8 tree replies finished")
    for c in finished:
        try:
            jsonschema.validate(json.loads(c.message.content), tree)
        except (ValueError, jsonschema.ValidationError) as error:
            check(False, f"tree reply {c.message.content!r} is not valid: {error}")

    check_tool_calls(client, model, messages, schema_bias)
    check_responses(client, model, messages, schema_bias)

    try:
        client.chat.completions.create(
            model=model, messages=messages, max_tokens=8,
            response_format={"type": "json_schema", "json_schema": {
                "name": "p", "schema": {"type": "string", "pattern": "^(?!no)"}}})
        check(False, "a pattern with a lookahead was accepted")
    except openai.BadRequestError as error:
        check("lookahead is not supported" in str(error), f"error does not say why: {error}")

    picked = client.completions.create(model=model, prompt="Colour:", max_tokens=16,
                                       temperature=0,
                                       extra_body={"guided_choice": ["red", "green", "blue"]})
    check(picked.choices[0].text in ("red", "green", "blue"), f"choice {picked.choices[0].text!r}")

    check_guided_regex(client, model, messages)
    check_guided_grammar(client, model, messages)
    check_structural_tag(client, model, messages)
    check_embeddings(client, model)

    try:
        client.completions.create(model=model, prompt="hi", max_tokens=0)
        check(False, "max_tokens=0 was accepted")
    except openai.BadRequestError as error:
        check("max_tokens" in str(error), f"error does not name max_tokens: {error}")

    try:
        openai.OpenAI(base_url=base_url, api_key="wrong", max_retries=0).models.list()
        check(False, "a wrong API key was accepted")
    except openai.AuthenticationError:
        pass

    print("openai client: all checks passed")


if __name__ == "__main__":
    main()
