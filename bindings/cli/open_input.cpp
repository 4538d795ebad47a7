// bindings/cli/open_input.cpp
#include "open_input.hpp"

namespace ringload::cli {

Result<Deserializer> open_input(const std::string& uri, const KeyFileArgs& keys, const NetworkArgs& network) {
    OpenOptions open_options;
    LoadOptions unused; // per-load rows are applied to the load
    RL_TRY_VOID(apply_options(network, open_options, unused));
    // Assigned in place: a moved-out local optional made g++ 12 -O2 warn (maybe-uninitialized).
    auto decryption = decryption_from(keys);
    if (!decryption) {
        return decryption.error();
    }
    open_options.decryption = std::move(*decryption);
    return Deserializer::open(uri, std::move(open_options));
}

} // namespace ringload::cli
