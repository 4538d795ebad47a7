// bindings/cli/model_load.hpp
//
// `ringload load` of a model folder (its weight files, ringload/model_load.hpp), or of a
// signed model (a folder or one file, with --signature): each weight file is loaded with
// LoadOptions::signed_file, so that its single read is also its verification, and then the
// folder's other files (configs, tokenizers) are hashed on every core. The model's signature
// and file list are checked before any byte is read; any failure ends the command before
// anything is reported as loaded.
#pragma once

#include "ringload/model_signing.hpp"
#include "ringload/ringload.hpp"

#include <functional>
#include <string>

namespace ringload::cli {

struct ModelLoad {
    std::string model; // a folder, or one file
    LoadOptions options;
    SignatureCheck signature; // empty signature_file: none
    bool json = false;
    std::function<Result<Deserializer>(const std::string& file)> open;
};

int run_model_load(const ModelLoad& load);

} // namespace ringload::cli
