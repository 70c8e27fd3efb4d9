#include "io/safetensors.h"

#include <gtest/gtest.h>

#include "expect_error.h"
#include "st_writer.h"

namespace vtllm::io {
namespace {

using testing::random_bytes;
using testing::safetensors_bytes;
using testing::safetensors_from_parts;
using testing::StTensor;

SafetensorsHeader parse(const std::string& file) {
  return parse_safetensors_header(file, file.size(), "m.safetensors");
}

std::string one_tensor_header(const std::string& dtype, const std::string& shape, uint64_t b, uint64_t e) {
  return "{\"w\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":[" + std::to_string(b) +
         "," + std::to_string(e) + "]}}";
}

TEST(Safetensors, RoundTripsRandomTensorsThroughTheMapping) {
  testing::TempDir dir;
  std::vector<StTensor> ts = {
      {"a.weight", "BF16", {3, 5}, random_bytes(30, 1)},
      {"b", "F32", {7}, random_bytes(28, 2)},
      {"c.bias", "I64", {2, 1, 2}, random_bytes(32, 3)},
      {"empty", "F16", {0, 4}, ""},
      {"fp8", "F8_E4M3", {9}, random_bytes(9, 4)},
  };
  testing::write_file(dir / "m.safetensors", safetensors_bytes(ts, "{\"format\":\"pt\"}"));
  SafetensorsFile f = SafetensorsFile::open((dir / "m.safetensors").string());
  ASSERT_EQ(f.tensors().size(), ts.size());
  EXPECT_EQ(f.header().metadata.at("format"), "pt");
  for (const StTensor& want : ts) {
    const SafetensorsTensor* got = f.find(want.name);
    ASSERT_NE(got, nullptr) << want.name;
    EXPECT_EQ(got->st_dtype, want.dtype);
    EXPECT_EQ(got->shape, want.shape);
    EXPECT_EQ(got->end - got->begin, want.bytes.size());
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(f.data(*got)), want.bytes.size()), want.bytes)
        << want.name;
  }
  EXPECT_EQ(f.find("a.weight")->dtype, vt::DType::kBF16);
  EXPECT_EQ(f.find("fp8")->dtype, vt::DType::kF8E4M3);
  EXPECT_EQ(f.find("missing"), nullptr);
}

TEST(Safetensors, KnownDtypeWithoutVtTypeParsesButHasNoDType) {
  auto h = parse(safetensors_from_parts(one_tensor_header("F64", "[2]", 0, 16), random_bytes(16, 5)));
  ASSERT_EQ(h.tensors.size(), 1u);
  EXPECT_FALSE(h.tensors[0].dtype.has_value());
  EXPECT_EQ(h.tensors[0].itemsize, 8u);
}

TEST(Safetensors, RejectsFileShorterThanTheLengthPrefix) {
  EXPECT_ERROR_WITH(parse(std::string("\x10\0\0", 3)), "m.safetensors", "too short");
  EXPECT_ERROR_WITH(parse(""), "m.safetensors", "too short");
}

TEST(Safetensors, RejectsHeaderLengthPastTheEnd) {
  std::string file = safetensors_bytes({{"w", "F32", {4}, random_bytes(16, 6)}});
  file[0] = char(0xff);
  file[1] = char(0xff);
  EXPECT_ERROR_WITH(parse(file), "m.safetensors", "header length", "past the end");
  std::string huge(16, '\0');
  huge[7] = char(0x80);  // 2^63
  EXPECT_ERROR_WITH(parse(huge), "past the end");
}

TEST(Safetensors, RejectsTruncatedData) {
  std::string file = safetensors_bytes({{"w", "F32", {4}, random_bytes(16, 7)}});
  file.resize(file.size() - 3);
  EXPECT_ERROR_WITH(parse(file), "m.safetensors", "tensor 'w'", "past the end of the data");
}

TEST(Safetensors, RejectsMalformedJson) {
  EXPECT_ERROR_WITH(parse(safetensors_from_parts("{\"w\": {\"dtype\": \"F32\",", "")), "m.safetensors",
                    "malformed header JSON");
  EXPECT_ERROR_WITH(parse(safetensors_from_parts("[1, 2]", "")), "does not start with a JSON object");
  EXPECT_ERROR_WITH(parse(safetensors_from_parts("{\"w\": 3}", "")), "tensor 'w'", "not a JSON object");
}

TEST(Safetensors, RejectsUnknownDtype) {
  EXPECT_ERROR_WITH(parse(safetensors_from_parts(one_tensor_header("F17", "[2]", 0, 8), random_bytes(8, 8))),
                    "m.safetensors", "tensor 'w'", "unknown dtype 'F17'");
}

TEST(Safetensors, RejectsShapeThatDisagreesWithTheByteRange) {
  EXPECT_ERROR_WITH(parse(safetensors_from_parts(one_tensor_header("F32", "[3]", 0, 16), random_bytes(16, 9))),
                    "tensor 'w'", "shape [3] of F32 needs 12 bytes", "hold 16");
  EXPECT_ERROR_WITH(parse(safetensors_from_parts(one_tensor_header("F32", "[-3]", 0, 12), random_bytes(12, 9))),
                    "tensor 'w'", "not a non-negative integer");
  EXPECT_ERROR_WITH(parse(safetensors_from_parts(
                        one_tensor_header("F32", "[4294967296, 4294967296, 4]", 0, 12), random_bytes(12, 9))),
                    "tensor 'w'", "too large");
}

TEST(Safetensors, RejectsBadOffsets) {
  EXPECT_ERROR_WITH(parse(safetensors_from_parts(one_tensor_header("F32", "[1]", 8, 4), random_bytes(8, 10))),
                    "tensor 'w'", "end before begin");
  EXPECT_ERROR_WITH(parse(safetensors_from_parts(one_tensor_header("F32", "[1]", 100, 104), random_bytes(8, 10))),
                    "tensor 'w'", "past the end of the data");
  EXPECT_ERROR_WITH(
      parse(safetensors_from_parts("{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", "xxxx")),
      "tensor 'w'", "data_offsets");
}

TEST(Safetensors, RejectsOverlappingTensors) {
  std::string header =
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
      "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}";
  EXPECT_ERROR_WITH(parse(safetensors_from_parts(header, random_bytes(12, 11))), "m.safetensors", "'a'", "'b'",
                    "overlap");
}

TEST(Safetensors, RejectsDuplicateNames) {
  std::string header =
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
      "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}";
  EXPECT_ERROR_WITH(parse(safetensors_from_parts(header, random_bytes(8, 12))), "tensor 'a' appears twice");
}

TEST(Safetensors, RejectsNonStringMetadata) {
  EXPECT_ERROR_WITH(parse(safetensors_from_parts("{\"__metadata__\":{\"k\":1}}", "")), "'__metadata__'", "'k'");
}

TEST(Safetensors, OpenNamesAMissingFile) {
  EXPECT_ERROR_WITH(SafetensorsFile::open("/nonexistent/x.safetensors"), "/nonexistent/x.safetensors",
                    "cannot open");
}

}  // namespace
}  // namespace vtllm::io
