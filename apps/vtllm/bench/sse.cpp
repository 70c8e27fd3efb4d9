#include "bench/sse.h"

namespace vtllm::bench {

std::vector<std::string> SseParser::feed(std::string_view bytes) {
  std::vector<std::string> out;
  for (char c : bytes) {
    if (after_cr_) {
      after_cr_ = false;
      if (c == '\n') continue;
    }
    if (c == '\n' || c == '\r') {
      after_cr_ = c == '\r';
      take_line(line_, out);
      line_.clear();
    } else {
      line_ += c;
    }
  }
  return out;
}

std::vector<std::string> SseParser::finish() {
  std::vector<std::string> out;
  if (!line_.empty()) take_line(line_, out);
  line_.clear();
  take_line("", out);
  return out;
}

void SseParser::take_line(std::string_view line, std::vector<std::string>& out) {
  if (line.empty()) {
    if (has_data_) out.push_back(std::move(data_));
    data_.clear();
    has_data_ = false;
    return;
  }
  if (line.front() == ':') return;
  const size_t colon = line.find(':');
  const std::string_view field = line.substr(0, colon);
  if (field != "data") return;
  std::string_view value = colon == std::string_view::npos ? "" : line.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (has_data_) data_ += '\n';
  data_.append(value);
  has_data_ = true;
}

}  // namespace vtllm::bench
