// bindings/cli/model_load.cpp
#include "model_load.hpp"

#include "commands.hpp"
#include "tensor_json.hpp"

#include "ringload/model_load.hpp"

#include <cstdio>
#include <iostream>

namespace ringload::cli {
namespace {

void print_loaded(const ModelLoaded& loaded, bool json) {
    std::uint64_t bytes = 0;
    std::size_t tensors = 0;
    for (const FileLoaded& file : loaded.files) {
        bytes += file.bytes;
        tensors += file.tensors;
    }
    if (json) {
        nlohmann::json out;
        out["bytes"] = bytes;
        out["seconds"] = loaded.seconds;
        out["files"] = nlohmann::json::array();
        for (const FileLoaded& file : loaded.files) {
            out["files"].push_back(
                {{"path", file.path}, {"tensors", file.tensors}, {"bytes", file.bytes}, {"seconds", file.seconds}});
        }
        if (!loaded.signer.empty()) {
            out["signature"] = {
                {"signer", loaded.signer}, {"other_files", loaded.others.files}, {"other_bytes", loaded.others.bytes}};
        }
        std::cout << dump_json(out) << "\n";
        return;
    }
    for (const FileLoaded& file : loaded.files) {
        std::printf("%s: %zu tensors, %llu bytes in %.3f s (%s)\n", file.path.c_str(), file.tensors,
                    static_cast<unsigned long long>(file.bytes), file.seconds, file.how.c_str());
    }
    const double rate = loaded.seconds > 0 ? static_cast<double>(bytes) / loaded.seconds / 1e9 : 0;
    std::printf("loaded %zu files, %zu tensors, %llu bytes in %.3f s: %.2f GB/s\n", loaded.files.size(), tensors,
                static_cast<unsigned long long>(bytes), loaded.seconds, rate);
    if (!loaded.signer.empty()) {
        std::printf("verified while loading, signer: %s; %zu other files hashed (%llu bytes)\n", loaded.signer.c_str(),
                    loaded.others.files, static_cast<unsigned long long>(loaded.others.bytes));
    }
}

} // namespace

int run_model_load(const ModelLoad& load) {
    ModelLoadOptions options;
    options.load = load.options;
    options.open = load.open;
    options.keep_tensors = false; // counted, then freed: the command measures the load
    if (!load.signature.signature_file.empty()) {
        options.signature = load.signature;
    }
    auto loaded = load_model(load.model, options);
    if (!loaded) {
        return report_error(loaded.error().message());
    }
    print_loaded(*loaded, load.json);
    return 0;
}

} // namespace ringload::cli
