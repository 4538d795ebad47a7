// formats/repeated_name.hpp
//
// Whether a list of names holds one twice, for an index of millions of tensors: the names'
// hashes are sorted (16 bytes each, no allocation per name) and only equal hashes compare
// their text, several times faster than a node-based hash set of the names.
//
//     auto again = find_repeated_name(index.tensors.size(), [&](std::size_t i) {
//         return std::string_view(index.tensors[i].name);
//     });                                    // the later position of a repeated name
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace ringload {

template <class NameOf>
std::optional<std::size_t> find_repeated_name(std::size_t count, NameOf name_of) {
    std::vector<std::pair<std::size_t, std::size_t>> keyed(count); // (hash, position)
    for (std::size_t i = 0; i < count; ++i) {
        keyed[i] = {std::hash<std::string_view>{}(name_of(i)), i};
    }
    std::sort(keyed.begin(), keyed.end());
    std::optional<std::size_t> repeated;
    std::size_t run = 0; // start of the run of equal hashes
    for (std::size_t i = 1; i < count; ++i) {
        if (keyed[i].first != keyed[run].first) {
            run = i;
            continue;
        }
        for (std::size_t j = run; j < i; ++j) {
            if (name_of(keyed[j].second) == name_of(keyed[i].second)) {
                // The earliest second sighting in the file's order, whatever the hash order.
                if (!repeated || keyed[i].second < *repeated) {
                    repeated = keyed[i].second;
                }
                break;
            }
        }
    }
    return repeated;
}

} // namespace ringload
