// bindings/torch/src/torch_adapter.cpp
//
// ringload's loads as at::Tensors (ringload/torch.hpp). A tensor is made with at::for_blob over
// the load's memory; its deleter holds a copy of the load's owner (host arena or device block),
// as the Python binding's DLPack capsules hold the whole load (bindings/python/src/dlpack.hpp).
#include "ringload/torch.hpp"

#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include <algorithm>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <unordered_map>

namespace ringload::libtorch {
namespace {

#define RL_TORCH_AT_LEAST(major, minor) \
    (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

[[maybe_unused]] Error no_scalar_type(DType dtype, std::string_view since) {
    return fail(errc::unsupported, "torch." + std::string(torch_name(dtype)) + " has no at::ScalarType in libtorch " +
                                       std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) +
                                       " (it needs libtorch " + std::string(since) + " or newer)");
}

// The dtype a tensor has once loaded: LoadOptions::dtype converts the floating ones.
DType loaded_dtype(const TensorInfo& info, const LoadOptions& options) {
    const bool floating = info.dtype == DType::float64 || info.dtype == DType::float32 ||
                          info.dtype == DType::float16 || info.dtype == DType::bfloat16;
    return floating && options.dtype ? *options.dtype : info.dtype;
}

// The positions of the tensors a load with `options` hands over, as Deserializer::load picks them.
std::vector<std::size_t> wanted_positions(const Index& index, const LoadOptions& options) {
    if (!options.tensors.empty()) {
        return options.tensors;
    }
    std::vector<std::size_t> wanted;
    for (std::size_t k = 0; k < index.tensors.size(); ++k) {
        if (!options.filter || options.filter(index.tensors[k])) {
            wanted.push_back(k);
        }
    }
    return wanted;
}

// Refuses up front a load whose tensors would not all become at::Tensors, so that a streamed
// hand-over never meets one it cannot hand on.
Result<void> check_scalar_types(const Index& index, const LoadOptions& options) {
    for (std::size_t k : wanted_positions(index, options)) {
        if (k >= index.tensors.size()) {
            continue; // the load refuses it, with its own message
        }
        if (auto type = scalar_type_of(loaded_dtype(index.tensors[k], options)); !type) {
            return with_context(type.error(), "tensor '" + index.tensors[k].display_name() + "'");
        }
    }
    return {};
}

Result<c10::Device> device_named(std::string_view device) {
    if (device == "cpu") {
        return c10::Device(c10::kCPU);
    }
    if (device.starts_with("cuda:")) {
        try {
            return c10::Device(std::string(device));
        } catch (const std::exception&) {
            // falls through to the refusal below
        }
    }
    return fail(errc::invalid_argument, "device '" + std::string(device) + "': expected \"cpu\" or \"cuda:N\"");
}

std::string device_text(const at::Device& device) {
    return device.is_cpu() ? "cpu" : "cuda:" + std::to_string(device.index() < 0 ? 0 : device.index());
}

// The load's memory owner as LoadedModel holds it: the host arena or the device block.
std::shared_ptr<const void> owner_of(const LoadedModel& model) {
    if (model.device != "cpu") {
        return model.device_memory;
    }
    return model.arena;
}

std::string names_text(const std::vector<std::string>& names) {
    constexpr std::size_t shown_max = 8;
    std::string text;
    for (std::size_t k = 0; k < names.size() && k < shown_max; ++k) {
        text += (k == 0 ? "'" : ", '") + names[k] + "'";
    }
    if (names.size() > shown_max) {
        text += " and " + std::to_string(names.size() - shown_max) + " more";
    }
    return text;
}

} // namespace

Result<c10::ScalarType> scalar_type_of(DType dtype) {
    switch (dtype) {
        case DType::float64:
            return c10::ScalarType::Double;
        case DType::float32:
            return c10::ScalarType::Float;
        case DType::float16:
            return c10::ScalarType::Half;
        case DType::bfloat16:
            return c10::ScalarType::BFloat16;
        case DType::int64:
            return c10::ScalarType::Long;
        case DType::int32:
            return c10::ScalarType::Int;
        case DType::int16:
            return c10::ScalarType::Short;
        case DType::int8:
            return c10::ScalarType::Char;
        case DType::uint8:
            return c10::ScalarType::Byte;
        case DType::boolean:
            return c10::ScalarType::Bool;
        case DType::complex32:
            return c10::ScalarType::ComplexHalf;
        case DType::complex64:
            return c10::ScalarType::ComplexFloat;
        case DType::complex128:
            return c10::ScalarType::ComplexDouble;
#if RL_TORCH_AT_LEAST(2, 3)
        case DType::uint16:
            return c10::ScalarType::UInt16;
        case DType::uint32:
            return c10::ScalarType::UInt32;
        case DType::uint64:
            return c10::ScalarType::UInt64;
#else
        case DType::uint16:
        case DType::uint32:
        case DType::uint64:
            return no_scalar_type(dtype, "2.3");
#endif
#if RL_TORCH_AT_LEAST(2, 1)
        case DType::float8_e4m3fn:
            return c10::ScalarType::Float8_e4m3fn;
        case DType::float8_e5m2:
            return c10::ScalarType::Float8_e5m2;
#else
        case DType::float8_e4m3fn:
        case DType::float8_e5m2:
            return no_scalar_type(dtype, "2.1");
#endif
#if RL_TORCH_AT_LEAST(2, 2)
        case DType::float8_e4m3fnuz:
            return c10::ScalarType::Float8_e4m3fnuz;
        case DType::float8_e5m2fnuz:
            return c10::ScalarType::Float8_e5m2fnuz;
#else
        case DType::float8_e4m3fnuz:
        case DType::float8_e5m2fnuz:
            return no_scalar_type(dtype, "2.2");
#endif
#if RL_TORCH_AT_LEAST(2, 7)
        case DType::float8_e8m0fnu:
            return c10::ScalarType::Float8_e8m0fnu;
#else
        case DType::float8_e8m0fnu:
            return no_scalar_type(dtype, "2.7");
#endif
#if RL_TORCH_AT_LEAST(2, 8)
        case DType::float4_e2m1fn_x2:
            return c10::ScalarType::Float4_e2m1fn_x2;
#else
        case DType::float4_e2m1fn_x2:
            return no_scalar_type(dtype, "2.8");
#endif
    }
    return fail(errc::unsupported, "dtype " + std::to_string(static_cast<int>(dtype)) + " is not a ringload dtype");
}

Result<DType> dtype_of(c10::ScalarType type) {
    // One table for both directions: the DType whose scalar type it is.
    for (auto code = static_cast<int>(DType::float64); code <= static_cast<int>(last_dtype); ++code) {
        const auto dtype = static_cast<DType>(code);
        if (auto mine = scalar_type_of(dtype); mine && *mine == type) {
            return dtype;
        }
    }
    return fail(errc::unsupported,
                "at::ScalarType " + std::string(c10::toString(type)) + " has no ringload dtype (ringload/dtype.hpp)");
}

Result<at::Tensor> tensor_over(const LoadedTensor& tensor, std::string_view device, std::shared_ptr<const void> owner) {
    RL_TRY(type, scalar_type_of(tensor.info.dtype));
    RL_TRY(where, device_named(device));
    const auto options = at::TensorOptions().dtype(type).device(where);
    std::vector<std::int64_t> sizes(tensor.info.shape.begin(), tensor.info.shape.end());
    try {
        if (tensor.info.numel() == 0) {
            return at::empty(sizes, options);
        }
        // The storage's deleter holds the owner: the memory lives while any tensor over it does.
        auto keep = [kept = std::move(owner)](void*) {};
        if (tensor.info.strides.empty()) {
            return at::from_blob(tensor.bytes.data(), sizes, keep, options, where);
        }
        std::vector<std::int64_t> strides(tensor.info.strides.begin(), tensor.info.strides.end());
        return at::from_blob(tensor.bytes.data(), sizes, strides, keep, options, where);
    } catch (const std::exception& error) {
        return fail(errc::unsupported, "tensor '" + tensor.info.display_name() + "' on " + std::string(device) +
                                           ": libtorch refused it: " + error.what());
    }
}

Result<NamedTensors> tensors_of(const LoadedModel& model) {
    const std::shared_ptr<const void> owner = owner_of(model);
    NamedTensors tensors;
    tensors.reserve(model.tensors.size());
    for (const auto& loaded : model.tensors) {
        RL_TRY(tensor, tensor_over(loaded, model.device, owner));
        tensors.emplace_back(loaded.info.display_name(), std::move(tensor));
    }
    return tensors;
}

Result<NamedTensors> load(Deserializer& opened, const LoadOptions& options) {
    RL_TRY_VOID(check_scalar_types(opened.index(), options));
    RL_TRY(model, opened.load(options));
    return tensors_of(model);
}

Result<NamedTensors> load_file(std::string_view uri, const LoadOptions& options, const OpenOptions& open_options) {
    RL_TRY(opened, Deserializer::open(uri, open_options));
    return load(opened, options);
}

Result<NamedTensors> load_streamed(Deserializer& opened, TensorCallback on_tensor, LoadOptions options) {
    RL_TRY_VOID(check_scalar_types(opened.index(), options));
    // Checked above, so a failure here is libtorch's own (a CUDA tensor in a CPU-only
    // libtorch): kept and returned, the tensor not handed over.
    std::mutex failure_lock;
    std::optional<Error> failure;
    options.on_tensor = [&](const StreamedTensor& streamed) {
        auto tensor = tensor_over(streamed.tensor, streamed.device, streamed.owner);
        if (!tensor) {
            std::lock_guard hold(failure_lock);
            if (!failure) {
                failure = tensor.error();
            }
            return;
        }
        on_tensor(streamed.tensor.info.display_name(), *tensor);
    };
    RL_TRY(model, opened.load(options));
    if (failure) {
        return *failure;
    }
    return tensors_of(model);
}

namespace {

// A module's parameters and buffers by name, matched with the file's tensors.
struct ModuleMatch {
    std::vector<std::pair<std::size_t, at::Tensor>> pairs; // index position, the module's tensor
    std::vector<std::string> missing;
    std::vector<std::string> unexpected;
};

ModuleMatch match_module(const Index& index, ::torch::nn::Module& module) {
    std::map<std::string, at::Tensor> named;
    for (const auto& item : module.named_parameters(true)) {
        named.emplace(item.key(), item.value());
    }
    for (const auto& item : module.named_buffers(true)) {
        if (item.value().defined()) {
            named.emplace(item.key(), item.value());
        }
    }
    ModuleMatch match;
    std::set<std::string> found;
    for (std::size_t k = 0; k < index.tensors.size(); ++k) {
        std::string name = index.tensors[k].display_name();
        const auto mine = named.find(name);
        if (mine == named.end()) {
            match.unexpected.push_back(std::move(name));
            continue;
        }
        match.pairs.emplace_back(k, mine->second);
        found.insert(std::move(name));
    }
    for (const auto& [name, tensor] : named) {
        if (!found.contains(name)) {
            match.missing.push_back(name);
        }
    }
    return match;
}

// A module tensor takes the file's tensor as loaded: same shape, loaded dtype, C order, CPU or CUDA.
Result<void> check_fits(const TensorInfo& info, const at::Tensor& mine, const LoadOptions& options) {
    const std::string name = "'" + info.display_name() + "'";
    const std::vector<std::int64_t> shape(info.shape.begin(), info.shape.end());
    if (mine.sizes().vec() != shape) {
        return fail(errc::invalid_argument, name + ": the module's tensor has shape " + c10::str(mine.sizes()) +
                                                ", the file's " + c10::str(at::IntArrayRef(shape)));
    }
    RL_TRY(type, scalar_type_of(loaded_dtype(info, options)));
    if (mine.scalar_type() != type) {
        return fail(errc::invalid_argument, name + ": the module's tensor is " + c10::toString(mine.scalar_type()) +
                                                ", the file's loads as " + c10::toString(type) +
                                                " (LoadOptions::dtype converts floating tensors)");
    }
    if (!mine.device().is_cpu() && !mine.device().is_cuda()) {
        return fail(errc::unsupported, name + ": the module's tensor is on " + mine.device().str() +
                                           " (only cpu and cuda; materialize meta modules with to_empty first)");
    }
    if (!mine.is_contiguous()) {
        return fail(errc::invalid_argument, name + ": the module's tensor is not contiguous");
    }
    return {};
}

} // namespace

Result<ModuleLoadSummary> load_into_module(Deserializer& opened, ::torch::nn::Module& module, LoadOptions options,
                                           bool strict) {
    const Index& index = opened.index();
    ModuleMatch match = match_module(index, module);
    if (strict && (!match.missing.empty() || !match.unexpected.empty())) {
        std::string detail = "the module and " + opened.source_name() + " differ (strict):";
        if (!match.missing.empty()) {
            detail += " missing from the file: " + names_text(match.missing) + ";";
        }
        if (!match.unexpected.empty()) {
            detail += " not in the module: " + names_text(match.unexpected) + ";";
        }
        return fail(errc::invalid_argument, detail + " pass strict=false to load the names both have");
    }
    // Every check before any byte is read; then one load per device.
    std::map<std::string, std::vector<std::pair<std::size_t, at::Tensor>>> by_device;
    for (auto& [k, mine] : match.pairs) {
        RL_TRY_VOID(check_fits(index.tensors[k], mine, options));
        by_device[device_text(mine.device())].emplace_back(k, mine);
    }
    ModuleLoadSummary summary;
    summary.missing = std::move(match.missing);
    summary.unexpected = std::move(match.unexpected);
    options.filter = nullptr;
    options.on_tensor = nullptr;
    for (auto& [device, pairs] : by_device) {
        std::sort(pairs.begin(), pairs.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
        std::unordered_map<std::string, std::byte*> memory;
        options.tensors.clear();
        for (auto& [k, mine] : pairs) {
            options.tensors.push_back(k);
            memory.emplace(index.tensors[k].display_name(), static_cast<std::byte*>(mine.data_ptr()));
        }
        options.device = device;
        options.destination = [&memory](const TensorInfo& info) { return memory.at(info.display_name()); };
        if (device != "cpu") {
            // Kernels queued on the module's tensors (their initialization) finish before our copies land.
            ::torch::cuda::synchronize(pairs.front().second.device().index());
        }
        RL_TRY(model, opened.load(options));
        summary.bytes += model.bytes;
        for (auto& [k, mine] : pairs) {
            summary.loaded.push_back(index.tensors[k].display_name());
        }
    }
    return summary;
}

Result<WriteSummary> write_file(std::string_view uri, const NamedTensors& tensors, std::string_view format,
                                const WriteOptions& options, const SafetensorsWriteOptions& layout) {
    const Format* target = format_named(format);
    if (target == nullptr) {
        return fail(errc::invalid_argument,
                    "unknown format '" + std::string(format) + "': expected " + format_names_text());
    }
    std::vector<at::Tensor> kept; // contiguous copies of strided tensors, alive until the write returns
    kept.reserve(tensors.size());
    std::vector<TensorToWrite> rows;
    rows.reserve(tensors.size());
    std::set<c10::DeviceIndex> devices;
    for (const auto& [name, given] : tensors) {
        const std::string where = "tensor '" + name + "'";
        if (!given.defined()) {
            return fail(errc::invalid_argument, where + " is undefined");
        }
        RL_TRY(dtype, dtype_of(given.scalar_type()));
        TensorToWrite row;
        row.path = {name};
        row.dtype = dtype;
        for (auto size : given.sizes()) {
            row.shape.push_back(static_cast<std::uint64_t>(size));
        }
        if (given.is_meta()) {
            row.is_meta = true;
        } else if (given.device().is_cpu() || given.device().is_cuda()) {
            const at::Tensor& dense = given.is_contiguous() ? given : kept.emplace_back(given.contiguous());
            row.bytes = {static_cast<const std::byte*>(dense.const_data_ptr()), dense.nbytes()};
            if (given.device().is_cuda()) {
                row.device = given.device().index();
                devices.insert(given.device().index());
            }
        } else {
            return fail(errc::unsupported, where + " is on " + given.device().str() + " (cpu, cuda or meta only)");
        }
        rows.push_back(std::move(row));
    }
    for (auto device : devices) {
        ::torch::cuda::synchronize(device); // the tensors' pending kernels (and our copies) done
    }
    return write_format(*target, uri, rows, options, layout);
}

} // namespace ringload::libtorch
