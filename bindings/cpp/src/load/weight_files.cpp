// bindings/cpp/src/load/weight_files.cpp
//
// find_weight_files (ringload/model_load.hpp): the one rule for which files of a model folder
// are its weights, used by `ringload load DIR` and by the Python package's loaders.
#include "ringload/model_load.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string_view>

namespace ringload {
namespace {

namespace fs = std::filesystem;

struct FolderLayout {
    std::string_view extension;
    std::string_view index; // the json whose weight_map names the shards, or ""
};

// vLLM's order: the first layout with any file is the model's.
constexpr std::array<FolderLayout, 4> layouts{{
    {".safetensors", "model.safetensors.index.json"},
    {".tensors", ""},
    {".bin", "pytorch_model.bin.index.json"},
    {".pt", ""},
}};

// Files a training run leaves beside the weights (vLLM's filter_files_not_needed_for_inference).
constexpr std::array<std::string_view, 5> not_weights{"training_args.bin", "optimizer.bin", "optimizer.pt",
                                                      "scheduler.pt", "scaler.pt"};

std::string looked_for() {
    std::string text;
    for (const FolderLayout& layout : layouts) {
        text += (text.empty() ? "*" : ", *") + std::string(layout.extension);
    }
    return text;
}

// The folder's regular files that may be weights (a training run's leftovers left out), sorted:
// listed once, then each layout takes its own.
Result<std::vector<std::string>> candidate_files(const std::string& folder) {
    std::vector<std::string> files;
    std::error_code error;
    for (auto it = fs::directory_iterator(folder, error); !error && it != fs::directory_iterator();
         it.increment(error)) {
        const std::string name = it->path().filename().string();
        std::error_code not_regular;
        if (it->is_regular_file(not_regular) &&
            std::find(not_weights.begin(), not_weights.end(), name) == not_weights.end()) {
            files.push_back(it->path().string());
        }
    }
    if (error) {
        return fail(errc::io_error, folder + ": " + error.message());
    }
    std::sort(files.begin(), files.end());
    return files;
}

// The shards `index_path` names (others, such as a consolidated copy, are left out); a shard
// it names that is missing is an error, not a model with holes.
Result<std::vector<std::string>> indexed_shards(const fs::path& folder, const fs::path& index_path) {
    std::set<std::string> named;
    try {
        std::ifstream in(index_path);
        const nlohmann::json index = nlohmann::json::parse(in);
        for (const auto& [tensor, shard] : index.at("weight_map").items()) {
            named.insert((folder / shard.get<std::string>()).string());
        }
    } catch (const std::exception& error) {
        return fail(errc::format_error, "cannot read the shard index " + index_path.string() + ": " + error.what());
    }
    std::string missing;
    for (const std::string& shard : named) {
        std::error_code error;
        if (!fs::is_regular_file(shard, error)) {
            missing += (missing.empty() ? "" : ", ") + shard;
        }
    }
    if (!missing.empty()) {
        return fail(errc::not_found, index_path.string() + " names shards that are missing: " + missing);
    }
    return std::vector<std::string>(named.begin(), named.end());
}

} // namespace

Result<std::vector<std::string>> find_weight_files(const std::string& folder) {
    std::error_code error;
    if (!fs::is_directory(folder, error)) {
        return fail(errc::not_found, "the model " + folder + " is not a local folder");
    }
    RL_TRY(candidates, candidate_files(folder));
    for (const FolderLayout& layout : layouts) {
        std::vector<std::string> files;
        std::copy_if(candidates.begin(), candidates.end(), std::back_inserter(files),
                     [&](const std::string& path) { return path.ends_with(layout.extension); });
        if (files.empty()) {
            continue;
        }
        const fs::path index_path = fs::path(folder) / layout.index;
        if (!layout.index.empty() && fs::is_regular_file(index_path, error)) {
            return indexed_shards(folder, index_path);
        }
        return files;
    }
    return fail(errc::not_found, "no weights in " + folder + " (looked for " + looked_for() + ")");
}

} // namespace ringload
