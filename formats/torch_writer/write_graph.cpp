// formats/torch_writer/write_graph.cpp
#include "formats/torch_writer/write_graph.hpp"

#include "formats/torch_writer/pickle_writer.hpp"
#include "ringload/engine/hashes.hpp"
#include "ringload/engine/stream_copy.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

namespace ringload::torch_writer {
namespace {

constexpr std::string_view archive_prefix = "archive";
// One step of a record's CRC (a side job step): about one window's worth.
constexpr std::uint64_t crc_step_bytes = 4 << 20;
constexpr std::size_t crc_block_bytes = 256 << 10;

std::vector<std::byte> ascii(std::string_view text) {
    std::vector<std::byte> bytes(text.size());
    std::memcpy(bytes.data(), text.data(), text.size());
    return bytes;
}

} // namespace

struct WriteGraph::Record {
    std::vector<std::byte> header;         // local header, name, extras, padding
    std::vector<std::byte> memory;         // the data of a small record (data.pkl, version, ...)
    const TensorToWrite* tensor = nullptr; // or the data of a storage record
    std::string display_name;
    Crc32 crc; // of a tensor's bytes, advanced by the side job
    std::uint64_t crc_done_bytes = 0;
};

struct WriteGraph::PieceSource {
    enum class Kind : std::uint8_t { header, memory, tensor, descriptor, central };
    Kind kind = Kind::header;
    std::size_t record = 0;
};

WriteGraph::WriteGraph() = default;
WriteGraph::~WriteGraph() = default;

namespace {

// Every tensor checked (its device's link, its size, the bytes given), as the pickle writer
// takes it.
Result<std::vector<PickledTensor>> pickled_tensors(std::span<const TensorToWrite> tensors, const DeviceLink* device,
                                                   const std::string& target) {
    std::vector<PickledTensor> pickled;
    for (const auto& tensor : tensors) {
        const std::string which = target + ": tensor '" + path_text(tensor.path) + "'";
        if (tensor.device >= 0 && (device == nullptr || device->ordinal() != tensor.device)) {
            return fail(errc::invalid_argument, which + ": on cuda:" + std::to_string(tensor.device) +
                                                    " without a link to that device (one device per write)");
        }
        auto length = checked_byte_length(tensor.shape, tensor.dtype);
        if (!length) {
            return fail(errc::invalid_argument, which + ": the shape is too large");
        }
        if (!tensor.is_meta && tensor.bytes.size() != *length) {
            return fail(errc::invalid_argument, which + ": " + std::to_string(tensor.bytes.size()) +
                                                    " bytes given, but its dtype and shape need " +
                                                    std::to_string(*length));
        }
        pickled.push_back({tensor.path, tensor.dtype, tensor.shape, tensor.is_meta});
    }
    return pickled;
}

} // namespace

Result<std::unique_ptr<WriteGraph>> WriteGraph::create(std::span<const TensorToWrite> tensors, std::string target_name,
                                                       DeviceLink* device) {
    auto graph = std::make_unique<WriteGraph>();
    graph->tensors_ = tensors;
    graph->target_ = std::move(target_name);
    graph->device_ = device;
    RL_TRY(pickled, pickled_tensors(tensors, device, graph->target_));
    auto pickle = pickle_state_dict(pickled);
    if (!pickle) {
        return with_context(pickle.error(), graph->target_);
    }
    graph->needs_newer_torch_ = pickle->needs_torch_2_1 || pickle->needs_newer_than_1_13;
    const std::vector<ZipEntry> entries = graph->add_records(*pickle);
    graph->lay_out(entries);
    graph->plan_pieces();
    return graph;
}

std::vector<ZipEntry> WriteGraph::add_records(StateDictPickle& pickle) {
    const std::string prefix = std::string(archive_prefix) + "/";
    std::vector<ZipEntry> entries;
    auto add_memory = [&](std::string name, std::vector<std::byte> bytes) {
        entries.push_back({prefix + name, bytes.size()});
        Record record;
        record.memory = std::move(bytes);
        record.display_name = std::move(name);
        records_.push_back(std::move(record));
    };
    add_memory("data.pkl", std::move(pickle.bytes));
    add_memory(".format_version", ascii("1"));
    add_memory(".storage_alignment", ascii(std::to_string(zip_alignment_default)));
    add_memory("byteorder", ascii("little"));
    for (std::size_t key = 0; key < pickle.storage_tensors.size(); ++key) {
        const TensorToWrite& tensor = tensors_[pickle.storage_tensors[key]];
        entries.push_back({prefix + "data/" + std::to_string(key), tensor.bytes.size()});
        Record record;
        record.tensor = &tensor;
        record.display_name = path_text(tensor.path);
        records_.push_back(std::move(record));
        tensor_bytes_ += tensor.bytes.size();
    }
    add_memory("version", ascii("3\n"));
    return entries;
}

void WriteGraph::lay_out(const std::vector<ZipEntry>& entries) {
    layout_ = lay_out_zip(entries);
    // CRCs of the small records now; a tensor's once its side job is through.
    std::vector<std::pair<std::uint64_t, std::uint64_t>> kept;
    for (std::size_t r = 0; r < records_.size(); ++r) {
        Record& record = records_[r];
        record.header = local_header_bytes(layout_.records[r]);
        if (record.tensor == nullptr) {
            record.crc.update(record.memory);
            layout_.records[r].crc32 = record.crc.value();
        } else if (layout_.records[r].descriptor_bytes() > 0) {
            kept.emplace_back(layout_.records[r].descriptor_offset(), layout_.records[r].end_offset());
        }
    }
    kept.emplace_back(layout_.central_offset, layout_.length_bytes);
    kept_.emplace(std::move(kept));
    central_ = central_bytes(layout_);
}

void WriteGraph::plan_pieces() {
    using Kind = PieceSource::Kind;
    auto add_piece = [this](std::uint64_t at, std::uint64_t length, PieceSource source) {
        plan_.pieces.push_back({at, length, false, sources_.size()});
        sources_.push_back(source);
    };
    for (std::size_t r = 0; r < records_.size(); ++r) {
        const ZipRecord& zip = layout_.records[r];
        const bool is_tensor = records_[r].tensor != nullptr;
        add_piece(zip.header_offset, zip.header_bytes(), {Kind::header, r});
        add_piece(zip.data_offset, zip.size_bytes, {is_tensor ? Kind::tensor : Kind::memory, r});
        add_piece(zip.descriptor_offset(), zip.descriptor_bytes(), {Kind::descriptor, r});
        if (is_tensor && zip.size_bytes > 0) {
            plan_.side_jobs.push_back({zip.data_offset, [this, r] { return crc_step(r); }});
        }
    }
    add_piece(layout_.central_offset, layout_.length_bytes - layout_.central_offset, {Kind::central, 0});
    plan_.length_bytes = layout_.length_bytes;
}

Result<void> WriteGraph::fill_tensor(const Record& record, std::uint64_t from, std::span<std::byte> dst) const {
    const std::byte* source = record.tensor->bytes.data() + from;
    if (record.tensor->device >= 0) {
        auto copied = device_->download(dst.data(), source, dst.size());
        if (!copied) {
            return fail(copied.error().code,
                        target_ + ": tensor '" + record.display_name + "': " + copied.error().detail);
        }
        return {};
    }
    copy_to_destination(dst.data(), source, dst.size());
    return {};
}

Result<bool> WriteGraph::crc_step(std::size_t index) {
    Record& record = records_[index];
    const std::uint64_t size = record.tensor->bytes.size();
    const std::uint64_t step_end = std::min(size, record.crc_done_bytes + crc_step_bytes);
    for (std::uint64_t& at = record.crc_done_bytes; at < step_end;) {
        const auto length = static_cast<std::size_t>(std::min<std::uint64_t>(crc_block_bytes, step_end - at));
        std::span<const std::byte> block = record.tensor->bytes.subspan(at, length);
        if (record.tensor->device >= 0) {
            // A second device-to-host copy: cheaper than holding slots until the CRC gets there.
            thread_local std::vector<std::byte> host_block;
            host_block.resize(length);
            RL_TRY_VOID(fill_tensor(record, at, host_block));
            block = host_block;
        }
        record.crc.update(block);
        at += length;
    }
    return record.crc_done_bytes < size;
}

std::vector<FileExtent> WriteGraph::tensor_extents() const {
    std::vector<FileExtent> extents(tensors_.size()); // meta tensors: no record, nothing read
    for (std::size_t r = 0; r < records_.size(); ++r) {
        if (records_[r].tensor != nullptr) { // the CRC side job starts with the data too
            const ZipRecord& zip = layout_.records[r];
            extents[static_cast<std::size_t>(records_[r].tensor - tensors_.data())] = {
                zip.data_offset, zip.data_offset + zip.size_bytes};
        }
    }
    return extents;
}

Result<void> WriteGraph::produce_part(const WritePiece& piece, std::uint64_t from, std::span<std::byte> dst) {
    const PieceSource& source = sources_[piece.tag];
    const Record& record = records_[source.record];
    switch (source.kind) {
        case PieceSource::Kind::header:
            std::memcpy(dst.data(), record.header.data() + from, dst.size());
            return {};
        case PieceSource::Kind::memory:
            std::memcpy(dst.data(), record.memory.data() + from, dst.size());
            return {};
        case PieceSource::Kind::tensor:
            return fill_tensor(record, from, dst);
        case PieceSource::Kind::descriptor: {
            // A tensor's CRC is still 0 here: its page is finished after the run.
            const auto bytes = descriptor_bytes(layout_.records[source.record]);
            std::memcpy(dst.data(), bytes.data() + from, dst.size());
            return {};
        }
        case PieceSource::Kind::central:
            std::memcpy(dst.data(), central_.data() + from, dst.size());
            return {};
    }
    return fail(errc::invalid_argument, target_ + ": an unknown piece");
}

Result<void> WriteGraph::produce_whole(const WritePiece& piece, std::span<std::byte> first,
                                       std::span<std::byte> second) {
    (void)piece;
    (void)first;
    (void)second;
    return fail(errc::invalid_argument, target_ + ": a torch zip file has no pieces produced whole");
}

void WriteGraph::window_filled(std::uint64_t offset_bytes, std::span<const std::byte> bytes) {
    kept_->window_filled(offset_bytes, bytes);
}

Result<std::vector<std::pair<std::uint64_t, std::span<const std::byte>>>> WriteGraph::finished_pages() {
    for (std::size_t r = 0; r < records_.size(); ++r) {
        Record& record = records_[r];
        ZipRecord& zip = layout_.records[r];
        if (record.tensor == nullptr || zip.size_bytes == 0) {
            continue;
        }
        if (record.crc_done_bytes != zip.size_bytes) {
            return fail(errc::io_error, target_ + ": tensor '" + record.display_name + "''s CRC was not finished");
        }
        zip.crc32 = record.crc.value();
        const auto descriptor = descriptor_bytes(zip);
        auto patched = kept_->patch(zip.descriptor_offset(), descriptor);
        if (!patched) {
            return with_context(patched.error(), target_);
        }
    }
    central_ = central_bytes(layout_);
    auto patched = kept_->patch(layout_.central_offset, central_);
    if (!patched) {
        return with_context(patched.error(), target_);
    }
    return kept_->pages();
}

} // namespace ringload::torch_writer
