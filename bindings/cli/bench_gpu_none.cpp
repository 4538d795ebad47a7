// bindings/cli/bench_gpu_none.cpp: the build without a CUDA toolkit.
#include "bench_gpu.hpp"

namespace ringload::cli {

Result<GpuCopyRates> measure_gpu_copy_rates() {
    return fail(errc::unsupported, "built without a CUDA toolkit (RINGLOAD_WITH_CUDA)");
}

} // namespace ringload::cli
