// engine/include/ringload/memory_backing.hpp: whether fresh memory on this machine may have
// to wait for a hypervisor on its first touch.
//
// A guest with virtio-balloon free page reporting hands the pages it frees back to its host;
// touching them again faults on the host too, which on this project's Firecracker VMs made a
// first write several times slower than the guest's own zeroing. Where that is so, a host
// load faults its destination memory in from a background thread even when a network source
// writes into it (ringload.hpp, Prefault::automatic). GPU machines with a passed-through
// device pin all guest memory, and bare metal has no host: there the answer is false.
//
// Thread: any.
#pragma once

#include <string>

namespace ringload {

// Reads `sysfs_virtio_devices` (/sys/bus/virtio/devices): true when a virtio-balloon device
// (device id 5) offers free page reporting (feature bit 5, VIRTIO_BALLOON_F_REPORTING).
bool virtio_balloon_reports_free_pages(const std::string& sysfs_virtio_devices);

// virtio_balloon_reports_free_pages on this machine's sysfs, read once per process.
bool fresh_memory_may_wait_for_host();

} // namespace ringload
