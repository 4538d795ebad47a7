// formats/tensorizer/write_graph.cpp
#include "formats/tensorizer/write_graph.hpp"

#include "formats/tensorizer/dtype_string.hpp"
#include "formats/tensorizer/file_header.hpp"
#include "formats/tensorizer/tensor_name.hpp"
#include "ringload/engine/hashes.hpp"
#include "ringload/engine/stream_copy.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

namespace ringload::tensorizer {
namespace {

constexpr std::uint8_t state_dict_type = 2;
constexpr std::size_t sentinel_bytes = 8;
// Hashes read a tensor in blocks this size, CRC32 then SHA-256, so that the second pass hits
// the cache instead of memory.
constexpr std::size_t hash_block_bytes = 256 << 10;
// One step of a record's hashing (a side job step): about one window's worth.
constexpr std::uint64_t hash_step_bytes = 4 << 20;

bool starts_with_marker(const PathComponent& component) {
    const auto* text = std::get_if<std::string>(&component);
    return text != nullptr && !text->empty() && (*text)[0] == structured_name_marker;
}

// A flat key is stored as plain UTF-8, a path as 0x1E + JSON. tensorizer writes a flat key
// that starts with 0x1E verbatim, and then reads it back as a path (quirks/): we store such a
// key as a one-element path, which reads back as that key.
std::string stored_name(const std::vector<PathComponent>& path) {
    if (path.size() == 1 && std::holds_alternative<std::string>(path[0]) && !starts_with_marker(path[0])) {
        return std::get<std::string>(path[0]);
    }
    return encode_structured_name(path);
}

std::string shape_text(const std::vector<std::uint64_t>& shape) {
    std::string text = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) {
        text += (i > 0 ? ", " : "") + std::to_string(shape[i]);
    }
    return text + "]";
}

} // namespace

struct WriteGraph::HashState {
    Crc32 crc;
    Sha256 sha;
    std::uint64_t hashed_bytes = 0; // of the data; H' goes first
};

struct WriteGraph::Record {
    const TensorToWrite* tensor = nullptr;
    std::string display_name;
    RecordSpec spec;
    bool stored_as_zeros = false; // a meta tensor of an opaque dtype (see the header comment)
    std::uint64_t header_offset = 0;
    std::uint64_t data_offset = 0;
    std::vector<std::byte> header;      // with zero hash values and MACs
    std::vector<std::byte> hash_prefix; // H'
    std::vector<Mac> macs;              // one per cipher chunk, filled as chunks are sealed
    StoredHashes hashes;                // filled by the record's side job
    std::unique_ptr<HashState> hashing = std::make_unique<HashState>(); // while the job runs

    bool encrypted() const { return spec.crypt && spec.crypt->encrypted(); }
};

struct WriteGraph::PieceSource {
    enum class Kind : std::uint8_t { preamble, header, data, cipher_chunk, sentinel };
    Kind kind = Kind::preamble;
    std::size_t record = 0;
    std::size_t chunk = 0;
};

WriteGraph::WriteGraph() = default;
WriteGraph::~WriteGraph() = default;

namespace {

// The tensor's data length, after the checks that need only the tensor: a size that fits, a
// zero-element tensor tensorizer can read back, the bytes given, a nested name's tensor type.
Result<std::uint64_t> checked_tensor_bytes(const TensorToWrite& tensor, const TensorInfo& info,
                                           const std::string& which) {
    auto byte_length = checked_byte_length(tensor.shape, tensor.dtype);
    if (!byte_length) {
        return fail(errc::invalid_argument, which + ": shape " + shape_text(tensor.shape) + " is too large");
    }
    if (*byte_length == 0 && is_opaque(tensor.dtype)) {
        return fail(errc::unsupported,
                    which + ": a zero-element " + std::string(torch_name(tensor.dtype)) +
                        " tensor: tensorizer cannot read a file holding one (it fails on the opaque dtype "
                        "string of any tensor without data), so it is not written");
    }
    if (!tensor.is_meta && tensor.bytes.size() != *byte_length) {
        return fail(errc::invalid_argument, which + ": " + std::to_string(tensor.bytes.size()) + " bytes given, but " +
                                                std::string(torch_name(tensor.dtype)) + " of shape " +
                                                shape_text(tensor.shape) + " has " + std::to_string(*byte_length));
    }
    if (!info.name.empty() && info.name[0] == structured_name_marker && tensor.tensor_type != state_dict_type) {
        return fail(errc::invalid_argument, which + ": a nested name needs tensor type 2 (state dict entry), not " +
                                                std::to_string(tensor.tensor_type) +
                                                ": tensorizer reads structured names only from state dicts");
    }
    return *byte_length;
}

// An encrypted record's crypt info: a fresh nonce and one MAC per chunk. Tensors without data
// (meta, zero-element) get an empty block, as tensorizer's meta tensors do: there is nothing to
// seal.
CryptInfo crypt_info_for(std::uint64_t data_length, const WriteEncryption& encryption) {
    CryptInfo crypt;
    if (data_length > 0) {
        crypt.key_derivation = encryption.key_derivation;
        CipherRecord cipher;
        cipher.chunk_size_bytes = encryption.chunk_size_bytes;
        cipher.initial_nonce = random_nonce();
        cipher.macs.resize(cipher_chunk_count_for(data_length, cipher.chunk_size_bytes));
        crypt.cipher = std::move(cipher);
    }
    return crypt;
}

Result<WriteGraph::Record> describe_record(const TensorToWrite& tensor, const WriteEncryption* encryption,
                                           bool& any_meta, std::vector<TensorInfo>& names) {
    WriteGraph::Record record;
    record.tensor = &tensor;
    TensorInfo info;
    info.path = tensor.path;
    if (!tensor.path.empty()) {
        info.name = stored_name(tensor.path);
    }
    record.display_name = info.display_name();
    const std::string which = "tensor '" + record.display_name + "'";
    if (tensor.path.empty()) {
        return fail(errc::invalid_tensor_name, "a tensor without a name");
    }
    RL_TRY(byte_length, checked_tensor_bytes(tensor, info, which));
    const bool meta = tensor.is_meta && byte_length > 0;
    RecordSpec& spec = record.spec;
    spec.name = info.name;
    spec.dtype = tensor.dtype;
    spec.shape = tensor.shape;
    spec.module_index = tensor.module_index;
    spec.tensor_type = tensor.tensor_type;
    // tensorizer sizes a tensor without data as numpy.dtype(dtype string).itemsize *
    // numpy.prod(shape): an opaque dtype string fails numpy, and a 0-d shape gives a float
    // (numpy.prod(()) == 1.0) that torch.empty refuses. Those meta tensors are stored as zeros.
    if (meta && (is_opaque(tensor.dtype) || tensor.shape.empty())) {
        record.stored_as_zeros = true;
    }
    spec.data_length = (meta && !record.stored_as_zeros) ? 0 : byte_length;
    any_meta = any_meta || (meta && !record.stored_as_zeros);
    if (encryption != nullptr) {
        spec.crypt = crypt_info_for(spec.data_length, *encryption);
    }
    auto checked = check_record_spec(spec);
    if (!checked) {
        return fail(checked.error().code, which + ": " + checked.error().detail);
    }
    if (record.encrypted()) {
        record.macs.resize(spec.crypt->cipher->macs.size());
    }
    names.push_back(std::move(info));
    return record;
}

// Fails on what no single tensor decides: nothing to write, a tensor on a device without its
// link, a chunk size of 0.
Result<void> check_request(std::span<const TensorToWrite> tensors, const WriteEncryption* encryption,
                           const DeviceLink* device, const std::string& target) {
    if (tensors.empty()) {
        return fail(errc::invalid_argument, target + ": no tensors to write (a tensorizer file holds at least one)");
    }
    for (const auto& tensor : tensors) {
        if (tensor.device >= 0 && (device == nullptr || device->ordinal() != tensor.device)) {
            return fail(errc::invalid_argument, target + ": a tensor on cuda:" + std::to_string(tensor.device) +
                                                    " without a link to that device (one device per write)");
        }
    }
    if (encryption != nullptr && encryption->chunk_size_bytes == 0) {
        return fail(errc::invalid_argument, target + ": a cipher chunk size of 0");
    }
    return {};
}

} // namespace

Result<std::unique_ptr<WriteGraph>> WriteGraph::create(std::span<const TensorToWrite> tensors,
                                                       const WriteEncryption* encryption, std::string target_name,
                                                       DeviceLink* device) {
    auto graph = std::make_unique<WriteGraph>();
    graph->target_ = std::move(target_name);
    graph->encryption_ = encryption;
    graph->device_ = device;
    RL_TRY_VOID(check_request(tensors, encryption, device, graph->target_));
    RL_TRY_VOID(graph->describe_records(tensors));
    const std::uint64_t sentinel_offset = graph->lay_out();
    graph->plan_pieces(sentinel_offset);
    return graph;
}

Result<void> WriteGraph::describe_records(std::span<const TensorToWrite> tensors) {
    bool any_meta = false;
    bool any_opaque = false;
    std::vector<TensorInfo> names;
    std::uint64_t entries_bytes = 0;
    for (const auto& tensor : tensors) {
        auto record = describe_record(tensor, encryption_, any_meta, names);
        if (!record) {
            return with_context(record.error(), target_);
        }
        any_opaque = any_opaque || is_opaque(tensor.dtype);
        entries_bytes += index_entry_size(record->spec);
        records_.push_back(std::move(*record));
    }
    auto tree = check_name_tree(names);
    if (!tree) {
        return with_context(tree.error(), target_);
    }
    summary_ = choose_data_version(encryption_ != nullptr, any_opaque, any_meta);
    summary_.tensor_count = tensors.size();
    summary_.index_bytes = index_bytes_for(entries_bytes);
    return {};
}

std::uint64_t WriteGraph::lay_out() {
    std::uint64_t offset = file_header_bytes + summary_.index_bytes;
    std::vector<std::byte> index;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> header_ranges;
    for (auto& record : records_) {
        record.header_offset = offset;
        record.header = serialize_tensor_header(record.spec, {});
        record.hash_prefix = hash_prefix_of(record.spec);
        record.data_offset = offset + record.header.size();
        offset = record.data_offset + record.spec.data_length;
        summary_.tensor_size_bytes += record.spec.data_length;
        auto entry = serialize_index_entry(record.spec, record.header_offset);
        index.insert(index.end(), entry.begin(), entry.end());
        header_ranges.emplace_back(record.header_offset, record.data_offset);
    }
    preamble_ = serialize_file_header(summary_);
    index.resize(summary_.index_bytes);
    preamble_.insert(preamble_.end(), index.begin(), index.end());
    header_pages_.emplace(std::move(header_ranges));
    return offset;
}

void WriteGraph::plan_pieces(std::uint64_t sentinel_offset) {
    using Kind = PieceSource::Kind;
    auto add_piece = [this](std::uint64_t at, std::uint64_t length, bool whole, PieceSource source) {
        plan_.pieces.push_back({at, length, whole, sources_.size()});
        sources_.push_back(source);
    };
    add_piece(0, preamble_.size(), false, {Kind::preamble, 0, 0});
    for (std::size_t r = 0; r < records_.size(); ++r) {
        Record& record = records_[r];
        add_piece(record.header_offset, record.header.size(), false, {Kind::header, r, 0});
        if (record.encrypted()) {
            const CipherRecord& cipher = *record.spec.crypt->cipher;
            for (std::size_t c = 0; c < record.macs.size(); ++c) {
                CipherChunk chunk = cipher_chunk(cipher, record.spec.data_length, c);
                add_piece(record.data_offset + chunk.offset_bytes, chunk.length_bytes, true,
                          {Kind::cipher_chunk, r, c});
            }
        } else if (record.spec.data_length > 0) {
            add_piece(record.data_offset, record.spec.data_length, false, {Kind::data, r, 0});
        }
        plan_.side_jobs.push_back({record.header_offset, [this, &record] { return hash_step(record); }});
    }
    add_piece(sentinel_offset, sentinel_bytes, false, {Kind::sentinel, 0, 0});
    plan_.length_bytes = sentinel_offset + sentinel_bytes;
}

bool WriteGraph::on_device(const Record& record) const {
    return record.tensor->device >= 0 && !record.stored_as_zeros;
}

Result<void> WriteGraph::fill_plaintext(const Record& record, std::uint64_t from, std::span<std::byte> dst) const {
    if (record.stored_as_zeros) {
        std::memset(dst.data(), 0, dst.size());
    } else if (on_device(record)) {
        auto copied = device_->download(dst.data(), record.tensor->bytes.data() + from, dst.size());
        if (!copied) {
            return fail(copied.error().code,
                        target_ + ": tensor '" + record.display_name + "': " + copied.error().detail);
        }
    } else {
        copy_to_destination(dst.data(), record.tensor->bytes.data() + from, dst.size());
    }
    return {};
}

Result<bool> WriteGraph::hash_step(Record& record) {
    HashState& state = *record.hashing;
    const bool with_crc = !record.encrypted();
    if (state.hashed_bytes == 0) {
        // A converted file's module indexes come with its tensors' headers, read by the time
        // their bytes are ready: the header (and what its hashes cover) takes the value then.
        if (record.spec.module_index != record.tensor->module_index) {
            record.spec.module_index = record.tensor->module_index;
            record.hash_prefix = hash_prefix_of(record.spec);
        }
        state.crc.update(record.hash_prefix);
        state.sha.update(record.hash_prefix);
    }
    static const std::vector<std::byte> zeros(hash_block_bytes);
    const std::uint64_t step_end = std::min(record.spec.data_length, state.hashed_bytes + hash_step_bytes);
    for (std::uint64_t& at = state.hashed_bytes; at < step_end;) {
        const auto length = static_cast<std::size_t>(std::min<std::uint64_t>(hash_block_bytes, step_end - at));
        std::span<const std::byte> block =
            record.stored_as_zeros ? std::span(zeros).first(length) : record.tensor->bytes.subspan(at, length);
        if (on_device(record)) {
            // A second device-to-host copy: cheaper than holding slots until the hash gets there.
            thread_local std::vector<std::byte> host_block;
            host_block.resize(length);
            RL_TRY_VOID(fill_plaintext(record, at, host_block));
            block = host_block;
        }
        if (with_crc) {
            state.crc.update(block);
        }
        state.sha.update(block);
        at += length;
    }
    if (state.hashed_bytes < record.spec.data_length) {
        return true;
    }
    record.hashes.crc32 = with_crc ? state.crc.value() : 0;
    record.hashes.sha256 = state.sha.finish();
    record.hashing.reset();
    return false;
}

std::vector<FileExtent> WriteGraph::tensor_extents() const {
    std::vector<FileExtent> extents;      // one record per tensor, in the order given
    for (const auto& record : records_) { // the hashing side job starts at the header
        extents.push_back({record.header_offset, record.data_offset + record.spec.data_length});
    }
    return extents;
}

Result<void> WriteGraph::produce_part(const WritePiece& piece, std::uint64_t from, std::span<std::byte> dst) {
    const PieceSource& source = sources_[piece.tag];
    switch (source.kind) {
        case PieceSource::Kind::preamble:
            std::memcpy(dst.data(), preamble_.data() + from, dst.size());
            return {};
        case PieceSource::Kind::header:
            std::memcpy(dst.data(), records_[source.record].header.data() + from, dst.size());
            return {};
        case PieceSource::Kind::data:
            return fill_plaintext(records_[source.record], from, dst);
        case PieceSource::Kind::sentinel:
            std::memset(dst.data(), 0, dst.size());
            return {};
        case PieceSource::Kind::cipher_chunk:
            break;
    }
    return fail(errc::invalid_argument, target_ + ": a cipher chunk cannot be produced in parts");
}

Result<void> WriteGraph::produce_whole(const WritePiece& piece, std::span<std::byte> first,
                                       std::span<std::byte> second) {
    const PieceSource& source = sources_[piece.tag];
    if (source.kind != PieceSource::Kind::cipher_chunk) {
        return fail(errc::invalid_argument, target_ + ": only cipher chunks are produced whole");
    }
    Record& record = records_[source.record];
    const CipherRecord& cipher = *record.spec.crypt->cipher;
    const CipherChunk chunk = cipher_chunk(cipher, record.spec.data_length, source.chunk);
    const Nonce nonce = nonce_plus(cipher.initial_nonce, source.chunk);
    const auto length = static_cast<std::size_t>(chunk.length_bytes);
    if (!second.empty()) {
        // Straddles two slots: sealed in one piece of scratch, then split.
        thread_local std::vector<std::byte> scratch;
        scratch.resize(length);
        RL_TRY_VOID(fill_plaintext(record, chunk.offset_bytes, scratch));
        record.macs[source.chunk] = seal_in_place(scratch, nonce, encryption_->key);
        std::memcpy(first.data(), scratch.data(), first.size());
        std::memcpy(second.data(), scratch.data() + first.size(), second.size());
    } else if (record.stored_as_zeros || on_device(record)) {
        RL_TRY_VOID(fill_plaintext(record, chunk.offset_bytes, first));
        record.macs[source.chunk] = seal_in_place(first, nonce, encryption_->key);
    } else {
        record.macs[source.chunk] =
            seal_into(first, record.tensor->bytes.subspan(chunk.offset_bytes, length), nonce, encryption_->key);
    }
    return {};
}

void WriteGraph::window_filled(std::uint64_t offset_bytes, std::span<const std::byte> bytes) {
    header_pages_->window_filled(offset_bytes, bytes);
}

Result<std::vector<std::pair<std::uint64_t, std::span<const std::byte>>>> WriteGraph::finished_header_pages() {
    for (Record& record : records_) {
        RecordSpec spec = record.spec;
        if (record.encrypted()) {
            spec.crypt->cipher->macs = record.macs;
        }
        const auto header = serialize_tensor_header(spec, record.hashes);
        RL_ASSERT(header.size() == record.header.size(), "a header's size changed with its hashes");
        if (!header_pages_->patch(record.header_offset, header)) {
            return fail(errc::io_error,
                        target_ + ": the page holding tensor '" + record.display_name + "''s header was never written");
        }
    }
    return header_pages_->pages();
}

} // namespace ringload::tensorizer
