#include "server/json_body.h"

#include "server/json_parse.h"
#include "text/utf8.h"

namespace vtllm::server {

using nlohmann::json;

json parse_json_object(std::string_view body) {
  if (!text::is_valid_utf8(body)) {
    throw ApiError::bad_request("", "request body is not valid UTF-8", "invalid_utf8");
  }
  std::optional<json> parsed = parse_json(body);
  if (!parsed) {
    throw ApiError::bad_request("", "request body is not valid JSON", "invalid_json");
  }
  json j = std::move(*parsed);
  if (!j.is_object()) {
    throw ApiError::bad_request(
        "", str_cat("request body must be a JSON object, got ", json_type_name(j)), "invalid_json");
  }
  return j;
}

ApiError to_api_error(const JsonError& e) {
  const char* code = "invalid_value";
  switch (e.kind()) {
    case JsonError::Kind::kSyntax:
      code = "invalid_json";
      break;
    case JsonError::Kind::kMissing:
      code = "missing_field";
      break;
    case JsonError::Kind::kType:
      code = "invalid_type";
      break;
    case JsonError::Kind::kValue:
      code = "invalid_value";
      break;
  }
  return ApiError::bad_request(e.at().path(), e.what(), code);
}

}  // namespace vtllm::server
