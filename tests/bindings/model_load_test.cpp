// tests/bindings/model_load_test.cpp
//
// find_weight_files and load_model (ringload/model_load.hpp): the layouts of a model folder in
// vLLM's order, shards by their index, what fails and how it is named; a folder of tensorizer
// fixtures loaded side by side against each file's own Deserializer load.
#include "ringload/model_load.hpp"
#include "ringload/engine/worker_pool.hpp"
#include "ringload/memory_room.hpp"

#include "../support/test_support.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <span>

namespace ringload {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

void touch(const fs::path& folder, std::initializer_list<const char*> names) {
    for (const char* name : names) {
        std::ofstream(folder / name).put('x');
    }
}

std::vector<std::string> paths(const fs::path& folder, std::initializer_list<const char*> names) {
    std::vector<std::string> out;
    for (const char* name : names) {
        out.push_back((folder / name).string());
    }
    return out;
}

TEST(FindWeightFiles, TakesTheFirstLayoutInVllmsOrder) {
    TempDir dir;
    touch(dir.path(), {"pytorch_model.bin", "training_args.bin", "model.tensors"});
    EXPECT_EQ(*find_weight_files(dir.path().string()), paths(dir.path(), {"model.tensors"}));
    touch(dir.path(), {"model-00002-of-00002.safetensors", "model-00001-of-00002.safetensors"});
    EXPECT_EQ(*find_weight_files(dir.path().string()),
              paths(dir.path(), {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}));
}

TEST(FindWeightFiles, LeavesTrainingFilesAndSubfoldersOut) {
    TempDir dir;
    touch(dir.path(), {"pytorch_model.bin", "training_args.bin", "optimizer.pt", "scheduler.pt"});
    fs::create_directories(dir.path() / "unet");
    touch(dir.path() / "unet", {"model.safetensors"});
    EXPECT_EQ(*find_weight_files(dir.path().string()), paths(dir.path(), {"pytorch_model.bin"}));
}

TEST(FindWeightFiles, TheIndexNamesTheShardsAndAMissingOneIsNamed) {
    TempDir dir;
    touch(dir.path(), {"model-1.safetensors", "consolidated.safetensors"});
    std::ofstream(dir.path() / "model.safetensors.index.json") << R"({"weight_map": {"a": "model-1.safetensors"}})";
    EXPECT_EQ(*find_weight_files(dir.path().string()), paths(dir.path(), {"model-1.safetensors"}));
    std::ofstream(dir.path() / "model.safetensors.index.json") << R"({"weight_map": {"b": "model-2.safetensors"}})";
    auto missing = find_weight_files(dir.path().string());
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error().code, errc::not_found);
    EXPECT_NE(
        missing.error().detail.find("names shards that are missing: " + (dir.path() / "model-2.safetensors").string()),
        std::string::npos)
        << missing.error().detail;
    std::ofstream(dir.path() / "model.safetensors.index.json") << "{not json";
    auto broken = find_weight_files(dir.path().string());
    ASSERT_FALSE(broken);
    EXPECT_NE(broken.error().detail.find("cannot read the shard index"), std::string::npos) << broken.error().detail;
}

TEST(FindWeightFiles, NamesAFolderWithoutWeightsAndAPathThatIsNotOne) {
    TempDir dir;
    touch(dir.path(), {"config.json"});
    auto none = find_weight_files(dir.path().string());
    ASSERT_FALSE(none);
    EXPECT_EQ(none.error().detail,
              "no weights in " + dir.path().string() + " (looked for *.safetensors, *.tensors, *.bin, *.pt)");
    auto not_folder = find_weight_files((dir.path() / "config.json").string());
    ASSERT_FALSE(not_folder);
    EXPECT_NE(not_folder.error().detail.find("is not a local folder"), std::string::npos);
}

TEST(SlotsPerFile, FilesSideBySideShareOneRingsReadsInFlight) {
    EXPECT_EQ(slots_per_file(1), 32U);
    EXPECT_EQ(slots_per_file(2), 16U);
    EXPECT_EQ(slots_per_file(4), 8U);
    EXPECT_EQ(slots_per_file(8), 4U);
    EXPECT_EQ(slots_per_file(64), 4U);       // never fewer than 4 each
    EXPECT_EQ(slots_per_file(4, true), 32U); // slots held until hashed: each its own 32
}

TEST(FilesAtOnce, OnePerCoreTwoSignedFewerWhereHostOrDeviceMemoryIsShort) {
    constexpr std::uint64_t gib = 1ULL << 30;
    FilesAtOnceFacts facts;
    facts.cores = 8;
    EXPECT_EQ(files_at_once_for(facts), 8U);
    facts.signed_model = true;
    EXPECT_EQ(files_at_once_for(facts), 16U);
    facts.signed_model = false;
    facts.largest_file = 5 * gib; // 16 shards of 5 GB
    facts.host_room = 100 * gib;
    EXPECT_EQ(files_at_once_for(facts), 8U); // 10 fit: the cores decide
    facts.host_room = 40 * gib;
    EXPECT_EQ(files_at_once_for(facts), 4U);
    // A GPU load holds each file's block on the device too: 30 GB free after the model was
    // built leaves room for 3 blocks and 3 more still finishing.
    facts.device_room = 30 * gib;
    EXPECT_EQ(files_at_once_for(facts), 3U);
    facts.device_room = 2 * gib; // less than one file: still one at a time, never none
    EXPECT_EQ(files_at_once_for(facts), 1U);
    facts.largest_file = 0; // sizes not known (URLs): the cores decide
    EXPECT_EQ(files_at_once_for(facts), 8U);
}

TEST(FilesAtOnce, TheCallAsksThisProcessesFacts) {
    TempDir dir;
    const std::string file = (dir.path() / "a.tensors").string();
    fs::copy_file(testing::tensorizer_dir() / "basic_v1.tensors", file);
    FilesAtOnceFacts facts;
    facts.cores = available_cores();
    facts.largest_file = fs::file_size(file);
    if (auto room = memory_room()) {
        facts.host_room = room->bytes;
    }
    EXPECT_EQ(files_read_at_once({file}, false), files_at_once_for(facts));
    // A device this build or machine cannot use gives no room to count: the load will say why.
    EXPECT_EQ(files_read_at_once({file}, false, "cuda:7"), files_at_once_for(facts));
}

TEST(LoadModel, LoadsEachWeightFileAsItsOwnLoadWould) {
    TempDir dir;
    const std::vector<std::string> fixtures{"basic_v1.tensors", "large_mixed_v2.tensors", "module_v1.tensors"};
    for (std::size_t k = 0; k < fixtures.size(); ++k) {
        fs::copy_file(testing::tensorizer_dir() / fixtures[k],
                      dir.path() / ("shard-" + std::to_string(k) + ".tensors"));
    }
    ModelLoadOptions options;
    auto loaded = load_model(dir.path().string(), options);
    ASSERT_TRUE(loaded) << loaded.error().message();
    ASSERT_EQ(loaded->files.size(), fixtures.size());
    for (std::size_t k = 0; k < fixtures.size(); ++k) {
        const FileLoaded& file = loaded->files[k];
        EXPECT_EQ(file.path, (dir.path() / ("shard-" + std::to_string(k) + ".tensors")).string());
        auto alone = Deserializer::open((testing::tensorizer_dir() / fixtures[k]).string());
        ASSERT_TRUE(alone);
        auto expected = alone->load();
        ASSERT_TRUE(expected);
        ASSERT_EQ(file.model.tensors.size(), expected->tensors.size());
        EXPECT_EQ(file.tensors, expected->tensors.size());
        EXPECT_EQ(file.bytes, expected->bytes);
        for (std::size_t t = 0; t < expected->tensors.size(); ++t) {
            const auto got = file.model.tensors[t].bytes;
            const auto want = expected->tensors[t].bytes;
            EXPECT_EQ(file.model.tensors[t].info.name, expected->tensors[t].info.name);
            ASSERT_EQ(got.size(), want.size());
            EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin())) << file.model.tensors[t].info.name;
        }
    }
    options.keep_tensors = false;
    auto counted = load_model(dir.path().string(), options);
    ASSERT_TRUE(counted);
    EXPECT_TRUE(counted->files[0].model.tensors.empty());
    EXPECT_EQ(counted->files[0].tensors, loaded->files[0].tensors);
}

// The bytes of every tensor of `fixture`, by name, as its own Deserializer loads them.
std::map<std::string, std::vector<std::byte>> bytes_by_name(const std::string& fixture) {
    auto alone = Deserializer::open((testing::tensorizer_dir() / fixture).string());
    EXPECT_TRUE(alone);
    auto loaded = alone->load();
    EXPECT_TRUE(loaded);
    std::map<std::string, std::vector<std::byte>> out;
    for (const LoadedTensor& tensor : loaded->tensors) {
        out[tensor.info.name].assign(tensor.bytes.begin(), tensor.bytes.end());
    }
    return out;
}

TEST(LoadModel, AStreamedModelHandsOverEveryTensorOfEveryFileOnce) {
    TempDir dir;
    const std::vector<std::string> fixtures{"basic_v1.tensors", "large_mixed_v2.tensors", "module_v1.tensors"};
    std::vector<std::string> files;
    for (std::size_t k = 0; k < fixtures.size(); ++k) {
        files.push_back((dir.path() / ("shard-" + std::to_string(k) + ".tensors")).string());
        fs::copy_file(testing::tensorizer_dir() / fixtures[k], files.back());
    }
    std::mutex mutex;
    std::vector<std::map<std::string, std::vector<std::byte>>> handed(files.size());
    std::vector<std::shared_ptr<const void>> owners; // the handed tensors' memory, kept past the load
    ModelLoadOptions options;
    options.keep_tensors = false;
    options.on_tensor = [&](std::size_t file, const StreamedTensor& streamed) {
        std::lock_guard lock(mutex);
        auto [at, fresh] = handed.at(file).try_emplace(streamed.tensor.info.name);
        EXPECT_TRUE(fresh) << streamed.tensor.info.name << " handed over twice";
        at->second.assign(streamed.tensor.bytes.begin(), streamed.tensor.bytes.end());
        owners.push_back(streamed.owner);
    };
    auto streamed = load_model(files, options); // the files one by one, as the server loaders' uri
    ASSERT_TRUE(streamed) << streamed.error().message();
    ASSERT_EQ(streamed->files.size(), files.size());
    for (std::size_t k = 0; k < files.size(); ++k) {
        EXPECT_EQ(streamed->files[k].path, files[k]);
        EXPECT_EQ(handed[k], bytes_by_name(fixtures[k])) << fixtures[k];
        EXPECT_EQ(handed[k].size(), streamed->files[k].tensors);
    }
    auto folder = load_model(dir.path().string(), ModelLoadOptions{});
    ASSERT_TRUE(folder);
    EXPECT_EQ(folder->files.size(), streamed->files.size()); // the folder's files are these
}

TEST(LoadModel, TheCallersCancelStopsEveryFileAndASignedListNeedsItsBundle) {
    TempDir dir;
    std::vector<std::string> files;
    for (int k = 0; k < 4; ++k) {
        files.push_back((dir.path() / ("shard-" + std::to_string(k) + ".tensors")).string());
        fs::copy_file(testing::tensorizer_dir() / "large_mixed_v2.tensors", files.back());
    }
    CancelToken cancel;
    cancel.cancel(); // before any file starts: none of them loads
    ModelLoadOptions options;
    options.load.cancel = &cancel;
    auto cancelled = load_model(files, options);
    ASSERT_FALSE(cancelled);
    EXPECT_EQ(cancelled.error().code, errc::cancelled) << cancelled.error().message();

    CancelToken midway; // from the hand-over of the first tensor: the loads stop, nothing hangs
    ModelLoadOptions streaming;
    streaming.load.cancel = &midway;
    std::atomic<int> handed{0};
    streaming.on_tensor = [&](std::size_t, const StreamedTensor&) {
        if (handed++ == 0) {
            midway.cancel();
        }
    };
    auto stopped = load_model(files, streaming);
    EXPECT_GT(handed.load(), 0);
    if (!stopped) {
        EXPECT_EQ(stopped.error().code, errc::cancelled) << stopped.error().message();
    } else { // every file had finished first: then the model is whole
        EXPECT_EQ(stopped->files.size(), files.size());
    }

    // A signed list is the signed folder's files: its bundle is read before any file is.
    ModelLoadOptions signed_options;
    signed_options.signature = SignatureCheck{};
    signed_options.signature->signature_file = (dir.path() / "model.sig").string();
    signed_options.signature->public_key_file = (dir.path() / "pub.pem").string();
    auto unsigned_folder = load_model(files, signed_options);
    ASSERT_FALSE(unsigned_folder);
    EXPECT_NE(unsigned_folder.error().message().find("model.sig"), std::string::npos)
        << unsigned_folder.error().message();
    auto remote = load_model(std::vector<std::string>{"s3://models/a.tensors"}, signed_options);
    ASSERT_FALSE(remote);
    EXPECT_NE(remote.error().message().find("s3://models/a.tensors: signatures are verified for local files"),
              std::string::npos)
        << remote.error().message();
    EXPECT_FALSE(load_model(std::vector<std::string>{}, ModelLoadOptions{}));
}

TEST(LoadModel, TheFirstFailureIsReportedNamingItsFile) {
    TempDir dir;
    fs::copy_file(testing::tensorizer_dir() / "basic_v1.tensors", dir.path() / "a.tensors");
    std::ofstream(dir.path() / "b.tensors") << "not a tensorizer file at all";
    auto loaded = load_model(dir.path().string(), {});
    ASSERT_FALSE(loaded);
    EXPECT_NE(loaded.error().message().find("b.tensors"), std::string::npos) << loaded.error().message();
}

} // namespace
} // namespace ringload
