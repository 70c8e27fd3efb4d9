// Encode throughput (MB/s of UTF-8 input) of vtllm's tokenizer on the corpus
// that tools/text/tokenize_bench.js writes, next to which that script times
// HF tokenizers (the ceiling to beat). See docs/BENCHMARKS.md.
//
//   node tools/text/tokenize_bench.js corpus /tmp/vtllm_tokenize_bench.txt 4
//   VTLLM_TOKENIZER_JSON=.../tokenizer.json build/bench/tokenize_bench
// (VTLLM_TOKENIZE_BENCH_CORPUS overrides the corpus path.)
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "base/file.h"
#include "text/tokenizer.h"

namespace {

using vtllm::text::Tokenizer;

const char* env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

struct Workload {
  Tokenizer tok;
  std::vector<std::string> docs;
  size_t bytes = 0;
};

const Workload& workload() {
  static const Workload w = [] {
    const char* tok_path = std::getenv("VTLLM_TOKENIZER_JSON");
    if (!tok_path) {
      std::fprintf(stderr, "set VTLLM_TOKENIZER_JSON to a tokenizer.json\n");
      std::exit(2);
    }
    const std::string corpus_path =
        env_or("VTLLM_TOKENIZE_BENCH_CORPUS", "/tmp/vtllm_tokenize_bench.txt");
    std::string all;
    try {
      all = vtllm::read_file(corpus_path);
    } catch (const vtllm::Error& e) {
      std::fprintf(stderr, "%s (node tools/text/tokenize_bench.js corpus %s)\n", e.what(),
                   corpus_path.c_str());
      std::exit(2);
    }
    Workload w{Tokenizer::from_file(tok_path), {}, 0};
    const std::string sep = "\n\f\n";
    for (size_t pos = 0;;) {
      const size_t next = all.find(sep, pos);
      w.docs.push_back(all.substr(pos, next == std::string::npos ? std::string::npos : next - pos));
      w.bytes += w.docs.back().size();
      if (next == std::string::npos) break;
      pos = next + sep.size();
    }
    return w;
  }();
  return w;
}

void BM_EncodeOneThread(benchmark::State& state) {
  const Workload& w = workload();
  size_t ids = 0;
  for (auto _ : state) {
    for (const std::string& d : w.docs) ids += w.tok.encode(d, false).size();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * w.bytes));
  state.counters["ids_per_iter"] = static_cast<double>(ids) / static_cast<double>(state.iterations());
}

void BM_EncodeBatch(benchmark::State& state) {
  const Workload& w = workload();
  for (auto _ : state) benchmark::DoNotOptimize(w.tok.encode_batch(w.docs, false));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * w.bytes));
  state.counters["threads"] = std::thread::hardware_concurrency();
}

BENCHMARK(BM_EncodeOneThread)->Unit(benchmark::kMillisecond)->MinTime(2.0)->UseRealTime();
BENCHMARK(BM_EncodeBatch)->Unit(benchmark::kMillisecond)->MinTime(2.0)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
