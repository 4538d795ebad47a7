// engine/include/ringload/engine/copy_graph.hpp
//
// The stage graph of formats that store data plain (safetensors, torch zip): each span of
// source bytes goes unchanged to one place, host or device memory. Adjacent spans are read as
// one range, so a whole-file load is one sequential stream:
//
//  file:  [ header ][ span 0 ........ ][ span 1 ][ gap ][ span 2 ......... ]
//  ring:            [ slot 3    ][ slot 4   ][ slot 5   ]  [ slot 6   ][ s7 ]
//
// Workers copy each chunk's share of every span it overlaps (non-temporal stores), or, on a
// device, queue an upload from the slot, which stays leased until the copy completed.
// Big-endian files (torch zip saved with byteorder 'big') swap each element's bytes: on the
// host in the destination once the span is complete, on a device in the slot before the upload.
// Device loads that convert the dtype upload into scratch and convert once the span is there.
#pragma once

#include "ringload/dtype.hpp"
#include "ringload/engine/device_link.hpp"
#include "ringload/engine/plan.hpp"

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace ringload {

struct CopySpan {
    std::uint64_t source_offset_bytes = 0;
    std::uint64_t length_bytes = 0;
    std::byte* destination = nullptr; // host memory, or device memory for a device graph
    std::string name;                 // for errors: "tensor 'wte.weight'", "storage 'data/3'"
    DType dtype = DType::uint8;       // the stored element type (byte swapping, conversion)
    bool swap_bytes = false;          // stored big-endian: reverse each element (each half of a complex)
    // Device graphs only: the span is converted to this type into `destination` once all its
    // bytes landed (through scratch from DeviceLink::allocate_scratch).
    std::optional<DType> convert_to;
};

class CopyGraph final : public ChunkHandler {
public:
    // Spans must not overlap in the source. `device`, when given, must outlive the graph.
    static Result<std::unique_ptr<CopyGraph>> create(std::vector<CopySpan> spans, DeviceLink* device,
                                                     std::string source_name);
    ~CopyGraph() override;

    const Plan& plan() const noexcept { return plan_; }
    Result<void> process(const ChunkPtr& chunk) override;
    std::vector<ReadRange> in_place_ranges() const override;
    std::byte* in_place_destination(std::uint64_t offset_bytes) const override;
    Result<void> finish() override;
    void abandon() noexcept override;

    // Spans closer than this are read as one range (torch zip's local headers between
    // storages are ~100 bytes: reading them beats another request).
    static constexpr std::uint64_t merge_gap_bytes = 64 << 10;
    static constexpr std::uint64_t in_place_min_bytes = 1 << 20;

    struct SpanLoad;

private:
    CopyGraph(DeviceLink* device, std::string source_name);
    Result<void> take(SpanLoad& span, std::uint64_t begin, std::uint64_t end, const std::byte* source,
                      const ChunkPtr& chunk);
    Result<void> upload(SpanLoad& span, std::uint64_t begin, std::uint64_t end, std::byte* source,
                        const ChunkPtr& chunk);
    Result<void> complete(SpanLoad& span);
    Error span_error(const SpanLoad& span, const Error& error) const;

    DeviceLink* device_;
    std::string source_name_;
    std::vector<std::unique_ptr<SpanLoad>> spans_; // sorted by source offset
    Plan plan_;
    std::atomic<bool> failed_{false};
};

// Reverses the bytes of each `item`-byte element of `bytes` (a complex type: of each half).
void swap_element_bytes(std::byte* bytes, std::uint64_t length, DType dtype) noexcept;

} // namespace ringload
