// The tags that frame tool calls in the model families' formats (tool_parser.h), shared by the
// whole-reply parsers and the streaming reader (tool_call_stream.h).
#pragma once

#include <string_view>

namespace headroom::router::openai {

inline constexpr std::string_view kHermesStart = "<tool_call>";  // Hermes, Qwen
inline constexpr std::string_view kHermesEnd = "</tool_call>";
inline constexpr std::string_view kPythonTag = "<|python_tag|>";      // Llama 3.x
inline constexpr std::string_view kMistralStart = "[TOOL_CALLS]";     // Mistral
inline constexpr std::string_view kPythonStart = "<|python_start|>";  // Llama 4 (pythonic)
inline constexpr std::string_view kPythonEnd = "<|python_end|>";
inline constexpr std::string_view kQwenFunctionStart = "<function=";  // Qwen3-Coder, in <tool_call>
inline constexpr std::string_view kQwenFunctionEnd = "</function>";
inline constexpr std::string_view kQwenParameterStart = "<parameter=";
inline constexpr std::string_view kQwenParameterEnd = "</parameter>";
inline constexpr std::string_view kGraniteToken = "<|tool_call|>";  // Granite 3.0 (special token)
// Granite 3.1 and later write <tool_call> (kHermesStart) before their array, with no end tag.
inline constexpr std::string_view kPhi4MiniStart = "functools[";  // Phi-4-mini: opens the array
// Seed-OSS: Qwen3-Coder's functions inside these.
inline constexpr std::string_view kSeedToolCallStart = "<seed:tool_call>";
inline constexpr std::string_view kSeedToolCallEnd = "</seed:tool_call>";
// GLM-4.5 / 4.6: the name follows <tool_call> (kHermesStart) on its line, then key-value pairs.
inline constexpr std::string_view kGlmKeyStart = "<arg_key>";
inline constexpr std::string_view kGlmKeyEnd = "</arg_key>";
inline constexpr std::string_view kGlmValueStart = "<arg_value>";
inline constexpr std::string_view kGlmValueEnd = "</arg_value>";
// GLM-4.7's parser also skips these two characters (a backslash and an n) before a value.
inline constexpr std::string_view kGlm47NewlineEscape = "\\n";

}  // namespace headroom::router::openai
