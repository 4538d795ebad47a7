// tests/fuzz/torch_zip_fuzz.cpp: a torch.save zip's end records, central directory and local
// headers from hostile bytes. The input is the tail of a file: the end records are found in
// it, and the directory they point at is parsed where the input holds it.
#include "formats/torch/zip_directory.hpp"
#include "fuzz_input.hpp"

#include <algorithm>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace ringload::torch_zip;
    ringload::fuzz::Input input(data, size);
    const std::uint64_t file_size = input.bytes.size(); // the input is the whole file
    auto end = find_zip_end(input.bytes, file_size);
    if (!end) {
        return 0;
    }
    if (end->zip64_record_offset_bytes && *end->zip64_record_offset_bytes < file_size) {
        auto applied = apply_zip64_end_record(*end, input.bytes.subspan(*end->zip64_record_offset_bytes));
        if (!applied) {
            return 0;
        }
        end = applied;
    }
    if (end->directory_offset_bytes > file_size ||
        end->directory_length_bytes > file_size - end->directory_offset_bytes) {
        return 0;
    }
    auto entries =
        parse_central_directory(input.bytes.subspan(end->directory_offset_bytes, end->directory_length_bytes), *end);
    if (!entries) {
        return 0;
    }
    (void)archive_prefix(*entries);
    for (const auto& entry : *entries) {
        if (entry.header_offset_bytes < file_size) {
            (void)local_header_data_offset(input.bytes.subspan(entry.header_offset_bytes), entry);
        }
    }
    return 0;
}
