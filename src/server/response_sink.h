// ResponseSink: the response to one HTTP request, between the thread that
// produces it (an I/O thread for a cheap route, a worker for a generation) and
// the connection that writes it to the socket.
//
// The sink formats the bytes (status line, headers, Content-Length or chunked
// framing, HTTP/1.0 rules) and bounds them: write() blocks while more than
// `high_water` bytes wait for a slow client, so a stream never buffers more
// than that here. When the connection goes away, abandon() wakes the producer
// and runs its on_gone callback (which cancels the generation).
//
// Thread-safe: producer and connection calls may come from different threads.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>

#include "server/http_message.h"

namespace vtllm::server {

class ResponseSink {
 public:
  struct Options {
    int version = 11;        // the request's: 10 or 11
    bool keep_alive = true;  // the client lets the connection stay open
    bool head_only = false;  // a HEAD request: the head without the body
    HttpHeaders headers;     // added to the head (CORS)
    size_t high_water = 256u << 10;
    // For the access log: "POST /v1/completions HTTP/1.1" ("-" for a malformed
    // request) and when the request was read.
    std::string request_line = "-";
    std::chrono::steady_clock::time_point received = std::chrono::steady_clock::now();
  };

  // `notify` is called, from the producing thread and without a lock held, when
  // new bytes can be taken; at most once between two take() calls.
  ResponseSink(Options options, std::function<void()> notify);

  // Producer side. Exactly one of reply() or begin_stream() ... end_stream().
  // A whole response; `close` ends the connection after it.
  void reply(int status, std::string_view content_type, std::string_view body,
             const HttpHeaders& extra = {}, bool close = false);
  // A streamed response: chunked for HTTP/1.1, delimited by closing for HTTP/1.0.
  void begin_stream(int status, std::string_view content_type, const HttpHeaders& extra = {});
  // Blocks while more than high_water bytes wait; false (data dropped) once the
  // connection is gone.
  bool write(std::string_view data);
  void end_stream();
  // Ends the response where it is and closes the connection after what was
  // produced (a failure after the head went out: the client sees a cut body).
  void fail();
  bool gone() const;
  // A head was produced (reply() or begin_stream() was called).
  bool started() const;
  // The status of the head produced; 0 before.
  int status() const;
  const Options& options() const { return options_; }
  // `f` runs once when the connection goes (at once, on this thread, if it is
  // gone already); it must not block. clear_on_gone() drops it.
  void on_gone(std::function<void()> f);
  void clear_on_gone();

  // Connection side.
  // Appends the bytes ready to `out`; true once the response is whole and all of it was taken.
  bool take(std::string& out);
  // `n` taken bytes reached the socket: their room is free for write().
  void written(size_t n);
  // Whether the connection must close after this response.
  bool close_after() const;
  // The connection is gone: write() returns false from now on; on_gone runs.
  void abandon();

 private:
  void append(std::string_view bytes, bool finished);

  const Options options_;
  const std::function<void()> notify_;
  mutable std::mutex mu_;
  std::condition_variable room_;
  std::string out_;       // formatted bytes not yet taken
  size_t buffered_ = 0;   // bytes not yet written (taken or not)
  bool started_ = false;  // a head was produced
  int status_ = 0;
  bool chunked_ = false;
  bool finished_ = false;  // the producer is done
  bool close_ = false;
  bool gone_ = false;
  bool notify_pending_ = false;
  std::function<void()> on_gone_;
};

}  // namespace vtllm::server
