#include "text/jinja/template.h"

#include <chrono>

#include "text/jinja/interpreter.h"
#include "text/jinja/lexer.h"
#include "text/jinja/parser.h"

namespace vtllm::jinja {

struct Template::Parsed {
  Body body;
};

Now system_now() {
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  Now n;
  localtime_r(&t, &n.tm);
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() % 1000000;
  n.microsecond = static_cast<int>(us < 0 ? us + 1000000 : us);
  return n;
}

Template::Template(std::string_view source, TemplateOptions options) : options_(std::move(options)) {
  LexOptions lex{options_.trim_blocks, options_.lstrip_blocks};
  auto parsed = std::make_shared<Parsed>();
  parsed->body = parse(tokenize(source, lex), ParseOptions{options_.max_parse_depth});
  parsed_ = std::move(parsed);
}

Template::~Template() = default;
Template::Template(Template&&) noexcept = default;
Template& Template::operator=(Template&&) noexcept = default;

std::string Template::render(const Value& context) const {
  Interpreter interpreter(options_.limits, options_.clock, context);
  return interpreter.render(parsed_->body);
}

}  // namespace vtllm::jinja
