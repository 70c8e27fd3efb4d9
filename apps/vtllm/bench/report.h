// Printing and saving benchmark results: a fixed-width table for people, JSON for
// the record (docs/BENCHMARKS.md is written from the JSON).
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "bench/serve_bench.h"
#include "bench/stats.h"

namespace vtllm::bench {

// The header row of the serving table, then one row per level (print as levels finish).
void print_serve_header(std::FILE* out);
void print_serve_row(std::FILE* out, const RunSummary& s);

// {"kind": "serve", "date", "config": {...}, "levels": [...]}, times in milliseconds.
std::string serve_json(const ServeBenchConfig& config, const std::vector<RunSummary>& levels);

// Writes `text` to `path`; throws vtllm::Error naming the path on failure.
void write_file(const std::string& path, const std::string& text);

// UTC now as 2026-11-30T12:34:56Z.
std::string utc_timestamp();

}  // namespace vtllm::bench
