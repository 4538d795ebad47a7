// tests/fuzz/safetensors_fuzz.cpp: a safetensors file's 8-byte length and JSON header from
// hostile bytes (the fast scan and the general parser behind it, dtype names, offsets).
#include "formats/safetensors/header.hpp"
#include "fuzz_input.hpp"

#include <algorithm>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace ringload::safetensors;
    ringload::fuzz::Input input(data, size);
    const std::uint64_t file_size = input.bytes.size() + (std::uint64_t{1} << 20);
    if (input.bytes.size() >= length_field_bytes) {
        if (auto length = parse_header_length(input.bytes.first(length_field_bytes), file_size)) {
            const auto header = input.bytes.subspan(length_field_bytes);
            (void)parse_header(header.first(std::min<std::uint64_t>(header.size(), *length)), file_size);
        }
    }
    (void)parse_header(input.bytes, file_size); // the input as the JSON itself
    return 0;
}
