// engine/include/ringload/engine/stage_graph.hpp
//
// What a load runs: records (a tensor's or a storage's bytes, with an optional header in
// front), each with its list of stages (stage.hpp). The graph owns the assembly of chunks
// into records: for each chunk it finds the records it overlaps, gathers header bytes (a
// header may straddle slots; the thread that completes one calls the format's header hook)
// and hands each record's share of data bytes to the record's first stage.
//
//  file:   [ hdr 0 | data 0 ......... ][ hdr 1 | data 1 ][ gap ][ hdr 2 | data 2 ...... ]
//  plan:   [ range 0 (adjacent or nearby records merged) .................................. ]
//  chunks: [ slot 3       ][ slot 4       ][ slot 5        ][ slot 6        ][ slot 7 ]
//
// A format contributes what is its own: the records of its index, the stages they need, and
// the header hook. The first failure anywhere wins: later chunks stop, every stage lets go of
// what it holds (so that every slot comes back), finish() returns it.
//
// Each record is handed over once its bytes are final (on_record_done): every data byte has
// left its last stage (decrypted, swapped, copied, hashed and matched: a stage passes a piece on
// only when its work on it is done), its header was read and checked, and, on a device, every
// copy and conversion queued for it has completed (DeviceLink::when_landed). Records without
// data (meta tensors, empty ones) are handed over by finish(), after their zero fill.
//
//     std::vector<RecordSpec> records = ...;   // from the format's index
//     RL_TRY(graph, StageGraph::create(std::move(records), {.source_name = uri}));
//     RL_CO_TRY(stats, co_await run_plan(source, ring, pool, graph->plan(), *graph, controls));
#pragma once

#include "ringload/engine/device_link.hpp"
#include "ringload/engine/plan.hpp"
#include "ringload/engine/stage.hpp"

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace ringload {

struct RecordSpec {
    std::string name;                      // in errors: "tensor 'wte.weight' (record at offset 96)"
    std::uint64_t record_offset_bytes = 0; // where its header starts (= data offset without one)
    std::uint64_t data_offset_bytes = 0;
    std::uint64_t data_length_bytes = 0;
    // The record's data in host memory, when it goes there: a source that accepts any
    // destination may read it straight there if every stage accepts bytes in place.
    std::byte* host_destination = nullptr;
    std::vector<std::unique_ptr<Stage>> stages; // in the order the bytes meet them
    // Called once, by the thread that completes the header (when there is one): the format
    // checks it and arms the stages that need what it says (a cipher, the stored hashes); they
    // hold the data that arrives before it.
    std::function<Result<void>(std::span<const std::byte> header)> on_header;
    // The format's name for the record (its tensor's position in Index::tensors, a storage's),
    // given back by on_record_done.
    std::size_t id = 0;
};

struct StageGraphOptions {
    std::string source_name; // the first word of every error
    // Records closer than this are read as one range (torch zip's ~100-byte local headers
    // between storages: reading them beats another request). 0: only adjacent ones.
    std::uint64_t merge_gap_bytes = 0;
    DeviceLink* device = nullptr; // destinations on this device: synchronized at finish()
};

class StageGraph final : public ChunkHandler {
public:
    // Records must not overlap in the source.
    static Result<std::unique_ptr<StageGraph>> create(std::vector<RecordSpec> records, StageGraphOptions options);
    ~StageGraph() override;

    const Plan& plan() const noexcept { return plan_; }
    // Called once per record whose bytes are final (see above), with its RecordSpec::id, in
    // the order records complete: on the worker that passed its last byte on (host memory),
    // the device link's completion thread (device memory), or the loop thread in finish()
    // (records without data). Never for a record that failed, nor once the run failed. The
    // call must be short (a worker or the copy completions wait); set before the run.
    void on_record_done(std::function<void(std::size_t id)> done) { record_done_ = std::move(done); }
    Result<void> process(const ChunkPtr& chunk) override;
    // Data of at least in_place_min_bytes of records whose stages all accept bytes in place:
    // smaller ones stay in the slots with the headers, so that a source is not asked for many
    // tiny ranges.
    std::vector<ReadRange> in_place_ranges(std::size_t alignment) const override;
    std::byte* in_place_destination(std::uint64_t offset_bytes) const override;
    static constexpr std::uint64_t in_place_min_bytes = 1 << 20;
    // A graph whose first record has at least lead_record_min_bytes of data reads the first
    // later record of at most lead_small_max_bytes before everything else (Plan::read_first):
    // otherwise nothing could be handed over before the whole first record (an embedding, 5% of
    // a 3 GB model) arrived. The cost: the range split in three, one seek.
    static constexpr std::uint64_t lead_record_min_bytes = 32 << 20;
    static constexpr std::uint64_t lead_small_max_bytes = 8 << 20;
    Result<void> finish() override;
    void abandon() noexcept override;

private:
    class RecordLoad;

    explicit StageGraph(StageGraphOptions options);
    Result<void> add(RecordSpec spec);
    void read_small_record_first();
    Result<void> take(RecordLoad& record, const ChunkPtr& chunk);
    Result<void> take_header(RecordLoad& record, const ChunkPtr& chunk);
    // Records the first failure (named after its record) and abandons the run; returns it.
    Error record_failure(Error error);
    Result<void> first_failure();
    // The record's bytes left its last stage and its header is checked: hands it over, on a
    // device once its copies landed.
    void complete(const RecordLoad& record);
    void hand_over(std::size_t id);

    StageGraphOptions options_;
    std::vector<std::unique_ptr<RecordLoad>> records_; // sorted by record offset
    Plan plan_;
    std::mutex failure_mutex_;
    std::optional<Error> failure_;
    std::atomic<bool> failed_{false};
    std::function<void(std::size_t id)> record_done_;
    std::atomic<std::size_t> landing_{0}; // device records waiting for DeviceLink::when_landed
};

} // namespace ringload
