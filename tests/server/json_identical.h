// Shared by tests/server/json_parse_test.cpp and fuzz/json_body_fuzz.cpp: the
// strict comparison behind the server/json_parse.h vs nlohmann differential
// checks. nlohmann's == and dump() both miss a number's kind (unsigned 5 and
// integer 5 compare equal and print alike), and both recurse per level.
#pragma once

#include <bit>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

namespace vtllm::server {

// Whether a and b are the same tree: same types at every node (number kinds
// too), same keys in order, same strings, same float bits. Iterative, so it
// takes any depth.
inline bool json_identical(const nlohmann::json& a, const nlohmann::json& b) {
  using nlohmann::json;
  std::vector<std::pair<const json*, const json*>> todo{{&a, &b}};
  while (!todo.empty()) {
    const auto [x, y] = todo.back();
    todo.pop_back();
    if (x->type() != y->type() || x->size() != y->size()) return false;
    switch (x->type()) {
      case json::value_t::object:
        for (auto i = x->begin(), j = y->begin(); i != x->end(); ++i, ++j) {
          if (i.key() != j.key()) return false;
          todo.emplace_back(&*i, &*j);
        }
        break;
      case json::value_t::array:
        for (size_t i = 0; i < x->size(); ++i) todo.emplace_back(&(*x)[i], &(*y)[i]);
        break;
      case json::value_t::number_float:
        if (std::bit_cast<uint64_t>(x->get<double>()) != std::bit_cast<uint64_t>(y->get<double>()))
          return false;
        break;
      default:  // null, boolean, string, integer, unsigned: == compares the value
        if (*x != *y) return false;
        break;
    }
  }
  return true;
}

}  // namespace vtllm::server
