// The parsed template: expressions and statements as the parser builds them and the interpreter
// walks them. One node type per family, its kind saying which fields are used.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "router/jinja/value.h"

namespace headroom::router::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind : uint8_t {
    kLiteral,  // literal
    kName,     // name
    kAttr,     // args[0].name
    kItem,     // args[0][args[1]]
    kSlice,    // args[0][args[1]:args[2]:args[3]] (null = omitted)
    kCall,     // args[0](args[1..], kwargs)
    kFilter,   // args[0] | name(args[1..], kwargs)
    kTest,     // args[0] is [not] name(args[1..])   (negated)
    kNeg,      // -args[0]
    kPos,      // +args[0]
    kNot,      // not args[0]
    kBinary,   // args[0] op args[1]: + - * / // % ** ~ and or
    kCompare,  // args[0] ops[0] args[1] ops[1] args[2] ...: == != < <= > >= in notin
    kCond,     // args[0] if args[1] else args[2] (args[2] null without else)
    kList,     // [args...]
    kTuple,    // (args...)
    kDict,     // {args[0]: args[1], args[2]: args[3], ...}
  };
  Kind kind = Kind::kLiteral;
  int line = 0;
  std::string name;  // kName, kAttr, kFilter, kTest; kBinary's operator
  Value literal;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;  // kCompare
  bool negated = false;          // kTest
  // kFilter / kTest naming no known filter or test inside an {% if %}: Jinja defers the error to
  // when it is evaluated, so `{% if 'x' is filter %}{{ v | x }}{% endif %}` works.
  bool unknown = false;
};

struct Stmt;
using Body = std::vector<Stmt>;

struct Stmt {
  enum class Kind : uint8_t {
    kText,         // text
    kPrint,        // {{ expr }}
    kIf,           // conditions[i] -> bodies[i]; bodies.back() is the else when it has one more
    kFor,          // for targets in expr [if filter]: bodies[0]; else bodies[1]
    kSet,          // set targets = expr, or set targets[0].attr = expr (attr non-empty)
    kSetBlock,     // set targets[0] %} bodies[0] {% endset, then filters (expr chain on a kName)
    kMacro,        // macro name(params = defaults) bodies[0]
    kCallBlock,    // call(params) expr %} bodies[0] {% endcall: expr gets `caller`
    kFilterBlock,  // filter chain (expr with a kName "" hole) over bodies[0]
    kWith,         // with params (name = value...): bodies[0] in a scope of its own
    kBreak,
    kContinue,
  };
  Kind kind = Kind::kText;
  int line = 0;
  std::string text = {};
  ExprPtr expr = {};
  ExprPtr filter = {};                   // kFor's `if`
  std::vector<ExprPtr> conditions = {};  // kIf
  std::vector<Body> bodies = {};
  std::vector<std::string> targets = {};
  std::string attr = {};  // kSet on a namespace attribute
  std::string name = {};  // kMacro
  std::vector<std::pair<std::string, ExprPtr>> params =
      {};  // kMacro / kCallBlock (default or null)
  // kMacro: the body reads varargs / kwargs, so extra arguments are accepted (Jinja's rule).
  bool catch_varargs = false;
  bool catch_kwargs = false;
};

}  // namespace headroom::router::jinja
