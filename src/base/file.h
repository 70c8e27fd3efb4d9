// Whole-file reads: the one implementation every loader uses (configs,
// checkpoint indexes, tokenizers, chat templates, test fixtures).
#pragma once

#include <filesystem>
#include <string>

namespace vtllm {

// The file's bytes, unmodified (binary mode). Throws vtllm::Error naming the
// path when it is a directory, cannot be opened, or a read fails.
std::string read_file(const std::filesystem::path& path);

}  // namespace vtllm
