// tests/formats/torch_state_dict_scan_test.cpp
//
// The fast path for flat state dicts (formats/torch/state_dict_scan.hpp) against the general
// pickle machine: every torch fixture reads to the same Index (or the same error) with and
// without it; hand-built pickles of the shape torch.save writes are taken by the scan and give
// what the machine's tree gives, and every variation the machine would refuse or read
// differently makes the scan give up.
#include "../support/counting_source.hpp"
#include "../support/test_support.hpp"
#include "formats/torch/pickle_machine.hpp"
#include "formats/torch/reader.hpp"
#include "formats/torch/state_dict.hpp"
#include "formats/torch/state_dict_scan.hpp"
#include "formats/torch/zip_directory.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <sstream>

namespace ringload::torch_zip {
namespace {

namespace fs = std::filesystem;

// Everything the Index says, as text: two indexes are the same when their texts are.
std::string describe(const Index& index) {
    std::ostringstream out;
    out << "big_endian " << index.big_endian << " size " << index.source_size_bytes << "\n";
    for (const auto& s : index.storages) {
        out << "storage " << s.key << " " << torch_name(s.dtype) << " @" << s.data_offset_bytes << " +" << s.byte_length
            << "\n";
    }
    for (const auto& t : index.tensors) {
        out << "tensor " << t.name << " path";
        for (const auto& part : t.path) {
            out << (std::holds_alternative<std::string>(part) ? " s:" + std::get<std::string>(part)
                                                              : " i:" + std::to_string(std::get<std::uint64_t>(part)));
        }
        out << " " << torch_name(t.dtype) << " shape";
        for (auto d : t.shape) {
            out << " " << d;
        }
        out << " strides";
        for (auto d : t.strides) {
            out << " " << d;
        }
        out << " bytes " << t.byte_length << " meta " << t.is_meta << " record " << t.record_offset_bytes << " data "
            << t.data_offset_bytes << " +" << t.data_length_bytes << " storage "
            << (t.storage_index ? std::to_string(*t.storage_index) : "-") << " offset " << t.storage_offset << "\n";
    }
    return out.str();
}

std::string outcome(const Result<Index>& index) {
    return index ? describe(*index)
                 : "error " + std::to_string(static_cast<int>(index.error().code)) + " " + index.error().message();
}

Result<Index> read_with(const fs::path& file, bool scan) {
    testing::CountingSource source(file.string(), testing::read_file(file));
    ReadIndexOptions options;
    options.scan_state_dict = scan;
    boost::asio::io_context loop;
    return testing::run_to_completion(loop, read_index(source, options));
}

TEST(torchStateDictScan, EveryFixtureReadsTheSameWithAndWithoutTheFastPath) {
    std::size_t files = 0;
    std::size_t loaded = 0;
    for (const auto& entry : fs::directory_iterator(testing::data_dir() / "torch")) {
        if (entry.path().extension() != ".pt") {
            continue;
        }
        SCOPED_TRACE(entry.path().filename().string());
        const auto general = read_with(entry.path(), false);
        EXPECT_EQ(outcome(read_with(entry.path(), true)), outcome(general));
        ++files;
        loaded += general ? 1 : 0;
    }
    EXPECT_GE(files, 20u);
    EXPECT_GE(loaded, 5u);
}

// A fixture's data.pkl, through the zip directory.
std::vector<std::byte> pickle_of(const std::string& file) {
    const auto bytes = testing::read_file(testing::data_dir() / "torch" / file);
    const std::span<const std::byte> all(bytes);
    auto end = find_zip_end(all, all.size());
    EXPECT_TRUE(end) << file;
    auto entries = parse_central_directory(all.subspan(end->directory_offset_bytes, end->directory_length_bytes), *end);
    EXPECT_TRUE(entries) << file;
    for (const auto& entry : *entries) {
        if (entry.name.ends_with("/data.pkl")) {
            auto data = local_header_data_offset(all.subspan(entry.header_offset_bytes), entry);
            EXPECT_TRUE(data) << file;
            const auto pickle = all.subspan(*data, entry.length_bytes);
            return {pickle.begin(), pickle.end()};
        }
    }
    ADD_FAILURE() << file << " has no data.pkl";
    return {};
}

TEST(torchStateDictScan, TakesTorchSavesOwnStateDicts) {
    // torch.save({...}) and torch.save(module.state_dict()) (an OrderedDict with _metadata): the
    // fixture comparison above then compares the scan's Index with the machine's.
    for (const char* file : {"plain_state_dict.pt", "module_state_dict.pt"}) {
        const auto pickle = pickle_of(file);
        auto scanned = scan_state_dict(pickle);
        ASSERT_TRUE(scanned) << file;
        auto tree = unpickle_weights_only(pickle);
        ASSERT_TRUE(tree) << file;
        EXPECT_EQ(scanned->tensors.size(), tree->root->entries.size()) << file;
    }
}

// ---- hand-built pickles ----

std::string ops(std::initializer_list<int> bytes) {
    std::string out;
    for (const int byte : bytes) {
        out += static_cast<char>(byte);
    }
    return out;
}

std::string text(std::string_view value) {
    std::string out = "X";
    const auto n = static_cast<std::uint32_t>(value.size());
    for (int i = 0; i < 4; ++i) {
        out += static_cast<char>((n >> (8 * i)) & 0xFF);
    }
    return out + std::string(value);
}

std::string global(std::string_view module, std::string_view name) {
    return "c" + std::string(module) + "\n" + std::string(name) + "\n";
}

std::vector<std::byte> bytes_of(const std::string& pickle) {
    std::vector<std::byte> bytes(pickle.size());
    std::memcpy(bytes.data(), pickle.data(), pickle.size());
    return bytes;
}

// What torch.save writes for {name: tensor, ...}: memo slots from 0, globals and repeated
// strings fetched back with BINGET after their first use (slots 1-5 below).
struct StateDictPickle {
    std::string out = ops({0x80, 2}) + "}" + ops({'q', 0}) + "(";
    int next_slot = 6;
    bool first = true;

    std::string put() { return ops({'q', next_slot++}); }

    void tensor(const std::string& name, const std::string& key, int numel, int offset, const std::string& dims,
                int requires_grad = 0x89) {
        out += text(name) + put();
        if (first) {
            out += global("torch._utils", "_rebuild_tensor_v2") + ops({'q', 1}) + "((" + text("storage") +
                   ops({'q', 2}) + global("torch", "FloatStorage") + ops({'q', 3}) + text(key) + put() + text("cpu") +
                   ops({'q', 4});
        } else {
            out += ops({'h', 1}) + "((" + ops({'h', 2, 'h', 3}) + text(key) + put() + ops({'h', 4});
        }
        out += ops({'K', numel}) + "t" + put() + "Q" + ops({'K', offset}) + dims + ops({requires_grad});
        out += first ? global("collections", "OrderedDict") + ops({'q', 5}) : ops({'h', 5});
        out += ")R" + put() + "t" + put() + "R" + put();
        first = false;
    }

    std::string done() const { return out + "u."; }
};

const std::string shape_2x3 = ops({'K', 2, 'K', 3, 0x86, 'K', 3, 'K', 1, 0x86});

Result<std::uint64_t> bytes_for(const std::string& key) {
    // storage "0" holds 8 floats, "1" holds 1, anything else 4
    return std::uint64_t{key == "0" ? 32u : key == "1" ? 4u : 16u};
}

std::string general_outcome(const std::string& pickle) {
    const auto bytes = bytes_of(pickle);
    auto tree = unpickle_weights_only(bytes);
    if (!tree) {
        return "error " + tree.error().message();
    }
    Index index;
    auto done = collect_tensors(*tree->root, bytes_for, index);
    return done ? describe(index) : "error " + done.error().message();
}

std::string scanned_outcome(const std::string& pickle) {
    const auto bytes = bytes_of(pickle);
    auto scanned = scan_state_dict(bytes);
    if (!scanned) {
        return "not scanned";
    }
    Index index;
    auto done = collect_scanned_tensors(*scanned, bytes_for, index);
    return done ? describe(index) : "error " + done.error().message();
}

TEST(torchStateDictScan, TakesWhatTorchSaveWritesAndGivesTheMachinesIndex) {
    StateDictPickle p;
    p.tensor("a.weight", "0", 8, 2, shape_2x3);
    p.tensor("a.bias", "1", 1, 0, "))", 0x88); // 0-d, requires_grad
    p.tensor("b", "0", 8, 0, ops({'(', 'K', 1, 'K', 1, 'K', 2, 'K', 2, 't', '(', 'K', 4, 'K', 4, 'K', 2, 'K', 1, 't'}));
    const std::string pickle = p.done();
    const std::string scanned = scanned_outcome(pickle);
    EXPECT_NE(scanned, "not scanned");
    EXPECT_EQ(scanned, general_outcome(pickle));
    EXPECT_NE(scanned.find("tensor a.bias path s:a.bias float32 shape strides"), std::string::npos) << scanned;
}

TEST(torchStateDictScan, GivesTheSameErrorsForTheWalksChecks) {
    StateDictPickle out_of_bounds;
    out_of_bounds.tensor("w", "1", 1, 1, ops({'K', 1, 0x85, 'K', 1, 0x85})); // element 1 of a 1-element storage
    StateDictPickle twice;
    twice.tensor("w", "0", 8, 0, shape_2x3);
    twice.tensor("w", "0", 8, 0, shape_2x3);
    StateDictPickle wrong_numel;
    wrong_numel.tensor("w", "0", 7, 0, shape_2x3); // the record holds 8 floats
    for (const auto* p : {&out_of_bounds, &twice, &wrong_numel}) {
        const std::string scanned = scanned_outcome(p->done());
        EXPECT_NE(scanned.find("torch zip: tensor 'w': "), std::string::npos) << scanned;
        EXPECT_EQ(scanned, general_outcome(p->done()));
    }
}

TEST(torchStateDictScan, GivesUpOnAnythingElse) {
    StateDictPickle base;
    base.tensor("w", "0", 8, 0, shape_2x3);
    const std::string good = base.done();
    ASSERT_NE(scanned_outcome(good), "not scanned");
    auto replaced = [&](const std::string& from, const std::string& to) {
        std::string pickle = good;
        const auto at = pickle.find(from);
        EXPECT_NE(at, std::string::npos) << from;
        return pickle.replace(at, from.size(), to);
    };
    const std::vector<std::string> others = {
        replaced("FloatStorage", "UntypedStorage"), // v2 on an untyped storage: the machine refuses
        replaced(ops({'K', 8, 't'}), ops({'J', 0xff, 0xff, 0xff, 0xff, 't'})), // negative numel
        replaced(ops({'K', 3, 'K', 1, 0x86}), ops({'K', 1, 0x85})),            // 2 sizes, 1 stride
        replaced("_rebuild_tensor_v2", "_rebuild_tensor_v3"),                  // another rebuild
        replaced("torch._utils", "os"),                                        // a forbidden global
        replaced("u.", "u" + ops({'h', 0}) + "}b."),                           // BUILD (_metadata)
        replaced(ops({0x80, 2}), ops({0x80, 4})),                              // another protocol
        replaced(ops({0x89, 'c'}), ops({'N', 'c'})),                           // requires_grad not a bool
        good.substr(0, good.size() - 1),                                       // no STOP
        replaced("}", "]"),                                                    // a list, not a dict
    };
    for (const auto& pickle : others) {
        EXPECT_EQ(scanned_outcome(pickle), "not scanned") << testing::hex_of(pickle);
    }
    // A slot read back before it was stored, and one stored far past the others.
    StateDictPickle unknown;
    unknown.first = false;
    unknown.tensor("w", "0", 8, 0, shape_2x3);
    EXPECT_EQ(scanned_outcome(unknown.done()), "not scanned");
    EXPECT_EQ(scanned_outcome(replaced(ops({'q', 0}), ops({'r', 0xff, 0xff, 0xff, 0xff}))), "not scanned");
}

} // namespace
} // namespace ringload::torch_zip
