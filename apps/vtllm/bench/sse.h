// An incremental parser for a text/event-stream body (the SSE framing OpenAI
// streaming endpoints use). Bytes arrive in arbitrary pieces; feed() returns the
// `data` payload of every event completed by them, in order.
//
// Per the SSE rules: lines end in \n, \r\n or \r; an empty line ends an event;
// several `data:` lines of one event join with \n; one space after the colon is
// dropped; comment lines (leading ':') and other fields are ignored. finish()
// returns an event left unterminated at the end of the body.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace vtllm::bench {

class SseParser {
 public:
  std::vector<std::string> feed(std::string_view bytes);
  std::vector<std::string> finish();

 private:
  void take_line(std::string_view line, std::vector<std::string>& out);

  std::string line_;         // the current, unfinished line
  std::string data_;         // data of the current event so far
  bool has_data_ = false;
  bool after_cr_ = false;    // the last byte was \r (a following \n belongs to it)
};

}  // namespace vtllm::bench
