#include "server/auth.h"

#include "server/api_error.h"

namespace vtllm::server {

bool keys_equal(std::string_view presented, std::string_view expected) {
  // Every byte of `expected` is visited whatever `presented` holds; a length
  // mismatch folds into the same accumulator instead of returning early.
  volatile unsigned char diff = presented.size() == expected.size() ? 0 : 1;
  for (size_t i = 0; i < expected.size(); ++i) {
    const unsigned char p = i < presented.size() ? static_cast<unsigned char>(presented[i]) : 0;
    diff = diff | (p ^ static_cast<unsigned char>(expected[i]));
  }
  return diff == 0;
}

bool path_needs_key(std::string_view path) { return path.substr(0, 4) == "/v1/" || path == "/v1"; }

void check_api_key(std::string_view authorization, std::string_view api_key) {
  if (api_key.empty()) return;
  constexpr std::string_view kBearer = "Bearer ";
  if (authorization.empty()) {
    throw ApiError::unauthorized("missing API key: send 'Authorization: Bearer <key>'");
  }
  if (authorization.substr(0, kBearer.size()) != kBearer ||
      !keys_equal(authorization.substr(kBearer.size()), api_key)) {
    throw ApiError::unauthorized("incorrect API key");
  }
}

void check_body_size(size_t size, size_t limit) {
  if (size > limit) throw ApiError::payload_too_large(size, limit);
}

}  // namespace vtllm::server
