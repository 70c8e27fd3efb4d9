// jinja::Value: the values a chat template sees, with Python's semantics where the
// template can observe them (truthiness, equality, str() and repr()).
//
// A Value is none, bool, int (64-bit), float (double), string (UTF-8), list, tuple,
// dict (insertion-ordered, any value as key), namespace, callable, or undefined.
// Lists, dicts and namespaces are shared by reference like Python objects; the
// sandbox (ImmutableSandboxedEnvironment) lets a template mutate only namespaces.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "text/jinja/error.h"

namespace vtllm::jinja {

class Value;

// How deeply lists and dicts may nest. Building a deeper one is a
// TemplateError(Limit): printing, comparing and freeing them recurse.
inline constexpr int kMaxNesting = 512;

struct ListData {
  std::vector<Value> items;
  int depth = 1;  // 1 + the deepest item's depth, fixed at construction
};

// Insertion-ordered mapping with linear lookup: template dicts are small.
struct DictData {
  std::vector<std::pair<Value, Value>> entries;
  int depth = 1;
  const Value* find(const Value& key) const;
  const Value* find_key(std::string_view key) const;
  void set(Value key, Value value);
};

// Arguments of a call as a template wrote them: f(a, b, key=c).
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

struct Callable {
  std::string name;
  std::function<Value(CallArgs&)> fn;
};

class Value {
 public:
  enum class Kind { Undefined, None, Bool, Int, Float, String, List, Tuple, Dict, Namespace, Callable };

  Value() = default;  // undefined, without a hint
  Value(bool b) : kind_(Kind::Bool), data_(b) {}
  Value(int i) : kind_(Kind::Int), data_(int64_t{i}) {}
  Value(int64_t i) : kind_(Kind::Int), data_(i) {}
  Value(double f) : kind_(Kind::Float), data_(f) {}
  Value(std::string s) : kind_(Kind::String), data_(std::move(s)) {}
  Value(std::string_view s) : Value(std::string(s)) {}
  Value(const char* s) : Value(std::string(s)) {}

  // Undefined with the message Jinja2 would raise when it is used ("'x' is undefined").
  static Value undefined(std::string hint);
  static Value none();
  static Value list(std::vector<Value> items = {});
  static Value tuple(std::vector<Value> items);
  static Value mapping(DictData entries = {});
  static Value ns(DictData attributes = {});
  static Value callable(std::string name, std::function<Value(CallArgs&)> fn);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::Undefined; }
  bool is_none() const { return kind_ == Kind::None; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_int() const { return kind_ == Kind::Int; }
  bool is_float() const { return kind_ == Kind::Float; }
  bool is_number() const { return is_int() || is_float() || is_bool(); }
  bool is_string() const { return kind_ == Kind::String; }
  bool is_list() const { return kind_ == Kind::List; }
  bool is_tuple() const { return kind_ == Kind::Tuple; }
  bool is_sequence() const { return is_list() || is_tuple(); }
  bool is_dict() const { return kind_ == Kind::Dict; }
  bool is_namespace() const { return kind_ == Kind::Namespace; }
  bool is_callable() const { return kind_ == Kind::Callable; }

  bool as_bool() const { return std::get<bool>(data_); }
  int64_t as_int() const { return std::get<int64_t>(data_); }
  double as_float() const { return std::get<double>(data_); }
  // Int, Float or Bool as a double.
  double to_double() const;
  const std::string& as_string() const { return std::get<std::string>(data_); }
  // The Undefined's message.
  const std::string& undefined_hint() const;
  // List or Tuple items.
  const std::vector<Value>& items() const { return std::get<std::shared_ptr<ListData>>(data_)->items; }
  // Dict or Namespace entries; a namespace's are mutable through `set ns.x`.
  DictData& dict() const { return *std::get<std::shared_ptr<DictData>>(data_); }
  Callable& callable() const { return *std::get<std::shared_ptr<Callable>>(data_); }

  // Python's bool(): empty collections, 0, "", None and undefined are false.
  bool truthy() const;
  // Python's ==: numbers by value (True == 1), collections element-wise, dicts as sets of pairs.
  bool operator==(const Value& other) const;
  // Python's type name, for error messages: 'str', 'int', 'dict', ...
  const char* type_name() const;
  // Nesting depth: 0 for scalars, ListData/DictData::depth for containers.
  int depth() const;

 private:
  Kind kind_ = Kind::Undefined;
  std::variant<std::monostate, bool, int64_t, double, std::string, std::shared_ptr<ListData>,
               std::shared_ptr<DictData>, std::shared_ptr<Callable>>
      data_;
};

// Python's str(): strings as they are, None/True/False by name, floats as repr(),
// containers as repr(); undefined is "".
std::string to_str(const Value& v);
// Python's repr(): strings quoted and escaped as Python does.
std::string repr(const Value& v);
// Python's repr() of a float: shortest round-trip digits, exponent form outside
// [1e-4, 1e16), always a '.0' or exponent so it reads as a float.
std::string float_repr(double f);

}  // namespace vtllm::jinja
