// engine/include/ringload/engine/stages/host_destination.hpp
//
// A record's destination in host memory (the load's arena, or memory the caller gave). Each
// piece is copied there with non-temporal stores (stream_copy.hpp), unless it is there already
// (read in place, or decrypted straight into it); the stages after it read it there, so the
// slot goes back to the ring as soon as the copy is done.
//
//     stages.push_back(std::make_unique<HostDestination>(tensor_bytes, 0));
//
// Thread: process() from any worker, for disjoint pieces.
#pragma once

#include "ringload/engine/stage.hpp"

namespace ringload {

class HostDestination final : public Destination {
public:
    // `zero_fill_bytes`: written as zeros at finish (meta tensors, stored without data).
    HostDestination(std::byte* destination, std::uint64_t zero_fill_bytes = 0)
        : destination_(destination), zero_fill_bytes_(zero_fill_bytes) {}

    std::string_view name() const override { return "host"; }
    Result<void> process(Piece piece) override;
    Result<void> finish() override;
    bool accepts_bytes_in_place() const noexcept override { return true; }
    std::byte* host_place(std::uint64_t offset_bytes) const noexcept override { return destination_ + offset_bytes; }
    Result<std::shared_ptr<std::byte>> staging(std::size_t length_bytes) override;

private:
    std::byte* destination_;
    std::uint64_t zero_fill_bytes_;
};

} // namespace ringload
