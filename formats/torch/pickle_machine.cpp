// formats/torch/pickle_machine.cpp
#include "formats/torch/pickle_machine.hpp"

#include "formats/torch/little_endian.hpp"

#include <array>
#include <bit>
#include <cstring>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace ringload::torch_zip {

namespace {

std::string hex_byte(std::uint8_t value) {
    static constexpr char digits[] = "0123456789abcdef";
    return std::string("0x") + digits[value >> 4] + digits[value & 15];
}

// Opcode names for messages, including the ones refused: (opcode, name), by opcode.
constexpr std::pair<std::uint8_t, std::string_view> opcode_names[] = {
    {'(', "MARK"},          {')', "EMPTY_TUPLE"},
    {'.', "STOP"},          {'0', "POP"},
    {'1', "POP_MARK"},      {'2', "DUP"},
    {'B', "BINBYTES"},      {'C', "SHORT_BINBYTES"},
    {'F', "FLOAT"},         {'G', "BINFLOAT"},
    {'I', "INT"},           {'J', "BININT"},
    {'K', "BININT1"},       {'L', "LONG"},
    {'M', "BININT2"},       {'N', "NONE"},
    {'P', "PERSID"},        {'Q', "BINPERSID"},
    {'R', "REDUCE"},        {'S', "STRING"},
    {'T', "BINSTRING"},     {'U', "SHORT_BINSTRING"},
    {'V', "UNICODE"},       {'X', "BINUNICODE"},
    {']', "EMPTY_LIST"},    {'a', "APPEND"},
    {'b', "BUILD"},         {'c', "GLOBAL"},
    {'d', "DICT"},          {'e', "APPENDS"},
    {'g', "GET"},           {'h', "BINGET"},
    {'i', "INST"},          {'j', "LONG_BINGET"},
    {'l', "LIST"},          {'o', "OBJ"},
    {'p', "PUT"},           {'q', "BINPUT"},
    {'r', "LONG_BINPUT"},   {'s', "SETITEM"},
    {'t', "TUPLE"},         {'u', "SETITEMS"},
    {'}', "EMPTY_DICT"},    {0x80, "PROTO"},
    {0x81, "NEWOBJ"},       {0x82, "EXT1"},
    {0x83, "EXT2"},         {0x84, "EXT4"},
    {0x85, "TUPLE1"},       {0x86, "TUPLE2"},
    {0x87, "TUPLE3"},       {0x88, "NEWTRUE"},
    {0x89, "NEWFALSE"},     {0x8a, "LONG1"},
    {0x8b, "LONG4"},        {0x8c, "SHORT_BINUNICODE"},
    {0x8d, "BINUNICODE8"},  {0x8e, "BINBYTES8"},
    {0x8f, "EMPTY_SET"},    {0x90, "ADDITEMS"},
    {0x91, "FROZENSET"},    {0x92, "NEWOBJ_EX"},
    {0x93, "STACK_GLOBAL"}, {0x94, "MEMOIZE"},
    {0x95, "FRAME"},        {0x96, "BYTEARRAY8"},
    {0x97, "NEXT_BUFFER"},  {0x98, "READONLY_BUFFER"},
};

std::string opcode_name(std::uint8_t op) {
    for (const auto& [code, name] : opcode_names) {
        if (code == op) {
            return std::string(name);
        }
    }
    return "unknown opcode";
}

std::string_view kind_name(ValueKind kind) {
    switch (kind) {
        case ValueKind::none:
            return "None";
        case ValueKind::boolean:
            return "bool";
        case ValueKind::integer:
            return "int";
        case ValueKind::floating:
            return "float";
        case ValueKind::string:
            return "str";
        case ValueKind::bytes:
            return "bytes";
        case ValueKind::tuple:
            return "tuple";
        case ValueKind::list:
            return "list";
        case ValueKind::dict:
            return "dict";
        case ValueKind::set:
            return "set";
        case ValueKind::global:
            return "global";
        case ValueKind::storage:
            return "storage";
        case ValueKind::tensor:
            return "tensor";
    }
    return "value";
}

// The memo: pickles number their slots 0, 1, 2, ... (torch.save does), so slots up to twice
// the number stored so far live in a vector (a million tensors store some twenty million
// values); a farther slot (a hostile LONG_BINPUT 4294967295, or slots that keep doubling) goes
// to a map, so the vector never outgrows the pickle.
class Memo {
public:
    void store(std::uint32_t slot, Value* value) {
        ++stores_;
        if (slot < dense_.size()) {
            dense_[slot] = value;
        } else if (slot < 2 * stores_ + 1024) {
            dense_.resize(slot + 1, nullptr);
            dense_[slot] = value;
        } else {
            sparse_[slot] = value;
        }
    }

    Value* find(std::uint32_t slot) const {
        if (slot < dense_.size() && dense_[slot] != nullptr) {
            return dense_[slot];
        }
        auto found = sparse_.find(slot);
        return found == sparse_.end() ? nullptr : found->second;
    }

private:
    std::vector<Value*> dense_;
    std::unordered_map<std::uint32_t, Value*> sparse_;
    std::size_t stores_ = 0;
};

class Machine {
public:
    Machine(std::span<const std::byte> in, const PickleLimits& limits)
        : in_(in), limits_(limits), values_(std::make_unique<ValueArena>()) {}

    Result<PickleTree> run() {
        if (in_.size() > limits_.pickle_bytes_max) {
            return fail(errc::format_error, "torch zip: data.pkl: " + std::to_string(in_.size()) +
                                                " bytes is more than the " + std::to_string(limits_.pickle_bytes_max) +
                                                "-byte limit");
        }
        while (true) {
            if (pos_ >= in_.size()) {
                return fail(errc::truncated, "torch zip: data.pkl: the pickle ends at byte " +
                                                 std::to_string(in_.size()) + " without STOP");
            }
            op_pos_ = pos_;
            op_ = static_cast<std::uint8_t>(in_[pos_++]);
            if (op_ == '.') {
                RL_TRY(root, pop());
                return PickleTree{std::move(values_), root};
            }
            RL_TRY_VOID(step());
        }
    }

private:
    Error error(std::string detail, errc code = errc::format_error) const {
        return fail(code, "torch zip: data.pkl: " + std::move(detail) + " (opcode " + opcode_name(op_) + " at byte " +
                              std::to_string(op_pos_) + ")");
    }

    Value* make(ValueKind kind) {
        Value& value = values_->make();
        value.kind = kind;
        return &value;
    }

    Result<std::span<const std::byte>> take(std::size_t count) {
        if (in_.size() - pos_ < count) {
            return error("needs " + std::to_string(count) + " bytes but only " + std::to_string(in_.size() - pos_) +
                             " are left (truncated pickle)",
                         errc::truncated);
        }
        auto bytes = in_.subspan(pos_, count);
        pos_ += count;
        return bytes;
    }

    Result<std::uint64_t> take_le(std::size_t width) {
        RL_TRY(bytes, take(width));
        return load_le(bytes, 0, width);
    }

    // A text line of GLOBAL/INST, without its '\n'.
    Result<std::string_view> take_line() {
        constexpr std::size_t line_bytes_max = 1024;
        const std::size_t limit = std::min(in_.size() - pos_, line_bytes_max);
        for (std::size_t i = 0; i < limit; ++i) {
            if (in_[pos_ + i] == std::byte{'\n'}) {
                std::string_view line(reinterpret_cast<const char*>(in_.data() + pos_), i);
                pos_ += i + 1;
                return line;
            }
        }
        return error("no end of line within " + std::to_string(limit) + " bytes", errc::truncated);
    }

    std::size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }

    Result<Value*> pop() {
        if (stack_.size() <= floor()) {
            return error("stack underflow");
        }
        Value* value = stack_.back();
        stack_.pop_back();
        return value;
    }

    Result<Value*> top() {
        if (stack_.size() <= floor()) {
            return error("stack underflow");
        }
        return stack_.back();
    }

    // The items above the innermost mark, and the mark removed.
    Result<std::vector<Value*>> pop_to_mark() {
        if (marks_.empty()) {
            return error("no MARK to pop to");
        }
        const std::size_t mark = marks_.back();
        marks_.pop_back();
        std::vector<Value*> items(stack_.begin() + static_cast<std::ptrdiff_t>(mark), stack_.end());
        stack_.resize(mark);
        return items;
    }

    Result<void> push(Value* value) {
        stack_.push_back(value);
        return {};
    }

    // Values no opcode changes after they are made (numbers, None, bools, the empty tuple) are
    // made once and shared: a state dict's tensors are mostly small ints and False, and a
    // million tensors made some twenty million Values (page faults and frees were half the time).
    Value* shared(Value*& slot, ValueKind kind) {
        if (slot == nullptr) {
            slot = make(kind);
        }
        return slot;
    }

    Result<void> push_int(std::int64_t number) {
        if (number >= 0 && number < static_cast<std::int64_t>(small_ints_.size())) {
            Value*& slot = small_ints_[static_cast<std::size_t>(number)];
            if (slot == nullptr) {
                slot = make(ValueKind::integer);
                slot->integer = number;
            }
            return push(slot);
        }
        Value* value = make(ValueKind::integer);
        value->integer = number;
        return push(value);
    }

    Result<void> push_tuple(std::vector<Value*> items) {
        Value* value = make(ValueKind::tuple);
        value->items = std::move(items);
        return push(value);
    }

    Result<void> step();
    // step()'s opcode groups.
    Result<void> push_container();
    Result<void> push_constant_or_string();
    Result<void> push_number();
    Result<void> use_memo();
    Result<void> fill_container();
    Result<void> refuse_opcode();
    Result<void> set_items(Value* dict, const std::vector<Value*>& items);
    Result<void> global();
    Result<void> refuse_named_global(std::string_view module, std::string_view name);
    Result<void> reduce();
    // reduce()'s calls that need more than a line.
    Error arity_error(const Value& callable, const std::vector<Value*>& a, std::string_view expected) const;
    Result<void> push_device(const std::vector<Value*>& a);
    Result<void> push_encoded_bytes(const std::vector<Value*>& a);
    Result<void> push_parameter(const Value& callable, const std::vector<Value*>& a);
    Result<Value*> build_tensor(const Value& callable, const std::vector<Value*>& args);
    Result<void> persistent_load();

    std::span<const std::byte> in_;
    PickleLimits limits_;
    std::unique_ptr<ValueArena> values_;
    std::vector<Value*> stack_;
    std::vector<std::size_t> marks_;
    Memo memo_;
    std::array<Value*, 256> small_ints_{}; // shared, made on first use
    Value* none_ = nullptr;
    Value* true_ = nullptr;
    Value* false_ = nullptr;
    Value* empty_tuple_ = nullptr;
    std::size_t pos_ = 0;
    std::size_t op_pos_ = 0;
    std::uint8_t op_ = 0;
};

Result<void> Machine::step() {
    switch (op_) {
        case 0x80: {
            RL_TRY(version, take_le(1));
            if (version < 2 || version > 5) {
                return error("pickle protocol " + std::to_string(version) + " (torch.save writes protocol 2)",
                             errc::unsupported);
            }
            return {};
        }
        case '(':
            if (marks_.size() >= limits_.mark_depth_max) {
                return error("MARKs nested deeper than " + std::to_string(limits_.mark_depth_max));
            }
            marks_.push_back(stack_.size());
            return {};
        case '}':
        case ']':
        case ')':
        case 0x8f:
        case 't':
        case 0x85:
        case 0x86:
        case 0x87:
            return push_container();
        case 'N':
        case 0x88:
        case 0x89:
        case 'X':
        case 'U':
            return push_constant_or_string();
        case 'K':
        case 'M':
        case 'J':
        case 0x8a:
        case 'G':
            return push_number();
        case 'q':
        case 'r':
        case 'h':
        case 'j':
            return use_memo();
        case 's':
        case 'u':
        case 'a':
        case 'e':
        case 'b':
            return fill_container();
        case 'c':
            return global();
        case 'R':
            return reduce();
        case 'Q':
            return persistent_load();
        default:
            return refuse_opcode();
    }
}

// EMPTY_DICT, EMPTY_LIST, EMPTY_TUPLE, EMPTY_SET; TUPLE (to the mark), TUPLE1-3.
Result<void> Machine::push_container() {
    switch (op_) {
        case '}':
            return push(make(ValueKind::dict));
        case ']':
            return push(make(ValueKind::list));
        case ')':
            return push(shared(empty_tuple_, ValueKind::tuple));
        case 0x8f:
            return push(make(ValueKind::set));
        case 't': {
            RL_TRY(items, pop_to_mark());
            return push_tuple(std::move(items));
        }
        case 0x85:
        case 0x86:
        case 0x87: {
            const std::size_t count = op_ - 0x84u;
            std::vector<Value*> items(count);
            for (std::size_t i = count; i-- > 0;) {
                RL_TRY(item, pop());
                items[i] = item;
            }
            return push_tuple(std::move(items));
        }
        default:
            return error("not a container opcode");
    }
}

// NONE, NEWTRUE, NEWFALSE; BINUNICODE, SHORT_BINSTRING.
Result<void> Machine::push_constant_or_string() {
    switch (op_) {
        case 'N':
            return push(shared(none_, ValueKind::none));
        case 0x88:
        case 0x89: {
            Value* value = shared(op_ == 0x88 ? true_ : false_, ValueKind::boolean);
            value->boolean = op_ == 0x88;
            return push(value);
        }
        case 'X':
        case 'U': {
            RL_TRY(length, take_le(op_ == 'X' ? 4 : 1));
            RL_TRY(bytes, take(static_cast<std::size_t>(length)));
            Value* value = make(ValueKind::string);
            value->text.assign(reinterpret_cast<const char*>(bytes.data()), bytes.size());
            return push(value);
        }
        default:
            return error("not a constant or string opcode");
    }
}

// BININT1, BININT2, BININT, LONG1; BINFLOAT.
Result<void> Machine::push_number() {
    switch (op_) {
        case 'K': {
            RL_TRY(number, take_le(1));
            return push_int(static_cast<std::int64_t>(number));
        }
        case 'M': {
            RL_TRY(number, take_le(2));
            return push_int(static_cast<std::int64_t>(number));
        }
        case 'J': {
            RL_TRY(number, take_le(4));
            return push_int(static_cast<std::int32_t>(static_cast<std::uint32_t>(number)));
        }
        case 0x8a: {
            RL_TRY(width, take_le(1));
            if (width > 8) {
                return error("a " + std::to_string(width) + "-byte integer is wider than 64 bits");
            }
            RL_TRY(number, take_le(static_cast<std::size_t>(width)));
            // Two's complement of `width` bytes, sign-extended.
            if (width > 0 && width < 8 && (number >> (8 * width - 1)) != 0) {
                number |= ~std::uint64_t{0} << (8 * width);
            }
            return push_int(static_cast<std::int64_t>(number));
        }
        case 'G': {
            RL_TRY(bytes, take(8));
            std::uint64_t bits = 0;
            for (std::size_t i = 0; i < 8; ++i) {
                bits = (bits << 8) | static_cast<std::uint64_t>(bytes[i]); // big-endian by definition
            }
            Value* value = make(ValueKind::floating);
            value->floating = std::bit_cast<double>(bits);
            return push(value);
        }
        default:
            return error("not a number opcode");
    }
}

// BINPUT, LONG_BINPUT store the top in the memo; BINGET, LONG_BINGET push a stored value.
Result<void> Machine::use_memo() {
    switch (op_) {
        case 'q':
        case 'r': {
            RL_TRY(slot, take_le(op_ == 'q' ? 1 : 4));
            RL_TRY(value, top());
            memo_.store(static_cast<std::uint32_t>(slot), value);
            return {};
        }
        case 'h':
        case 'j': {
            RL_TRY(slot, take_le(op_ == 'h' ? 1 : 4));
            Value* found = memo_.find(static_cast<std::uint32_t>(slot));
            if (found == nullptr) {
                return error("memo slot " + std::to_string(slot) + " was never stored");
            }
            return push(found);
        }
        default:
            return error("not a memo opcode");
    }
}

// SETITEM, SETITEMS, APPEND, APPENDS; BUILD (only an OrderedDict's metadata).
Result<void> Machine::fill_container() {
    switch (op_) {
        case 's': {
            RL_TRY(value, pop());
            RL_TRY(key, pop());
            RL_TRY(dict, top());
            return set_items(dict, {key, value});
        }
        case 'u': {
            RL_TRY(items, pop_to_mark());
            RL_TRY(dict, top());
            return set_items(dict, items);
        }
        case 'a':
        case 'e': {
            std::vector<Value*> items;
            if (op_ == 'a') {
                RL_TRY(item, pop());
                items.push_back(item);
            } else {
                RL_TRY(popped, pop_to_mark());
                items = std::move(popped);
            }
            RL_TRY(list, top());
            if (list->kind != ValueKind::list) {
                return error("appends to a " + std::string(kind_name(list->kind)) + ", not a list");
            }
            list->items.insert(list->items.end(), items.begin(), items.end());
            return {};
        }
        case 'b': {
            RL_TRY(state, pop());
            RL_TRY(target, top());
            // OrderedDict's state is its __dict__ ({'_metadata': ...}): module versions, no tensors.
            if (target->kind != ValueKind::dict || !target->ordered) {
                return error("BUILD on a " + std::string(kind_name(target->kind)) +
                             " (only an OrderedDict's attributes may be set)");
            }
            if (state->kind != ValueKind::dict && state->kind != ValueKind::none && state->kind != ValueKind::tuple) {
                return error("BUILD state is a " + std::string(kind_name(state->kind)) + ", not a dict");
            }
            return {};
        }
        default:
            return error("not a container-filling opcode");
    }
}

// The opcodes refused: what they would import or instantiate is named where it is known.
Result<void> Machine::refuse_opcode() {
    switch (op_) {
        case 'i': {
            // INST imports module.name and calls it: refuse, naming what it would import.
            RL_TRY(module, take_line());
            RL_TRY(name, take_line());
            return refuse_named_global(module, name);
        }
        case 0x93: {
            // STACK_GLOBAL takes module and name from the stack: name them in the refusal.
            if (stack_.size() >= floor() + 2 && stack_[stack_.size() - 1]->kind == ValueKind::string &&
                stack_[stack_.size() - 2]->kind == ValueKind::string) {
                return refuse_named_global(stack_[stack_.size() - 2]->text, stack_[stack_.size() - 1]->text);
            }
            return error("opcode is not allowed (protocol 4; torch.save writes protocol 2)");
        }
        case 'o':
        case 0x81:
        case 0x92: {
            const Value* cls = nullptr;
            if (op_ == 'o' && !marks_.empty() && stack_.size() > marks_.back()) {
                cls = stack_[marks_.back()];
            } else if (op_ != 'o' && stack_.size() >= floor() + 2) {
                cls = stack_[stack_.size() - 2];
            }
            if (cls != nullptr && cls->kind == ValueKind::global) {
                return error("instantiating '" + cls->text + "' is not allowed");
            }
            return error("opcode is not allowed (it instantiates a class)");
        }
        default:
            return error("opcode " + hex_byte(op_) +
                         " is not allowed (only the protocol-2 opcodes torch.save emits are interpreted)");
    }
}

Result<void> Machine::set_items(Value* dict, const std::vector<Value*>& items) {
    if (dict->kind != ValueKind::dict) {
        return error("sets items on a " + std::string(kind_name(dict->kind)) + ", not a dict");
    }
    if (items.size() % 2 != 0) {
        return error("odd number of items (" + std::to_string(items.size()) + ") for key/value pairs");
    }
    for (std::size_t i = 0; i < items.size(); i += 2) {
        const ValueKind key = items[i]->kind;
        if (key == ValueKind::list || key == ValueKind::dict || key == ValueKind::set) {
            return error("a " + std::string(kind_name(key)) + " used as a dict key (unhashable)");
        }
        dict->entries.emplace_back(items[i], items[i + 1]);
    }
    return {};
}

Result<void> Machine::refuse_named_global(std::string_view module, std::string_view name) {
    GlobalLookup lookup = look_up_global(module, name);
    if (lookup.verdict == GlobalVerdict::allowed) {
        return error("'" + lookup.qualified_name + "' through this opcode is not allowed (only GLOBAL may name it)");
    }
    return error(forbidden_global_message(lookup),
                 lookup.verdict == GlobalVerdict::unsupported ? errc::unsupported : errc::format_error);
}

Result<void> Machine::global() {
    RL_TRY(module, take_line());
    RL_TRY(name, take_line());
    GlobalLookup lookup = look_up_global(module, name);
    if (lookup.verdict != GlobalVerdict::allowed) {
        return error(forbidden_global_message(lookup),
                     lookup.verdict == GlobalVerdict::unsupported ? errc::unsupported : errc::format_error);
    }
    Value* value = make(ValueKind::global);
    value->symbol = lookup.symbol;
    value->text = std::move(lookup.qualified_name);
    return push(value);
}

namespace {

bool is_int_tuple(const Value& value) {
    if (value.kind != ValueKind::tuple) {
        return false;
    }
    for (const Value* item : value.items) {
        if (item->kind != ValueKind::integer) {
            return false;
        }
    }
    return true;
}

std::vector<std::int64_t> ints_of(const Value& tuple) {
    std::vector<std::int64_t> ints;
    ints.reserve(tuple.items.size());
    for (const Value* item : tuple.items) {
        ints.push_back(item->integer);
    }
    return ints;
}

// Latin-1 bytes of a UTF-8 string (what _codecs.encode(s, 'latin1') gives); nullopt if a code
// point does not fit a byte or the UTF-8 is broken.
std::optional<std::string> latin1_of_utf8(const std::string& text) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
        const auto lead = static_cast<unsigned char>(text[i]);
        if (lead < 0x80) {
            out += static_cast<char>(lead);
        } else if ((lead & 0xE0) == 0xC0 && i + 1 < text.size() &&
                   (static_cast<unsigned char>(text[i + 1]) & 0xC0) == 0x80) {
            const unsigned code = ((lead & 0x1Fu) << 6) | (static_cast<unsigned char>(text[i + 1]) & 0x3Fu);
            if (code > 0xFF || code < 0x80) {
                return std::nullopt;
            }
            out += static_cast<char>(code);
            ++i;
        } else {
            return std::nullopt;
        }
    }
    return out;
}

} // namespace

Result<void> Machine::reduce() {
    RL_TRY(args, pop());
    RL_TRY(callable, pop());
    if (callable->kind != ValueKind::global) {
        return error("calls a " + std::string(kind_name(callable->kind)) + " (only allowed globals may be called)");
    }
    if (args->kind != ValueKind::tuple) {
        return error("'" + callable->text + "' called with a " + std::string(kind_name(args->kind)) +
                     " instead of an argument tuple");
    }
    const auto& a = args->items;
    switch (callable->symbol.kind) {
        case GlobalKind::ordered_dict: {
            if (!a.empty()) {
                return arity_error(*callable, a, "0");
            }
            Value* dict = make(ValueKind::dict);
            dict->ordered = true;
            return push(dict);
        }
        case GlobalKind::size: {
            if (a.size() != 1 || !is_int_tuple(*a[0])) {
                return error("'torch.Size' expects one tuple of ints");
            }
            Value* tuple = make(ValueKind::tuple);
            tuple->items = a[0]->items;
            return push(tuple);
        }
        case GlobalKind::device:
            return push_device(a);
        case GlobalKind::codecs_encode:
            return push_encoded_bytes(a);
        case GlobalKind::rebuild_tensor_v2:
        case GlobalKind::rebuild_tensor_v3: {
            RL_TRY(tensor, build_tensor(*callable, a));
            return push(tensor);
        }
        case GlobalKind::rebuild_parameter:
        case GlobalKind::rebuild_parameter_with_state:
            return push_parameter(*callable, a);
        case GlobalKind::storage_type:
        case GlobalKind::dtype:
            break;
    }
    return error("'" + callable->text + "' is not callable here");
}

Error Machine::arity_error(const Value& callable, const std::vector<Value*>& a, std::string_view expected) const {
    return error("'" + callable.text + "' called with " + std::to_string(a.size()) + " arguments (expected " +
                 std::string(expected) + ")");
}

// torch.device(type[, index]) as its text ("cuda:1").
Result<void> Machine::push_device(const std::vector<Value*>& a) {
    if (a.empty() || a.size() > 2 || a[0]->kind != ValueKind::string ||
        (a.size() == 2 && a[1]->kind != ValueKind::integer && a[1]->kind != ValueKind::none)) {
        return error("'torch.device' expects (type[, index])");
    }
    Value* device = make(ValueKind::string);
    device->text = a[0]->text;
    if (a.size() == 2 && a[1]->kind == ValueKind::integer) {
        device->text += ":" + std::to_string(a[1]->integer);
    }
    return push(device);
}

// _codecs.encode(str, 'latin1'): how protocol 2 stores bytes.
Result<void> Machine::push_encoded_bytes(const std::vector<Value*>& a) {
    if (a.size() != 2 || a[0]->kind != ValueKind::string || a[1]->kind != ValueKind::string) {
        return error("'_codecs.encode' expects (str, encoding)");
    }
    if (a[1]->text != "latin1" && a[1]->text != "latin-1") {
        return error("'_codecs.encode' with encoding '" + a[1]->text + "' (only latin1 encodes bytes)");
    }
    auto bytes = latin1_of_utf8(a[0]->text);
    if (!bytes) {
        return error("'_codecs.encode' of a string that is not latin-1");
    }
    Value* value = make(ValueKind::bytes);
    value->text = std::move(*bytes);
    return push(value);
}

// torch._utils._rebuild_parameter(tensor, requires_grad, hooks[, state]): the tensor, marked.
Result<void> Machine::push_parameter(const Value& callable, const std::vector<Value*>& a) {
    const bool with_state = callable.symbol.kind == GlobalKind::rebuild_parameter_with_state;
    if (a.size() != (with_state ? 4u : 3u)) {
        return arity_error(callable, a, with_state ? "4" : "3");
    }
    if (a[0]->kind != ValueKind::tensor || a[1]->kind != ValueKind::boolean) {
        return error("'" + callable.text + "' expects (tensor, requires_grad, hooks...)");
    }
    Value* parameter = make(ValueKind::tensor);
    parameter->tensor = std::make_unique<TensorDesc>(*a[0]->tensor);
    parameter->tensor->requires_grad = a[1]->boolean;
    parameter->tensor->is_parameter = true;
    return push(parameter);
}

Result<Value*> Machine::build_tensor(const Value& callable, const std::vector<Value*>& a) {
    const bool v3 = callable.symbol.kind == GlobalKind::rebuild_tensor_v3;
    const std::size_t base = v3 ? 7 : 6;
    if (a.size() != base && a.size() != base + 1) {
        return error("'" + callable.text + "' called with " + std::to_string(a.size()) + " arguments (expected " +
                     std::to_string(base) + " or " + std::to_string(base + 1) + ")");
    }
    if (a[0]->kind != ValueKind::storage) {
        return error("'" + callable.text + "': the storage argument is a " + std::string(kind_name(a[0]->kind)) +
                     ", not a persistent storage id");
    }
    if (a[1]->kind != ValueKind::integer || !is_int_tuple(*a[2]) || !is_int_tuple(*a[3]) ||
        a[4]->kind != ValueKind::boolean) {
        return error("'" + callable.text +
                     "' expects (storage, int offset, size tuple, stride tuple, bool requires_grad, ...)");
    }
    if (a[2]->items.size() != a[3]->items.size()) {
        return error("'" + callable.text + "': size has " + std::to_string(a[2]->items.size()) +
                     " dimensions but stride has " + std::to_string(a[3]->items.size()));
    }
    if (a[2]->items.size() > limits_.tensor_rank_max) {
        return error("'" + callable.text + "': " + std::to_string(a[2]->items.size()) + " dimensions (at most " +
                     std::to_string(limits_.tensor_rank_max) + ")");
    }
    if (a[5]->kind != ValueKind::dict && a[5]->kind != ValueKind::none) {
        return error("'" + callable.text + "': backward hooks are a " + std::string(kind_name(a[5]->kind)));
    }
    const StorageRef& storage = *a[0]->storage;
    Value* value = make(ValueKind::tensor);
    value->tensor = std::make_unique<TensorDesc>();
    TensorDesc& tensor = *value->tensor;
    tensor.storage = a[0];
    tensor.rebuild = callable.symbol.kind;
    tensor.storage_offset = a[1]->integer;
    tensor.shape = ints_of(*a[2]);
    tensor.strides = ints_of(*a[3]);
    tensor.requires_grad = a[4]->boolean;
    if (v3) {
        if (a[6]->kind != ValueKind::global || a[6]->symbol.kind != GlobalKind::dtype) {
            return error("'" + callable.text + "': the dtype argument is not a torch dtype");
        }
        tensor.dtype = *a[6]->symbol.dtype;
        if (storage.dtype && *storage.dtype != tensor.dtype) {
            return error("'" + callable.text + "': dtype " + std::string(torch_name(tensor.dtype)) + " on a " +
                         storage.type_name);
        }
    } else {
        if (!storage.dtype) {
            return error("'" + callable.text + "' on an untyped storage (only _rebuild_tensor_v3 gives it a dtype)");
        }
        tensor.dtype = *storage.dtype;
    }
    if (a.size() == base + 1) {
        // torch >= 2.0 adds {'conj': True} / {'neg': True}: the logical values differ from the bytes.
        const Value& metadata = *a[base];
        if (metadata.kind != ValueKind::dict && metadata.kind != ValueKind::none) {
            return error("'" + callable.text + "': metadata is a " + std::string(kind_name(metadata.kind)));
        }
        if (!metadata.entries.empty()) {
            return error("'" + callable.text +
                             "' with tensor metadata (lazy conj/neg bits) is not supported: save t.resolve_conj() "
                             "/ t.resolve_neg() instead",
                         errc::unsupported);
        }
    }
    return value;
}

Result<void> Machine::persistent_load() {
    RL_TRY(pid, pop());
    if (pid->kind != ValueKind::tuple || pid->items.empty() || pid->items[0]->kind != ValueKind::string ||
        pid->items[0]->text != "storage") {
        std::string tag =
            pid->kind == ValueKind::tuple && !pid->items.empty() && pid->items[0]->kind == ValueKind::string
                ? "('" + pid->items[0]->text + "', ...)"
                : "a " + std::string(kind_name(pid->kind));
        return error("persistent id " + tag + " is not a ('storage', ...) tuple");
    }
    const auto& p = pid->items;
    if (p.size() != 5 || p[1]->kind != ValueKind::global || p[1]->symbol.kind != GlobalKind::storage_type ||
        p[2]->kind != ValueKind::string || p[3]->kind != ValueKind::string || p[4]->kind != ValueKind::integer) {
        return error("persistent id is not ('storage', storage type, str key, str location, int numel)");
    }
    if (p[4]->integer < 0) {
        return error("storage '" + p[2]->text + "' has a negative numel " + std::to_string(p[4]->integer));
    }
    Value* value = make(ValueKind::storage);
    value->storage = std::make_unique<StorageRef>();
    value->storage->type_name = p[1]->text;
    value->storage->dtype = p[1]->symbol.dtype;
    value->storage->key = p[2]->text;
    value->storage->location = p[3]->text;
    value->storage->numel = p[4]->integer;
    return push(value);
}

} // namespace

Result<PickleTree> unpickle_weights_only(std::span<const std::byte> pickle, const PickleLimits& limits) {
    Machine machine(pickle, limits);
    return machine.run();
}

} // namespace ringload::torch_zip
