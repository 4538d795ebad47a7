// engine/src/copy_graph.cpp
#include "ringload/engine/copy_graph.hpp"

#include "ringload/engine/stream_copy.hpp"

#include <algorithm>
#include <utility>

namespace ringload {

struct CopyGraph::SpanLoad {
    CopySpan span;
    std::uint64_t end_bytes = 0;
    std::atomic<std::uint64_t> received{0};
    // Device conversion: raw bytes gather in scratch, allocated by the first piece.
    std::mutex scratch_mutex;
    std::byte* scratch = nullptr;
    std::atomic<bool> converted{false};
};

namespace {

std::size_t swap_unit(DType dtype) {
    const std::size_t item = itemsize(dtype);
    const bool complex = dtype == DType::complex32 || dtype == DType::complex64 || dtype == DType::complex128;
    return complex ? item / 2 : item;
}

} // namespace

void swap_element_bytes(std::byte* bytes, std::uint64_t length, DType dtype) noexcept {
    const std::size_t unit = swap_unit(dtype);
    if (unit <= 1) {
        return;
    }
    for (std::uint64_t at = 0; at + unit <= length; at += unit) {
        std::reverse(bytes + at, bytes + at + unit);
    }
}

CopyGraph::CopyGraph(DeviceLink* device, std::string source_name)
    : device_(device), source_name_(std::move(source_name)) {}

CopyGraph::~CopyGraph() {
    if (device_ == nullptr) {
        return;
    }
    for (const auto& load : spans_) {
        if (load->scratch != nullptr && !load->converted.load()) {
            device_->free_scratch(load->scratch); // a failed load: the conversion never ran
        }
    }
}

Result<std::unique_ptr<CopyGraph>> CopyGraph::create(std::vector<CopySpan> spans, DeviceLink* device,
                                                     std::string source_name) {
    std::unique_ptr<CopyGraph> graph(new CopyGraph(device, std::move(source_name)));
    // By offset, then length: an empty span sorts before the span that starts where it lies.
    std::sort(spans.begin(), spans.end(), [](const CopySpan& a, const CopySpan& b) {
        return a.source_offset_bytes != b.source_offset_bytes ? a.source_offset_bytes < b.source_offset_bytes
                                                              : a.length_bytes < b.length_bytes;
    });
    for (auto& span : spans) {
        if (span.convert_to && device == nullptr) {
            return fail(errc::invalid_argument, graph->source_name_ + ": " + span.name +
                                                    ": a host copy graph does not convert (convert after the load)");
        }
        auto load = std::make_unique<SpanLoad>();
        load->end_bytes = span.source_offset_bytes + span.length_bytes;
        load->span = std::move(span);
        if (!graph->spans_.empty() && graph->spans_.back()->end_bytes > load->span.source_offset_bytes) {
            return fail(errc::invalid_argument, graph->source_name_ + ": " + load->span.name + " overlaps " +
                                                    graph->spans_.back()->span.name + " in the source");
        }
        if (load->span.length_bytes > 0) {
            auto& ranges = graph->plan_.ranges;
            const std::uint64_t begin = load->span.source_offset_bytes;
            if (!ranges.empty() && begin - ranges.back().end_bytes() <= merge_gap_bytes) {
                ranges.back().length_bytes = load->end_bytes - ranges.back().offset_bytes;
            } else {
                ranges.push_back({begin, load->span.length_bytes});
            }
        }
        graph->spans_.push_back(std::move(load));
    }
    return graph;
}

Result<void> CopyGraph::process(const ChunkPtr& chunk) {
    if (failed_.load()) {
        return {};
    }
    const std::uint64_t chunk_begin = chunk->source_offset_bytes();
    const std::uint64_t chunk_end = chunk->source_end_bytes();
    auto it = std::partition_point(spans_.begin(), spans_.end(),
                                   [&](const auto& load) { return load->end_bytes <= chunk_begin; });
    for (; it != spans_.end() && (*it)->span.source_offset_bytes < chunk_end; ++it) {
        SpanLoad& load = **it;
        const std::uint64_t begin = std::max(chunk_begin, load.span.source_offset_bytes);
        const std::uint64_t end = std::min(chunk_end, load.end_bytes);
        if (begin >= end) {
            continue;
        }
        auto taken = take(load, begin, end, chunk->bytes().data() + (begin - chunk_begin), chunk);
        if (!taken) {
            failed_.store(true);
            return span_error(load, taken.error());
        }
    }
    return {};
}

Result<void> CopyGraph::take(SpanLoad& load, std::uint64_t begin, std::uint64_t end, const std::byte* source,
                             const ChunkPtr& chunk) {
    const std::uint64_t offset = begin - load.span.source_offset_bytes;
    if (device_ != nullptr) {
        // Each source byte reaches one process() call: the slot's bytes are ours to swap.
        auto writable = chunk->mutable_bytes().data() + (source - chunk->bytes().data());
        return upload(load, begin, end, writable, chunk);
    }
    std::byte* destination = load.span.destination + offset;
    if (destination != source) { // read in place (in_place_ranges): already there
        copy_to_destination(destination, source, end - begin);
    }
    if (load.received.fetch_add(end - begin) + (end - begin) == load.span.length_bytes) {
        return complete(load);
    }
    return {};
}

Result<void> CopyGraph::upload(SpanLoad& load, std::uint64_t begin, std::uint64_t end, std::byte* source,
                               const ChunkPtr& chunk) {
    const std::uint64_t offset = begin - load.span.source_offset_bytes;
    const std::uint64_t length = end - begin;
    if (load.span.swap_bytes) {
        const std::size_t unit = swap_unit(load.span.dtype);
        if (offset % unit != 0 || length % unit != 0) {
            return fail(errc::unsupported, "a big-endian element straddles two ring slots (slot size " +
                                               std::string("not a multiple of the element size)"));
        }
        swap_element_bytes(source, length, load.span.dtype);
    }
    std::byte* target = load.span.destination;
    if (load.span.convert_to) {
        std::lock_guard lock(load.scratch_mutex);
        if (load.scratch == nullptr) {
            RL_TRY(scratch, device_->allocate_scratch(load.span.length_bytes));
            load.scratch = scratch;
        }
        target = load.scratch;
    }
    RL_TRY_VOID(device_->upload(target + offset, source, length, chunk));
    // Counted after the copy is queued: the thread that completes the count converts, after
    // every copy of this span (convert() orders itself after all queued uploads).
    if (load.received.fetch_add(length) + length == load.span.length_bytes) {
        return complete(load);
    }
    return {};
}

Result<void> CopyGraph::complete(SpanLoad& load) {
    const CopySpan& span = load.span;
    if (device_ == nullptr) {
        if (span.swap_bytes) {
            swap_element_bytes(span.destination, span.length_bytes, span.dtype);
        }
        return {};
    }
    if (span.convert_to) {
        load.converted.store(true);
        return device_->convert(span.destination, *span.convert_to, load.scratch, span.dtype,
                                span.length_bytes / itemsize(span.dtype));
    }
    return {};
}

std::vector<ReadRange> CopyGraph::in_place_ranges() const {
    std::vector<ReadRange> ranges;
    if (device_ != nullptr) {
        return ranges; // device memory is no place for a socket to write into
    }
    for (const auto& load : spans_) {
        if (load->span.length_bytes >= in_place_min_bytes) {
            ranges.push_back({load->span.source_offset_bytes, load->span.length_bytes});
        }
    }
    return ranges;
}

std::byte* CopyGraph::in_place_destination(std::uint64_t offset_bytes) const {
    auto it = std::partition_point(spans_.begin(), spans_.end(),
                                   [&](const auto& load) { return load->end_bytes <= offset_bytes; });
    if (it == spans_.end() || (*it)->span.source_offset_bytes > offset_bytes) {
        return nullptr;
    }
    return (*it)->span.destination + (offset_bytes - (*it)->span.source_offset_bytes);
}

Result<void> CopyGraph::finish() {
    for (const auto& load : spans_) {
        if (load->received.load() != load->span.length_bytes) {
            return fail(errc::truncated, source_name_ + ": " + load->span.name + ": got " +
                                             std::to_string(load->received.load()) + " of " +
                                             std::to_string(load->span.length_bytes) + " bytes");
        }
    }
    if (device_ != nullptr) {
        // Every chunk is back, so every upload has landed; conversions may not have.
        auto synchronized = device_->synchronize();
        if (!synchronized) {
            return with_context(synchronized.error(), source_name_);
        }
    }
    return {};
}

void CopyGraph::abandon() noexcept {
    failed_.store(true); // nothing is held past process(): the device link keeps its own chunks
}

Error CopyGraph::span_error(const SpanLoad& load, const Error& error) const {
    return with_context(Error{error.code, load.span.name + ": " + error.detail}, source_name_);
}

} // namespace ringload
