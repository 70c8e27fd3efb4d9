// The project's version, as set in the top-level CMakeLists.txt.
#pragma once

namespace vtllm {
const char* version();     // "0.1.0"
const char* build_info();  // compiler, build type, backends compiled in
}  // namespace vtllm
