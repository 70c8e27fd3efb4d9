// base/json.h: typed reads against the value nlohmann holds, and every error a
// JsonError of the right kind whose message names the value's path.
#include "base/json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

namespace vtllm {
namespace {

template <class F>
void expect_json_error(F&& f, JsonError::Kind kind, const std::string& where,
                       const std::string& problem) {
  try {
    f();
    FAIL() << "no JsonError (expected '" << where << ": " << problem << "')";
  } catch (const JsonError& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    const std::string what = e.what();
    EXPECT_EQ(what.rfind(where + ": ", 0), 0u) << what;
    EXPECT_NE(what.find(problem), std::string::npos) << what;
  }
}

TEST(JsonPath, NamesTheOriginThenTheDottedPath) {
  const JsonPath root("tokenizer.json");
  EXPECT_EQ(root.str(), "tokenizer.json");
  EXPECT_EQ(root.key("model").key("vocab").str(), "tokenizer.json: model.vocab");
  EXPECT_EQ(root.key("merges").index(3).str(), "tokenizer.json: merges[3]");
  EXPECT_EQ(JsonPath().key("messages").index(0).key("role").str(), "messages[0].role");
  EXPECT_EQ(JsonPath().key("messages").index(0).key("role").path(), "messages[0].role");
}

TEST(JsonInt, AcceptsExactlyTheIntegersInRange) {
  // Random integers, spelled as JSON integers and (when exact) as floats, in and
  // out of random ranges: accepted exactly when they lie in [lo, hi].
  std::mt19937_64 rng(17);
  const JsonPath at("t.json", "x");
  for (int trial = 0; trial < 2000; ++trial) {
    const int64_t v = int64_t(rng() >> (rng() % 64));
    const int64_t sign = trial % 2 ? -1 : 1;
    const int64_t x = v == INT64_MIN ? v : sign * v;
    const int64_t a = int64_t(rng() >> (rng() % 64)) * (trial % 3 ? 1 : -1);
    const int64_t b = int64_t(rng() >> (rng() % 64));
    const int64_t lo = std::min(a, b), hi = std::max(a, b);
    const bool in = x >= lo && x <= hi;
    const Json as_int = x;
    if (in) {
      EXPECT_EQ(json_int(as_int, lo, hi, at), x);
    } else {
      expect_json_error([&] { json_int(as_int, lo, hi, at); }, JsonError::Kind::kValue, "t.json: x",
                        "out of range");
    }
    const double d = double(x);
    if (std::fabs(d) < 9e18 && int64_t(d) == x) {
      const Json as_float = d;
      if (in)
        EXPECT_EQ(json_int(as_float, lo, hi, at), x);
      else
        EXPECT_THROW(json_int(as_float, lo, hi, at), JsonError);
    }
  }
  // Past int64 as unsigned, fractional, non-finite-range floats and other types.
  expect_json_error([&] { json_int(Json(uint64_t(1) << 63), 0, INT64_MAX, at); },
                    JsonError::Kind::kValue, "t.json: x",
                    "expected an integer that fits in 64 bits, got 9223372036854775808");
  expect_json_error([&] { json_int(Json(1.5), 0, 10, at); }, JsonError::Kind::kType, "t.json: x",
                    "expected an integer, got 1.5");
  expect_json_error([&] { json_int(Json(1e30), INT64_MIN, INT64_MAX, at); }, JsonError::Kind::kType,
                    "t.json: x", "expected an integer");
  expect_json_error([&] { json_int(Json("7"), 0, 10, at); }, JsonError::Kind::kType, "t.json: x",
                    "expected an integer, got \"7\"");
}

TEST(JsonFields, ReadsTypedMembersAndNamesTheBadOne) {
  const Json j = json_parse(
      R"({"n": 4096.0, "f": 0.5, "b": true, "s": "x", "l": [1, 2], "sl": ["a"], "z": null,
          "c": {"deep": "oops"}, "e": 7})",
      "config.json");
  const JsonFields f(j, "config.json", "");
  EXPECT_EQ(f.opt_int("n"), 4096);
  EXPECT_EQ(f.opt_double("f"), 0.5);
  EXPECT_EQ(f.opt_bool("b"), true);
  EXPECT_EQ(f.opt_string("s"), "x");
  EXPECT_EQ(f.opt_int_list("l"), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(f.opt_string_list("sl"), (std::vector<std::string>{"a"}));
  EXPECT_EQ(f.int_or_list("e"), (std::vector<int64_t>{7}));
  EXPECT_EQ(f.int_or_list("l"), (std::vector<int64_t>{1, 2}));
  EXPECT_TRUE(f.int_or_list("absent").empty());
  EXPECT_FALSE(f.opt_int("z"));  // null reads as absent
  EXPECT_FALSE(f.has("z"));
  EXPECT_EQ(f.get_int("absent", 3), 3);
  expect_json_error([&] { f.opt_int("n", 0, 100); }, JsonError::Kind::kValue, "config.json: n",
                    "4096 is out of range [0, 100]");
  expect_json_error([&] { f.opt_int("s"); }, JsonError::Kind::kType, "config.json: s",
                    "expected an integer, got \"x\"");
  expect_json_error([&] { f.opt_bool("s"); }, JsonError::Kind::kType, "config.json: s",
                    "expected true or false");
  expect_json_error([&] { f.opt_string_list("l"); }, JsonError::Kind::kType, "config.json: l[0]",
                    "expected a string, got 1");
  expect_json_error([&] { f.require_int("absent"); }, JsonError::Kind::kMissing,
                    "config.json: absent", "required field is missing");
  const std::optional<JsonFields> c = f.child("c");
  ASSERT_TRUE(c);
  expect_json_error([&] { c->opt_int("deep"); }, JsonError::Kind::kType, "config.json: c.deep",
                    "expected an integer");
  expect_json_error([&] { f.child("s"); }, JsonError::Kind::kType, "config.json: s",
                    "expected a JSON object");
  expect_json_error([&] { f.fail("b", "is not allowed"); }, JsonError::Kind::kValue,
                    "config.json: b", "is not allowed");
}

TEST(JsonFields, TheTopLevelMustBeAnObject) {
  const Json j = json_parse("[1]", "config.json");
  expect_json_error([&] { JsonFields(j, "config.json", ""); }, JsonError::Kind::kType,
                    "config.json", "the top level is not a JSON object");
}

TEST(JsonParse, ASyntaxErrorNamesTheOrigin) {
  expect_json_error([] { json_parse(R"({"a": )", "bad.json"); }, JsonError::Kind::kSyntax,
                    "bad.json", "malformed JSON");
}

TEST(JsonMember, MissingAndOptionalMembers) {
  const Json j = json_parse(R"({"type": "BPE", "z": null})", "t.json");
  const JsonPath at("t.json", "model");
  EXPECT_EQ(json_type(j, at), "BPE");
  EXPECT_EQ(json_optional(j, "z", at), nullptr);
  EXPECT_EQ(json_string_or(j, "absent", "d", at), "d");
  EXPECT_EQ(json_bool_or(j, "z", true, at), true);
  expect_json_error([&] { json_member(j, "vocab", at); }, JsonError::Kind::kMissing,
                    "t.json: model", "missing field 'vocab'");
  expect_json_error([&] { json_array(j, at); }, JsonError::Kind::kType, "t.json: model",
                    "expected an array");
}

TEST(JsonTypeName, NamesIntegersApartFromNumbers) {
  EXPECT_STREQ(json_type_name(Json(3)), "integer");
  EXPECT_STREQ(json_type_name(Json(uint64_t(3))), "integer");
  EXPECT_STREQ(json_type_name(Json(3.5)), "number");
  EXPECT_STREQ(json_type_name(Json("s")), "string");
  EXPECT_STREQ(json_type_name(Json::array()), "array");
  EXPECT_STREQ(json_type_name(Json::object()), "object");
  EXPECT_STREQ(json_type_name(Json()), "null");
  EXPECT_STREQ(json_type_name(Json(false)), "boolean");
}

}  // namespace
}  // namespace vtllm
