// Test helper: the multimodal oracle fixtures (tools/oracle/vl_fixtures.py) the VL tests run
// on. Header-only: tests/models globs *_test.cpp; tests/engine includes it too.
#pragma once

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <string>
#include <vector>

namespace vtllm::models::testing {

// Repository-relative directories of the VL fixtures, sorted: those vl_fixtures.py writes
// (its --arch dense and --arch moe), listed whether or not they exist yet so that a missing
// one reports a skip, plus every other tests/fixtures/<name>/ holding a vl_reference.json,
// so that a new fixture joins the tests with no code change.
inline std::vector<std::string> vl_fixture_dirs() {
  std::vector<std::string> dirs = {"tests/fixtures/qwen3_5-tiny-vl",
                                   "tests/fixtures/qwen3_5_moe-tiny-vl-mm"};
  const std::filesystem::path root = std::filesystem::path(VTLLM_SOURCE_DIR) / "tests/fixtures";
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(root, ec))
    if (std::filesystem::exists(e.path() / "vl_reference.json"))
      dirs.push_back("tests/fixtures/" + e.path().filename().string());
  std::sort(dirs.begin(), dirs.end());
  dirs.erase(std::unique(dirs.begin(), dirs.end()), dirs.end());
  return dirs;
}

// A gtest parameter name for a fixture directory: its last component with every
// non-alphanumeric character as '_' (qwen3_5_moe_tiny_vl_mm).
inline std::string vl_fixture_test_name(const std::string& dir) {
  std::string n = dir.substr(dir.rfind('/') + 1);
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
}

}  // namespace vtllm::models::testing
