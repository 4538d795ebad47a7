// gpu/cuda_link.hpp
//
// The DeviceLink of one CUDA device: uploads go round-robin over a small pool of streams, and
// a completion thread waits for each copy's event, in the order they were queued, and only
// then drops what kept its source bytes alive (the ring slot) — the scheduler thread never
// waits for a copy. A failed copy still releases its slot (so a load fails, never hangs) and
// is reported by synchronize().
//
//     RL_TRY(link, gpu::open_device_link(0));
#pragma once

#include "ringload/engine/device_link.hpp"

#include <memory>

namespace ringload::gpu {

inline constexpr int upload_stream_count = 4;

Result<std::unique_ptr<DeviceLink>> open_device_link(int ordinal);

} // namespace ringload::gpu
