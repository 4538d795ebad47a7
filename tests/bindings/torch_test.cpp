// tests/bindings/torch_test.cpp
//
// The libtorch adapter (ringload/torch.hpp) on the CPU: every tensorizer and torch zip fixture
// loaded into at::Tensors against its manifest's sha256, dtypes and shapes (torch views strided
// and contiguous); tensors that are the load's memory and outlive everything else; a module
// loaded in place; the streamed hand-over; at::Tensors written in the three formats and read
// back, by ringload and (where .venv-vllm is) by the real torch and safetensors. The CUDA tests
// run where libtorch sees a GPU and are Skipped, saying so, elsewhere.
#include "ringload/torch.hpp"
#include "../support/test_support.hpp"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include <cstdio>
#include <map>
#include <mutex>
#include <set>

namespace ringload {
namespace {

using libtorch::NamedTensors;
using testing::data_dir;
using testing::read_json;

std::string sha256_hex(const void* data, std::size_t size) {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    EVP_Digest(data, size, digest, &length, EVP_sha256(), nullptr);
    return testing::hex_of(std::string(reinterpret_cast<const char*>(digest), length));
}

// sha256 of the tensor's elements in C order (the manifests' definition).
std::string sha256_of(const at::Tensor& tensor) {
    const at::Tensor dense = tensor.contiguous().cpu();
    return sha256_hex(dense.const_data_ptr(), dense.nbytes());
}

// A manifest path joined as TensorInfo::display_name joins it.
std::string dotted(const nlohmann::json& path) {
    std::string out;
    for (const auto& part : path) {
        const std::string text = part.is_string() ? part.get<std::string>() : std::to_string(part.get<std::uint64_t>());
        out += (out.empty() ? "" : ".") + text;
    }
    return out;
}

at::ScalarType scalar_type_named(const std::string& name) {
    auto dtype = dtype_from_torch_name(name);
    EXPECT_TRUE(dtype.has_value()) << name;
    return libtorch::scalar_type_of(dtype.value_or(DType::uint8)).value();
}

// Names, dtypes, shapes and sha256 of `tensors` against the manifest's; with strides, the
// manifest's strides too (torch views loaded with contiguous = false); all on `device`.
void expect_matches(const NamedTensors& tensors, const nlohmann::json& manifest, bool check_strides,
                    at::DeviceType device = at::kCPU) {
    std::map<std::string, nlohmann::json> wanted;
    for (const auto& entry : manifest["tensors"]) {
        wanted.emplace(dotted(entry["path"]), entry);
    }
    ASSERT_EQ(tensors.size(), manifest["tensors"].size());
    for (const auto& [name, tensor] : tensors) {
        SCOPED_TRACE(name);
        const auto found = wanted.find(name);
        ASSERT_NE(found, wanted.end());
        const auto& want = found->second;
        EXPECT_EQ(tensor.scalar_type(), scalar_type_named(want["dtype"].get<std::string>()));
        EXPECT_EQ(nlohmann::json(tensor.sizes().vec()), want["shape"]);
        EXPECT_EQ(sha256_of(tensor), want["sha256"].get<std::string>());
        EXPECT_EQ(tensor.device().type(), device);
        if (check_strides && tensor.numel() > 1) {
            EXPECT_EQ(nlohmann::json(tensor.strides().vec()), want["stride"]);
        }
    }
}

TEST(TorchAdapter, EveryDTypeHasItsScalarTypeAndBack) {
    for (auto code = static_cast<int>(DType::float64); code <= static_cast<int>(last_dtype); ++code) {
        const auto dtype = static_cast<DType>(code);
        SCOPED_TRACE(std::string(torch_name(dtype)));
        auto type = libtorch::scalar_type_of(dtype);
        ASSERT_TRUE(type) << type.error().message();
        EXPECT_EQ(c10::elementSize(*type), itemsize(dtype));
        auto back = libtorch::dtype_of(*type);
        ASSERT_TRUE(back);
        EXPECT_EQ(*back, dtype);
    }
    auto quantized = libtorch::dtype_of(at::kQInt8);
    ASSERT_FALSE(quantized);
    EXPECT_EQ(quantized.error().code, errc::unsupported);
    EXPECT_NE(quantized.error().message().find("QInt8"), std::string::npos);
}

TEST(TorchAdapter, TensorizerFixturesMatchTheirManifests) {
    for (const auto& file : testing::tensorizer_fixture_files()) {
        SCOPED_TRACE(file);
        const auto path = testing::tensorizer_dir() / file;
        const auto manifest = read_json(path.string() + ".json");
        if (!manifest["encryption"].is_null()) {
            continue; // keys: tensorizer_fixtures_test; the adapter adds nothing there
        }
        LoadOptions options;
        options.verify_hashes = true;
        auto tensors = libtorch::load_file(path.string(), options);
        ASSERT_TRUE(tensors) << tensors.error().message();
        expect_matches(*tensors, manifest, false);
    }
}

TEST(TorchAdapter, TorchZipFixturesMatchTheirManifestsAsCopiesAndAsViews) {
    int files = 0;
    for (const auto& entry : std::filesystem::directory_iterator(data_dir() / "torch")) {
        if (entry.path().extension() != ".json") {
            continue;
        }
        const auto manifest = read_json(entry.path());
        if (manifest["expect"] != "load") {
            continue;
        }
        const auto file = (data_dir() / "torch" / manifest["file"].get<std::string>()).string();
        SCOPED_TRACE(file);
        ++files;
        auto copies = libtorch::load_file(file);
        ASSERT_TRUE(copies) << copies.error().message();
        expect_matches(*copies, manifest, false);
        for (const auto& [name, tensor] : *copies) {
            EXPECT_TRUE(tensor.is_contiguous()) << name;
        }
        LoadOptions views;
        views.contiguous = false;
        auto strided = libtorch::load_file(file, views);
        ASSERT_TRUE(strided) << strided.error().message();
        expect_matches(*strided, manifest, true);
    }
    EXPECT_EQ(files, 13); // tests/data/torch/INDEX.md: the fixtures to load
}

TEST(TorchAdapter, ViewsOfOneStorageShareItsMemory) {
    LoadOptions views;
    views.contiguous = false;
    auto tensors = libtorch::load_file((data_dir() / "torch" / "shared_storage_views.pt").string(), views);
    ASSERT_TRUE(tensors) << tensors.error().message();
    std::map<std::string, at::Tensor> named(tensors->begin(), tensors->end());
    // base: 24 elements; matrix (4, 6) and transposed (6, 4) view all of them, slice 6 from 4 on.
    torch::NoGradGuard no_grad;
    named.at("base")[8] = 123.0f;
    EXPECT_EQ(named.at("matrix")[1][2].item<float>(), 123.0f);
    EXPECT_EQ(named.at("transposed")[2][1].item<float>(), 123.0f);
    EXPECT_EQ(named.at("slice")[4].item<float>(), 123.0f);
}

TEST(TorchAdapter, TensorsAreTheLoadsMemoryAndOutliveEverythingElse) {
    const auto path = (testing::tensorizer_dir() / "basic_v1.tensors").string();
    const auto manifest = read_json(path + ".json");
    NamedTensors tensors;
    std::weak_ptr<HostArena> arena;
    {
        auto opened = Deserializer::open(path);
        ASSERT_TRUE(opened) << opened.error().message();
        auto model = opened->load();
        ASSERT_TRUE(model) << model.error().message();
        arena = model->arena;
        auto made = libtorch::tensors_of(*model);
        ASSERT_TRUE(made) << made.error().message();
        tensors = std::move(*made);
        ASSERT_EQ(tensors.size(), model->tensors.size());
        for (std::size_t k = 0; k < tensors.size(); ++k) {
            // No copy: each tensor's first element is the loaded tensor's first byte.
            EXPECT_EQ(tensors[k].second.const_data_ptr(), static_cast<const void*>(model->tensors[k].bytes.data()));
        }
    } // the Deserializer, the LoadedModel and its shared_ptr to the arena are gone
    EXPECT_FALSE(arena.expired());
    expect_matches(tensors, manifest, false);
    at::Tensor last = tensors.back().second;
    tensors.clear();
    EXPECT_FALSE(arena.expired()); // one tensor keeps the whole load
    last = at::Tensor();
    EXPECT_TRUE(arena.expired());
}

TEST(TorchAdapter, StreamedTensorsAreTheFinalOnes) {
    const auto path = (testing::tensorizer_dir() / "large_mixed_v2.tensors").string();
    auto opened = Deserializer::open(path);
    ASSERT_TRUE(opened) << opened.error().message();
    std::mutex lock;
    std::map<std::string, at::Tensor> streamed;
    LoadOptions options;
    options.verify_hashes = true;
    auto all = libtorch::load_streamed(
        *opened,
        [&](const std::string& name, const at::Tensor& tensor) {
            std::lock_guard hold(lock);
            streamed.emplace(name, tensor);
        },
        options);
    ASSERT_TRUE(all) << all.error().message();
    ASSERT_EQ(streamed.size(), all->size());
    for (const auto& [name, tensor] : *all) {
        SCOPED_TRACE(name);
        ASSERT_TRUE(streamed.contains(name));
        EXPECT_EQ(streamed.at(name).const_data_ptr(), tensor.const_data_ptr()); // one memory, handed over early
    }
    all->clear();
    expect_matches(NamedTensors(streamed.begin(), streamed.end()), read_json(path + ".json"), false);
}

// A small module: a Linear (weight, bias), a buffer, and a child with a bf16 parameter.
struct Net : torch::nn::Module {
    Net() {
        fc = register_module("fc", torch::nn::Linear(4, 3));
        register_buffer("scale", torch::arange(3, torch::kFloat32));
        child = register_module("child", std::make_shared<torch::nn::Module>());
        child->register_parameter("gain", torch::randn({2, 5}).to(torch::kBFloat16));
    }
    torch::nn::Linear fc{nullptr};
    std::shared_ptr<torch::nn::Module> child;
};

NamedTensors state_of(torch::nn::Module& module) {
    NamedTensors state;
    for (const auto& item : module.named_parameters(true)) {
        state.emplace_back(item.key(), item.value());
    }
    for (const auto& item : module.named_buffers(true)) {
        state.emplace_back(item.key(), item.value());
    }
    return state;
}

TEST(TorchAdapter, ModuleLoadsInPlaceFromEachFormat) {
    testing::TempDir dir;
    torch::manual_seed(7);
    Net source;
    source.named_buffers(true)["scale"].mul_(5);
    const NamedTensors saved = state_of(source);
    for (const char* format : {"tensorizer", "safetensors", "torch"}) {
        SCOPED_TRACE(format);
        const auto path = (dir.path() / (std::string("net.") + format)).string();
        auto written = libtorch::write_file(path, saved, format);
        ASSERT_TRUE(written) << written.error().message();

        Net target;
        torch::NoGradGuard no_grad;
        std::map<std::string, const void*> before;
        for (const auto& [name, tensor] : state_of(target)) {
            tensor.zero_();
            before.emplace(name, tensor.const_data_ptr());
        }
        auto opened = Deserializer::open(path);
        ASSERT_TRUE(opened) << opened.error().message();
        auto summary = libtorch::load_into_module(*opened, target);
        ASSERT_TRUE(summary) << summary.error().message();
        EXPECT_EQ(summary->loaded.size(), saved.size());
        EXPECT_TRUE(summary->missing.empty());
        EXPECT_TRUE(summary->unexpected.empty());
        std::map<std::string, at::Tensor> want(saved.begin(), saved.end());
        for (const auto& [name, tensor] : state_of(target)) {
            SCOPED_TRACE(name);
            EXPECT_EQ(tensor.const_data_ptr(), before.at(name)); // in place
            EXPECT_TRUE(torch::equal(tensor, want.at(name)));
        }
    }
}

TEST(TorchAdapter, ModuleLoadRefusesWhatDoesNotFitBeforeReading) {
    testing::TempDir dir;
    Net source;
    const auto path = (dir.path() / "net.safetensors").string();
    ASSERT_TRUE(libtorch::write_file(path, state_of(source), "safetensors"));
    auto opened = Deserializer::open(path);
    ASSERT_TRUE(opened) << opened.error().message();

    Net extra; // a name the file lacks
    torch::NoGradGuard no_grad;
    extra.register_parameter("unused", torch::zeros({2}));
    extra.fc->weight.fill_(9);
    auto strict = libtorch::load_into_module(*opened, extra);
    ASSERT_FALSE(strict);
    EXPECT_NE(strict.error().message().find("missing from the file: 'unused'"), std::string::npos)
        << strict.error().message();
    EXPECT_TRUE(torch::all(extra.fc->weight == 9).item<bool>()); // nothing read
    auto lenient = libtorch::load_into_module(*opened, extra, {}, false);
    ASSERT_TRUE(lenient) << lenient.error().message();
    EXPECT_EQ(lenient->missing, std::vector<std::string>{"unused"});
    EXPECT_TRUE(torch::equal(extra.fc->weight, source.fc->weight));

    Net wrong_dtype;
    wrong_dtype.fc->weight.set_data(wrong_dtype.fc->weight.to(torch::kFloat64));
    auto refused = libtorch::load_into_module(*opened, wrong_dtype);
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.error().message().find("'fc.weight'"), std::string::npos) << refused.error().message();
    EXPECT_NE(refused.error().message().find("Double"), std::string::npos) << refused.error().message();

    Net wrong_shape;
    wrong_shape.fc->bias.set_data(torch::zeros({4}));
    auto misshapen = libtorch::load_into_module(*opened, wrong_shape);
    ASSERT_FALSE(misshapen);
    EXPECT_NE(misshapen.error().message().find("'fc.bias'"), std::string::npos) << misshapen.error().message();
}

// Tensors of today's dtypes, a transposed view, a 0-d tensor and an empty one.
NamedTensors mixed_tensors(bool with_unsigned) {
    torch::manual_seed(3);
    NamedTensors tensors;
    tensors.emplace_back("w.f32", torch::randn({3, 5}));
    tensors.emplace_back("w.f32_transposed", torch::randn({4, 6}).t()); // not contiguous
    tensors.emplace_back("w.bf16", torch::randn({7}).to(torch::kBFloat16));
    tensors.emplace_back("w.f16", torch::randn({2, 2}).to(torch::kFloat16));
    tensors.emplace_back("ids", torch::arange(10, torch::kInt64));
    tensors.emplace_back("mask", torch::rand({9}) > 0.5);
    tensors.emplace_back("e4m3", torch::randn({4, 4}).to(at::kFloat8_e4m3fn));
    tensors.emplace_back("e5m2", torch::randn({3}).to(at::kFloat8_e5m2));
    tensors.emplace_back("scalar", torch::tensor(2.5, torch::kFloat64));
    tensors.emplace_back("empty", torch::zeros({0, 3}));
    if (with_unsigned) {
        tensors.emplace_back("u16", torch::arange(5, torch::kInt32).to(at::kUInt16));
    }
    return tensors;
}

void expect_same(const NamedTensors& read, const NamedTensors& written) {
    std::map<std::string, at::Tensor> want(written.begin(), written.end());
    ASSERT_EQ(read.size(), written.size());
    for (const auto& [name, tensor] : read) {
        SCOPED_TRACE(name);
        ASSERT_TRUE(want.contains(name));
        EXPECT_EQ(tensor.scalar_type(), want.at(name).scalar_type());
        EXPECT_EQ(tensor.sizes(), want.at(name).sizes());
        EXPECT_EQ(sha256_of(tensor), sha256_of(want.at(name)));
    }
}

TEST(TorchAdapter, WritesEachFormatAndReadsItBack) {
    testing::TempDir dir;
    const NamedTensors tensors = mixed_tensors(true);
    for (const char* format : {"tensorizer", "safetensors", "torch"}) {
        SCOPED_TRACE(format);
        const auto path = (dir.path() / (std::string("mixed.") + format)).string();
        auto written = libtorch::write_file(path, tensors, format);
        ASSERT_TRUE(written) << written.error().message();
        auto read = libtorch::load_file(path);
        ASSERT_TRUE(read) << read.error().message();
        expect_same(*read, tensors);
    }
    auto unknown = libtorch::write_file((dir.path() / "x").string(), tensors, "onnx");
    ASSERT_FALSE(unknown);
    EXPECT_NE(unknown.error().message().find("tensorizer, safetensors or torch"), std::string::npos);
}

TEST(TorchAdapter, MetaTensorsAreWrittenAsShapeAndDtype) {
    testing::TempDir dir;
    NamedTensors tensors;
    tensors.emplace_back("real", torch::ones({2}));
    tensors.emplace_back("meta", torch::empty({3, 4}, torch::TensorOptions().device(torch::kMeta)));
    const auto path = (dir.path() / "meta.tensors").string();
    auto written = libtorch::write_file(path, tensors, "tensorizer");
    ASSERT_TRUE(written) << written.error().message();
    auto read = libtorch::load_file(path);
    ASSERT_TRUE(read) << read.error().message();
    ASSERT_EQ(read->size(), 2u);
    EXPECT_EQ((*read)[1].second.sizes(), (std::vector<std::int64_t>{3, 4}));
    EXPECT_TRUE(torch::all((*read)[1].second == 0).item<bool>()); // meta tensors load as zeros
}

// Runs `script` with .venv-vllm's python (PyPI torch 2.x and safetensors) and returns its stdout.
std::optional<std::string> run_python(const std::string& script) {
    const std::string python = RINGLOAD_TORCH_PYTHON;
    if (!std::filesystem::exists(python)) {
        return std::nullopt;
    }
    testing::TempDir dir;
    const auto file = dir.path() / "check.py";
    std::ofstream(file) << script;
    std::string out;
    FILE* pipe = popen((python + " " + file.string()).c_str(), "r");
    if (pipe == nullptr) {
        return std::nullopt;
    }
    char buffer[4096];
    while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) {
        out += buffer;
    }
    EXPECT_EQ(pclose(pipe), 0) << out;
    return out;
}

TEST(TorchAdapter, TheRealTorchAndSafetensorsReadWhatWeWrite) {
    if (!std::filesystem::exists(RINGLOAD_TORCH_PYTHON)) {
        GTEST_SKIP() << "no " << RINGLOAD_TORCH_PYTHON << " (scripts/setup_vllm.sh makes it)";
    }
    testing::TempDir dir;
    const NamedTensors tensors = mixed_tensors(true);
    const auto st = (dir.path() / "mixed.safetensors").string();
    const auto pt = (dir.path() / "mixed.pt").string();
    ASSERT_TRUE(libtorch::write_file(st, tensors, "safetensors"));
    ASSERT_TRUE(libtorch::write_file(pt, tensors, "torch"));
    // Each reader prints "name dtype sha256" per tensor, the bytes in C order.
    const std::string script =
        "import hashlib, torch, safetensors.torch\n"
        "def show(tensors):\n"
        "    for name in sorted(tensors):\n"
        "        t = tensors[name].contiguous()\n"
        "        data = t.reshape(-1).view(torch.uint8).numpy().tobytes()\n"
        "        print(name, str(t.dtype).replace('torch.', ''), hashlib.sha256(data).hexdigest())\n"
        "show(safetensors.torch.load_file('" +
        st +
        "'))\n"
        "print('--')\n"
        "show(torch.load('" +
        pt + "', weights_only=True))\n";
    auto out = run_python(script);
    ASSERT_TRUE(out);
    std::map<std::string, at::Tensor> sorted(tensors.begin(), tensors.end());
    std::string expected;
    for (const auto& [name, tensor] : sorted) {
        expected += name + " " + std::string(torch_name(libtorch::dtype_of(tensor.scalar_type()).value())) + " " +
                    sha256_of(tensor) + "\n";
    }
    EXPECT_EQ(*out, expected + "--\n" + expected);
}

bool cuda_usable() {
    return torch::cuda::is_available();
}

TEST(TorchAdapterCuda, LoadsOntoTheGpuWithoutACopy) {
    if (!cuda_usable()) {
        GTEST_SKIP() << "libtorch sees no CUDA device here";
    }
    const auto path = (testing::tensorizer_dir() / "large_mixed_v2.tensors").string();
    LoadOptions options;
    options.device = "cuda:0";
    NamedTensors tensors;
    std::weak_ptr<std::byte> block;
    {
        auto opened = Deserializer::open(path);
        ASSERT_TRUE(opened) << opened.error().message();
        auto model = opened->load(options);
        ASSERT_TRUE(model) << model.error().message();
        block = model->device_memory;
        auto made = libtorch::tensors_of(*model);
        ASSERT_TRUE(made) << made.error().message();
        tensors = std::move(*made);
        for (std::size_t k = 0; k < tensors.size(); ++k) {
            EXPECT_TRUE(tensors[k].second.is_cuda());
            EXPECT_EQ(tensors[k].second.const_data_ptr(), static_cast<const void*>(model->tensors[k].bytes.data()));
        }
    }
    EXPECT_FALSE(block.expired());
    expect_matches(tensors, read_json(path + ".json"), false, at::kCUDA);
    tensors.clear();
    EXPECT_TRUE(block.expired());
}

TEST(TorchAdapterCuda, ModuleOnTheGpuLoadsInPlaceAndGpuTensorsAreWritten) {
    if (!cuda_usable()) {
        GTEST_SKIP() << "libtorch sees no CUDA device here";
    }
    testing::TempDir dir;
    Net source;
    source.to(torch::kCUDA);
    const auto path = (dir.path() / "net.safetensors").string();
    auto written = libtorch::write_file(path, state_of(source), "safetensors"); // from the GPU
    ASSERT_TRUE(written) << written.error().message();
    Net target;
    target.to(torch::kCUDA);
    std::map<std::string, const void*> before;
    for (const auto& [name, tensor] : state_of(target)) {
        before.emplace(name, tensor.const_data_ptr());
    }
    auto opened = Deserializer::open(path);
    ASSERT_TRUE(opened) << opened.error().message();
    auto summary = libtorch::load_into_module(*opened, target);
    ASSERT_TRUE(summary) << summary.error().message();
    const NamedTensors want = state_of(source);
    std::map<std::string, at::Tensor> wanted(want.begin(), want.end());
    for (const auto& [name, tensor] : state_of(target)) {
        SCOPED_TRACE(name);
        EXPECT_TRUE(tensor.is_cuda());
        EXPECT_EQ(tensor.const_data_ptr(), before.at(name));
        EXPECT_TRUE(torch::equal(tensor.cpu(), wanted.at(name).cpu()));
    }
}

} // namespace
} // namespace ringload
