// formats/safetensors/write_graph.hpp
//
// A safetensors file as a WritePlan for the engine, and the producer that fills its windows.
//
//  [ u64 N | JSON header + spaces ][ tensor a ][ tensor b ] ... (no gaps: offsets are contiguous)
//
// The header depends only on names, dtypes and shapes, so the whole file is laid out before the
// first byte is written and nothing is patched afterwards. Data is copied from the caller's
// memory (host, or a device through its DeviceLink) into the slots by the workers.
//
// Names: a TensorToWrite path of one string is the key; a longer path is joined with "."
// (list indexes in decimal), the way nested state dicts are flattened for safetensors. Refused:
// meta tensors (safetensors stores no shape-only tensors), duplicate names, "__metadata__" as a
// name, and dtypes the format has no name for (header_json.hpp).
#pragma once

#include "formats/safetensors/header_json.hpp"
#include "ringload/engine/device_link.hpp"
#include "ringload/engine/write_feed.hpp"
#include "ringload/engine/write_plan.hpp"
#include "ringload/tensor_info.hpp"

#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace ringload::safetensors {

struct LayoutOptions {
    std::size_t alignment_bytes = 8; // where the data starts: 8 (the reference) or 64
    std::vector<std::pair<std::string, std::string>> metadata;
    // false: data sorted as the reference sorts it (header_json.hpp), so that the same tensors
    // give the same bytes as safetensors.torch.save_file; true: in the order given.
    bool keep_order = false;
};

// "model.layers.0.weight" for {"model", "layers", 0, "weight"}.
std::string joined_name(const std::vector<PathComponent>& path);

class WriteGraph final : public PieceProducer {
public:
    // Checks every tensor and lays the file out; fails before anything is written. The
    // tensors' bytes must outlive the graph; tensors with device >= 0 are read through `device`,
    // which must be that device's link and outlive the graph.
    static Result<std::unique_ptr<WriteGraph>> create(std::span<const TensorToWrite> tensors,
                                                      const LayoutOptions& options, std::string target_name,
                                                      DeviceLink* device = nullptr);

    const WritePlan& plan() const noexcept { return plan_; }
    std::uint64_t tensor_bytes() const noexcept { return tensor_bytes_; }
    // Where the file reads each given tensor's bytes, in the order given (a WriteFeed's extents).
    std::vector<FileExtent> tensor_extents() const;
    std::span<const std::byte> header() const noexcept { return header_; }

    Result<void> produce_part(const WritePiece& piece, std::uint64_t from, std::span<std::byte> dst) override;
    Result<void> produce_whole(const WritePiece& piece, std::span<std::byte> first,
                               std::span<std::byte> second) override;

private:
    struct Record {
        const TensorToWrite* tensor = nullptr;
        std::string name;
    };

    // After create()'s checks and ordering: the header, and the plan's pieces in data order.
    Result<void> lay_out(const LayoutOptions& options);

    std::span<const TensorToWrite> tensors_;
    std::string target_;
    DeviceLink* device_ = nullptr;
    std::vector<Record> records_; // in data order; piece tag r + 1 is record r, tag 0 the header
    std::vector<std::byte> header_;
    std::uint64_t tensor_bytes_ = 0;
    WritePlan plan_;
};

} // namespace ringload::safetensors
