// Whole-file reads for the config, tokenizer and template loaders.
#pragma once

#include <filesystem>
#include <string>

namespace vtllm {

// The file's bytes; throws vtllm::Error naming the path when it cannot be
// opened or read.
std::string read_file(const std::filesystem::path& path);

}  // namespace vtllm
