// formats/repeated_name.hpp
//
// Whether a list of names holds one twice, for an index of millions of tensors: one pass in
// the list's order through an open-addressing table of 8-byte slots (32 bits of the name's
// hash beside its position), so no allocation per name and, for names whose hashes differ in
// those bits, no second look at a name's text: a tenth of the time a sort of (hash, position)
// pairs took at a million names, and a twentieth of a node-based hash set's.
//
//     auto again = find_repeated_name(index.tensors.size(), [&](std::size_t i) {
//         return std::string_view(index.tensors[i].name);
//     });                                    // the later position of a repeated name
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace ringload {

namespace detail {

// For lists too long for 32-bit positions: (hash, position) pairs sorted, equal hashes compared.
template <class NameOf>
std::optional<std::size_t> find_repeated_name_sorted(std::size_t count, NameOf& name_of) {
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
            if (name_of(keyed[j].second) == name_of(keyed[i].second) && (!repeated || keyed[i].second < *repeated)) {
                repeated = keyed[i].second; // the earliest second sighting in the list's order
                break;
            }
        }
    }
    return repeated;
}

} // namespace detail

// The position of the first name (in the list's order) that an earlier one already had.
template <class NameOf>
std::optional<std::size_t> find_repeated_name(std::size_t count, NameOf name_of) {
    if (count >= std::numeric_limits<std::uint32_t>::max()) {
        return detail::find_repeated_name_sorted(count, name_of);
    }
    // A slot: the hash's high 32 bits, then position + 1 (0: empty). At most half full.
    const std::size_t capacity = std::bit_ceil(std::max<std::size_t>(2 * count, 16));
    const std::size_t mask = capacity - 1;
    std::vector<std::uint64_t> slots(capacity, 0);
    for (std::size_t i = 0; i < count; ++i) {
        const std::string_view name = name_of(i);
        const std::uint64_t hash = std::hash<std::string_view>{}(name);
        const std::uint64_t tag = hash >> 32 << 32;
        for (std::size_t at = static_cast<std::size_t>(hash) & mask;; at = (at + 1) & mask) {
            const std::uint64_t slot = slots[at];
            if (slot == 0) {
                slots[at] = tag | (i + 1);
                break;
            }
            if ((slot & ~std::uint64_t{0xFFFFFFFF}) == tag && name_of((slot & 0xFFFFFFFF) - 1) == name) {
                return i;
            }
        }
    }
    return std::nullopt;
}

} // namespace ringload
