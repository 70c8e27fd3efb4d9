// jinja::TemplateError: every failure of parsing or rendering a template.
#pragma once

#include <string>

#include "base/error.h"

namespace vtllm::jinja {

class TemplateError : public vtllm::Error {
 public:
  enum class Kind {
    Syntax,   // the template does not parse; line and column say where
    Runtime,  // evaluation failed as Jinja2 would fail (undefined use, type error)
    Raised,   // the template called raise_exception(message); what() is the message
    Limit,    // a bound against hostile templates was hit (depth, loop count, output size)
  };

  // line/column are 1-based; 0 when unknown. what() is "line L, column C: message"
  // for syntax errors, "line L: message" for runtime ones, and the message itself
  // for raise_exception.
  TemplateError(Kind kind, const std::string& message, int line = 0, int column = 0);

  Kind kind() const { return kind_; }
  int line() const { return line_; }
  int column() const { return column_; }
  // The message without the location.
  const std::string& message() const { return message_; }

 private:
  Kind kind_;
  std::string message_;
  int line_;
  int column_;
};

}  // namespace vtllm::jinja
