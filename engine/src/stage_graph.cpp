// engine/src/stage_graph.cpp
#include "ringload/engine/stage_graph.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace ringload {
namespace {

// The end of every record's chain: counts the data bytes that left its last stage.
class RecordEnd final : public Stage {
public:
    explicit RecordEnd(std::function<void(std::uint64_t)> out) : out_(std::move(out)) {}
    std::string_view name() const override { return "end"; }
    Result<void> process(Piece piece) override {
        out_(piece.length());
        return {};
    }
    bool accepts_bytes_in_place() const noexcept override { return true; }

private:
    std::function<void(std::uint64_t)> out_;
};

} // namespace

// One record's progress through the stream: its header as it is gathered, and how many data
// bytes went down its stages.
class StageGraph::RecordLoad final : public FailureSink {
public:
    RecordLoad(StageGraph& graph, RecordSpec spec) : graph_(graph), spec_(std::move(spec)) {
        header_.resize(spec_.data_offset_bytes - spec_.record_offset_bytes);
        unsettled_.store(spec_.data_length_bytes + (header_.empty() ? 0 : 1));
        spec_.stages.push_back(std::make_unique<RecordEnd>([this](std::uint64_t bytes) { settle(bytes); }));
        in_place_ = spec_.host_destination != nullptr &&
                    std::all_of(spec_.stages.begin(), spec_.stages.end(),
                                [](const auto& stage) { return stage->accepts_bytes_in_place(); });
        std::span<const std::unique_ptr<Stage>> stages(spec_.stages);
        for (std::size_t i = 0; i < stages.size(); ++i) {
            stages[i]->attach(*this, StageChain(stages.subspan(i + 1)));
        }
    }

    void fail(Error error) noexcept override { (void)graph_.record_failure(named(std::move(error))); }

    Error named(Error error) const {
        return with_context(Error{error.code, spec_.name + ": " + error.detail}, graph_.options_.source_name);
    }

    const RecordSpec& spec() const noexcept { return spec_; }
    std::uint64_t record_end() const noexcept { return spec_.data_offset_bytes + spec_.data_length_bytes; }
    bool in_place() const noexcept { return in_place_; }

    // Header bytes [begin, end) of the source, at `bytes`: true for the call that completes it.
    bool gather_header(std::uint64_t begin, std::uint64_t end, const std::byte* bytes) {
        std::memcpy(header_.data() + (begin - spec_.record_offset_bytes), bytes, end - begin);
        return header_received_.fetch_add(end - begin) + (end - begin) == header_.size();
    }
    std::span<const std::byte> header() const noexcept { return header_; }

    // Header (1) or data bytes that are final: the call that settles the last one completes the
    // record. Records without data complete in finish() instead (their zero fill comes there).
    void settle(std::uint64_t count) {
        if (spec_.data_length_bytes > 0 && unsettled_.fetch_sub(count, std::memory_order_acq_rel) == count) {
            graph_.complete(*this);
        }
    }

    Result<void> take_data(Piece piece) {
        data_received_.fetch_add(piece.length(), std::memory_order_relaxed);
        return StageChain(spec_.stages)(std::move(piece));
    }

    Result<void> finish() const {
        if (header_received_.load() != header_.size()) {
            return named(ringload::fail(errc::truncated, "its header was never read completely"));
        }
        for (const auto& stage : spec_.stages) {
            auto finished = stage->finish();
            if (!finished) {
                return named(finished.error());
            }
        }
        const std::uint64_t received = data_received_.load();
        if (received != spec_.data_length_bytes) {
            return named(ringload::fail(errc::truncated, "got " + std::to_string(received) + " of " +
                                                             std::to_string(spec_.data_length_bytes) + " bytes"));
        }
        return {};
    }

    void abandon() noexcept {
        for (const auto& stage : spec_.stages) {
            stage->abandon();
        }
    }

private:
    StageGraph& graph_;
    RecordSpec spec_;
    std::vector<std::byte> header_;
    std::atomic<std::uint64_t> header_received_{0};
    std::atomic<std::uint64_t> data_received_{0};
    std::atomic<std::uint64_t> unsettled_{0}; // data bytes not yet out of the last stage, + 1 for the header
    bool in_place_ = false;
};

StageGraph::StageGraph(StageGraphOptions options) : options_(std::move(options)) {}

StageGraph::~StageGraph() {
    if (options_.device != nullptr && landing_.load() > 0) {
        (void)options_.device->synchronize(); // a failed run: its when_landed calls use this graph
    }
}

Result<std::unique_ptr<StageGraph>> StageGraph::create(std::vector<RecordSpec> records, StageGraphOptions options) {
    std::unique_ptr<StageGraph> graph(new StageGraph(std::move(options)));
    // By offset, then length: an empty record sorts before the one that starts where it lies.
    std::sort(records.begin(), records.end(), [](const RecordSpec& a, const RecordSpec& b) {
        const std::uint64_t a_end = a.data_offset_bytes + a.data_length_bytes;
        const std::uint64_t b_end = b.data_offset_bytes + b.data_length_bytes;
        return a.record_offset_bytes != b.record_offset_bytes ? a.record_offset_bytes < b.record_offset_bytes
                                                              : a_end < b_end;
    });
    graph->records_.reserve(records.size());
    for (auto& record : records) {
        RL_TRY_VOID(graph->add(std::move(record)));
    }
    graph->read_small_record_first();
    return graph;
}

void StageGraph::read_small_record_first() {
    auto first = std::find_if(records_.begin(), records_.end(),
                              [](const auto& record) { return record->spec().data_length_bytes > 0; });
    if (first == records_.end() || (*first)->spec().data_length_bytes < lead_record_min_bytes) {
        return;
    }
    auto small = std::find_if(std::next(first), records_.end(), [](const auto& record) {
        const std::uint64_t length = record->spec().data_length_bytes;
        return length > 0 && length <= lead_small_max_bytes;
    });
    if (small == records_.end()) {
        return;
    }
    // Its range, cut around it: [ before ][ the small record ][ after ], each still in order.
    const std::uint64_t begin = (*small)->spec().record_offset_bytes;
    const std::uint64_t end = (*small)->record_end();
    auto& ranges = plan_.ranges;
    auto range = std::find_if(ranges.begin(), ranges.end(),
                              [&](const ReadRange& r) { return r.offset_bytes <= begin && end <= r.end_bytes(); });
    RL_ASSERT(range != ranges.end(), "a record outside the plan");
    const ReadRange whole = *range;
    std::vector<ReadRange> cut;
    if (whole.offset_bytes < begin) {
        cut.push_back({whole.offset_bytes, begin - whole.offset_bytes});
    }
    const std::size_t first_index = static_cast<std::size_t>(range - ranges.begin()) + cut.size();
    cut.push_back({begin, end - begin});
    if (end < whole.end_bytes()) {
        cut.push_back({end, whole.end_bytes() - end});
    }
    range = ranges.erase(range);
    ranges.insert(range, cut.begin(), cut.end());
    plan_.read_first = first_index;
}

Result<void> StageGraph::add(RecordSpec spec) {
    RL_ASSERT(spec.record_offset_bytes <= spec.data_offset_bytes, "a record's header ends after its data begins");
    // The hook runs when the header's last byte arrives: a record without header bytes would
    // never arm its stages, and pieces parked for them would hold their slots for ever.
    RL_ASSERT(!spec.on_header || spec.record_offset_bytes < spec.data_offset_bytes, "a header hook without a header");
    if (!records_.empty() && records_.back()->record_end() > spec.record_offset_bytes) {
        return fail(errc::invalid_argument, options_.source_name + ": " + spec.name + " overlaps " +
                                                records_.back()->spec().name + " in the source");
    }
    auto record = std::make_unique<RecordLoad>(*this, std::move(spec));
    const std::uint64_t begin = record->spec().record_offset_bytes;
    if (record->record_end() > begin) {
        auto& ranges = plan_.ranges;
        if (!ranges.empty() && begin - ranges.back().end_bytes() <= options_.merge_gap_bytes) {
            ranges.back().length_bytes = record->record_end() - ranges.back().offset_bytes;
        } else {
            ranges.push_back({begin, record->record_end() - begin});
        }
    }
    records_.push_back(std::move(record));
    return {};
}

Result<void> StageGraph::process(const ChunkPtr& chunk) {
    if (failed_.load(std::memory_order_relaxed)) {
        return first_failure(); // stops the run early: no point reading on
    }
    const std::uint64_t chunk_begin = chunk->source_offset_bytes();
    const std::uint64_t chunk_end = chunk->source_end_bytes();
    auto it = std::partition_point(records_.begin(), records_.end(),
                                   [&](const auto& record) { return record->record_end() <= chunk_begin; });
    for (; it != records_.end() && (*it)->spec().record_offset_bytes < chunk_end; ++it) {
        RL_TRY_VOID(take(**it, chunk));
        if (failed_.load(std::memory_order_relaxed)) {
            return first_failure();
        }
    }
    return {};
}

Result<void> StageGraph::take(RecordLoad& record, const ChunkPtr& chunk) {
    RL_TRY_VOID(take_header(record, chunk));
    const RecordSpec& spec = record.spec();
    const std::uint64_t begin = std::max(spec.data_offset_bytes, chunk->source_offset_bytes());
    const std::uint64_t end = std::min(record.record_end(), chunk->source_end_bytes());
    if (begin >= end) {
        return {};
    }
    Piece piece;
    piece.begin = begin - spec.data_offset_bytes;
    piece.end = end - spec.data_offset_bytes;
    piece.bytes = chunk->mutable_bytes().data() + (begin - chunk->source_offset_bytes());
    // Read in place (in_place_ranges): the bytes already are in the destination.
    piece.at_destination = spec.host_destination != nullptr && piece.bytes == spec.host_destination + piece.begin;
    piece.keep_alive = chunk;
    auto taken = record.take_data(std::move(piece));
    if (!taken) {
        return record_failure(record.named(taken.error()));
    }
    return {};
}

Result<void> StageGraph::take_header(RecordLoad& record, const ChunkPtr& chunk) {
    const RecordSpec& spec = record.spec();
    const std::uint64_t begin = std::max(spec.record_offset_bytes, chunk->source_offset_bytes());
    const std::uint64_t end = std::min(spec.data_offset_bytes, chunk->source_end_bytes());
    if (begin >= end) {
        return {};
    }
    // A header may straddle two chunks: the thread that brings its last byte reads it.
    if (!record.gather_header(begin, end, chunk->bytes().data() + (begin - chunk->source_offset_bytes()))) {
        return {};
    }
    if (spec.on_header) {
        auto checked = spec.on_header(record.header());
        if (!checked) {
            return record_failure(record.named(checked.error()));
        }
    }
    record.settle(1);
    return {};
}

std::vector<ReadRange> StageGraph::in_place_ranges(std::size_t alignment) const {
    const std::uint64_t align = std::max<std::size_t>(alignment, 1);
    std::vector<ReadRange> ranges;
    for (const auto& record : records_) {
        const RecordSpec& spec = record->spec();
        if (!record->in_place() || spec.data_length_bytes < in_place_min_bytes) {
            continue;
        }
        // An aligned read of the file lands aligned in memory only if both sit at the same
        // distance from a boundary (load_layout places arena tensors so).
        const auto address = reinterpret_cast<std::uintptr_t>(spec.host_destination);
        if (address % align != spec.data_offset_bytes % align) {
            continue;
        }
        const std::uint64_t begin = (spec.data_offset_bytes + align - 1) / align * align;
        const std::uint64_t end = record->record_end() / align * align;
        if (begin < end) {
            ranges.push_back({begin, end - begin});
        }
    }
    return ranges;
}

std::byte* StageGraph::in_place_destination(std::uint64_t offset_bytes) const {
    auto it = std::partition_point(records_.begin(), records_.end(),
                                   [&](const auto& record) { return record->record_end() <= offset_bytes; });
    if (it == records_.end() || (*it)->spec().data_offset_bytes > offset_bytes || !(*it)->in_place()) {
        return nullptr;
    }
    return (*it)->spec().host_destination + (offset_bytes - (*it)->spec().data_offset_bytes);
}

Result<void> StageGraph::finish() {
    if (failed_.load()) {
        RL_TRY_VOID(first_failure());
    }
    for (const auto& record : records_) {
        RL_TRY_VOID(record->finish());
    }
    if (options_.device != nullptr) {
        // Every chunk is back, so every upload has landed; conversions and zero fills may not.
        auto synchronized = options_.device->synchronize();
        if (!synchronized) {
            return with_context(synchronized.error(), options_.source_name);
        }
    }
    for (const auto& record : records_) {
        if (record->spec().data_length_bytes == 0) {
            hand_over(record->spec().id); // checked and zero-filled above
        }
    }
    return {};
}

void StageGraph::complete(const RecordLoad& record) {
    if (!record_done_ || failed_.load(std::memory_order_relaxed)) {
        return;
    }
    if (options_.device == nullptr) {
        hand_over(record.spec().id);
        return;
    }
    landing_.fetch_add(1);
    const std::size_t id = record.spec().id;
    auto queued = options_.device->when_landed([this, id](bool ok) {
        if (ok) {
            hand_over(id);
        }
        landing_.fetch_sub(1);
    });
    if (!queued) {
        landing_.fetch_sub(1);
        (void)record_failure(record.named(queued.error()));
    }
}

void StageGraph::hand_over(std::size_t id) {
    if (record_done_ && !failed_.load(std::memory_order_relaxed)) {
        record_done_(id);
    }
}

Error StageGraph::record_failure(Error error) {
    {
        std::lock_guard lock(failure_mutex_);
        if (!failure_) {
            failure_ = std::move(error);
        }
        error = *failure_;
    }
    abandon();
    return error;
}

Result<void> StageGraph::first_failure() {
    std::lock_guard lock(failure_mutex_);
    if (!failure_) {
        return {}; // abandoned by the run (a read failed, a cancel): its own error stops it
    }
    return *failure_;
}

void StageGraph::abandon() noexcept {
    failed_.store(true);
    // Stages hold chunks in parked pieces (in-order hashing, ciphertext waiting for its
    // header); a record that will not complete must not keep its slots (the run waits for all).
    for (const auto& record : records_) {
        record->abandon();
    }
}

} // namespace ringload
