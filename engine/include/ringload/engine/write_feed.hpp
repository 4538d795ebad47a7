// engine/include/ringload/engine/write_feed.hpp
//
// A write whose tensors' bytes are not all in memory when it starts (`ringload convert`
// streams a model from one file into another): a feed brings each tensor's bytes in just
// before the writer reads them and lets them go once it is through, so memory holds a
// window of the model, never all of it.
//
//  file:      [hdr][t0 ......][t1 ..][t2 ...........][t3 ..]
//  written:   |<----- done ----->|   (windows and side jobs)
//  in memory:                 [t1 ..][t2 ...........]        loaded ahead, within a budget
//
// The writer says once where in the file it reads each tensor (its extent: from its first
// header byte or side job to its last data byte; extents follow file order and do not
// overlap). The executor asks, before filling a window, whether every tensor whose extent
// begins before the window's end is in place, and says how far the file is finished.
// Thread: every call on the write's loop thread; the feed may load on threads of its own.
#pragma once

#include "ringload/error.hpp"

#include <cstdint>
#include <vector>

namespace ringload {

struct FileExtent {
    std::uint64_t begin_bytes = 0;
    std::uint64_t end_bytes = 0; // begin == end: the writer never reads the tensor's bytes
};

class WriteFeed {
public:
    virtual ~WriteFeed() = default;
    // Before the first window: extents[i] belongs to the writer's tensor i (the order given).
    virtual Result<void> start(std::vector<FileExtent> extents) = 0;
    // Whether the bytes of every tensor whose extent begins before `offset_bytes` are in place.
    // Never blocks; an error (the feed's source failed) ends the write with it.
    virtual Result<bool> ready_before(std::uint64_t offset_bytes) = 0;
    // Everything the writer does before `offset_bytes` is done (windows written, side jobs
    // that start there ended): tensors whose extents end there may go.
    virtual void done_before(std::uint64_t offset_bytes) = 0;
};

} // namespace ringload
