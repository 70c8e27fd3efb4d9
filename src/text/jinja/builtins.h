// The filters, tests, methods and globals a template can name. The parser asks
// has_filter/has_test (Jinja2 rejects unknown ones when it compiles); the
// interpreter calls them. Everything here follows Jinja2 3.1 with transformers'
// chat-template environment (its tojson, raise_exception, strftime_now).
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "text/jinja/value.h"

namespace vtllm::jinja {

class Interpreter;

bool has_filter(std::string_view name);
bool has_test(std::string_view name);

// `value | name(args)`. The interpreter is there for filters that apply other
// filters or tests by name (map, select, ...) and for the attribute lookup rules.
Value apply_filter(Interpreter& in, std::string_view name, const Value& value, CallArgs& args);
// `value is name(args)`.
bool apply_test(Interpreter& in, std::string_view name, const Value& value, CallArgs& args);

// A method of a str, dict or list (`s.strip`, `d.items`) as a bound callable, or
// an undefined value when the type has no such attribute (or, for the mutating
// ones, an undefined that says the sandbox refuses them).
Value get_method(const Value& self, const std::string& name);


// Helpers shared by filters, tests and methods: Python-style argument binding.
// Returns the argument at `pos` or named `name`, or nullptr when absent.
const Value* arg(const CallArgs& args, size_t pos, std::string_view name);
// Throws when args has a positional beyond max_positional or an unknown keyword.
void check_args(const CallArgs& args, std::string_view what, size_t max_positional,
                std::initializer_list<std::string_view> keywords);
[[noreturn]] void runtime_error(const std::string& message);

}  // namespace vtllm::jinja
