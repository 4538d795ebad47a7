// formats/torch_writer/pickle_writer.cpp
#include "formats/torch_writer/pickle_writer.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace ringload::torch_writer {
namespace {

// Python's pickler (CPython's _pickle.c, the one torch.save uses) writes dict items and list
// elements in batches of this many.
constexpr std::size_t batch_size = 1000;

// The legacy storage class of a dtype, or nothing when only UntypedStorage can hold it.
std::optional<std::string_view> storage_class(DType dtype) {
    switch (dtype) {
        case DType::float64:
            return "DoubleStorage";
        case DType::float32:
            return "FloatStorage";
        case DType::float16:
            return "HalfStorage";
        case DType::bfloat16:
            return "BFloat16Storage";
        case DType::int64:
            return "LongStorage";
        case DType::int32:
            return "IntStorage";
        case DType::int16:
            return "ShortStorage";
        case DType::int8:
            return "CharStorage";
        case DType::uint8:
            return "ByteStorage";
        case DType::boolean:
            return "BoolStorage";
        case DType::complex64:
            return "ComplexFloatStorage";
        case DType::complex128:
            return "ComplexDoubleStorage";
        default:
            return std::nullopt;
    }
}

bool valid_utf8(std::string_view text) {
    std::size_t i = 0;
    while (i < text.size()) {
        const auto c = static_cast<unsigned char>(text[i]);
        std::size_t extra = 0;
        std::uint32_t code = 0;
        if (c < 0x80) {
            ++i;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            extra = 1;
            code = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            extra = 2;
            code = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            extra = 3;
            code = c & 0x07;
        } else {
            return false;
        }
        if (i + extra >= text.size()) {
            return false; // cut short
        }
        for (std::size_t k = 1; k <= extra; ++k) {
            const auto next = static_cast<unsigned char>(text[i + k]);
            if ((next & 0xC0) != 0x80) {
                return false;
            }
            code = (code << 6) | (next & 0x3F);
        }
        // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
        static constexpr std::uint32_t smallest[] = {0, 0x80, 0x800, 0x10000};
        if (code < smallest[extra] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) {
            return false;
        }
        i += extra + 1;
    }
    return true;
}

// A container in the object tree, or a tensor leaf.
struct Node {
    std::optional<std::size_t> tensor;
    bool has_strings = false;
    bool has_indexes = false;
    std::vector<std::pair<PathComponent, std::unique_ptr<Node>>> children; // insertion order
    std::map<PathComponent, Node*> by_key;
};

Result<void> insert(Node& root, const PickledTensor& tensor, std::size_t index) {
    const std::string which = "tensor '" + path_text(tensor.path) + "'";
    if (tensor.path.empty()) {
        return fail(errc::invalid_tensor_name, "a tensor without a name");
    }
    Node* node = &root;
    for (const auto& part : tensor.path) {
        if (node->tensor) {
            return fail(errc::invalid_tensor_name, which + ": a prefix of its name is another tensor");
        }
        if (const auto* key = std::get_if<std::string>(&part); key != nullptr && !valid_utf8(*key)) {
            return fail(errc::invalid_tensor_name, which + ": the name is not valid UTF-8");
        }
        (std::holds_alternative<std::string>(part) ? node->has_strings : node->has_indexes) = true;
        if (node->has_strings && node->has_indexes) {
            return fail(errc::invalid_tensor_name, which + ": one container holds both string keys and list indexes");
        }
        auto found = node->by_key.find(part);
        if (found == node->by_key.end()) {
            auto child = std::make_unique<Node>();
            Node* raw = child.get();
            node->children.emplace_back(part, std::move(child));
            node->by_key.emplace(part, raw);
            node = raw;
        } else {
            node = found->second;
        }
    }
    if (node->tensor || !node->children.empty()) {
        return fail(errc::invalid_tensor_name, which + ": given twice, or also a prefix of another name");
    }
    node->tensor = index;
    return {};
}

class Pickler {
public:
    explicit Pickler(std::span<const PickledTensor> tensors) : tensors_(tensors) {}

    Result<StateDictPickle> run(const Node& root) {
        op(0x80);
        op(2);
        RL_TRY_VOID(save_container(root, true));
        op('.');
        result_.bytes = std::move(out_);
        return std::move(result_);
    }

private:
    void op(unsigned value) { out_.push_back(static_cast<std::byte>(value)); }
    void le(std::uint64_t value, int bytes) {
        for (int i = 0; i < bytes; ++i) {
            op(static_cast<unsigned>((value >> (8 * i)) & 0xFF));
        }
    }
    void text(std::string_view value) {
        for (char c : value) {
            op(static_cast<unsigned char>(c));
        }
    }

    void put() {
        const std::uint32_t index = next_memo_++;
        if (index < 256) {
            op('q');
            le(index, 1);
        } else {
            op('r');
            le(index, 4);
        }
    }
    void get(std::uint32_t index) {
        if (index < 256) {
            op('h');
            le(index, 1);
        } else {
            op('j');
            le(index, 4);
        }
    }
    // An object Python keeps one of (a class, a code constant): memoized the first time,
    // fetched after.
    void shared(const std::string& id, const std::function<void()>& write) {
        if (auto found = shared_.find(id); found != shared_.end()) {
            get(found->second);
            return;
        }
        write();
        shared_.emplace(id, next_memo_);
        put();
    }
    void global(std::string_view module, std::string_view name) {
        shared("global " + std::string(module) + "." + std::string(name), [&] {
            op('c');
            text(module);
            op('\n');
            text(name);
            op('\n');
        });
    }
    void unicode(std::string_view value) {
        op('X');
        le(value.size(), 4);
        text(value);
        put();
    }
    void shared_unicode(std::string_view value) {
        shared("str " + std::string(value), [&] {
            op('X');
            le(value.size(), 4);
            text(value);
        });
    }
    // Python's save_long: the shortest of BININT1, BININT2, BININT, LONG1.
    void integer(std::uint64_t value) {
        if (value <= 0xFF) {
            op('K');
            le(value, 1);
        } else if (value <= 0xFFFF) {
            op('M');
            le(value, 2);
        } else if (value <= 0x7FFFFFFF) {
            op('J');
            le(value, 4);
        } else {
            int bits = 64;
            while (bits > 0 && ((value >> (bits - 1)) & 1) == 0) {
                --bits;
            }
            const int bytes = bits / 8 + 1; // room for the sign bit
            op(0x8A);
            le(static_cast<std::uint64_t>(bytes), 1);
            for (int i = 0; i < bytes; ++i) {
                op(i < 8 ? static_cast<unsigned>((value >> (8 * i)) & 0xFF) : 0);
            }
        }
    }
    void int_tuple(const std::vector<std::uint64_t>& values) {
        if (values.empty()) {
            op(')'); // the empty tuple is never memoized
            return;
        }
        if (values.size() > 3) {
            op('(');
        }
        for (auto value : values) {
            integer(value);
        }
        op(values.size() > 3 ? 't' : 0x84 + static_cast<unsigned>(values.size()));
        put();
    }
    void empty_ordered_dict() {
        global("collections", "OrderedDict");
        op(')');
        op('R');
        put();
    }

    void save_key(const PathComponent& key) {
        if (const auto* text = std::get_if<std::string>(&key)) {
            unicode(*text);
        } else {
            integer(std::get<std::uint64_t>(key));
        }
    }

    Result<void> save_container(const Node& node, bool top) {
        if (node.has_indexes) {
            return save_list(node);
        }
        if (top) {
            return save_ordered_dict(node);
        }
        return save_dict(node);
    }

    Result<void> save_item(const Node& node, std::size_t i) {
        save_key(node.children[i].first);
        return save_value(*node.children[i].second);
    }

    // A list: its indexes must be exactly 0..n-1.
    Result<void> save_list(const Node& node) {
        std::vector<const Node*> items(node.children.size(), nullptr);
        for (const auto& [key, child] : node.children) {
            const auto index = std::get<std::uint64_t>(key);
            if (index >= items.size()) {
                return fail(errc::invalid_tensor_name, "list index " + std::to_string(index) + " in a list of " +
                                                           std::to_string(items.size()) + " (indexes must be 0..n-1)");
            }
            items[index] = child.get();
        }
        op(']');
        put();
        // CPython's batch_list_exact: a one-element list is APPEND; otherwise every batch,
        // a last one of one element too, is MARK ... APPENDS.
        if (items.size() == 1) {
            RL_TRY_VOID(save_value(*items[0]));
            op('a');
            return {};
        }
        for (std::size_t begin = 0; begin < items.size(); begin += batch_size) {
            op('(');
            for (std::size_t i = begin; i < std::min(items.size(), begin + batch_size); ++i) {
                RL_TRY_VOID(save_value(*items[i]));
            }
            op('e');
        }
        return {};
    }

    // The top level: an OrderedDict, whose items come from an iterator (CPython's batch_dict):
    // batches of up to 1,000, MARK ... SETITEMS, a last batch of one item SETITEM.
    Result<void> save_ordered_dict(const Node& node) {
        const std::size_t count = node.children.size();
        empty_ordered_dict();
        for (std::size_t begin = 0; begin < count; begin += batch_size) {
            const std::size_t end = std::min(count, begin + batch_size);
            if (end - begin > 1) {
                op('(');
            }
            for (std::size_t i = begin; i < end; ++i) {
                RL_TRY_VOID(save_item(node, i));
            }
            op(end - begin > 1 ? 'u' : 's');
        }
        return {};
    }

    // A plain dict (CPython's batch_dict_exact): one item is SETITEM; otherwise batches of
    // MARK ... SETITEMS, and after a full batch always one more (empty when the size is a
    // multiple of 1,000).
    Result<void> save_dict(const Node& node) {
        const std::size_t count = node.children.size();
        op('}');
        put();
        if (count == 1) {
            RL_TRY_VOID(save_item(node, 0));
            op('s');
            return {};
        }
        std::size_t done = 0;
        std::size_t in_batch = 0;
        do {
            op('(');
            in_batch = 0;
            while (done < count && in_batch < batch_size) {
                RL_TRY_VOID(save_item(node, done));
                ++done;
                ++in_batch;
            }
            op('u');
        } while (in_batch == batch_size);
        return {};
    }

    Result<void> save_value(const Node& node) {
        if (!node.tensor) {
            return save_container(node, false);
        }
        save_tensor(*node.tensor);
        return {};
    }

    void save_meta_tensor(const PickledTensor& tensor) {
        result_.needs_newer_than_1_13 = result_.needs_newer_than_1_13 || !meta_readable_by_1_13(tensor.dtype);
        global("torch._utils", "_rebuild_meta_tensor_no_storage");
        op('(');
        global("torch", torch_name(tensor.dtype));
        int_tuple(tensor.shape); // torch 1.13 pickles tuple(self.size()), not a torch.Size
        int_tuple(contiguous_strides(tensor.shape));
        op(0x89); // requires_grad False
        op('t');
        put();
        op('R');
        put();
    }

    static bool meta_readable_by_1_13(DType dtype) {
        switch (dtype) {
            case DType::complex32:
            case DType::complex64:
            case DType::complex128:
            case DType::float16:
            case DType::float32:
            case DType::float64:
            case DType::int8:
            case DType::int16:
            case DType::int32:
            case DType::int64:
                return true;
            default:
                return false;
        }
    }

    void save_tensor(std::size_t index) {
        const PickledTensor& tensor = tensors_[index];
        if (tensor.is_meta) {
            save_meta_tensor(tensor);
            return;
        }
        const auto legacy = storage_class(tensor.dtype);
        std::uint64_t numel = 1;
        for (auto dim : tensor.shape) {
            numel *= dim;
        }
        const std::string key = std::to_string(result_.storage_tensors.size());
        result_.storage_tensors.push_back(index);
        result_.needs_torch_2_1 = result_.needs_torch_2_1 || !legacy;

        global("torch._utils", legacy ? "_rebuild_tensor_v2" : "_rebuild_tensor_v3");
        op('('); // the arguments
        op('('); // the persistent id
        shared_unicode("storage");
        // As torch.save names them: its weights-only loader allows torch.storage.UntypedStorage,
        // not torch.UntypedStorage.
        if (legacy) {
            global("torch", *legacy);
        } else {
            global("torch.storage", "UntypedStorage");
        }
        unicode(key);
        shared_unicode("cpu");
        integer(legacy ? numel : numel * itemsize(tensor.dtype)); // UntypedStorage counts bytes
        op('t');
        put();
        op('Q');    // BINPERSID
        integer(0); // storage offset
        int_tuple(tensor.shape);
        int_tuple(contiguous_strides(tensor.shape));
        op(0x89);             // requires_grad False
        empty_ordered_dict(); // backward hooks
        if (!legacy) {
            global("torch", torch_name(tensor.dtype));
        }
        op('t');
        put();
        op('R');
        put();
    }

    std::span<const PickledTensor> tensors_;
    std::vector<std::byte> out_;
    std::uint32_t next_memo_ = 0;
    std::map<std::string, std::uint32_t> shared_;
    StateDictPickle result_;
};

} // namespace

std::string path_text(const std::vector<PathComponent>& path) {
    std::string text;
    for (const auto& part : path) {
        if (const auto* key = std::get_if<std::string>(&part)) {
            text += (text.empty() ? "" : ".") + *key;
        } else {
            text += "[" + std::to_string(std::get<std::uint64_t>(part)) + "]";
        }
    }
    return text;
}

std::vector<std::uint64_t> contiguous_strides(const std::vector<std::uint64_t>& shape) {
    std::vector<std::uint64_t> strides(shape.size(), 1);
    for (std::size_t k = shape.size(); k-- > 1;) {
        strides[k - 1] = strides[k] * std::max<std::uint64_t>(shape[k], 1);
    }
    return strides;
}

Result<StateDictPickle> pickle_state_dict(std::span<const PickledTensor> tensors) {
    Node root;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        RL_TRY_VOID(insert(root, tensors[i], i));
    }
    Pickler pickler(tensors);
    return pickler.run(root);
}

} // namespace ringload::torch_writer
