// tests/fuzz/pickle_fuzz.cpp: data.pkl from hostile bytes through the allowlisted pickle
// machine (never executing anything: globals outside the allowlist are refused) and the fast
// flat-state-dict scan, then the tensors an Index would be made of.
#include "formats/torch/pickle_machine.hpp"
#include "formats/torch/state_dict.hpp"
#include "formats/torch/state_dict_scan.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace ringload::torch_zip;
    ringload::fuzz::Input input(data, size);
    PickleLimits limits;
    limits.mark_depth_max = 512;
    // Every storage record the pickle names is 1 MiB long here.
    const StorageRecordLength record_length = [](const std::string&) -> ringload::Result<std::uint64_t> {
        return std::uint64_t{1} << 20;
    };
    if (auto scanned = scan_state_dict(input.bytes, limits)) {
        ringload::Index index;
        (void)collect_scanned_tensors(*scanned, record_length, index);
    }
    if (auto tree = unpickle_weights_only(input.bytes, limits)) {
        ringload::Index index;
        (void)collect_tensors(*tree->root, record_length, index);
    }
    return 0;
}
