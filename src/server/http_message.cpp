#include "server/http_message.h"

#include <algorithm>
#include <boost/asio/buffer.hpp>
#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/error.hpp>
#include <cstdio>
#include <optional>

#include "base/error.h"

namespace vtllm::server {

namespace http = boost::beast::http;
using boost::beast::error_code;

namespace {

char lower(char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; }

std::string_view sv(boost::beast::string_view s) { return {s.data(), s.size()}; }

}  // namespace

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}

std::string_view HttpRequest::header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (iequals(k, name)) return v;
  return {};
}

// Beast's parser does the grammar (request line, fields, Content-Length and
// chunked framing, the header and body limits); the callbacks below collect the
// request and add the limits Beast lacks (field count, target length). Beast
// itself refuses any version but HTTP/1.0 and 1.1.
class BeastRequestParser final : public http::basic_parser<true> {
 public:
  explicit BeastRequestParser(const HttpLimits& limits) : limits_(limits) {
    header_limit(uint32_t(std::min<size_t>(limits.max_header_bytes, UINT32_MAX)));
    body_limit(uint64_t(limits.max_body_bytes));
    eager(true);
  }

  HttpRequest request;
  bool expect_continue = false;
  int status = 0;  // set by a callback that refused the request
  std::string message;

 private:
  void refuse(int s, std::string m, error_code& ec) {
    status = s;
    message = std::move(m);
    // Any error stops Beast; the status above says which.
    ec = http::error::bad_value;
  }

  void on_request_impl(http::verb, boost::beast::string_view method,
                       boost::beast::string_view target, int version, error_code& ec) override {
    if (target.size() > limits_.max_target_bytes) {
      return refuse(414,
                    str_cat("the request target is ", target.size(), " bytes, over the limit of ",
                            limits_.max_target_bytes),
                    ec);
    }
    request.method = std::string(sv(method));
    request.target = std::string(sv(target));
    request.path = request.target.substr(0, request.target.find('?'));
    request.version = version;
  }

  void on_response_impl(int, boost::beast::string_view, int, error_code&) override {}

  void on_field_impl(http::field f, boost::beast::string_view name, boost::beast::string_view value,
                     error_code& ec) override {
    if (request.headers.size() >= limits_.max_headers) {
      return refuse(
          431, str_cat("the request has more than ", limits_.max_headers, " header fields"), ec);
    }
    if (f == http::field::expect && iequals(sv(value), "100-continue")) expect_continue = true;
    request.headers.emplace_back(std::string(sv(name)), std::string(sv(value)));
  }

  void on_header_impl(error_code&) override { request.keep_alive = keep_alive(); }

  void on_body_init_impl(const boost::optional<uint64_t>& length, error_code&) override {
    // The length is within the body limit here (Beast checked it).
    if (length) request.body.reserve(size_t(*length));
  }

  size_t on_body_impl(boost::beast::string_view body, error_code&) override {
    request.body.append(body.data(), body.size());
    return body.size();
  }

  void on_chunk_header_impl(uint64_t, boost::beast::string_view, error_code&) override {}

  size_t on_chunk_body_impl(uint64_t, boost::beast::string_view body, error_code&) override {
    request.body.append(body.data(), body.size());
    return body.size();
  }

  void on_finish_impl(error_code&) override {}

  HttpLimits limits_;
};

struct HttpRequestParser::Impl {
  explicit Impl(const HttpLimits& l) : limits(l), parser(l) {}
  HttpLimits limits;
  BeastRequestParser parser;
  int status = 0;
  std::string message;
};

HttpRequestParser::HttpRequestParser(const HttpLimits& limits)
    : impl_(std::make_unique<Impl>(limits)) {}

HttpRequestParser::~HttpRequestParser() = default;

HttpRequestParser::Step HttpRequestParser::put(std::string_view data) {
  Impl& s = *impl_;
  if (s.status != 0) return {0, State::kError};
  Step step;
  for (;;) {
    if (s.parser.is_done()) {
      step.state = State::kComplete;
      return step;
    }
    if (step.consumed == data.size()) return step;
    error_code ec;
    const size_t n = s.parser.put(
        boost::asio::const_buffer(data.data() + step.consumed, data.size() - step.consumed), ec);
    step.consumed += n;
    if (ec == http::error::need_more) return step;
    if (ec) {
      if (s.parser.status != 0) {
        s.status = s.parser.status;
        s.message = s.parser.message;
      } else if (ec == http::error::header_limit) {
        s.status = 431;
        s.message = str_cat("the request header is over the limit of ", s.limits.max_header_bytes,
                            " bytes");
      } else if (ec == http::error::body_limit) {
        s.status = 413;
        const std::optional<uint64_t> declared =
            s.parser.content_length() ? std::optional<uint64_t>(*s.parser.content_length())
                                      : std::nullopt;
        s.message = declared
                        ? str_cat("request body of ", *declared, " bytes is over the limit of ",
                                  s.limits.max_body_bytes, " bytes")
                        : str_cat("chunked request body is over the limit of ",
                                  s.limits.max_body_bytes, " bytes");
      } else {
        s.status = 400;
        s.message = str_cat("malformed HTTP request: ", ec.message());
      }
      step.state = State::kError;
      return step;
    }
    if (n == 0 && !s.parser.is_done()) return step;
  }
}

bool HttpRequestParser::header_done() const { return impl_->parser.is_header_done(); }

bool HttpRequestParser::expects_continue() const {
  const BeastRequestParser& p = impl_->parser;
  return p.is_header_done() && !p.is_done() && p.expect_continue;
}

int HttpRequestParser::error_status() const { return impl_->status; }

const std::string& HttpRequestParser::error_message() const { return impl_->message; }

HttpRequest HttpRequestParser::take() {
  VT_CHECK(impl_->parser.is_done(), "http parser: take() before the request is complete");
  return std::move(impl_->parser.request);
}

const char* reason_phrase(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 204:
      return "No Content";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 413:
      return "Content Too Large";
    case 414:
      return "URI Too Long";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return "Unknown";
  }
}

std::string response_head(int status, const HttpHeaders& headers) {
  std::string out = str_cat("HTTP/1.1 ", status, " ", reason_phrase(status), "\r\n");
  for (const auto& [k, v] : headers) {
    out += k;
    out += ": ";
    out += v;
    out += "\r\n";
  }
  out += "\r\n";
  return out;
}

void append_chunk(std::string& out, std::string_view data) {
  if (data.empty()) return;
  char size[24];
  const int n = std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  out.append(size, size_t(n));
  out.append(data);
  out += "\r\n";
}

}  // namespace vtllm::server
