#include "router/jinja/template.h"

#include <utility>

#include "router/jinja/parser.h"

namespace headroom::router::jinja {

absl::StatusOr<Template> Template::Parse(std::string_view source) {
  absl::StatusOr<Body> body = jinja::Parse(source);
  if (!body.ok()) return body.status();
  return Template(std::make_shared<const Body>(*std::move(body)));
}

absl::StatusOr<std::string> Template::Render(Dict variables, RenderOptions options) const {
  Interpreter interpreter(std::move(variables), options);
  return interpreter.Render(*body_);
}

}  // namespace headroom::router::jinja
