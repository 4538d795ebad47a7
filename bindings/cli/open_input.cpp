// bindings/cli/open_input.cpp
#include "open_input.hpp"

namespace ringload::cli {

Result<Deserializer> open_input(const std::string& uri, const KeyFileArgs& keys, const NetworkArgs& network,
                                ReadMode read_mode) {
    OpenOptions open_options;
    open_options.read_mode = read_mode;
    open_options.network = network_options(network);
    // Assigned in place: a moved-out local optional made g++ 12 -O2 warn (maybe-uninitialized).
    auto decryption = decryption_from(keys);
    if (!decryption) {
        return decryption.error();
    }
    open_options.decryption = std::move(*decryption);
    return Deserializer::open(uri, std::move(open_options));
}

} // namespace ringload::cli
