// bindings/cpp/src/signing/model_folder.cpp
#include "signing/model_folder.hpp"

#include <algorithm>
#include <filesystem>
#include <string_view>

namespace ringload {
namespace {

namespace fs = std::filesystem;

bool is_ignored(const std::string& relative, const std::vector<std::string>& ignored) {
    return std::any_of(ignored.begin(), ignored.end(), [&](const std::string& path) {
        return relative == path ||
               (relative.size() > path.size() && relative.starts_with(path) && relative[path.size()] == '/');
    });
}

std::vector<std::string_view> components(const std::string& path) {
    std::vector<std::string_view> parts;
    for (std::size_t at = 0; at <= path.size();) {
        const std::size_t end = std::min(path.find('/', at), path.size());
        parts.emplace_back(path.data() + at, end - at);
        at = end + 1;
    }
    return parts;
}

// model_signing sorts PurePosixPath: component by component, each by code point (UTF-8 byte
// order is code point order): "a/b" before "a-b".
bool component_less(const std::string& a, const std::string& b) {
    const auto x = components(a);
    const auto y = components(b);
    return std::lexicographical_compare(x.begin(), x.end(), y.begin(), y.end());
}

Result<void> add_entry(const fs::directory_entry& entry, const fs::path& root, std::vector<FolderFile>& files) {
    const std::string relative = entry.path().lexically_relative(root).generic_string();
    std::error_code error;
    if (entry.is_symlink(error)) {
        return fail(errc::unsupported, entry.path().string() +
                                           ": a symbolic link in the model folder (model_signing "
                                           "refuses them unless asked; ringload refuses them)");
    }
    if (entry.is_directory(error)) {
        return {};
    }
    if (!entry.is_regular_file(error)) {
        return fail(errc::unsupported, entry.path().string() + ": not a regular file");
    }
    files.push_back({relative, entry.path().string(), static_cast<std::uint64_t>(entry.file_size(error))});
    return {};
}

} // namespace

std::vector<std::uint64_t> piece_ends(std::uint64_t size_bytes, std::uint64_t shard_bytes) {
    if (shard_bytes == 0) {
        return {size_bytes};
    }
    std::vector<std::uint64_t> ends;
    for (std::uint64_t begin = 0; begin < size_bytes; begin += shard_bytes) {
        ends.push_back(std::min(size_bytes, begin + shard_bytes));
    }
    return ends;
}

Result<std::vector<FolderFile>> list_model_files(const std::string& folder, const std::vector<std::string>& ignored) {
    std::error_code error;
    const fs::path root(folder);
    const auto status = fs::symlink_status(root, error);
    if (error || !fs::exists(status)) {
        return fail(errc::not_found, folder + ": no such file or folder");
    }
    std::vector<FolderFile> files;
    if (fs::is_regular_file(status)) {
        files.push_back({".", folder, static_cast<std::uint64_t>(fs::file_size(root, error))});
        return files;
    }
    for (auto it = fs::recursive_directory_iterator(root, error); !error && it != fs::recursive_directory_iterator();
         it.increment(error)) {
        const std::string relative = it->path().lexically_relative(root).generic_string();
        if (is_ignored(relative, ignored)) {
            if (it->is_directory()) {
                it.disable_recursion_pending();
            }
            continue;
        }
        RL_TRY_VOID(add_entry(*it, root, files));
    }
    if (error) {
        return fail(errc::io_error, folder + ": " + error.message());
    }
    std::sort(files.begin(), files.end(),
              [](const FolderFile& a, const FolderFile& b) { return component_less(a.name, b.name); });
    return files;
}

} // namespace ringload
