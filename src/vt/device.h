// vt::Device: where a tensor's memory lives and where an op runs.
#pragma once

#include <cstdint>
#include <string>

namespace vt {

enum class DeviceKind : uint8_t { kCPU, kCUDA };

struct Device {
  DeviceKind kind = DeviceKind::kCPU;
  int index = 0;  // the CUDA ordinal; always 0 for the CPU

  static Device cpu() { return Device{DeviceKind::kCPU, 0}; }
  static Device cuda(int i = 0) { return Device{DeviceKind::kCUDA, i}; }
  bool is_cpu() const { return kind == DeviceKind::kCPU; }
  bool is_cuda() const { return kind == DeviceKind::kCUDA; }
  bool operator==(const Device&) const = default;
  std::string str() const;  // "cpu", "cuda:0"
};

// Parses "cpu", "cuda" or "cuda:N"; throws vtllm::Error naming the text otherwise.
Device device_from_name(const std::string& name);

// How many CUDA devices this process can use: 0 when vtllm was built without
// CUDA or when no GPU (or driver) is present. Never throws.
int cuda_device_count();

}  // namespace vt
