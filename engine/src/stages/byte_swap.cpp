// engine/src/stages/byte_swap.cpp
#include "ringload/engine/stages/byte_swap.hpp"

#include <algorithm>
#include <string>

namespace ringload {
namespace {

std::size_t swap_unit(DType dtype) {
    const std::size_t item = itemsize(dtype);
    const bool complex = dtype == DType::complex32 || dtype == DType::complex64 || dtype == DType::complex128;
    return complex ? item / 2 : item;
}

} // namespace

void swap_element_bytes(std::byte* bytes, std::uint64_t length, DType dtype) noexcept {
    const std::size_t unit = swap_unit(dtype);
    if (unit <= 1) {
        return;
    }
    for (std::uint64_t at = 0; at + unit <= length; at += unit) {
        std::reverse(bytes + at, bytes + at + unit);
    }
}

Result<void> ByteSwap::process(Piece piece) {
    const std::uint64_t length = piece.length();
    if (whole_record_ != nullptr) {
        if (received_.fetch_add(length) + length == data_length_bytes_) {
            swap_element_bytes(whole_record_, data_length_bytes_, dtype_);
        }
        return pass(std::move(piece));
    }
    const std::size_t unit = swap_unit(dtype_);
    if (piece.begin % unit != 0 || length % unit != 0) {
        return fail(errc::unsupported, "a big-endian element straddles two ring slots (slot size " +
                                           std::string("not a multiple of the element size)"));
    }
    swap_element_bytes(piece.bytes, length, dtype_);
    return pass(std::move(piece));
}

} // namespace ringload
