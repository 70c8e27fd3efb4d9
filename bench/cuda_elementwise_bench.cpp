// CUDA elementwise and gather benchmarks (src/vt/cuda/elementwise/, the embedding and
// argmax of src/vt/cuda/sampling/sampling.cu): the copy ceiling itself, silu_and_mul at
// the Qwen3.6-27B MLP width, and the single-row kernels of a 9B-shape decode step (the
// embedding row by a device id, greedy sampling's argmax over a 151936 vocabulary), warm
// L2: what the decode rows cost is latency, so their bandwidth column is far below the
// ceiling by nature; it shows how far. Timing, data and ceilings: bench/cuda_bench.h.
//
//   cuda_elementwise_bench   (needs a GPU; exits 0 with a note without one)
#include <string>

#include "cuda_bench.h"
#include "vt/ops/activation.h"
#include "vt/ops/embedding.h"
#include "vt/ops/sampling.h"

namespace {

using vtbench::g_gpu;
using vtbench::i32;
using vtbench::rand_gpu;
using vtbench::row;
using vtbench::time_ms;

void bench_silu_and_mul() {
  vt::Tensor gu = rand_gpu({4096, 2 * 17408}, vt::DType::kBF16),
             h = rand_gpu({4096, 17408}, vt::DType::kBF16);
  row("silu_and_mul bf16 [4096, 2 x 17408]", time_ms([&] { vt::silu_and_mul(*g_gpu, gu, h); }),
      3.0 * 4096 * 17408 * 2, 0);
}

void bench_decode_gathers() {
  const int64_t hidden = 4096, vocab = 151936;
  {
    vt::Tensor table = rand_gpu({vocab, hidden}, vt::DType::kBF16);
    vt::Tensor out = rand_gpu({1, hidden}, vt::DType::kBF16);
    vt::Tensor ids = vt::Tensor::empty({1}, vt::DType::kI32, g_gpu->device());
    vt::Tensor host_id = i32({123456});
    vt::copy(*g_gpu, host_id, ids);
    row("embedding bf16 [1, 4096] (device id)",
        time_ms([&] { vt::embedding(*g_gpu, table, ids, out); }), 2.0 * double(hidden) * 2, 0);
  }
  // Greedy sampling's pick: bf16 logits as the lm_head writes them.
  for (int64_t rows : {int64_t(1), int64_t(8), int64_t(64)})
    for (vt::DType dt : {vt::DType::kBF16, vt::DType::kF32}) {
      if (dt == vt::DType::kF32 && rows != 64) continue;
      vt::Tensor logits = rand_gpu({rows, vocab}, dt);
      vt::Tensor ids = vt::Tensor::empty({rows}, vt::DType::kI32, g_gpu->device());
      row(std::string("argmax ") + vt::dtype_name(dt) + " [" + std::to_string(rows) + ", 151936]",
          time_ms([&] { vt::argmax(*g_gpu, logits, ids); }),
          double(rows * vocab) * double(vt::dtype_size(dt)), 0);
    }
}

}  // namespace

int main() {
  if (!vtbench::have_gpu("cuda_elementwise_bench")) return 0;
  vt::Stream gpu(vt::Device::cuda(0));
  vtbench::use_gpu("cuda_elementwise_bench", gpu);
  vtbench::header("op (Qwen3.6-27B / 9B shapes)");
  vtbench::copy_ceiling_row();
  bench_silu_and_mul();
  bench_decode_gathers();
  return 0;
}
