#include "server/generation.h"

#include <utility>

#include "server/api_error.h"

namespace vtllm::server {

namespace {

double seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

const char* finish_name(engine::FinishReason r) {
  switch (r) {
    case engine::FinishReason::kStop:
      return "stop";
    case engine::FinishReason::kLength:
      return "length";
    case engine::FinishReason::kAbort:
      return "abort";
    case engine::FinishReason::kError:
      return "error";
    case engine::FinishReason::kNone:
      break;
  }
  return "";
}

}  // namespace

void GenerationRegistry::add(Generation* g) {
  std::lock_guard lock(mu_);
  live_.insert(g);
}

void GenerationRegistry::remove(Generation* g) {
  std::lock_guard lock(mu_);
  live_.erase(g);
}

int GenerationRegistry::cancel_all(const ApiError& why) {
  std::lock_guard lock(mu_);
  for (Generation* g : live_) g->cancel(why);
  return int(live_.size());
}

Generation::Generation(engine::AsyncEngine& engine, const text::Tokenizer& tokenizer,
                       ServerMetrics& metrics, GenerationSpec spec, std::shared_ptr<void> guard,
                       GenerationRegistry* registry)
    : engine_(engine),
      tokenizer_(tokenizer),
      metrics_(metrics),
      spec_(std::move(spec)),
      guard_(std::move(guard)),
      registry_(registry),
      arrival_(std::chrono::steady_clock::now()),
      stream_done_(spec_.prompts.size(), false),
      cached_tokens_(spec_.prompts.size(), 0),
      prompt_lps_(spec_.prompts.size()),
      samples_finished_(spec_.prompts.size(), 0),
      choices_(spec_.prompts.size() * size_t(spec_.params.n)) {
  for (size_t p = 0; p < spec_.prompts.size(); ++p) {
    std::string id = spec_.prompts.size() == 1 ? spec_.header.id : str_cat(spec_.header.id, "-", p);
    const int64_t prompt_len = int64_t(spec_.prompts[p].size());
    try {
      streams_.push_back(engine_.add_request(id, spec_.prompts[p], spec_.params, 0,
                                             p < spec_.mm.size() ? spec_.mm[p] : nullptr));
    } catch (...) {
      for (const std::string& done : engine_ids_) engine_.abort(done);
      throw;
    }
    engine_ids_.push_back(std::move(id));
    metrics_.prompt_tokens.inc(double(prompt_len));
  }
  metrics_.request_params_n.observe(double(spec_.params.n));
  metrics_.request_params_max_tokens.observe(double(spec_.params.max_tokens));
  if (registry_) registry_->add(this);
}

Generation::~Generation() {
  if (registry_) registry_->remove(this);
  for (size_t p = 0; p < streams_.size(); ++p) {
    if (stream_done_[p]) continue;
    engine_.abort(engine_ids_[p]);
    // Nobody reads the abort's output now: count it here.
    if (samples_finished_[p] < spec_.params.n) metrics_.finished_abort.inc();
  }
}

void Generation::cancel(std::optional<ApiError> why) {
  {
    std::lock_guard lock(cancel_mu_);
    if (cancelled_) return;
    cancelled_ = true;
    cancel_why_ = std::move(why);
  }
  for (const std::string& id : engine_ids_) engine_.abort(id);
}

std::optional<ApiError> Generation::cancel_reason() const {
  std::lock_guard lock(cancel_mu_);
  return cancel_why_;
}

std::string Generation::token_text(int32_t id) const {
  const int32_t one[1] = {id};
  return tokenizer_.decode(one, false);
}

std::optional<std::vector<PromptPositionLogprobs>> Generation::prompt_logprobs_of(size_t p) const {
  if (!spec_.params.prompt_logprobs) return std::nullopt;
  const auto& lps = prompt_lps_[p];
  VT_CHECK(lps.size() == spec_.prompts[p].size(), "generation '", spec_.header.id, "': prompt ", p,
           " has ", lps.size(), " prompt logprobs for ", spec_.prompts[p].size(), " tokens");
  std::vector<PromptPositionLogprobs> out;
  for (const std::optional<engine::SampleResult>& r : lps) {
    if (!r) {
      out.emplace_back(std::nullopt);
      continue;
    }
    std::vector<RankedLogprob> pos;
    pos.push_back(RankedLogprob{r->token, r->logprob, r->rank, token_text(r->token)});
    int64_t rank = 1;
    for (const engine::TokenLogprob& alt : r->top_logprobs) {
      pos.push_back(RankedLogprob{alt.token, alt.logprob, rank++, token_text(alt.token)});
    }
    out.emplace_back(std::move(pos));
  }
  return out;
}

bool Generation::have_prompt_logprobs(size_t p) const {
  return prompt_lps_[p].size() == spec_.prompts[p].size();
}

std::vector<TokenLogprob> Generation::echo_logprobs(size_t p) const {
  const std::vector<int32_t>& ids = spec_.prompts[p];
  const auto& lps = prompt_lps_[p];
  VT_CHECK(lps.size() == ids.size(), "generation '", spec_.header.id, "': prompt ", p, " has ",
           lps.size(), " prompt logprobs for ", ids.size(), " tokens");
  const size_t n_top = size_t(spec_.params.logprobs.value_or(0));
  std::vector<TokenLogprob> out;
  for (size_t i = 0; i < ids.size(); ++i) {
    TokenLogprob t;
    t.token = token_text(ids[i]);
    if (!lps[i]) {
      t.none = true;
    } else {
      t.logprob = lps[i]->logprob;
      const auto& top = lps[i]->top_logprobs;
      for (size_t k = 0; k < top.size() && k < n_top; ++k) {
        t.top.push_back(TopLogprob{token_text(top[k].token), top[k].logprob});
      }
    }
    out.push_back(std::move(t));
  }
  return out;
}

Choice Generation::absorb(size_t p, const engine::EngineOutput& o) {
  const int n = spec_.params.n;
  VT_CHECK(o.index >= 0 && o.index < n, "generation '", spec_.header.id, "': output index ",
           o.index, " outside n = ", n);
  ChoiceState& s = choices_[p * size_t(n) + size_t(o.index)];
  const auto now = std::chrono::steady_clock::now();
  Choice delta;
  delta.index = int(p) * n + o.index;
  delta.has_logprobs = spec_.params.logprobs.has_value();
  delta.text_offset = s.text_sent;
  if (!o.prompt_logprobs.empty()) prompt_lps_[p] = o.prompt_logprobs;
  const bool echo = p < spec_.echo.size();
  if (!s.started) {
    s.started = true;
    if (echo) delta.text = spec_.echo[p];
    // A stream sends the echoed prompt's logprobs in the choice's first chunk (n = 1
    // there, so this output carries them); a whole response prepends them at the end.
    // An abort before the prompt was computed has none: the choice ends without them.
    const bool aborted = o.finished && o.finish_reason == engine::FinishReason::kAbort;
    if (echo && spec_.stream && delta.has_logprobs && !(aborted && !have_prompt_logprobs(p)))
      delta.logprobs = echo_logprobs(p);
    if (o.num_cached_tokens > 0) cached_tokens_[p] = o.num_cached_tokens;
  }
  if (!s.first_scheduled && o.first_scheduled) s.first_scheduled = o.first_scheduled;
  const int64_t k = int64_t(o.new_token_ids.size());
  if (k > 0) {
    if (s.num_tokens == 0) {
      s.first_token = now;
      metrics_.time_to_first_token.observe(seconds(now - arrival_));
      if (s.first_scheduled) {
        metrics_.request_queue_time.observe(seconds(*s.first_scheduled - arrival_));
        metrics_.request_prefill_time.observe(seconds(now - *s.first_scheduled));
      }
    } else {
      metrics_.inter_token_latency.observe(seconds(now - s.last_token) / double(k));
    }
    s.last_token = now;
    s.num_tokens += k;
    completion_tokens_ += k;
    metrics_.generation_tokens.inc(double(k));
  }
  // echo_only: the sampled token is not part of the choice (vLLM's max_tokens 0).
  if (!spec_.echo_only) delta.text += o.new_text;
  if (spec_.return_token_ids) {
    delta.token_ids.emplace();
    if (!spec_.echo_only) *delta.token_ids = o.new_token_ids;
    // Completions' stream: the prompt's ids in the choice's first chunk.
    if (spec_.stream && !spec_.chat && !s.prompt_sent) {
      delta.prompt_token_ids = spec_.prompts[p];
      s.prompt_sent = true;
    }
  }
  for (const engine::SampleResult& r : o.logprobs) {
    if (spec_.echo_only) break;
    TokenLogprob t{token_text(r.token), r.logprob, {}};
    for (const engine::TokenLogprob& alt : r.top_logprobs) {
      t.top.push_back(TopLogprob{token_text(alt.token), alt.logprob});
    }
    delta.logprobs.push_back(std::move(t));
  }
  if (o.finished) {
    ++samples_finished_[p];
    delta.finish_reason = finish_name(o.finish_reason);
    delta.stop_token = o.stop_token;
    delta.stop_string = o.stop_string;
    s.stop_token = o.stop_token;
    s.stop_string = o.stop_string;
    metrics_.e2e_request_latency.observe(seconds(now - arrival_));
    metrics_.request_prompt_tokens.observe(double(spec_.prompts[p].size()));
    metrics_.request_generation_tokens.observe(double(s.num_tokens));
    if (s.num_tokens > 0) metrics_.request_decode_time.observe(seconds(now - s.first_token));
    if (s.first_scheduled)
      metrics_.request_inference_time.observe(seconds(now - *s.first_scheduled));
    switch (o.finish_reason) {
      case engine::FinishReason::kStop:
        metrics_.finished_stop.inc();
        break;
      case engine::FinishReason::kLength:
        metrics_.finished_length.inc();
        break;
      default:
        saw_abort_ = true;
        metrics_.finished_abort.inc();
        break;
    }
  }
  s.text += delta.text;
  s.text_sent += delta.text.size();
  s.logprobs.insert(s.logprobs.end(), delta.logprobs.begin(), delta.logprobs.end());
  if (delta.token_ids)
    s.token_ids.insert(s.token_ids.end(), delta.token_ids->begin(), delta.token_ids->end());
  if (!delta.finish_reason.empty()) s.finish_reason = delta.finish_reason;
  if (spec_.chat && spec_.stream && spec_.output.any()) {
    if (!s.parser) s.parser.emplace(spec_.output);
    ChatOutputDelta d = s.parser->feed(delta.text, o.finished);
    delta.text = std::move(d.content);
    if (!d.reasoning.empty()) delta.reasoning = std::move(d.reasoning);
    delta.tool_calls = std::move(d.tool_calls);
    if (o.finished && s.parser->called() && delta.finish_reason != "abort")
      delta.finish_reason = "tool_calls";
  }
  return delta;
}

Usage Generation::usage() const {
  Usage u;
  for (size_t p = 0; p < spec_.prompts.size(); ++p) {
    u.prompt_tokens += int64_t(spec_.prompts[p].size());
    u.cached_tokens += cached_tokens_[p];
  }
  u.completion_tokens = completion_tokens_;
  return u;
}

bool Generation::next_frames(std::string& out) {
  if (finished_) return false;
  const bool with_usage = spec_.include_usage;
  if (spec_.chat && !roles_sent_) {
    roles_sent_ = true;
    for (size_t i = 0; i < choices_.size(); ++i) {
      // A chat request has one prompt: its (expanded) ids go with each choice's role chunk.
      out += sse_event(chat_role_chunk(spec_.header, int(i), with_usage,
                                       spec_.return_token_ids ? &spec_.prompts[0] : nullptr));
    }
    return true;
  }
  while (current_ < streams_.size()) {
    std::optional<engine::EngineOutput> o = streams_[current_]->next();
    if (!o) {
      stream_done_[current_] = true;
      if (std::optional<std::string> err = streams_[current_]->error()) {
        out += sse_event(error_body(ApiError::internal(*err)));
        current_ = streams_.size();
        break;
      }
      ++current_;
      continue;
    }
    const Choice delta = absorb(current_, *o);
    const bool ids = (delta.token_ids && !delta.token_ids->empty()) || delta.prompt_token_ids;
    if (delta.text.empty() && delta.finish_reason.empty() && delta.logprobs.empty() && !ids &&
        !delta.reasoning && delta.tool_calls.empty())
      continue;
    out += sse_event(spec_.chat ? chat_chunk(spec_.header, delta, with_usage)
                                : completion_chunk(spec_.header, delta, with_usage));
    return true;
  }
  // A cancel that came after the request ended on its own changes nothing.
  if (std::optional<ApiError> why = cancel_reason(); why && saw_abort_)
    out += sse_event(error_body(*why));
  if (with_usage) out += sse_event(usage_chunk(spec_.header, spec_.chat, usage()));
  out += kSseDone;
  finished_ = true;
  return false;
}

std::string Generation::run_to_end() {
  for (size_t p = 0; p < streams_.size(); ++p) {
    while (std::optional<engine::EngineOutput> o = streams_[p]->next()) absorb(p, *o);
    stream_done_[p] = true;
    if (std::optional<std::string> err = streams_[p]->error()) throw ApiError::internal(*err);
  }
  finished_ = true;
  if (std::optional<ApiError> why = cancel_reason(); why && saw_abort_) throw *why;
  std::vector<Choice> choices;
  for (size_t i = 0; i < choices_.size(); ++i) {
    Choice c;
    c.index = int(i);
    c.text = choices_[i].text;
    c.finish_reason = choices_[i].finish_reason;
    c.has_logprobs = spec_.params.logprobs.has_value();
    const size_t p = i / size_t(spec_.params.n);
    // An aborted request may end before its prompt logprobs came: the choice has none.
    const bool have = have_prompt_logprobs(p) || !saw_abort_;
    if (p < spec_.echo.size() && c.has_logprobs && have) c.logprobs = echo_logprobs(p);
    c.logprobs.insert(c.logprobs.end(), choices_[i].logprobs.begin(), choices_[i].logprobs.end());
    if (have) c.prompt_logprobs = prompt_logprobs_of(p);
    c.stop_token = choices_[i].stop_token;
    c.stop_string = choices_[i].stop_string;
    if (spec_.return_token_ids) {
      c.token_ids = choices_[i].token_ids;
      c.prompt_token_ids = spec_.prompts[p];
    }
    if (spec_.chat && spec_.output.any()) {
      ChatOutput out = parse_chat_output(spec_.output, c.text);
      c.text = out.content.value_or("");
      c.content_null = !out.content;
      c.reasoning = std::move(out.reasoning);
      for (size_t k = 0; k < out.tool_calls.size(); ++k) {
        ToolCall& t = out.tool_calls[k];
        c.tool_calls.push_back(
            ToolCallDelta{int(k), std::move(t.id), std::move(t.name), std::move(t.arguments)});
      }
      if (!c.tool_calls.empty() && c.finish_reason != "abort") c.finish_reason = "tool_calls";
    }
    choices.push_back(std::move(c));
  }
  return spec_.chat ? chat_completion_response(spec_.header, choices, usage())
                    : completion_response(spec_.header, choices, usage());
}

}  // namespace vtllm::server
