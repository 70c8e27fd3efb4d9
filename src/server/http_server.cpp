#include "server/http_server.h"

#include <signal.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "server/response_sink.h"
#include "server/worker_pool.h"

namespace vtllm::server {

namespace net = boost::asio;
using boost::system::error_code;
using net::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kListenBacklog = 1024;
// A connection over the cap is answered 503 while fewer than this many more are open.
constexpr int kRefusingSlack = 256;
// How long a closing connection reads (and drops) what the client still sends, so
// the kernel does not reset the connection before the client read the last response.
constexpr std::chrono::milliseconds kLinger{2000};
constexpr std::chrono::milliseconds kCutFlush{5000};  // after the drain cut: time to send the ends
constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

class Connection;

}  // namespace

struct HttpServer::Impl {
  Impl(HttpServerConfig c, OpenAiService& s)
      : config(std::move(c)),
        service(s),
        pool(config.max_workers),
        routes(config.api_key, config.cors, s, pool),
        acceptor(net::make_strand(ioc)),
        accept_retry(acceptor.get_executor()),
        work(net::make_work_guard(ioc)) {}

  void do_accept();
  void add(const std::shared_ptr<Connection>& c);
  void forget(Connection* c);
  // Runs f(connection) on each open connection's strand.
  template <typename F>
  void each_connection(F f);

  HttpServerConfig config;
  OpenAiService& service;
  WorkerPool pool;
  HttpRoutes routes;
  net::io_context ioc;
  tcp::acceptor acceptor;
  net::steady_timer accept_retry;
  net::executor_work_guard<net::io_context::executor_type> work;
  mutable std::mutex conns_mu;
  std::unordered_map<Connection*, std::weak_ptr<Connection>> conns;
  std::atomic<int> open{0};
  std::atomic<bool> draining{false};
  bool bound = false;
};

namespace {

// One client connection. Every member runs on the socket's strand.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(HttpServer::Impl& srv, tcp::socket socket, bool refuse)
      : srv_(srv),
        socket_(std::move(socket)),
        read_timer_(socket_.get_executor()),
        write_timer_(socket_.get_executor()),
        refuse_(refuse) {}

  ~Connection() {
    for (auto& s : pending_) s->abandon();
  }

  tcp::socket::executor_type executor() { return socket_.get_executor(); }

  void start() {
    error_code ec;
    socket_.set_option(tcp::no_delay(true), ec);
    if (srv_.config.access_log) {
      const tcp::endpoint peer = socket_.remote_endpoint(ec);
      if (!ec) peer_ = str_cat(peer.address().to_string(), ":", peer.port());
    }
    if (refuse_) {
      fail_request(ApiError::unavailable(
          str_cat("the server has too many connections open (--max-connections ",
                  srv_.config.max_connections, "); retry later"),
          "too_many_connections"));
    }
    do_read();
    pump();
  }

  // The server drains: close now when idle, else after the responses under way.
  void drain() {
    if (closed_) return;
    if (pending_.empty() && !parser_) return begin_close();
    update_read_deadline();
  }

  void close() {
    if (closed_) return;
    closed_ = true;
    error_code ec;
    socket_.shutdown(tcp::socket::shutdown_both, ec);
    socket_.close(ec);
    read_timer_.cancel();
    write_timer_.cancel();
    for (auto& s : pending_) {
      // A response already under way is logged with the status it sent: the
      // client may close as soon as it has read the last byte, before on_write.
      if (srv_.config.access_log && s->started()) log_access(*s);
      s->abandon();
    }
    pending_.clear();
    srv_.forget(this);
  }

 private:
  void do_read() {
    if (reading_ || closed_) return;
    if (!discard_ && pending_.size() >= size_t(srv_.config.max_pipelined)) return;
    reading_ = true;
    update_read_deadline();
    socket_.async_read_some(
        net::buffer(read_buf_),
        [self = shared_from_this()](error_code ec, size_t n) { self->on_read(ec, n); });
  }

  void on_read(error_code ec, size_t n) {
    reading_ = false;
    if (closed_) return;
    // EOF or a reset: the client is gone, and so are its requests.
    if (ec) return close();
    if (!discard_) {
      in_.append(read_buf_.data(), n);
      parse();
    }
    do_read();
    update_read_deadline();
  }

  void parse() {
    const auto now = Clock::now();
    while (!discard_ && !closed_ && pending_.size() < size_t(srv_.config.max_pipelined) &&
           in_off_ < in_.size()) {
      if (!parser_) {
        parser_ = std::make_unique<HttpRequestParser>(srv_.config.limits);
        head_deadline_ = now + srv_.config.header_timeout;
        body_deadline_.reset();
        sent_continue_ = false;
      }
      const HttpRequestParser::Step step = parser_->put(std::string_view(in_).substr(in_off_));
      in_off_ += step.consumed;
      if (step.state == HttpRequestParser::State::kError) {
        const int status = parser_->error_status();
        const char* code = status == 413   ? "request_too_large"
                           : status == 431 ? "request_header_fields_too_large"
                           : status == 414 ? "uri_too_long"
                                           : "bad_request";
        fail_request(ApiError(status, "invalid_request_error", parser_->error_message(), "", code));
        break;
      }
      if (step.state == HttpRequestParser::State::kComplete) {
        HttpRequest req = parser_->take();
        parser_.reset();
        dispatch(std::move(req));
        continue;
      }
      if (parser_->header_done()) {
        if (!body_deadline_) body_deadline_ = now + srv_.config.body_timeout;
        // Only when no earlier response is under way: a 100 must not cut into one.
        if (parser_->expects_continue() && !sent_continue_ && pending_.empty() && !writing_) {
          sent_continue_ = true;
          out_.assign(kContinue);
          start_write(/*interim=*/true);
        }
      }
      break;
    }
    parse_paused_ =
        !discard_ && in_off_ < in_.size() && pending_.size() >= size_t(srv_.config.max_pipelined);
    // Keep the unparsed tail only.
    if (in_off_ == in_.size()) {
      in_.clear();
      in_off_ = 0;
    } else if (in_off_ > (64u << 10)) {
      in_.erase(0, in_off_);
      in_off_ = 0;
    }
    pump();
  }

  std::shared_ptr<ResponseSink> new_sink(ResponseSink::Options o) {
    o.high_water = srv_.config.stream_high_water;
    if (srv_.draining) o.keep_alive = false;
    std::weak_ptr<Connection> weak = weak_from_this();
    auto sink = std::make_shared<ResponseSink>(std::move(o), [weak] {
      if (auto c = weak.lock()) {
        net::post(c->socket_.get_executor(), [c] { c->pump(); });
      }
    });
    pending_.push_back(sink);
    return sink;
  }

  void dispatch(HttpRequest req) {
    ResponseSink::Options o;
    o.version = req.version;
    o.keep_alive = req.keep_alive;
    o.head_only = req.method == "HEAD";
    if (srv_.config.access_log)
      o.request_line =
          str_cat(req.method, " ", req.target, " HTTP/", req.version / 10, ".", req.version % 10);
    // No request is read after one that closes the connection; reading goes on
    // only to notice the client leaving.
    if (!req.keep_alive) discard_ = true;
    std::shared_ptr<ResponseSink> sink;
    try {
      o.headers = srv_.routes.response_headers(req);
      sink = new_sink(std::move(o));
      srv_.routes.handle(std::move(req), sink);
    } catch (const std::exception& e) {
      if (!sink) return fail_request(ApiError::internal(e.what()));
      if (sink->started()) return sink->fail();
      send_reply(*sink, error_reply(ApiError::internal(e.what())), {}, /*close=*/true);
    }
  }

  // Answers `e` and closes: after a malformed request nothing more is parsed.
  void fail_request(const ApiError& e) {
    parser_.reset();
    discard_ = true;
    ResponseSink::Options o;
    o.keep_alive = false;
    send_reply(*new_sink(std::move(o)), error_reply(e), {}, /*close=*/true);
  }

  void pump() {
    if (closed_ || writing_) return;
    while (!pending_.empty()) {
      ResponseSink& front = *pending_.front();
      const bool done = front.take(out_);
      if (!out_.empty()) return start_write(/*interim=*/false);
      if (!done) break;
      if (srv_.config.access_log) log_access(front);
      const bool close_after = front.close_after();
      pending_.pop_front();
      if (close_after) return begin_close();
    }
    if (pending_.empty() && (srv_.draining || lingering_) && !parser_) return begin_close();
    // Requests read ahead while the pipeline was full.
    if (parse_paused_ && pending_.size() < size_t(srv_.config.max_pipelined)) {
      parse_paused_ = false;
      return parse();
    }
    do_read();
    update_read_deadline();
  }

  void start_write(bool interim) {
    writing_ = true;
    writing_interim_ = interim;
    const uint64_t seq = ++write_seq_;
    write_timer_.expires_after(srv_.config.write_timeout);
    write_timer_.async_wait([self = shared_from_this(), seq](error_code ec) {
      // A client that does not read its response within the timeout is cut.
      if (!ec && self->writing_ && self->write_seq_ == seq) self->close();
    });
    net::async_write(
        socket_, net::buffer(out_),
        [self = shared_from_this()](error_code ec, size_t n) { self->on_write(ec, n); });
  }

  void on_write(error_code ec, size_t n) {
    writing_ = false;
    write_timer_.cancel();
    if (closed_) return;
    if (ec) return close();
    out_.clear();
    if (!writing_interim_ && !pending_.empty()) pending_.front()->written(n);
    pump();
  }

  void log_access(const ResponseSink& r) const {
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - r.options().received)
                          .count();
    std::fprintf(stderr, "vtllm serve: %s \"%s\" %d %.1f ms\n", peer_.c_str(),
                 r.options().request_line.c_str(), r.status(), ms);
  }

  // Sends nothing more; reads (and drops) for a short while, then closes.
  void begin_close() {
    if (closed_) return;
    if (!lingering_) {
      lingering_ = true;
      discard_ = true;
      linger_deadline_ = Clock::now() + kLinger;
      for (auto& s : pending_) s->abandon();
      pending_.clear();
      error_code ec;
      socket_.shutdown(tcp::socket::shutdown_send, ec);
      if (ec) return close();
    }
    do_read();
    update_read_deadline();
  }

  // The read deadline that applies now: the linger, the body's, the head's, the
  // idle keep-alive one, or none while a response is under way.
  void update_read_deadline() {
    if (closed_) return;
    Clock::time_point d = Clock::time_point::max();
    if (lingering_) {
      d = linger_deadline_;
    } else if (parser_ && parser_->header_done() && body_deadline_) {
      d = *body_deadline_;
    } else if (parser_) {
      d = head_deadline_;
    } else if (pending_.empty()) {
      // Idle: the keep-alive timeout counts from when the connection became idle.
      if (!idle_deadline_) idle_deadline_ = Clock::now() + srv_.config.keep_alive_timeout;
      d = *idle_deadline_;
    }
    if (lingering_ || parser_ || !pending_.empty()) idle_deadline_.reset();
    if (d == armed_) return;
    armed_ = d;
    if (d == Clock::time_point::max()) {
      read_timer_.cancel();
      return;
    }
    read_timer_.expires_at(d);
    read_timer_.async_wait([self = shared_from_this(), d](error_code ec) {
      if (ec || self->closed_ || self->armed_ != d) return;
      // Idle past keep-alive, a head or body too slow, or the linger ended.
      self->close();
    });
  }

  HttpServer::Impl& srv_;
  tcp::socket socket_;
  net::steady_timer read_timer_;
  net::steady_timer write_timer_;
  const bool refuse_;
  std::array<char, 16384> read_buf_;
  std::string peer_ = "-";  // the client address, for the access log
  std::string in_;  // bytes read and not yet parsed, from in_off_
  size_t in_off_ = 0;
  std::unique_ptr<HttpRequestParser> parser_;  // the request being read
  Clock::time_point head_deadline_;
  std::optional<Clock::time_point> body_deadline_;
  Clock::time_point linger_deadline_;
  std::optional<Clock::time_point> idle_deadline_;
  Clock::time_point armed_ = Clock::time_point::max();
  std::deque<std::shared_ptr<ResponseSink>> pending_;  // responses in request order
  std::string out_;                                    // the write in progress
  uint64_t write_seq_ = 0;
  bool reading_ = false;
  bool writing_ = false;
  bool writing_interim_ = false;
  bool discard_ = false;  // parse nothing more
  bool lingering_ = false;
  bool sent_continue_ = false;
  bool parse_paused_ = false;  // unparsed requests wait for room in the pipeline
  bool closed_ = false;
};

}  // namespace

void HttpServer::Impl::add(const std::shared_ptr<Connection>& c) {
  std::lock_guard lock(conns_mu);
  conns.emplace(c.get(), c);
  ++open;
}

void HttpServer::Impl::forget(Connection* c) {
  std::lock_guard lock(conns_mu);
  if (conns.erase(c)) --open;
}

template <typename F>
void HttpServer::Impl::each_connection(F f) {
  std::vector<std::shared_ptr<Connection>> all;
  {
    std::lock_guard lock(conns_mu);
    for (auto& [p, w] : conns)
      if (auto c = w.lock()) all.push_back(std::move(c));
  }
  for (auto& c : all) net::post(c->executor(), [c, f] { f(*c); });
}

}  // namespace vtllm::server

namespace vtllm::server {

void HttpServer::Impl::do_accept() {
  acceptor.async_accept(net::make_strand(ioc), [this](error_code ec, tcp::socket socket) {
    if (ec == net::error::operation_aborted || !acceptor.is_open()) return;
    if (ec) {
      // Out of file descriptors (or another transient failure): retry shortly
      // instead of spinning; connections already open keep being served.
      accept_retry.expires_after(std::chrono::milliseconds(50));
      accept_retry.async_wait([this](error_code e) {
        if (!e && acceptor.is_open()) do_accept();
      });
      return;
    }
    const int n = open.load();
    if (n >= config.max_connections + kRefusingSlack) {
      error_code ignored;
      socket.close(ignored);
    } else {
      auto c = std::make_shared<Connection>(*this, std::move(socket),
                                            /*refuse=*/n >= config.max_connections);
      add(c);
      net::post(c->executor(), [c] { c->start(); });
    }
    do_accept();
  });
}

HttpServer::HttpServer(HttpServerConfig config, OpenAiService& service)
    : impl_(std::make_unique<Impl>(std::move(config), service)) {}

HttpServer::~HttpServer() {
  Impl& s = *impl_;
  s.work.reset();
  s.ioc.stop();
  s.pool.stop();
}

namespace {

// Opens, binds and listens `acceptor` on host:port; throws naming both.
void listen_on(net::io_context& ioc, tcp::acceptor& acceptor, const std::string& host, int port) {
  const std::string where = str_cat(host, ":", port);
  error_code ec;
  tcp::resolver resolver(ioc);
  const auto found = resolver.resolve(host, std::to_string(port),
                                      tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec || found.empty())
    VT_THROW("http server: cannot resolve the listen address ", where, ": ", ec.message());
  const tcp::endpoint ep = found.begin()->endpoint();
  acceptor.open(ep.protocol(), ec);
  // SO_REUSEADDR lets a restart bind while old connections sit in TIME_WAIT; it
  // does not let two servers listen on one port (SO_REUSEPORT would).
  if (!ec) acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor.bind(ep, ec);
  if (!ec) acceptor.listen(kListenBacklog, ec);
  if (ec) {
    error_code ignored;
    acceptor.close(ignored);
    VT_THROW("http server: cannot listen on ", where, ": ", ec.message());
  }
}

}  // namespace

void check_listen_address(const std::string& host, int port) {
  net::io_context ioc;
  tcp::acceptor acceptor(ioc);
  listen_on(ioc, acceptor, host, port);
}

int HttpServer::bind() {
  Impl& s = *impl_;
  listen_on(s.ioc, s.acceptor, s.config.host, s.config.port);
  s.bound = true;
  return int(s.acceptor.local_endpoint().port());
}

void HttpServer::serve() {
  Impl& s = *impl_;
  VT_CHECK(s.bound, "http server: serve() before bind()");
  net::post(s.acceptor.get_executor(), [&s] { s.do_accept(); });
  std::vector<std::thread> threads;
  for (int i = 1; i < s.config.io_threads; ++i) threads.emplace_back([&s] { s.ioc.run(); });
  s.ioc.run();
  for (std::thread& t : threads) t.join();
}

int HttpServer::shutdown(std::chrono::milliseconds drain_timeout) {
  Impl& s = *impl_;
  const auto wait_until = [&](Clock::time_point deadline, auto done) {
    while (!done() && Clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return done();
  };
  s.draining = true;
  s.service.begin_shutdown();
  net::post(s.acceptor.get_executor(), [&s] {
    error_code ignored;
    s.acceptor.close(ignored);
    s.accept_retry.cancel();
  });
  s.each_connection([](Connection& c) { c.drain(); });
  int cut = 0;
  const auto idle = [&] { return s.service.in_flight() == 0; };
  if (!wait_until(Clock::now() + drain_timeout, idle)) {
    cut = s.service.end_in_flight(ApiError::unavailable(
        "the server shut down before this request finished (the drain timeout ended it)",
        "shutting_down"));
    wait_until(Clock::now() + kCutFlush, idle);
  }
  // The last responses go out; connections close once theirs are written.
  wait_until(Clock::now() + kCutFlush, [&] { return s.open.load() == 0; });
  s.each_connection([](Connection& c) { c.close(); });
  s.work.reset();
  wait_until(Clock::now() + kCutFlush, [&] { return s.open.load() == 0; });
  // Whatever is left (nothing, normally) is stopped: serve() returns.
  s.ioc.stop();
  s.pool.stop();
  return cut;
}

int HttpServer::open_connections() const { return impl_->open.load(); }

namespace {
sigset_t termination_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}
}  // namespace

void block_termination_signals() {
  const sigset_t set = termination_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

int wait_for_termination_signal(std::chrono::milliseconds timeout) {
  const sigset_t set = termination_signals();
  if (timeout.count() < 0) {
    int sig = 0;
    sigwait(&set, &sig);
    return sig;
  }
  timespec ts;
  ts.tv_sec = time_t(timeout.count() / 1000);
  ts.tv_nsec = long(timeout.count() % 1000) * 1000000L;
  const int sig = sigtimedwait(&set, nullptr, &ts);
  return sig > 0 ? sig : 0;
}

}  // namespace vtllm::server
