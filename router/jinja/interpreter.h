// Walks a parsed template and writes its output. Jinja's scoping: a for loop's body gets a new
// scope each iteration (a `set` inside does not leak out; namespace() attributes do), `if`
// blocks share their enclosing scope, a macro call runs in a scope over the template's top level.
// Work is bounded (RenderOptions): statements, expressions and loop iterations, output bytes and
// nested macro calls per render, and every value to kMaxValueBytes (value.h), so a template
// cannot hang or exhaust the router.
#pragma once

#include <cstdint>
#include <ctime>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "router/jinja/ast.h"
#include "router/jinja/value.h"

namespace headroom::router::jinja {

struct RenderOptions {
  // ~0.3 us each on one core: a render stops after about two seconds of work. A chat template
  // takes tens of steps per message.
  int64_t max_steps = 5'000'000;
  size_t max_output_bytes = size_t{64} << 20;
  int max_call_depth = 24;
  // strftime_now's clock: the local time now when unset (tests fix it).
  std::optional<std::tm> now = {};
};

class Interpreter {
 public:
  // `variables`: the template's context over the globals (range, namespace, raise_exception...).
  Interpreter(Dict variables, RenderOptions options);
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  // Renders `body`; an error is InvalidArgument "line N: ..." with N the template line that
  // failed (raise_exception's message as the template wrote it).
  absl::StatusOr<std::string> Render(const Body& body);

  // Calls a {% macro %} (or a {% call %} block's body, as `caller`): binds its parameters
  // (defaults evaluated at the call; extra arguments in `varargs` / `kwargs`) in a scope over
  // the top level and renders its body.
  absl::StatusOr<Value> CallMacro(const Stmt& macro, CallArgs args);

  struct Scope;

 private:
  enum class Flow { kNormal, kBreak, kContinue };

  absl::StatusOr<Flow> Exec(const Body& body, Scope& scope, std::string& out);
  absl::StatusOr<Flow> ExecOne(const Stmt& stmt, Scope& scope, std::string& out);
  absl::StatusOr<Flow> ExecFor(const Stmt& stmt, Scope& scope, std::string& out);
  absl::Status ExecSet(const Stmt& stmt, const Value& value, Scope& scope);
  // A set block's or filter block's body rendered into *value, then through its filter chain
  // when it has one; a break / continue in it is returned for the enclosing loop.
  absl::StatusOr<Flow> RenderBlock(const Stmt& stmt, Scope& scope, Value* value);
  // Evaluates `e`; a value heavier than kMaxValueBytes is ResourceExhausted.
  absl::StatusOr<Value> Eval(const Expr& e, Scope& scope);
  absl::StatusOr<Value> EvalUnbounded(const Expr& e, Scope& scope);
  absl::StatusOr<Value> EvalCall(const Expr& e, Scope& scope);
  absl::StatusOr<CallArgs> EvalArgs(const Expr& e, size_t first, Scope& scope);
  absl::StatusOr<Value> EvalBinary(const Expr& e, Scope& scope);
  absl::StatusOr<Value> EvalCompare(const Expr& e, Scope& scope);
  absl::Status Step(int line);

  RenderOptions options_;
  std::unique_ptr<Scope> root_;
  int64_t steps_ = 0;
  int depth_ = 0;
  int line_ = 0;
};

}  // namespace headroom::router::jinja
