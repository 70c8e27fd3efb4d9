// ApiError: a failure the server reports to its client as an OpenAI error object
// {"error": {"message", "type", "param", "code"}} with an HTTP status.
//
// The `type` strings follow OpenAI's (invalid_request_error, authentication_error,
// not_found_error, server_error, ...); `code` is a short machine-readable reason
// ("invalid_type", "context_length_exceeded", ...) and `param` names the request
// field at fault, empty when none is (rendered as null).
#pragma once

#include <string>

#include "base/error.h"

namespace vtllm::server {

class ApiError : public vtllm::Error {
 public:
  ApiError(int status, std::string type, std::string message, std::string param = "",
           std::string code = "");

  int status() const { return status_; }
  const std::string& type() const { return type_; }
  const std::string& param() const { return param_; }
  const std::string& code() const { return code_; }

  // 400 invalid_request_error naming `param`; `code` defaults to invalid_value.
  static ApiError bad_request(std::string param, std::string message,
                              std::string code = "invalid_value");
  static ApiError unauthorized(std::string message);
  static ApiError not_found(std::string message, std::string code);
  static ApiError payload_too_large(size_t size, size_t limit);
  static ApiError unavailable(std::string message, std::string code);
  static ApiError internal(std::string message);

 private:
  int status_;
  std::string type_;
  std::string param_;
  std::string code_;
};

}  // namespace vtllm::server
