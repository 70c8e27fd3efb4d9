#include "server/response_sink.h"

#include <utility>

#include "base/error.h"

namespace vtllm::server {

ResponseSink::ResponseSink(Options options, std::function<void()> notify)
    : options_(std::move(options)), notify_(std::move(notify)) {}

void ResponseSink::append(std::string_view bytes, bool finished) {
  bool notify = false;
  {
    std::lock_guard lock(mu_);
    if (gone_) return;
    out_.append(bytes);
    buffered_ += bytes.size();
    if (finished) finished_ = true;
    if (!notify_pending_) notify = notify_pending_ = true;
  }
  if (notify && notify_) notify_();
}

void ResponseSink::reply(int status, std::string_view content_type, std::string_view body,
                         const HttpHeaders& extra, bool close) {
  HttpHeaders h = options_.headers;
  h.insert(h.end(), extra.begin(), extra.end());
  if (!content_type.empty()) h.emplace_back("Content-Type", std::string(content_type));
  h.emplace_back("Content-Length", std::to_string(body.size()));
  const bool keep = options_.keep_alive && !close;
  if (!keep) {
    h.emplace_back("Connection", "close");
  } else if (options_.version == 10) {
    h.emplace_back("Connection", "keep-alive");
  }
  std::string bytes = response_head(status, h);
  if (!options_.head_only) bytes.append(body);
  {
    std::lock_guard lock(mu_);
    VT_CHECK(!started_, "response sink: a second response to one request");
    started_ = true;
    status_ = status;
    close_ = !keep;
  }
  append(bytes, /*finished=*/true);
}

void ResponseSink::begin_stream(int status, std::string_view content_type,
                                const HttpHeaders& extra) {
  HttpHeaders h = options_.headers;
  h.insert(h.end(), extra.begin(), extra.end());
  h.emplace_back("Content-Type", std::string(content_type));
  // HTTP/1.0 has no chunked coding (RFC 9112 §7): the body ends when the connection does.
  const bool chunked = options_.version == 11;
  const bool keep = chunked && options_.keep_alive;
  if (chunked) h.emplace_back("Transfer-Encoding", "chunked");
  if (!keep) h.emplace_back("Connection", "close");
  {
    std::lock_guard lock(mu_);
    VT_CHECK(!started_, "response sink: a second response to one request");
    started_ = true;
    status_ = status;
    chunked_ = chunked;
    close_ = !keep;
  }
  append(response_head(status, h), /*finished=*/false);
}

bool ResponseSink::write(std::string_view data) {
  if (data.empty() || options_.head_only) return !gone();
  std::string framed;
  {
    std::unique_lock lock(mu_);
    VT_CHECK(started_ && !finished_, "response sink: write() outside a stream");
    // One write larger than the mark still goes out once the buffer is empty.
    room_.wait(lock, [&] { return gone_ || buffered_ < options_.high_water; });
    if (gone_) return false;
    if (chunked_) {
      append_chunk(framed, data);
    } else {
      framed.assign(data);
    }
  }
  append(framed, false);
  return true;
}

void ResponseSink::end_stream() {
  bool chunked;
  {
    std::lock_guard lock(mu_);
    VT_CHECK(started_ && !finished_, "response sink: end_stream() outside a stream");
    chunked = chunked_;
  }
  append(chunked && !options_.head_only ? kLastChunk : std::string_view(), true);
}

void ResponseSink::fail() {
  {
    std::lock_guard lock(mu_);
    started_ = true;
    close_ = true;
  }
  append({}, true);
}

int ResponseSink::status() const {
  std::lock_guard lock(mu_);
  return status_;
}

bool ResponseSink::started() const {
  std::lock_guard lock(mu_);
  return started_;
}

bool ResponseSink::gone() const {
  std::lock_guard lock(mu_);
  return gone_;
}

void ResponseSink::on_gone(std::function<void()> f) {
  {
    std::lock_guard lock(mu_);
    if (!gone_) {
      on_gone_ = std::move(f);
      return;
    }
  }
  f();
}

void ResponseSink::clear_on_gone() {
  std::function<void()> drop;
  std::lock_guard lock(mu_);
  drop.swap(on_gone_);
}

bool ResponseSink::take(std::string& out) {
  std::lock_guard lock(mu_);
  notify_pending_ = false;
  out.append(out_);
  out_.clear();
  return finished_;
}

void ResponseSink::written(size_t n) {
  {
    std::lock_guard lock(mu_);
    buffered_ = n > buffered_ ? 0 : buffered_ - n;
  }
  room_.notify_all();
}

bool ResponseSink::close_after() const {
  std::lock_guard lock(mu_);
  return close_;
}

void ResponseSink::abandon() {
  std::function<void()> f;
  {
    std::lock_guard lock(mu_);
    if (gone_) return;
    gone_ = true;
    out_.clear();
    f.swap(on_gone_);
  }
  room_.notify_all();
  if (f) f();
}

}  // namespace vtllm::server
