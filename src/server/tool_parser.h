// Tool-call parsers: the model's text -> content and OpenAI tool calls, whole or
// as streaming deltas, for the formats vLLM names qwen3_coder / qwen3_xml (Qwen3.5
// and Qwen3.6, XML) and hermes (Qwen3, JSON).
//
// qwen3_coder:
//   <tool_call>\n<function=NAME>\n<parameter=P>\nVALUE\n</parameter>\n...</function>\n</tool_call>
// A value loses one leading and one trailing "\n" and is converted by the type its
// tool's parameter schema gives P, as vLLM's Qwen3CoderToolParser does: string types
// stay text; "null"/"None" become null for non-string (or nullable) types; int*, uint*,
// long*, short*, unsigned* parse as integers, num*/float* as numbers (integral values
// as integers), boolean/bool/binary as value == "true" (case-insensitive); object,
// array and anything else parse as JSON (a Python literal's JSON subset: True, False,
// None and single quotes are not read), falling back to the text. A parameter not in
// the schema stays text. Arguments are written as Python's json.dumps(ensure_ascii=
// False) writes them ({"a": 1, "b": [1, 2]}). A </parameter> or </function> counts as
// structural only when what follows it (after whitespace) is the next tag or the end,
// so values may contain those strings literally. A name holding {}<>"' or whitespace
// is not a call.
// hermes: <tool_call>\n{"name": NAME, "arguments": ARGS}\n</tool_call>, the body
// ending at the first </tool_call> (or the end of the text); arguments are ARGS as
// Python's json.dumps writes it; a body that is not such an object is dropped.
//
// Content is the text before the first call; text after a call (between or after
// calls) is dropped, as vLLM's non-streaming parsers drop it. The streaming parser
// is the same parse applied to the text so far: content is released as soon as it
// cannot be the start of a call, a call's id and name in its first delta, its
// arguments as fragments that reassemble to the whole-text result exactly. A hermes
// call is streamed once its name and the "arguments" key are read, its arguments as
// far as the JSON so far settles them (python_json_dumps_prefix: whole strings
// characters, whole numbers and literals). One case cannot match, as in vLLM: a hermes
// body whose JSON breaks after its name was streamed is dropped by the whole-text parse
// (and its text is content there), while the stream has shown the call; so does one
// with a duplicate "arguments" key (the parse keeps one value, the stream shows the
// first).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vtllm::server {

enum class ToolCallFormat { kQwen3Coder, kHermes };

// "qwen3_coder" and "qwen3_xml" -> kQwen3Coder, "hermes" -> kHermes; else nullopt.
std::optional<ToolCallFormat> tool_call_format_from_name(std::string_view name);

// One tool of a request: the function's name and its `parameters` JSON Schema as JSON
// text ("{}" when the tool gave none).
struct ToolFunction {
  std::string name;
  std::string parameters_json = "{}";
};

struct ToolCall {
  std::string id;  // "call_" + 24 hex digits
  std::string name;
  std::string arguments;  // a JSON object's text
};

struct ExtractedToolCalls {
  std::optional<std::string> content;  // nullopt when empty and a call was found
  std::vector<ToolCall> calls;         // empty: no call, content is the whole text
};

// A fresh "call_<24 hex>" id (random).
std::string make_tool_call_id();

// The whole-text parse. `tools` gives the parameter types (may be empty).
ExtractedToolCalls extract_tool_calls(ToolCallFormat format, std::string_view text,
                                      const std::vector<ToolFunction>& tools);

// One streamed piece of a call: `id` and `name` are set in the call's first delta only.
struct ToolCallDelta {
  int index = 0;
  std::string id;
  std::string name;
  std::string arguments;
};

struct ToolStreamDelta {
  std::string content;
  std::vector<ToolCallDelta> calls;
  bool empty() const { return content.empty() && calls.empty(); }
};

// The streaming parse of one choice. Not thread-safe; one per choice.
class StreamingToolParser {
 public:
  // `tools` must outlive the parser.
  StreamingToolParser(ToolCallFormat format, const std::vector<ToolFunction>& tools);

  // Appends `text`; `final` marks the end of the output (what was held back because it
  // might start a call is then settled). Returns what is new since the last call.
  ToolStreamDelta feed(std::string_view text, bool final);
  // Whether any call was emitted.
  bool called() const { return !sent_.empty(); }

 private:
  struct Sent {
    size_t start = 0;  // where the call's text begins in buf_
    std::string id;
    std::string arguments;  // sent so far
  };
  ToolCallFormat format_;
  const std::vector<ToolFunction>& tools_;
  std::string buf_;
  size_t content_sent_ = 0;
  std::vector<Sent> sent_;
  bool finished_ = false;
};

}  // namespace vtllm::server
