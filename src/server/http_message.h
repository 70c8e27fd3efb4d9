// HTTP/1.1 messages without the network: an incremental request parser with
// limits (Boost.Beast's parser inside the .cpp), and the bytes of a response
// head and of chunked framing.
//
// Nothing here blocks or owns a socket; http_server.cpp feeds the parser what it
// reads and writes what these functions format.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vtllm::server {

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

// One parsed request.
struct HttpRequest {
  std::string method;  // as sent ("GET", "POST", ...)
  std::string target;  // the request-target as sent ("/v1/models?x=1")
  std::string path;    // target up to '?'
  int version = 11;    // 10 (HTTP/1.0) or 11 (HTTP/1.1)
  // Whether the client lets the connection stay open after this request: HTTP/1.1
  // unless "Connection: close", HTTP/1.0 only with "Connection: keep-alive".
  bool keep_alive = true;
  HttpHeaders headers;  // in order, names as sent
  std::string body;

  // The value of the first header called `name` (ASCII case-insensitive); empty when absent.
  std::string_view header(std::string_view name) const;
};

struct HttpLimits {
  size_t max_header_bytes = 64u << 10;  // request line + header fields; over it: 431
  size_t max_headers = 256;             // header fields; over it: 431
  size_t max_target_bytes = 16u << 10;  // request-target; over it: 414
  size_t max_body_bytes = 32u << 20;    // declared length or chunked total; over it: 413
};

// Parses one request from bytes given as they arrive. Errors are final: the
// caller answers error_status() and closes the connection. Not thread-safe.
class HttpRequestParser {
 public:
  enum class State {
    kNeedMore,  // everything given was consumed; feed more
    kComplete,  // a whole request: take() it (bytes after it were not consumed)
    kError,     // error_status() / error_message() say why
  };
  struct Step {
    size_t consumed = 0;
    State state = State::kNeedMore;
  };

  explicit HttpRequestParser(const HttpLimits& limits);
  ~HttpRequestParser();
  HttpRequestParser(const HttpRequestParser&) = delete;
  HttpRequestParser& operator=(const HttpRequestParser&) = delete;

  // Parses from the start of `data` (bytes not consumed by an earlier call
  // must be given again, followed by the new ones).
  Step put(std::string_view data);
  // The head (request line and fields) is complete; the body may still come.
  bool header_done() const;
  // The head asked "Expect: 100-continue" and the body has not arrived yet.
  bool expects_continue() const;
  // 400, 413, 414 or 431 after kError; 0 otherwise.
  int error_status() const;
  // A sentence naming what was wrong or over which limit.
  const std::string& error_message() const;
  // The request after kComplete; leaves the parser empty.
  HttpRequest take();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// "Not Found" for 404 and so on; "Unknown" for a status without one here.
const char* reason_phrase(int status);

// "HTTP/1.1 <status> <reason>\r\n<name>: <value>\r\n...\r\n".
std::string response_head(int status, const HttpHeaders& headers);

// One chunk of a chunked body ("<hex size>\r\n<data>\r\n"); nothing for empty data.
void append_chunk(std::string& out, std::string_view data);
inline constexpr std::string_view kLastChunk = "0\r\n\r\n";

// ASCII case-insensitive equality (header names, tokens).
bool iequals(std::string_view a, std::string_view b);

}  // namespace vtllm::server
