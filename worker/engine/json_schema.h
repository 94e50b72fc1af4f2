// JSON Schema for constrained decoding (OpenAI's response_format json_schema, vLLM's guided_json):
// JsonSchema compiles a schema into a graph of value nodes; JsonSchemaMatcher reads JSON text one
// byte at a time and refuses, at the first byte, any text that does not begin a document the
// schema accepts. The engine lets the sampler take only tokens whose bytes it accepts
// (json_matcher.h JsonAllowedTokens), so a constrained generation is valid against the schema when
// it completes.
//
// The supported subset (docs/engine.md "Structured output") is what OpenAI's strict mode and
// pydantic emit: type (one or a list), properties / required / additionalProperties, items /
// minItems / maxItems, minLength / maxLength, pattern (json_regex.h), format date / time /
// date-time / uuid / ipv4 (as patterns), minimum / maximum / exclusive ones on integers, enum,
// const, anyOf, oneOf (read as anyOf), allOf of one schema, $ref into the same document ($defs,
// definitions, recursion), true / false. Annotations are ignored (title, description, default,
// examples, formats JSON Schema does not define, ...). Every other keyword or format (bounds on
// a number, multipleOf, email, ...) is refused at compile time with its path: a constraint that
// cannot be enforced is never silently dropped.
//
// Choices the specification leaves to us, as xgrammar and OpenAI's strict mode make them:
//   - an object schema with properties takes only those properties (additionalProperties is
//     false unless given); one without properties takes any keys unless additionalProperties says
//     otherwise (a map: {"additionalProperties": {"type": "integer"}});
//   - properties may come in any order, each at most once; the object closes only when every
//     required one was read;
//   - enum / const values are spelled as nlohmann::json dumps them (compact, keys sorted);
//   - at most `max_whitespace` whitespace bytes in a row between tokens, numbers of at most 32
//     bytes, containers nested at most `max_depth` deep (a property or item that would need more
//     is not offered; a schema that needs more is refused).
//
// Prefix-exact: every prefix the matcher accepts can be completed to a document the schema
// accepts (tests/worker/json_schema_test.cc walks random documents to completion and checks
// Python's jsonschema labels against the matcher).
#pragma once

#include <bitset>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "worker/engine/json_lexer.h"
#include "worker/engine/json_regex.h"

namespace headroom::worker {

class JsonSchema {
 public:
  struct Options {
    int32_t max_depth = 32;
    int32_t max_whitespace = 16;
    uint8_t max_number_bytes = 32;  // at most 255
    // A schema of more nodes (after $ref and type lists are expanded), or longer text, is refused.
    int32_t max_nodes = 10000;
    size_t max_bytes = 64 * 1024;
  };

  // `text` is the schema as JSON. Errors are InvalidArgument, naming the JSON pointer of the
  // offending part ("at /properties/age: multipleOf is not supported").
  static absl::StatusOr<std::shared_ptr<const JsonSchema>> Compile(std::string_view text,
                                                                   Options options);
  static absl::StatusOr<std::shared_ptr<const JsonSchema>> Compile(std::string_view text) {
    return Compile(text, Options{});
  }

  enum class Kind : uint8_t {
    kAny,
    kObject,
    kArray,
    kString,
    kNumber,
    kInteger,
    kLiterals,
    kAnyOf
  };
  static constexpr int32_t kUnsatisfiable = std::numeric_limits<int32_t>::max();

  struct Node {
    Kind kind = Kind::kAny;
    // The fewest containers a value of this node opens, counting itself (kUnsatisfiable: no
    // value is valid).
    int32_t min_depth = kUnsatisfiable;
    // The bytes a value of this node can start with (an anyOf follows only the alternatives
    // whose set has the byte, and forks only when several do).
    std::bitset<256> first_bytes{};
    // kObject: the property names as JSON strings (quotes included), sorted, at most 64; their
    // values' nodes (same order); the required ones (bit i: keys[i]); the node of any other key
    // (-1: none; only without properties).
    std::vector<std::string> keys{};
    std::vector<int32_t> properties{};
    uint64_t required = 0;
    int32_t additional = -1;
    // kArray.
    int32_t items = -1;
    int32_t min_items = 0;
    int32_t max_items = std::numeric_limits<int32_t>::max();
    // kString, in characters (code points); and the pattern its text must match (an index into
    // patterns(); -1: none), from `pattern` or a supported `format`.
    int32_t min_length = 0;
    int32_t max_length = std::numeric_limits<int32_t>::max();
    int32_t pattern = -1;
    // kInteger: inclusive bounds (exclusive ones made inclusive), when `bounded`; a bound
    // confines the value to int64 on both sides.
    bool bounded = false;
    int64_t minimum = std::numeric_limits<int64_t>::min();
    int64_t maximum = std::numeric_limits<int64_t>::max();
    // kLiterals: the accepted values as JSON text, sorted and distinct.
    std::vector<std::string> literals{};
    // kAnyOf.
    std::vector<int32_t> alternatives{};
  };

  [[nodiscard]] const Options& options() const { return options_; }
  [[nodiscard]] const Node& node(int32_t index) const { return nodes_[static_cast<size_t>(index)]; }
  [[nodiscard]] int32_t root() const { return root_; }
  [[nodiscard]] const JsonRegex& pattern(int32_t index) const {
    return *patterns_[static_cast<size_t>(index)];
  }
  // Nodes a kAny value dispatches to by its first byte.
  struct AnyNodes {
    int32_t object = -1;
    int32_t array = -1;
    int32_t string = -1;
    int32_t number = -1;
    int32_t literal = -1;  // true, false, null
  };
  [[nodiscard]] const AnyNodes& any_nodes() const { return any_; }

 private:
  friend class JsonSchemaCompiler;
  JsonSchema() = default;

  Options options_;
  std::vector<Node> nodes_;
  // Shared: the formats' automata are built once per process (json_schema.cc FormatRegex).
  std::vector<std::shared_ptr<const JsonRegex>> patterns_;
  int32_t root_ = -1;
  AnyNodes any_;
};

class JsonSchemaMatcher {
 public:
  // `schema` must outlive the matcher (it is copied per token tried: a pointer, not an owner).
  explicit JsonSchemaMatcher(const JsonSchema* schema);

  // Reads `byte`; false when no valid document continues this way (the matcher is then
  // unusable: callers try bytes on a copy).
  [[nodiscard]] bool Feed(uint8_t byte);
  [[nodiscard]] bool Feed(std::string_view bytes);

  // A whole value was read (closed); no byte is accepted after it.
  [[nodiscard]] bool Complete() const;
  // What was read is a whole document though more could follow (a top-level number, an enum
  // value that is a prefix of another): the engine may offer EOS.
  [[nodiscard]] bool CanEnd() const;
  // Between the characters of a string that takes any text (no maxLength): where any string text
  // may follow (JsonVocabulary's fast path).
  [[nodiscard]] bool AtStringText() const;

  // Appends what decides the bytes accepted from here on: matchers of the same schema with the
  // same key accept the same bytes (and so the same tokens: TokenMaskCache). Each way's open
  // values and the lexer the innermost reads with; not what was read inside strings and numbers
  // before, nor how many items or characters were read where no bound counts them.
  void AppendStateKey(std::string* key) const;

 private:
  enum class Phase : uint8_t {
    kValue,           // a value of `node` must start (whitespace first is fine)
    kObjectKeyOrEnd,  // after '{'
    kObjectKey,       // after ',' in an object
    kObjectInKey,     // inside a key: a declared one (matched as a literal) or any (the lexer)
    kObjectColon,     // after a key
    kObjectNext,      // after a member's value: ',' or '}'
    kArrayItemOrEnd,  // after '['
    kArrayNext,       // after an item: ',' or ']'
    kString,          // inside a string value (the thread's lexer)
    kNumber,          // inside a number (the thread's number lexer)
    kLiteral,         // inside one of the node's literals
  };
  struct Frame {
    int32_t node = -1;
    Phase phase = Phase::kValue;
    // kObjectInKey / kLiteral: the candidates [lo, hi) among the sorted keys or literals, and
    // the bytes of them read. kObjectColon / kObjectNext: the property (-1: an other key).
    int32_t lo = 0;
    int32_t hi = 0;
    int32_t pos = 0;
    // Array items or string characters read.
    int32_t count = 0;
    // kObject*: the properties read (bit i: properties[i]).
    uint64_t seen = 0;
  };
  // One way of reading the text so far (anyOf can leave several): the open containers with the
  // innermost value on top. Empty when the top-level value is complete.
  // Inline storage: a copy (one per token tried) allocates nothing until containers nest deeper
  // than 6 or anyOf keeps more than 2 ways open.
  struct Thread {
    absl::InlinedVector<Frame, 6> stack{};
    JsonStringLexer string{};
    JsonRegex::States pattern{};  // inside a string with a pattern: where its automaton is
    JsonNumberLexer number{};
    // Inside a bounded integer: its sign, digits and magnitude so far (saturating).
    bool negative = false;
    uint8_t digits = 0;
    uint64_t magnitude = 0;
    int32_t whitespace_run = 0;
  };
  using Threads = absl::InlinedVector<Thread, 2>;

  enum class Fed : uint8_t {
    kRefused,   // the thread does not continue this way (drop it)
    kAccepted,  // the thread read the byte
    kForked,    // an anyOf value started: the thread's ways that read the byte are in `forks`
  };
  // Feeds `byte` to `thread` in place.
  Fed FeedThread(Thread& thread, uint8_t byte, Threads* forks) const;
  Fed FeedValueStart(Thread& thread, uint8_t byte, Threads* forks) const;
  Fed FeedArray(Thread& thread, uint8_t byte, Threads* forks) const;
  bool FeedObject(Thread& thread, uint8_t byte) const;
  bool FeedKey(Thread& thread, uint8_t byte) const;
  // Narrows a literal frame's candidates to those with `byte` next; false when none.
  bool NarrowLiterals(Frame& frame, const std::vector<std::string>& literals, uint8_t byte) const;
  // Inside a bounded integer: reads `byte` (the lexer accepted it); false when no integer with
  // what was read as its start lies in the bounds.
  bool FeedBoundedInteger(Thread& thread, const JsonSchema::Node& node, uint8_t byte) const;
  // The bounded integer read is in the bounds.
  static bool IntegerInBounds(const Thread& thread, const JsonSchema::Node& node);
  // Inside a character of a string with `pattern`: some code point it can still become continues
  // the match.
  static bool ContinuesPattern(const Thread& thread, const JsonRegex& pattern);
  // The value on top of `thread` ended: pop it and tell its container.
  static void EndValue(Thread& thread);
  // A value of `node` may start inside the containers open in `thread` (depth permitting).
  [[nodiscard]] bool Fits(const Thread& thread, int32_t node) const;
  // A declared key in [lo, hi) of `object` not yet read that fits.
  [[nodiscard]] bool KeyAvailable(const Thread& thread, const Frame& object, int32_t lo,
                                  int32_t hi) const;
  // `thread` can end here: complete, or a top-level number or literal that is whole.
  [[nodiscard]] bool ThreadCanEnd(const Thread& thread) const;

  const JsonSchema* schema_;
  Threads threads_;
};

}  // namespace headroom::worker
