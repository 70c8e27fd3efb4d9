#include "base/file.h"

#include <fstream>
#include <sstream>

#include "base/error.h"

namespace vtllm {

std::string read_file(const std::filesystem::path& path) {
  // A directory opens as a stream on Linux and then reads as empty.
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) VT_THROW(path.string(), ": is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) VT_THROW(path.string(), ": cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) VT_THROW(path.string(), ": read failed");
  return ss.str();
}

}  // namespace vtllm
