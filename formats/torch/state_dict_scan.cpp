// formats/torch/state_dict_scan.cpp
#include "formats/torch/state_dict_scan.hpp"

#include "formats/torch/little_endian.hpp"

#include <algorithm>
#include <limits>

namespace ringload::torch_zip {

namespace {

// What a memo slot holds, as far as the fast path needs to know.
struct Slot {
    enum class Tag : std::uint8_t { empty, other, string, global } tag = Tag::empty;
    std::uint32_t at = 0;     // string: its first byte in the pickle; global: its position in globals
    std::uint32_t length = 0; // string
};

// A slot as the memo keeps it, in 4 bytes (torch stores some eight slots per tensor: at a
// million tensors 12-byte slots were 96 MB of fresh memory): the tag in the top two bits, `at`
// below. A string's length is the BINUNICODE length field just before its first byte.
constexpr std::uint32_t slot_at_bits = 30;
constexpr std::uint32_t slot_at_mask = (std::uint32_t{1} << slot_at_bits) - 1;

std::uint32_t packed(const Slot& slot) {
    return static_cast<std::uint32_t>(slot.tag) << slot_at_bits | slot.at;
}

class Scanner {
public:
    Scanner(std::span<const std::byte> in, const PickleLimits& limits) : in_(in), limits_(limits) {}

    std::optional<ScannedStateDict> run() {
        // Positions in the pickle, and so the globals' count, fit a packed slot's 30 bits.
        if (in_.size() > std::min<std::size_t>(limits_.pickle_bytes_max, slot_at_mask) || !op(0x80) || !op(2) ||
            !root()) {
            return std::nullopt;
        }
        // torch spends some 120 bytes of pickle per tensor (a one-byte tensor with a short
        // name): room for the usual count up front, so a million-entry vector is not regrown.
        // Likewise the memo: some eight slots per tensor, one every 15 bytes.
        const std::size_t tensors_expected = in_.size() / 100;
        out_.tensors.reserve(tensors_expected);
        out_.dims.reserve(4 * tensors_expected);
        memo_.reserve(in_.size() / 15);
        while (!op('.')) {
            if (root_ordered_ && at('}')) {
                if (!metadata() || !op('.')) {
                    return std::nullopt;
                }
                break;
            }
            if (op('(')) {
                while (!op('u')) {
                    if (!entry()) {
                        return std::nullopt;
                    }
                }
            } else if (!entry() || !op('s')) {
                return std::nullopt;
            }
        }
        return std::move(out_);
    }

private:
    bool at(std::uint8_t code) const { return pos_ < in_.size() && static_cast<std::uint8_t>(in_[pos_]) == code; }

    bool op(std::uint8_t code) {
        if (pos_ < in_.size() && static_cast<std::uint8_t>(in_[pos_]) == code) {
            ++pos_;
            return true;
        }
        return false;
    }

    std::optional<std::uint64_t> le(std::size_t width) {
        if (in_.size() - pos_ < width) {
            return std::nullopt;
        }
        const std::uint64_t value = load_le(in_, pos_, width);
        pos_ += width;
        return value;
    }

    // An optional BINPUT / LONG_BINPUT of what was just pushed. Slots stay below twice the
    // slots stored plus 1024 (torch numbers them 0, 1, 2, ...); a farther one gives up.
    bool put(Slot slot) {
        std::optional<std::uint64_t> at;
        if (op('q')) {
            at = le(1);
        } else if (op('r')) {
            at = le(4);
        } else {
            return true;
        }
        if (!at || *at >= 2 * stores_ + 1024) {
            return false;
        }
        ++stores_;
        if (*at == memo_.size()) { // torch's order: the next slot (a resize each time cost 2%)
            memo_.push_back(packed(slot));
            return true;
        }
        if (*at > memo_.size()) {
            memo_.resize(*at + 1, packed(Slot{}));
        }
        memo_[*at] = packed(slot);
        return true;
    }

    // A BINGET / LONG_BINGET of a slot holding `tag`.
    std::optional<Slot> get(Slot::Tag tag) {
        std::optional<std::uint64_t> at;
        if (op('h')) {
            at = le(1);
        } else if (op('j')) {
            at = le(4);
        }
        if (!at || *at >= memo_.size() || memo_[*at] >> slot_at_bits != static_cast<std::uint32_t>(tag)) {
            return std::nullopt;
        }
        Slot slot{tag, memo_[*at] & slot_at_mask, 0};
        if (tag == Slot::Tag::string) {
            slot.length = static_cast<std::uint32_t>(load_le(in_, slot.at - 4, 4));
        }
        return slot;
    }

    std::string_view text_of(const Slot& slot) const {
        return {reinterpret_cast<const char*>(in_.data() + slot.at), slot.length};
    }

    std::optional<std::string_view> string();
    std::optional<std::string_view> line();
    std::optional<const GlobalLookup*> global(GlobalKind kind);
    std::optional<std::int64_t> integer();
    bool int_tuple();
    bool root();
    bool metadata();
    bool version_dict();
    bool entry();
    bool storage(ScannedTensor& tensor);
    bool tensor_arguments(ScannedTensor& tensor);

    std::span<const std::byte> in_;
    PickleLimits limits_;
    std::size_t pos_ = 0;
    std::vector<std::uint32_t> memo_; // packed slots
    std::size_t stores_ = 0;
    ScannedStateDict out_;
    bool root_ordered_ = false;
};

// BINUNICODE (or a memo'd string), and its optional PUT.
std::optional<std::string_view> Scanner::string() {
    if (op('X')) {
        auto length = le(4);
        if (!length || in_.size() - pos_ < *length) {
            return std::nullopt;
        }
        // The pickle is below 2^30 bytes (checked in run()): positions fit a packed slot.
        const Slot slot{Slot::Tag::string, static_cast<std::uint32_t>(pos_), static_cast<std::uint32_t>(*length)};
        pos_ += static_cast<std::size_t>(*length);
        if (!put(slot)) {
            return std::nullopt;
        }
        return text_of(slot);
    }
    auto slot = get(Slot::Tag::string);
    return slot ? std::optional<std::string_view>(text_of(*slot)) : std::nullopt;
}

// A GLOBAL line, as the machine's take_line reads it.
std::optional<std::string_view> Scanner::line() {
    constexpr std::size_t line_bytes_max = 1024;
    const std::size_t limit = std::min(in_.size() - pos_, line_bytes_max);
    for (std::size_t i = 0; i < limit; ++i) {
        if (in_[pos_ + i] == std::byte{'\n'}) {
            std::string_view text(reinterpret_cast<const char*>(in_.data() + pos_), i);
            pos_ += i + 1;
            return text;
        }
    }
    return std::nullopt;
}

// An allowed GLOBAL of `kind` (or a memo'd one), and its optional PUT.
std::optional<const GlobalLookup*> Scanner::global(GlobalKind kind) {
    std::uint32_t at = 0;
    if (op('c')) {
        auto module = line();
        auto name = module ? line() : std::nullopt;
        if (!name || out_.globals.size() >= std::numeric_limits<std::uint32_t>::max()) {
            return std::nullopt;
        }
        GlobalLookup lookup = look_up_global(*module, *name);
        if (lookup.verdict != GlobalVerdict::allowed) {
            return std::nullopt; // the machine names it in its refusal
        }
        at = static_cast<std::uint32_t>(out_.globals.size());
        out_.globals.push_back(std::move(lookup));
        if (!put({Slot::Tag::global, at, 0})) {
            return std::nullopt;
        }
    } else if (auto slot = get(Slot::Tag::global)) {
        at = slot->at;
    } else {
        return std::nullopt;
    }
    const GlobalLookup* lookup = &out_.globals[at];
    if (lookup->symbol.kind != kind) {
        return std::nullopt;
    }
    return lookup;
}

// BININT1, BININT2, BININT, and an optional PUT.
std::optional<std::int64_t> Scanner::integer() {
    std::optional<std::int64_t> value;
    if (op('K')) {
        auto number = le(1);
        value = number ? std::optional<std::int64_t>(static_cast<std::int64_t>(*number)) : std::nullopt;
    } else if (op('M')) {
        auto number = le(2);
        value = number ? std::optional<std::int64_t>(static_cast<std::int64_t>(*number)) : std::nullopt;
    } else if (op('J')) {
        auto number = le(4);
        value = number ? std::optional<std::int64_t>(static_cast<std::int32_t>(static_cast<std::uint32_t>(*number)))
                       : std::nullopt;
    }
    if (!value || !put({Slot::Tag::other, 0, 0})) {
        return std::nullopt;
    }
    return value;
}

// A tuple of ints (EMPTY_TUPLE, TUPLE1-3, or MARK ... TUPLE) appended to out_.dims, and its PUT.
bool Scanner::int_tuple() {
    const std::size_t first = out_.dims.size();
    if (!op(')')) {
        const bool marked = op('(');
        while (pos_ < in_.size()) {
            const auto next = static_cast<std::uint8_t>(in_[pos_]);
            if (next != 'K' && next != 'M' && next != 'J') {
                break;
            }
            auto value = integer();
            if (!value || out_.dims.size() - first >= limits_.tensor_rank_max) {
                return false;
            }
            out_.dims.push_back(*value);
        }
        const std::size_t count = out_.dims.size() - first;
        const bool closed =
            marked ? op('t') : (count >= 1 && count <= 3 && op(static_cast<std::uint8_t>(0x84 + count)));
        if (!closed) {
            return false;
        }
    }
    return put({Slot::Tag::other, 0, 0});
}

// PROTO 2 is read; the root: EMPTY_DICT, or collections.OrderedDict().
bool Scanner::root() {
    if (!op('}')) {
        if (!global(GlobalKind::ordered_dict) || !op(')') || !put({Slot::Tag::other, 0, 0}) || !op('R')) {
            return false;
        }
        root_ordered_ = true;
    }
    return put({Slot::Tag::other, 0, 0});
}

// What module.state_dict() adds to its OrderedDict: BUILD with {'_metadata': OrderedDict of
// module name -> {str: int}} (torch writes {'version': n}), which the machine sets aside.
bool Scanner::metadata() {
    if (!op('}') || !put({Slot::Tag::other, 0, 0})) {
        return false;
    }
    auto key = string();
    if (!key || *key != "_metadata" || !global(GlobalKind::ordered_dict) || !op(')') ||
        !put({Slot::Tag::other, 0, 0}) || !op('R') || !put({Slot::Tag::other, 0, 0})) {
        return false;
    }
    while (!op('s')) { // the end of the metadata: '_metadata' set in the BUILD state
        if (op('(')) {
            while (!op('u')) {
                if (!string() || !version_dict()) {
                    return false;
                }
            }
        } else if (!string() || !version_dict() || !op('s')) {
            return false;
        }
    }
    return op('b');
}

// {str: int, ...}: EMPTY_DICT and its items (pickle sets one item with SETITEM, more with MARK
// ... SETITEMS).
bool Scanner::version_dict() {
    if (!op('}') || !put({Slot::Tag::other, 0, 0})) {
        return false;
    }
    if (op('(')) {
        while (!op('u')) {
            if (!string() || !integer()) {
                return false;
            }
        }
        return true;
    }
    if (at('X') || at('h') || at('j')) {
        return string() && integer() && op('s');
    }
    return true; // empty
}

// A key and its tensor: _rebuild_tensor_v2 ( <storage> offset size stride requires_grad
// OrderedDict() ) REDUCE.
bool Scanner::entry() {
    ScannedTensor tensor;
    auto name = string();
    if (!name || !global(GlobalKind::rebuild_tensor_v2) || !op('(') || !storage(tensor) || !tensor_arguments(tensor) ||
        !op('t') || !put({Slot::Tag::other, 0, 0}) || !op('R') || !put({Slot::Tag::other, 0, 0})) {
        return false;
    }
    tensor.name = *name;
    out_.tensors.push_back(tensor);
    return true;
}

// BINPERSID of ('storage', <typed storage type>, key, location, numel).
bool Scanner::storage(ScannedTensor& tensor) {
    if (!op('(')) {
        return false;
    }
    auto tag = string();
    if (!tag || *tag != "storage") {
        return false;
    }
    auto type = global(GlobalKind::storage_type);
    if (!type || !(*type)->symbol.dtype) {
        return false; // UntypedStorage: only _rebuild_tensor_v3 gives it a dtype (the machine says so)
    }
    tensor.storage_type = static_cast<std::uint32_t>(*type - out_.globals.data());
    auto key = string();
    auto location = key ? string() : std::nullopt;
    auto numel = location ? integer() : std::nullopt;
    if (!numel || *numel < 0 || !op('t') || !put({Slot::Tag::other, 0, 0}) || !op('Q') ||
        !put({Slot::Tag::other, 0, 0})) {
        return false;
    }
    tensor.storage_key = *key;
    tensor.location = *location;
    tensor.numel = *numel;
    return true;
}

// offset, size, stride, requires_grad, OrderedDict() (backward hooks).
bool Scanner::tensor_arguments(ScannedTensor& tensor) {
    auto offset = integer();
    if (!offset) {
        return false;
    }
    tensor.storage_offset = *offset;
    const std::size_t shape_at = out_.dims.size();
    if (!int_tuple()) {
        return false;
    }
    const std::size_t rank = out_.dims.size() - shape_at;
    if (!int_tuple() || out_.dims.size() - shape_at != 2 * rank ||
        shape_at > std::numeric_limits<std::uint32_t>::max()) {
        return false; // sizes and strides of different lengths: the machine's error
    }
    tensor.dims_at = static_cast<std::uint32_t>(shape_at);
    tensor.rank = static_cast<std::uint32_t>(rank);
    if (op(0x88)) {
        tensor.requires_grad = true;
    } else if (!op(0x89)) {
        return false;
    }
    return put({Slot::Tag::other, 0, 0}) && global(GlobalKind::ordered_dict) && op(')') &&
           put({Slot::Tag::other, 0, 0}) && op('R') && put({Slot::Tag::other, 0, 0});
}

} // namespace

std::optional<ScannedStateDict> scan_state_dict(std::span<const std::byte> pickle, const PickleLimits& limits) {
    Scanner scanner(pickle, limits);
    return scanner.run();
}

} // namespace ringload::torch_zip
