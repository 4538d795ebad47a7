// gpu/cuda_probe.hpp
//
// Whether CUDA can be used here: a toolkit at build time is not a driver or a device at run
// time. The answer names what is missing, for `--device cuda` errors and for test skips.
#pragma once

#include "ringload/error.hpp"

namespace ringload::gpu {

// The number of usable CUDA devices, or an error that says why there are none.
Result<int> cuda_device_count();

} // namespace ringload::gpu
