// jinja::Template: parse a Jinja2 template once, render it many times.
//
// The language is Jinja2 3.1 as Hugging Face chat templates use it, in the
// environment transformers builds for apply_chat_template: sandboxed and
// immutable (only namespace() objects can be changed), trim_blocks and
// lstrip_blocks on, the loopcontrols extension ({% break %}, {% continue %}),
// {% generation %} blocks, transformers' tojson filter, and the globals
// raise_exception(message) and strftime_now(format). Rendered output equals
// Python Jinja2's byte for byte; tests/text/jinja_*_test.cpp and the template
// matrix hold it to that.
//
// Hostile templates are bounded (RenderLimits): nesting, macro recursion, loop
// iterations and output size end in TemplateError(Limit), never a crash.
// A Template is immutable after construction; render() may run concurrently.
#pragma once

#include <cstdint>
#include <ctime>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "text/jinja/error.h"
#include "text/jinja/value.h"

namespace vtllm::jinja {

struct RenderLimits {
  int max_call_depth = 100;                 // nested macro calls (Python stops near 1000 frames)
  int64_t max_loop_iterations = 1'000'000;  // all loop iterations of one render, together
  size_t max_output_bytes = 64u << 20;      // every string produced, and lists (by item bytes)
};

// Local wall-clock time for strftime_now (Python's datetime.now()).
struct Now {
  std::tm tm{};
  int microsecond = 0;
};
using Clock = std::function<Now()>;
Now system_now();

struct TemplateOptions {
  bool trim_blocks = true;    // transformers' settings
  bool lstrip_blocks = true;
  int max_parse_depth = 200;  // nesting of expressions and blocks
  RenderLimits limits;
  Clock clock;                // empty: system_now
};

class Template {
 public:
  // Throws TemplateError(Syntax) with line and column.
  explicit Template(std::string_view source, TemplateOptions options = {});
  ~Template();
  Template(Template&&) noexcept;
  Template& operator=(Template&&) noexcept;

  // Renders with the variables of `context`, a dict (keys are names). Throws
  // TemplateError(Runtime | Raised | Limit).
  std::string render(const Value& context) const;

 private:
  struct Parsed;
  std::shared_ptr<const Parsed> parsed_;
  TemplateOptions options_;
};

}  // namespace vtllm::jinja
