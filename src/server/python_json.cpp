#include "server/python_json.h"

namespace vtllm::server {

namespace {

void dump_to(const nlohmann::ordered_json& v, std::string& out) {
  using nlohmann::ordered_json;
  if (v.is_object()) {
    out += '{';
    bool first = true;
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (!first) out += ", ";
      first = false;
      out += ordered_json(it.key()).dump(-1, ' ', false, ordered_json::error_handler_t::replace);
      out += ": ";
      dump_to(it.value(), out);
    }
    out += '}';
  } else if (v.is_array()) {
    out += '[';
    bool first = true;
    for (const auto& x : v) {
      if (!first) out += ", ";
      first = false;
      dump_to(x, out);
    }
    out += ']';
  } else {
    // Scalars: nlohmann writes strings with the escapes Python uses (\" \\ \n \r \t \b \f,
    // \u00xx for other control characters) and doubles as the shortest round-trip text.
    out += v.dump(-1, ' ', false, ordered_json::error_handler_t::replace);
  }
}

}  // namespace

std::string python_json_dumps(const nlohmann::ordered_json& v) {
  std::string out;
  dump_to(v, out);
  return out;
}

}  // namespace vtllm::server
