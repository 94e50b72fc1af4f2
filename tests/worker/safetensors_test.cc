// SafetensorsFile against the committed fixture files and against hand-built byte buffers for
// every validation error; a mutation loop checks that no damaged file crashes the reader.
#include "worker/model/safetensors.h"

#include <bit>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/worker/fixtures.h"
#include "worker/model/float16.h"

namespace headroom::worker {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// An 8-byte little-endian length, the header text, then the data section.
std::string FileBytes(std::string_view header, std::string_view data = "") {
  const uint64_t length = header.size();
  std::string bytes(8, '\0');
  std::memcpy(bytes.data(), &length, 8);
  bytes.append(header);
  bytes.append(data);
  return bytes;
}

std::string FloatBytes(const std::vector<float>& values) {
  std::string bytes(values.size() * 4, '\0');
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

std::string U16Bytes(const std::vector<uint16_t>& values) {
  std::string bytes(values.size() * 2, '\0');
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

absl::Status ParseError(std::string_view header, std::string_view data = "") {
  return SafetensorsFile::FromBytes(FileBytes(header, data), "bad.safetensors").status();
}

// Expects InvalidArgument naming the file and containing every fragment.
void ExpectInvalid(const absl::Status& status, const std::vector<std::string>& fragments) {
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr("bad.safetensors"));
  for (const std::string& fragment : fragments) {
    EXPECT_THAT(std::string(status.message()), HasSubstr(fragment));
  }
}

TEST(SafetensorsTest, ReadsF32F16Bf16FromAnUnalignedDataSection) {
  // Header of odd length: the data section starts at an odd offset, as the format allows.
  std::string header = R"({"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},)"
                       R"("h":{"dtype":"F16","shape":[3],"data_offsets":[16,22]},)"
                       R"("b":{"dtype":"BF16","shape":[1,3],"data_offsets":[22,28]},)"
                       R"("__metadata__":{"format":"pt"}})";
  if (header.size() % 2 == 0) header += ' ';  // Trailing spaces are allowed padding.
  ASSERT_EQ((8 + header.size()) % 2, 1u);
  const std::string data = FloatBytes({1.5f, -2.0f, 0.25f, 1e-3f}) +
                           U16Bytes({0x3C00, 0x0001, 0xFC00}) + U16Bytes({0x3F80, 0xC040, 0x0000});
  absl::StatusOr<SafetensorsFile> file =
      SafetensorsFile::FromBytes(FileBytes(header, data), "ok.safetensors");
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->tensors().size(), 3u);
  EXPECT_EQ(file->metadata().at("format"), "pt");
  const SafetensorsTensor* a = file->Find("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->dtype, "F32");
  EXPECT_THAT(a->shape, ElementsAre(2, 2));
  EXPECT_EQ(a->num_elements(), 4);
  EXPECT_EQ(a->num_bytes(), 16u);
  EXPECT_THAT(*file->ReadFloat32("a"), ElementsAre(1.5f, -2.0f, 0.25f, 1e-3f));
  EXPECT_THAT(*file->ReadFloat32("h"),
              ElementsAre(1.0f, std::ldexp(1.0f, -24), -std::numeric_limits<float>::infinity()));
  EXPECT_THAT(*file->ReadFloat32("b"), ElementsAre(1.0f, -3.0f, 0.0f));
  EXPECT_EQ(file->Find("missing"), nullptr);
  EXPECT_EQ(file->ReadFloat32("missing").status().code(), absl::StatusCode::kNotFound);
}

TEST(SafetensorsTest, AcceptsEmptyTensorsGapsAndScalars) {
  const std::string header = R"({"e1":{"dtype":"F32","shape":[0,5],"data_offsets":[0,0]},)"
                             R"("s":{"dtype":"F32","shape":[],"data_offsets":[4,8]},)"
                             R"("e2":{"dtype":"BF16","shape":[0],"data_offsets":[8,8]}})";
  absl::StatusOr<SafetensorsFile> file =
      SafetensorsFile::FromBytes(FileBytes(header, FloatBytes({9.0f, 2.5f})), "ok.safetensors");
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_THAT(*file->ReadFloat32("s"), ElementsAre(2.5f));
  EXPECT_TRUE(file->ReadFloat32("e1")->empty());
  EXPECT_TRUE(file->ReadFloat32("e2")->empty());
  // An empty header object is a valid (empty) file.
  EXPECT_TRUE(SafetensorsFile::FromBytes(FileBytes("{}"), "empty.safetensors").ok());
}

TEST(SafetensorsTest, ReadsTheDtypesFixture) {
  const std::string path = (testdata::FixtureDir("safetensors") / "dtypes.safetensors").string();
  absl::StatusOr<SafetensorsFile> file = SafetensorsFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->path(), path);
  EXPECT_EQ(file->metadata().at("format"), "pt");
  EXPECT_EQ(file->metadata().at("generator"), "scripts/gen_model_fixtures.py");
  EXPECT_THAT(*file->ReadFloat32("matrix"), ElementsAre(-2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f));
  EXPECT_THAT(file->Find("matrix")->shape, ElementsAre(2, 3));
  EXPECT_THAT(*file->ReadFloat32("scalar"), ElementsAre(2.5f));
  EXPECT_TRUE(file->Find("scalar")->shape.empty());
  EXPECT_TRUE(file->ReadFloat32("empty")->empty());
  EXPECT_THAT(file->Find("empty")->shape, ElementsAre(0, 3));

  // I64 is a valid safetensors dtype: listed, raw bytes readable, not convertible.
  const SafetensorsTensor* i64 = file->Find("i64");
  ASSERT_NE(i64, nullptr);
  EXPECT_EQ(i64->dtype, "I64");
  std::vector<int64_t> raw(3);
  ASSERT_EQ(file->RawBytes(*i64).size(), 24u);
  std::memcpy(raw.data(), file->RawBytes(*i64).data(), 24);
  EXPECT_THAT(raw, ElementsAre(1, -2, 3));
  const absl::Status status = file->ReadFloat32("i64").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              AllOf(HasSubstr(path), HasSubstr("\"i64\""), HasSubstr("I64"), HasSubstr("BF16")));
}

TEST(SafetensorsTest, ReadsAShardOfTheShardedFixture) {
  const std::filesystem::path dir = testdata::FixtureDir("llama-gqa");
  absl::StatusOr<SafetensorsFile> file =
      SafetensorsFile::Open((dir / "model-00001-of-00002.safetensors").string());
  ASSERT_TRUE(file.ok()) << file.status();
  const SafetensorsTensor* embed = file->Find("model.embed_tokens.weight");
  ASSERT_NE(embed, nullptr);
  EXPECT_EQ(embed->dtype, "BF16");
  EXPECT_THAT(embed->shape, ElementsAre(256, 64));
  EXPECT_EQ(file->metadata().at("format"), "pt");
}

TEST(SafetensorsTest, OpenErrors) {
  const absl::Status missing = SafetensorsFile::Open("/nonexistent/x.safetensors").status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(missing.message()), HasSubstr("/nonexistent/x.safetensors"));

  const std::string dir = testdata::FixtureDir("safetensors").string();
  const absl::Status directory = SafetensorsFile::Open(dir).status();
  EXPECT_EQ(directory.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(directory.message()), HasSubstr("not a regular file"));
}

TEST(SafetensorsTest, TruncatedHeaderLength) {
  ExpectInvalid(SafetensorsFile::FromBytes("", "bad.safetensors").status(), {"0 bytes"});
  ExpectInvalid(
      SafetensorsFile::FromBytes(std::string("\x02\0\0\0", 4), "bad.safetensors").status(),
      {"4 bytes", "8-byte header length"});
}

TEST(SafetensorsTest, HeaderLengthBeyondTheFile) {
  std::string bytes =
      FileBytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", FloatBytes({1.0f}));
  const std::string full = bytes;
  bytes.resize(30);  // Cut inside the header.
  ExpectInvalid(SafetensorsFile::FromBytes(bytes, "bad.safetensors").status(),
                {"header length", "runs past the end"});
  // A length near 2^64 must not wrap around in the bounds check.
  std::string huge = full;
  const uint64_t length = ~uint64_t{0} - 3;
  std::memcpy(huge.data(), &length, 8);
  ExpectInvalid(SafetensorsFile::FromBytes(huge, "bad.safetensors").status(),
                {"runs past the end"});
  ExpectInvalid(ParseError(""), {"too short"});
}

TEST(SafetensorsTest, HeaderLongerThanTheFormatLimit) {
  // A sparse file a little over 100 MB whose header length claims 100,000,001 bytes.
  const std::filesystem::path path =
      std::filesystem::path(::testing::TempDir()) / "safetensors_test_big_header.safetensors";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    const uint64_t length = 100'000'001;
    out.write(reinterpret_cast<const char*>(&length), 8);
  }
  std::filesystem::resize_file(path, 100'000'016);
  const absl::Status status = SafetensorsFile::Open(path.string()).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_THAT(std::string(status.message()),
              AllOf(HasSubstr(path.string()), HasSubstr("exceeds the format's limit")));
  std::filesystem::remove(path);
}

TEST(SafetensorsTest, MalformedJson) {
  ExpectInvalid(ParseError(R"({"a": {"dtype": "F32",)"), {"not valid JSON"});
  ExpectInvalid(ParseError(R"({"a":1} trailing)"), {"not valid JSON"});
  ExpectInvalid(ParseError("{\"a\xff\":1}"), {"not valid JSON"});  // Ill-formed UTF-8.
  ExpectInvalid(ParseError(R"([1, 2, 3])"), {"must be a JSON object", "array"});
  ExpectInvalid(ParseError(R"("text")"), {"must be a JSON object"});
}

TEST(SafetensorsTest, DuplicateKeys) {
  ExpectInvalid(ParseError(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                           R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                           FloatBytes({1.0f, 2.0f})),
                {"\"a\" more than once"});
  ExpectInvalid(ParseError(R"({"a":{"dtype":"F32","dtype":"F16","shape":[1],)"
                           R"("data_offsets":[0,4]}})",
                           FloatBytes({1.0f})),
                {"\"dtype\" more than once"});
}

TEST(SafetensorsTest, MalformedEntries) {
  const std::string data = FloatBytes({1.0f, 2.0f});
  ExpectInvalid(ParseError(R"({"w":[1,2]})", data), {"tensor \"w\"", "must be an object"});
  ExpectInvalid(ParseError(R"({"w":{"shape":[1],"data_offsets":[0,4]}})", data),
                {"tensor \"w\"", "\"dtype\"", "missing"});
  ExpectInvalid(ParseError(R"({"w":{"dtype":7,"shape":[1],"data_offsets":[0,4]}})", data),
                {"tensor \"w\"", "\"dtype\" must be a string"});
  ExpectInvalid(ParseError(R"({"w":{"dtype":"F32","data_offsets":[0,4]}})", data),
                {"tensor \"w\"", "\"shape\"", "missing"});
  ExpectInvalid(ParseError(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", data),
                {"tensor \"w\"", "non-negative"});
  ExpectInvalid(ParseError(R"({"w":{"dtype":"F32","shape":[1.0],"data_offsets":[0,4]}})", data),
                {"tensor \"w\"", "non-negative integers"});
  ExpectInvalid(ParseError(R"({"w":{"dtype":"F32","shape":4,"data_offsets":[0,4]}})", data),
                {"tensor \"w\"", "\"shape\" must be an array"});
  ExpectInvalid(ParseError(R"({"w":{"dtype":"F32","shape":[1]}})", data),
                {"tensor \"w\"", "\"data_offsets\"", "missing"});
  ExpectInvalid(ParseError(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", data),
                {"tensor \"w\"", "[begin, end]"});
  ExpectInvalid(ParseError(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}})", data),
                {"tensor \"w\"", "[begin, end]"});
  ExpectInvalid(ParseError(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}})", data),
                {"tensor \"w\"", "[begin, end]"});
  ExpectInvalid(ParseError(R"({"__metadata__":{"format":1}})"),
                {"__metadata__", "\"format\" must be a string"});
  ExpectInvalid(ParseError(R"({"__metadata__":[1]})"), {"__metadata__", "object of strings"});
}

TEST(SafetensorsTest, BadDtype) {
  ExpectInvalid(
      ParseError(R"({"w":{"dtype":"F12","shape":[1],"data_offsets":[0,4]}})", FloatBytes({1.0f})),
      {"tensor \"w\"", "unknown dtype \"F12\""});
  // Known but not convertible: the file opens, the conversion names tensor and dtype.
  absl::StatusOr<SafetensorsFile> file = SafetensorsFile::FromBytes(
      FileBytes(R"({"w":{"dtype":"I32","shape":[1],"data_offsets":[0,4]}})", FloatBytes({1.0f})),
      "bad.safetensors");
  ASSERT_TRUE(file.ok()) << file.status();
  ExpectInvalid(file->ReadFloat32("w").status(), {"tensor \"w\"", "dtype I32"});
  EXPECT_FALSE(SafetensorsDTypeConvertsToFloat32("I32"));
  EXPECT_EQ(SafetensorsDTypeBytes("F8_E4M3"), 1);
  EXPECT_EQ(SafetensorsDTypeBytes("F64"), 8);
  EXPECT_EQ(SafetensorsDTypeBytes("f32"), 0);  // Case matters in the format.
}

TEST(SafetensorsTest, OffsetsOutOfRange) {
  const std::string data = FloatBytes({1.0f, 2.0f});
  ExpectInvalid(ParseError(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,12]}})", data),
                {"tensor \"w\"", "[0, 12]", "run past the data section (8 bytes)"});
  ExpectInvalid(ParseError(R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[8,4]}})", data),
                {"tensor \"w\"", "end before they begin"});
  ExpectInvalid(ParseError(R"({"w":{"dtype":"F32","shape":[1],)"
                           R"("data_offsets":[18446744073709551612,18446744073709551615]}})",
                           data),
                {"tensor \"w\"", "data_offsets"});
}

TEST(SafetensorsTest, OverlappingOffsets) {
  const std::string data = FloatBytes({1.0f, 2.0f, 3.0f});
  ExpectInvalid(ParseError(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                           R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                           data),
                {"\"a\" [0, 8)", "\"b\" [4, 12)", "overlap"});
  // Identical ranges overlap too.
  ExpectInvalid(ParseError(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]},)"
                           R"("b":{"dtype":"BF16","shape":[2],"data_offsets":[4,8]}})",
                           data),
                {"overlap"});
}

TEST(SafetensorsTest, ShapeTimesDtypeMustMatchTheByteRange) {
  const std::string data = FloatBytes({1.0f, 2.0f, 3.0f, 4.0f});
  ExpectInvalid(ParseError(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}})", data),
                {"tensor \"w\"", "[3] x F32", "needs 12 bytes", "hold 16"});
  ExpectInvalid(ParseError(R"({"w":{"dtype":"BF16","shape":[2,2],"data_offsets":[0,16]}})", data),
                {"tensor \"w\"", "needs 8 bytes"});
  // Element counts that overflow 64 bits are rejected, not wrapped into a small size.
  ExpectInvalid(ParseError(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296,4],)"
                           R"("data_offsets":[0,16]}})",
                           data),
                {"tensor \"w\"", "too large"});
  ExpectInvalid(ParseError(R"({"w":{"dtype":"F32","shape":[4611686018427387904],)"
                           R"("data_offsets":[0,16]}})",
                           data),
                {"tensor \"w\"", "too large"});
}

TEST(SafetensorsTest, ReadFloat32ChecksTheDestinationSize) {
  absl::StatusOr<SafetensorsFile> file = SafetensorsFile::FromBytes(
      FileBytes(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
                FloatBytes({1.0f, 2.0f})),
      "bad.safetensors");
  ASSERT_TRUE(file.ok());
  std::vector<float> out(3);
  ExpectInvalid(file->ReadFloat32(*file->Find("w"), absl::MakeSpan(out)), {"destination"});
}

TEST(SafetensorsTest, ReadsARangeOfElementsOfEachDtype) {
  // The same [2, 3] values stored as F32, F16 and BF16 (all exact in 16 bits), at an odd offset.
  std::string header = R"({"f":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
                       R"("h":{"dtype":"F16","shape":[2,3],"data_offsets":[24,36]},)"
                       R"("b":{"dtype":"BF16","shape":[2,3],"data_offsets":[36,48]}})";
  if (header.size() % 2 == 0) header += ' ';
  const std::string data = FloatBytes({1.0f, -2.0f, 0.5f, 4.0f, -0.25f, 8.0f}) +
                           U16Bytes({0x3C00, 0xC000, 0x3800, 0x4400, 0xB400, 0x4800}) +
                           U16Bytes({0x3F80, 0xC000, 0x3F00, 0x4080, 0xBE80, 0x4100});
  absl::StatusOr<SafetensorsFile> file =
      SafetensorsFile::FromBytes(FileBytes(header, data), "bad.safetensors");
  ASSERT_TRUE(file.ok()) << file.status();
  for (const char* name : {"f", "h", "b"}) {
    SCOPED_TRACE(name);
    const SafetensorsTensor& tensor = *file->Find(name);
    std::vector<float> row(3);
    ASSERT_TRUE(file->ReadFloat32(tensor, 3, absl::MakeSpan(row)).ok());
    EXPECT_THAT(row, ElementsAre(4.0f, -0.25f, 8.0f));  // the second row
    std::vector<float> column(1);
    ASSERT_TRUE(file->ReadFloat32(tensor, 1, absl::MakeSpan(column)).ok());
    EXPECT_THAT(column, ElementsAre(-2.0f));
    std::vector<float> none;
    EXPECT_TRUE(file->ReadFloat32(tensor, 6, absl::MakeSpan(none)).ok());
    ExpectInvalid(file->ReadFloat32(tensor, 4, absl::MakeSpan(row)),
                  {"6 elements", "[4, 7) are not inside it"});
    ExpectInvalid(file->ReadFloat32(tensor, -1, absl::MakeSpan(column)), {"[-1, 0)"});
  }
}

TEST(SafetensorsTest, EveryTruncationOfARealFileFailsCleanly) {
  const std::filesystem::path path = testdata::FixtureDir("safetensors") / "dtypes.safetensors";
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  ASSERT_TRUE(in) << path;
  std::string full(static_cast<size_t>(in.tellg()), '\0');
  in.seekg(0);
  in.read(full.data(), static_cast<std::streamsize>(full.size()));
  ASSERT_TRUE(in.good()) << path;
  ASSERT_TRUE(SafetensorsFile::FromBytes(full, "full").ok());
  for (size_t size = 0; size < full.size(); size += (size < 2000 ? 1 : 97)) {
    const absl::Status status = SafetensorsFile::FromBytes(full.substr(0, size), "cut").status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << "size " << size;
  }
  // And through the mmap path.
  const std::filesystem::path cut =
      std::filesystem::path(::testing::TempDir()) / "safetensors_test_cut.safetensors";
  {
    std::ofstream out(cut, std::ios::binary);
    out.write(full.data(), static_cast<std::streamsize>(full.size() / 2));
  }
  EXPECT_EQ(SafetensorsFile::Open(cut.string()).status().code(),
            absl::StatusCode::kInvalidArgument);
  std::filesystem::remove(cut);
}

// Random byte flips, insertions and truncations: every outcome is a Status, and whatever opens
// also converts.
TEST(SafetensorsTest, MutatedFilesNeverCrash) {
  const std::string header = R"({"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},)"
                             R"("h":{"dtype":"F16","shape":[3],"data_offsets":[16,22]},)"
                             R"("b":{"dtype":"BF16","shape":[1,3],"data_offsets":[22,28]},)"
                             R"("__metadata__":{"format":"pt"}})";
  const std::string valid =
      FileBytes(header, FloatBytes({1, 2, 3, 4}) + U16Bytes({1, 2, 3}) + U16Bytes({4, 5, 6}));
  std::mt19937 rng(7);
  int opened = 0;
  for (int trial = 0; trial < 5000; ++trial) {
    std::string bytes = valid;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const size_t pos = rng() % bytes.size();
      switch (rng() % 4) {
        case 0:
          bytes[pos] = static_cast<char>(rng());
          break;
        case 1:
          bytes[pos] = "{}[],:\"0123456789-."[rng() % 19];
          break;
        case 2:
          bytes.insert(pos, 1, static_cast<char>(rng()));
          break;
        default:
          bytes.resize(pos);
          break;
      }
      if (bytes.empty()) break;
    }
    absl::StatusOr<SafetensorsFile> file = SafetensorsFile::FromBytes(bytes, "mutated");
    if (!file.ok()) {
      EXPECT_EQ(file.status().code(), absl::StatusCode::kInvalidArgument) << file.status();
      continue;
    }
    ++opened;
    for (const auto& [name, tensor] : file->tensors()) {
      if (!SafetensorsDTypeConvertsToFloat32(tensor.dtype)) continue;
      EXPECT_TRUE(file->ReadFloat32(name).ok()) << name;
    }
  }
  EXPECT_GT(opened, 0);  // Some edits hit only the data section.
}

}  // namespace
}  // namespace headroom::worker
