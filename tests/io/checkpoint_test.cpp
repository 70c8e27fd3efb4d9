#include "io/checkpoint.h"

#include <gtest/gtest.h>

#include "expect_error.h"
#include "st_writer.h"

namespace vtllm::io {
namespace {

using testing::random_bytes;
using testing::safetensors_bytes;
using testing::StTensor;
using testing::TempDir;
using testing::write_file;

const std::string kIndex = "model.safetensors.index.json";

// Two shards: a, b in the first; c in the second.
void write_two_shards(const TempDir& dir) {
  write_file(dir / "model-00001-of-00002.safetensors",
             safetensors_bytes({{"a", "F32", {2, 3}, random_bytes(24, 1)}, {"b", "BF16", {5}, random_bytes(10, 2)}}));
  write_file(dir / "model-00002-of-00002.safetensors",
             safetensors_bytes({{"c", "F32", {4}, random_bytes(16, 3)}}));
  write_file(dir / kIndex,
             R"({"metadata": {"total_size": 50}, "weight_map": {"a": "model-00001-of-00002.safetensors",
               "b": "model-00001-of-00002.safetensors", "c": "model-00002-of-00002.safetensors"}})");
}

TEST(Checkpoint, OpensTwoShardsThroughTheIndex) {
  TempDir dir;
  write_two_shards(dir);
  Checkpoint ck = Checkpoint::open(dir.str());
  EXPECT_EQ(ck.shards().size(), 2u);
  ASSERT_EQ(ck.tensors().size(), 3u);
  const Checkpoint::Entry* c = ck.find("c");
  ASSERT_NE(c, nullptr);
  EXPECT_NE(c->file->path().find("00002"), std::string::npos);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(c->file->data(*c->tensor)), 16), random_bytes(16, 3));
  const Checkpoint::Entry* b = ck.find("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(b->file->data(*b->tensor)), 10), random_bytes(10, 2));
  EXPECT_EQ(ck.find("d"), nullptr);
}

TEST(Checkpoint, OpensASingleFile) {
  TempDir dir;
  write_file(dir / "model.safetensors", safetensors_bytes({{"x", "F16", {3}, random_bytes(6, 4)}}));
  EXPECT_TRUE(Checkpoint::exists(dir.str()));
  Checkpoint ck = Checkpoint::open(dir.str());
  ASSERT_EQ(ck.tensors().size(), 1u);
  EXPECT_EQ(ck.find("x")->tensor->shape, std::vector<int64_t>{3});
}

TEST(Checkpoint, NamesAMissingShard) {
  TempDir dir;
  write_two_shards(dir);
  std::filesystem::remove(dir / "model-00002-of-00002.safetensors");
  EXPECT_ERROR_WITH(Checkpoint::open(dir.str()), "model-00002-of-00002.safetensors", "shard is missing");
}

TEST(Checkpoint, NamesATensorTheIndexPutsInTheWrongShard) {
  TempDir dir;
  write_two_shards(dir);
  write_file(dir / kIndex,
             R"({"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00001-of-00002.safetensors",
               "c": "model-00001-of-00002.safetensors"}})");
  EXPECT_ERROR_WITH(Checkpoint::open(dir.str()), "model-00001-of-00002.safetensors", "tensor 'c'",
                    "not in this shard");
}

TEST(Checkpoint, NamesAShardTensorMissingFromTheIndex) {
  TempDir dir;
  write_two_shards(dir);
  write_file(dir / kIndex,
             R"({"weight_map": {"a": "model-00001-of-00002.safetensors", "c": "model-00002-of-00002.safetensors"}})");
  EXPECT_ERROR_WITH(Checkpoint::open(dir.str()), "tensor 'b'", "not listed in");
}

TEST(Checkpoint, NamesAMalformedIndex) {
  TempDir dir;
  write_two_shards(dir);
  write_file(dir / kIndex, R"({"weight_map": {"a": )");
  EXPECT_ERROR_WITH(Checkpoint::open(dir.str()), kIndex, "malformed JSON");
  write_file(dir / kIndex, R"({"weight_map": {"a": "../etc/passwd"}})");
  EXPECT_ERROR_WITH(Checkpoint::open(dir.str()), kIndex, "'a'", "not a file in the checkpoint directory");
  write_file(dir / kIndex, R"({"metadata": {}})");
  EXPECT_ERROR_WITH(Checkpoint::open(dir.str()), kIndex, "weight_map");
}

TEST(Checkpoint, NamesACorruptShard) {
  TempDir dir;
  write_two_shards(dir);
  std::string bad = safetensors_bytes({{"c", "F32", {4}, random_bytes(16, 3)}});
  bad.resize(bad.size() - 1);
  write_file(dir / "model-00002-of-00002.safetensors", bad);
  EXPECT_ERROR_WITH(Checkpoint::open(dir.str()), "model-00002-of-00002.safetensors", "tensor 'c'", "truncated");
}

TEST(Checkpoint, NamesADirectoryWithoutWeights) {
  TempDir dir;
  EXPECT_FALSE(Checkpoint::exists(dir.str()));
  EXPECT_ERROR_WITH(Checkpoint::open(dir.str()), dir.str(), "no model.safetensors");
}

}  // namespace
}  // namespace vtllm::io
