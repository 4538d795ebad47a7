// formats/torch/name_table.hpp
//
// Names -> positions for the torch reader's two per-tensor look-ups: a storage key ("0", "1",
// ...) to its StorageInfo, and a record name ("data/0", ...) to its zip entry. torch.save numbers
// its storages 0, 1, 2, ..., so a name that is a plain decimal (no sign, no leading zero) goes to
// a vector slot instead of a node-based hash map: at a million tensors the map's cache misses
// and allocations were a fifth of `ringload info`. Any other name, and a decimal too large for
// the vector (slots are kept below twice the names stored plus 1024, so a hostile "99999999999"
// cannot make the vector outgrow the file), goes to a map.
//
//     NameTable table("data/");               // names without that head go to the map
//     table.insert("data/7", 3);               // false if the name is there already
//     table.find("data/7");                   // 3, or NameTable::none
//
// Names are held as views: their bytes must outlive the table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ringload::torch_zip {

class NameTable {
public:
    static constexpr std::size_t none = ~std::size_t{0};

    explicit NameTable(std::string_view dense_head = {}) : dense_head_(dense_head) {}

    void reserve(std::size_t count) { dense_.reserve(count); }

    bool insert(std::string_view name, std::size_t value) {
        ++stored_;
        if (auto slot = dense_slot(name); slot && *slot < 2 * stored_ + 1024) {
            if (*slot >= dense_.size()) {
                dense_.resize(*slot + 1, none);
            }
            if (dense_[*slot] != none || sparse_.contains(name)) {
                return false;
            }
            dense_[*slot] = value;
            return true;
        }
        if (auto slot = dense_slot(name); slot && *slot < dense_.size() && dense_[*slot] != none) {
            return false;
        }
        return sparse_.emplace(name, value).second;
    }

    std::size_t find(std::string_view name) const {
        if (auto slot = dense_slot(name); slot && *slot < dense_.size() && dense_[*slot] != none) {
            return dense_[*slot];
        }
        if (sparse_.empty()) {
            return none;
        }
        auto found = sparse_.find(name);
        return found == sparse_.end() ? none : found->second;
    }

private:
    // The number a name "<head><decimal>" spells, when it is canonical and fits 32 bits.
    std::optional<std::size_t> dense_slot(std::string_view name) const {
        if (!name.starts_with(dense_head_)) {
            return std::nullopt;
        }
        name.remove_prefix(dense_head_.size());
        if (name.empty() || name.size() > 9 || (name.size() > 1 && name[0] == '0')) {
            return std::nullopt;
        }
        std::size_t number = 0;
        for (const char c : name) {
            if (c < '0' || c > '9') {
                return std::nullopt;
            }
            number = number * 10 + static_cast<std::size_t>(c - '0');
        }
        return number;
    }

    std::string_view dense_head_;
    std::vector<std::size_t> dense_;
    std::unordered_map<std::string_view, std::size_t> sparse_;
    std::size_t stored_ = 0;
};

} // namespace ringload::torch_zip
