// bindings/torch/include/ringload/torch.hpp
//
// ringload's loads as libtorch tensors (the ringload::torch target, built where libtorch is
// found): a file or URI in any of the three formats into at::Tensors on the CPU or a GPU that
// are the load's own memory (no copy), into a torch::nn::Module's parameters and buffers in
// place, or handed over one by one as they land; and at::Tensors written in any format.
//
//     auto tensors = ringload::libtorch::load_file("/models/gpt2.safetensors");  // Result<NamedTensors>
//     if (!tensors) { log(tensors.error().message()); return; }
//     for (auto& [name, tensor] : *tensors) { use(name, tensor); }   // CPU, zero-copy
//
//     ringload::LoadOptions options;
//     options.device = "cuda:0";                                       // at::Tensors on cuda:0
//     auto opened = ringload::Deserializer::open("s3://bucket/gpt2.tensors").value();
//     auto summary = ringload::libtorch::load_into_module(opened, model, options);  // in place
//
//     ringload::libtorch::write_file("/models/out.pt", *tensors, "torch");
//
// Ownership: every tensor holds a shared owner of the load's memory (the host arena or the
// device block, as LoadedModel and StreamedTensor do) in its storage's deleter, so the memory
// lives as long as any tensor of the load, whatever happens to the Deserializer, the LoadedModel
// or the Result. Tensors of one load share one allocation, not one torch storage: torch does not
// know two of them are neighbours (writing past one's end is as wrong as ever).
// Thread: as the C++ API (ringload.hpp); the tensors may be used and freed on any thread.
//
// Only this header and the adapter's source include torch's headers.
#pragma once

#include "ringload/ringload.hpp"

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>
#include <torch/nn/module.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ringload::libtorch {

using NamedTensor = std::pair<std::string, at::Tensor>;
using NamedTensors = std::vector<NamedTensor>;

// The at::ScalarType of each DType (float8 variants and uint16/32/64 need libtorch >= 2.1-2.7;
// an older libtorch refuses those with errc::unsupported, naming the type), and back.
Result<c10::ScalarType> scalar_type_of(DType dtype);
Result<DType> dtype_of(c10::ScalarType type);

// One tensor of a load as an at::Tensor over its memory (no copy) on `device` ("cpu" or
// "cuda:N"), whose storage keeps `owner` alive (null: memory the caller gave through
// LoadOptions::destination, which must outlive the tensor). A torch view loaded with
// LoadOptions::contiguous = false keeps its strides (a strided view of the storage's memory);
// with contiguous = true (the default) it is the C-order copy the load made. A tensor without
// elements is a fresh empty tensor (there is no memory to share).
Result<at::Tensor> tensor_over(const LoadedTensor& tensor, std::string_view device, std::shared_ptr<const void> owner);

// Every tensor of a finished load, in file order, named by TensorInfo::display_name().
Result<NamedTensors> tensors_of(const LoadedModel& model);

// Loads `opened` (or opens `uri` and loads it) with `options` and returns its tensors:
// options.device says where ("cpu", "cuda:N"), options.dtype converts on the way, and the other
// options act as in Deserializer::load.
Result<NamedTensors> load(Deserializer& opened, const LoadOptions& options = {});
Result<NamedTensors> load_file(std::string_view uri, const LoadOptions& options = {},
                               const OpenOptions& open_options = {});

// The streamed hand-over (LoadOptions::on_tensor) with at::Tensors: `on_tensor` is called once
// per tensor as soon as its bytes are final, long before the load returns, on a load worker or
// the GPU link's completion thread, one call at a time. Keep it short and never throw (queue the
// tensor for another thread); the tensor may be kept: it owns its memory like any other. Returns
// all the tensors once the load finished. An on_tensor already in `options` is replaced.
using TensorCallback = std::function<void(const std::string& name, const at::Tensor& tensor)>;
Result<NamedTensors> load_streamed(Deserializer& opened, TensorCallback on_tensor, LoadOptions options = {});

// What load_into_module did: names loaded in place, the module's parameters and buffers the file
// lacked, and the file's tensors the module lacked (both empty unless `strict` is false).
struct ModuleLoadSummary {
    std::vector<std::string> loaded;
    std::vector<std::string> missing;
    std::vector<std::string> unexpected;
    std::uint64_t bytes = 0;
};

// Loads the file's tensors straight into the memory of the module's parameters and buffers of
// the same name (named_parameters/named_buffers, recursive): their data_ptr stays the same, and
// no tensor of the load's own is made. Each must match its tensor's shape and loaded dtype (the
// stored one, or options.dtype for floating tensors), be contiguous and on the CPU or a CUDA
// device; one load runs per device the module uses (options.device is set for each). strict
// (torch's load_state_dict rule): a name on one side only fails the load before anything is
// read; else those are skipped and listed. options.filter, tensors, destination and on_tensor
// are replaced. On a GPU, the devices are synchronized first so no earlier kernel writes them.
Result<ModuleLoadSummary> load_into_module(Deserializer& opened, ::torch::nn::Module& module, LoadOptions options = {},
                                           bool strict = true);

// Writes named tensors as `format` ("tensorizer", "safetensors" or "torch"; ringload::write_format
// says what each takes: safetensors' layout from `layout`, encryption for tensorizer). Tensors
// may be on the CPU or a CUDA device (written from there: the device is synchronized first), or
// on the meta device (tensorizer and torch: shape and dtype only). A non-contiguous tensor is
// written in C order through a contiguous copy made for the call.
Result<WriteSummary> write_file(std::string_view uri, const NamedTensors& tensors, std::string_view format,
                                const WriteOptions& options = {}, const SafetensorsWriteOptions& layout = {});

} // namespace ringload::libtorch
