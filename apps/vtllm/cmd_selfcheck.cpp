// vtllm selfcheck: runs every vt op on random inputs against its double-precision
// reference (vt/check/harness.h) on the CPU, and on every visible GPU for the ops
// that have a CUDA arm; prints one table row per check. Exit 0 only if all pass.
#include <cstdio>
#include <string>
#include <vector>

#include "args.h"
#include "commands.h"
#include "vt/check/harness.h"
#include "vt/device.h"
#include "vt/stream.h"

namespace vtllm::cli {

int cmd_selfcheck(int argc, char** argv) {
  Args args(argc, argv, {"device", "seed"}, {"help"});
  if (args.has("help")) {
    std::printf(
        "usage: vtllm selfcheck [--device cpu|cuda|cuda:N|all] [--seed N]\n\n"
        "Runs every op on random inputs against a double-precision reference and prints\n"
        "a table. --device all (the default) checks the CPU and every visible GPU.\n");
    return 0;
  }
  std::string which = args.get_or("device", "all");
  uint64_t seed = uint64_t(args.get_int("seed", 1234));
  std::vector<vt::Device> devices;
  if (which == "all") {
    devices.push_back(vt::Device::cpu());
    for (int i = 0; i < vt::cuda_device_count(); ++i) devices.push_back(vt::Device::cuda(i));
  } else {
    devices.push_back(vt::device_from_name(which));
  }

  int failed = 0, passed = 0, skipped = 0;
  std::printf("%-16s %-7s %-62s %10s %10s  %s\n", "op", "device", "config", "max err", "tol", "result");
  for (const vt::Device& d : devices) {
    vt::Stream s(d);
    for (const vt::check::Result& r : vt::check::run_all(s, seed)) {
      const char* verdict = r.skipped ? "skip" : r.passed ? "ok" : "FAIL";
      std::printf("%-16s %-7s %-62s %10.2e %10.2e  %s%s%s\n", r.op.c_str(), d.str().c_str(),
                  r.config.c_str(), r.err, r.tol, verdict, r.note.empty() ? "" : ": ",
                  r.note.c_str());
      (r.skipped ? skipped : r.passed ? passed : failed)++;
    }
  }
  if (vt::cuda_device_count() == 0 && which == "all")
    std::printf("(no GPU visible: CUDA ops not checked)\n");
  std::printf("selfcheck: %d passed, %d failed, %d skipped (no arm on that backend)\n", passed,
              failed, skipped);
  return failed == 0 && passed > 0 ? 0 : 1;
}

}  // namespace vtllm::cli
