// A second regular-expression implementation for checking guided-regex outputs: POSIX extended
// regular expressions (regcomp/regexec from the C library), whole-text match. Tests write each
// pattern again in ERE syntax ([0-9] for \d, [A-Za-z0-9_] for \w); std::regex is not used because
// GCC 12 warns inside its headers under the sanitizer build (-Wmaybe-uninitialized).
#pragma once

#include <regex.h>

#include <string>

namespace headroom::worker::testdata {

// `text` as a whole matches the POSIX ERE `ere` (which must compile).
inline bool PosixFullMatch(const std::string& ere, const std::string& text) {
  regex_t regex;
  if (regcomp(&regex, ("^(" + ere + ")$").c_str(), REG_EXTENDED | REG_NOSUB) != 0) return false;
  const bool match = regexec(&regex, text.c_str(), 0, nullptr, 0) == 0;
  regfree(&regex);
  return match;
}

}  // namespace headroom::worker::testdata
