// Request gatekeeping that needs no engine: the API key and the body-size limit.
//
// As in vLLM, only /v1/* routes need the key; /health, /version, /metrics,
// /tokenize and /detokenize do not. The key comes as "Authorization: Bearer <key>".
#pragma once

#include <cstddef>
#include <string_view>

namespace vtllm::server {

// Equality in time that depends only on the lengths, not on where the strings differ.
bool keys_equal(std::string_view presented, std::string_view expected);

// True when `path` is one that the API key guards.
bool path_needs_key(std::string_view path);

// Throws ApiError 401 unless `authorization` (the header's value, empty when
// absent) is "Bearer <api_key>". An empty api_key disables the check.
void check_api_key(std::string_view authorization, std::string_view api_key);

// Throws ApiError 413 when a body of `size` bytes is over `limit`.
void check_body_size(size_t size, size_t limit);

}  // namespace vtllm::server
