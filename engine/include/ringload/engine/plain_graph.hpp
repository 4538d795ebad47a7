// engine/include/ringload/engine/plain_graph.hpp
//
// The stage graph of formats that store data plain (safetensors, torch zip): each span of
// source bytes goes unchanged to one place, host or device memory, with its bytes swapped
// when the file is big-endian and, on a device, converted to another dtype once complete.
// Spans closer than plain_merge_gap_bytes are read as one range, so a whole-file load is
// one sequential stream:
//
//  file:  [ header ][ span 0 ........ ][ span 1 ][ gap ][ span 2 ......... ]
//  ring:            [ slot 3    ][ slot 4   ][ slot 5   ]  [ slot 6   ][ s7 ]
//
//     RL_TRY(graph, build_plain_graph(std::move(spans), device, uri));
#pragma once

#include "ringload/dtype.hpp"
#include "ringload/engine/device_link.hpp"
#include "ringload/engine/stage_graph.hpp"
#include "ringload/engine/tensor_destination.hpp"
#include "ringload/tensor_info.hpp"

#include <optional>
#include <string>
#include <vector>

namespace ringload {

struct PlainSpan {
    std::uint64_t source_offset_bytes = 0;
    std::uint64_t length_bytes = 0;
    std::byte* destination = nullptr; // host memory, or device memory for a device graph
    std::string name;                 // for errors: "tensor 'wte.weight'", "storage 'data/3'"
    DType dtype = DType::uint8;       // the stored element type (byte swapping, conversion)
    bool swap_bytes = false;          // stored big-endian: reverse each element (each half of a complex)
    // Device graphs only: the span is converted to this type into `destination` once all its
    // bytes landed (through scratch from DeviceLink::allocate_scratch).
    std::optional<DType> convert_to;
    std::size_t id = 0; // given back by StageGraph::on_record_done (a storage's, a tensor's index)
};

// Spans closer than this are read as one range (torch zip's local headers between storages
// are ~100 bytes: reading them beats another request).
inline constexpr std::uint64_t plain_merge_gap_bytes = 64 << 10;

// Spans must not overlap in the source. `device`, when given, must outlive the graph.
Result<std::unique_ptr<StageGraph>> build_plain_graph(std::vector<PlainSpan> spans, DeviceLink* device,
                                                      std::string source_name);

// The same with the merge gap chosen by the caller: sliced reads (bindings/cpp/src/load/slice_load.cpp)
// merge only where the spans are dense, so that a slice reads little beyond what it needs.
Result<std::unique_ptr<StageGraph>> build_plain_graph(std::vector<PlainSpan> spans, DeviceLink* device,
                                                      std::string source_name, std::uint64_t merge_gap_bytes);

// One span per wanted tensor of an index whose tensors lie C-contiguous and plain at their data
// offsets (safetensors): destinations that name another dtype convert on the device.
Result<std::unique_ptr<StageGraph>> build_plain_tensor_graph(const Index& index,
                                                             std::vector<TensorDestination> destinations,
                                                             DeviceLink* device, std::string source_name);

} // namespace ringload
