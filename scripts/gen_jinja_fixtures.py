#!/usr/bin/env python3
"""Builds the Jinja conformance fixtures for headroom's C++ chat-template interpreter.

Everything expected here is produced by the real thing: transformers' own Jinja environment for chat
templates (transformers.utils.chat_template_utils._compile_jinja_template: an
ImmutableSandboxedEnvironment with trim_blocks=True, lstrip_blocks=True, the AssistantTracker
`{% generation %}` extension and jinja2.ext.loopcontrols, transformers' tojson filter (json.dumps,
ensure_ascii=False, no HTML escaping, indent/separators/sort_keys exposed) and the raise_exception /
strftime_now globals). Nothing is hand-written: each case is rendered and its outcome recorded.

Writes two files under tests/router/jinja/fixtures/:

  jinja_features.json        {generator, strftime_now_frozen_at, cases: [{name, template, context,
                              expected} | {name, template, context, error: true, error_message,
                              error_phase}]}: ~390 small templates, one feature or interaction each,
                              rendered with compiled.render(**context). error_message is
                              "ExceptionClass: message"; error_phase is "compile" (from_string
                              failed) or "render".
  jinja_chat_templates.json  {generator, strftime_now_frozen_at, render_variables, templates: [{name,
                              model, source, template, special_tokens, cases: [{name, messages,
                              tools, add_generation_prompt, extra, expected | error+error_message}]}]}:
                              real chat templates of popular models rendered by
                              tokenizer.apply_chat_template(messages, chat_template=template,
                              tools=tools, add_generation_prompt=..., tokenize=False, **extra).

apply_chat_template renders with messages, tools (None when not given), documents (None unless extra
has documents), add_generation_prompt, the tokenizer's special_tokens_map (recorded per template as
special_tokens) and the extra kwargs. strftime_now is made deterministic: datetime.now() inside
transformers' chat_template_utils is frozen at STRFTIME_NOW_FROZEN_AT, so C++ tests must render with
a clock stubbed to that instant.

Template sources (the exact text of each is kept below as data, with where it came from):
llama.cpp's models/templates/*.jinja (written verbatim from each model's tokenizer_config.json by its
scripts/get_chat_template.py; taken from the llama.cpp tree vendored in the llama-cpp-python 0.3.16
sdist), xinference 1.0.1's llm_family.json (whose copies replace bos_token/eos_token by the literal
tokens and turn "\\n" escapes into newlines: both substitutions are undone and the procedure checked on
templates present in both sources), and public repositories quoting the template verbatim.

Usage: scripts/setup-deps --fixtures   (build/venv-fixtures with transformers 4.46.3 and jinja2 3.1.4)
       build/venv-fixtures/bin/python scripts/gen_jinja_fixtures.py
The output is deterministic; it is committed so the C++ tests never need Python.
"""
import json
import os
from datetime import datetime

import jinja2
import transformers
from transformers import PreTrainedTokenizerFast
from transformers.utils import chat_template_utils
from transformers.utils.chat_template_utils import _compile_jinja_template

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "tests", "router", "jinja", "fixtures")
OUT_FEATURES = os.path.join(FIXTURES, "jinja_features.json")
OUT_CHAT = os.path.join(FIXTURES, "jinja_chat_templates.json")
# Any committed tokenizer.json will do: only the template and the special-token strings matter.
TOKENIZER = os.path.join(ROOT, "tests", "router", "tokenizer", "fixtures", "qwen2", "tokenizer.json")

STRFTIME_NOW_FROZEN_AT = datetime(2024, 12, 25, 9, 30, 0)


class _FrozenDatetime(datetime):
    @classmethod
    def now(cls, tz=None):
        return cls(*STRFTIME_NOW_FROZEN_AT.timetuple()[:6], tzinfo=tz)


# transformers' strftime_now global calls chat_template_utils.datetime.now() at render time.
chat_template_utils.datetime = _FrozenDatetime

# Feature cases: (name, template, context). Templates are Jinja source exactly as written here.
MSGS = [
    {"role": "system", "content": "sys"},
    {"role": "user", "content": "u1"},
    {"role": "assistant", "content": "a1"},
    {"role": "user", "content": "u2"},
]
USERS = [{"name": "ann", "age": 31, "admin": True, "team": {"name": "red"}},
         {"name": "bob", "age": 25, "admin": False, "email": None, "team": {"name": "blue"}},
         {"name": "cid", "age": 40, "email": "c@x.io", "team": {"name": "red"}}]
D = {"z": 1, "a": 2, "m": 3}

FEATURE_CASES = [
    # ---- plain text, newlines, whitespace control, trim_blocks / lstrip_blocks ----
    ("text.plain", "Hello, world!", {}),
    ("text.single_trailing_newline_dropped", "line1\nline2\n", {}),
    ("text.two_trailing_newlines_keep_one", "a\n\n", {}),
    ("text.crlf_normalised_to_lf", "a\r\nb\r\n\r\nc", {}),
    ("text.leading_whitespace_kept", "  \n\tx", {}),
    ("ws.trim_blocks_removes_newline_after_tag", "{% if true %}\nyes\n{% endif %}\nafter", {}),
    ("ws.trim_blocks_only_first_newline", "{% if true %}\n\nA{% endif %}", {}),
    ("ws.trim_blocks_not_after_expression", "{{ 'a' }}\n{{ 'b' }}\nc", {}),
    ("ws.lstrip_blocks_spaces_before_tag", "x\n    {% if true %}\n    y\n    {% endif %}\nz", {}),
    ("ws.lstrip_blocks_tabs_before_tag", "\t\t{% if true %}\nX\n\t{% endif %}\nY", {}),
    ("ws.lstrip_blocks_mixed_spaces_tabs", " \t {% set x = 1 %}\n{{ x }}", {}),
    ("ws.lstrip_not_for_expression", "  {{ 'a' }}\n  b", {}),
    ("ws.lstrip_not_when_text_before_tag", "x  {% if true %}y{% endif %}  z", {}),
    ("ws.block_tag_at_end_of_line", "a {% if true %}\nb{% endif %}\nc", {}),
    ("ws.indented_for_loop_lines", "<ul>\n  {% for i in [1, 2] %}\n  <li>{{ i }}</li>\n  {% endfor %}\n</ul>", {}),
    ("ws.minus_left_block", "a   \n  {%- if true %}b{% endif %}", {}),
    ("ws.minus_right_block", "{% if true -%}   \n\n  b{% endif %}", {}),
    ("ws.minus_both_block", "a \n {%- if true -%} \n b \n {%- endif -%} \n c", {}),
    ("ws.minus_left_expression", "a  \n\n  {{- 'b' }}  c", {}),
    ("ws.minus_right_expression", "a  {{ 'b' -}}  \n\n  c", {}),
    ("ws.minus_both_expression", "a\n\n{{- 'b' -}}\n\nc", {}),
    ("ws.plus_disables_lstrip", "  {%+ if true %}x{% endif %}", {}),
    ("ws.plus_right_disables_trim", "{% if true +%}\nx{% endif %}", {}),
    ("ws.set_on_own_line", "a\n{% set x = 1 %}\nb{{ x }}", {}),
    ("ws.minus_chat_template_style",
     "{%- for m in messages %}\n    {{- m.role + ':' + m.content }}\n    {%- if not loop.last %}\n        {{- '\\n' }}\n    {%- endif %}\n{%- endfor %}\n",
     {"messages": MSGS}),
    ("ws.no_minus_chat_template_style",
     "{% for m in messages %}\n    {{ m.role }}\n{% endfor %}\n", {"messages": MSGS[:2]}),
    ("ws.expression_then_block_same_line", "{{ 'a' }}{% if true %}\n{{ 'b' }}\n{% endif %}", {}),
    ("ws.minus_eats_across_tags", "{{ 'x' }}   {%- if true -%}   {{ 'y' }}   {%- endif -%}   {{ 'z' }}", {}),
    # ---- comments and raw ----
    ("comment.basic", "a{# comment #}b", {}),
    ("comment.multiline", "a{# line1\nline2 #}b", {}),
    ("comment.containing_tags", "a{# {% if %} {{ x }} #}b", {}),
    ("comment.own_line_lstrip_trim", "a\n  {# note #}\nb", {}),
    ("comment.minus", "a  {#- c -#}  b", {}),
    ("raw.basic", "{% raw %}{{ not evaluated }} {% if %}{% endraw %}", {}),
    ("raw.whitespace_control", "[{% raw -%}   {{ x }}   {%- endraw %}]", {}),
    # ---- literals ----
    ("lit.string_single_and_double", "{{ 'single' }}|{{ \"double\" }}", {}),
    ("lit.string_escape_newline", r"{{ 'a\nb' }}", {}),
    ("lit.string_escape_tab_backslash", r"{{ 'a\tb\\c' }}", {}),
    ("lit.string_escaped_double_quote", r'{{ "say \"hi\"" }}', {}),
    ("lit.string_escaped_single_quote", r"{{ 'it\'s' }}", {}),
    ("lit.string_other_quote_inside", "{{ \"it's\" }}|{{ 'say \"hi\"' }}", {}),
    ("lit.string_unicode_escape", r"{{ '\u00e9\u4e16' }}", {}),
    ("lit.string_hex_escape", r"{{ '\x41\x42' }}", {}),
    ("lit.string_raw_unicode", "{{ 'é世🌈' }}", {}),
    ("lit.string_real_newline_inside_literal", "{{ 'a\nb' }}", {}),
    ("lit.string_adjacent_concatenation", "{{ 'a' 'b' \"c\" }}", {}),
    ("lit.int", "{{ 42 }}|{{ -7 }}|{{ 0 }}", {}),
    ("lit.int_underscore", "{{ 1_000_000 }}", {}),
    ("lit.int_hex_octal_binary", "{{ 0x1F }}|{{ 0o17 }}|{{ 0b101 }}", {}),
    ("lit.float", "{{ 1.0 }}|{{ 2.5 }}|{{ 0.5 }}|{{ -0.0 }}", {}),
    ("lit.float_exponent", "{{ 2.5e3 }}|{{ 1e-7 }}|{{ 1E3 }}", {}),
    ("lit.float_repr_large_small", "{{ 1e16 }}|{{ 1.5e16 }}|{{ 1e15 }}|{{ 0.0001 }}|{{ 0.00001 }}", {}),
    ("lit.float_arith_repr", "{{ 0.1 + 0.2 }}|{{ 1 / 3 }}|{{ 2 / 3 }}", {}),
    ("lit.bool_both_cases", "{{ true }}|{{ True }}|{{ false }}|{{ False }}", {}),
    ("lit.none_both_cases", "{{ none }}|{{ None }}", {}),
    ("lit.list", "{{ ['a', 1, 2.5, true, none] }}", {}),
    ("lit.empty_list_dict", "{{ [] }}|{{ {} }}", {}),
    ("lit.dict", "{{ {'a': 1, 'b': [1, 2], 'c': {'d': none}} }}", {}),
    ("lit.dict_trailing_comma", "{{ {'a': 1,} }}|{{ [1, 2,] }}", {}),
    ("lit.tuple", "{{ (1, 2) }}|{{ (1,) }}|{{ () }}", {}),
    ("lit.list_string_repr_quotes",
     "{{ [\"it's\"] }}|{{ ['say \"hi\"'] }}|{{ [\"both ' and \\\"\"] }}", {}),
    ("lit.list_string_repr_escapes", r"{{ ['a\nb', 'tab\there', 'back\\slash'] }}", {}),
    ("lit.list_string_repr_unicode", "{{ ['é', '世', '🌈'] }}", {}),
    # ---- printing values from the context ----
    ("print.context_types", "{{ s }}|{{ i }}|{{ f }}|{{ b }}|{{ n }}",
     {"s": "str", "i": 3, "f": 3.0, "b": False, "n": None}),
    ("print.context_list_and_dict", "{{ l }}|{{ d }}",
     {"l": [1, "two", [3.5, None], {"k": True}], "d": {"x": 1, "y": "z", "n": None}}),
    ("print.dict_key_order_preserved", "{{ d }}", {"d": D}),
    ("print.string_with_quote_in_context_list", "{{ l }}", {"l": ["it's", "plain", "a\"b", "new\nline"]}),
    ("print.large_int", "{{ n }}|{{ n + 1 }}", {"n": 9007199254740993}),
    ("print.undefined_is_empty", "[{{ missing }}]", {}),
    ("print.undefined_attribute_is_empty", "[{{ d.nope }}][{{ d['nope'] }}]", {"d": {"a": 1}}),
    ("print.none_from_context", "{{ x }}", {"x": None}),
    ("print.namespace_repr", "{{ namespace(a=1) }}", {}),
    ("print.range_repr", "{{ range(3) }}", {}),
    ("print.dict_methods_repr", "{{ d.keys() }}|{{ d.values() }}|{{ d.items() }}", {"d": {"a": 1, "b": 2}}),
    ("print.list_of_undefined", "{{ [missing] }}|{{ {'a': missing} }}", {}),
    # ---- arithmetic ----
    ("math.int_add_sub_mul", "{{ 1 + 2 }}|{{ 3 - 5 }}|{{ 4 * 6 }}", {}),
    ("math.int_plus_float", "{{ 1 + 2.0 }}|{{ 2 * 1.5 }}", {}),
    ("math.true_division_gives_float", "{{ 7 / 2 }}|{{ 6 / 3 }}|{{ 10 / 4 * 2 }}", {}),
    ("math.floor_division", "{{ 7 // 2 }}|{{ -7 // 2 }}|{{ 7 // -2 }}|{{ 7.5 // 2 }}", {}),
    ("math.modulo_python_semantics", "{{ 7 % 3 }}|{{ -7 % 3 }}|{{ 7 % -3 }}|{{ 7.5 % 2 }}", {}),
    ("math.power", "{{ 2 ** 10 }}|{{ 2 ** -1 }}|{{ 2.0 ** 2 }}", {}),
    ("math.power_left_associative", "{{ 2 ** 3 ** 2 }}", {}),
    ("math.unary_minus_and_power", "{{ -2 ** 2 }}|{{ (-2) ** 2 }}", {}),
    ("math.big_int", "{{ 2 ** 64 }}", {}),
    ("math.precedence", "{{ 2 + 3 * 4 }}|{{ (2 + 3) * 4 }}|{{ 10 - 2 - 3 }}|{{ 2 * 3 ** 2 }}|{{ 10 - 2 * 3 }}", {}),
    ("math.string_times_int", "{{ 'ab' * 3 }}|{{ 3 * 'ab' }}|{{ '-' * 0 }}", {}),
    ("math.list_plus_list", "{{ [1] + [2, 3] }}|{{ [0] * 3 }}", {}),
    ("math.string_plus_string", "{{ 'a' + 'b' }}", {}),
    ("math.bool_is_int", "{{ 1 + true }}|{{ true + true }}", {}),
    ("math.float_inf", "{{ 1e308 * 10 }}|{{ -1e308 * 10 }}", {}),
    ("math.unary_plus_minus_on_var", "{{ -x }}|{{ +x }}|{{ - -x }}", {"x": 5}),
    ("math.int_plus_string_error", "{{ 1 + 'a' }}", {}),
    ("math.string_plus_int_error", "{{ 'a' + 1 }}", {}),
    ("math.none_plus_int_error", "{{ none + 1 }}", {}),
    ("math.undefined_plus_int_error", "{{ missing + 1 }}", {}),
    ("math.division_by_zero_error", "{{ 1 / 0 }}", {}),
    ("math.floor_division_by_zero_error", "{{ 1 // 0 }}", {}),
    ("math.modulo_by_zero_error", "{{ 1 % 0 }}", {}),
    ("math.string_modulo_formatting", "{{ '%s=%d' % ('a', 3) }}|{{ '%05.1f' % 3.14159 }}|{{ '%s' % 'x' }}", {}),
    # ---- ~ concatenation ----
    ("concat.tilde_mixed_types", "{{ 'a' ~ 1 ~ 2.5 ~ true ~ none }}", {}),
    ("concat.tilde_undefined", "{{ 'a' ~ missing ~ 'b' }}", {}),
    ("concat.tilde_numbers", "{{ 1 ~ 2 }}", {}),
    ("concat.tilde_list", "{{ 'x' ~ [1, 'a'] }}", {}),
    ("concat.tilde_binds_tighter_than_plus", "{{ 'a' + 1 ~ 2 }}|{{ 2 ~ 3 * 2 }}|{{ (1 + 2) ~ 3 }}", {}),
    ("concat.tilde_then_plus_int_error", "{{ 1 + 2 ~ 3 }}", {}),
    # ---- comparisons ----
    ("cmp.numbers", "{{ 1 < 2 }}|{{ 2 <= 2 }}|{{ 3 > 4 }}|{{ 4 >= 5 }}|{{ 1 != 2 }}", {}),
    ("cmp.int_float_equal", "{{ 1 == 1.0 }}|{{ true == 1 }}|{{ false == 0 }}", {}),
    ("cmp.strings", "{{ 'a' < 'b' }}|{{ 'abc' >= 'abd' }}|{{ 'a' == 'A' }}|{{ 'B' < 'a' }}", {}),
    ("cmp.lists_and_dicts", "{{ [1, 2] == [1, 2] }}|{{ {'a': 1} == {'a': 1} }}|{{ [1, 2] < [1, 3] }}", {}),
    ("cmp.dict_equality_from_context", "{{ m == messages[-1] }}|{{ m == messages[0] }}",
     {"m": {"role": "user", "content": "u2"}, "messages": MSGS}),
    ("cmp.none", "{{ none == none }}|{{ x == none }}|{{ missing == none }}", {"x": None}),
    ("cmp.chained", "{{ 1 < 2 < 3 }}|{{ 3 > 2 > 1 }}|{{ 1 < 3 < 2 }}", {}),
    ("cmp.mixed_types_error", "{{ 1 < 'a' }}", {}),
    ("cmp.mixed_types_equality_ok", "{{ 1 == 'a' }}|{{ '1' == 1 }}", {}),
    # ---- in / not in ----
    ("in.string", "{{ 'b' in 'abc' }}|{{ 'x' not in 'abc' }}|{{ '' in 'abc' }}", {}),
    ("in.list", "{{ 2 in [1, 2] }}|{{ 3 not in [1, 2] }}|{{ 'a' in ['a', 'b'] }}", {}),
    ("in.dict_keys", "{{ 'k' in {'k': 1} }}|{{ 1 in {'k': 1} }}|{{ 'role' in m }}|{{ 'tool_calls' in m }}",
     {"m": {"role": "user", "content": "x"}}),
    ("in.not_precedence", "{{ not 'a' in 'abc' }}|{{ not 'z' in 'abc' }}", {}),
    ("in.int_in_string_error", "{{ 1 in 'abc' }}", {}),
    ("in.undefined_container", "{{ 'a' in missing }}", {}),
    # ---- and / or / not ----
    ("logic.or_returns_value", "{{ 0 or 'x' }}|{{ 'a' or 'b' }}|{{ none or [] }}|{{ '' or 0 }}", {}),
    ("logic.and_returns_value", "{{ 'a' and 'b' }}|[{{ '' and 'b' }}]|{{ 0 and 1 }}", {}),
    ("logic.not", "{{ not 0 }}|{{ not [] }}|{{ not 'a' }}|{{ not none }}|{{ not {} }}", {}),
    ("logic.undefined_operands", "{{ missing or 'default' }}|[{{ true and missing }}]|{{ not missing }}", {}),
    ("logic.precedence", "{{ 1 and 0 or 5 }}|{{ not true == false }}|{{ (not true) == false }}|{{ true or false and false }}", {}),
    ("logic.truthiness_in_if",
     "{% for v in values %}{% if v %}T{% else %}F{% endif %}{% endfor %}",
     {"values": [[], {}, "", 0, 0.0, None, "False", "0", " ", [0], {"a": None}, 1, -1, 0.1]}),
    ("logic.short_circuit_avoids_error", "{{ false and missing.attr }}|{{ true or missing.attr }}", {}),
    # ---- conditional expressions ----
    ("ternary.basic", "{{ 'y' if true else 'n' }}|{{ 'y' if false else 'n' }}", {}),
    ("ternary.no_else_is_undefined", "[{{ 'y' if false }}]|[{{ 'y' if true }}]", {}),
    ("ternary.nested", "{{ 'a' if x == 1 else 'b' if x == 2 else 'c' }}", {"x": 2}),
    ("ternary.lowest_precedence", "{{ 'a' ~ 'b' if false else 'c' }}|{{ ('a' if false else 'b') ~ 'c' }}", {}),
    ("ternary.in_set", "{% set r = 'model' if role == 'assistant' else role %}{{ r }}", {"role": "assistant"}),
    ("ternary.no_else_concat", "{{ 'x' ~ ('y' if false) ~ 'z' }}", {}),
    # ---- attribute and subscript access ----
    ("access.attr_and_subscript", "{{ m.role }}|{{ m['role'] }}|{{ m[\"content\"] }}", {"m": {"role": "user", "content": "hi"}}),
    ("access.missing_key_undefined", "[{{ m.missing }}][{{ m['missing'] }}]", {"m": {"role": "user"}}),
    ("access.is_defined", "{{ m.missing is defined }}|{{ m['role'] is defined }}|{{ m.role is defined }}", {"m": {"role": "user"}}),
    ("access.nested", "{{ a.b.c }}|{{ a['b']['c'] }}|{{ a.b['c'] }}|{{ a['b'].c }}", {"a": {"b": {"c": 42}}}),
    ("access.variable_key", "{{ m[k] }}", {"m": {"role": "user"}, "k": "role"}),
    ("access.attr_prefers_dict_method", "{{ d.items is callable }}|{{ d['items'] }}|{{ d.get('items') }}", {"d": {"items": 1}}),
    ("access.undefined_chain_error", "{{ m.missing.deeper }}", {"m": {"role": "user"}}),
    ("access.undefined_subscript_error", "{{ missing['x'] }}", {}),
    ("access.attr_of_none", "[{{ x.a }}][{{ x['a'] }}][{{ x[0] }}]", {"x": None}),
    ("access.list_index", "{{ l[0] }}|{{ l[-1] }}|{{ l[-3] }}|[{{ l[5] }}]|[{{ l[-9] }}]", {"l": [10, 20, 30]}),
    ("access.list_dot_index", "{{ l.0 }}|{{ l.2 }}", {"l": [10, 20, 30]}),
    ("access.string_index", "{{ 'abc'[1] }}|{{ 'abc'[-1] }}|[{{ 'abc'[9] }}]", {}),
    ("access.unicode_string_index", "{{ s[1] }}|{{ s[-1] }}|{{ s|length }}", {"s": "a🌈é"}),
    ("access.tuple_index", "{{ (1, 2)[0] }}|{{ (1, 2)[-1] }}", {}),
    ("access.negative_index_from_loop", "{% for m in messages %}{{ messages[loop.index0 - 1].content }},{% endfor %}", {"messages": MSGS}),
    ("access.sandbox_dunder_attribute", "[{{ ''.__class__ }}][{{ m.__len__ }}]", {"m": {"a": 1}}),
    # ---- slicing ----
    ("slice.list", "{{ l[1:] }}|{{ l[:-1] }}|{{ l[::-1] }}|{{ l[::2] }}|{{ l[-2:] }}|{{ l[5:] }}|{{ l[1:2] }}", {"l": [1, 2, 3, 4]}),
    ("slice.string", "{{ s[1:3] }}|{{ s[::-1] }}|{{ s[:-1] }}|{{ s[-3:] }}|[{{ s[9:] }}]", {"s": "hello"}),
    ("slice.unicode_string", "{{ s[::-1] }}|{{ s[1:] }}", {"s": "a🌈é"}),
    ("slice.messages_skip_system", "{% set rest = messages[1:] %}{{ rest|length }}|{{ rest[0].role }}", {"messages": MSGS}),
    ("slice.tojson_drop_last_char", "{% set out = d|tojson %}{{ out[:-1] }}", {"d": {"name": "f", "arguments": {"x": 1}}}),
    ("slice.variable_bounds", "{{ l[a:b] }}|{{ l[a:] }}", {"l": [1, 2, 3, 4, 5], "a": 1, "b": 3}),
    # ---- for loops ----
    ("for.loop_variables",
     "{% for x in ['a', 'b', 'c'] %}{{ x }}:{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.revindex }}{{ loop.revindex0 }};{% endfor %}", {}),
    ("for.previtem_nextitem", "{% for x in [1, 2, 3] %}[{{ loop.previtem }}|{{ loop.nextitem }}]{% endfor %}", {}),
    ("for.previtem_is_defined", "{% for x in [1, 2] %}{{ loop.previtem is defined }}{{ loop.nextitem is defined }};{% endfor %}", {}),
    ("for.cycle", "{% for x in range(5) %}{{ loop.cycle('odd', 'even') }} {% endfor %}", {}),
    ("for.depth", "{% for x in [1] %}{{ loop.depth }}{{ loop.depth0 }}{% endfor %}", {}),
    ("for.else_on_empty", "{% for x in [] %}x{% else %}empty{% endfor %}", {}),
    ("for.else_not_taken", "{% for x in [1] %}x{% else %}empty{% endfor %}", {}),
    ("for.if_filter_counts_filtered",
     "{% for m in messages if m.role != 'system' %}{{ loop.index }}/{{ loop.length }}:{{ m.role }}{{ '.' if loop.last }} {% endfor %}",
     {"messages": MSGS}),
    ("for.if_filter_all_filtered_else", "{% for x in [1, 2] if x > 5 %}{{ x }}{% else %}none{% endfor %}", {}),
    ("for.dict_items_unpacking", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", {"d": D}),
    ("for.dict_items_filter_unpacking", "{% for k, v in d|items %}{{ k }}={{ v }};{% endfor %}", {"d": D}),
    ("for.dict_iterates_keys", "{% for k in d %}{{ k }},{% endfor %}", {"d": D}),
    ("for.dict_items_with_if", "{% for k, v in d.items() if k != 'a' %}{{ k }}{% endfor %}", {"d": D}),
    ("for.string_iterates_chars", "{% for c in 'ab🌈' %}{{ c }}-{% endfor %}", {}),
    ("for.undefined_iterates_empty", "{% for x in missing %}x{% else %}empty{% endfor %}", {}),
    ("for.none_error", "{% for x in none %}x{% endfor %}", {}),
    ("for.int_error", "{% for x in 3 %}x{% endfor %}", {}),
    ("for.nested_with_outer_loop",
     "{% for a in [1, 2] %}{% set outer = loop %}{% for b in ['x', 'y'] %}{{ outer.index }}{{ loop.index }}{{ a }}{{ b }} {% endfor %}{% endfor %}", {}),
    ("for.nested_loop_variable_shadows", "{% for x in [1, 2] %}{{ loop.index }}{% for y in [1] %}{{ loop.index }}{% endfor %}{% endfor %}", {}),
    ("for.loop_var_does_not_leak", "{% for x in [1, 2] %}{% endfor %}[{{ x }}]", {}),
    ("for.loop_var_shadows_outer", "{% for x in [1] %}{{ x }}{% endfor %}{{ x }}", {"x": "outer"}),
    ("for.break", "{% for x in range(10) %}{% if x == 3 %}{% break %}{% endif %}{{ x }}{% endfor %}", {}),
    ("for.continue", "{% for x in range(6) %}{% if x is odd %}{% continue %}{% endif %}{{ x }}{% endfor %}", {}),
    ("for.break_loop_last_unaffected", "{% for x in [1, 2, 3] %}{{ loop.last }}{% if x == 2 %}{% break %}{% endif %}{% endfor %}", {}),
    ("for.unpack_list_of_lists", "{% for a, b in [[1, 2], [3, 4]] %}{{ a + b }} {% endfor %}", {}),
    ("for.unpack_mismatch_error", "{% for a, b in [[1, 2, 3]] %}{{ a }}{% endfor %}", {}),
    ("for.range_forms", "{% for i in range(3) %}{{ i }}{% endfor %}|{% for i in range(1, 10, 3) %}{{ i }}{% endfor %}|{% for i in range(5, 0, -2) %}{{ i }}{% endfor %}|{% for i in range(0) %}x{% endfor %}|{% for i in range(-2) %}x{% endfor %}", {}),
    ("for.index_neighbours_pattern",
     "{% for m in messages %}{% if loop.last or messages[loop.index0 + 1].role != 'assistant' %}{{ m.content }};{% endif %}{% endfor %}",
     {"messages": MSGS}),
    ("for.loop_in_reversed_slice", "{% for m in messages[::-1] %}{{ (messages|length - 1) - loop.index0 }}{% endfor %}", {"messages": MSGS}),
    ("for.recursive", "{% for n in tree recursive %}[{{ n.name }}{% if n.children %}{{ loop(n.children) }}{% endif %}]{% endfor %}",
     {"tree": [{"name": "a", "children": [{"name": "b", "children": []}]}, {"name": "c"}]}),
    # ---- if / elif / else ----
    ("if.elif_else_chain", "{% for x in [1, 2, 3] %}{% if x == 1 %}one{% elif x == 2 %}two{% else %}other{% endif %},{% endfor %}", {}),
    ("if.undefined_is_false", "{% if missing %}y{% else %}n{% endif %}", {}),
    ("if.undefined_attribute_of_undefined_error", "{% if missing.attr %}y{% endif %}", {}),
    ("if.is_defined_does_not_guard_deep_chain", "{% if m.missing.attr is defined %}y{% else %}n{% endif %}", {"m": {"a": 1}}),
    ("if.guarded_chain", "{% if m.tool_calls is defined and m.tool_calls is not none %}{{ m.tool_calls|length }}{% else %}none{% endif %}", {"m": {"role": "assistant"}}),
    ("if.nested", "{% if a %}{% if b %}ab{% else %}a{% endif %}{% endif %}", {"a": True, "b": False}),
    # ---- set and scoping ----
    ("set.basic", "{% set x = 1 %}{{ x }}", {}),
    ("set.block_break_applies_to_loop",
     "{% for i in [1, 2, 3] %}{% set x %}a{{ i }}{% if i == 2 %}{% break %}{% endif %}b"
     "{% endset %}[{{ x }}]{% endfor %}", {}),
    ("filter.block_continue_applies_to_loop",
     "{% for i in [1, 2, 3] %}{% filter upper %}a{{ i }}{% if i == 2 %}{% continue %}{% endif %}"
     "b{% endfilter %}|{% endfor %}", {}),
    ("set.overrides_context", "{% set x = 'new' %}{{ x }}", {"x": "old"}),
    ("set.in_for_does_not_leak", "{% set x = 0 %}{% for i in [1, 2] %}{% set x = i %}{% endfor %}{{ x }}", {}),
    ("set.in_for_visible_in_iteration", "{% for i in [1, 2] %}{% set y = i * 10 %}{{ y }} {% endfor %}", {}),
    ("set.in_for_not_carried_to_next_iteration",
     "{% for i in [1, 2, 3] %}{% if i == 1 %}{% set s = 'first' %}{% endif %}[{{ s }}]{% endfor %}", {}),
    ("set.in_for_accumulate_fails", "{% set s = '' %}{% for i in [1, 2] %}{% set s = s ~ i %}{% endfor %}[{{ s }}]", {}),
    ("set.in_if_leaks", "{% if true %}{% set x = 5 %}{% endif %}{{ x }}", {}),
    ("set.in_if_inside_for_stays_in_for", "{% for i in [1] %}{% if true %}{% set x = 5 %}{% endif %}{{ x }}{% endfor %}[{{ x }}]", {}),
    ("set.namespace_counter", "{% set ns = namespace(count=0) %}{% for i in [1, 2, 3] %}{% set ns.count = ns.count + i %}{% endfor %}{{ ns.count }}", {}),
    ("set.namespace_empty_then_assign", "{% set ns = namespace() %}{% set ns.a = 1 %}{{ ns.a }}", {}),
    ("set.namespace_missing_attr_undefined", "{% set ns = namespace(a=1) %}[{{ ns.b }}]{{ ns.b is defined }}", {}),
    ("set.namespace_flag_in_loop",
     "{% set ns = namespace(found=false) %}{% for m in messages %}{% if m.role == 'system' %}{% set ns.found = true %}{% endif %}{% endfor %}{{ ns.found }}",
     {"messages": MSGS}),
    ("set.namespace_multiple_attrs", "{% set ns = namespace(a=1, b='x', c=none) %}{{ ns.a }}{{ ns.b }}{{ ns.c }}", {}),
    ("set.attribute_on_non_namespace_error", "{% set d = {} %}{% set d.a = 1 %}{{ d }}", {}),
    ("set.tuple_target", "{% set a, b = 1, 2 %}{{ a }}{{ b }}", {}),
    ("set.tuple_target_from_list", "{% set a, b = [3, 4] %}{{ a }}{{ b }}", {}),
    ("set.tuple_target_mismatch_error", "{% set a, b = [1, 2, 3] %}{{ a }}", {}),
    ("set.block", "{% set x %}Hello {{ 'W' }}!{% endset %}[{{ x }}]", {}),
    ("set.block_with_filter", "{% set x | upper %}abc{% endset %}{{ x }}", {}),
    ("set.block_trim_blocks", "{% set x %}\n  line\n{% endset %}[{{ x }}]", {}),
    ("set.reassign_messages", "{% if messages[0].role == 'system' %}{% set sys = messages[0].content %}{% set messages = messages[1:] %}{% endif %}{{ sys }}|{{ messages|length }}|{{ messages[0].content }}", {"messages": MSGS}),
    ("set.default_if_not_defined", "{% if not x is defined %}{% set x = 'dflt' %}{% endif %}{{ x }}", {}),
    ("set.default_if_defined_keeps", "{% if not x is defined %}{% set x = 'dflt' %}{% endif %}{{ x }}", {"x": "given"}),
    ("set.with_block", "{% with a = 1 %}{{ a }}{% endwith %}[{{ a }}]", {}),
    # ---- macros ----
    ("macro.defaults_and_kwargs",
     "{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('Bob') }}|{{ greet('Al', '?') }}|{{ greet(name='Z', punct='.') }}|{{ greet(punct=';', name='K') }}", {}),
    ("macro.missing_argument_undefined", "{% macro f(a) %}[{{ a }}]{% endmacro %}{{ f() }}", {}),
    ("macro.too_many_args_error", "{% macro f(a) %}{{ a }}{% endmacro %}{{ f(1, 2) }}", {}),
    ("macro.unknown_kwarg_error", "{% macro f(a) %}{{ a }}{% endmacro %}{{ f(b=1) }}", {}),
    ("macro.varargs_kwargs", "{% macro f() %}{{ varargs }}|{{ kwargs }}{% endmacro %}{{ f(1, 2, a=3) }}", {}),
    ("macro.whitespace_inside",
     "{%- macro item(x) %}\n    {{- '<' + x + '>' }}\n{%- endmacro %}\n{{- item('a') }}{{ item('b') }}", {}),
    ("macro.result_concat", "{% macro m() %}ab{% endmacro %}{{ m() ~ 'c' }}|{{ m() + 'c' }}|{{ m()|length }}|{{ m()|upper }}", {}),
    ("macro.recursion",
     "{% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n * fact(n - 1)|int }}{% endif %}{% endmacro %}{{ fact(5) }}", {}),
    ("macro.sees_template_level_set", "{% set g = 'G' %}{% macro f() %}{{ g }}{% endmacro %}{{ f() }}", {}),
    ("macro.sees_context", "{% macro f() %}{{ ctxvar }}{% endmacro %}{{ f() }}", {"ctxvar": "C"}),
    ("macro.set_inside_does_not_leak", "{% set x = 1 %}{% macro f() %}{% set x = 2 %}{{ x }}{% endmacro %}{{ f() }}{{ x }}", {}),
    ("macro.used_before_definition_error", "{{ f() }}{% macro f() %}x{% endmacro %}", {}),
    ("macro.caller", "{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('b') %}inner{% endcall %}", {}),
    ("macro.dict_literal_lookup_in_macro",
     "{%- macro t(spec) %}{%- set m = {'string': 'str', 'integer': 'int'} %}{%- if m[spec.type] is defined %}{{- m[spec.type] }}{%- else %}{{- 'Any' }}{%- endif %}{%- endmacro %}{{ t({'type': 'string'}) }},{{ t({'type': 'array'}) }},{{ t({}) }}", {}),
    # ---- transformers extensions and globals ----
    ("ext.generation_block", "a{% generation %}[{{ 'b' }}]{% endgeneration %}c", {}),
    ("ext.generation_whitespace", "a\n  {%- generation -%}\n  b\n  {%- endgeneration %}\nc", {}),
    ("ext.loopcontrols_loaded", "{% for i in [1, 2, 3] %}{% if i == 2 %}{% continue %}{% endif %}{{ i }}{% endfor %}", {}),
    ("global.raise_exception", "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}", {}),
    ("global.raise_exception_in_untaken_branch", "{% if false %}{{ raise_exception('no') }}{% endif %}ok", {}),
    ("global.raise_exception_after_output", "partial{% if true %}{{ raise_exception(\"bad 'role'\") }}{% endif %}", {}),
    ("global.strftime_now_is_defined", "{{ strftime_now is defined }}|{{ strftime_now is callable }}", {}),
    ("global.strftime_now_frozen", "{{ strftime_now('%d %b %Y') }}|{{ strftime_now('%Y-%m-%d') }}", {}),
    ("global.range_list", "{{ range(3)|list }}|{{ range(1, 10, 3)|list }}|{{ range(5, 0, -2)|list }}|{{ range(0)|list }}", {}),
    ("global.range_too_large_error", "{{ range(100001)|length }}", {}),
    ("global.dict", "{{ dict(a=1, b='x') }}|{{ dict() }}", {}),
    ("global.namespace_is_defined", "{{ namespace is defined }}|{{ raise_exception is defined }}", {}),
    ("global.joiner", "{% set j = joiner(', ') %}{% for x in [1, 2, 3] %}{{ j() }}{{ x }}{% endfor %}", {}),
    ("global.undefined_function_error", "{{ nope() }}", {}),
    ("global.context_variable_named_like_global", "{{ range }}", {"range": "shadowed"}),
    # ---- filters ----
    ("filter.trim", "[{{ '  a b \n'|trim }}]|[{{ 'xxaxx'|trim('x') }}]|[{{ '\t\n'|trim }}]", {}),
    ("filter.trim_unicode_whitespace", "[{{ s|trim }}]", {"s": "\u00a0\u2003x\u3000\u2028"}),
    ("filter.tojson_basic", "{{ d|tojson }}", {"d": {"a": 1, "b": [1, 2.5, None, True], "c": "é\"<>&'", "e": {}}}),
    ("filter.tojson_key_order_preserved", "{{ d|tojson }}", {"d": D}),
    ("filter.tojson_indent_2", "{{ d|tojson(indent=2) }}", {"d": {"a": [1, {"b": None}], "e": [], "f": {}}}),
    ("filter.tojson_indent_4_nested", "{{ d|tojson(indent=4) }}", {"d": {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}}}}),
    ("filter.tojson_positional_indent", "{{ [1, 2]|tojson(2) }}", {}),
    ("filter.tojson_unicode_not_escaped", "{{ s|tojson }}", {"s": "é世🌈\u00a0"}),
    ("filter.tojson_ensure_ascii_true", "{{ s|tojson(ensure_ascii=true) }}", {"s": "é世🌈"}),
    ("filter.tojson_control_chars", "{{ s|tojson }}", {"s": "a\nb\t\"\\\u0001\u007f\u2028"}),
    ("filter.tojson_html_chars_not_escaped", "{{ '<script>&\\'x\\''|tojson }}", {}),
    ("filter.tojson_floats", "{{ [1.0, 2.5, 1e20, 1e-7, 0.1, 100.0, 3]|tojson }}", {}),
    ("filter.tojson_float_from_context", "{{ d|tojson }}", {"d": {"f": 3.0, "g": 0.5, "i": 3}}),
    ("filter.tojson_separators", "{{ d|tojson(separators=(',', ':')) }}", {"d": {"a": [1, 2], "b": "c"}}),
    ("filter.tojson_sort_keys", "{{ d|tojson(sort_keys=true) }}", {"d": D}),
    ("filter.tojson_scalars", "{{ none|tojson }}|{{ true|tojson }}|{{ 'a\"b'|tojson }}|{{ 5|tojson }}", {}),
    ("filter.tojson_tuple", "{{ (1, 'a')|tojson }}", {}),
    ("filter.tojson_int_keys", "{{ {1: 'a'}|tojson }}", {}),
    # Integer keys (Seed-OSS's template keeps its thinking-budget table in one).
    ("dict.int_keys_subscript", "{% set d = {0: 'a', 512: 'b', '512': 'c'} %}{{ d[512] }}|{{ d['512'] }}|{{ d[0] }}|{{ d[1] is defined }}", {}),
    ("dict.int_keys_repr", "{{ {0: 1, 'a': 2, -3: [4]} }}", {}),
    ("dict.int_keys_dictsort", "{% for k, v in {16384: 1, 0: 2, 512: 3}|dictsort %}{{ k * 2 }}={{ v }};{% endfor %}", {}),
    ("dict.int_keys_items_in_get", "{% set d = {1: 'x'} %}{{ 1 in d }}|{{ '1' in d }}|{{ d.get(1) }}|{% for k, v in d.items() %}{{ k + 1 }}{% endfor %}|{{ d|items|list }}|{{ d|list }}", {}),
    ("dict.int_keys_tojson_sorted", "{{ {10: 'a', 9: 'b', -1: 'c'}|tojson(sort_keys=true) }}", {}),
    ("dict.int_and_str_keys_tojson_sorted_error", "{{ {10: 'a', 'x': 'b'}|tojson(sort_keys=true) }}", {}),
    ("dict.float_key", "{{ {1.5: 'a'} }}", {}),
    ("filter.tojson_undefined_error", "{{ missing|tojson }}", {}),
    # ---- the message of each kind of undefined value, when it is used ----
    ("undefined.first_of_empty_error", "{{ ([]|first).x }}", {}),
    ("undefined.last_of_empty_error", "{{ ([]|last).x }}", {}),
    ("undefined.max_of_empty_error", "{{ ([]|max).x }}", {}),
    ("undefined.min_of_empty_error", "{{ ([]|min) + 1 }}", {}),
    ("undefined.inline_if_without_else_error", "\n{{ (1 if false).x }}", {}),
    ("undefined.attribute_of_none_error", "{{ m.x.y }}", {"m": None}),
    ("undefined.list_element_error", "{{ [1][5].y }}", {}),
    ("undefined.list_attribute_error", "{{ [1].x.y }}", {}),
    ("undefined.string_element_error", "{{ 'ab'[5].y }}", {}),
    ("undefined.dict_int_key_error", "{{ {'a': 1}[3].y }}", {}),
    ("undefined.dict_subscript_error", "{{ m['content'].y }}", {"m": {"role": "user"}}),
    ("undefined.key_with_quote_error", "{{ m[\"it's\"].y }}", {"m": {}}),
    ("undefined.namespace_attribute_error", "{% set ns = namespace() %}{{ ns.b.y }}", {}),
    ("undefined.int_attribute_error", "{{ (5).x.y }}", {}),
    ("undefined.map_attribute_path_error", "{{ (m|map(attribute='a.5')|first) + 1 }}", {"m": [{"a": [1]}]}),
    ("undefined.map_missing_attribute_error", "{{ (m|map(attribute='b.c')|first) + 1 }}", {"m": [{"a": 1}]}),
    ("undefined.compared_left_error", "{{ missing < 1 }}", {}),
    ("undefined.compared_right_error", "{{ 1 >= missing }}", {}),
    ("undefined.sorted_error", "{{ [1, missing]|sort }}", {}),
    ("for.unpack_too_few_error", "{% for a, b, c in [[1, 2]] %}{% endfor %}", {}),
    ("for.unpack_non_iterable_error", "{% for a, b in [5] %}{% endfor %}", {}),
    ("set.unpack_too_few_error", "{% set a, b = [1] %}", {}),
    ("set.unpack_non_iterable_error", "{% set a, b = 5 %}", {}),
    ("math.float_division_by_zero_error", "{{ 1.0 / 0 }}", {}),
    ("math.float_modulo_by_zero_error", "{{ 1.5 % 0 }}", {}),
    ("math.float_floor_division_by_zero_error", "{{ 1.0 // 0 }}", {}),
    ("math.list_plus_string_error", "{{ [1] + 'a' }}", {}),
    ("dict.update_is_unsafe_with_args_error", "{% set d = {} %}{{ d.update(a=1) }}", {}),
    ("test.unknown_in_if_error", "{% if 1 is nope %}x{% endif %}", {}),
    ("test.unknown_in_untaken_elif", "{% if true %}a{% elif 1 is nope %}b{% endif %}", {}),
    ("filter.select_unknown_test_error", "{{ [1]|select('nope')|list }}", {}),
    ("filter.map_unknown_filter_error", "{{ [1]|map('nope')|list }}", {}),
    ("syntax.continue_outside_loop_error", "{% continue %}", {}),
    ("filter.tojson_string_arguments_double_encoded", "{{ args|tojson }}", {"args": "{\"city\": \"Paris\"}"}),
    ("filter.length_count", "{{ 'abc'|length }}|{{ [1, 2]|length }}|{{ {'a': 1}|length }}|{{ 'abc'|count }}|{{ 'é🌈'|length }}", {}),
    ("filter.length_undefined", "{{ missing|length }}", {}),
    ("filter.length_none_error", "{{ none|length }}", {}),
    ("filter.case", "{{ 'hELLO wORLD'|upper }}|{{ 'HeLLo'|lower }}|{{ 'hELLO wORLD'|capitalize }}|{{ 'hello big-world'|title }}", {}),
    ("filter.title_vs_str_title", "{{ s|title }}|{{ s.title() }}", {"s": "o'neil mc-donald (x) 3rd"}),
    ("filter.upper_unicode", "{{ 'straße éa'|upper }}", {}),
    ("filter.default", "{{ missing|default('d') }}|{{ none|default('d') }}|[{{ ''|default('d') }}]|{{ false|default('d') }}", {}),
    ("filter.default_boolean", "{{ ''|default('d', true) }}|{{ none|d('x', true) }}|{{ 0|default(5, boolean=true) }}|{{ 'v'|default('d', true) }}", {}),
    ("filter.default_then_filter", "{{ missing|default([])|length }}|{{ missing|default('x')|upper }}", {}),
    ("filter.first_last", "{{ [1, 2, 3]|first }}|{{ [1, 2, 3]|last }}|{{ 'abc'|first }}|{{ 'abc'|last }}|[{{ []|first }}]|[{{ missing|first }}]", {}),
    ("filter.join", "{{ [1, 2, 3]|join }}|{{ ['a', 'b']|join(', ') }}|{{ [1, none, true]|join('-') }}|[{{ []|join(',') }}]", {}),
    ("filter.join_attribute", "{{ users|join(', ', attribute='name') }}", {"users": USERS}),
    ("filter.join_undefined", "[{{ missing|join(',') }}]", {}),
    ("filter.replace", "{{ 'aaa'|replace('a', 'b') }}|{{ 'aaa'|replace('a', 'b', 2) }}|{{ 'a.b'|replace('.', '') }}", {}),
    ("filter.string", "{{ 1|string }}|{{ [1, 'a']|string }}|{{ none|string }}|{{ (1|string) + 'x' }}|[{{ missing|string }}]", {}),
    ("filter.int", "{{ '42'|int }}|{{ '4.7'|int }}|{{ 'abc'|int }}|{{ 'abc'|int(-1) }}|{{ 3.9|int }}|{{ -3.9|int }}|{{ '0x1A'|int(0, 16) }}|{{ true|int }}", {}),
    ("filter.float", "{{ '2.5'|float }}|{{ 3|float }}|{{ 'x'|float }}|{{ 'x'|float(1.5) }}", {}),
    ("filter.list", "{{ 'abc'|list }}|{{ {'a': 1, 'b': 2}|list }}|{{ range(3)|list }}|{{ missing|list }}", {}),
    ("filter.items", "{{ {'a': 1}|items|list }}|{{ missing|items|list }}", {}),
    ("filter.dictsort", "{{ d|dictsort }}|{{ d|dictsort(by='value') }}|{{ d|dictsort(reverse=true) }}", {"d": {"b": 1, "A": 3, "a": 2}}),
    ("filter.dictsort_case_sensitive", "{{ d|dictsort(true) }}", {"d": {"b": 1, "A": 3, "a": 2}}),
    ("filter.selectattr_equalto", "{{ messages|selectattr('role', 'equalto', 'user')|list|length }}|{{ (messages|selectattr('role', 'equalto', 'user')|list)[-1].content }}", {"messages": MSGS}),
    ("filter.selectattr_eq_alias_and_ops", "{{ users|selectattr('age', '==', 25)|map(attribute='name')|list }}|{{ users|selectattr('age', 'gt', 30)|map(attribute='name')|list }}|{{ users|selectattr('age', 'ne', 25)|map(attribute='name')|list }}", {"users": USERS}),
    # A falsy operand selects nothing, whatever the arguments (functionary v3.1's template runs
    # `tools|selectattr(...)` with tools none).
    ("filter.select_on_falsy", "{{ x|selectattr('type', 'equalto', 'a')|list }}|{{ x|rejectattr('y')|list }}|{{ 0|select|list }}|{{ ''|reject('nope')|list }}", {"x": None}),
    ("filter.selectattr_defined_none", "{{ users|selectattr('email', 'defined')|map(attribute='name')|list }}|{{ users|selectattr('email', 'none')|map(attribute='name')|list }}|{{ users|selectattr('email', 'undefined')|map(attribute='name')|list }}", {"users": USERS}),
    ("filter.selectattr_truthy", "{{ users|selectattr('admin')|map(attribute='name')|join(',') }}|{{ users|rejectattr('admin')|map(attribute='name')|join(',') }}", {"users": USERS}),
    ("filter.selectattr_in", "{{ messages|selectattr('role', 'in', ['user', 'assistant'])|list|length }}", {"messages": MSGS}),
    ("filter.selectattr_dotted", "{{ users|selectattr('team.name', 'equalto', 'red')|map(attribute='name')|list }}", {"users": USERS}),
    ("filter.rejectattr_equalto", "{{ messages|rejectattr('role', 'equalto', 'system')|map(attribute='role')|list }}", {"messages": MSGS}),
    ("filter.select_reject_tests", "{{ [1, 2, 3, 4]|select('odd')|list }}|{{ ['a', '', none, 0, 'b']|select|list }}|{{ ['x', 'code_interpreter', 'y']|reject('equalto', 'code_interpreter')|join(', ') }}|{{ [1, 2, 3]|select('gt', 1)|list }}", {}),
    ("filter.map", "{{ users|map(attribute='name')|list }}|{{ ['a', 'b']|map('upper')|list }}|{{ [1, 2]|map('string')|join('+') }}|{{ users|map(attribute='team.name')|list }}|{{ users|map(attribute='email', default='-')|list }}", {"users": USERS}),
    ("filter.map_with_filter_args", "{{ ['a-b', 'c-d']|map('replace', '-', '_')|list }}", {}),
    ("filter.reverse", "{{ [1, 2, 3]|reverse|list }}|{{ 'abc'|reverse }}|{{ [1, 2, 3]|reverse|join(',') }}", {}),
    ("filter.sort", "{{ [3, 1, 2]|sort }}|{{ [3, 1, 2]|sort(reverse=true) }}|{{ ['b', 'B', 'a']|sort }}|{{ ['b', 'B', 'a']|sort(case_sensitive=true) }}", {}),
    ("filter.sort_attribute", "{{ users|sort(attribute='age')|map(attribute='name')|join(',') }}|{{ users|sort(attribute='age', reverse=true)|map(attribute='name')|join(',') }}", {"users": USERS}),
    ("filter.unique", "{{ [1, 2, 1, 3]|unique|list }}|{{ ['a', 'A', 'b']|unique|list }}|{{ ['a', 'A']|unique(case_sensitive=true)|list }}", {}),
    ("filter.min_max", "{{ [3, 1, 2]|min }}|{{ [3, 1, 2]|max }}|{{ ['b', 'A']|max }}|{{ ['b', 'A']|min }}|{{ (users|max(attribute='age')).name }}|{{ (users|min(attribute='age')).name }}", {"users": USERS}),
    ("filter.sum", "{{ [1, 2, 3]|sum }}|{{ [1.5, 2]|sum }}|{{ [1, 2]|sum(start=10) }}|{{ users|sum(attribute='age') }}|{{ []|sum }}", {"users": USERS}),
    ("filter.abs_after_unary_minus", "{{ -3|abs }}|{{ (-3)|abs }}|{{ -2.5|abs }}|{{ x|abs }}", {"x": -4}),
    ("filter.round", "{{ 2.5|round }}|{{ 3.5|round }}|{{ 3.14159|round(2) }}|{{ 2.1|round(0, 'ceil') }}|{{ 2.9|round(0, 'floor') }}|{{ 5|round }}|{{ -2.5|round }}", {}),
    ("filter.indent", "[{{ 'a\nb\nc'|indent(2) }}]|[{{ 'a\nb'|indent(2, first=true) }}]|[{{ 'a\n\nb\n'|indent(2) }}]|[{{ 'a\n\nb'|indent(2, blank=true) }}]|[{{ 'a\nb'|indent }}]|[{{ 'a\nb'|indent('> ') }}]", {}),
    ("filter.indent_tojson_pattern", "{{ d|tojson(indent=4)|indent(8) }}", {"d": {"a": 1, "b": [1, 2]}}),
    ("filter.indent_first_on_literal", "{{ '{\\n'|indent(4, first=true) }}{{ '\"k\": '|indent(8, first=true) }}", {}),
    ("filter.safe_and_no_autoescape", "{{ '<b>&' }}|{{ '<b>&'|safe }}", {}),
    ("filter.escape", "{{ '<a href=\"x\">&\\'y\\''|escape }}|{{ '<'|e }}", {}),
    ("filter.escape_then_concat", "{{ ('<'|e) ~ '<' }}|{{ ('<'|e) + '<' }}", {}),
    ("filter.wordcount", "{{ 'hello big  world'|wordcount }}|{{ ''|wordcount }}", {}),
    ("filter.center", "[{{ 'ab'|center(6) }}]|[{{ 'ab'|center(5) }}]", {}),
    ("filter.format", "{{ '%s-%d'|format('a', 3) }}|{{ '%(x)s!'|format(x='y') }}", {}),
    ("filter.attr", "[{{ d|attr('x') }}]|{{ d|attr('items') is callable }}", {"d": {"x": 1}}),
    ("filter.chaining_precedence", "{{ 'a' ~ 'b'|upper }}|{{ ('a' ~ 'b')|upper }}|{{ messages|length - 1 }}|{{ not [] |length }}", {"messages": MSGS}),
    ("filter.plus_string_filter_error", "{{ 1 + 2|string }}", {}),
    ("filter.on_undefined_soft", "[{{ missing|upper }}][{{ missing|trim }}][{{ missing|lower }}][{{ missing|capitalize }}]", {}),
    ("filter.unknown_compile_error", "{{ x|nope }}", {"x": 1}),
    ("filter.unknown_in_untaken_if_branch_deferred", "{% if false %}{{ x|nope }}{% endif %}ok", {}),
    ("filter.unknown_in_taken_if_branch_error", "{% if true %}{{ x|nope }}{% endif %}ok", {"x": 1}),
    ("test.unknown_in_untaken_if_branch_deferred", "{% if false %}{{ 1 is nope }}{% endif %}ok", {}),
    ("filter.is_filter_test", "{{ 'upper' is filter }}|{{ 'nope' is filter }}|{{ 'odd' is test }}|{{ 'nope' is test }}", {}),
    ("filter.unknown_guarded_by_is_filter", "{% if 'nope' is filter %}{{ x|nope }}{% else %}guarded{% endif %}", {"x": 1}),
    ("filter.call_syntax_without_parens", "{{ l|join }}|{{ l|join() }}|{{ l | join(', ') }}", {"l": ["a", "b"]}),
    # ---- tests ----
    ("test.defined_undefined", "{{ x is defined }}|{{ y is defined }}|{{ x is undefined }}|{{ y is undefined }}|{{ none is defined }}", {"x": 1}),
    ("test.not_forms", "{{ not y is defined }}|{{ y is not defined }}|{{ not (y is defined) }}|{{ x is not none }}", {"x": 1}),
    ("test.none", "{{ none is none }}|{{ x is none }}|{{ y is none }}|{{ y is not none }}|{{ 0 is none }}", {"x": None}),
    ("test.none_vs_undefined_llama_pattern", "{% if not tools is defined %}{% set tools = none %}{% endif %}{{ tools is not none }}|{{ tools is none }}", {}),
    ("test.passed_none_is_defined", "{{ tools is defined }}|{{ tools is none }}|{% if tools %}T{% else %}F{% endif %}", {"tools": None}),
    ("test.string", "{{ 'a' is string }}|{{ 1 is string }}|{{ none is string }}|{{ y is string }}|{{ ('<'|e) is string }}", {}),
    ("test.number_integer_float", "{{ 1 is number }}|{{ 1.5 is number }}|{{ true is number }}|{{ 'a' is number }}|{{ 1 is integer }}|{{ true is integer }}|{{ 1.0 is integer }}|{{ 1.0 is float }}|{{ 1 is float }}", {}),
    ("test.boolean_true_false", "{{ true is boolean }}|{{ 1 is boolean }}|{{ true is true }}|{{ 1 is true }}|{{ false is false }}|{{ 0 is false }}|{{ none is false }}", {}),
    ("test.mapping", "{{ {} is mapping }}|{{ [] is mapping }}|{{ 'a' is mapping }}|{{ m is mapping }}", {"m": {"a": 1}}),
    ("test.iterable", "{{ 'abc' is iterable }}|{{ [] is iterable }}|{{ {} is iterable }}|{{ 1 is iterable }}|{{ none is iterable }}|{{ y is iterable }}", {}),
    ("test.sequence", "{{ 'abc' is sequence }}|{{ [] is sequence }}|{{ {} is sequence }}|{{ 1 is sequence }}|{{ y is sequence }}", {}),
    ("test.callable", "{{ range is callable }}|{{ 'a'.upper is callable }}|{{ 1 is callable }}|{{ raise_exception is callable }}|{{ d.get is callable }}", {"d": {}}),
    ("test.divisibleby_odd_even", "{{ 9 is divisibleby 3 }}|{{ 9 is divisibleby(4) }}|{{ 3 is odd }}|{{ 3 is even }}|{{ 0 is even }}|{{ -1 is odd }}", {}),
    ("test.eq_ne_lt_gt", "{{ 1 is eq 1 }}|{{ 'a' is equalto 'a' }}|{{ 1 is ne 2 }}|{{ 1 is lt 2 }}|{{ 3 is gt 2 }}|{{ 2 is ge 2 }}|{{ 2 is le 1 }}|{{ 1 is lessthan 2 }}|{{ 1 is greaterthan 2 }}", {}),
    ("test.in", "{{ 'a' is in 'abc' }}|{{ 2 is in [1, 2] }}|{{ 'k' is in {'k': 1} }}|{{ 3 is in [1, 2] }}", {}),
    ("test.sameas", "{{ none is sameas none }}|{{ x is sameas false }}|{{ 0 is sameas false }}|{{ true is sameas true }}", {"x": False}),
    ("test.lower_upper", "{{ 'abc' is lower }}|{{ 'ABC' is upper }}|{{ 'Abc' is lower }}|{{ 'Abc' is upper }}|{{ 'a1' is lower }}", {}),
    ("test.precedence_binds_tighter_than_plus", "{{ 1 + 1 is even }}|{{ (1 + 1) is even }}", {}),
    ("test.not_with_test", "{{ not x is none }}|{{ not x is string }}", {"x": "s"}),
    ("test.unknown_test_error", "{{ 1 is nope }}", {}),
    ("test.in_if_chain_pattern", "{% if x is defined and x is not none and x|length > 0 %}yes{% else %}no{% endif %}", {"x": "v"}),
    # ---- string methods ----
    ("str.strip_family", "[{{ '  a  '.strip() }}][{{ 'xxaxx'.strip('x') }}][{{ '\n\na\n'.lstrip('\n') }}][{{ 'a\n\n'.rstrip('\n') }}][{{ '  a  '.lstrip() }}][{{ '  a  '.rstrip() }}]", {}),
    ("str.strip_multiple_chars", "[{{ '<>a<>'.strip('<>') }}][{{ 'abcXcba'.strip('abc') }}]", {}),
    ("str.split", "{{ 'a b  c'.split() }}|{{ 'a,b,,c'.split(',') }}|{{ 'a,b,c'.split(',', 1) }}|{{ ' a b '.split(' ') }}|{{ ''.split() }}|{{ ''.split(',') }}", {}),
    ("str.split_index", "{{ 'x</think>y</think>z'.split('</think>')[-1] }}|{{ 'x</think>y'.split('</think>')[0] }}|{{ 'no tag'.split('</think>')[-1] }}", {}),
    ("str.rsplit", "{{ 'a,b,c'.rsplit(',', 1) }}|{{ 'a b c'.rsplit(None, 1) }}", {}),
    ("str.split_empty_separator_error", "{{ 'abc'.split('') }}", {}),
    ("str.startswith_endswith", "{{ 'hello'.startswith('he') }}|{{ 'hello'.endswith('lo') }}|{{ 'hello'.endswith(('x', 'lo')) }}|{{ 'hello'.startswith('') }}|{{ 'hello'.startswith('l', 2) }}", {}),
    ("str.case_methods", "{{ 'hello World'.upper() }}|{{ 'Hello'.lower() }}|{{ 'hello world'.title() }}|{{ 'hELLO'.capitalize() }}|{{ 'Hello'.swapcase() }}", {}),
    ("str.replace", "{{ 'aXbX'.replace('X', '-') }}|{{ 'aXbX'.replace('X', '-', 1) }}|{{ 'abc'.replace('', '.') }}", {}),
    ("str.find_count_index", "{{ 'hello'.find('l') }}|{{ 'hello'.find('z') }}|{{ 'hello'.rfind('l') }}|{{ 'hello'.count('l') }}|{{ 'hello'.index('e') }}", {}),
    ("str.index_not_found_error", "{{ 'hello'.index('z') }}", {}),
    ("str.format", "{{ '{} and {}'.format('a', 1) }}|{{ '{name}!'.format(name='x') }}|{{ '{0}{0}'.format('r') }}", {}),
    ("str.join", "{{ ', '.join(['a', 'b']) }}|{{ ''.join('abc') }}|{{ '-'.join(l) }}", {"l": ["x", "y"]}),
    ("str.join_non_string_error", "{{ ''.join(['a', 1]) }}", {}),
    ("str.predicates", "{{ '123'.isdigit() }}|{{ 'abc'.isalpha() }}|{{ ' '.isspace() }}|{{ 'a1'.isalnum() }}|{{ 'Ab'.islower() }}|{{ 'AB'.isupper() }}", {}),
    ("str.splitlines", "{{ 'a\nb\r\nc'.splitlines() }}", {}),
    ("str.removeprefix_suffix", "{{ 'prefix-x'.removeprefix('prefix-') }}|{{ 'x.json'.removesuffix('.json') }}", {}),
    ("str.method_on_context_value", "{{ m.content.strip() }}|{{ m.role.upper() }}", {"m": {"role": "user", "content": "  hi  "}}),
    ("str.method_on_undefined_error", "{{ missing.strip() }}", {}),
    ("str.unknown_method_error", "{{ 'a'.nope() }}", {}),
    ("str.method_chain", "{{ '  A,B  '.strip().lower().split(',') }}", {}),
    # ---- dict and list methods ----
    ("dict.keys_values_items", "{{ d.keys()|list }}|{{ d.values()|list }}|{{ d.items()|list }}", {"d": D}),
    ("dict.get", "{{ d.get('a') }}|{{ d.get('zz') }}|{{ d.get('zz', 'dflt') }}|{{ d.get('a', 'dflt') }}", {"d": D}),
    ("dict.in_keys", "{{ 'a' in d.keys() }}|{{ 2 in d.values() }}", {"d": D}),
    ("dict.update_is_unsafe_error", "{% set d = {'a': 1} %}{{ d.update({'b': 2}) }}", {}),
    ("dict.pop_is_unsafe_error", "{{ d.pop('a') }}", {"d": {"a": 1}}),
    ("list.index_count", "{{ l.index(20) }}|{{ l.count(10) }}", {"l": [10, 20, 10]}),
    ("list.append_is_unsafe_error", "{% set l = [] %}{{ l.append(1) }}", {}),
    ("list.concat_does_not_mutate", "{% set l = [1] %}{% set m = l + [2] %}{{ l }}|{{ m }}", {}),
    # ---- undefined behaviours (collected) ----
    ("undefined.concat_tilde", "{{ missing ~ 'a' }}", {}),
    ("undefined.plus_string_error", "{{ missing + 'a' }}", {}),
    ("undefined.equality", "{{ missing == missing2 }}|{{ missing != none }}|{{ missing == '' }}", {}),
    ("undefined.attribute_error", "{{ missing.attr }}", {}),
    ("undefined.call_error", "{{ missing() }}", {}),
    ("undefined.in_if_with_and", "{% if missing and missing.attr %}y{% else %}n{% endif %}", {}),
    ("undefined.length_and_iteration", "{{ missing|length }}|{% for x in missing %}x{% endfor %}|{{ missing|list }}", {}),
    ("undefined.is_tests", "{{ missing is none }}|{{ missing is string }}|{{ missing is mapping }}|{{ missing is number }}", {}),
    ("undefined.comparison_error", "{{ missing < 1 }}", {}),
    # ---- syntax errors ----
    ("syntax.unclosed_if_error", "{% if true %}x", {}),
    ("syntax.unmatched_endif_error", "x{% endif %}", {}),
    ("syntax.empty_if_error", "{% if %}x{% endif %}", {}),
    ("syntax.unknown_tag_error", "{% foo %}", {}),
    ("syntax.unclosed_expression_error", "{{ 'a' ", {}),
    ("syntax.empty_expression_error", "{{ }}", {}),
    ("syntax.break_outside_loop_error", "{% break %}", {}),
    ("syntax.bad_operator_error", "{{ 1 === 1 }}", {}),
    ("syntax.unterminated_string_error", "{{ 'abc }}", {}),
    ("syntax.elif_after_else_error", "{% if a %}{% else %}{% elif b %}{% endif %}", {}),
    ("syntax.endfor_mismatch_error", "{% for x in y %}{% endif %}", {}),
    ("syntax.assignment_in_expression_error", "{{ x = 1 }}", {}),
    ("syntax.unexpected_char_error", "{{ a ? b }}", {}),
    ("syntax.unexpected_char_after_non_ascii_error", "caf\u00e9 {{ a ? b }}", {}),
    ("syntax.unterminated_double_quoted_string_error", "{{ \"abc }}", {}),
    ("syntax.unclosed_block_tag_error", "{% if x", {}),
    ("syntax.nesting_mistake_error", "{% for x in y %}{% if x %}{% endfor %}", {}),
    ("syntax.unknown_tag_inside_if_error", "{% if x %}{% foo %}{% endif %}", {}),
    ("syntax.second_else_in_for_error", "{% for x in y %}{% else %}{% else %}{% endfor %}", {}),
    ("syntax.unclosed_for_error", "{% for x in y %}{{ x }}", {}),
    ("syntax.empty_set_value_error", "{% set x = %}", {}),
    ("syntax.filter_without_name_error", "{{ x | }}", {}),
    ("syntax.for_without_in_error", "{% for x y %}{% endfor %}", {}),
    ("syntax.unclosed_comment_error", "{# abc", {}),
    ("syntax.empty_tag_error", "{% %}", {}),
    ("syntax.unclosed_call_error", "{{ f( }}", {}),
    ("syntax.mismatched_bracket_error", "{{ [1) }}", {}),
    ("syntax.unopened_bracket_error", "{{ ) }}", {}),
]


# ---- real chat templates (exact text; see each entry's source) ----
QWEN25_TEMPLATE = (
    '{%- if tools %}\n'
    "    {{- '<|im_start|>system\\n' }}\n"
    "    {%- if messages[0]['role'] == 'system' %}\n"
    "        {{- messages[0]['content'] }}\n"
    '    {%- else %}\n'
    "        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}\n"
    '    {%- endif %}\n'
    '    {{- "\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\nYou are provided with function signatures within <tools></tools> XML tags:\\n<tools>" }}\n'
    '    {%- for tool in tools %}\n'
    '        {{- "\\n" }}\n'
    '        {{- tool | tojson }}\n'
    '    {%- endfor %}\n'
    '    {{- "\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\\"name\\": <function-name>, \\"arguments\\": <args-json-object>}\\n</tool_call><|im_end|>\\n" }}\n'
    '{%- else %}\n'
    "    {%- if messages[0]['role'] == 'system' %}\n"
    "        {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}\n"
    '    {%- else %}\n'
    "        {{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}\n"
    '    {%- endif %}\n'
    '{%- endif %}\n'
    '{%- for message in messages %}\n'
    '    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}\n'
    "        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}\n"
    '    {%- elif message.role == "assistant" %}\n'
    "        {{- '<|im_start|>' + message.role }}\n"
    '        {%- if message.content %}\n'
    "            {{- '\\n' + message.content }}\n"
    '        {%- endif %}\n'
    '        {%- for tool_call in message.tool_calls %}\n'
    '            {%- if tool_call.function is defined %}\n'
    '                {%- set tool_call = tool_call.function %}\n'
    '            {%- endif %}\n'
    '            {{- \'\\n<tool_call>\\n{"name": "\' }}\n'
    '            {{- tool_call.name }}\n'
    '            {{- \'", "arguments": \' }}\n'
    '            {{- tool_call.arguments | tojson }}\n'
    "            {{- '}\\n</tool_call>' }}\n"
    '        {%- endfor %}\n'
    "        {{- '<|im_end|>\\n' }}\n"
    '    {%- elif message.role == "tool" %}\n'
    '        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}\n'
    "            {{- '<|im_start|>user' }}\n"
    '        {%- endif %}\n'
    "        {{- '\\n<tool_response>\\n' }}\n"
    '        {{- message.content }}\n'
    "        {{- '\\n</tool_response>' }}\n"
    '        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}\n'
    "            {{- '<|im_end|>\\n' }}\n"
    '        {%- endif %}\n'
    '    {%- endif %}\n'
    '{%- endfor %}\n'
    '{%- if add_generation_prompt %}\n'
    "    {{- '<|im_start|>assistant\\n' }}\n"
    '{%- endif %}\n'
)
QWEN3_TEMPLATE = (
    '{%- if tools %}\n'
    "    {{- '<|im_start|>system\\n' }}\n"
    "    {%- if messages[0].role == 'system' %}\n"
    "        {{- messages[0].content + '\\n\\n' }}\n"
    '    {%- endif %}\n'
    '    {{- "# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\nYou are provided with function signatures within <tools></tools> XML tags:\\n<tools>" }}\n'
    '    {%- for tool in tools %}\n'
    '        {{- "\\n" }}\n'
    '        {{- tool | tojson }}\n'
    '    {%- endfor %}\n'
    '    {{- "\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\\"name\\": <function-name>, \\"arguments\\": <args-json-object>}\\n</tool_call><|im_end|>\\n" }}\n'
    '{%- else %}\n'
    "    {%- if messages[0].role == 'system' %}\n"
    "        {{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}\n"
    '    {%- endif %}\n'
    '{%- endif %}\n'
    '{%- set ns = namespace(multi_step_tool=true, last_query_index=messages|length - 1) %}\n'
    '{%- for message in messages[::-1] %}\n'
    '    {%- set index = (messages|length - 1) - loop.index0 %}\n'
    '    {%- if ns.multi_step_tool and message.role == "user" and not(message.content.startswith(\'<tool_response>\') and message.content.endswith(\'</tool_response>\')) %}\n'
    '        {%- set ns.multi_step_tool = false %}\n'
    '        {%- set ns.last_query_index = index %}\n'
    '    {%- endif %}\n'
    '{%- endfor %}\n'
    '{%- for message in messages %}\n'
    '    {%- if (message.role == "user") or (message.role == "system" and not loop.first) %}\n'
    "        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}\n"
    '    {%- elif message.role == "assistant" %}\n'
    '        {%- set content = message.content %}\n'
    "        {%- set reasoning_content = '' %}\n"
    '        {%- if message.reasoning_content is defined and message.reasoning_content is not none %}\n'
    '            {%- set reasoning_content = message.reasoning_content %}\n'
    '        {%- else %}\n'
    "            {%- if '</think>' in message.content %}\n"
    "                {%- set content = message.content.split('</think>')[-1].lstrip('\\n') %}\n"
    "                {%- set reasoning_content = message.content.split('</think>')[0].rstrip('\\n').split('<think>')[-1].lstrip('\\n') %}\n"
    '            {%- endif %}\n'
    '        {%- endif %}\n'
    '        {%- if loop.index0 > ns.last_query_index %}\n'
    '            {%- if loop.last or (not loop.last and reasoning_content) %}\n'
    "                {{- '<|im_start|>' + message.role + '\\n<think>\\n' + reasoning_content.strip('\\n') + '\\n</think>\\n\\n' + content.lstrip('\\n') }}\n"
    '            {%- else %}\n'
    "                {{- '<|im_start|>' + message.role + '\\n' + content }}\n"
    '            {%- endif %}\n'
    '        {%- else %}\n'
    "            {{- '<|im_start|>' + message.role + '\\n' + content }}\n"
    '        {%- endif %}\n'
    '        {%- if message.tool_calls %}\n'
    '            {%- for tool_call in message.tool_calls %}\n'
    '                {%- if (loop.first and content) or (not loop.first) %}\n'
    "                    {{- '\\n' }}\n"
    '                {%- endif %}\n'
    '                {%- if tool_call.function %}\n'
    '                    {%- set tool_call = tool_call.function %}\n'
    '                {%- endif %}\n'
    '                {{- \'<tool_call>\\n{"name": "\' }}\n'
    '                {{- tool_call.name }}\n'
    '                {{- \'", "arguments": \' }}\n'
    '                {%- if tool_call.arguments is string %}\n'
    '                    {{- tool_call.arguments }}\n'
    '                {%- else %}\n'
    '                    {{- tool_call.arguments | tojson }}\n'
    '                {%- endif %}\n'
    "                {{- '}\\n</tool_call>' }}\n"
    '            {%- endfor %}\n'
    '        {%- endif %}\n'
    "        {{- '<|im_end|>\\n' }}\n"
    '    {%- elif message.role == "tool" %}\n'
    '        {%- if loop.first or (messages[loop.index0 - 1].role != "tool") %}\n'
    "            {{- '<|im_start|>user' }}\n"
    '        {%- endif %}\n'
    "        {{- '\\n<tool_response>\\n' }}\n"
    '        {{- message.content }}\n'
    "        {{- '\\n</tool_response>' }}\n"
    '        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}\n'
    "            {{- '<|im_end|>\\n' }}\n"
    '        {%- endif %}\n'
    '    {%- endif %}\n'
    '{%- endfor %}\n'
    '{%- if add_generation_prompt %}\n'
    "    {{- '<|im_start|>assistant\\n' }}\n"
    '    {%- if enable_thinking is defined and enable_thinking is false %}\n'
    "        {{- '<think>\\n\\n</think>\\n\\n' }}\n"
    '    {%- endif %}\n'
    '{%- endif %}'
)
LLAMA31_TEMPLATE = (
    '{{- bos_token }}\n'
    '{%- if custom_tools is defined %}\n'
    '    {%- set tools = custom_tools %}\n'
    '{%- endif %}\n'
    '{%- if not tools_in_user_message is defined %}\n'
    '    {%- set tools_in_user_message = true %}\n'
    '{%- endif %}\n'
    '{%- if not date_string is defined %}\n'
    '    {%- set date_string = "26 Jul 2024" %}\n'
    '{%- endif %}\n'
    '{%- if not tools is defined %}\n'
    '    {%- set tools = none %}\n'
    '{%- endif %}\n'
    '\n'
    '{#- This block extracts the system message, so we can slot it into the right place. #}\n'
    "{%- if messages[0]['role'] == 'system' %}\n"
    "    {%- set system_message = messages[0]['content']|trim %}\n"
    '    {%- set messages = messages[1:] %}\n'
    '{%- else %}\n'
    '    {%- set system_message = "" %}\n'
    '{%- endif %}\n'
    '\n'
    '{#- System message + builtin tools #}\n'
    '{{- "<|start_header_id|>system<|end_header_id|>\\n\\n" }}\n'
    '{%- if builtin_tools is defined or tools is not none %}\n'
    '    {{- "Environment: ipython\\n" }}\n'
    '{%- endif %}\n'
    '{%- if builtin_tools is defined %}\n'
    '    {{- "Tools: " + builtin_tools | reject(\'equalto\', \'code_interpreter\') | join(", ") + "\\n\\n"}}\n'
    '{%- endif %}\n'
    '{{- "Cutting Knowledge Date: December 2023\\n" }}\n'
    '{{- "Today Date: " + date_string + "\\n\\n" }}\n'
    '{%- if tools is not none and not tools_in_user_message %}\n'
    '    {{- "You have access to the following functions. To call a function, please respond with JSON for a function call." }}\n'
    '    {{- \'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.\' }}\n'
    '    {{- "Do not use variables.\\n\\n" }}\n'
    '    {%- for t in tools %}\n'
    '        {{- t | tojson(indent=4) }}\n'
    '        {{- "\\n\\n" }}\n'
    '    {%- endfor %}\n'
    '{%- endif %}\n'
    '{{- system_message }}\n'
    '{{- "<|eot_id|>" }}\n'
    '\n'
    '{#- Custom tools are passed in a user message with some extra guidance #}\n'
    '{%- if tools_in_user_message and not tools is none %}\n'
    '    {#- Extract the first user message so we can plug it in here #}\n'
    '    {%- if messages | length != 0 %}\n'
    "        {%- set first_user_message = messages[0]['content']|trim %}\n"
    '        {%- set messages = messages[1:] %}\n'
    '    {%- else %}\n'
    '        {{- raise_exception("Cannot put tools in the first user message when there\'s no first user message!") }}\n'
    '{%- endif %}\n'
    "    {{- '<|start_header_id|>user<|end_header_id|>\\n\\n' -}}\n"
    '    {{- "Given the following functions, please respond with a JSON for a function call " }}\n'
    '    {{- "with its proper arguments that best answers the given prompt.\\n\\n" }}\n'
    '    {{- \'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.\' }}\n'
    '    {{- "Do not use variables.\\n\\n" }}\n'
    '    {%- for t in tools %}\n'
    '        {{- t | tojson(indent=4) }}\n'
    '        {{- "\\n\\n" }}\n'
    '    {%- endfor %}\n'
    '    {{- first_user_message + "<|eot_id|>"}}\n'
    '{%- endif %}\n'
    '\n'
    '{%- for message in messages %}\n'
    "    {%- if not (message.role == 'ipython' or message.role == 'tool' or 'tool_calls' in message) %}\n"
    "        {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + '<|eot_id|>' }}\n"
    "    {%- elif 'tool_calls' in message %}\n"
    '        {%- if not message.tool_calls|length == 1 %}\n'
    '            {{- raise_exception("This model only supports single tool-calls at once!") }}\n'
    '        {%- endif %}\n'
    '        {%- set tool_call = message.tool_calls[0].function %}\n'
    '        {%- if builtin_tools is defined and tool_call.name in builtin_tools %}\n'
    "            {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' -}}\n"
    '            {{- "<|python_tag|>" + tool_call.name + ".call(" }}\n'
    '            {%- for arg_name, arg_val in tool_call.arguments | items %}\n'
    '                {{- arg_name + \'="\' + arg_val + \'"\' }}\n'
    '                {%- if not loop.last %}\n'
    '                    {{- ", " }}\n'
    '                {%- endif %}\n'
    '                {%- endfor %}\n'
    '            {{- ")" }}\n'
    '        {%- else  %}\n'
    "            {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' -}}\n"
    '            {{- \'{"name": "\' + tool_call.name + \'", \' }}\n'
    '            {{- \'"parameters": \' }}\n'
    '            {{- tool_call.arguments | tojson }}\n'
    '            {{- "}" }}\n'
    '        {%- endif %}\n'
    '        {%- if builtin_tools is defined %}\n'
    "            {#- This means we're in ipython mode #}\n"
    '            {{- "<|eom_id|>" }}\n'
    '        {%- else %}\n'
    '            {{- "<|eot_id|>" }}\n'
    '        {%- endif %}\n'
    '    {%- elif message.role == "tool" or message.role == "ipython" %}\n'
    '        {{- "<|start_header_id|>ipython<|end_header_id|>\\n\\n" }}\n'
    '        {%- if message.content is mapping or message.content is iterable %}\n'
    '            {{- message.content | tojson }}\n'
    '        {%- else %}\n'
    '            {{- message.content }}\n'
    '        {%- endif %}\n'
    '        {{- "<|eot_id|>" }}\n'
    '    {%- endif %}\n'
    '{%- endfor %}\n'
    '{%- if add_generation_prompt %}\n'
    "    {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}\n"
    '{%- endif %}\n'
)
LLAMA32_TEMPLATE = (
    '{{- bos_token }}\n'
    '{%- if custom_tools is defined %}\n'
    '    {%- set tools = custom_tools %}\n'
    '{%- endif %}\n'
    '{%- if not tools_in_user_message is defined %}\n'
    '    {%- set tools_in_user_message = true %}\n'
    '{%- endif %}\n'
    '{%- if not date_string is defined %}\n'
    '    {%- if strftime_now is defined %}\n'
    '        {%- set date_string = strftime_now("%d %b %Y") %}\n'
    '    {%- else %}\n'
    '        {%- set date_string = "26 Jul 2024" %}\n'
    '    {%- endif %}\n'
    '{%- endif %}\n'
    '{%- if not tools is defined %}\n'
    '    {%- set tools = none %}\n'
    '{%- endif %}\n'
    '\n'
    '{#- This block extracts the system message, so we can slot it into the right place. #}\n'
    "{%- if messages[0]['role'] == 'system' %}\n"
    "    {%- set system_message = messages[0]['content']|trim %}\n"
    '    {%- set messages = messages[1:] %}\n'
    '{%- else %}\n'
    '    {%- set system_message = "" %}\n'
    '{%- endif %}\n'
    '\n'
    '{#- System message #}\n'
    '{{- "<|start_header_id|>system<|end_header_id|>\\n\\n" }}\n'
    '{%- if tools is not none %}\n'
    '    {{- "Environment: ipython\\n" }}\n'
    '{%- endif %}\n'
    '{{- "Cutting Knowledge Date: December 2023\\n" }}\n'
    '{{- "Today Date: " + date_string + "\\n\\n" }}\n'
    '{%- if tools is not none and not tools_in_user_message %}\n'
    '    {{- "You have access to the following functions. To call a function, please respond with JSON for a function call." }}\n'
    '    {{- \'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.\' }}\n'
    '    {{- "Do not use variables.\\n\\n" }}\n'
    '    {%- for t in tools %}\n'
    '        {{- t | tojson(indent=4) }}\n'
    '        {{- "\\n\\n" }}\n'
    '    {%- endfor %}\n'
    '{%- endif %}\n'
    '{{- system_message }}\n'
    '{{- "<|eot_id|>" }}\n'
    '\n'
    '{#- Custom tools are passed in a user message with some extra guidance #}\n'
    '{%- if tools_in_user_message and not tools is none %}\n'
    '    {#- Extract the first user message so we can plug it in here #}\n'
    '    {%- if messages | length != 0 %}\n'
    "        {%- set first_user_message = messages[0]['content']|trim %}\n"
    '        {%- set messages = messages[1:] %}\n'
    '    {%- else %}\n'
    '        {{- raise_exception("Cannot put tools in the first user message when there\'s no first user message!") }}\n'
    '{%- endif %}\n'
    "    {{- '<|start_header_id|>user<|end_header_id|>\\n\\n' -}}\n"
    '    {{- "Given the following functions, please respond with a JSON for a function call " }}\n'
    '    {{- "with its proper arguments that best answers the given prompt.\\n\\n" }}\n'
    '    {{- \'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.\' }}\n'
    '    {{- "Do not use variables.\\n\\n" }}\n'
    '    {%- for t in tools %}\n'
    '        {{- t | tojson(indent=4) }}\n'
    '        {{- "\\n\\n" }}\n'
    '    {%- endfor %}\n'
    '    {{- first_user_message + "<|eot_id|>"}}\n'
    '{%- endif %}\n'
    '\n'
    '{%- for message in messages %}\n'
    "    {%- if not (message.role == 'ipython' or message.role == 'tool' or 'tool_calls' in message) %}\n"
    "        {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + '<|eot_id|>' }}\n"
    "    {%- elif 'tool_calls' in message %}\n"
    '        {%- if not message.tool_calls|length == 1 %}\n'
    '            {{- raise_exception("This model only supports single tool-calls at once!") }}\n'
    '        {%- endif %}\n'
    '        {%- set tool_call = message.tool_calls[0].function %}\n'
    "        {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' -}}\n"
    '        {{- \'{"name": "\' + tool_call.name + \'", \' }}\n'
    '        {{- \'"parameters": \' }}\n'
    '        {{- tool_call.arguments | tojson }}\n'
    '        {{- "}" }}\n'
    '        {{- "<|eot_id|>" }}\n'
    '    {%- elif message.role == "tool" or message.role == "ipython" %}\n'
    '        {{- "<|start_header_id|>ipython<|end_header_id|>\\n\\n" }}\n'
    '        {%- if message.content is mapping or message.content is iterable %}\n'
    '            {{- message.content | tojson }}\n'
    '        {%- else %}\n'
    '            {{- message.content }}\n'
    '        {%- endif %}\n'
    '        {{- "<|eot_id|>" }}\n'
    '    {%- endif %}\n'
    '{%- endfor %}\n'
    '{%- if add_generation_prompt %}\n'
    "    {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}\n"
    '{%- endif %}\n'
)
MISTRAL_V03_TEMPLATE = (
    '{%- if messages[0]["role"] == "system" %}\n'
    '    {%- set system_message = messages[0]["content"] %}\n'
    '    {%- set loop_messages = messages[1:] %}\n'
    '{%- else %}\n'
    '    {%- set loop_messages = messages %}\n'
    '{%- endif %}\n'
    '{%- if not tools is defined %}\n'
    '    {%- set tools = none %}\n'
    '{%- endif %}\n'
    '{%- set user_messages = loop_messages | selectattr("role", "equalto", "user") | list %}\n'
    '\n'
    '{#- This block checks for alternating user/assistant messages, skipping tool calling messages #}\n'
    '{%- set ns = namespace() %}\n'
    '{%- set ns.index = 0 %}\n'
    '{%- for message in loop_messages %}\n'
    '    {%- if not (message.role == "tool" or message.role == "tool_results" or (message.tool_calls is defined and message.tool_calls is not none)) %}\n'
    '        {%- if (message["role"] == "user") != (ns.index % 2 == 0) %}\n'
    '            {{- raise_exception("After the optional system message, conversation roles must alternate user/assistant/user/assistant/...") }}\n'
    '        {%- endif %}\n'
    '        {%- set ns.index = ns.index + 1 %}\n'
    '    {%- endif %}\n'
    '{%- endfor %}\n'
    '\n'
    '{{- bos_token }}\n'
    '{%- for message in loop_messages %}\n'
    '    {%- if message["role"] == "user" %}\n'
    '        {%- if tools is not none and (message == user_messages[-1]) %}\n'
    '            {{- "[AVAILABLE_TOOLS] [" }}\n'
    '            {%- for tool in tools %}\n'
    '                {%- set tool = tool.function %}\n'
    '                {{- \'{"type": "function", "function": {\' }}\n'
    '                {%- for key, val in tool.items() if key != "return" %}\n'
    '                    {%- if val is string %}\n'
    '                        {{- \'"\' + key + \'": "\' + val + \'"\' }}\n'
    '                    {%- else %}\n'
    '                        {{- \'"\' + key + \'": \' + val|tojson }}\n'
    '                    {%- endif %}\n'
    '                    {%- if not loop.last %}\n'
    '                        {{- ", " }}\n'
    '                    {%- endif %}\n'
    '                {%- endfor %}\n'
    '                {{- "}}" }}\n'
    '                {%- if not loop.last %}\n'
    '                    {{- ", " }}\n'
    '                {%- else %}\n'
    '                    {{- "]" }}\n'
    '                {%- endif %}\n'
    '            {%- endfor %}\n'
    '            {{- "[/AVAILABLE_TOOLS]" }}\n'
    '            {%- endif %}\n'
    '        {%- if loop.last and system_message is defined %}\n'
    '            {{- "[INST] " + system_message + "\\n\\n" + message["content"] + "[/INST]" }}\n'
    '        {%- else %}\n'
    '            {{- "[INST] " + message["content"] + "[/INST]" }}\n'
    '        {%- endif %}\n'
    '    {%- elif message.tool_calls is defined and message.tool_calls is not none %}\n'
    '        {{- "[TOOL_CALLS] [" }}\n'
    '        {%- for tool_call in message.tool_calls %}\n'
    '            {%- set out = tool_call.function|tojson %}\n'
    '            {{- out[:-1] }}\n'
    '            {%- if not tool_call.id is defined or tool_call.id|length != 9 %}\n'
    '                {{- raise_exception("Tool call IDs should be alphanumeric strings with length 9!") }}\n'
    '            {%- endif %}\n'
    '            {{- \', "id": "\' + tool_call.id + \'"}\' }}\n'
    '            {%- if not loop.last %}\n'
    '                {{- ", " }}\n'
    '            {%- else %}\n'
    '                {{- "]" + eos_token }}\n'
    '            {%- endif %}\n'
    '        {%- endfor %}\n'
    '    {%- elif message["role"] == "assistant" %}\n'
    '        {{- " " + message["content"]|trim + eos_token}}\n'
    '    {%- elif message["role"] == "tool_results" or message["role"] == "tool" %}\n'
    '        {%- if message.content is defined and message.content.content is defined %}\n'
    '            {%- set content = message.content.content %}\n'
    '        {%- else %}\n'
    '            {%- set content = message.content %}\n'
    '        {%- endif %}\n'
    '        {{- \'[TOOL_RESULTS] {"content": \' + content|string + ", " }}\n'
    '        {%- if not message.tool_call_id is defined or message.tool_call_id|length != 9 %}\n'
    '            {{- raise_exception("Tool call IDs should be alphanumeric strings with length 9!") }}\n'
    '        {%- endif %}\n'
    '        {{- \'"call_id": "\' + message.tool_call_id + \'"}[/TOOL_RESULTS]\' }}\n'
    '    {%- else %}\n'
    '        {{- raise_exception("Only user and assistant roles are supported, with the exception of an initial optional system message!") }}\n'
    '    {%- endif %}\n'
    '{%- endfor %}\n'
)
MISTRAL_NEMO_TEMPLATE = (
    '{%- if messages[0]["role"] == "system" %}\n'
    '    {%- set system_message = messages[0]["content"] %}\n'
    '    {%- set loop_messages = messages[1:] %}\n'
    '{%- else %}\n'
    '    {%- set loop_messages = messages %}\n'
    '{%- endif %}\n'
    '{%- if not tools is defined %}\n'
    '    {%- set tools = none %}\n'
    '{%- endif %}\n'
    '{%- set user_messages = loop_messages | selectattr("role", "equalto", "user") | list %}\n'
    '\n'
    '{#- This block checks for alternating user/assistant messages, skipping tool calling messages #}\n'
    '{%- set ns = namespace() %}\n'
    '{%- set ns.index = 0 %}\n'
    '{%- for message in loop_messages %}\n'
    '    {%- if not (message.role == "tool" or message.role == "tool_results" or (message.tool_calls is defined and message.tool_calls is not none)) %}\n'
    '        {%- if (message["role"] == "user") != (ns.index % 2 == 0) %}\n'
    '            {{- raise_exception("After the optional system message, conversation roles must alternate user/assistant/user/assistant/...") }}\n'
    '        {%- endif %}\n'
    '        {%- set ns.index = ns.index + 1 %}\n'
    '    {%- endif %}\n'
    '{%- endfor %}\n'
    '\n'
    '{{- bos_token }}\n'
    '{%- for message in loop_messages %}\n'
    '    {%- if message["role"] == "user" %}\n'
    '        {%- if tools is not none and (message == user_messages[-1]) %}\n'
    '            {{- "[AVAILABLE_TOOLS][" }}\n'
    '            {%- for tool in tools %}\n'
    '                {%- set tool = tool.function %}\n'
    '                {{- \'{"type": "function", "function": {\' }}\n'
    '                {%- for key, val in tool.items() if key != "return" %}\n'
    '                    {%- if val is string %}\n'
    '                        {{- \'"\' + key + \'": "\' + val + \'"\' }}\n'
    '                    {%- else %}\n'
    '                        {{- \'"\' + key + \'": \' + val|tojson }}\n'
    '                    {%- endif %}\n'
    '                    {%- if not loop.last %}\n'
    '                        {{- ", " }}\n'
    '                    {%- endif %}\n'
    '                {%- endfor %}\n'
    '                {{- "}}" }}\n'
    '                {%- if not loop.last %}\n'
    '                    {{- ", " }}\n'
    '                {%- else %}\n'
    '                    {{- "]" }}\n'
    '                {%- endif %}\n'
    '            {%- endfor %}\n'
    '            {{- "[/AVAILABLE_TOOLS]" }}\n'
    '            {%- endif %}\n'
    '        {%- if loop.last and system_message is defined %}\n'
    '            {{- "[INST]" + system_message + "\\n\\n" + message["content"] + "[/INST]" }}\n'
    '        {%- else %}\n'
    '            {{- "[INST]" + message["content"] + "[/INST]" }}\n'
    '        {%- endif %}\n'
    '    {%- elif (message.tool_calls is defined and message.tool_calls is not none) %}\n'
    '        {{- "[TOOL_CALLS][" }}\n'
    '        {%- for tool_call in message.tool_calls %}\n'
    '            {%- set out = tool_call.function|tojson %}\n'
    '            {{- out[:-1] }}\n'
    '            {%- if not tool_call.id is defined or tool_call.id|length != 9 %}\n'
    '                {{- raise_exception("Tool call IDs should be alphanumeric strings with length 9!") }}\n'
    '            {%- endif %}\n'
    '            {{- \', "id": "\' + tool_call.id + \'"}\' }}\n'
    '            {%- if not loop.last %}\n'
    '                {{- ", " }}\n'
    '            {%- else %}\n'
    '                {{- "]" + eos_token }}\n'
    '            {%- endif %}\n'
    '        {%- endfor %}\n'
    '    {%- elif message["role"] == "assistant" %}\n'
    '        {{- message["content"] + eos_token}}\n'
    '    {%- elif message["role"] == "tool_results" or message["role"] == "tool" %}\n'
    '        {%- if message.content is defined and message.content.content is defined %}\n'
    '            {%- set content = message.content.content %}\n'
    '        {%- else %}\n'
    '            {%- set content = message.content %}\n'
    '        {%- endif %}\n'
    '        {{- \'[TOOL_RESULTS]{"content": \' + content|string + ", " }}\n'
    '        {%- if not message.tool_call_id is defined or message.tool_call_id|length != 9 %}\n'
    '            {{- raise_exception("Tool call IDs should be alphanumeric strings with length 9!") }}\n'
    '        {%- endif %}\n'
    '        {{- \'"call_id": "\' + message.tool_call_id + \'"}[/TOOL_RESULTS]\' }}\n'
    '    {%- else %}\n'
    '        {{- raise_exception("Only user and assistant roles are supported, with the exception of an initial optional system message!") }}\n'
    '    {%- endif %}\n'
    '{%- endfor %}\n'
)
MISTRAL_V1_TEMPLATE = (
    "{%- if messages[0]['role'] == 'system' %}\n"
    "    {%- set system_message = messages[0]['content'] %}\n"
    '    {%- set loop_messages = messages[1:] %}\n'
    '{%- else %}\n'
    '    {%- set loop_messages = messages %}\n'
    '{%- endif %}\n'
    '\n'
    '{{- bos_token }}\n'
    '{%- for message in loop_messages %}\n'
    "    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}\n"
    "        {{- raise_exception('After the optional system message, conversation roles must alternate user/assistant/user/assistant/...') }}\n"
    '    {%- endif %}\n'
    "    {%- if message['role'] == 'user' %}\n"
    '        {%- if loop.first and system_message is defined %}\n'
    "            {{- ' [INST] ' + system_message + '\\n\\n' + message['content'] + ' [/INST]' }}\n"
    '        {%- else %}\n'
    "            {{- ' [INST] ' + message['content'] + ' [/INST]' }}\n"
    '        {%- endif %}\n'
    "    {%- elif message['role'] == 'assistant' %}\n"
    "        {{- ' ' + message['content'] + eos_token}}\n"
    '    {%- else %}\n'
    "        {{- raise_exception('Only user and assistant roles are supported, with the exception of an initial optional system message!') }}\n"
    '    {%- endif %}\n'
    '{%- endfor %}\n'
)
GEMMA2_TEMPLATE = (
    "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}{{ '<start_of_turn>' + role + '\n"
    "' + message['content'] | trim + '<end_of_turn>\n"
    "' }}{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\n"
    "'}}{% endif %}"
)
PHI35_TEMPLATE = (
    "{% for message in messages %}{% if message['role'] == 'system' and message['content'] %}{{'<|system|>\n"
    "' + message['content'] + '<|end|>\n"
    "'}}{% elif message['role'] == 'user' %}{{'<|user|>\n"
    "' + message['content'] + '<|end|>\n"
    "'}}{% elif message['role'] == 'assistant' %}{{'<|assistant|>\n"
    "' + message['content'] + '<|end|>\n"
    "'}}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\n"
    "' }}{% else %}{{ eos_token }}{% endif %}"
)
PHI3_MINI_TEMPLATE = (
    "{% for message in messages %}{% if message['role'] == 'system' %}{{'<|system|>\n"
    "' + message['content'] + '<|end|>\n"
    "'}}{% elif message['role'] == 'user' %}{{'<|user|>\n"
    "' + message['content'] + '<|end|>\n"
    "'}}{% elif message['role'] == 'assistant' %}{{'<|assistant|>\n"
    "' + message['content'] + '<|end|>\n"
    "'}}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\n"
    "' }}{% else %}{{ eos_token }}{% endif %}"
)
DEEPSEEK_R1_DISTILL_TEMPLATE = ("{% if not add_generation_prompt is defined %}{% set add_generation_prompt = false %}{% endif %}{% set ns = namespace(is_first=false, is_tool=false, is_output_first=true, system_prompt='') %}{%- for message in messages %}{%- if message['role'] == 'system' %}{% set ns.system_prompt = message['content'] %}{%- endif %}{%- endfor %}{{bos_token}}{{ns.system_prompt}}{%- for message in messages %}{%- if message['role'] == 'user' %}{%- set ns.is_tool = false -%}{{'<｜User｜>' + message['content']}}{%- endif %}{%- if message['role'] == 'assistant' and message['content'] is none %}{%- set ns.is_tool = false -%}{%- for tool in message['tool_calls']%}{%- if not ns.is_first %}{{'<｜Assistant｜><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>' + tool['type'] + '<｜tool▁sep｜>' + tool['function']['name'] + '\\n' + '```json' + '\\n' + tool['function']['arguments'] + '\\n' + '```' + '<｜tool▁call▁end｜>'}}{%- set ns.is_first = true -%}{%- else %}{{'\\n' + '<｜tool▁call▁begin｜>' + tool['type'] + '<｜tool▁sep｜>' + tool['function']['name'] + '\\n' + '```json' + '\\n' + tool['function']['arguments'] + '\\n' + '```' + '<｜tool▁call▁end｜>'}}{{'<｜tool▁calls▁end｜><｜end▁of▁sentence｜>'}}{%- endif %}{%- endfor %}{%- endif %}{%- if message['role'] == 'assistant' and message['content'] is not none %}{%- if ns.is_tool %}{{'<｜tool▁outputs▁end｜>' + message['content'] + '<｜end▁of▁sentence｜>'}}{%- set ns.is_tool = false -%}{%- else %}{% set content = message['content'] %}{% if '</think>' in content %}{% set content = content.split('</think>')[-1] %}{% endif %}{{'<｜Assistant｜>' + content + '<｜end▁of▁sentence｜>'}}{%- endif %}{%- endif %}{%- if message['role'] == 'tool' %}{%- set ns.is_tool = true -%}{%- if ns.is_output_first %}{{'<｜tool▁outputs▁begin｜><｜tool▁output▁begin｜>' + message['content'] + '<｜tool▁output▁end｜>'}}{%- set ns.is_output_first = false %}{%- else %}{{'\\n<｜tool▁output▁begin｜>' + message['content'] + '<｜tool▁output▁end｜>'}}{%- endif %}{%- endif %}{%- endfor -%}{% if ns.is_tool %}{{'<｜tool▁outputs▁end｜>'}}{% endif %}{% if add_generation_prompt and not ns.is_tool %}{{'<｜Assistant｜><think>\\n'}}{% endif %}")
HERMES3_TOOL_USE_TEMPLATE = (
    '{%- macro json_to_python_type(json_spec) %}\n'
    '{%- set basic_type_map = {\n'
    '    "string": "str",\n'
    '    "number": "float",\n'
    '    "integer": "int",\n'
    '    "boolean": "bool"\n'
    '} %}\n'
    '\n'
    '{%- if basic_type_map[json_spec.type] is defined %}\n'
    '    {{- basic_type_map[json_spec.type] }}\n'
    '{%- elif json_spec.type == "array" %}\n'
    '    {{- "list[" +  json_to_python_type(json_spec|items) + "]"}}\n'
    '{%- elif json_spec.type == "object" %}\n'
    '    {%- if json_spec.additionalProperties is defined %}\n'
    '        {{- "dict[str, " + json_to_python_type(json_spec.additionalProperties) + \']\'}}\n'
    '    {%- else %}\n'
    '        {{- "dict" }}\n'
    '    {%- endif %}\n'
    '{%- elif json_spec.type is iterable %}\n'
    '    {{- "Union[" }}\n'
    '    {%- for t in json_spec.type %}\n'
    '      {{- json_to_python_type({"type": t}) }}\n'
    '      {%- if not loop.last %}\n'
    '        {{- "," }} \n'
    '    {%- endif %}\n'
    '    {%- endfor %}\n'
    '    {{- "]" }}\n'
    '{%- else %}\n'
    '    {{- "Any" }}\n'
    '{%- endif %}\n'
    '{%- endmacro %}\n'
    '\n'
    '\n'
    '{{- bos_token }}\n'
    "{{- '<|im_start|>system\n"
    "' }}\n"
    '{{- "You are a function calling AI model. You are provided with function signatures within <tools></tools> XML tags. You may call one or more functions to assist with the user query. Don\'t make assumptions about what values to plug into functions. Here are the available tools: <tools> " }}\n'
    '{%- for tool in tools %}\n'
    '    {%- if tool.function is defined %}\n'
    '        {%- set tool = tool.function %}\n'
    '    {%- endif %}\n'
    '    {{- \'{"type": "function", "function": \' }}\n'
    '    {{- \'{"name": "\' + tool.name + \'", \' }}\n'
    '    {{- \'"description": "\' + tool.name + \'(\' }}\n'
    '    {%- for param_name, param_fields in tool.parameters.properties|items %}\n'
    '        {{- param_name + ": " + json_to_python_type(param_fields) }}\n'
    '        {%- if not loop.last %}\n'
    '            {{- ", " }}\n'
    '        {%- endif %}\n'
    '    {%- endfor %}\n'
    '    {{- ")" }}\n'
    '    {%- if tool.return is defined %}\n'
    '        {{- " -> " + json_to_python_type(tool.return) }}\n'
    '    {%- endif %}\n'
    '    {{- " - " + tool.description + "\n'
    '\n'
    '" }}\n'
    '    {%- for param_name, param_fields in tool.parameters.properties|items %}\n'
    '        {%- if loop.first %}\n'
    '            {{- "    Args:\n'
    '" }}\n'
    '        {%- endif %}\n'
    '        {{- "        " + param_name + "(" + json_to_python_type(param_fields) + "): " + param_fields.description|trim }}\n'
    '    {%- endfor %}\n'
    '    {%- if tool.return is defined and tool.return.description is defined %}\n'
    '        {{- "\n'
    '    Returns:\n'
    '        " + tool.return.description }}\n'
    '    {%- endif %}\n'
    '    {{- \'"\' }}\n'
    '    {{- \', "parameters": \' }}\n'
    '    {%- if tool.parameters.properties | length == 0 %}\n'
    '        {{- "{}" }}\n'
    '    {%- else %}\n'
    '        {{- tool.parameters|tojson }}\n'
    '    {%- endif %}\n'
    '    {{- "}" }}\n'
    '    {%- if not loop.last %}\n'
    '        {{- "\n'
    '" }}\n'
    '    {%- endif %}\n'
    '{%- endfor %}\n'
    '{{- " </tools>" }}\n'
    '{{- \'Use the following pydantic model json schema for each tool call you will make: {"properties": {"name": {"title": "Name", "type": "string"}, "arguments": {"title": "Arguments", "type": "object"}}, "required": ["name", "arguments"], "title": "FunctionCall", "type": "object"}}\n'
    "' }}\n"
    '{{- "For each function call return a json object with function name and arguments within <tool_call></tool_call> XML tags as follows:\n'
    '" }}\n'
    '{{- "<tool_call>\n'
    '" }}\n'
    '{{- \'{"name": <function-name>, "arguments": <args-dict>}\n'
    "' }}\n"
    "{{- '</tool_call><|im_end|>\n"
    "' }}\n"
    '{%- for message in messages %}\n'
    '    {%- if message.role == "user" or message.role == "system" or (message.role == "assistant" and message.tool_calls is not defined) %}\n'
    "        {{- '<|im_start|>' + message.role + '\n"
    "' + message.content + '<|im_end|>' + '\n"
    "' }}\n"
    '    {%- elif message.role == "assistant" %}\n'
    "        {{- '<|im_start|>' + message.role }}\n"
    '    {%- for tool_call in message.tool_calls %}\n'
    "       {{- '\n"
    '<tool_call>\n'
    "' }}           {%- if tool_call.function is defined %}\n"
    '                {%- set tool_call = tool_call.function %}\n'
    '            {%- endif %}\n'
    "            {{- '{' }}\n"
    '            {{- \'"name": "\' }}\n'
    '            {{- tool_call.name }}\n'
    '            {{- \'"\' }}\n'
    "            {{- ', '}}\n"
    '            {%- if tool_call.arguments is defined %}\n'
    '                {{- \'"arguments": \' }}\n'
    '                {%- if tool_call.arguments is string %}\n'
    '                    {{- tool_call.arguments }}\n'
    '                {%- else %}\n'
    '                    {{- tool_call.arguments|tojson }}\n'
    '                {%- endif %}\n'
    '            {%- endif %}\n'
    "             {{- '}' }}\n"
    "            {{- '\n"
    "</tool_call>' }}\n"
    '    {%- endfor %}\n'
    "        {{- '<|im_end|>\n"
    "' }}\n"
    '    {%- elif message.role == "tool" %}\n'
    '        {%- if loop.previtem and loop.previtem.role != "tool" %}\n'
    "            {{- '<|im_start|>tool\n"
    "' }}\n"
    '        {%- endif %}\n'
    "        {{- '<tool_response>\n"
    "' }}\n"
    '        {{- message.content }}\n'
    '        {%- if not loop.last %}\n'
    "            {{- '\n"
    '</tool_response>\n'
    "' }}\n"
    '        {%- else %}\n'
    "            {{- '\n"
    "</tool_response>' }}\n"
    '        {%- endif %}\n'
    '        {%- if not loop.last and loop.nextitem.role != "tool" %}\n'
    "            {{- '<|im_end|>' }}\n"
    '        {%- elif loop.last %}\n'
    "            {{- '<|im_end|>' }}\n"
    '        {%- endif %}\n'
    '    {%- endif %}\n'
    '{%- endfor %}\n'
    '{%- if add_generation_prompt %}\n'
    "    {{- '<|im_start|>assistant\n"
    "' }}\n"
    '{%- endif %}\n'
)
SMOLLM2_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\n"
    'You are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n'
    "' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n"
    "' + message['content'] + '<|im_end|>' + '\n"
    "'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n"
    "' }}{% endif %}"
)
GRANITE33_TEMPLATE = (
    '{# Alias tools -> available_tools #}\n'
    '{%- if tools and not available_tools -%}\n'
    '    {%- set available_tools = tools -%}\n'
    '{%- endif -%}\n'
    "{%- if messages[0]['role'] == 'system' %}\n"
    "     {%- set system_message = messages[0]['content'] %}\n"
    '     {%- set loop_messages = messages[1:] %}\n'
    ' {%- else %}\n'
    '     {%- set system_message = "Knowledge Cutoff Date: April 2024. Today\'s Date: " + strftime_now(\'%B %d, %Y\') + ". You are Granite, developed by IBM." %}\n'
    '     {%- if available_tools and documents %}\n'
    '         {%- set system_message = system_message + " You are a helpful assistant with access to the following tools. When a tool is required to answer the user\'s query, respond only with <|tool_call|> followed by a JSON list of tools used. If a tool does not exist in the provided list of tools, notify the user that you do not have the ability to fulfill the request. Write the response to the user\'s input by strictly aligning with the facts in the provided documents. If the information needed to answer the question is not available in the documents, inform the user that the question cannot be answered based on the available data." %}\n'
    '     {%- elif available_tools %}\n'
    '         {%- set system_message = system_message + " You are a helpful assistant with access to the following tools. When a tool is required to answer the user\'s query, respond only with <|tool_call|> followed by a JSON list of tools used. If a tool does not exist in the provided list of tools, notify the user that you do not have the ability to fulfill the request." %}\n'
    '     {%- elif documents %}\n'
    '         {%- set system_message = system_message + " Write the response to the user\'s input by strictly aligning with the facts in the provided documents. If the information needed to answer the question is not available in the documents, inform the user that the question cannot be answered based on the available data." %}\n'
    '    {%- elif thinking %}\n'
    '    {%- set system_message = system_message + " You are a helpful AI assistant.\n'
    'Respond to every user query in a comprehensive and detailed way. You can write down your thoughts and reasoning process before responding. In the thought process, engage in a comprehensive cycle of analysis, summarization, exploration, reassessment, reflection, backtracing, and iteration to develop well-considered thinking process. In the response section, based on various attempts, explorations, and reflections from the thoughts section, systematically present the final solution that you deem correct. The response should summarize the thought process. Write your thoughts between <think></think> and write your response between <response></response> for each user query." %}\n'
    '     {%- else %}\n'
    '         {%- set system_message = system_message + " You are a helpful AI assistant." %}\n'
    '     {%- endif %}\n'
    "     {%- if 'citations' in controls and documents %}\n"
    "         {%- set system_message = system_message + '\n"
    "Use the symbols <|start_of_cite|> and <|end_of_cite|> to indicate when a fact comes from a document in the search result, e.g <|start_of_cite|> {document_id: 1}my fact <|end_of_cite|> for a fact from document 1. Afterwards, list all the citations with their corresponding documents in an ordered list.' %}\n"
    '     {%- endif %}\n'
    "     {%- if 'hallucinations' in controls and documents %}\n"
    "         {%- set system_message = system_message + '\n"
    "Finally, after the response is written, include a numbered list of sentences from the response with a corresponding risk value that are hallucinated and not based in the documents.' %}\n"
    '     {%- endif %}\n'
    '     {%- set loop_messages = messages %}\n'
    ' {%- endif %}\n'
    " {{- '<|start_of_role|>system<|end_of_role|>' + system_message + '<|end_of_text|>\n"
    "' }}\n"
    ' {%- if available_tools %}\n'
    "     {{- '<|start_of_role|>available_tools<|end_of_role|>' }}\n"
    '     {{- available_tools | tojson(indent=4) }}\n'
    "     {{- '<|end_of_text|>\n"
    "' }}\n"
    ' {%- endif %}\n'
    ' {%- if documents %}\n'
    '     {%- for document in documents %}\n'
    '         {{- \'<|start_of_role|>document {"document_id": "\' + document[\'doc_id\'] | string + \'"}<|end_of_role|>\n'
    "' }}\n"
    "         {{- document['text'] }}\n"
    "         {{- '<|end_of_text|>\n"
    "' }}\n"
    '              {%- endfor %}\n'
    ' {%- endif %}\n'
    ' {%- for message in loop_messages %}\n'
    "     {{- '<|start_of_role|>' + message['role'] + '<|end_of_role|>' + message['content'] + '<|end_of_text|>\n"
    "' }}\n"
    '     {%- if loop.last and add_generation_prompt %}\n'
    "         {{- '<|start_of_role|>assistant' }}\n"
    '             {%- if controls %}\n'
    "                 {{- ' ' + controls | tojson()}}\n"
    '             {%- endif %}\n'
    "         {{- '<|end_of_role|>' }}\n"
    '     {%- endif %}\n'
    ' {%- endfor %}\n'
)
ZEPHYR_TEMPLATE = (
    '{% for message in messages %}\n'
    "{% if message['role'] == 'user' %}\n"
    "{{ '<|user|>\n"
    "' + message['content'] + eos_token }}\n"
    "{% elif message['role'] == 'system' %}\n"
    "{{ '<|system|>\n"
    "' + message['content'] + eos_token }}\n"
    "{% elif message['role'] == 'assistant' %}\n"
    "{{ '<|assistant|>\n"
    "'  + message['content'] + eos_token }}\n"
    '{% endif %}\n'
    '{% if loop.last and add_generation_prompt %}\n'
    "{{ '<|assistant|>' }}\n"
    '{% endif %}\n'
    '{% endfor %}'
)
COMMAND_R_PLUS_TOOL_USE_TEMPLATE = (
    '\n'
    '{%- macro json_to_python_type(json_spec) %}\n'
    '{%- set basic_type_map = {\n'
    '    "string": "str",\n'
    '    "number": "float",\n'
    '    "integer": "int",\n'
    '    "boolean": "bool"\n'
    '} %}\n'
    '\n'
    '{%- if basic_type_map[json_spec.type] is defined %}\n'
    '    {{- basic_type_map[json_spec.type] }}\n'
    '{%- elif json_spec.type == "array" %}\n'
    '    {{- "List[" +  json_to_python_type(json_spec.items) + "]"}}\n'
    '{%- elif json_spec.type == "object" %}\n'
    '    {{- "Dict[str, " + json_to_python_type(json_spec.additionalProperties) + \']\'}}\n'
    '{%- elif json_spec.type is iterable %}\n'
    '    {{- "Union[" }}\n'
    '    {%- for t in json_spec.type %}\n'
    '      {{- json_to_python_type({"type": t}) }}\n'
    '      {%- if not loop.last %}\n'
    '        {{- "," }} \n'
    '    {%- endif %}\n'
    '    {%- endfor %}\n'
    '    {{- "]" }}\n'
    '{%- else %}\n'
    '    {{- "Any" }}\n'
    '{%- endif %}\n'
    '{%- endmacro %}\n'
    '\n'
    '{%- macro old_tool_parser(tools) %}\n'
    '{%- for tool in tools %}\n'
    '    {%- if loop.index0 != 0 %}\n'
    "        {{- '\\n\\n' }}\n"
    '    {%- endif %}\n'
    "    {{- '```python\\ndef ' + tool.name + '(' }}\n"
    '    {%- for param_name, param_fields in tool.parameter_definitions|items %}\n'
    '        {%- if loop.index0 != 0 %}\n'
    "            {{- ', '}}\n"
    '        {%- endif %}\n'
    "        {{- param_name + ': ' }}\n"
    '        {%- if not param_fields.required %}\n'
    "            {{- 'Optional[' + param_fields.type + '] = None'}}\n"
    '        {%- else %}\n'
    '            {{- param_fields.type }}\n'
    '        {%- endif %}\n'
    '    {%- endfor %}\n'
    '    {{- \') -> List[Dict]:\\n    """\'}}\n'
    '    {{- tool.description }}\n'
    '    {%- if tool.parameter_definitions|length != 0 %}\n'
    "        {{- '\\n\\n    Args:\\n        '}}\n"
    '        {%- for param_name, param_fields in tool.parameter_definitions|items %}\n'
    '            {%- if loop.index0 != 0 %}\n'
    "                {{- '\\n        ' }}\n"
    '            {%- endif %}\n'
    "            {{- param_name + ' ('}}\n"
    '            {%- if not param_fields.required %}\n'
    "                {{- 'Optional[' + param_fields.type + ']'}}\n"
    '            {%- else %}\n'
    '                {{- param_fields.type }}\n'
    '            {%- endif %}\n'
    "            {{- '): ' + param_fields.description }}\n"
    '        {%- endfor %}\n'
    '    {%- endif %}\n'
    '    {{- \'\\n    """\\n    pass\\n```\' }}\n'
    '{%- endfor %}\n'
    '{%- endmacro %}\n'
    '\n'
    '{%- macro new_tool_parser(tools) %}\n'
    '{%- for tool in tools %}\n'
    '  {%- if loop.index0 != 0 %}\n'
    "    {{- '\\n\\n'}}\n"
    '  {%- endif %}\n'
    '  {%- if tool.function is defined %}\n'
    '    {%- set tool = tool.function %}\n'
    '  {%- endif %}\n'
    "  {{-'```python\n"
    "def ' + tool.name + '('}}\n"
    '  {%- for param_name, param_fields in tool.parameters.properties|items %}\n'
    '    {%- if loop.index0 != 0 %}\n'
    "      {{- ', '}}\n"
    '    {%- endif %}\n'
    '    {{-param_name + ": "}} \n'
    '    {%- if not param_name in tool.parameters.required %}\n'
    "      {{-'Optional[' + json_to_python_type(param_fields) + '] = None'}}\n"
    '    {%- else %}\n'
    '      {{- json_to_python_type(param_fields) }}\n'
    '    {%- endif %}\n'
    '  {%- endfor %}\n'
    "  {{- ') -> List[Dict]:\n"
    '    """\'}}\n'
    '  {{- tool.description }}\n'
    '  {%- if tool.parameters.properties|length != 0 %}\n'
    "    {{- '\\n\\n    Args:\\n        '}}\n"
    '    {%- for param_name, param_fields in tool.parameters.properties|items %}\n'
    '      {%- if loop.index0 != 0 %}\n'
    "        {{- '\\n        ' }}\n"
    '      {%- endif %}\n'
    "      {{- param_name + ' ('}}\n"
    '      {%- if not param_name in tool.parameters.required %}\n'
    "        {{-'Optional[' + json_to_python_type(param_fields) + ']'}}\n"
    '      {%- else %}\n'
    '        {{- json_to_python_type(param_fields) }}\n'
    '      {%- endif %}\n'
    "      {{- '): ' + param_fields.description }}\n"
    '    {%- endfor %}\n'
    '    {%- endif %}\n'
    '    {{- \'\\n    """\\n    pass\\n```\' }}\n'
    '{%- endfor %}\n'
    '{%- endmacro %}\n'
    '\n'
    '{{- bos_token }}\n'
    "{%- if messages[0]['role'] == 'system' %}\n"
    '  {%- set loop_messages = messages[1:] %}\n'
    "  {%- set system_message = messages[0]['content'] %}\n"
    '{%- else %}\n'
    '  {%- set loop_messages = messages %}\n'
    "  {%- set system_message = '## Task and Context\\nYou help people answer their questions and other requests interactively. You will be asked a very wide array of requests on all kinds of topics. You will be equipped with a wide range of search engines or similar tools to help you, which you use to research your answer. You should focus on serving the user\\'s needs as best you can, which will be wide-ranging.\\n\\n## Style Guide\\nUnless the user asks for a different style of answer, you should answer in full sentences, using proper grammar and spelling.' %}\n"
    '{%- endif %}\n'
    "{{- '<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>' }}\n"
    "{{- '# Safety Preamble' }}\n"
    "{{- '\n"
    "The instructions in this section override those in the task description and style guide sections. Don\\'t answer questions that are harmful or immoral.' }}\n"
    "{{- '\n"
    '\n'
    "# System Preamble' }}\n"
    "{{- '\n"
    "## Basic Rules' }}\n"
    "{{- '\n"
    "You are a powerful conversational AI trained by Cohere to help people. You are augmented by a number of tools, and your job is to use and consume the output of these tools to best help the user. You will see a conversation history between yourself and a user, ending with an utterance from the user. You will then see a specific instruction instructing you what kind of response to generate. When you answer the user\\'s requests, you cite your sources in your answers, according to those instructions.' }}\n"
    "{{- '\n"
    '\n'
    "# User Preamble' }}\n"
    "{{- '\n"
    "' + system_message }}\n"
    "{{-'\n"
    '\n'
    '## Available Tools\n'
    'Here is a list of tools that you have available to you:\n'
    '\n'
    "'}}\n"
    '{%- set ns = namespace(new_tools=true) %}\n'
    '{%- for tool in tools %}\n'
    '    {%- if tool.parameter_definitions is defined %}\n'
    '        {%- set ns.new_tools = false %}\n'
    '    {%- endif %}\n'
    '{%- endfor %}\n'
    '{%- if ns.new_tools %}\n'
    '    {{- new_tool_parser(tools) }}\n'
    '{%- else %}\n'
    '    {{- old_tool_parser(tools) }}\n'
    '{%- endif %}\n'
    "{{- '<|END_OF_TURN_TOKEN|>'}}\n"
    '{%- for message in loop_messages %}\n'
    "  {%- set content = message['content'] %}\n"
    "  {%- if message.role == 'user' %}\n"
    "    {{- '<|START_OF_TURN_TOKEN|><|USER_TOKEN|>' + content|trim + '<|END_OF_TURN_TOKEN|>' }}\n"
    "  {%- elif message.role == 'system' %}\n"
    "    {{- '<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>' + content|trim + '<|END_OF_TURN_TOKEN|>' }}\n"
    "  {%- elif message.role == 'assistant' and message.tool_calls is defined %}\n"
    "    {{- '<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>' }}\n"
    '    {%- if message.content is defined %}\n'
    '        {{- message.content|trim }}\n'
    '    {%- endif %}\n'
    "    {{- '\\nAction:\\n```json\\n[\\n' }}\n"
    '    {%- for tool_call in message.tool_calls %}\n'
    '        {%- if tool_call.function is defined %}\n'
    '            {%- set tool_call = tool_call.function %}\n'
    '        {%- endif %}\n'
    "        {{- '{\\n'|indent(4, first=true) }}\n"
    '        {{- \'"tool_name": "\'|indent(8, first=true) + tool_call.name + \'",\\n\' }}\n'
    '        {{- \'"parameters": \'|indent(8, first=true) }}\n'
    '        {%- if tool_call.arguments is defined and tool_call.arguments|length > 0 %}    \n'
    '            {{- tool_call.arguments|tojson(indent=4)|indent(8) }}\n'
    "            {{- '\\n' }}\n"
    '        {%- else %}\n'
    "            {{- '{}\\n' }}\n"
    '        {%- endif %}\n'
    "        {{- '}'|indent(4, first=true) }}\n"
    '        {%- if not loop.last %}\n'
    "            {{- ',\\n' }}\n"
    '        {%- endif %}\n'
    '    {%- endfor %}\n'
    '    {{- "\\n]```\\n" }}\n'
    "  {%- elif message.role == 'assistant' %}\n"
    "    {{- '<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>'  + content|trim + '<|END_OF_TURN_TOKEN|>' }}\n"
    "  {%- elif message.role == 'tool' %}\n"
    "    {{- '<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|><results>\\n' }}\n"
    '    {{- message.content|trim }}\n'
    "    {{- '</results><|END_OF_TURN_TOKEN|>' }}\n"
    '  {%- endif %}\n'
    '{%- endfor %}\n'
    "{{-'<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>Write \\'Action:\\' followed by a json-formatted list of actions that you want to perform in order to produce a good response to the user\\'s last input. You can use any of the supplied tools any number of times, but you should aim to execute the minimum number of necessary actions for the input. You should use the `directly-answer` tool if calling the other tools is unnecessary. The list of actions you want to call should be formatted as a list of json objects, for example:\n"
    '```json\n'
    '[\n'
    '    {\n'
    '        "tool_name": title of the tool in the specification,\n'
    '        "parameters": a dict of parameters to input into the tool as they are defined in the specs, or {} if it takes no parameters\n'
    '    }\n'
    "]```<|END_OF_TURN_TOKEN|>'}}\n"
    '{%- if add_generation_prompt %}\n'
    "  {{- '<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>' }}\n"
    '{%- endif %}\n'
)

PHI4_MINI_TEMPLATE = (
    "{% for message in messages %}{% if message['role'] == 'system' and 'tools' in message and "
    "message['tools'] is not none %}{{ '<|' + message['role'] + '|>' + message['content'] + "
    "'<|tool|>' + message['tools'] + '<|/tool|>' + '<|end|>' }}{% else %}{{ '<|' + message['role'] "
    "+ '|>' + message['content'] + '<|end|>' }}{% endif %}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|assistant|>' }}{% else %}{{ eos_token }}{% endif %}"
)

GLM46_TEMPLATE = (
    '[gMASK]<sop>\n'
    '{%- if tools -%}\n'
    '<|system|>\n'
    '# Tools\n'
    '\n'
    'You may call one or more functions to assist with the user query.\n'
    '\n'
    'You are provided with function signatures within <tools></tools> XML tags:\n'
    '<tools>\n'
    '{% for tool in tools %}\n'
    '{{ tool | tojson(ensure_ascii=False) }}\n'
    '{% endfor %}\n'
    '</tools>\n'
    '\n'
    'For each function call, output the function name and arguments within the following XML format:\n'
    '<tool_call>{function-name}\n'
    '<arg_key>{arg-key-1}</arg_key>\n'
    '<arg_value>{arg-value-1}</arg_value>\n'
    '<arg_key>{arg-key-2}</arg_key>\n'
    '<arg_value>{arg-value-2}</arg_value>\n'
    '...\n'
    '</tool_call>{%- endif -%}\n'
    '{%- macro visible_text(content) -%}\n'
    '    {%- if content is string -%}\n'
    '        {{- content }}\n'
    '    {%- elif content is iterable and content is not mapping -%}\n'
    '        {%- for item in content -%}\n'
    "            {%- if item is mapping and item.type == 'text' -%}\n"
    '                {{- item.text }}\n'
    '            {%- elif item is string -%}\n'
    '                {{- item }}\n'
    '            {%- endif -%}\n'
    '        {%- endfor -%}\n'
    '    {%- else -%}\n'
    '        {{- content }}\n'
    '    {%- endif -%}\n'
    '{%- endmacro -%}\n'
    '{%- set ns = namespace(last_user_index=-1) %}\n'
    '{%- for m in messages %}\n'
    "    {%- if m.role == 'user' %}\n"
    '        {% set ns.last_user_index = loop.index0 -%}\n'
    '    {%- endif %}\n'
    '{%- endfor %}\n'
    '{% for m in messages %}\n'
    "{%- if m.role == 'user' -%}<|user|>\n"
    '{{ visible_text(m.content) }}\n'
    '{{- \'/nothink\' if (enable_thinking is defined and not enable_thinking and not visible_text(m.content).endswith("/nothink")) else \'\' -}}\n'
    "{%- elif m.role == 'assistant' -%}\n"
    '<|assistant|>\n'
    "{%- set reasoning_content = '' %}\n"
    '{%- set content = visible_text(m.content) %}\n'
    '{%- if m.reasoning_content is string %}\n'
    '    {%- set reasoning_content = m.reasoning_content %}\n'
    '{%- else %}\n'
    "    {%- if '</think>' in content %}\n"
    "        {%- set reasoning_content = content.split('</think>')[0].rstrip('\\n').split('<think>')[-1].lstrip('\\n') %}\n"
    "        {%- set content = content.split('</think>')[-1].lstrip('\\n') %}\n"
    '    {%- endif %}\n'
    '{%- endif %}\n'
    '{%- if loop.index0 > ns.last_user_index and reasoning_content -%}\n'
    "{{ '\\n<think>' + reasoning_content.strip() +  '</think>'}}\n"
    '{%- else -%}\n'
    "{{ '\\n<think></think>' }}\n"
    '{%- endif -%}\n'
    '{%- if content.strip() -%}\n'
    "{{ '\\n' + content.strip() }}\n"
    '{%- endif -%}\n'
    '{% if m.tool_calls %}\n'
    '{% for tc in m.tool_calls %}\n'
    '{%- if tc.function %}\n'
    '    {%- set tc = tc.function %}\n'
    '{%- endif %}\n'
    "{{ '\\n<tool_call>' + tc.name }}\n"
    '{% set _args = tc.arguments or {} %}\n'
    '{% if _args is not mapping %}\n'
    '    {{ raise_exception("Invalid tool call arguments passed: " + _args | string) }}\n'
    '{% endif %}\n'
    '{% for k, v in _args.items() %}\n'
    '<arg_key>{{ k }}</arg_key>\n'
    '<arg_value>{{ v | tojson(ensure_ascii=False) if v is not string else v }}</arg_value>\n'
    '{% endfor %}\n'
    '</tool_call>{% endfor %}\n'
    '{% endif %}\n'
    "{%- elif m.role == 'tool' -%}\n"
    '{%- if m.content is string -%}\n'
    '{%- if loop.first or (messages[loop.index0 - 1].role != "tool") %}\n'
    "    {{- '<|observation|>' }}\n"
    '{%- endif %}\n'
    "{{- '\\n<tool_response>\\n' }}\n"
    '{{- m.content }}\n'
    "{{- '\\n</tool_response>' }}\n"
    '{%- else -%}\n'
    '<|observation|>{% for tr in m.content %}\n'
    '\n'
    '<tool_response>\n'
    '{{ tr.output if tr.output is defined else tr }}\n'
    '</tool_response>{% endfor -%}\n'
    '{% endif -%}\n'
    "{%- elif m.role == 'system' -%}\n"
    '<|system|>\n'
    '{{ visible_text(m.content) }}\n'
    '{%- endif -%}\n'
    '{%- endfor -%}\n'
    '{%- if add_generation_prompt -%}\n'
    "    <|assistant|>{{- '\\n<think></think>' if (enable_thinking is defined and not enable_thinking) else '' -}}\n"
    '{%- endif -%}\n'
)

GLM47_FLASH_TEMPLATE = (
    '[gMASK]<sop>\n'
    '{%- if tools -%}\n'
    '<|system|>\n'
    '# Tools\n'
    '\n'
    'You may call one or more functions to assist with the user query.\n'
    '\n'
    'You are provided with function signatures within <tools></tools> XML tags:\n'
    '<tools>\n'
    '{% for tool in tools %}\n'
    '{{ tool | tojson(ensure_ascii=False) }}\n'
    '{% endfor %}\n'
    '</tools>\n'
    '\n'
    'For each function call, output the function name and arguments within the following XML format:\n'
    '<tool_call>{function-name}<arg_key>{arg-key-1}</arg_key><arg_value>{arg-value-1}</arg_value><arg_key>{arg-key-2}</arg_key><arg_value>{arg-value-2}</arg_value>...</tool_call>{%- endif -%}\n'
    '{%- macro visible_text(content) -%}\n'
    '    {%- if content is string -%}\n'
    '        {{- content }}\n'
    '    {%- elif content is iterable and content is not mapping -%}\n'
    '        {%- for item in content -%}\n'
    "            {%- if item is mapping and item.type == 'text' -%}\n"
    '                {{- item.text }}\n'
    '            {%- elif item is string -%}\n'
    '                {{- item }}\n'
    '            {%- endif -%}\n'
    '        {%- endfor -%}\n'
    '    {%- else -%}\n'
    '        {{- content }}\n'
    '    {%- endif -%}\n'
    '{%- endmacro -%}\n'
    '{%- set ns = namespace(last_user_index=-1) %}\n'
    '{%- for m in messages %}\n'
    "    {%- if m.role == 'user' %}\n"
    '        {% set ns.last_user_index = loop.index0 -%}\n'
    '    {%- endif %}\n'
    '{%- endfor %}\n'
    '{% for m in messages %}\n'
    "{%- if m.role == 'user' -%}<|user|>{{ visible_text(m.content) }}\n"
    "{%- elif m.role == 'assistant' -%}\n"
    '<|assistant|>\n'
    "{%- set reasoning_content = '' %}\n"
    '{%- set content = visible_text(m.content) %}\n'
    '{%- if m.reasoning_content is string %}\n'
    '    {%- set reasoning_content = m.reasoning_content %}\n'
    '{%- else %}\n'
    "    {%- if '</think>' in content %}\n"
    "        {%- set reasoning_content = content.split('</think>')[0].rstrip('\\n').split('<think>')[-1].lstrip('\\n') %}\n"
    "        {%- set content = content.split('</think>')[-1].lstrip('\\n') %}\n"
    '    {%- endif %}\n'
    '{%- endif %}\n'
    '{%- if ((clear_thinking is defined and not clear_thinking) or loop.index0 > ns.last_user_index) and reasoning_content -%}\n'
    "{{ '<think>' + reasoning_content.strip() +  '</think>'}}\n"
    '{%- else -%}\n'
    "{{ '</think>' }}\n"
    '{%- endif -%}\n'
    '{%- if content.strip() -%}\n'
    '{{ content.strip() }}\n'
    '{%- endif -%}\n'
    '{% if m.tool_calls %}\n'
    '{% for tc in m.tool_calls %}\n'
    '{%- if tc.function %}\n'
    '    {%- set tc = tc.function %}\n'
    '{%- endif %}\n'
    "{{- '<tool_call>' + tc.name -}}\n"
    '{% set _args = tc.arguments %}{% for k, v in _args.items() %}<arg_key>{{ k }}</arg_key><arg_value>{{ v | tojson(ensure_ascii=False) if v is not string else v }}</arg_value>{% endfor %}</tool_call>{% endfor %}\n'
    '{% endif %}\n'
    "{%- elif m.role == 'tool' -%}\n"
    '{%- if m.content is string -%}\n'
    '{%- if loop.first or (messages[loop.index0 - 1].role != "tool") %}\n'
    "    {{- '<|observation|>' }}\n"
    '{%- endif %}\n'
    "{{- '<tool_response>' }}\n"
    '{{- m.content }}\n'
    "{{- '</tool_response>' }}\n"
    '{%- else -%}\n'
    '<|observation|>{% for tr in m.content %}\n'
    '<tool_response>{{ tr.output if tr.output is defined else tr }}</tool_response>{% endfor -%}\n'
    '{% endif -%}\n'
    "{%- elif m.role == 'system' -%}\n"
    '<|system|>{{ visible_text(m.content) }}\n'
    '{%- endif -%}\n'
    '{%- endfor -%}\n'
    '{%- if add_generation_prompt -%}\n'
    "    <|assistant|>{{- '</think>' if (enable_thinking is defined and not enable_thinking) else '<think>' -}}\n"
    '{%- endif -%}'
)

SEED_OSS_TEMPLATE = (
    '{# ----------‑‑‑ special token variables ‑‑‑---------- #}\n'
    "{%- set bos_token              = '<seed:bos>'               -%}\n"
    "{%- set eos_token              = '<seed:eos>'               -%}\n"
    "{%- set pad_token              = '<seed:pad>'               -%}\n"
    "{%- set toolcall_begin_token   = '<seed:tool_call>'         -%}\n"
    "{%- set toolcall_end_token     = '</seed:tool_call>'        -%}\n"
    "{%- set think_begin_token      = '<seed:think>'             -%}\n"
    "{%- set think_end_token        = '</seed:think>'            -%}\n"
    "{%- set budget_begin_token     = '<seed:cot_budget_reflect>'-%}\n"
    "{%- set budget_end_token       = '</seed:cot_budget_reflect>'-%}\n"
    '{# -------------- reflection-interval lookup -------------- #}\n'
    '{%- if not thinking_budget is defined %}\n'
    '{%- set thinking_budget = -1 -%}\n'
    '{%- endif -%}\n'
    '{%- set budget_reflections_v05 = {\n'
    '     0:      0,\n'
    '     512:    128,\n'
    '     1024:   256,\n'
    '     2048:   512,\n'
    '     4096:   512,\n'
    '     8192:   1024,\n'
    '     16384:  1024\n'
    '} -%}\n'
    '{# Find the first gear that is greater than or equal to the thinking_budget. #}\n'
    '{%- set ns = namespace(interval = None) -%}\n'
    '{%- for k, v in budget_reflections_v05 | dictsort -%}\n'
    '    {%- if ns.interval is none and thinking_budget <= k -%}\n'
    '        {%- set ns.interval = v -%}\n'
    '    {%- endif -%}\n'
    '{%- endfor -%}\n'
    '{# If it exceeds the maximum gear, use the value of the last gear #}\n'
    '{%- if ns.interval is none -%}\n'
    '    {%- set ns.interval = budget_reflections_v05[16384] -%}\n'
    '{%- endif -%}\n'
    '{# ---------- Preprocess the system message ---------- #}\n'
    '{%- if messages[0]["role"] == "system" %}\n'
    '{%- set system_message = messages[0]["content"] %}\n'
    '{%- set loop_messages = messages[1:] %}\n'
    '{%- else %}\n'
    '{%- set loop_messages = messages %}\n'
    '{%- endif %}\n'
    '{# ---------- Ensure tools exist ---------- #}\n'
    '{%- if not tools is defined or tools is none %}\n'
    '{%- set tools = [] %}\n'
    '{%- endif %}\n'
    '{# tools2doc.jinja #}\n'
    '{%- macro py_type(t) -%}\n'
    '    {%- if t == "string" -%}str\n'
    '    {%- elif t in ("number", "integer") -%}int\n'
    '    {%- elif t == "boolean" -%}bool\n'
    '    {%- elif t == "array" -%}list\n'
    '    {%- else -%}Any{%- endif -%}\n'
    '{%- endmacro -%}\n'
    '{# ---------- Output the system block ---------- #}\n'
    '{%- if system_message is defined %}\n'
    '{{ bos_token + "system\\n" + system_message }}\n'
    '{%- else %}\n'
    '{%- if tools is iterable and tools | length > 0 %}\n'
    '{{ bos_token + "system\\nYou are Doubao, a helpful AI assistant. You may call one or more functions to assist with the user query." }}\n'
    '{%- endif %}\n'
    '{%- endif %}\n'
    '{%- if use_json_tooldef is defined and use_json_tooldef %}\n'
    '\n'
    '{{"Tool List:\\nYou are authorized to use the following tools (described in JSON Schema format). Before performing any task, you must decide how to call them based on the descriptions and parameters of these tools."}}\n'
    '{{ tools | tojson(ensure_ascii=False) }}\n'
    '{%- else %}\n'
    '{%- for item in tools if item.type == "function" %}\n'
    '\n'
    '\n'
    'Function:\n'
    'def {{ item.function.name }}(\n'
    '{%- for name, spec in item.function.parameters.properties.items() %}\n'
    '        {{- name }}: {{ py_type(spec.type) }}{% if not loop.last %},{% endif %}\n'
    '{%- endfor %}):\n'
    '    """\n'
    '    {{ item.function.description | trim }}\n'
    '\n'
    '    {# ---------- Args ---------- #}\n'
    '    {%- if item.function.parameters.properties %}\n'
    '    Args:\n'
    '    {%- for name, spec in item.function.parameters.properties.items() %}\n'
    '\n'
    '    - {{ name }} ({{ py_type(spec.type) }})\n'
    '      {%- if name in item.function.parameters.required %} [必填]{% else %} [选填]{% endif %}:\n'
    '      {{- " " ~ (spec.description or "") }}\n'
    '    {%- endfor %}\n'
    '    {%- endif %}\n'
    '\n'
    '    {# ---------- Returns ---------- #}\n'
    '    {%- if item.function.returns is defined\n'
    '          and item.function.returns.properties is defined\n'
    '          and item.function.returns.properties %}\n'
    '    Returns:\n'
    '    {%- for name, spec in item.function.returns.properties.items() %}\n'
    '\n'
    '    - {{ name }} ({{ py_type(spec.type) }}):\n'
    '      {{- " " ~ (spec.description or "") }}\n'
    '    {%- endfor %}\n'
    '    {%- endif %}\n'
    '\n'
    '    """\n'
    '{%- endfor %}\n'
    '{%- endif %}\n'
    '{%- if tools is iterable and tools | length > 0 %}\n'
    '\n'
    '{{"工具调用请遵循如下格式:\\n<seed:tool_call>\\n<function=example_function_name>\\n<parameter=example_parameter_1>value_1</parameter>\\n<parameter=example_parameter_2>This is the value for the second parameter\\nthat can span\\nmultiple lines</parameter>\\n</function>\\n</seed:tool_call>\\n"}}\n'
    '{%- endif %}\n'
    '{# End the system block line #}\n'
    '{%- if system_message is defined or tools is iterable and tools | length > 0 %}\n'
    '{{ eos_token }}\n'
    '{%- endif %}\n'
    '{# ---------- Thinking Budget ---------- #}\n'
    '{%- if thinking_budget is defined %}\n'
    '{%- if thinking_budget == 0 %}\n'
    '{{ bos_token+"system" }}\n'
    '{{ "You are an intelligent assistant that can answer questions in one step without the need for reasoning and thinking, that is, your thinking budget is 0. Next, please skip the thinking process and directly start answering the user\'s questions." }}\n'
    '{{ eos_token }}\n'
    '{%- elif not thinking_budget == -1 %}\n'
    '{{ bos_token+"system" }}\n'
    '{{ "You are an intelligent assistant with reflective ability. In the process of thinking and reasoning, you need to strictly follow the thinking budget, which is "}}{{thinking_budget}}{{". That is, you need to complete your thinking within "}}{{thinking_budget}}{{" tokens and start answering the user\'s questions. You will reflect on your thinking process every "}}{{ns.interval}}{{" tokens, stating how many tokens have been used and how many are left."}}\n'
    '{{ eos_token }}\n'
    '{%- endif %}\n'
    '{%- endif %}\n'
    '{# ---------- List the historical messages one by one ---------- #}\n'
    '{%- for message in loop_messages %}\n'
    '{%- if message.role == "assistant"\n'
    '  and message.tool_calls is defined\n'
    '  and message.tool_calls is iterable\n'
    '  and message.tool_calls | length > 0 %}\n'
    '{{ bos_token + message.role }}\n'
    '{%- if message.reasoning_content is defined and message.reasoning_content is string and message.reasoning_content | trim | length > 0 %}\n'
    '{{ "\\n" + think_begin_token + message.reasoning_content | trim + think_end_token }}\n'
    '{%- endif %}\n'
    '{%- if message.content is defined and message.content is string and message.content | trim | length > 0 %}\n'
    '{{ "\\n" + message.content | trim + "\\n" }}\n'
    '{%- endif %}\n'
    '{%- for tool_call in message.tool_calls %}\n'
    '{%- if tool_call.function is defined %}{% set tool_call = tool_call.function %}{% endif %}\n'
    '{{ "\\n" + toolcall_begin_token + "\\n<function=" + tool_call.name + ">\\n" }}\n'
    '{%- if tool_call.arguments is defined %}\n'
    '{%- for arg_name, arg_value in tool_call.arguments | items %}\n'
    '{{ "<parameter=" + arg_name + ">" }}\n'
    '{%- set arg_value = arg_value if arg_value is string else arg_value | string %}\n'
    '{{ arg_value+"</parameter>\\n" }}\n'
    '{%- endfor %}\n'
    '{%- endif %}\n'
    '{{ "</function>\\n" + toolcall_end_token }}\n'
    '{%- endfor %}\n'
    '{{ eos_token }}\n'
    '{%- elif message.role in ["user", "system"] %}\n'
    '{{ bos_token + message.role + "\\n" + message.content + eos_token }}\n'
    '{%- elif message.role == "assistant" %}\n'
    '{{ bos_token + message.role }}\n'
    '{%- if message.reasoning_content is defined and message.reasoning_content is string and message.reasoning_content | trim | length > 0 %}\n'
    '{{ "\\n" + think_begin_token + message.reasoning_content | trim + think_end_token }}\n'
    '{%- endif %}\n'
    '{%- if message.content is defined and message.content is string and message.content | trim | length > 0 %}\n'
    '{{ "\\n" + message.content | trim + eos_token }}\n'
    '{%- endif %}\n'
    '{# Include the tool role #}\n'
    '{%- else %}\n'
    '{{ bos_token + message.role + "\\n" + message.content + eos_token }}\n'
    '{%- endif %}\n'
    '{%- endfor %}\n'
    '{# ---------- Control the model to start continuation ---------- #}\n'
    '{%- if add_generation_prompt %}\n'
    '{{ bos_token+"assistant\\n" }}\n'
    '{%- if thinking_budget == 0 %}\n'
    '{{ think_begin_token + "\\n" + budget_begin_token + "The current thinking budget is 0, so I will directly start answering the question." + budget_end_token + "\\n" + think_end_token }}\n'
    '{%- endif %}\n'
    '{%- endif %}'
)


# ---- conversations for the real chat templates ----
def _m(role, content, **kw):
    d = {"role": role, "content": content}
    d.update(kw)
    return d


SYS = _m("system", "You are a concise assistant.")
U1 = _m("user", "What is the capital of France?")
A1 = _m("assistant", "Paris.")
U2 = _m("user", "And of Germany?")
A2 = _m("assistant", "Berlin.")

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather",
        "description": "Get the current weather for a city.",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "description": "City name, e.g. Paris"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "description": "Temperature unit"}},
            "required": ["city"]}}},
    {"type": "function", "function": {
        "name": "search_docs",
        "description": "Search the documentation index.",
        "parameters": {"type": "object", "properties": {
            "query": {"type": "string", "description": "Search terms"},
            "max_results": {"type": "integer", "description": "How many results to return"},
            "tags": {"type": "array", "items": {"type": "string"}, "description": "Optional tag filters"}},
            "required": ["query"]}}},
]

U_TOOL = _m("user", "What's the weather in Paris?")
CALL_DICT = {"id": "a1b2c3d4e", "type": "function",
             "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}}
CALL_STR = {"id": "a1b2c3d4e", "type": "function",
            "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"unit\": \"celsius\"}"}}
CALL2_DICT = {"id": "f5g6h7i8j", "type": "function",
              "function": {"name": "search_docs", "arguments": {"query": "weather api", "max_results": 3}}}
A_CALL = _m("assistant", "", tool_calls=[CALL_DICT])
A_CALL_STR = _m("assistant", "", tool_calls=[CALL_STR])
A_CALL_TWO = _m("assistant", "", tool_calls=[CALL_DICT, CALL2_DICT])
A_CALL_WITH_TEXT = _m("assistant", "Let me check.", tool_calls=[CALL_DICT])
T_RESULT = _m("tool", "{\"temperature\": 18, \"condition\": \"sunny\"}", tool_call_id="a1b2c3d4e")
T_RESULT2 = _m("tool", "3 documents found", tool_call_id="f5g6h7i8j")
A_FINAL = _m("assistant", "It is 18 °C and sunny in Paris.")

DATE = {"date_string": "15 Jan 2025"}


def case(name, messages, add_generation_prompt=True, tools=None, **extra):
    return {"name": name, "messages": messages, "tools": tools,
            "add_generation_prompt": add_generation_prompt, "extra": extra}


def basic_cases(**extra):
    """The conversations every template gets (extra: kwargs passed to every render)."""
    return [
        case("single_user", [U1], True, **extra),
        case("system_user", [SYS, U1], True, **extra),
        case("multi_turn", [SYS, U1, A1, U2], True, **extra),
        case("multi_turn_no_system", [U1, A1, U2], True, **extra),
        case("ends_with_assistant_no_generation_prompt", [SYS, U1, A1], False, **extra),
        case("user_no_generation_prompt", [U1], False, **extra),
        case("empty_user_content", [_m("user", "")], True, **extra),
        case("empty_system_content", [_m("system", ""), U1], True, **extra),
        case("whitespace_content", [_m("user", "  padded both sides \n\n"), _m("assistant", "\tok\t "),
                                    _m("user", "\n")], True, **extra),
        case("unicode_content", [_m("user", "Grüße, 世界! 🌈 ¿qué? \u00a0nbsp \u2028sep"),
                                 _m("assistant", "Ça va 👍"), _m("user", "東京\u3000は？")], True, **extra),
        case("template_like_content", [_m("user", "{{ 1 + 1 }} {% if x %} {# c #} \\n literal, quotes ' \" <b>&amp;")],
             True, **extra),
    ]


def tool_cases(**extra):
    """Tool definitions, a call (arguments as a dict and as a JSON string), its result and the reply."""
    return [
        case("tools_user", [U_TOOL], True, TOOLS, **extra),
        case("tools_system_user", [SYS, U_TOOL], True, TOOLS, **extra),
        case("tool_call_round_trip", [SYS, U_TOOL, A_CALL, T_RESULT], True, TOOLS, **extra),
        case("tool_call_round_trip_string_arguments", [U_TOOL, A_CALL_STR, T_RESULT], True, TOOLS, **extra),
        case("tool_call_then_answer", [U_TOOL, A_CALL, T_RESULT, A_FINAL], False, TOOLS, **extra),
        # "tools": [] reaches the template as an empty list, not None (vLLM passes it on).
        case("empty_tools_list", [SYS, U1], True, [], **extra),
    ]


def parallel_tool_case(**extra):
    return case("parallel_tool_calls", [U_TOOL, A_CALL_TWO, T_RESULT, T_RESULT2], True, TOOLS, **extra)


def glm_cases(glm47):
    """GLM-4.5's and GLM-4.7's conversations: thinking on and off, reasoning in the history and sent
    back, tool calls with structured arguments and tool results as a list; GLM-4.5 adds its
    /nothink turns and text parts, GLM-4.7 its clear_thinking."""
    thinks = _m("assistant", "<think>\nThe user asks about France.\n</think>\n\nParis.")
    thinking_off = [case("enable_thinking_false", [U1], True, enable_thinking=False)]
    if not glm47:
        thinking_off += [
            case("enable_thinking_false_multi_turn", [SYS, U1, A1, U2], True, enable_thinking=False),
            case("enable_thinking_false_user_says_nothink", [_m("user", "Hi /nothink")], True,
                 enable_thinking=False)]
    kept = [case("think_in_history_kept_without_clear_thinking", [U1, thinks, U2], True,
                 clear_thinking=False)] if glm47 else []
    parts = [] if glm47 else [
        case("text_parts_content",
             [_m("system", [{"type": "text", "text": "Be brief."}]),
              _m("user", [{"type": "text", "text": "Hello"}, {"type": "image_url", "image_url": {"url": "x"}},
                          {"type": "text", "text": " world"}])], True)]
    return basic_cases() + tool_cases() + [
        parallel_tool_case(),
        case("assistant_text_and_tool_call", [U_TOOL, A_CALL_WITH_TEXT, T_RESULT], True, TOOLS),
    ] + thinking_off + [
        case("enable_thinking_true", [U1], True, enable_thinking=True),
        case("think_in_history_is_stripped", [U1, thinks, U2], True),
    ] + kept + [
        case("think_after_last_query_is_kept", [U1, thinks], False),
        case("reasoning_content_field", [U1, _m("assistant", "Paris.", reasoning_content="Capital of France.")],
             False),
        case("reasoning_across_tool_calls",
             [U_TOOL, _m("assistant", "", reasoning_content="I need the weather.", tool_calls=[CALL_DICT]),
              T_RESULT, _m("assistant", "It is 18 °C and sunny in Paris.", reasoning_content="It is sunny.")],
             False, TOOLS),
    ] + parts + [
        case("tool_results_as_a_list", [U_TOOL, A_CALL, _m("tool", [{"output": "18 C"}, "plain text"])], True,
             TOOLS),
        case("tool_call_without_arguments",
             [U_TOOL, _m("assistant", "", tool_calls=[
                 {"id": "n1", "type": "function", "function": {"name": "get_time", "arguments": {}}}])], False),
        case("tool_call_with_structured_arguments",
             [U_TOOL, _m("assistant", "", tool_calls=[
                 {"id": "s1", "type": "function", "function": {"name": "search_docs", "arguments": {
                     "query": "naïve \"quotes\"", "max_results": 3, "tags": ["a", "b"], "strict": True,
                     "filter": {"lang": "fr", "min": 1.5}, "none": None}}}])], False, TOOLS),
    ]


ALTERNATION_ERROR = case("non_alternating_roles_error", [U1, U2], True)


LLAMA_CPP = ("llama.cpp models/templates/{} (verbatim tokenizer_config.json chat_template written by "
             "llama.cpp's scripts/get_chat_template.py; read from the llama.cpp tree vendored in the "
             "llama-cpp-python 0.3.16 sdist)")
LLAMA_CPP_0336 = ("llama.cpp models/templates/{} (the chat_template llama.cpp's scripts/get_chat_template.py "
                  "wrote; read from the llama.cpp tree vendored in the llama-cpp-python 0.3.36 sdist, kept "
                  "byte for byte with the file's final line break)")
XINFERENCE = ("xinference 1.0.1 xinference/model/llm/llm_family.json entry '{}' with xinference's edits "
              "undone ({})")

CHAT_TEMPLATES = [
    {"name": "qwen2.5", "model": "Qwen/Qwen2.5-7B-Instruct",
     "source": LLAMA_CPP.format("Qwen-Qwen2.5-7B-Instruct.jinja")
     + "; byte-identical to xinference 1.0.1 llm_family.json 'qwen2.5-instruct'",
     "template": QWEN25_TEMPLATE,
     "special_tokens": {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"},
     "cases": basic_cases() + tool_cases() + [
         parallel_tool_case(),
         case("assistant_text_and_tool_call", [U_TOOL, A_CALL_WITH_TEXT, T_RESULT], True, TOOLS),
         case("tool_call_without_tools_list", [U_TOOL, A_CALL, T_RESULT], True),
     ]},
    {"name": "qwen3", "model": "Qwen/Qwen3-0.6B",
     "source": LLAMA_CPP.format("Qwen-Qwen3-0.6B.jinja"),
     "template": QWEN3_TEMPLATE,
     "special_tokens": {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"},
     "cases": basic_cases() + tool_cases() + [
         parallel_tool_case(),
         case("enable_thinking_false", [U1], True, enable_thinking=False),
         case("enable_thinking_true", [U1], True, enable_thinking=True),
         case("think_in_history_is_stripped",
              [U1, _m("assistant", "<think>\nThe user asks about France.\n</think>\n\nParis."), U2], True),
         case("think_after_last_query_is_kept",
              [U1, _m("assistant", "<think>\nThe user asks about France.\n</think>\n\nParis.")], False),
         case("reasoning_content_field",
              [U1, _m("assistant", "Paris.", reasoning_content="Capital of France.")], False),
         # Interleaved thinking: a turn that reasoned, called a tool, read its result, reasoned
         # again and answered (the Responses API test sends it as items).
         case("reasoning_across_tool_calls",
              [U_TOOL, _m("assistant", "", reasoning_content="I need the weather.", tool_calls=[CALL_STR]),
               T_RESULT, _m("assistant", "It is 18 °C and sunny in Paris.", reasoning_content="It is sunny.")],
              False, TOOLS),
         case("tool_response_in_user_message",
              [U_TOOL, A_CALL, _m("user", "<tool_response>\n{\"temperature\": 18}\n</tool_response>")], True,
              TOOLS),
     ]},
    {"name": "llama3.1", "model": "meta-llama/Llama-3.1-8B-Instruct",
     "source": LLAMA_CPP.format("meta-llama-Llama-3.1-8B-Instruct.jinja")
     + "; byte-identical to llama.cpp's meta-llama-Llama-3.3-70B-Instruct.jinja and to xinference 1.0.1 "
       "llm_family.json 'llama-3.1-instruct'",
     "template": LLAMA31_TEMPLATE,
     "special_tokens": {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
     "cases": basic_cases(**DATE) + tool_cases(**DATE) + [
         case("default_date_without_date_string", [SYS, U1], True),
         case("tools_in_system_message", [SYS, U_TOOL], True, TOOLS, tools_in_user_message=False, **DATE),
         case("builtin_tools", [SYS, U1], True, builtin_tools=["brave_search", "wolfram_alpha", "code_interpreter"],
              **DATE),
         case("builtin_tool_call", [U1, _m("assistant", "", tool_calls=[
             {"id": "b1", "type": "function", "function": {"name": "brave_search",
                                                           "arguments": {"query": "capital of France"}}}]),
              _m("ipython", "Paris is the capital of France.")], True,
              builtin_tools=["brave_search", "wolfram_alpha"], **DATE),
         case("parallel_tool_calls_error", [U_TOOL, A_CALL_TWO, T_RESULT, T_RESULT2], True, TOOLS, **DATE),
         case("tools_without_user_message_error", [SYS], True, TOOLS, **DATE),
     ]},
    {"name": "llama3.2", "model": "meta-llama/Llama-3.2-3B-Instruct",
     "source": LLAMA_CPP.format("meta-llama-Llama-3.2-3B-Instruct.jinja")
     + " (meta-llama/Llama-3.2-1B-Instruct ships the same template)",
     "template": LLAMA32_TEMPLATE,
     "special_tokens": {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
     "cases": basic_cases(**DATE) + tool_cases(**DATE) + [
         case("date_from_strftime_now", [SYS, U1], True),
         case("parallel_tool_calls_error", [U_TOOL, A_CALL_TWO, T_RESULT, T_RESULT2], True, TOOLS, **DATE),
         case("tools_without_user_message_error", [SYS], True, TOOLS, **DATE),
     ]},
    {"name": "mistral-v0.3", "model": "mistralai/Mistral-7B-Instruct-v0.3",
     "source": XINFERENCE.format("mistral-instruct-v0.3", "'<s>' -> bos_token, '</s>' -> eos_token, the "
                                 "newlines of \"\\n\\n\" back to escapes"),
     "template": MISTRAL_V03_TEMPLATE,
     "special_tokens": {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"},
     "cases": basic_cases() + tool_cases() + [
         parallel_tool_case(),
         ALTERNATION_ERROR,
         case("bad_tool_call_id_error", [U_TOOL, _m("assistant", "", tool_calls=[dict(CALL_DICT, id="call_1")]),
                                         _m("tool", "18 C", tool_call_id="call_1")], True, TOOLS),
         case("unsupported_role_error", [U1, _m("developer", "x")], True),
     ]},
    {"name": "mistral-nemo", "model": "mistralai/Mistral-Nemo-Instruct-2407",
     "source": LLAMA_CPP.format("mistralai-Mistral-Nemo-Instruct-2407.jinja"),
     "template": MISTRAL_NEMO_TEMPLATE,
     "special_tokens": {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"},
     "cases": basic_cases() + tool_cases() + [
         parallel_tool_case(),
         ALTERNATION_ERROR,
         case("bad_tool_call_id_error", [U_TOOL, _m("assistant", "", tool_calls=[dict(CALL_DICT, id="call_1")]),
                                         _m("tool", "18 C", tool_call_id="call_1")], True, TOOLS),
     ]},
    {"name": "mistral-v1", "model": "mistralai/Mistral-7B-Instruct-v0.2",
     "source": "llama.cpp tests/test-chat-template.cpp case \"mistralai/Mistral-7B-Instruct-v0.2 (mistralai 'v1' "
               "template with a system prompt)\" (llama-cpp-python 0.3.16 sdist); equal to "
               + XINFERENCE.format("mistral-instruct-v0.1", "'<s>' -> bos_token, '</s>' -> eos_token, the "
                                   "newlines of '\\n\\n' back to escapes")
               + ", which lists it for Mistral-7B-Instruct-v0.1, v0.2 and Mixtral-8x7B-Instruct-v0.1",
     "template": MISTRAL_V1_TEMPLATE,
     "special_tokens": {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"},
     "cases": basic_cases() + [
         ALTERNATION_ERROR,
         case("tool_role_error", [U1, _m("tool", "x", tool_call_id="a1b2c3d4e")], True),
     ]},
    {"name": "gemma2", "model": "google/gemma-2-2b-it",
     "source": LLAMA_CPP.format("google-gemma-2-2b-it.jinja")
     + "; equal to xinference 1.0.1 'gemma-2-it' (listed for gemma-2-2b-it and gemma-2-9b-it) with "
       "'<bos>' -> bos_token",
     "template": GEMMA2_TEMPLATE,
     "special_tokens": {"bos_token": "<bos>", "eos_token": "<eos>", "unk_token": "<unk>", "pad_token": "<pad>"},
     "cases": basic_cases() + [
         ALTERNATION_ERROR,
         case("assistant_first_error", [A1, U1], True),
         case("user_assistant_no_generation_prompt", [U1, A1], False),
         case("multi_turn_trimmed_content", [_m("user", "  Hi  "), _m("assistant", "\n Hello \n"), U2], True),
     ]},
    {"name": "phi3.5", "model": "microsoft/Phi-3.5-mini-instruct",
     "source": LLAMA_CPP.format("microsoft-Phi-3.5-mini-instruct.jinja"),
     "template": PHI35_TEMPLATE,
     "special_tokens": {"bos_token": "<s>", "eos_token": "<|endoftext|>", "unk_token": "<unk>",
                        "pad_token": "<|endoftext|>"},
     "cases": basic_cases() + [case("unknown_role_ignored", [U1, _m("tool", "x")], True)]},
    {"name": "phi3-mini", "model": "microsoft/Phi-3-mini-4k-instruct",
     "source": XINFERENCE.format("phi-3-mini-4k-instruct", "'<|endoftext|>' -> eos_token")
     + "; the same text is quoted from the model's tokenizer_config.json in public test suites",
     "template": PHI3_MINI_TEMPLATE,
     "special_tokens": {"bos_token": "<s>", "eos_token": "<|endoftext|>", "unk_token": "<unk>",
                        "pad_token": "<|endoftext|>"},
     "cases": basic_cases()},
    {"name": "phi4-mini", "model": "microsoft/Phi-4-mini-instruct",
     "source": "quoted verbatim from the model's tokenizer_config.json by several public repositories (a "
               "function-calling benchmark's model handler, an inference library's chat-template cache that "
               "links tokenizer_config.json#L104, and test suites that copy it from "
               "mlx-community/Phi-4-mini-instruct-4bit); the same text in each",
     "template": PHI4_MINI_TEMPLATE,
     "special_tokens": {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>",
                        "unk_token": "<|endoftext|>", "pad_token": "<|endoftext|>"},
     "cases": basic_cases() + [
         # Phi-4-mini's own way to give tools: a JSON string in the system message's "tools" key.
         case("system_message_tools",
              [_m("system", "You are a helpful assistant with some tools.",
                  tools=json.dumps([t["function"] for t in TOOLS])), U_TOOL], True),
         case("system_message_tools_none", [_m("system", "No tools.", tools=None), U1], True),
         case("tool_result_role", [U_TOOL, A_FINAL, T_RESULT], True),
     ]},
    {"name": "deepseek-r1-distill", "model": "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B",
     "source": LLAMA_CPP.format("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja")
     + "; byte-identical to llama.cpp's deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja",
     "template": DEEPSEEK_R1_DISTILL_TEMPLATE,
     "special_tokens": {"bos_token": "<｜begin▁of▁sentence｜>", "eos_token": "<｜end▁of▁sentence｜>"},
     "cases": basic_cases() + [
         case("think_in_history_is_stripped",
              [U1, _m("assistant", "<think>\nThe user asks about France.\n</think>\n\nParis."), U2], True),
         case("tool_results", [U_TOOL, A_CALL, T_RESULT, T_RESULT2], True),
         case("tool_results_then_answer", [U_TOOL, A_CALL, T_RESULT, A_FINAL], False),
     ]},
    {"name": "hermes3", "model": "NousResearch/Hermes-3-Llama-3.1-8B",
     "source": LLAMA_CPP.format("NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja")
     + " (the 'tool_use' entry of its chat_template list); byte-identical to "
       "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja",
     "template": HERMES3_TOOL_USE_TEMPLATE,
     "special_tokens": {"bos_token": "<|begin_of_text|>", "eos_token": "<|im_end|>"},
     "cases": tool_cases() + [
         parallel_tool_case(),
         case("multi_turn_with_tools", [SYS, U1, A1, U2], True, TOOLS),
         case("unicode_content_with_tools", [_m("user", "Grüße 🌈"), _m("assistant", "Ça va 👍")], False, TOOLS),
         case("no_tools_error", [U1], True),
     ]},
    {"name": "smollm2", "model": "HuggingFaceTB/SmolLM2-1.7B-Instruct",
     "source": "quoted verbatim by several public repositories' test suites that read it from the model's "
               "tokenizer_config.json or GGUF tokenizer.chat_template (one records the file as 368 bytes, which "
               "this text is); real newlines inside the string literals, as in the JSON",
     "template": SMOLLM2_TEMPLATE,
     "special_tokens": {"bos_token": "<|im_start|>", "eos_token": "<|im_end|>"},
     "cases": basic_cases()},
    {"name": "granite3.3", "model": "ibm-granite/granite-3.3-2b-instruct",
     "source": LLAMA_CPP.format("ibm-granite-granite-3.3-2B-Instruct.jinja"),
     "template": GRANITE33_TEMPLATE,
     "special_tokens": {"bos_token": "<|end_of_text|>", "eos_token": "<|end_of_text|>"},
     "cases": basic_cases() + tool_cases() + [
         case("thinking", [U1], True, thinking=True),
         case("documents", [U1], True, documents=[
             {"doc_id": 1, "text": "Paris is the capital of France."},
             {"doc_id": "b", "text": "Berlin is the capital of Germany."}]),
         case("documents_and_controls", [U1], True, documents=[{"doc_id": 1, "text": "Paris."}],
              controls={"citations": True, "hallucinations": True, "length": "short"}),
         case("tools_and_documents", [U_TOOL], True, TOOLS, documents=[{"doc_id": 1, "text": "Paris."}]),
     ]},
    {"name": "zephyr", "model": "HuggingFaceH4/zephyr-7b-beta",
     "source": "quoted verbatim from the model's tokenizer_config.json by huggingface/huggingface.js "
               "packages/jinja/test/e2e.test.js ('HuggingFaceH4/zephyr-7b-beta') and by "
               "openvinotoolkit/openvino.genai tests/python_tests/data/tokenizer_configs.py (same text, "
               "TinyLlama-1.1B-Chat-v1.0)",
     "template": ZEPHYR_TEMPLATE,
     "special_tokens": {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"},
     "cases": basic_cases()},
    {"name": "glm4.5", "model": "zai-org/GLM-4.6 (GLM-4.5's format: [gMASK]<sop>, <think>, <arg_key>)",
     "source": LLAMA_CPP_0336.format("GLM-4.6.jinja"),
     "template": GLM46_TEMPLATE,
     "special_tokens": {"eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>"},
     "cases": glm_cases(glm47=False)},
    {"name": "glm4.7", "model": "zai-org/GLM-4.7-Flash (GLM-4.7's format: <|assistant|><think>, tags with "
                                "nothing between them)",
     "source": LLAMA_CPP_0336.format("GLM-4.7-Flash.jinja"),
     "template": GLM47_FLASH_TEMPLATE,
     "special_tokens": {"eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>"},
     "cases": glm_cases(glm47=True)},
    {"name": "seed-oss", "model": "ByteDance-Seed/Seed-OSS-36B-Instruct",
     "source": LLAMA_CPP_0336.format("ByteDance-Seed-OSS.jinja"),
     "template": SEED_OSS_TEMPLATE,
     "special_tokens": {"bos_token": "<seed:bos>", "eos_token": "<seed:eos>", "pad_token": "<seed:pad>"},
     "cases": basic_cases() + tool_cases() + [
         parallel_tool_case(),
         case("assistant_text_and_tool_call", [U_TOOL, A_CALL_WITH_TEXT, T_RESULT], True, TOOLS),
         case("thinking_budget_0", [U1], True, thinking_budget=0),
         case("thinking_budget_512", [SYS, U1], True, thinking_budget=512),
         case("thinking_budget_100000", [U1], True, thinking_budget=100000),
         case("reasoning_content_field",
              [U1, _m("assistant", "Paris.", reasoning_content="  Capital of France. ")], False),
         case("reasoning_across_tool_calls",
              [U_TOOL, _m("assistant", "", reasoning_content="I need the weather.", tool_calls=[CALL_DICT]),
               T_RESULT, _m("assistant", "It is 18 °C and sunny in Paris.", reasoning_content="It is sunny.")],
              False, TOOLS),
         case("json_tool_definitions", [U_TOOL], True, TOOLS, use_json_tooldef=True),
         case("tool_call_without_arguments",
              [U_TOOL, _m("assistant", "", tool_calls=[
                  {"id": "n1", "type": "function", "function": {"name": "get_time", "arguments": {}}}])], False),
         case("tool_call_with_structured_arguments",
              [U_TOOL, _m("assistant", "", tool_calls=[
                  {"id": "s1", "type": "function", "function": {"name": "search_docs", "arguments": {
                      "query": "naïve \"quotes\"", "max_results": 3, "tags": ["a", "b"], "strict": True,
                      "filter": {"lang": "fr", "min": 1.5}, "none": None}}}])], False, TOOLS),
     ]},
    {"name": "command-r-plus", "model": "CohereForAI/c4ai-command-r-plus",
     "source": LLAMA_CPP.format("CohereForAI-c4ai-command-r-plus-tool_use.jinja")
     + " (the 'tool_use' entry of its chat_template list)",
     "template": COMMAND_R_PLUS_TOOL_USE_TEMPLATE,
     "special_tokens": {"bos_token": "<BOS_TOKEN>", "eos_token": "<|END_OF_TURN_TOKEN|>", "pad_token": "<PAD>"},
     "cases": tool_cases() + [
         case("multi_turn_with_tools", [SYS, U1, A1, U2], True, TOOLS),
         case("no_tools_error", [U1], True),
     ]},
]


def _error(e):
    return f"{type(e).__name__}: {e}"


def render_feature(name, template, context):
    out = {"name": name, "template": template, "context": context}
    try:
        compiled = _compile_jinja_template(template)
    except Exception as e:  # noqa: BLE001 - every failure is an outcome to record
        out.update(error=True, error_message=_error(e), error_phase="compile")
        return out
    try:
        out["expected"] = compiled.render(**json.loads(json.dumps(context)))
    except Exception as e:  # noqa: BLE001
        out.update(error=True, error_message=_error(e), error_phase="render")
    return out


def render_chat(tok, template, c):
    out = {"name": c["name"], "messages": c["messages"], "tools": c["tools"],
           "add_generation_prompt": c["add_generation_prompt"], "extra": c["extra"]}
    # A deep copy per render: templates never mutate, but keep the recorded input pristine anyway.
    messages, tools, extra = json.loads(json.dumps([c["messages"], c["tools"], c["extra"]]))
    try:
        out["expected"] = tok.apply_chat_template(messages, chat_template=template, tools=tools,
                                                  add_generation_prompt=c["add_generation_prompt"],
                                                  tokenize=False, **extra)
    except Exception as e:  # noqa: BLE001
        out.update(error=True, error_message=_error(e))
    return out


def _write(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"wrote {path}")


def main():
    generator = f"transformers {transformers.__version__}, jinja2 {jinja2.__version__}"
    frozen = STRFTIME_NOW_FROZEN_AT.isoformat()
    names = [n for n, _, _ in FEATURE_CASES]
    assert len(names) == len(set(names)), "duplicate feature case names"
    cases = [render_feature(*c) for c in FEATURE_CASES]
    os.makedirs(FIXTURES, exist_ok=True)
    _write(OUT_FEATURES, {"generator": generator, "strftime_now_frozen_at": frozen, "cases": cases})

    templates = []
    for t in CHAT_TEMPLATES:
        tok = PreTrainedTokenizerFast(tokenizer_file=TOKENIZER, **t["special_tokens"])
        assert tok.special_tokens_map == t["special_tokens"], (t["name"], tok.special_tokens_map)
        case_names = [c["name"] for c in t["cases"]]
        assert len(case_names) == len(set(case_names)), t["name"]
        templates.append({"name": t["name"], "model": t["model"], "source": t["source"],
                          "template": t["template"], "special_tokens": tok.special_tokens_map,
                          "cases": [render_chat(tok, t["template"], c) for c in t["cases"]]})
    _write(OUT_CHAT, {
        "generator": generator, "strftime_now_frozen_at": frozen,
        "render_variables": "messages, tools (null when not given), documents (null unless extra has "
                            "documents), add_generation_prompt, every special_tokens entry, every extra "
                            "entry (extra wins over special tokens)",
        "templates": templates})
    n_err = sum(1 for c in cases if c.get("error"))
    n_chat = sum(len(t["cases"]) for t in templates)
    n_chat_err = sum(1 for t in templates for c in t["cases"] if c.get("error"))
    print(f"{len(cases)} feature cases ({n_err} errors); {len(templates)} chat templates, "
          f"{n_chat} cases ({n_chat_err} errors)")


if __name__ == "__main__":
    main()
