#include "vt/device.h"

#include <cstdlib>

#include "base/error.h"
#include "vt/cuda/api.h"

namespace vt {

std::string Device::str() const {
  return is_cpu() ? std::string("cpu") : "cuda:" + std::to_string(index);
}

Device device_from_name(const std::string& name) {
  if (name == "cpu") return Device::cpu();
  if (name == "cuda") return Device::cuda(0);
  if (name.rfind("cuda:", 0) == 0 && name.size() > 5) {
    char* end = nullptr;
    long i = std::strtol(name.c_str() + 5, &end, 10);
    if (*end == '\0' && i >= 0 && i < 1024) return Device::cuda(int(i));
  }
  VT_THROW("unknown device '", name, "' (expected cpu, cuda or cuda:N)");
}

int cuda_device_count() { return cuda::device_count(); }

}  // namespace vt
