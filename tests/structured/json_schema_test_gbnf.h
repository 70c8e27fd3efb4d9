// A small reference recogniser for the GBNF text json_schema.h emits, for the tests: parses
// the rules into a tree and matches a whole string by computing, for each subexpression, the
// set of code-point positions where a match starting at a given position can end (memoised
// per rule and position). Slow but independent of the engine's matcher.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace vtllm::structured::testing {

class RefGrammar {
 public:
  // Parses `text`; throws std::runtime_error on a syntax error or an undefined rule.
  explicit RefGrammar(const std::string& text) : src_(decode(text)) {
    while (true) {
      skip_space(true);
      if (i_ >= src_.size()) break;
      std::string name = read_name();
      skip_space(false);
      expect("::=");
      int id = rule_id(name);
      if (defined_.count(id)) throw std::runtime_error("rule defined twice: " + name);
      defined_.insert(id);
      rules_[id] = parse_alt();
      skip_space(false);
      if (i_ < src_.size() && src_[i_] != '\n') error("expected end of line");
    }
    for (const auto& [name, id] : ids_) {
      if (!defined_.count(id)) throw std::runtime_error("undefined rule: " + name);
    }
    if (!ids_.count("root")) throw std::runtime_error("no root rule");
  }

  // Whether the whole of `utf8` is in the language of `root`.
  bool accepts(const std::string& utf8) const {
    input_ = decode(utf8);
    memo_.clear();
    busy_.clear();
    std::vector<int> ends = match_rule(ids_.at("root"), 0);
    for (int e : ends) {
      if (e == static_cast<int>(input_.size())) return true;
    }
    return false;
  }

  size_t rule_count() const { return rules_.size(); }

 private:
  struct Node {
    enum Kind { kLit, kClass, kRef, kSeq, kAlt, kRep } kind = kSeq;
    std::vector<uint32_t> lit;
    std::vector<std::pair<uint32_t, uint32_t>> ranges;
    bool negated = false;
    int rule = -1;
    std::vector<Node> kids;
    int min = 0, max = 0;
  };

  static std::vector<uint32_t> decode(const std::string& s) {
    std::vector<uint32_t> out;
    for (size_t i = 0; i < s.size();) {
      unsigned char c = static_cast<unsigned char>(s[i]);
      int len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
      uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
      for (int k = 1; k < len && i + k < s.size(); ++k) cp = (cp << 6) | (s[i + k] & 0x3F);
      out.push_back(cp);
      i += len;
    }
    return out;
  }

  [[noreturn]] void error(const std::string& what) const {
    throw std::runtime_error(what + " at code point " + std::to_string(i_));
  }

  void skip_space(bool newlines) {
    while (i_ < src_.size()) {
      uint32_t c = src_[i_];
      if (c == '#') {
        while (i_ < src_.size() && src_[i_] != '\n') ++i_;
      } else if (c == ' ' || c == '\t' || c == '\r' || (newlines && c == '\n')) {
        ++i_;
      } else {
        break;
      }
    }
  }

  void expect(const char* s) {
    for (const char* p = s; *p; ++p) {
      if (i_ >= src_.size() || src_[i_] != static_cast<uint32_t>(*p))
        error(std::string("expected ") + s);
      ++i_;
    }
  }

  static bool name_char(uint32_t c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
  }

  std::string read_name() {
    std::string n;
    while (i_ < src_.size() && name_char(src_[i_])) n += static_cast<char>(src_[i_++]);
    if (n.empty()) error("expected a rule name");
    return n;
  }

  int rule_id(const std::string& name) {
    auto it = ids_.find(name);
    if (it != ids_.end()) return it->second;
    int id = static_cast<int>(ids_.size());
    ids_[name] = id;
    rules_.emplace_back();
    return id;
  }

  uint32_t hex(int n) {
    uint32_t v = 0;
    for (int k = 0; k < n; ++k) {
      if (i_ >= src_.size()) error("short hex escape");
      uint32_t c = src_[i_++];
      int d = c >= '0' && c <= '9'   ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                     : -1;
      if (d < 0) error("bad hex digit");
      v = v * 16 + d;
    }
    return v;
  }

  uint32_t read_char() {
    if (i_ >= src_.size()) error("unexpected end");
    uint32_t c = src_[i_++];
    if (c != '\\') return c;
    if (i_ >= src_.size()) error("trailing backslash");
    uint32_t e = src_[i_++];
    switch (e) {
      case 'n':
        return '\n';
      case 'r':
        return '\r';
      case 't':
        return '\t';
      case 'x':
        return hex(2);
      case 'u':
        return hex(4);
      case 'U':
        return hex(8);
      case '\\':
      case '"':
      case '[':
      case ']':
        return e;
      default:
        error("unknown escape");
    }
  }

  Node parse_alt() {
    Node alt;
    alt.kind = Node::kAlt;
    alt.kids.push_back(parse_seq());
    while (true) {
      skip_space(false);
      if (i_ < src_.size() && src_[i_] == '|') {
        ++i_;
        alt.kids.push_back(parse_seq());
      } else {
        break;
      }
    }
    return alt.kids.size() == 1 ? alt.kids[0] : alt;
  }

  Node parse_seq() {
    Node seq;
    seq.kind = Node::kSeq;
    while (true) {
      skip_space(false);
      if (i_ >= src_.size()) break;
      uint32_t c = src_[i_];
      if (c == '|' || c == ')' || c == '\n') break;
      Node atom = parse_primary();
      while (i_ < src_.size()) {
        uint32_t q = src_[i_];
        Node rep;
        rep.kind = Node::kRep;
        if (q == '*') {
          rep.min = 0, rep.max = -1, ++i_;
        } else if (q == '+') {
          rep.min = 1, rep.max = -1, ++i_;
        } else if (q == '?') {
          rep.min = 0, rep.max = 1, ++i_;
        } else if (q == '{') {
          ++i_;
          rep.min = read_int();
          rep.max = rep.min;
          if (src_[i_] == ',') {
            ++i_;
            rep.max = src_[i_] == '}' ? -1 : read_int();
          }
          expect("}");
        } else {
          break;
        }
        rep.kids.push_back(std::move(atom));
        atom = std::move(rep);
      }
      seq.kids.push_back(std::move(atom));
    }
    return seq;
  }

  int read_int() {
    int v = 0;
    bool any = false;
    while (i_ < src_.size() && src_[i_] >= '0' && src_[i_] <= '9')
      v = v * 10 + (src_[i_++] - '0'), any = true;
    if (!any) error("expected a number");
    return v;
  }

  Node parse_primary() {
    uint32_t c = src_[i_];
    Node n;
    if (c == '"') {
      ++i_;
      n.kind = Node::kLit;
      while (true) {
        if (i_ >= src_.size()) error("unterminated literal");
        if (src_[i_] == '"') break;
        n.lit.push_back(read_char());
      }
      ++i_;
      return n;
    }
    if (c == '[') {
      ++i_;
      n.kind = Node::kClass;
      if (i_ < src_.size() && src_[i_] == '^') n.negated = true, ++i_;
      while (true) {
        if (i_ >= src_.size()) error("unterminated class");
        if (src_[i_] == ']') break;
        uint32_t lo = read_char(), hi = lo;
        if (i_ + 1 < src_.size() && src_[i_] == '-' && src_[i_ + 1] != ']') {
          ++i_;
          hi = read_char();
        }
        n.ranges.emplace_back(lo, hi);
      }
      ++i_;
      return n;
    }
    if (c == '(') {
      ++i_;
      n = parse_alt();
      skip_space(false);
      expect(")");
      Node group;  // keep quantifiers applying to the whole group
      group.kind = Node::kSeq;
      group.kids.push_back(std::move(n));
      return group;
    }
    if (c == '.') {
      ++i_;
      n.kind = Node::kClass;
      n.negated = true;
      return n;
    }
    n.kind = Node::kRef;
    n.rule = rule_id(read_name());
    return n;
  }

  static void add_all(std::vector<int>& out, const std::vector<int>& in) {
    out.insert(out.end(), in.begin(), in.end());
  }
  static void normalise(std::vector<int>& v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  }

  std::vector<int> match_rule(int rule, int pos) const {
    auto key = std::make_pair(rule, pos);
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    if (busy_.count(key)) return {};  // left recursion: the emitted grammars have none
    busy_.insert(key);
    std::vector<int> r = match(rules_[rule], pos);
    busy_.erase(key);
    memo_[key] = r;
    return r;
  }

  std::vector<int> match(const Node& n, int pos) const {
    int size = static_cast<int>(input_.size());
    switch (n.kind) {
      case Node::kLit: {
        if (pos + static_cast<int>(n.lit.size()) > size) return {};
        for (size_t k = 0; k < n.lit.size(); ++k) {
          if (input_[pos + k] != n.lit[k]) return {};
        }
        return {pos + static_cast<int>(n.lit.size())};
      }
      case Node::kClass: {
        if (pos >= size) return {};
        bool in = false;
        for (const auto& [lo, hi] : n.ranges) in = in || (input_[pos] >= lo && input_[pos] <= hi);
        return in != n.negated ? std::vector<int>{pos + 1} : std::vector<int>{};
      }
      case Node::kRef:
        return match_rule(n.rule, pos);
      case Node::kSeq: {
        std::vector<int> cur = {pos};
        for (const Node& k : n.kids) {
          std::vector<int> next;
          for (int p : cur) add_all(next, match(k, p));
          normalise(next);
          cur = std::move(next);
          if (cur.empty()) break;
        }
        return cur;
      }
      case Node::kAlt: {
        std::vector<int> out;
        for (const Node& k : n.kids) add_all(out, match(k, pos));
        normalise(out);
        return out;
      }
      case Node::kRep: {
        std::vector<int> out, cur = {pos};
        std::set<int> seen;
        if (n.min == 0) out.push_back(pos), seen.insert(pos);
        for (int count = 1; n.max < 0 || count <= n.max; ++count) {
          std::vector<int> next;
          for (int p : cur) add_all(next, match(n.kids[0], p));
          normalise(next);
          if (count >= n.min) {
            std::vector<int> fresh;
            for (int p : next) {
              if (seen.insert(p).second) fresh.push_back(p);
            }
            add_all(out, fresh);
            next = fresh;
          }
          if (next.empty()) break;
          cur = std::move(next);
        }
        normalise(out);
        return out;
      }
    }
    return {};
  }

  std::vector<uint32_t> src_;
  size_t i_ = 0;
  std::map<std::string, int> ids_;
  std::set<int> defined_;
  std::vector<Node> rules_;
  mutable std::vector<uint32_t> input_;
  mutable std::map<std::pair<int, int>, std::vector<int>> memo_;
  mutable std::set<std::pair<int, int>> busy_;
};

}  // namespace vtllm::structured::testing
