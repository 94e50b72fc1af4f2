// SafetensorsFile: a read-only, memory-mapped view of one `.safetensors` file.
//
// Format: an 8-byte little-endian header length N, N bytes of JSON, then the data section. The
// JSON maps tensor names to {"dtype", "shape", "data_offsets": [begin, end]} (byte offsets into
// the data section) and may hold a "__metadata__" object of string values.
//
// Open() maps the file (the kernel pages it in on first touch, so a large checkpoint is read from
// disk once, straight into the conversion) and validates the whole header before returning:
// header length within the file (and at most 100 MB, the reference implementation's limit), JSON
// well-formed with an object at the top, no duplicate tensor names, every entry with a string
// dtype of the safetensors vocabulary, a shape of non-negative integers, data_offsets of two
// integers begin <= end inside the data section, end - begin == elements x dtype size (checked for
// overflow), and no two tensors' byte ranges overlapping (gaps are allowed). Any violation is an
// InvalidArgumentError naming the file and, where there is one, the tensor; no input makes it
// crash. (A file truncated by another process while mapped can still raise SIGBUS: the mapping
// cannot guard against the file changing under it.)
//
// Only F32, F16 and BF16 convert to float32; other dtypes (I64, U8, F8_E4M3, ...) are listed and
// their raw bytes are reachable, but ReadFloat32 refuses them with an error naming tensor and
// dtype.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace headroom::worker {

// One tensor's header entry.
struct SafetensorsTensor {
  std::string name;            // Key in the header, e.g. "model.norm.weight".
  std::string dtype;           // As written: "F32", "F16", "BF16", "I64", ...
  std::vector<int64_t> shape;  // Row-major dims; empty for a scalar.
  uint64_t data_begin = 0;     // Byte offset of the first byte in the data section.
  uint64_t data_end = 0;       // One past the last byte in the data section.

  // Number of elements: the product of `shape` (1 for a scalar). Validated not to overflow.
  [[nodiscard]] int64_t num_elements() const;
  // Bytes in the file: data_end - data_begin.
  [[nodiscard]] uint64_t num_bytes() const { return data_end - data_begin; }
};

// Bytes per element of a safetensors dtype name, or 0 when the name is not one the format defines
// (BOOL, U8, I8, F8_E4M3, F8_E5M2, I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64).
[[nodiscard]] int64_t SafetensorsDTypeBytes(std::string_view dtype);

// True for the dtypes ReadFloat32 converts: F32, F16, BF16.
[[nodiscard]] bool SafetensorsDTypeConvertsToFloat32(std::string_view dtype);

class SafetensorsFile {
 public:
  // Maps and validates `path`. NotFoundError when it cannot be opened, InvalidArgumentError when
  // it is not a regular file or not a valid safetensors file.
  [[nodiscard]] static absl::StatusOr<SafetensorsFile> Open(std::string_view path);

  // Validates an in-memory image of a file (tests, or bytes that did not come from disk). `name`
  // stands in for the path in error messages.
  [[nodiscard]] static absl::StatusOr<SafetensorsFile> FromBytes(std::string bytes,
                                                                 std::string_view name);

  // Copies share the read-only mapping, which lives until the last copy is gone.
  SafetensorsFile(const SafetensorsFile&) = default;
  SafetensorsFile& operator=(const SafetensorsFile&) = default;
  SafetensorsFile(SafetensorsFile&&) noexcept = default;
  SafetensorsFile& operator=(SafetensorsFile&&) noexcept = default;
  ~SafetensorsFile() = default;

  // The path given to Open (or the name given to FromBytes).
  [[nodiscard]] const std::string& path() const { return path_; }

  // All tensors, sorted by name.
  [[nodiscard]] const std::map<std::string, SafetensorsTensor, std::less<>>& tensors() const {
    return tensors_;
  }

  // The tensor called `name`, or nullptr.
  [[nodiscard]] const SafetensorsTensor* Find(std::string_view name) const;

  // The "__metadata__" entries (empty when absent).
  [[nodiscard]] const std::map<std::string, std::string, std::less<>>& metadata() const {
    return metadata_;
  }

  // The whole file as mapped (or as given to FromBytes): header and data.
  [[nodiscard]] absl::Span<const uint8_t> FileBytes() const { return {bytes_.get(), size_}; }

  // The tensor's bytes as stored (little-endian, row-major), inside the mapping; no alignment is
  // guaranteed, so read them with memcpy or through the converters.
  [[nodiscard]] absl::Span<const uint8_t> RawBytes(const SafetensorsTensor& tensor) const;

  // Converts the tensor to float32 into `out`, which must hold exactly num_elements() values.
  // InvalidArgumentError for a dtype other than F32/F16/BF16 or a size mismatch.
  [[nodiscard]] absl::Status ReadFloat32(const SafetensorsTensor& tensor,
                                         absl::Span<float> out) const;

  // Converts the elements [first, first + out.size()) of the tensor (row-major) to float32: a
  // block of rows, or one row's columns, of a tensor sharded for tensor parallelism. Reads only
  // those bytes of the mapping. InvalidArgumentError when the range is not inside the tensor or
  // for a dtype other than F32/F16/BF16.
  [[nodiscard]] absl::Status ReadFloat32(const SafetensorsTensor& tensor, int64_t first,
                                         absl::Span<float> out) const;

  // The tensor `name` converted to float32; NotFoundError when the file has no such tensor.
  [[nodiscard]] absl::StatusOr<std::vector<float>> ReadFloat32(std::string_view name) const;

 private:
  SafetensorsFile() = default;

  // Parses and validates the header of the mapped bytes [data_, data_ + size_).
  [[nodiscard]] absl::Status ParseHeader();

  std::string path_;
  std::shared_ptr<const uint8_t> bytes_;  // The whole file: mapping or owned buffer.
  uint64_t size_ = 0;                     // Bytes in the file.
  uint64_t data_start_ = 0;               // Offset of the data section: 8 + header length.
  std::map<std::string, SafetensorsTensor, std::less<>> tensors_;
  std::map<std::string, std::string, std::less<>> metadata_;
};

}  // namespace headroom::worker
