// Python's str methods as chat templates call them, over UTF-8. Case mapping is Unicode's simple
// mapping (utf8proc) plus ß -> SS; Python's other multi-character mappings (ligatures, a few
// Greek forms) map to one character here. Whitespace is Python's str.isspace() set.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "router/jinja/value.h"

namespace headroom::router::jinja::text {

std::string Lower(std::string_view s);
std::string Upper(std::string_view s);
std::string Capitalize(std::string_view s);  // first character title case, the rest lower
std::string SwapCase(std::string_view s);
std::string PyTitle(std::string_view s);     // str.title(): each cased run starts upper
std::string JinjaTitle(std::string_view s);  // |title: words split at -, whitespace, ( { [ <
std::string Center(const std::string& s, int64_t width);
std::string Reverse(std::string_view s);

// str.strip / lstrip / rstrip: `chars` null means whitespace.
std::string_view Strip(std::string_view s, const std::string* chars);
std::string_view LStrip(std::string_view s, const std::string* chars);
std::string_view RStrip(std::string_view s, const std::string* chars);

// str.split / rsplit: sep null splits at whitespace runs and drops empty parts; maxsplit < 0 is
// unlimited.
std::vector<std::string> Split(std::string_view s, const std::string* sep, int64_t maxsplit,
                               bool from_right);
// str.splitlines(): \n, \r\n, \r, \v, \f, \x1c-\x1e, \x85, U+2028, U+2029 end lines.
std::vector<std::string> SplitLines(std::string_view s);
// str.replace; count < 0 replaces all; an empty `from` inserts between code points.
std::string Replace(std::string_view s, std::string_view from, std::string_view to, int64_t count);
int64_t Count(std::string_view s, std::string_view sub);
// Code point index of byte offset `byte`.
int64_t CodePointIndex(std::string_view s, size_t byte);
// Jinja's |wordcount: runs of letters, digits and underscores.
int64_t WordCount(std::string_view s);

enum class CharClass { kDigit, kAlpha, kAlnum, kSpace };
// str.isdigit() etc.: non-empty and every code point in the class (ASCII classes; any non-ASCII
// code point counts as alphabetic).
bool AllOf(std::string_view s, CharClass c);
bool IsLower(std::string_view s);  // has a cased character and no uppercase one
bool IsUpper(std::string_view s);

// str.format: {} / {0} / {name} fields with {{ and }} escapes; a format spec or conversion is
// refused.
absl::StatusOr<std::string> PyFormat(std::string_view format, const CallArgs& args);

}  // namespace headroom::router::jinja::text
