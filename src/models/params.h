// How a model's layers name the parameters they hold (DESIGN §5).
//
// Every layer asks a ParamSink for each of its parameters, by state-dict name and
// shape, in its constructor; nothing else in the tree lists them. Two sinks serve
// the same constructors:
//   - ParamDeclaration records each name with its shape and the config's weight
//     dtype and hands back an undefined tensor: the list `vtllm inspect` counts, the
//     checkpoint loader must find and dummy weights make (models/registry.h
//     declare_params);
//   - WeightStore (models/layers/weights.h) hands back the loaded tensors.
// A layer built on a declaring sink holds undefined tensors and must not run; layers
// skip load-time work on weights when declaring() is true.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "io/weight_loader.h"
#include "vt/device.h"
#include "vt/tensor.h"

namespace vtllm::models {

class ParamSink {
 public:
  virtual ~ParamSink() = default;

  // The parameter `name` (full state-dict name) with exactly `shape`. Each
  // parameter can be taken once.
  virtual vt::Tensor take(const std::string& name, const vt::Shape& shape) = 0;
  // The [rows, cols] parameters `parts` (one dtype) stacked by rows in the order
  // given, as one [sum of rows, cols] tensor: projections that read the same input
  // run as one linear (gate/up, q/k/v, the GDN input set).
  struct Part {
    std::string name;
    int64_t rows;
  };
  virtual vt::Tensor take_stacked(const std::vector<Part>& parts, int64_t cols) = 0;
  // True when the tensors handed out are undefined (a declaration).
  virtual bool declaring() const = 0;
  // Where the tensors live (a declaration: the CPU).
  virtual vt::Device device() const = 0;
};

// Records what is taken. Throws vtllm::Error when a name is taken twice or a shape
// has a negative or overflowing extent.
class ParamDeclaration final : public ParamSink {
 public:
  explicit ParamDeclaration(vt::DType dtype) : dtype_(dtype) {}

  vt::Tensor take(const std::string& name, const vt::Shape& shape) override;
  vt::Tensor take_stacked(const std::vector<Part>& parts, int64_t cols) override;
  bool declaring() const override { return true; }
  vt::Device device() const override { return vt::Device::cpu(); }

  // In the order taken.
  const std::vector<io::ParamSpec>& specs() const { return specs_; }

 private:
  vt::DType dtype_;
  std::vector<io::ParamSpec> specs_;
  std::set<std::string, std::less<>> names_;
};

}  // namespace vtllm::models
