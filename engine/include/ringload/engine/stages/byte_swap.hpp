// engine/include/ringload/engine/stages/byte_swap.hpp
//
// Big-endian data (torch zip saved with byteorder 'big'): reverses each element's bytes (each
// half's, for a complex type). Placed after a host destination, it swaps the whole record
// there once its last piece arrived, so elements may straddle slots; placed before a device
// destination, it swaps each piece in its slot before the upload, and an element split
// between two slots fails the load.
//
//     stages.push_back(std::make_unique<HostDestination>(bytes));
//     stages.push_back(std::make_unique<ByteSwap>(DType::float32, length, bytes));   // host
//     stages.push_back(std::make_unique<ByteSwap>(DType::float32, length, nullptr)); // before a device
#pragma once

#include "ringload/dtype.hpp"
#include "ringload/engine/stage.hpp"

#include <atomic>

namespace ringload {

class ByteSwap final : public Stage {
public:
    // `whole_record`: the record's host destination, swapped once complete; null: swap pieces.
    ByteSwap(DType dtype, std::uint64_t data_length_bytes, std::byte* whole_record)
        : dtype_(dtype), data_length_bytes_(data_length_bytes), whole_record_(whole_record) {}

    std::string_view name() const override { return "byte_swap"; }
    Result<void> process(Piece piece) override;
    bool accepts_bytes_in_place() const noexcept override { return whole_record_ != nullptr; }

private:
    DType dtype_;
    std::uint64_t data_length_bytes_;
    std::byte* whole_record_;
    std::atomic<std::uint64_t> received_{0};
};

// Reverses the bytes of each element of `bytes` (a complex type: of each half).
void swap_element_bytes(std::byte* bytes, std::uint64_t length, DType dtype) noexcept;

} // namespace ringload
