// formats/safetensors/header_scan.cpp
#include "formats/safetensors/header_scan.hpp"

namespace ringload::safetensors {
namespace {

// One pass over the text; every method returns false when the text leaves the fast path.
class Scanner {
public:
    explicit Scanner(std::string_view text) : text_(text) {}

    void skip_space() {
        while (at_ < text_.size() &&
               (text_[at_] == ' ' || text_[at_] == '\n' || text_[at_] == '\r' || text_[at_] == '\t')) {
            ++at_;
        }
    }

    bool take(char expected) {
        skip_space();
        if (at_ < text_.size() && text_[at_] == expected) {
            ++at_;
            return true;
        }
        return false;
    }

    bool peek(char expected) {
        skip_space();
        return at_ < text_.size() && text_[at_] == expected;
    }

    bool at_end() {
        skip_space();
        return at_ == text_.size();
    }

    // A string of printable ASCII without escapes (the general parser handles the rest).
    bool string(std::string_view& out) {
        if (!take('"')) {
            return false;
        }
        const std::size_t begin = at_;
        while (at_ < text_.size()) {
            const auto c = static_cast<unsigned char>(text_[at_]);
            if (c == '"') {
                out = text_.substr(begin, at_ - begin);
                ++at_;
                return true;
            }
            if (c == '\\' || c < 0x20 || c >= 0x80) {
                return false;
            }
            ++at_;
        }
        return false;
    }

    // Digits without a sign, fraction, exponent or leading zero, within 64 bits.
    bool unsigned_integer(std::uint64_t& out) {
        skip_space();
        const std::size_t begin = at_;
        std::uint64_t value = 0;
        while (at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9') {
            const auto digit = static_cast<std::uint64_t>(text_[at_] - '0');
            if (value > (UINT64_MAX - digit) / 10) {
                return false;
            }
            value = value * 10 + digit;
            ++at_;
        }
        const std::size_t digits = at_ - begin;
        if (digits == 0 || (digits > 1 && text_[begin] == '0')) {
            return false;
        }
        if (at_ < text_.size() && (text_[at_] == '.' || text_[at_] == 'e' || text_[at_] == 'E')) {
            return false;
        }
        out = value;
        return true;
    }

    bool integer_list(std::vector<std::uint64_t>& out) {
        if (!take('[')) {
            return false;
        }
        if (take(']')) {
            return true;
        }
        do {
            std::uint64_t value = 0;
            if (!unsigned_integer(value)) {
                return false;
            }
            out.push_back(value);
        } while (take(','));
        return take(']');
    }

    // {"dtype": "...", "shape": [...], "data_offsets": [b, e]}, the fields in any order, each once.
    bool entry(ScannedEntry& out) {
        if (!take('{')) {
            return false;
        }
        bool seen_dtype = false;
        bool seen_shape = false;
        bool seen_offsets = false;
        do {
            std::string_view field;
            if (!string(field) || !take(':')) {
                return false;
            }
            if (field == "dtype" && !seen_dtype) {
                seen_dtype = string(out.dtype);
                if (!seen_dtype) {
                    return false;
                }
            } else if (field == "shape" && !seen_shape) {
                seen_shape = integer_list(out.shape);
                if (!seen_shape) {
                    return false;
                }
            } else if (field == "data_offsets" && !seen_offsets) {
                seen_offsets = take('[') && unsigned_integer(out.begin_bytes) && take(',') &&
                               unsigned_integer(out.end_bytes) && take(']');
                if (!seen_offsets) {
                    return false;
                }
            } else {
                return false;
            }
        } while (take(','));
        return take('}') && seen_dtype && seen_shape && seen_offsets;
    }

private:
    std::string_view text_;
    std::size_t at_ = 0;
};

// The visitor's error, or nullopt to fall back (the text left the fast path).
std::optional<Result<void>> scan_metadata(Scanner& scan, const ScanVisitor& visitor) {
    if (!scan.take('{')) {
        return std::nullopt;
    }
    if (scan.take('}')) {
        return Result<void>{};
    }
    do {
        std::string_view key;
        std::string_view value;
        if (!scan.string(key) || !scan.take(':') || !scan.string(value)) {
            return std::nullopt;
        }
        if (auto visited = visitor.metadata(key, value); !visited) {
            return visited;
        }
    } while (scan.take(','));
    if (!scan.take('}')) {
        return std::nullopt;
    }
    return Result<void>{};
}

} // namespace

std::optional<Result<void>> scan_header(std::string_view text, const ScanVisitor& visitor) {
    Scanner scan(text);
    if (!scan.take('{')) {
        return std::nullopt;
    }
    bool saw_metadata = false;
    if (!scan.peek('}')) {
        do {
            std::string_view name;
            if (!scan.string(name) || !scan.take(':')) {
                return std::nullopt;
            }
            if (name == "__metadata__") {
                if (saw_metadata) {
                    return std::nullopt; // the general parser says what is wrong
                }
                saw_metadata = true;
                auto metadata = scan_metadata(scan, visitor);
                if (!metadata || !*metadata) {
                    return metadata;
                }
                continue;
            }
            ScannedEntry entry;
            entry.name = name;
            if (!scan.entry(entry)) {
                return std::nullopt;
            }
            if (auto visited = visitor.tensor(entry); !visited) {
                return visited;
            }
        } while (scan.take(','));
    }
    if (!scan.take('}') || !scan.at_end()) {
        return std::nullopt;
    }
    return Result<void>{};
}

} // namespace ringload::safetensors
