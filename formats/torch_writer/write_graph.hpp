// formats/torch_writer/write_graph.hpp
//
// A torch.save zip file of a state dict as a WritePlan for the engine, and the producer that
// fills its windows. Records, in the order torch >= 2.7 writes them (torch-zip-format.md §13.1;
// every torch since 1.6 reads the file, since readers go by the central directory):
//
//  archive/data.pkl  archive/.format_version  archive/.storage_alignment  archive/byteorder
//  archive/data/0 ... archive/data/<n-1>      archive/version             central directory
//
// One storage per tensor, keys in the pickle's first-appearance order and records in numeric
// order, so torch >= 2.7 may compute storage offsets without reading local headers. Every
// record's data starts on a 64-byte boundary. The prefix is "archive" (what torch writes for a
// file object): readers take it from the central directory, never from the file name.
//
// Everything is laid out before the first byte is written. The CRC-32 of a tensor's bytes goes
// in its data descriptor (right after the data) and in the central directory; it is computed
// by a side job from the caller's memory, so those bytes are first written with a zero CRC and
// their pages are written again once all CRCs are known (ringload/engine/kept_pages.hpp).
//
// Meta tensors are pickled without a storage (pickle_writer.hpp). Refused: names
// pickle_writer.hpp refuses. Tensors of dtypes without a legacy storage class (float8_*,
// uint16/32/64, complex32) are written for torch >= 2.1.
#pragma once

#include "formats/torch_writer/zip_writer_layout.hpp"
#include "ringload/engine/device_link.hpp"
#include "ringload/engine/kept_pages.hpp"
#include "ringload/engine/write_feed.hpp"
#include "ringload/engine/write_plan.hpp"
#include "ringload/tensor_info.hpp"

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace ringload::torch_writer {

struct StateDictPickle; // pickle_writer.hpp

class WriteGraph final : public PieceProducer {
public:
    // Checks every tensor and lays the file out; fails before anything is written. The
    // tensors' bytes must outlive the graph; tensors with device >= 0 are read through `device`,
    // which must be that device's link and outlive the graph.
    static Result<std::unique_ptr<WriteGraph>> create(std::span<const TensorToWrite> tensors, std::string target_name,
                                                      DeviceLink* device = nullptr);

    const WritePlan& plan() const noexcept { return plan_; }
    const ZipLayout& layout() const noexcept { return layout_; }
    std::uint64_t tensor_bytes() const noexcept { return tensor_bytes_; }
    // Where the file reads each given tensor's bytes, in the order given (a WriteFeed's extents).
    std::vector<FileExtent> tensor_extents() const;
    // The file needs a torch newer than 1.13 (see pickle_writer.hpp).
    bool needs_newer_torch() const noexcept { return needs_newer_torch_; }

    // After the plan ran: the pages holding descriptors and the central directory, with the
    // CRCs in them, as (file offset, 4 KiB of 4 KiB-aligned memory owned by the graph).
    Result<std::vector<std::pair<std::uint64_t, std::span<const std::byte>>>> finished_pages();

    Result<void> produce_part(const WritePiece& piece, std::uint64_t from, std::span<std::byte> dst) override;
    Result<void> produce_whole(const WritePiece& piece, std::span<std::byte> first,
                               std::span<std::byte> second) override;
    void window_filled(std::uint64_t offset_bytes, std::span<const std::byte> bytes) override;

    struct Record;
    struct PieceSource;
    WriteGraph();
    ~WriteGraph() override;

private:
    // The steps of create(): the records in file order (the pickle's bytes move into the
    // first), the zip laid out with the small records' CRCs and the pages to keep, then the
    // plan's pieces and one CRC job per tensor.
    std::vector<ZipEntry> add_records(StateDictPickle& pickle);
    void lay_out(const std::vector<ZipEntry>& entries);
    void plan_pieces();
    Result<bool> crc_step(std::size_t record);
    Result<void> fill_tensor(const Record& record, std::uint64_t from, std::span<std::byte> dst) const;

    std::span<const TensorToWrite> tensors_;
    std::string target_;
    DeviceLink* device_ = nullptr;
    ZipLayout layout_;
    std::vector<Record> records_;      // one per zip record, in file order
    std::vector<PieceSource> sources_; // by piece tag
    std::vector<std::byte> central_;
    std::uint64_t tensor_bytes_ = 0;
    bool needs_newer_torch_ = false;
    std::optional<KeptPages> kept_;
    WritePlan plan_;
};

} // namespace ringload::torch_writer
