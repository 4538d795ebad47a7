// formats/tensorizer/write_graph.hpp
//
// A tensorizer file as a WritePlan for the engine, and the producer that fills its windows.
//
//  [file header | index ][header 0 | data 0 ][header 1 | chunk 0 | chunk 1 ]...[8 zero bytes]
//
// Everything is laid out before the first byte is written: header sizes do not depend on hash
// values or MACs (serialize.hpp), so each header is written with zeros there first. Data is
// copied (or sealed, chunk by chunk) from the caller's memory into the slots; hashes over
// H' || plaintext run beside it as side jobs. The pages that hold headers are kept as they are
// written, and once all hashes and MACs are known write_headers() puts the finished headers
// back as whole pages (no read-modify-write of pages that went to disk with O_DIRECT).
//
// What tensorizer 2.11.1 gets wrong (quirks/, tensorizer-format.md §8) is written so that it
// reads back: a meta tensor that tensorizer cannot size without data (an opaque dtype such as
// bf16, or 0-d) is stored as real zeros, and a flat key starting with U+001E as a one-element
// path. Refused, because tensorizer cannot read the file: a zero-element tensor of an opaque
// dtype, and a nested name on a tensor whose type is not 2 (state dict entry).
#pragma once

#include "formats/tensorizer/serialize.hpp"
#include "ringload/engine/secretbox.hpp"
#include "ringload/engine/write_plan.hpp"
#include "ringload/tensor_info.hpp"

#include <array>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace ringload::tensorizer {

struct WriteEncryption {
    SecretKey key;
    std::optional<KeyDerivationRecord> key_derivation; // when the key came from a passphrase
    std::uint64_t chunk_size_bytes = default_cipher_chunk_bytes;
};

using PatchWriter = std::function<Result<void>(std::uint64_t offset_bytes, std::span<const std::byte> bytes)>;

class WriteGraph final : public PieceProducer {
public:
    // Checks every tensor and lays the file out; fails before anything is written. The
    // tensors' bytes and `encryption` must outlive the graph.
    static Result<std::unique_ptr<WriteGraph>> create(std::span<const TensorToWrite> tensors,
                                                      const WriteEncryption* encryption, std::string target_name);

    const WritePlan& plan() const noexcept { return plan_; }
    std::uint32_t data_version() const noexcept { return summary_.data_version; }
    std::uint64_t tensor_bytes() const noexcept { return summary_.tensor_size_bytes; }

    // After the plan ran: the finished headers, as whole pages, through `patch`.
    Result<void> write_headers(const PatchWriter& patch);

    Result<void> produce_part(const WritePiece& piece, std::uint64_t from, std::span<std::byte> dst) override;
    Result<void> produce_whole(const WritePiece& piece, std::span<std::byte> first,
                               std::span<std::byte> second) override;
    void window_filled(std::uint64_t offset_bytes, std::span<const std::byte> bytes) override;

    struct Record;
    struct PieceSource;
    WriteGraph();
    ~WriteGraph() override;

private:
    Result<void> hash_record(Record& record);

    std::string target_;
    const WriteEncryption* encryption_ = nullptr;
    FileSummary summary_;
    std::vector<Record> records_;
    std::vector<PieceSource> sources_; // by piece tag
    std::vector<std::byte> preamble_;  // file header and index
    WritePlan plan_;

    std::mutex pages_mutex_;
    std::map<std::uint64_t, std::array<std::byte, 4096>> header_pages_; // guarded by pages_mutex_
};

} // namespace ringload::tensorizer
