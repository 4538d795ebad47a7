// formats/tensorizer/load_graph.hpp
//
// What a tensorizer load runs: a StageGraph (engine/stage_graph.hpp) whose records are the
// wanted tensors' whole records (header + data), adjacent ones read as one range:
//
//  file:  [ hdr 0 | data 0 ......... ][ hdr 1 | data 1 ][ hdr 2 | data 2 ...... ]
//  ring:  [ slot 3       ][ slot 4       ][ slot 5        ][ slot 6        ]
//
// Each record's stages: decrypt (encrypted files) -> its destination (host memory, or a GPU
// through DeviceLink, with a dtype conversion there) -> hash (with verification: CRC32 and
// SHA-256 over H' || plaintext, read where the destination left it). What is tensorizer's own
// is the header hook: the thread that completes a record's header parses it, checks it
// against the index, arms decryption with the tensor's cipher chunks and key, and gives the
// hash its prefix H' and the stored hashes.
//
//     RL_TRY(graph, build_load_graph(index, destinations, {verify, &keys, device, uri}));
//     RL_CO_TRY(stats, co_await run_plan(source, ring, pool, graph.stages->plan(), *graph.stages, {}));
//     graph.headers->module_index_of(index.tensors[0]);
#pragma once

#include "formats/format_hooks.hpp"
#include "ringload/engine/device_link.hpp"
#include "ringload/engine/stage_graph.hpp"
#include "ringload/engine/tensor_destination.hpp"
#include "ringload/tensor_info.hpp"

#include <memory>
#include <string>
#include <vector>

namespace ringload::tensorizer {

class KeyResolver;
class TensorHeaders;

// The graph for `request`: decrypt (encrypted files) -> destination -> hash (verify_hashes).
// Fails with errc::encrypted_no_key for an encrypted file without request.keys. `index` must
// outlive the graph; its `headers` are the TensorHeaders.
Result<FormatLoadGraph> build_load_graph(const Index& index, std::vector<TensorDestination> destinations,
                                         const LoadGraphRequest& request);

// The header hooks' state, one entry per wanted tensor.
class TensorHeaders final : public RecordHeaders {
public:
    // After a successful run: the module_idx the tensor's header holds (the index has none).
    std::uint16_t module_index_of(const TensorInfo& tensor) const override;

    // For build_load_graph: a record per wanted tensor, in file order, and its header hook.
    struct Record;
    TensorHeaders(const Index& index, KeyResolver* keys);
    ~TensorHeaders();
    Record& add(const TensorInfo& info);
    Result<void> on_header(std::size_t record, std::span<const std::byte> header_bytes);

private:
    const Index& index_;
    KeyResolver* keys_;
    std::vector<std::unique_ptr<Record>> records_; // by record offset
};

} // namespace ringload::tensorizer
