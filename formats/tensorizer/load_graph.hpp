// formats/tensorizer/load_graph.hpp
//
// The stage graph that turns a tensorizer byte stream into tensors. The plan reads each
// wanted tensor's whole record (header + data), merged into as few ranges as possible:
//
//  file:  [ hdr 0 | data 0 ......... ][ hdr 1 | data 1 ][ hdr 2 | data 2 ...... ]
//  ring:  [ slot 3       ][ slot 4       ][ slot 5        ][ slot 6        ]
//
// On the workers, each chunk's header bytes are gathered per tensor (a header may straddle two
// slots) and checked against the index; data bytes are copied to the tensor's destination.
// With verification, each record is also hashed in order through a Sequencer: H' first (the
// header with hash values zeroed), then the data, read back from the destination so that the
// slot is free as soon as its bytes are copied; CRC32 and SHA-256 are compared at the end.
//
// A source that accepts any destination (the network ones) reads large plain tensors' data
// straight into the tensor (in_place_ranges); process() then finds it there and only hashes.
//
// Device loads (LoadGraphOptions::device): destinations are GPU memory. Data bytes are
// uploaded from their slot, which stays leased until the copy completed; hashes are computed
// from the slot; encrypted chunks are opened in the slot, or gathered in page-locked staging
// when they straddle slots, and uploaded as plaintext; floating tensors may be converted to
// another dtype on the device once all their bytes are there.
//
// Encrypted tensors: a 2 MiB cipher chunk that lies wholly in one slot, once the header with
// its MACs is known, is authenticated and decrypted straight from the slot into the tensor.
// Other ciphertext is copied to the destination, and each such chunk is authenticated and
// decrypted in place by whichever worker completes it (its last bytes, or the header with its
// MACs, whichever comes last). Chunks decrypt in parallel; a chunk whose MAC fails never
// reaches the tensor as plaintext and fails the load. Hashing (over the plaintext) follows
// decryption, in order.
#pragma once

#include "ringload/engine/device_link.hpp"
#include "ringload/engine/plan.hpp"
#include "ringload/engine/sequencer.hpp"
#include "ringload/tensor_info.hpp"

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace ringload::tensorizer {

struct TensorDestination {
    std::size_t tensor_index = 0; // into Index::tensors
    std::byte* data = nullptr;    // the tensor's bytes (in `dtype` when given), owned by the caller
    // Device loads only: floating data is converted to this type on the device (the CPU path
    // converts after the load).
    std::optional<DType> dtype;
};

class KeyResolver;

struct LoadGraphOptions {
    bool verify_hashes = false;
    KeyResolver* keys = nullptr;  // decrypts encrypted tensors; must outlive the graph
    DeviceLink* device = nullptr; // destinations are this device's memory; must outlive the graph
};

class LoadGraph final : public ChunkHandler {
public:
    // Fails with errc::encrypted_no_key for an encrypted file without options.keys.
    static Result<std::unique_ptr<LoadGraph>> create(const Index& index, std::vector<TensorDestination> destinations,
                                                     LoadGraphOptions options, std::string source_name);
    ~LoadGraph() override;

    const Plan& plan() const noexcept { return plan_; }
    Result<void> process(const ChunkPtr& chunk) override;
    // Plain (unencrypted) tensors' data of at least in_place_min_bytes: smaller ones stay in the
    // slots with the headers, so that a source is not asked for many tiny ranges.
    std::vector<ReadRange> in_place_ranges() const override;
    std::byte* in_place_destination(std::uint64_t offset_bytes) const override;
    static constexpr std::uint64_t in_place_min_bytes = 1 << 20;
    Result<void> finish() override;
    void abandon() noexcept override;
    // After a successful run: the module_idx the tensor's header holds (the index has none).
    std::uint16_t module_index_of(const TensorInfo& tensor) const;

    struct TensorLoad;

private:
    LoadGraph(const Index& index, LoadGraphOptions options, std::string source_name);
    Result<void> on_header_complete(TensorLoad& load);
    Result<void> prepare_decryption(TensorLoad& load);
    // Data bytes [begin, end) of an encrypted tensor, at `bytes` in a slot.
    void take_ciphertext(TensorLoad& load, const std::byte* bytes, std::uint64_t begin, std::uint64_t end);
    void on_ciphertext(TensorLoad& load, std::uint64_t begin, std::uint64_t end);
    // Authenticates and decrypts cipher chunk `index` into the tensor; false (failure recorded)
    // when its MAC does not match.
    bool open_chunk(TensorLoad& load, std::size_t index, std::span<const std::byte> ciphertext);
    void decrypt_chunks(TensorLoad& load, const std::vector<std::size_t>& chunks);
    // Checks cipher chunk `index`'s MAC and decrypts it into `plaintext`; false (failure
    // recorded) when the MAC does not match.
    bool authenticate(TensorLoad& load, std::size_t index, std::span<std::byte> plaintext,
                      std::span<const std::byte> ciphertext);

    // Device loads: data bytes [begin, begin + length) of the tensor, at `bytes` in host memory
    // that `keep_alive` holds, go to the device (or its conversion scratch).
    Result<void> upload(TensorLoad& load, std::uint64_t begin, const std::byte* bytes, std::uint64_t length,
                        std::shared_ptr<const void> keep_alive);
    void take_ciphertext_on_device(TensorLoad& load, std::byte* bytes, std::uint64_t begin, std::uint64_t end,
                                   const ChunkPtr& chunk);
    // Opens cipher chunk `index` where it lies (slot or staging) and uploads the plaintext.
    bool open_on_device(TensorLoad& load, std::size_t index, std::span<std::byte> bytes,
                        const std::shared_ptr<const void>& keep_alive);

    // Record bytes [begin, end) go into the tensor's hashes, in order. Their data part is read
    // from `data` (kept alive by `keep_alive`), or from the host destination when null.
    void submit_hash(TensorLoad& load, std::uint64_t begin, std::uint64_t end, const std::byte* data = nullptr,
                     std::shared_ptr<const void> keep_alive = {});
    void hash_piece(TensorLoad& load, std::uint64_t begin, std::uint64_t end, const std::byte* data);
    // Records the first failure and lets go of every chunk held for later work.
    void record_failure(Error error);
    Error tensor_error(const TensorLoad& load, Error error) const;

    const Index& index_;
    LoadGraphOptions options_;
    std::string source_name_;
    std::vector<std::unique_ptr<TensorLoad>> loads_; // sorted by record offset
    Plan plan_;
    std::mutex failure_mutex_;
    std::optional<Error> failure_;
    std::atomic<bool> failed_{false};
};

} // namespace ringload::tensorizer
