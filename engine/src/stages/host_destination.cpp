// engine/src/stages/host_destination.cpp
#include "ringload/engine/stages/host_destination.hpp"

#include "ringload/engine/stream_copy.hpp"

#include <cstring>

namespace ringload {

Result<void> HostDestination::process(Piece piece) {
    std::byte* destination = destination_ + piece.begin;
    if (!piece.at_destination) {
        copy_to_destination(destination, piece.bytes, piece.length());
        piece.bytes = destination;
        piece.at_destination = true;
    }
    // Read from here on, also bytes read in place or decrypted here (their chunk still counts a
    // ring slot): the slot goes back now, so a long in-order hash never stalls the reads.
    piece.keep_alive.reset();
    return pass(std::move(piece));
}

Result<void> HostDestination::finish() {
    if (zero_fill_bytes_ > 0) {
        std::memset(destination_, 0, zero_fill_bytes_); // meta tensors load as zeros (§8)
    }
    return {};
}

Result<std::shared_ptr<std::byte>> HostDestination::staging(std::size_t length_bytes) {
    (void)length_bytes;
    return fail(errc::invalid_argument, "a host destination gathers in place, not in staging");
}

} // namespace ringload
