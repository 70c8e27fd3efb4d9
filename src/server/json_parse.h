// A fast JSON parser for request bodies (internal to src/server .cpp files).
//
// It accepts exactly what nlohmann::json::parse(text, nullptr, false) accepts
// (nlohmann 3.11: RFC 8259, a leading UTF-8 BOM skipped, strings checked as
// UTF-8, duplicate keys resolved last-wins, non-finite floats rejected, a NUL
// byte after the value ending the text as nlohmann's lexer reads it) and
// builds the same value, number kinds included: a non-negative integer that
// fits uint64 is number_unsigned, a negative one that fits int64 is
// number_integer, any other number is number_float, correctly rounded.
// It differs in speed: runs of plain string bytes are scanned 8 at a time
// and copied at once (a base64 image URL is one long run), and nesting uses
// an explicit stack, so depth is bounded by memory, not by the call stack.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

namespace vtllm::server {

// The JSON value `text` holds, or nullopt where nlohmann's parse would return discarded.
std::optional<nlohmann::json> parse_json(std::string_view text);

}  // namespace vtllm::server
