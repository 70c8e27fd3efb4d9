#include "engine/llm_engine.h"

#include <algorithm>
#include <chrono>
#include <exception>

#include "base/error.h"
#include "engine/step_plan.h"

namespace vtllm::engine {

LlmEngine::LlmEngine(const EngineConfig& config, std::unique_ptr<ModelExecutor> executor,
                     const text::Tokenizer* tokenizer)
    : config_(config),
      executor_(std::move(executor)),
      tokenizer_(tokenizer),
      scheduler_(config.scheduler, config.kv_cache),
      sampler_(config.sampler) {
  VT_CHECK(executor_ != nullptr, "engine: no model executor");
}

namespace {

// Throws naming the problem when `mm` does not describe `prompt`.
void check_multimodal_prompt(const MultimodalPrompt& mm, size_t prompt_len, int64_t merge_size) {
  const int64_t P = int64_t(prompt_len);
  VT_CHECK(int64_t(mm.mrope_positions.size()) == 3 * P, mm.mrope_positions.size(),
           " MRoPE positions for a prompt of ", P, " tokens (expected 3 x ", P, ")");
  int64_t prev_end = 0;
  for (size_t i = 0; i < mm.items.size(); ++i) {
    const MultimodalItem& it = mm.items[i];
    VT_CHECK(it.input != nullptr && !it.placement.runs.empty(), "vision item ", i,
             " has no input or no placeholder rows");
    VT_CHECK(it.placement.num_placeholders() == it.input->num_tokens(merge_size), "vision item ", i,
             " has ", it.placement.num_placeholders(), " placeholder rows for ",
             it.input->num_tokens(merge_size), " features");
    for (const multimodal::PlaceholderRun& r : it.placement.runs) {
      VT_CHECK(r.length > 0 && r.start >= prev_end && r.start + r.length <= P, "vision item ", i,
               ": placeholder rows [", r.start, ", ", r.start + r.length,
               ") are not in order within the prompt of ", P, " tokens");
      prev_end = r.start + r.length;
    }
  }
}

}  // namespace

SamplingParams resolve_bad_words(SamplingParams params, const text::Tokenizer* tokenizer) {
  if (params.bad_words.empty() || !params.bad_words_token_ids.empty()) return params;
  VT_CHECK(tokenizer != nullptr, "bad_words need a tokenizer, and this engine has none");
  for (const std::string& word : params.bad_words) {
    const size_t start = word.find_first_not_of(" \t\n\r\f\v");
    const std::string stripped = start == std::string::npos ? "" : word.substr(start);
    std::vector<int32_t> plain;
    for (auto t : tokenizer->encode(stripped, false)) plain.push_back(int32_t(t));
    if (plain.empty()) continue;  // nothing to ban
    std::vector<int32_t> spaced;
    for (auto t : tokenizer->encode(" " + stripped, false)) spaced.push_back(int32_t(t));
    const bool keep_spaced =
        !spaced.empty() && spaced[0] != plain[0] && spaced.size() == plain.size();
    params.bad_words_token_ids.push_back(std::move(plain));
    if (keep_spaced) params.bad_words_token_ids.push_back(std::move(spaced));
  }
  return params;
}

void LlmEngine::add_request(const std::string& id, std::vector<int32_t> prompt,
                            const SamplingParams& given, int priority,
                            std::shared_ptr<const MultimodalPrompt> mm) {
  const int64_t vocab = executor_->vocab_size();
  SamplingParams params;
  try {
    params = resolve_bad_words(given, tokenizer_);
    params.validate(vocab);
  } catch (const Error& e) {
    VT_THROW("request '", id, "': ", e.what());
  }
  if (children_.contains(id)) VT_THROW("request '", id, "': the id is already in use");
  if (!params.stop.empty() && !tokenizer_)
    VT_THROW("request '", id, "': stop strings need a tokenizer, and this engine has none");
  for (int32_t t : prompt)
    if (t < 0 || t >= vocab)
      VT_THROW("request '", id, "': prompt token id ", t, " is outside the vocabulary [0, ", vocab, ")");
  std::vector<ExtraKeySpan> extra_keys;
  if (mm && mm->items.empty()) mm.reset();
  if (mm) {
    try {
      check_multimodal_prompt(*mm, prompt.size(), executor_->check_multimodal());
    } catch (const Error& e) {
      VT_THROW("request '", id, "': ", e.what());
    }
    // Prefix-cache blocks overlapping an item carry its hash: same text, other image, no hit.
    for (const MultimodalItem& it : mm->items)
      extra_keys.push_back(
          {it.placement.span_begin, it.placement.span_end - it.placement.span_begin, it.hash()});
  }

  std::vector<std::string> ids;
  std::vector<std::unique_ptr<Request>> reqs;
  for (int i = 0; i < params.n; ++i) {
    SamplingParams child = params;
    child.n = 1;
    if (params.seed) child.seed = *params.seed + static_cast<uint64_t>(i);
    if (i > 0)
      child.prompt_logprobs.reset();  // sample 0 reports them; the others may hit the cache
    const std::string internal = params.n == 1 ? id : str_cat(id, "#", i);
    auto r = std::make_unique<Request>(internal, prompt, std::move(child), priority);
    r->eos_token_ids = config_.eos_token_ids;
    if (params.constraint) {
      try {
        r->constraint = params.constraint(prompt);
      } catch (const std::exception& e) {
        VT_THROW("request '", id, "': its constraint could not be made: ", e.what());
      }
      VT_CHECK(r->constraint != nullptr, "request '", id, "': its constraint factory gave null");
    }
    r->mm = mm;
    r->extra_keys = extra_keys;
    ids.push_back(internal);
    reqs.push_back(std::move(r));
  }
  for (size_t i = 0; i < reqs.size(); ++i) {
    Tracked t;
    t.parent = id;
    t.index = static_cast<int>(i);
    t.include_stop = params.include_stop_str_in_output;
    if (i == 0 && params.prompt_logprobs)
      t.prompt_logprobs.emplace_back();  // token 0: none
    else
      t.prompt_logprobs_sent = true;
    if (tokenizer_)
      t.detok.emplace(*tokenizer_, params.skip_special_tokens, reqs[i]->prompt_token_ids);
    if (!params.stop.empty()) t.stops.emplace(params.stop, params.include_stop_str_in_output);
    try {
      scheduler_.add_request(std::move(reqs[i]));
    } catch (const Error&) {
      for (size_t j = 0; j < i; ++j) {  // all samples or none
        scheduler_.abort(ids[j]);
        tracked_.erase(ids[j]);
      }
      throw;
    }
    tracked_.emplace(ids[i], std::move(t));
  }
  children_.emplace(id, std::move(ids));
}

EngineOutput LlmEngine::make_output(const RequestOutput& o, Tracked& t,
                                    std::vector<SampleResult> lps, bool drop_last) {
  EngineOutput e;
  e.request_id = t.parent;
  e.index = t.index;
  e.new_token_ids = o.new_token_ids;
  e.logprobs = std::move(lps);
  e.finished = o.finished;
  e.finish_reason = o.finish_reason;
  e.stop_token = o.stop_token;
  e.num_prompt_tokens = o.num_prompt_tokens;
  e.num_cached_tokens = o.num_cached_tokens;
  e.first_scheduled = o.first_scheduled;
  if (!t.detok) return e;
  std::string text;
  // As vLLM's detokenizer: the eos or stop token that ended the request is not
  // part of the text unless include_stop_str_in_output.
  size_t n = o.new_token_ids.size();
  if (drop_last && !t.include_stop && n > 0) --n;
  for (size_t i = 0; i < n; ++i) text += t.detok->push(o.new_token_ids[i]);
  // A request that ends inside a character still shows it (as U+FFFD, as HF decode).
  if (o.finished) text += t.detok->finish();
  if (!t.stops) {
    e.new_text = std::move(text);
    return e;
  }
  text::StopStringMatcher::Output checked = t.stops->push(text);
  e.new_text = std::move(checked.text);
  if (checked.stopped) {
    if (!o.finished) scheduler_.finish_request(o.id, RequestStatus::kFinishedStopped);
    e.finished = true;
    e.finish_reason = FinishReason::kStop;
    e.stop_token.reset();
    e.stop_string = *t.stops->matched();
  } else if (o.finished) {
    e.new_text += t.stops->flush();
  }
  return e;
}

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

bool any_allowed(std::span<const uint32_t> words, int64_t vocab) {
  for (size_t w = 0; w < words.size(); ++w) {
    const int64_t valid = std::min<int64_t>(32, vocab - int64_t(w) * 32);
    const uint32_t bits = valid >= 32 ? ~0u : (1u << valid) - 1;
    if (words[w] & bits) return true;
  }
  return false;
}

}  // namespace

bool LlmEngine::append_forced_run(RequestOutput& o, const Request& r, TokenConstraint& c) {
  // Only where nothing but the constraint masks the next tokens: there the forced token
  // is what sampling would give.
  const SamplingParams& p = r.params;
  if (p.logprobs || p.allowed_token_ids || !p.bad_words_token_ids.empty() ||
      r.num_output_tokens() < p.min_tokens)
    return false;
  std::vector<int32_t> run = c.forced_tokens(kMaxForcedRun);
  size_t n = 0;
  while (n < run.size() && c.accept(run[n])) ++n;  // each is the only token allowed
  if (n == 0) return false;
  run.resize(n);
  scheduler_.append_outputs(o, run);
  forced_tokens_ += int64_t(n);
  return true;
}

void LlmEngine::fill_masks(vt::SampleBatch& batch,
                           std::span<const std::shared_ptr<TokenConstraint>> cs, int64_t vocab,
                           std::vector<std::string>& errors) {
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t k = 0; k < cs.size(); ++k) {
    if (!cs[k]) continue;
    const std::span<uint32_t> m = Sampler::mask_row(batch, batch.rows[k].logits_mask, vocab);
    try {
      cs[k]->fill_bitmask(m);
      if (!any_allowed(m, vocab)) errors[k] = "the constraint allows no token";
    } catch (const std::exception& e) {
      errors[k] = str_cat("the constraint failed: ", e.what());
    }
    // Sampled unconstrained (so the step goes on); the request then ends with the error.
    if (!errors[k].empty()) std::fill(m.begin(), m.end(), ~0u);
    ++mask_stats_.rows;
  }
  mask_stats_.fill_seconds += seconds_since(t0);
}

std::vector<EngineOutput> LlmEngine::step() {
  const SchedulerOutput out = scheduler_.schedule();
  if (out.empty()) return {};
  total_scheduled_tokens_ += out.total_num_scheduled_tokens;
  const StepPlan fb = build_step_plan(out, scheduler_.kv_cache().block_size());
  const int64_t vocab = executor_->vocab_size();
  std::vector<SamplerRow> rows;
  std::vector<std::shared_ptr<TokenConstraint>> constraints;  // per row; null: none
  for (int32_t b : fb.logits_requests) {
    const Request& r = *out.requests[b].request;
    SamplerRow row{&r.params, r.prompt_token_ids, r.output_token_ids, r.eos_token_ids};
    row.constrained = r.constraint != nullptr;
    rows.push_back(row);
    constraints.push_back(r.constraint);
  }
  // One sampling path: vt::sample where the logits are (on CUDA only ids and logprobs
  // cross to the host), with the uniforms the host Sampler would draw.
  StepSampling sampling{sampler_.device_batch(rows, vocab), {}};
  std::vector<std::string> mask_errors(rows.size());
  // However the step ends, the job (which writes sampling.batch and calls the
  // constraints) is over before they go.
  struct JoinMasks {
    MaskWorker& worker;
    ~JoinMasks() {
      try {
        worker.wait();
      } catch (...) {  // the step is already failing
      }
    }
  } join{mask_worker_};
  if (std::any_of(constraints.begin(), constraints.end(), [](const auto& c) { return c; })) {
    ++mask_stats_.steps;
    mask_worker_.start([&] { fill_masks(sampling.batch, constraints, vocab, mask_errors); });
    sampling.ready = [&] {
      const auto t0 = std::chrono::steady_clock::now();
      mask_worker_.wait();
      mask_stats_.wait_seconds += seconds_since(t0);
    };
  }
  StepOutput step = executor_->execute(fb, sampling);
  mask_worker_.wait();  // an executor that sampled nothing may not have called ready
  std::vector<SampleResult> samples = Sampler::results(step.samples, rows);
  VT_CHECK(step.prompt_logprobs.size() == fb.prompt_logprob_rows.size(),
           "engine: ", step.prompt_logprobs.size(), " prompt logprobs for ",
           fb.prompt_logprob_rows.size(), " rows");
  for (size_t k = 0; k < fb.prompt_logprob_rows.size(); ++k) {
    const PromptLogprobRow& row = fb.prompt_logprob_rows[k];
    auto it = tracked_.find(out.requests[row.request].request->id);
    VT_CHECK(it != tracked_.end(), "engine: prompt logprobs for an untracked request");
    Tracked& t = it->second;
    if (!t.prompt_logprobs_sent && int64_t(t.prompt_logprobs.size()) == row.position + 1)
      t.prompt_logprobs.emplace_back(std::move(step.prompt_logprobs[k]));
  }
  SampledTokens sampled;
  sampled.tokens.resize(out.requests.size());
  std::vector<int> sample_of(out.requests.size(), -1);
  for (size_t k = 0; k < samples.size(); ++k) {
    sampled.tokens[fb.logits_requests[k]] = {samples[k].token};
    sample_of[fb.logits_requests[k]] = static_cast<int>(k);
  }

  std::vector<EngineOutput> results;
  for (RequestOutput& o : scheduler_.update_from_output(out, sampled)) {
    auto it = tracked_.find(o.id);
    VT_CHECK(it != tracked_.end(), "engine: output for untracked request '", o.id, "'");
    const int k = sample_of[o.index];
    // The eos or stop token that the scheduler ended it with has no text.
    bool drop_last = o.finished && o.finish_reason == FinishReason::kStop;
    std::string error;
    if (k >= 0 && constraints[size_t(k)] && !o.new_token_ids.empty()) {
      TokenConstraint& c = *constraints[size_t(k)];
      if (!mask_errors[size_t(k)].empty()) {
        error = mask_errors[size_t(k)];
        o.new_token_ids.clear();  // sampled without its mask: not part of the output
      } else if (!c.accept(o.new_token_ids.back())) {
        error = str_cat("the constraint rejected token ", o.new_token_ids.back());
      } else if (!o.finished && c.terminated()) {
        scheduler_.finish_request(o.id, RequestStatus::kFinishedStopped);
        o.finished = true;
        o.finish_reason = FinishReason::kStop;
      }
      if (!error.empty()) {
        if (!o.finished) scheduler_.finish_request(o.id, RequestStatus::kFinishedError);
        o.finished = true;
        o.finish_reason = FinishReason::kError;
        o.stop_token.reset();
      }
    }
    if (config_.jump_forward && error.empty() && !o.finished && k >= 0 && constraints[size_t(k)] &&
        !o.new_token_ids.empty()) {
      if (append_forced_run(o, *out.requests[o.index].request, *constraints[size_t(k)]) &&
          o.finished)
        drop_last = o.finish_reason == FinishReason::kStop;
      if (!o.finished && constraints[size_t(k)]->terminated()) {
        scheduler_.finish_request(o.id, RequestStatus::kFinishedStopped);
        o.finished = true;
        o.finish_reason = FinishReason::kStop;
      }
    }
    std::vector<SampleResult> lps;
    if (k >= 0 && out.requests[o.index].request->params.logprobs && !o.new_token_ids.empty())
      lps.push_back(std::move(samples[k]));
    EngineOutput e = make_output(o, it->second, std::move(lps), drop_last && error.empty());
    if (!error.empty()) {  // over a stop string found in the same text
      e.finish_reason = FinishReason::kError;
      e.stop_string.clear();
      e.error = std::move(error);
    }
    Tracked& t = it->second;
    if (!t.prompt_logprobs_sent) {
      VT_CHECK(int64_t(t.prompt_logprobs.size()) == o.num_prompt_tokens, "engine: request '", o.id,
               "' has ", t.prompt_logprobs.size(), " prompt logprobs for ", o.num_prompt_tokens,
               " prompt tokens");
      e.prompt_logprobs = std::move(t.prompt_logprobs);
      t.prompt_logprobs_sent = true;
    }
    if (e.finished) {
      auto& siblings = children_.at(e.request_id);
      std::erase(siblings, o.id);
      if (siblings.empty()) children_.erase(e.request_id);
      tracked_.erase(it);
    }
    results.push_back(std::move(e));
  }
  return results;
}

bool LlmEngine::abort(const std::string& id) {
  auto it = children_.find(id);
  if (it == children_.end()) return false;
  for (const std::string& child : it->second) {
    scheduler_.abort(child);
    tracked_.erase(child);
  }
  children_.erase(it);
  return true;
}

}  // namespace vtllm::engine
