// options/option_rows.hpp
//
// How the option table's own rows (ringload/options.hpp) are made: each row with how it reads
// and writes its field of LoadSettings, grouped by what they set (one file each).
#pragma once

#include "ringload/options.hpp"

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ringload::options {

// How one row reads and writes its field.
struct FieldAccess {
    std::function<std::string(const LoadSettings&)> get;
    std::function<void(LoadSettings&, std::string_view)> set; // the text is checked first
    // Beyond the row's kind (a device's or dtype's name): an error saying what it must be.
    std::function<Result<void>(std::string_view)> check;
};

struct SharedRow {
    OptionRow row;
    FieldAccess access;
};

// An enum's words, both ways; the first pair is the fallback of a word set_option let through.
template <class Enum>
struct Words {
    std::vector<std::pair<std::string_view, Enum>> pairs;

    std::string_view word_of(Enum value) const {
        for (const auto& [word, each] : pairs) {
            if (each == value) {
                return word;
            }
        }
        return "";
    }
    Enum value_of(std::string_view word) const {
        for (const auto& [each, value] : pairs) {
            if (each == word) {
                return value;
            }
        }
        return pairs.front().second;
    }
    std::vector<std::string_view> choices() const {
        std::vector<std::string_view> words;
        for (const auto& pair : pairs) {
            words.push_back(pair.first);
        }
        return words;
    }
};

// A choice row's access to an enum field: `field(settings)` gives the field (a generic lambda,
// `[](auto& s) -> auto& { return s.load.placement; }`), `words` its words both ways.
template <class Enum, class Field>
FieldAccess choice_access(const Words<Enum>& words, Field field) {
    return {[&words, field](const LoadSettings& s) { return std::string(words.word_of(field(s))); },
            [&words, field](LoadSettings& s, std::string_view text) { field(s) = words.value_of(text); },
            {}};
}

inline std::string flag_text(bool value) {
    return value ? "true" : "false";
}

// A row and its access, in the table's order.
void add_network_rows(std::vector<SharedRow>& rows);   // network_rows.cpp: read mode, connections, TLS, cache
void add_load_rows(std::vector<SharedRow>& rows);      // load_rows.cpp: placement, device, dtype, ring, keys
void add_signature_rows(std::vector<SharedRow>& rows); // signature_rows.cpp: a signed model's words
void add_server_rows(std::vector<SharedRow>& rows);    // server_rows.cpp: the server loaders' own words

} // namespace ringload::options
