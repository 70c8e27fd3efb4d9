// Digit-pattern grammars for numeric ranges and the string formats (json_schema_gbnf.h).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "structured/json_schema_gbnf.h"

namespace vtllm::structured::gbnf {
namespace {

std::string alternatives(const std::vector<std::string>& alts) {
  if (alts.size() == 1) return alts[0];
  std::string out = "( ";
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out + " )";
}

std::string paren(const std::string& e) { return "( " + e + " )"; }

// Decimal strings lo <= hi of the same length: every string between them, digit by digit.
std::string same_length_range(const std::string& lo, const std::string& hi) {
  if (lo.empty()) return "";
  if (lo == hi) return literal(lo);
  size_t rest = lo.size() - 1;
  if (lo[0] == hi[0]) {
    return literal(lo.substr(0, 1)) + " " + same_length_range(lo.substr(1), hi.substr(1));
  }
  bool lo_zeros = lo.find_first_not_of('0', 1) == std::string::npos;
  bool hi_nines = hi.find_first_not_of('9', 1) == std::string::npos;
  auto digits = [](char a, char b) {
    return a == b ? literal(std::string(1, a)) : str_cat("[", a, "-", b, "]");
  };
  auto tail = [&](size_t n) {
    return n == 0 ? std::string() : n == 1 ? std::string(" [0-9]") : str_cat(" [0-9]{", n, "}");
  };
  std::vector<std::string> alts;
  char first = lo_zeros ? lo[0] : static_cast<char>(lo[0] + 1);
  char last = hi_nines ? hi[0] : static_cast<char>(hi[0] - 1);
  if (!lo_zeros) {
    alts.push_back(literal(lo.substr(0, 1)) + " " +
                   same_length_range(lo.substr(1), std::string(rest, '9')));
  }
  if (first <= last) alts.push_back(digits(first, last) + tail(rest));
  if (!hi_nines) {
    alts.push_back(literal(hi.substr(0, 1)) + " " +
                   same_length_range(std::string(rest, '0'), hi.substr(1)));
  }
  return alternatives(alts);
}

// Non-negative integers in [a, b] (b absent: unbounded), no leading zeros.
std::string nonneg_range(uint64_t a, std::optional<uint64_t> b) {
  std::string sa = std::to_string(a);
  std::string sb = b ? std::to_string(*b) : "";
  size_t la = sa.size(), lb = b ? sb.size() : la;
  std::vector<std::string> alts;
  for (size_t len = la; len <= lb; ++len) {
    std::string lo = len == la ? sa : "1" + std::string(len - 1, '0');
    std::string hi = (b && len == lb) ? sb : std::string(len, '9');
    if (lo.size() == hi.size() && lo <= hi) alts.push_back(same_length_range(lo, hi));
  }
  if (!b) alts.push_back(str_cat("[1-9] [0-9]{", la, ",}"));
  return alternatives(alts);
}

}  // namespace

uint64_t magnitude_of_negative(int64_t v) { return static_cast<uint64_t>(-(v + 1)) + 1; }

// Integers in [lo, hi] (either side absent: unbounded).
std::string integer_range(std::optional<int64_t> lo, std::optional<int64_t> hi) {
  std::vector<std::string> alts;
  if (!lo || *lo < 0) {
    uint64_t mlo = (hi && *hi < 0) ? magnitude_of_negative(*hi) : 1;
    std::optional<uint64_t> mhi;
    if (lo) mhi = magnitude_of_negative(*lo);
    alts.push_back("\"-\" " + nonneg_range(mlo, mhi));
  }
  if (!hi || *hi >= 0) {
    std::optional<uint64_t> b;
    if (hi) b = static_cast<uint64_t>(*hi);
    alts.push_back(nonneg_range(lo && *lo > 0 ? static_cast<uint64_t>(*lo) : 0, b));
  }
  return alternatives(alts);
}

// Decimal magnitudes m = N[.fraction] with ml <(=) m <(=) mh, or nullopt when none exists.
std::optional<std::string> magnitude_range(uint64_t ml, bool ml_excl, std::optional<uint64_t> mh,
                                           bool mh_excl) {
  const std::string any_frac = "( \".\" [0-9]+ )?";
  const std::string zero_frac = "( \".\" \"0\"+ )?";
  const std::string nonzero_frac = "\".\" [0-9]* [1-9] [0-9]*";
  std::vector<std::string> alts;
  uint64_t nlo = ml + (ml_excl ? 1 : 0);
  if (!mh || (*mh >= 1 && nlo <= *mh - 1)) {
    std::optional<uint64_t> nhi;
    if (mh) nhi = *mh - 1;
    alts.push_back(nonneg_range(nlo, nhi) + " " + any_frac);
  }
  if (ml_excl && (!mh || ml < *mh)) {
    alts.push_back(literal(std::to_string(ml)) + " " + nonzero_frac);
  }
  if (mh && !mh_excl && (ml < *mh || (ml == *mh && !ml_excl))) {
    alts.push_back(literal(std::to_string(*mh)) + " " + zero_frac);
  }
  if (alts.empty()) return std::nullopt;
  return alternatives(alts);
}

std::string format_expr(std::string_view f) {
  if (f == "date" || f == "date-time") {
    std::string leap =
        "( [0-9]{2} ( \"0\" [48] | [2468] [048] | [13579] [26] ) | ( \"0\" [48] | [2468] [048] "
        "| [13579] [26] | \"00\" ) \"00\" )";
    std::string d28 = "\"0\" [1-9] | \"1\" [0-9] | \"2\" [0-8]";
    std::string body = "( [0-9]{4} \"-\" ( ( \"0\" [13578] | \"1\" [02] ) \"-\" ( " + d28 +
                       " | \"29\" | \"3\" [01] ) | ( \"0\" [469] | \"11\" ) \"-\" ( " + d28 +
                       " | \"29\" | \"30\" ) | \"02-\" ( " + d28 + " ) ) | " + leap +
                       " \"-02-29\" )";
    if (f == "date") return body;
    return "( " + body + " \"T\" " + format_expr("time") + " )";
  }
  if (f == "time") {
    std::string hh = "( [01] [0-9] | \"2\" [0-3] )";
    return paren(hh + " \":\" [0-5] [0-9] \":\" [0-5] [0-9] ( \".\" [0-9]+ )? ( \"Z\" | [-+] " +
                 hh + " \":\" [0-5] [0-9] )");
  }
  if (f == "uuid") {
    return paren(
        "[0-9a-fA-F]{8} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" "
        "[0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{12}");
  }
  if (f == "email") {
    std::string atext = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~\\x2D]";
    std::string label = "[A-Za-z0-9] ( [A-Za-z0-9\\x2D]{0,61} [A-Za-z0-9] )?";
    return paren(atext + "+ ( \".\" " + atext + "+ )* \"@\" " + label + " ( \".\" " + label +
                 " )+");
  }
  if (f == "ipv4") {
    std::string octet =
        "( \"25\" [0-5] | \"2\" [0-4] [0-9] | \"1\" [0-9] [0-9] | [1-9] [0-9] | [0-9] )";
    return paren(octet + " ( \".\" " + octet + " ){3}");
  }
  // uri: scheme ":" then URI characters, '%' only as a %XX escape.
  VT_CHECK(f == "uri", "format_expr: unknown format ", f);
  return paren(
      "[A-Za-z] [A-Za-z0-9+.\\x2D]* \":\" ( [A-Za-z0-9._~:/?#\\x5B\\x5D@!$&'()*+,;=\\x2D] | "
      "\"%\" [0-9a-fA-F] [0-9a-fA-F] )*");
}

}  // namespace vtllm::structured::gbnf
