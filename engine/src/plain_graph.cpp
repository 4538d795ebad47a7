// engine/src/plain_graph.cpp
#include "ringload/engine/plain_graph.hpp"

#include "ringload/engine/stages/byte_swap.hpp"
#include "ringload/engine/stages/device_destination.hpp"
#include "ringload/engine/stages/host_destination.hpp"

namespace ringload {
namespace {

// Host: copy, then swap the complete span where it landed. Device: swap in the slot, then upload.
std::vector<std::unique_ptr<Stage>> plain_stages(const PlainSpan& span, DeviceLink* device) {
    std::vector<std::unique_ptr<Stage>> stages;
    if (device == nullptr) {
        stages.push_back(std::make_unique<HostDestination>(span.destination));
        if (span.swap_bytes) {
            stages.push_back(std::make_unique<ByteSwap>(span.dtype, span.length_bytes, span.destination));
        }
        return stages;
    }
    if (span.swap_bytes) {
        stages.push_back(std::make_unique<ByteSwap>(span.dtype, span.length_bytes, nullptr));
    }
    stages.push_back(std::make_unique<DeviceDestination>(
        *device, span.destination, DeviceRecord{span.length_bytes, span.dtype, span.convert_to, 0}));
    return stages;
}

} // namespace

Result<std::unique_ptr<StageGraph>> build_plain_graph(std::vector<PlainSpan> spans, DeviceLink* device,
                                                      std::string source_name) {
    return build_plain_graph(std::move(spans), device, std::move(source_name), plain_merge_gap_bytes);
}

Result<std::unique_ptr<StageGraph>> build_plain_graph(std::vector<PlainSpan> spans, DeviceLink* device,
                                                      std::string source_name, std::uint64_t merge_gap_bytes) {
    std::vector<RecordSpec> records;
    records.reserve(spans.size());
    for (auto& span : spans) {
        if (span.convert_to && device == nullptr) {
            return fail(errc::invalid_argument, source_name + ": " + span.name +
                                                    ": a host copy graph does not convert (convert after the load)");
        }
        RecordSpec record;
        record.record_offset_bytes = span.source_offset_bytes;
        record.data_offset_bytes = span.source_offset_bytes;
        record.data_length_bytes = span.length_bytes;
        record.host_destination = device == nullptr ? span.destination : nullptr;
        record.stages = plain_stages(span, device);
        record.name = std::move(span.name);
        record.id = span.id;
        records.push_back(std::move(record));
    }
    return StageGraph::create(std::move(records), {std::move(source_name), merge_gap_bytes, device});
}

Result<std::unique_ptr<StageGraph>> build_plain_tensor_graph(const Index& index,
                                                             std::vector<TensorDestination> destinations,
                                                             DeviceLink* device, std::string source_name) {
    std::vector<PlainSpan> spans;
    spans.reserve(destinations.size());
    for (const auto& destination : destinations) {
        const TensorInfo& tensor = index.tensors[destination.tensor_index];
        std::optional<DType> convert_to;
        if (destination.dtype && *destination.dtype != tensor.dtype) {
            convert_to = destination.dtype;
        }
        spans.push_back({tensor.data_offset_bytes, tensor.data_length_bytes, destination.data,
                         "tensor '" + tensor.display_name() + "'", tensor.dtype, false, convert_to,
                         destination.tensor_index});
    }
    return build_plain_graph(std::move(spans), device, std::move(source_name));
}

} // namespace ringload
