#include "bench/report.h"

#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/error.h"

namespace vtllm::bench {

namespace {

nlohmann::ordered_json ms_json(const Distribution& d) {
  nlohmann::ordered_json j;
  j["count"] = d.count;
  j["mean"] = d.mean * 1e3;
  j["median"] = d.median * 1e3;
  j["p90"] = d.p90 * 1e3;
  j["p99"] = d.p99 * 1e3;
  j["min"] = d.min * 1e3;
  j["max"] = d.max * 1e3;
  return j;
}

}  // namespace

void print_serve_header(std::FILE* out) {
  std::fprintf(out, "%5s %9s %8s %9s | %-23s | %-23s | %-23s | %-26s\n", "conc", "ok/fail",
               "req/s", "out tok/s", "TTFT ms mean/med/p99", "TPOT ms mean/med/p99",
               "ITL ms mean/med/p99", "E2EL ms mean/med/p99");
}

void print_serve_row(std::FILE* out, const RunSummary& s) {
  auto three = [](const Distribution& d) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f/%.1f/%.1f", d.mean * 1e3, d.median * 1e3, d.p99 * 1e3);
    return std::string(buf);
  };
  char okfail[32];
  std::snprintf(okfail, sizeof okfail, "%lld/%lld", (long long)s.completed, (long long)s.failed);
  std::fprintf(out, "%5d %9s %8.2f %9.1f | %-23s | %-23s | %-23s | %-26s\n", s.concurrency, okfail,
               s.request_throughput, s.output_throughput, three(s.ttft_s).c_str(),
               three(s.tpot_s).c_str(), three(s.itl_s).c_str(), three(s.e2e_s).c_str());
  if (s.short_outputs)
    std::fprintf(out, "      warning: %lld requests returned fewer output tokens than asked for\n",
                 (long long)s.short_outputs);
  for (const std::string& e : s.first_errors) std::fprintf(out, "      error: %s\n", e.c_str());
  std::fflush(out);
}

std::string serve_json(const ServeBenchConfig& config, const std::vector<RunSummary>& levels) {
  nlohmann::ordered_json j;
  j["kind"] = "serve";
  j["date"] = utc_timestamp();
  nlohmann::ordered_json c;
  c["base_url"] = config.request.base_url;
  c["endpoint"] = config.request.endpoint;
  c["model"] = config.request.model;
  c["prompt_kind"] = prompt_kind_name(config.workload.kind);
  c["input_len"] = config.workload.input_len;
  c["output_len"] = config.request.max_tokens;
  c["ignore_eos"] = config.request.ignore_eos;
  c["seed"] = config.workload.seed;
  c["num_prompts"] = config.num_prompts;
  c["warmup"] = config.warmup;
  c["concurrency"] = config.concurrency;
  j["config"] = c;
  nlohmann::ordered_json ls = nlohmann::ordered_json::array();
  for (const RunSummary& s : levels) {
    nlohmann::ordered_json l;
    l["concurrency"] = s.concurrency;
    l["num_requests"] = s.num_requests;
    l["completed"] = s.completed;
    l["failed"] = s.failed;
    l["short_outputs"] = s.short_outputs;
    l["duration_s"] = s.duration_s;
    l["total_prompt_tokens"] = s.total_prompt_tokens;
    l["total_output_tokens"] = s.total_output_tokens;
    l["request_throughput"] = s.request_throughput;
    l["output_throughput"] = s.output_throughput;
    l["total_token_throughput"] = s.total_token_throughput;
    l["ttft_ms"] = ms_json(s.ttft_s);
    l["tpot_ms"] = ms_json(s.tpot_s);
    l["itl_ms"] = ms_json(s.itl_s);
    l["e2el_ms"] = ms_json(s.e2e_s);
    l["errors"] = s.first_errors;
    ls.push_back(std::move(l));
  }
  j["levels"] = std::move(ls);
  // Error texts quote server output, which random weights can make invalid UTF-8.
  return j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  VT_REQUIRE(f.good(), path, ": cannot open for writing");
  f << text;
  f.close();
  VT_REQUIRE(f.good(), path, ": write failed");
}

std::string utc_timestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace vtllm::bench
