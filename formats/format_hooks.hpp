// formats/format_hooks.hpp
//
// What a registered format does, behind its description (ringload/format.hpp): tell its files
// from their first bytes, read their index, describe them for `ringload info`, and lay a new
// file out for the one write path (bindings/cpp/src/write/serializer.cpp). Each format fills one
// FormatHooks and one Format in formats/<name>/format.cpp; formats/registry.cpp lists them.
//
//     Detection detect(std::span<const std::byte> head, std::uint64_t size_bytes);
//     // yes: read_index reads it; refused: it is this format's, but one it will not read
//
// A load of tensors, one destination each, runs the stage graph its format builds
// (build_load_graph: tensorizer's records with their header hook and decrypt/hash stages; the
// plain formats' spans through build_plain_load_graph). Formats whose tensors view shared
// storages (tensors_view_storages) load those storages through the plain graph instead
// (bindings/cpp/src/load/storage_load.cpp).
#pragma once

#include "ringload/engine/device_link.hpp"
#include "ringload/engine/plain_graph.hpp"
#include "ringload/engine/source.hpp"
#include "ringload/engine/stage_graph.hpp"
#include "ringload/engine/task.hpp"
#include "ringload/engine/tensor_destination.hpp"
#include "ringload/engine/write_feed.hpp"
#include "ringload/engine/write_plan.hpp"
#include "ringload/error.hpp"
#include "ringload/format.hpp"
#include "ringload/tensor_info.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace ringload {

namespace tensorizer {
struct WriteEncryption;
class KeyResolver;
} // namespace tensorizer

// How many first bytes detection sees (fewer when the source is shorter).
inline constexpr std::size_t detect_head_bytes = 16;

// What a format makes of a source's first bytes.
struct Detection {
    enum class Verdict : std::uint8_t { no, yes, refused };
    Verdict verdict = Verdict::no;
    Error refusal; // refused: why it will not read this file, and what to do instead

    static Detection no() { return {}; }
    static Detection yes() { return {Verdict::yes, {}}; }
    static Detection refuse(Error why) { return {Verdict::refused, std::move(why)}; }
};

// The settings a writer may take. Each format uses the ones that apply to it; the public
// entry points (ringload/serializer.hpp) refuse the others before a write starts.
struct WriteLayout {
    const tensorizer::WriteEncryption* encryption = nullptr;   // formats that may_be_encrypted
    std::size_t alignment_bytes = 8;                           // safetensors: where the data starts
    std::vector<std::pair<std::string, std::string>> metadata; // safetensors' __metadata__
    bool keep_order = false;                                   // safetensors: data in the order given
};

// A new file as a format lays it out: the pieces the engine writes, and what the write path
// asks before the run (the feed's extents) and after it (pages to write again, finished).
class FormatWriteGraph : public PieceProducer {
public:
    virtual const WritePlan& plan() const noexcept = 0;
    virtual std::uint64_t tensor_bytes() const noexcept = 0;
    virtual std::uint32_t data_version() const noexcept = 0; // 0 for formats without one
    virtual std::vector<FileExtent> tensor_extents() const = 0;
    // After the plan ran: (file offset, bytes) of whole pages to write again with what only the
    // end of the run knew (hashes, MACs, CRC-32s); empty when the format finishes nothing.
    virtual Result<std::vector<std::pair<std::uint64_t, std::span<const std::byte>>>> finished_pages() = 0;
};

// What a run read from per-tensor headers that the index does not hold (tensorizer: module_idx).
class RecordHeaders {
public:
    virtual ~RecordHeaders() = default;
    virtual std::uint16_t module_index_of(const TensorInfo& tensor) const = 0;
};

struct LoadGraphRequest {
    bool verify_hashes = false;              // formats that stores_hashes; the caller refuses it for others
    tensorizer::KeyResolver* keys = nullptr; // formats that may_be_encrypted; must outlive the graph
    DeviceLink* device = nullptr;            // destinations are this device's memory; must outlive the graph
    std::string source_name;                 // the first word of every error
};

// A load's stage graph and what its run learns besides the tensors.
struct FormatLoadGraph {
    std::unique_ptr<StageGraph> stages;
    std::shared_ptr<const RecordHeaders> headers; // null: the index holds all there is
};

// The graph of formats that store each tensor's bytes plain and C-contiguous at its data
// offset (safetensors; torch zip tensors that own their storage): build_plain_graph's spans.
inline Result<FormatLoadGraph> build_plain_load_graph(const Index& index, std::vector<TensorDestination> destinations,
                                                      const LoadGraphRequest& request) {
    RL_TRY(stages, build_plain_tensor_graph(index, std::move(destinations), request.device, request.source_name));
    return FormatLoadGraph{std::move(stages), nullptr};
}

struct FormatHooks {
    Detection (*detect)(std::span<const std::byte> head, std::uint64_t size_bytes) = nullptr;
    Task<Result<Index>> (*read_index)(Source& source) = nullptr;
    FormatDescription (*describe)(const Index& index, DescriptionParts parts) = nullptr;
    // Checks every tensor and lays the file out (nothing written yet). The tensors' bytes and
    // the layout's encryption must outlive the graph; tensors with device >= 0 are read
    // through `device`, that device's link.
    Result<std::unique_ptr<FormatWriteGraph>> (*create_write_graph)(std::span<const TensorToWrite> tensors,
                                                                    const WriteLayout& layout, std::string target_name,
                                                                    DeviceLink* device) = nullptr;
    // The stage graph that loads the wanted tensors into `destinations` (any order); `index`
    // must outlive it.
    Result<FormatLoadGraph> (*build_load_graph)(const Index& index, std::vector<TensorDestination> destinations,
                                                const LoadGraphRequest& request) = nullptr;
    // What keeps a file that no format recognised from being one of this format's, in words,
    // for a caller who meant this format (by name or by the file's extension); "" when the
    // head looks right. Null: the format says nothing more than "unrecognised".
    std::string (*why_not)(std::span<const std::byte> head, std::uint64_t size_bytes) = nullptr;
};

} // namespace ringload
