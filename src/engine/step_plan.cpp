#include "engine/step_plan.h"

#include <algorithm>

#include "base/error.h"
#include "engine/block_pool.h"

namespace vtllm::engine {

StepPlan build_step_plan(const SchedulerOutput& output, int block_size) {
  VT_CHECK(block_size > 0, "forward batch: block_size = ", block_size);
  StepPlan fb;
  fb.block_size = block_size;
  const size_t b_count = output.requests.size();
  size_t max_blocks = 0;
  bool any_state = false, any_mm = false;
  for (const ScheduledRequest& s : output.requests) {
    max_blocks = std::max(max_blocks, s.block_ids.size());
    any_state = any_state || s.state_slot.has_value();
    any_mm = any_mm || s.request->multimodal();
  }
  // MRoPE rows, filled per request below; flattened to [3, T] at the end.
  std::vector<int64_t> rows_hw[2];
  fb.max_blocks_per_seq = static_cast<int32_t>(max_blocks);
  fb.block_table.assign(b_count * max_blocks, kNullBlock);
  fb.query_start_loc.push_back(0);
  for (size_t b = 0; b < b_count; ++b) {
    const ScheduledRequest& s = output.requests[b];
    const Request& r = *s.request;
    const int64_t begin = s.num_computed_tokens, end = begin + s.num_new_tokens;
    VT_CHECK(end <= r.num_tokens(), "forward batch: request '", r.id, "' schedules tokens up to ",
             end, " of ", r.num_tokens());
    VT_CHECK(static_cast<int64_t>(s.block_ids.size()) * block_size >= end,
             "forward batch: request '", r.id, "' has ", s.block_ids.size(), " blocks for ", end,
             " tokens");
    const int32_t first_row = static_cast<int32_t>(fb.token_ids.size());
    if (r.params.prompt_logprobs) {
      for (int64_t pos = begin; pos < std::min(end, r.num_prompt_tokens() - 1); ++pos)
        fb.prompt_logprob_rows.push_back({static_cast<int32_t>(first_row + pos - begin),
                                          static_cast<int32_t>(b), pos, r.all_token_ids[pos + 1],
                                          *r.params.prompt_logprobs});
    }
    const MultimodalPrompt* mm = r.mm.get();
    const int64_t P = r.num_prompt_tokens();
    if (mm)
      VT_CHECK(int64_t(mm->mrope_positions.size()) == 3 * P, "forward batch: request '", r.id,
               "' has ", mm->mrope_positions.size(), " MRoPE positions for ", P, " prompt tokens");
    for (int64_t pos = begin; pos < end; ++pos) {
      fb.token_ids.push_back(r.all_token_ids[pos]);
      if (!any_mm) {
        fb.positions.push_back(pos);
      } else if (mm && pos < P) {
        fb.positions.push_back(mm->mrope_positions[size_t(pos)]);
        rows_hw[0].push_back(mm->mrope_positions[size_t(P + pos)]);
        rows_hw[1].push_back(mm->mrope_positions[size_t(2 * P + pos)]);
      } else {
        const int64_t p = mm ? multimodal::mrope_decode_position(pos, mm->mrope_delta) : pos;
        fb.positions.push_back(p);
        rows_hw[0].push_back(p);
        rows_hw[1].push_back(p);
      }
      fb.slot_mapping.push_back(int64_t{s.block_ids[pos / block_size]} * block_size +
                                pos % block_size);
    }
    if (mm) {  // placeholder rows of this chunk and the feature rows they take
      for (const MultimodalItem& it : mm->items) {
        int64_t feature = 0;
        for (const multimodal::PlaceholderRun& run : it.placement.runs) {
          const int64_t lo = std::max(begin, run.start), hi = std::min(end, run.start + run.length);
          if (lo < hi)
            fb.embeds.push_back({static_cast<int32_t>(first_row + lo - begin),
                                 static_cast<int32_t>(hi - lo), feature + (lo - run.start),
                                 it.input});
          feature += run.length;
        }
      }
    }
    fb.query_start_loc.push_back(static_cast<int32_t>(fb.token_ids.size()));
    fb.seq_lens.push_back(static_cast<int32_t>(end));
    fb.context_lens.push_back(static_cast<int32_t>(begin));
    std::copy(s.block_ids.begin(), s.block_ids.end(), fb.block_table.begin() + b * max_blocks);
    if (any_state) {
      VT_CHECK(s.state_slot.has_value(), "forward batch: request '", r.id,
               "' has no state slot in a hybrid batch");
      fb.state_slots.push_back(*s.state_slot);
    }
    if (s.state_save)
      fb.state_saves.push_back({static_cast<int32_t>(b), static_cast<int32_t>(s.state_save->offset),
                                s.state_save->slot});
    if (s.samples()) {
      fb.logits_indices.push_back(fb.query_start_loc.back() - 1);
      fb.logits_requests.push_back(static_cast<int32_t>(b));
    }
  }
  if (any_mm) {
    fb.position_rows = 3;
    fb.positions.insert(fb.positions.end(), rows_hw[0].begin(), rows_hw[0].end());
    fb.positions.insert(fb.positions.end(), rows_hw[1].begin(), rows_hw[1].end());
  }
  std::sort(fb.embeds.begin(), fb.embeds.end(),
            [](const EmbedSlice& a, const EmbedSlice& b) { return a.row < b.row; });
  fb.state_copies_before = output.state_copies_before;
  fb.state_copies_after = output.state_copies_after;
  fb.encoder_frees = output.encoder_frees;
  fb.encoder_inputs = output.encoder_inputs;
  return fb;
}

}  // namespace vtllm::engine
