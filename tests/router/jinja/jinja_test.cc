// What the jinja2 fixtures cannot show: the interpreter's bounds (a template cannot hang or
// exhaust the router), error messages that name the line, what is refused when parsing, and
// Python facts (float repr, str.isspace) at the edges.
#include <string>

#include "gtest/gtest.h"
#include "router/jinja/template.h"

namespace headroom::router::jinja {
namespace {

absl::StatusOr<std::string> Render(const std::string& source, Dict vars = {},
                                   RenderOptions options = {}) {
  absl::StatusOr<Template> t = Template::Parse(source);
  if (!t.ok()) return t.status();
  return t->Render(std::move(vars), options);
}

TEST(JinjaTest, UnboundedWorkIsStoppedNotRun) {
  // 10^5 x 10^5 iterations of an empty body would run for an hour: the step budget ends it (a
  // small budget here, to keep the test short; each iteration counts).
  const std::string nested =
      "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}";
  absl::StatusOr<std::string> r = Render(nested, {}, {.max_steps = 200'000});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(r.status().message().find("200000 steps"), std::string_view::npos) << r.status();
  // Output is bounded too.
  r = Render("{% for i in range(1000) %}0123456789{% endfor %}", {}, {.max_output_bytes = 5000});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);

  // Unbounded recursion of a macro.
  r = Render("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);

  // Output doubling without end: 'x' * 2^28 is refused before it is built.
  r = Render("{{ 'x' * 268435456 }}");
  ASSERT_FALSE(r.ok());

  // range() itself is bounded, as in the sandbox (MAX_RANGE).
  r = Render("{{ range(100000000) | length }}");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("range"), std::string_view::npos) << r.status();
}

TEST(JinjaTest, ErrorsNameTheLine) {
  absl::StatusOr<std::string> r = Render("line one\n{% if x %}\nok\n{% endfor %}");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("line 4"), std::string_view::npos) << r.status();

  r = Render("a\nb\n{{ raise_exception('Conversation roles must alternate') }}");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "line 3: Conversation roles must alternate");

  r = Render("{{ x.y }}");  // attribute of an undefined value
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("'x' is undefined"), std::string_view::npos) << r.status();
}

TEST(JinjaTest, RefusedWhenParsing) {
  for (const char* source : {"{{ x | no_such_filter }}", "{% if x is no_such_test %}{% endif %}",
                             "{% include 'other.jinja' %}", "{% extends 'base' %}",
                             "{% for x in y recursive %}{% endfor %}", "{{ 'unterminated }}",
                             "{% if x %}", "{{ x", "{% frobnicate %}", "{{ a b }}"}) {
    absl::StatusOr<Template> t = Template::Parse(source);
    EXPECT_FALSE(t.ok()) << source;
    if (!t.ok()) {
      EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << source;
      EXPECT_NE(t.status().message().find("line 1"), std::string_view::npos) << t.status();
    }
  }
}

TEST(JinjaTest, FloatsPrintAsPythonRepr) {
  // repr(float) in CPython: shortest round-trip digits, fixed notation for 1e-4 <= |x| < 1e16.
  EXPECT_EQ(PyFloatRepr(1.0), "1.0");
  EXPECT_EQ(PyFloatRepr(2500.0), "2500.0");
  EXPECT_EQ(PyFloatRepr(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(PyFloatRepr(1e16), "1e+16");
  EXPECT_EQ(PyFloatRepr(1e15), "1000000000000000.0");
  EXPECT_EQ(PyFloatRepr(0.0001), "0.0001");
  EXPECT_EQ(PyFloatRepr(0.00001), "1e-05");
  EXPECT_EQ(PyFloatRepr(-1.5e-7), "-1.5e-07");
  EXPECT_EQ(PyFloatRepr(1.2345678901234567e300), "1.2345678901234567e+300");
  EXPECT_EQ(PyFloatRepr(-0.0), "-0.0");
}

TEST(JinjaTest, TrimUsesPythonWhitespace) {
  // str.isspace(): U+3000, U+00A0, the separators \x1c-\x1f and NEL are whitespace; U+200B is
  // not; invalid UTF-8 never is.
  auto trim = [](const std::string& s) {
    Dict vars;
    vars.Set("s", Value::String(s));
    return *Render("{{ s | trim }}", vars);
  };
  EXPECT_EQ(trim("  a b \n"), "a b");
  EXPECT_EQ(trim("\xE3\x80\x80x\xC2\xA0"), "x");
  EXPECT_EQ(trim("\x1c\x1fx\xC2\x85"), "x");
  EXPECT_EQ(trim("\xE2\x80\x8Bx\xE2\x80\x8B"), "\xE2\x80\x8Bx\xE2\x80\x8B");
  EXPECT_EQ(trim(" \t "), "");
  EXPECT_EQ(trim("\xFF x \xC2"), "\xFF x \xC2");
}

TEST(JinjaTest, DictsKeepTheClientsKeyOrderInToJson) {
  // A client's tool schema is printed in the order it was sent (Python dicts keep insertion
  // order; json.dumps does not sort unless asked).
  const auto params = nlohmann::ordered_json::parse(
      R"({"type": "object", "properties": {"zeta": {"type": "string"}, "alpha": {"type": "integer"}},
          "required": ["zeta"]})");
  Dict vars;
  vars.Set("p", Value::FromJson(params));
  EXPECT_EQ(*Render("{{ p | tojson }}", vars),
            R"({"type": "object", "properties": {"zeta": {"type": "string"}, "alpha": {"type": )"
            R"("integer"}}, "required": ["zeta"]})");
  EXPECT_EQ(*Render("{{ p.properties | tojson(sort_keys=true) }}", vars),
            R"({"alpha": {"type": "integer"}, "zeta": {"type": "string"}})");
}

TEST(JinjaTest, ATemplateRendersManyTimesIndependently) {
  // Parsed once, rendered per request: state (namespace, set) never carries over.
  absl::StatusOr<Template> t = Template::Parse(
      "{% set ns = namespace(n=0) %}{% for m in xs %}{% set ns.n = ns.n + m %}"
      "{% endfor %}{{ ns.n }}");
  ASSERT_TRUE(t.ok()) << t.status();
  for (int round = 0; round < 3; ++round) {
    Dict vars;
    vars.Set("xs", Value::FromJson(nlohmann::ordered_json::parse("[1, 2, 3]")));
    EXPECT_EQ(*t->Render(std::move(vars)), "6");
  }
}

}  // namespace
}  // namespace headroom::router::jinja
