#include "vt/profile.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <unordered_map>

#include "base/error.h"
#include "vt/ops/copy.h"
#include "vt/profile_events.h"

namespace vt {

namespace {
// Which stream each attached profiler watches. Ops look it up on every call, so the
// common case (none attached) is one atomic load.
std::atomic<int> g_attached{0};
std::mutex g_mu;
std::unordered_map<const Stream*, Profiler*>& attachments() {
  static std::unordered_map<const Stream*, Profiler*> m;
  return m;
}
}  // namespace

Profiler::Profiler(const ProfileConfig& config) : config_(config) {}

Profiler::~Profiler() {
  detach();
  for (void* e : events_) cuda::destroy_timing_event(e);
}

void Profiler::attach(Stream& s) {
  std::lock_guard<std::mutex> lock(g_mu);
  VT_CHECK(stream_ == nullptr, "profiler: already attached to a stream");
  VT_CHECK(attachments().emplace(&s, this).second, "profiler: the ", s.device().str(),
           " stream already has a profiler");
  stream_ = &s;
  g_attached.fetch_add(1, std::memory_order_relaxed);
}

void Profiler::detach() noexcept {
  std::lock_guard<std::mutex> lock(g_mu);
  if (stream_ == nullptr) return;
  attachments().erase(stream_);
  stream_ = nullptr;
  in_step_ = false;
  depth_ = 0;
  pending_.clear();
  g_attached.fetch_sub(1, std::memory_order_relaxed);
}

Profiler* Profiler::of(const Stream& s) {
  if (g_attached.load(std::memory_order_relaxed) == 0) return nullptr;
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = attachments().find(&s);
  return it == attachments().end() ? nullptr : it->second;
}

bool Profiler::recording(const Stream& s) const { return in_step_ && !suspended_ && stream_ == &s; }

void* Profiler::take_event() {
  if (next_event_ == events_.size()) events_.push_back(cuda::create_timing_event());
  return events_[next_event_++];
}

size_t Profiler::stat_index(const char* op) {
  auto key = std::make_tuple(std::string(region_), layer_, std::string(op));
  auto it = index_.find(key);
  if (it != index_.end()) return it->second;
  OpStat st;
  st.region = region_;
  st.layer = layer_;
  st.op = op;
  ops_.push_back(st);
  index_.emplace(std::move(key), ops_.size() - 1);
  return ops_.size() - 1;
}

void Profiler::begin_step(Stream& s) {
  VT_CHECK(!in_step_, "profiler: begin_step inside a step");
  VT_CHECK(stream_ == &s, "profiler: begin_step on a stream it is not attached to");
  in_step_ = true;
  depth_ = 0;
  pending_.clear();
  next_event_ = 0;
  if (s.device().is_cuda()) {
    step_start_ = take_event();
    step_end_ = take_event();
    cuda::record_event(s.cuda_state(), step_start_);
  }
  step_t0_ = std::chrono::steady_clock::now();
}

double Profiler::end_step(Stream& s) {
  VT_CHECK(in_step_, "profiler: end_step without begin_step");
  VT_CHECK(depth_ == 0, "profiler: end_step with ", depth_, " ops open");
  double us = 0;
  if (s.device().is_cuda()) {
    cuda::record_event(s.cuda_state(), step_end_);
    s.synchronize();
    us = 1e3 * double(cuda::event_elapsed_ms(step_start_, step_end_));
    for (Pending& p : pending_) p.us = 1e3 * double(cuda::event_elapsed_ms(p.start, p.end));
  } else {
    s.synchronize();
    us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - step_t0_)
             .count();
  }
  for (const Pending& p : pending_) ops_[p.stat].us += p.us;
  pending_.clear();
  in_step_ = false;
  ++steps_;
  step_us_ += us;
  return us * 1e-3;
}

void Profiler::reset() {
  VT_CHECK(!in_step_, "profiler: reset inside a step");
  steps_ = 0;
  step_us_ = 0;
  ops_.clear();
  index_.clear();
  routing_.clear();
}

void Profiler::note_routing(Stream& s, const Tensor& topk_ids, int64_t num_experts) {
  if (!config_.count_experts || !recording(s)) return;
  VT_CHECK(topk_ids.dtype() == DType::kI32 && topk_ids.dim() == 2, "profiler: topk_ids ",
           topk_ids.str(), " must be [tokens, k] i32");
  suspended_ = true;  // the copy is the profiler's, not the step's
  Tensor host;
  try {
    host = to_device(s, topk_ids, Device::cpu());
  } catch (...) {
    suspended_ = false;
    throw;
  }
  suspended_ = false;
  std::vector<char> seen(size_t(num_experts), 0);
  const int32_t* ids = host.data<int32_t>();
  for (int64_t i = 0; i < host.numel(); ++i) {
    VT_CHECK(ids[i] >= 0 && ids[i] < num_experts, "profiler: expert id ", ids[i], " outside [0, ",
             num_experts, ")");
    seen[size_t(ids[i])] = 1;
  }
  RoutingStat r;
  r.layer = layer_;
  r.experts = num_experts;
  r.tokens = topk_ids.size(0);
  r.distinct = int64_t(std::count(seen.begin(), seen.end(), char(1)));
  routing_.push_back(r);
}

OpScope::OpScope(Stream& s, const char* op) : s_(s) {
  Profiler* p = Profiler::of(s);
  if (p == nullptr || !p->config_.time_ops || !p->recording(s)) return;
  counted_ = p;
  if (p->depth_++ > 0) return;  // nested: the outer op's time covers it
  p_ = p;
  Profiler::Pending pend;
  pend.stat = p->stat_index(op);
  if (s.device().is_cuda()) {
    pend.start = p->take_event();
    pend.end = p->take_event();
    cuda::record_event(s.cuda_state(), pend.start);
  }
  p->pending_.push_back(pend);
  pending_ = p->pending_.size() - 1;
  t0_ = std::chrono::steady_clock::now();
}

OpScope::~OpScope() {
  if (counted_ == nullptr) return;
  --counted_->depth_;
  if (p_ == nullptr) return;  // nested
  Profiler::Pending& pend = p_->pending_[pending_];
  Profiler::OpStat& st = p_->ops_[pend.stat];
  ++st.calls;
  if (s_.device().is_cuda()) {
    try {
      cuda::record_event(s_.cuda_state(), pend.end);
    } catch (...) {  // a failing context: keep the step consistent, report no time
      pend.end = pend.start;
    }
  } else {
    pend.us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0_).count();
  }
}

void OpScope::set_cost(double bytes, double flops) {
  if (p_ == nullptr) return;
  Profiler::OpStat& st = p_->ops_[p_->pending_[pending_].stat];
  st.bytes += bytes;
  st.flops += flops;
}

RegionScope::RegionScope(Stream& s, const char* region, int64_t layer) : p_(Profiler::of(s)) {
  if (p_ == nullptr) return;
  region_ = p_->region_;
  layer_ = p_->layer_;
  p_->region_ = region;
  p_->layer_ = layer;
}

RegionScope::~RegionScope() {
  if (p_ == nullptr) return;
  p_->region_ = region_;
  p_->layer_ = layer_;
}

}  // namespace vt
