#include "text/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "base/error.h"

namespace vtllm::text {

namespace {

// Unicode White_Space, spelled for use inside a PCRE2 character class.
constexpr std::string_view kWhiteSpaceClassBody =
    "\\t\\n\\x{0B}\\f\\r\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}"
    "\\x{202F}\\x{205F}\\x{3000}";

std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  if (pcre2_get_error_message(code, buf, sizeof buf) < 0) return "unknown PCRE2 error";
  return reinterpret_cast<const char*>(buf);
}

// One JIT stack per thread, large enough for long runs of whitespace.
pcre2_jit_stack* thread_jit_stack() {
  struct Holder {
    pcre2_jit_stack* stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
    ~Holder() { pcre2_jit_stack_free(stack); }
  };
  thread_local Holder holder;
  return holder.stack;
}

}  // namespace

std::string onig_to_pcre2(std::string_view p) {
  std::string out;
  out.reserve(p.size() + 16);
  bool in_class = false;
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char n = p[i + 1];
      if (n == 's') {
        if (in_class) {
          out.append(kWhiteSpaceClassBody);
        } else {
          out.append("[").append(kWhiteSpaceClassBody).append("]");
        }
        ++i;
        continue;
      }
      if (n == 'S' && !in_class) {
        out.append("[^").append(kWhiteSpaceClassBody).append("]");
        ++i;
        continue;
      }
      out.push_back(c);
      out.push_back(n);
      ++i;
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out.push_back(c);
      // A ']' right after '[' or '[^' is a literal member, not the end.
      if (i + 1 < p.size() && p[i + 1] == '^') out.push_back(p[++i]);
      if (i + 1 < p.size() && p[i + 1] == ']') out.push_back(p[++i]);
      continue;
    }
    if (in_class && c == ']') in_class = false;
    out.push_back(c);
  }
  return out;
}

struct Regex::Impl {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Impl() { pcre2_code_free(code); }
};

Regex::Regex(std::string_view pattern, Syntax syntax, std::string_view what)
    : impl_(std::make_unique<Impl>()) {
  std::string translated =
      syntax == Syntax::kLiteral ? std::string(pattern) : onig_to_pcre2(pattern);
  // PCRE2_LITERAL refuses PCRE2_UCP (it has no classes to apply it to).
  const uint32_t options =
      PCRE2_UTF | (syntax == Syntax::kLiteral ? PCRE2_LITERAL : PCRE2_UCP);
  int err = 0;
  PCRE2_SIZE err_off = 0;
  impl_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                              options, &err, &err_off, nullptr);
  if (!impl_->code) {
    VT_THROW(what, ": invalid regex '", pattern, "': ", pcre2_message(err), " at offset ",
             err_off);
  }
  impl_->jit = pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE) == 0;
}

Regex::~Regex() = default;
Regex::Regex(Regex&&) noexcept = default;
Regex& Regex::operator=(Regex&&) noexcept = default;

void Regex::find_all(std::string_view text, std::vector<Match>& out) const {
  struct MatchData {
    pcre2_match_data* md;
    ~MatchData() { pcre2_match_data_free(md); }
  } data{pcre2_match_data_create_from_pattern(impl_->code, nullptr)};
  if (!data.md) VT_THROW("regex: out of memory creating match data");
  pcre2_match_context* ctx = nullptr;
  struct Ctx {
    pcre2_match_context* c;
    ~Ctx() { pcre2_match_context_free(c); }
  } ctx_holder{nullptr};
  if (impl_->jit) {
    ctx = ctx_holder.c = pcre2_match_context_create(nullptr);
    pcre2_jit_stack_assign(ctx, nullptr, thread_jit_stack());
  }
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0;
  bool have_last = false;
  size_t last_end = 0;
  while (pos <= text.size()) {
    const int rc = pcre2_match(impl_->code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK,
                               data.md, ctx);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) VT_THROW("regex: matching failed: ", pcre2_message(rc));
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(data.md);
    const size_t s = ov[0], e = ov[1];
    if (s == e && have_last && last_end == e) {
      // Oniguruma's find_iter: step over one character and search again.
      if (pos >= text.size()) break;
      size_t step = 1;
      while (pos + step < text.size() && (static_cast<uint8_t>(text[pos + step]) & 0xC0) == 0x80)
        ++step;
      pos += step;
      continue;
    }
    out.push_back({s, e});
    pos = e;
    have_last = true;
    last_end = e;
  }
}

}  // namespace vtllm::text
