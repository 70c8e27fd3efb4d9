#include "server/api_error.h"

#include <utility>

namespace vtllm::server {

ApiError::ApiError(int status, std::string type, std::string message, std::string param,
                   std::string code)
    : vtllm::Error(std::move(message)),
      status_(status),
      type_(std::move(type)),
      param_(std::move(param)),
      code_(std::move(code)) {}

ApiError ApiError::bad_request(std::string param, std::string message, std::string code) {
  return ApiError(400, "invalid_request_error", std::move(message), std::move(param),
                  std::move(code));
}

ApiError ApiError::unauthorized(std::string message) {
  return ApiError(401, "authentication_error", std::move(message), "", "invalid_api_key");
}

ApiError ApiError::not_found(std::string message, std::string code) {
  return ApiError(404, "not_found_error", std::move(message), "", std::move(code));
}

ApiError ApiError::payload_too_large(size_t size, size_t limit) {
  return ApiError(
      413, "invalid_request_error",
      str_cat("request body of ", size, " bytes is over the limit of ", limit, " bytes"), "",
      "request_too_large");
}

ApiError ApiError::unavailable(std::string message, std::string code) {
  return ApiError(503, "server_error", std::move(message), "", std::move(code));
}

ApiError ApiError::internal(std::string message) {
  return ApiError(500, "server_error", std::move(message), "", "internal_error");
}

}  // namespace vtllm::server
