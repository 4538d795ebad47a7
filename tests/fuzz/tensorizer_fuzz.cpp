// tests/fuzz/tensorizer_fuzz.cpp: tensorizer's file header, index, per-tensor header, crypt info
// and tensor names from hostile bytes. The input is a file's start (header + index) as written;
// the per-tensor parsers get it too, whole and with a crypt-info block expected.
#include "formats/tensorizer/crypt_info.hpp"
#include "formats/tensorizer/file_header.hpp"
#include "formats/tensorizer/tensor_header.hpp"
#include "formats/tensorizer/tensor_name.hpp"
#include "fuzz_input.hpp"

#include <algorithm>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace ringload::tensorizer;
    ringload::fuzz::Input input(data, size);
    const std::uint64_t file_size = input.bytes.size() + (std::uint64_t{1} << 20); // data follows
    const auto start = input.bytes.first(std::min(input.bytes.size(), file_header_bytes));
    if (auto header = parse_file_header(start, file_size)) {
        // The reader reads index_bytes after the header: what the input holds of them here.
        const auto index = input.bytes.subspan(start.size());
        (void)parse_index(*header, index.first(std::min<std::uint64_t>(index.size(), header->index_bytes)), file_size);
    }
    (void)parse_tensor_header(input.bytes, false);
    (void)parse_tensor_header(input.bytes, true);
    (void)parse_crypt_info(input.bytes, input.bytes.size());
    (void)parse_tensor_name(input.text());
    return 0;
}
