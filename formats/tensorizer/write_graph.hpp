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
// written (KeptPages, ringload/engine/kept_pages.hpp), and once all hashes and MACs are known
// finished_header_pages() gives them back with the finished headers, to be written again whole
// (no read-modify-write of pages that went to disk with O_DIRECT).
//
// What tensorizer 2.11.1 gets wrong (quirks/, tensorizer-format.md §8) is written so that it
// reads back: a meta tensor that tensorizer cannot size without data (an opaque dtype such as
// bf16, or 0-d) is stored as real zeros, and a flat key starting with U+001E as a one-element
// path. Refused, because tensorizer cannot read the file: a zero-element tensor of an opaque
// dtype, and a nested name on a tensor whose type is not 2 (state dict entry).
#pragma once

#include "formats/tensorizer/serialize.hpp"
#include "ringload/engine/device_link.hpp"
#include "ringload/engine/kept_pages.hpp"
#include "ringload/engine/secretbox.hpp"
#include "ringload/engine/write_feed.hpp"
#include "ringload/engine/write_plan.hpp"
#include "ringload/tensor_info.hpp"

#include <functional>
#include <memory>
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

class WriteGraph final : public PieceProducer {
public:
    // Checks every tensor and lays the file out; fails before anything is written. The
    // tensors' bytes and `encryption` must outlive the graph. Tensors whose `device` is not -1
    // are read through `device` (copied into the slots device-to-host by the workers); it must
    // be that device's link and outlive the graph.
    static Result<std::unique_ptr<WriteGraph>> create(std::span<const TensorToWrite> tensors,
                                                      const WriteEncryption* encryption, std::string target_name,
                                                      DeviceLink* device = nullptr);

    const WritePlan& plan() const noexcept { return plan_; }
    std::uint32_t data_version() const noexcept { return summary_.data_version; }
    std::uint64_t tensor_bytes() const noexcept { return summary_.tensor_size_bytes; }
    // Where the file reads each given tensor's bytes, in the order given (a WriteFeed's extents).
    std::vector<FileExtent> tensor_extents() const;

    // After the plan ran: the pages that hold headers, with the finished headers in them, as
    // (file offset, 4 KiB of 4 KiB-aligned memory owned by the graph), in file order.
    Result<std::vector<std::pair<std::uint64_t, std::span<const std::byte>>>> finished_header_pages();

    Result<void> produce_part(const WritePiece& piece, std::uint64_t from, std::span<std::byte> dst) override;
    Result<void> produce_whole(const WritePiece& piece, std::span<std::byte> first,
                               std::span<std::byte> second) override;
    void window_filled(std::uint64_t offset_bytes, std::span<const std::byte> bytes) override;

    struct HashState;
    struct Record;
    struct PieceSource;
    WriteGraph();
    ~WriteGraph() override;

private:
    // Hashes the next few MiB of H' || plaintext; true while more remain.
    Result<bool> hash_step(Record& record);
    // The plaintext of a record's data [from, from + dst.size()): the caller's bytes (from host
    // or device memory), or zeros.
    Result<void> fill_plaintext(const Record& record, std::uint64_t from, std::span<std::byte> dst) const;
    bool on_device(const Record& record) const;

    // The steps of create(): every record described and checked, the file laid out (returns the
    // sentinel's offset), then the plan's pieces in file order and one hashing job per record.
    Result<void> describe_records(std::span<const TensorToWrite> tensors);
    std::uint64_t lay_out();
    void plan_pieces(std::uint64_t sentinel_offset);

    DeviceLink* device_ = nullptr;
    std::string target_;
    const WriteEncryption* encryption_ = nullptr;
    FileSummary summary_;
    std::vector<Record> records_;
    std::vector<PieceSource> sources_; // by piece tag
    std::vector<std::byte> preamble_;  // file header and index
    WritePlan plan_;

    std::optional<KeptPages> header_pages_; // each record's header range, from lay_out()
};

} // namespace ringload::tensorizer
