#include "io/weight_loader.h"

#include <array>
#include <cstring>
#include <memory>
#include <optional>

#include "base/error.h"
#include "io/dummy_weights.h"
#include "io/progress.h"
#include "io/weight_names.h"
#include "vt/ops/copy.h"

namespace vtllm::io {

namespace {

using Entry = Checkpoint::Entry;

std::string shape_str(const std::vector<int64_t>& s) { return vt::shape_str(s); }

// Where each parameter comes from, and every problem found on the way.
struct Plan {
  struct Source {
    std::string name;
    const Entry* entry;
  };
  std::map<std::string, Source> direct;
  // fused expert parameter -> [part][expert] (part 0 gate / 1 up for gate_up_proj, 0 for down_proj)
  std::map<std::string, std::array<std::vector<std::optional<Source>>, 2>> experts;
  std::vector<std::string> problems;
  LoadSummary summary;
};

std::string dtype_problem(const std::string& name, const SafetensorsTensor& t, vt::DType want) {
  if (!t.dtype) return str_cat("tensor '", name, "' has dtype ", t.st_dtype, ", which vtllm cannot hold");
  if (*t.dtype != want && !(vt::is_floating(*t.dtype) && vt::is_floating(want)))
    return str_cat("tensor '", name, "' has dtype ", t.st_dtype, ", expected ", safetensors_dtype_name(want));
  return "";
}

void check_tensor(Plan& plan, const std::string& name, const SafetensorsTensor& t, const std::vector<int64_t>& shape,
                  vt::DType dtype, const std::string& what) {
  if (t.shape != shape)
    plan.problems.push_back(str_cat("tensor '", name, "' has shape ", shape_str(t.shape), ", expected ",
                                    shape_str(shape), what));
  std::string d = dtype_problem(name, t, dtype);
  if (!d.empty()) plan.problems.push_back(d);
}

Plan make_plan(const Checkpoint& ck, const ModelConfig& config, const std::vector<ParamSpec>& specs,
               bool language_model_only) {
  Plan plan;
  std::map<std::string, const ParamSpec*> by_name;
  for (const ParamSpec& s : specs) by_name[s.name] = &s;
  const int64_t n_experts = config.text.moe ? config.text.moe->num_experts : 0;

  for (const auto& [name, entry] : ck.tensors()) {
    const WeightName w = map_weight_name(name, config, language_model_only);
    if (w.kind == WeightName::Kind::kSkip) {
      plan.summary.skipped[w.reason] += 1;
      continue;
    }
    if (!by_name.count(w.param)) {
      plan.problems.push_back(str_cat("unexpected tensor '", name, "' (", config.architecture_class,
                                      " has no parameter '", w.param, "')"));
      continue;
    }
    if (w.kind == WeightName::Kind::kParam) {
      auto [it, fresh] = plan.direct.emplace(w.param, Plan::Source{name, &entry});
      if (!fresh)
        plan.problems.push_back(str_cat("parameter '", w.param, "' appears twice, as '", it->second.name,
                                        "' and '", name, "'"));
      continue;
    }
    if (w.expert >= n_experts) {
      plan.problems.push_back(str_cat("unexpected tensor '", name, "' (expert ", w.expert, " of ", n_experts, ")"));
      continue;
    }
    auto& parts = plan.experts[w.param];
    const size_t part = w.part == WeightName::ExpertPart::kUp ? 1 : 0;
    for (auto& p : parts) p.resize(size_t(n_experts));
    auto& slot = parts[part][size_t(w.expert)];
    if (slot) {
      plan.problems.push_back(str_cat("expert tensor '", name, "' appears twice, also as '", slot->name, "'"));
      continue;
    }
    slot = Plan::Source{name, &entry};
  }

  for (const ParamSpec& s : specs) {
    auto d = plan.direct.find(s.name);
    auto e = plan.experts.find(s.name);
    if (d != plan.direct.end() && e != plan.experts.end()) {
      plan.problems.push_back(str_cat("parameter '", s.name, "' is in the checkpoint both fused ('",
                                      d->second.name, "') and per expert"));
    } else if (d != plan.direct.end()) {
      check_tensor(plan, d->second.name, *d->second.entry->tensor, s.shape, s.dtype, "");
    } else if (e != plan.experts.end()) {
      // gate_up_proj [E, 2I, H] <- gate/up [I, H]; down_proj [E, H, I] <- down [H, I].
      const bool gate_up = s.name.ends_with("gate_up_proj");
      const std::vector<int64_t> piece =
          gate_up ? std::vector<int64_t>{s.shape[1] / 2, s.shape[2]} : std::vector<int64_t>{s.shape[1], s.shape[2]};
      const char* part_names[2] = {gate_up ? "gate_proj" : "down_proj", "up_proj"};
      for (size_t part = 0; part < (gate_up ? 2u : 1u); ++part) {
        for (int64_t x = 0; x < n_experts; ++x) {
          const auto& src = e->second[part][size_t(x)];
          if (!src) {
            plan.problems.push_back(str_cat("missing tensor 'experts.", x, ".", part_names[part],
                                            ".weight' for '", s.name, "'"));
          } else {
            check_tensor(plan, src->name, *src->entry->tensor, piece, s.dtype, str_cat(" (a piece of '", s.name, "')"));
          }
        }
      }
    } else {
      plan.problems.push_back(str_cat("missing tensor '", s.name, "' ", shape_str(s.shape)));
    }
  }
  return plan;
}

// A CPU tensor viewing the checkpoint bytes in place (read-only memory).
vt::Tensor mapped_view(const Entry& e) {
  const auto& map = e.file->mapping();
  std::shared_ptr<void> keepalive(map, const_cast<MappedFile*>(map.get()));
  return vt::Tensor::from_blob(const_cast<uint8_t*>(e.file->data(*e.tensor)), e.tensor->shape, *e.tensor->dtype,
                               vt::Device::cpu(), std::move(keepalive));
}

class Placer {
 public:
  Placer(vt::Stream& stream, vt::Device device, LoadSummary& summary)
      : stream_(stream), device_(device), summary_(summary) {}

  vt::Tensor place(const Entry& e, const ParamSpec& spec) {
    vt::Tensor view = mapped_view(e);
    const bool aligned = reinterpret_cast<uintptr_t>(view.data_ptr()) % view.itemsize() == 0;
    if (view.dtype() != spec.dtype) {
      summary_.converted += 1;
      return to_target(vt::to_dtype(cpu(), view, spec.dtype));
    }
    if (device_.is_cpu()) {
      if (aligned) {
        summary_.zero_copy += 1;
        return view;
      }
      vt::Tensor out = vt::Tensor::empty(view.shape(), view.dtype(), vt::Device::cpu());
      std::memcpy(out.data_ptr(), view.data_ptr(), view.nbytes());
      return out;
    }
    return vt::to_device(stream_, view, device_);  // straight from the mapping
  }

  // Stacks per-expert pieces into the fused [E, ...] parameter.
  vt::Tensor fuse(const std::array<std::vector<std::optional<Plan::Source>>, 2>& parts, const ParamSpec& spec) {
    vt::Tensor fused = vt::Tensor::empty(spec.shape, spec.dtype, vt::Device::cpu());
    const bool gate_up = spec.name.ends_with("gate_up_proj");
    const int64_t rows = gate_up ? spec.shape[1] / 2 : spec.shape[1];
    for (size_t e = 0; e < parts[0].size(); ++e) {
      for (size_t part = 0; part < (gate_up ? 2u : 1u); ++part) {
        vt::Tensor dst = fused.select(0, int64_t(e)).slice(0, int64_t(part) * rows, int64_t(part + 1) * rows);
        vt::copy(cpu(), mapped_view(*parts[part][e]->entry), dst);
      }
    }
    summary_.fused += 1;
    return to_target(fused);
  }

 private:
  // A CPU temporary to the device; synchronised because the temporary dies next.
  vt::Tensor to_target(const vt::Tensor& cpu_tensor) {
    if (device_.is_cpu()) return cpu_tensor;
    vt::Tensor t = vt::to_device(stream_, cpu_tensor, device_);
    stream_.synchronize();
    return t;
  }
  vt::Stream& cpu() {
    if (stream_.device().is_cpu()) return stream_;
    if (!cpu_stream_) cpu_stream_ = std::make_unique<vt::Stream>(vt::Device::cpu());
    return *cpu_stream_;
  }

  vt::Stream& stream_;
  vt::Device device_;
  LoadSummary& summary_;
  std::unique_ptr<vt::Stream> cpu_stream_;
};

bool want_progress(LoadOptions::Progress p) {
  return p == LoadOptions::Progress::kAlways ||
         (p == LoadOptions::Progress::kAuto && ProgressBar::stderr_is_terminal());
}

}  // namespace

LoadFormat load_format_from_name(const std::string& name, const std::string& what) {
  if (name == "auto") return LoadFormat::kAuto;
  if (name == "dummy") return LoadFormat::kDummy;
  VT_THROW(what, ": unknown load format '", name, "' (expected auto or dummy)");
}

int64_t LoadSummary::skipped_total() const {
  int64_t n = 0;
  for (const auto& [reason, count] : skipped) n += count;
  return n;
}

std::string LoadSummary::str() const {
  std::string s = str_cat("loaded ", loaded, " tensors (", bytes, " bytes; ", zero_copy, " zero-copy, ", converted,
                          " converted, ", fused, " fused from per-expert tensors), skipped ", skipped_total());
  for (const auto& [reason, count] : skipped) s += str_cat("; ", count, " ", reason);
  return s;
}

int64_t ParamSpec::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

ParamTotals param_totals(const std::vector<ParamSpec>& specs) {
  ParamTotals t;
  for (const ParamSpec& p : specs) {
    t.tensors += 1;
    if (__builtin_add_overflow(t.parameters, p.numel(), &t.parameters))
      VT_THROW("the model has more than 2^63 parameters");
    t.bytes[p.dtype] += uint64_t(p.numel()) * vt::dtype_size(p.dtype);
  }
  return t;
}

const vt::Tensor& Weights::at(const std::string& name) const {
  auto it = tensors.find(name);
  if (it == tensors.end()) VT_THROW("no weight named '", name, "'");
  return it->second;
}

Weights load_weights(vt::Stream& stream, const Checkpoint& ck, const ModelConfig& config,
                     const std::vector<ParamSpec>& specs, const LoadOptions& options) {
  VT_CHECK(stream.device().is_cpu() || stream.device() == options.device, "load_weights: a ",
           stream.device().str(), " stream cannot place weights on ", options.device.str());
  Plan plan = make_plan(ck, config, specs, options.language_model_only);
  if (!plan.problems.empty()) {
    std::string msg = str_cat(ck.dir(), ": checkpoint does not match ", config.architecture_class, " (",
                              plan.problems.size(), " problem", plan.problems.size() == 1 ? "" : "s", "):");
    for (const std::string& p : plan.problems) msg += "\n  " + p;
    throw Error(msg);
  }

  Weights w;
  w.summary = plan.summary;
  uint64_t total = 0, done = 0;
  for (const ParamSpec& s : specs) total += uint64_t(s.numel()) * vt::dtype_size(s.dtype);
  ProgressBar bar("loading weights", total, want_progress(options.progress));
  Placer placer(stream, options.device, w.summary);
  for (const ParamSpec& s : specs) {
    auto d = plan.direct.find(s.name);
    vt::Tensor t = d != plan.direct.end() ? placer.place(*d->second.entry, s) : placer.fuse(plan.experts.at(s.name), s);
    done += t.nbytes();
    w.summary.loaded += 1;
    w.summary.bytes += t.nbytes();
    w.tensors.emplace(s.name, std::move(t));
    bar.update(done);
  }
  stream.synchronize();  // device copies read the mapping; finish them before it may close
  bar.finish();
  return w;
}

Weights load_model_weights(vt::Stream& stream, const std::string& dir, const ModelConfig& config,
                           const std::vector<ParamSpec>& specs, const LoadOptions& options) {
  if (options.format == LoadFormat::kDummy) return dummy_weights(stream, specs, options);
  const Checkpoint ck = Checkpoint::open(dir);
  return load_weights(stream, ck, config, specs, options);
}

}  // namespace vtllm::io
