// A small blocking HTTP/1.1 client over POSIX sockets for the server tests:
// written independently of the server's parser (no Beast), so the tests check
// the bytes on the wire against a second reading of the protocol.
//
// Every read is bounded by a timeout (poll), so a test that waits for a reply
// the server never sends fails instead of hanging.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace vtllm::server::testing {

using Headers = std::vector<std::pair<std::string, std::string>>;

inline std::string lower_ascii(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
  return s;
}

// A connected loopback TCP socket; closed on destruction.
class Socket {
 public:
  Socket() = default;
  explicit Socket(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd_ < 0) return;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(uint16_t(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) close();
    const int one = 1;
    if (fd_ >= 0) ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  Socket(Socket&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Socket& operator=(Socket&& o) noexcept {
    if (this != &o) {
      close();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  ~Socket() { close(); }

  bool ok() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  // Closes with a reset (SO_LINGER 0), as a client that crashed.
  void reset() {
    if (fd_ < 0) return;
    linger l{1, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    close();
  }

  bool send_all(std::string_view data) {
    size_t at = 0;
    while (at < data.size()) {
      const ssize_t n = ::send(fd_, data.data() + at, data.size() - at, MSG_NOSIGNAL);
      if (n <= 0) return false;
      at += size_t(n);
    }
    return true;
  }

  // Appends what arrives within `timeout` (at most one recv); -1 error/timeout, 0 EOF, else bytes.
  ssize_t recv_some(std::string& out, std::chrono::milliseconds timeout) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, int(timeout.count())) <= 0) return -1;
    char buf[16384];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n > 0) out.append(buf, size_t(n));
    return n;
  }

  // True when the peer closed (EOF or reset) within `timeout`; data that comes is dropped.
  bool closed_within(std::chrono::milliseconds timeout) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    std::string junk;
    while (std::chrono::steady_clock::now() < end) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          end - std::chrono::steady_clock::now());
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, int(std::max<int64_t>(1, left.count()))) <= 0) continue;
      char buf[4096];
      if (::recv(fd_, buf, sizeof buf, 0) <= 0) return true;
    }
    return false;
  }

 private:
  int fd_ = -1;
};

struct Response {
  int status = 0;
  std::string version;  // "HTTP/1.1"
  Headers headers;      // names lower-cased
  std::string body;     // de-chunked
  bool chunked = false;

  std::string get_header_value(const std::string& name) const {
    const std::string l = lower_ascii(name);
    for (const auto& [k, v] : headers)
      if (k == l) return v;
    return "";
  }
  bool has_header(const std::string& name) const {
    const std::string l = lower_ascii(name);
    for (const auto& [k, v] : headers)
      if (k == l) return true;
    return false;
  }
};

// Reads one response from `s`, with `buf` holding bytes already read (what is
// left after the response stays there). nullopt on a timeout, EOF before the
// end, or a framing error. `head_only`: a reply to HEAD (no body).
inline std::optional<Response> read_response(Socket& s, std::string& buf,
                                             std::chrono::milliseconds timeout,
                                             bool head_only = false) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto more = [&]() -> bool {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    return s.recv_some(buf, left) > 0;
  };
  for (;;) {
    size_t end;
    while ((end = buf.find("\r\n\r\n")) == std::string::npos)
      if (!more()) return std::nullopt;
    Response r;
    const std::string head = buf.substr(0, end);
    buf.erase(0, end + 4);
    size_t line_end = head.find("\r\n");
    const std::string status_line = head.substr(0, line_end);
    r.version = status_line.substr(0, status_line.find(' '));
    r.status = std::atoi(status_line.c_str() + r.version.size() + 1);
    while (line_end != std::string::npos) {
      const size_t start = line_end + 2;
      line_end = head.find("\r\n", start);
      const std::string line =
          head.substr(start, line_end == std::string::npos ? std::string::npos : line_end - start);
      const size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string value = line.substr(colon + 1);
      value.erase(0, value.find_first_not_of(' '));
      r.headers.emplace_back(lower_ascii(line.substr(0, colon)), value);
    }
    if (r.status >= 100 && r.status < 200) continue;  // interim (100 Continue)
    if (head_only) return r;
    if (lower_ascii(r.get_header_value("Transfer-Encoding")) == "chunked") {
      r.chunked = true;
      for (;;) {
        size_t eol;
        while ((eol = buf.find("\r\n")) == std::string::npos)
          if (!more()) return std::nullopt;
        const size_t size = std::strtoull(buf.c_str(), nullptr, 16);
        buf.erase(0, eol + 2);
        while (buf.size() < size + 2)
          if (!more()) return std::nullopt;
        r.body.append(buf, 0, size);
        buf.erase(0, size + 2);
        if (size == 0) return r;
      }
    }
    if (r.has_header("Content-Length")) {
      const size_t n = std::strtoull(r.get_header_value("Content-Length").c_str(), nullptr, 10);
      while (buf.size() < n)
        if (!more()) return std::nullopt;
      r.body = buf.substr(0, n);
      buf.erase(0, n);
      return r;
    }
    // Delimited by the connection closing.
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      const ssize_t n = s.recv_some(buf, left);
      if (n == 0) break;
      if (n < 0) return std::nullopt;
    }
    r.body = std::move(buf);
    buf.clear();
    return r;
  }
}

// One keep-alive connection; reconnects when the server closed it.
class Client {
 public:
  explicit Client(int port, std::chrono::milliseconds timeout = std::chrono::seconds(30))
      : port_(port), timeout_(timeout) {}

  std::optional<Response> request(const std::string& method, const std::string& path,
                                  const std::string& body, const Headers& headers) {
    for (int attempt = 0; attempt < 2; ++attempt) {
      const bool reused = sock_.ok();
      if (!reused) {
        sock_ = Socket(port_);
        buf_.clear();
      }
      std::string req = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
      for (const auto& [k, v] : headers) req += k + ": " + v + "\r\n";
      if (method == "POST" || !body.empty())
        req += "Content-Length: " + std::to_string(body.size()) + "\r\n";
      req += "\r\n" + body;
      if (!sock_.send_all(req)) {
        sock_.close();
        if (reused) continue;
        return std::nullopt;
      }
      std::optional<Response> r = read_response(sock_, buf_, timeout_, method == "HEAD");
      if (!r) {
        sock_.close();
        // A keep-alive connection the server had closed: once more on a new one.
        if (reused && buf_.empty()) continue;
        return std::nullopt;
      }
      if (lower_ascii(r->get_header_value("Connection")) == "close") sock_.close();
      return r;
    }
    return std::nullopt;
  }

  std::optional<Response> Get(const std::string& path, const Headers& headers = {}) {
    return request("GET", path, "", headers);
  }
  std::optional<Response> Post(const std::string& path, const std::string& body,
                               const std::string& content_type, const Headers& headers = {}) {
    Headers h = headers;
    h.emplace_back("Content-Type", content_type);
    return request("POST", path, body, h);
  }

 private:
  int port_;
  std::chrono::milliseconds timeout_;
  Socket sock_;
  std::string buf_;
};

}  // namespace vtllm::server::testing
