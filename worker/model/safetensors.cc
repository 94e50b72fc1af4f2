#include "worker/model/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"
#include "worker/model/float16.h"

namespace headroom::worker {
namespace {

using Json = nlohmann::json;

// The reference implementation's limit on the JSON header (MAX_HEADER_SIZE).
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
constexpr uint64_t kHeaderLengthBytes = 8;
constexpr std::string_view kMetadataKey = "__metadata__";

struct DTypeSize {
  std::string_view name;
  int64_t bytes;
};
constexpr DTypeSize kDTypes[] = {
    {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E4M3", 1}, {"F8_E5M2", 1},
    {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},
    {"U32", 4},  {"F32", 4}, {"F64", 8}, {"I64", 8},     {"U64", 8},
};

std::string Shorten(std::string text) {
  if (text.size() > 60) text = absl::StrCat(text.substr(0, 57), "...");
  return text;
}

// The JSON value's type and (shortened) text, for error messages.
std::string Describe(const Json& value) {
  return absl::StrCat(value.type_name(), " ", Shorten(value.dump()));
}

// A JSON non-negative integer that fits int64_t.
bool AsNonNegative(const Json& value, uint64_t& out) {
  if (!value.is_number_unsigned()) return false;
  out = value.get<uint64_t>();
  return out <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
}

std::string ErrnoMessage(int error) { return std::string(std::strerror(error)); }

}  // namespace

int64_t SafetensorsTensor::num_elements() const {
  int64_t n = 1;
  for (const int64_t dim : shape) n *= dim;  // Open() checked that this cannot overflow.
  return n;
}

int64_t SafetensorsDTypeBytes(std::string_view dtype) {
  for (const DTypeSize& entry : kDTypes) {
    if (entry.name == dtype) return entry.bytes;
  }
  return 0;
}

bool SafetensorsDTypeConvertsToFloat32(std::string_view dtype) {
  return dtype == "F32" || dtype == "F16" || dtype == "BF16";
}

absl::StatusOr<SafetensorsFile> SafetensorsFile::Open(std::string_view path) {
  const std::string path_string(path);
  const int fd = ::open(path_string.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    const std::string what = ErrnoMessage(error);
    if (error == ENOENT || error == ENOTDIR) {
      return absl::NotFoundError(absl::StrCat(path_string, ": cannot open: ", what));
    }
    return absl::InvalidArgumentError(absl::StrCat(path_string, ": cannot open: ", what));
  }
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    const std::string what = ErrnoMessage(errno);
    ::close(fd);
    return absl::InvalidArgumentError(absl::StrCat(path_string, ": cannot stat: ", what));
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(absl::StrCat(path_string, ": not a regular file"));
  }
  const auto size = static_cast<uint64_t>(info.st_size);
  if (size < kHeaderLengthBytes) {
    ::close(fd);
    return absl::InvalidArgumentError(
        absl::StrCat(path_string, ": file is ", size,
                     " bytes, shorter than the 8-byte header length of a safetensors file"));
  }
  void* mapped = ::mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_PRIVATE, fd, 0);
  const int map_error = errno;
  ::close(fd);  // The mapping keeps the file referenced.
  if (mapped == MAP_FAILED) {
    return absl::ResourceExhaustedError(
        absl::StrCat(path_string, ": cannot mmap ", size, " bytes: ", ErrnoMessage(map_error)));
  }
  SafetensorsFile file;
  file.path_ = path_string;
  file.size_ = size;
  const auto length = static_cast<size_t>(size);
  file.bytes_ = std::shared_ptr<const uint8_t>(
      static_cast<const uint8_t*>(mapped),
      [length](const uint8_t* p) { ::munmap(const_cast<uint8_t*>(p), length); });
  HR_RETURN_IF_ERROR(file.ParseHeader());
  return file;
}

absl::StatusOr<SafetensorsFile> SafetensorsFile::FromBytes(std::string bytes,
                                                           std::string_view name) {
  SafetensorsFile file;
  file.path_ = std::string(name);
  file.size_ = bytes.size();
  auto owner = std::make_shared<const std::string>(std::move(bytes));
  // Aliasing constructor: points into the string, keeps the string alive.
  file.bytes_ =
      std::shared_ptr<const uint8_t>(owner, reinterpret_cast<const uint8_t*>(owner->data()));
  if (file.size_ < kHeaderLengthBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(file.path_, ": file is ", file.size_,
                     " bytes, shorter than the 8-byte header length of a safetensors file"));
  }
  HR_RETURN_IF_ERROR(file.ParseHeader());
  return file;
}

absl::Status SafetensorsFile::ParseHeader() {
  const uint8_t* base = bytes_.get();
  uint64_t header_length = 0;
  std::memcpy(&header_length, base, sizeof(header_length));  // Little-endian host (float16.h).
  const uint64_t available = size_ - kHeaderLengthBytes;
  if (header_length > available) {
    return absl::InvalidArgumentError(absl::StrCat(
        path_, ": header length ", header_length, " runs past the end of the file (", available,
        " bytes after the length field); the file is truncated or not a safetensors file"));
  }
  if (header_length > kMaxHeaderBytes) {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": header length ", header_length,
                                                   " exceeds the format's limit of ",
                                                   kMaxHeaderBytes, " bytes"));
  }
  if (header_length < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ": header length ", header_length, " is too short for a JSON object"));
  }
  data_start_ = kHeaderLengthBytes + header_length;
  const uint64_t data_size = size_ - data_start_;
  const char* header_begin = reinterpret_cast<const char*>(base + kHeaderLengthBytes);
  const char* header_end = header_begin + header_length;

  // The parser callback keeps one set of keys per open object to catch duplicate keys, which
  // nlohmann::json would otherwise resolve silently (last one wins).
  std::vector<std::set<std::string>> open_objects;
  std::string duplicate_key;
  const Json::parser_callback_t callback = [&](int /*depth*/, Json::parse_event_t event,
                                               Json& parsed) {
    switch (event) {
      case Json::parse_event_t::object_start:
        open_objects.emplace_back();
        break;
      case Json::parse_event_t::object_end:
        if (!open_objects.empty()) open_objects.pop_back();
        break;
      case Json::parse_event_t::key:
        if (!open_objects.empty() && parsed.is_string() &&
            !open_objects.back().insert(parsed.get<std::string>()).second &&
            duplicate_key.empty()) {
          duplicate_key = parsed.get<std::string>();
        }
        break;
      default:
        break;
    }
    return true;
  };
  Json root;
  try {
    root = Json::parse(header_begin, header_end, callback);
  } catch (const Json::exception& e) {
    // e.what() is "[json.exception.parse_error.101] parse error at line L, column C: ...".
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ": header is not valid JSON: ", e.what()));
  }
  if (!duplicate_key.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ": header has the key \"", duplicate_key, "\" more than once"));
  }
  if (!root.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ": header must be a JSON object, got ", Describe(root)));
  }

  for (const auto& [name, entry] : root.items()) {
    if (name == kMetadataKey) {
      if (entry.is_null()) continue;
      if (!entry.is_object()) {
        return absl::InvalidArgumentError(absl::StrCat(
            path_, ": \"__metadata__\" must be an object of strings, got ", Describe(entry)));
      }
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string()) {
          return absl::InvalidArgumentError(absl::StrCat(path_, ": \"__metadata__\" entry \"", key,
                                                         "\" must be a string, got ",
                                                         Describe(value)));
        }
        metadata_.emplace(key, value.get<std::string>());
      }
      continue;
    }
    const std::string where = absl::StrCat(path_, ": tensor \"", Shorten(name), "\"");
    if (!entry.is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": entry must be an object, got ", Describe(entry)));
    }
    SafetensorsTensor tensor;
    tensor.name = name;

    const auto dtype = entry.find("dtype");
    if (dtype == entry.end() || !dtype->is_string()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": \"dtype\" must be a string",
                       dtype == entry.end() ? " but is missing" : ", got " + Describe(*dtype)));
    }
    tensor.dtype = dtype->get<std::string>();
    const int64_t element_bytes = SafetensorsDTypeBytes(tensor.dtype);
    if (element_bytes == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": unknown dtype \"", Shorten(tensor.dtype), "\" (not a safetensors dtype)"));
    }

    const auto shape = entry.find("shape");
    if (shape == entry.end() || !shape->is_array()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": \"shape\" must be an array of non-negative integers",
                       shape == entry.end() ? " but is missing" : ", got " + Describe(*shape)));
    }
    uint64_t elements = 1;
    bool overflow = false;
    for (const Json& dim : *shape) {
      uint64_t value = 0;
      if (!AsNonNegative(dim, value)) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, ": \"shape\" must hold non-negative integers, got ", Describe(dim)));
      }
      tensor.shape.push_back(static_cast<int64_t>(value));
      if (value != 0 &&
          elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / value) {
        overflow = true;
      }
      elements *= value;
    }
    if (overflow || elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) /
                                   static_cast<uint64_t>(element_bytes)) {
      // A zero dim makes the product 0 even after an overflowing prefix; still reject: such a
      // shape is not something a writer produces.
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": shape ", Shorten(shape->dump()), " is too large"));
    }

    const auto offsets = entry.find("data_offsets");
    uint64_t begin = 0;
    uint64_t end = 0;
    if (offsets == entry.end() || !offsets->is_array() || offsets->size() != 2 ||
        !AsNonNegative((*offsets)[0], begin) || !AsNonNegative((*offsets)[1], end)) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": \"data_offsets\" must be [begin, end] with non-negative integers",
                       offsets == entry.end() ? " but is missing" : ", got " + Describe(*offsets)));
    }
    if (begin > end) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": data_offsets [", begin, ", ", end, "] end before they begin"));
    }
    if (end > data_size) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": data_offsets [", begin, ", ", end, "] run past the data section (",
                       data_size, " bytes); the file is truncated or the header is wrong"));
    }
    const uint64_t expected_bytes = elements * static_cast<uint64_t>(element_bytes);
    if (end - begin != expected_bytes) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": shape ", Shorten(shape->dump()), " x ", tensor.dtype, " (",
                       element_bytes, " bytes) needs ", expected_bytes,
                       " bytes, but data_offsets [", begin, ", ", end, "] hold ", end - begin));
    }
    tensor.data_begin = begin;
    tensor.data_end = end;
    tensors_.emplace(name, std::move(tensor));
  }

  // No two byte ranges may overlap (empty tensors overlap nothing).
  std::vector<const SafetensorsTensor*> by_offset;
  by_offset.reserve(tensors_.size());
  for (const auto& [name, tensor] : tensors_) {
    if (tensor.num_bytes() > 0) by_offset.push_back(&tensor);
  }
  std::sort(by_offset.begin(), by_offset.end(),
            [](const SafetensorsTensor* a, const SafetensorsTensor* b) {
              return a->data_begin < b->data_begin;
            });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const SafetensorsTensor& previous = *by_offset[i - 1];
    const SafetensorsTensor& current = *by_offset[i];
    if (current.data_begin < previous.data_end) {
      return absl::InvalidArgumentError(absl::StrCat(
          path_, ": tensors \"", Shorten(previous.name), "\" [", previous.data_begin, ", ",
          previous.data_end, ") and \"", Shorten(current.name), "\" [", current.data_begin, ", ",
          current.data_end, ") overlap in the data section"));
    }
  }
  return absl::OkStatus();
}

const SafetensorsTensor* SafetensorsFile::Find(std::string_view name) const {
  const auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

absl::Span<const uint8_t> SafetensorsFile::RawBytes(const SafetensorsTensor& tensor) const {
  return absl::Span<const uint8_t>(bytes_.get() + data_start_ + tensor.data_begin,
                                   static_cast<size_t>(tensor.num_bytes()));
}

absl::Status SafetensorsFile::ReadFloat32(const SafetensorsTensor& tensor,
                                          absl::Span<float> out) const {
  const int64_t n = tensor.num_elements();
  if (out.size() != static_cast<size_t>(n)) {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": tensor \"", tensor.name, "\" has ", n,
                                                   " elements but the destination holds ",
                                                   out.size()));
  }
  return ReadFloat32(tensor, 0, out);
}

absl::Status SafetensorsFile::ReadFloat32(const SafetensorsTensor& tensor, int64_t first,
                                          absl::Span<float> out) const {
  const int64_t n = tensor.num_elements();
  const auto count = static_cast<int64_t>(out.size());
  if (first < 0 || first > n || count > n - first) {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": tensor \"", tensor.name, "\" has ", n,
                                                   " elements; elements [", first, ", ",
                                                   first + count, ") are not inside it"));
  }
  const int64_t element_bytes = SafetensorsDTypeBytes(tensor.dtype);
  const uint8_t* src = RawBytes(tensor).data() + first * element_bytes;
  if (tensor.dtype == "F32") {
    if (count > 0) std::memcpy(out.data(), src, out.size() * sizeof(float));
    return absl::OkStatus();
  }
  if (tensor.dtype == "F16" || tensor.dtype == "BF16") {
    const bool is_bf16 = tensor.dtype == "BF16";
    for (size_t i = 0; i < out.size(); ++i) {
      uint16_t bits = 0;
      std::memcpy(&bits, src + 2 * i, sizeof(bits));  // Offsets need not be 2-byte aligned.
      out[i] = is_bf16 ? Bf16ToFloat(bits) : Fp16ToFloat(bits);
    }
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat(path_, ": tensor \"", tensor.name, "\" has dtype ", tensor.dtype,
                   ", which headroom cannot load (supported: F32, F16, BF16)"));
}

absl::StatusOr<std::vector<float>> SafetensorsFile::ReadFloat32(std::string_view name) const {
  const SafetensorsTensor* tensor = Find(name);
  if (tensor == nullptr) {
    return absl::NotFoundError(absl::StrCat(path_, ": no tensor \"", std::string(name), "\""));
  }
  std::vector<float> values(static_cast<size_t>(tensor->num_elements()));
  HR_RETURN_IF_ERROR(ReadFloat32(*tensor, absl::MakeSpan(values)));
  return values;
}

}  // namespace headroom::worker
