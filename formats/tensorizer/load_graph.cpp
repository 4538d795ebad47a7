// formats/tensorizer/load_graph.cpp
#include "formats/tensorizer/load_graph.hpp"

#include "formats/tensorizer/crypt_info.hpp"
#include "formats/tensorizer/key_resolver.hpp"
#include "formats/tensorizer/tensor_header.hpp"
#include "ringload/engine/dtype_convert.hpp"
#include "ringload/engine/hashes.hpp"
#include "ringload/engine/stream_copy.hpp"

#include <algorithm>
#include <cstring>
#include <map>

namespace ringload::tensorizer {

// One wanted tensor's progress through the stream. Fields below the line are touched only
// by its Sequencer (one thread at a time, in order).
struct LoadGraph::TensorLoad {
    const TensorInfo* info = nullptr;
    std::byte* destination = nullptr;
    std::uint64_t record_offset = 0;
    std::uint64_t data_offset = 0;
    std::uint64_t record_end = 0;

    std::vector<std::byte> header_bytes;
    std::atomic<std::uint64_t> header_received{0};
    std::optional<TensorHeader> header; // written once, by the thread that completes it
    std::atomic<bool> header_ok{false};

    // Device loads that convert: raw bytes gather in device scratch, converted when the last
    // byte has been uploaded.
    std::optional<DType> convert_to;
    std::mutex scratch_mutex;
    std::byte* scratch = nullptr; // guarded by scratch_mutex until conversion
    std::atomic<std::uint64_t> uploaded{0};
    std::atomic<bool> converted{false};

    std::unique_ptr<Sequencer> sequencer;

    // Encrypted tensors only. Data bytes that arrive before the header (and so before the
    // cipher parameters are known) wait in `early`; after it, `missing` counts the bytes each
    // cipher chunk still lacks, and the worker that takes one to zero decrypts that chunk.
    struct Decryption {
        std::mutex mutex;
        bool ready = false;
        std::vector<std::pair<std::uint64_t, std::uint64_t>> early; // data-relative [begin, end)
        // Device loads: early pieces stay in their slots; straddling chunks gather in staging.
        struct EarlyPiece {
            std::uint64_t begin;
            std::uint64_t end;
            std::byte* bytes;
            ChunkPtr chunk;
        };
        std::vector<EarlyPiece> early_pieces;
        std::map<std::size_t, std::shared_ptr<std::byte>> staged;
        std::vector<std::uint64_t> missing;
        CipherRecord cipher;
        const SecretKey* key = nullptr;
        std::atomic<std::size_t> chunks_done{0};
    };
    std::unique_ptr<Decryption> decryption; // in files with crypt info (v3, v4 + flag)
    // ---
    Crc32 crc;
    Sha256 sha;
    std::atomic<bool> verified{false};
};

namespace {

std::uint64_t overlap_begin(std::uint64_t a, std::uint64_t b) {
    return std::max(a, b);
}
std::uint64_t overlap_end(std::uint64_t a, std::uint64_t b) {
    return std::min(a, b);
}
// Bytes that [begin, end) shares with a cipher chunk.
std::uint64_t overlap_length(std::uint64_t begin, std::uint64_t end, const CipherChunk& chunk) {
    std::uint64_t from = std::max(begin, chunk.offset_bytes);
    std::uint64_t to = std::min(end, chunk.offset_bytes + chunk.length_bytes);
    return to > from ? to - from : 0;
}

// Counts data bytes [begin, end) as received (the mutex held, the cipher known) and appends the
// chunks they complete.
// Calls fn(index, chunk) for each cipher chunk that data bytes [begin, end) touch, in order,
// until fn returns false. Only those chunks are visited: the first by division.
template <class Fn>
void for_each_chunk_in(const LoadGraph::TensorLoad::Decryption& decryption, std::uint64_t data_length,
                       std::uint64_t begin, std::uint64_t end, Fn fn) {
    const std::size_t chunk_count = decryption.missing.size();
    std::size_t first = chunk_count == 1 ? 0 : static_cast<std::size_t>(begin / decryption.cipher.chunk_size_bytes);
    for (std::size_t i = first; i < chunk_count; ++i) {
        CipherChunk chunk = cipher_chunk(decryption.cipher, data_length, i);
        if (chunk.offset_bytes >= end || !fn(i, chunk)) {
            break;
        }
    }
}

void count_received(LoadGraph::TensorLoad::Decryption& decryption, std::uint64_t data_length, std::uint64_t begin,
                    std::uint64_t end, std::vector<std::size_t>& complete) {
    for_each_chunk_in(decryption, data_length, begin, end, [&](std::size_t i, const CipherChunk& chunk) {
        std::uint64_t overlap = overlap_length(begin, end, chunk);
        decryption.missing[i] -= std::min(overlap, decryption.missing[i]);
        if (decryption.missing[i] == 0 && overlap > 0) {
            complete.push_back(i);
        }
        return true;
    });
}

} // namespace

Result<std::unique_ptr<LoadGraph>> LoadGraph::create(const Index& index, std::vector<TensorDestination> destinations,
                                                     LoadGraphOptions options, std::string source_name) {
    if (index.encrypted && options.keys == nullptr) {
        return fail(errc::encrypted_no_key, source_name + ": encrypted: supply a key (data version " +
                                                std::to_string(index.data_version) +
                                                " with encrypted tensor data; use --key-file or --passphrase-file)");
    }
    std::unique_ptr<LoadGraph> graph(new LoadGraph(index, options, std::move(source_name)));
    std::sort(destinations.begin(), destinations.end(), [&](const TensorDestination& a, const TensorDestination& b) {
        return index.tensors[a.tensor_index].record_offset_bytes < index.tensors[b.tensor_index].record_offset_bytes;
    });
    for (const auto& destination : destinations) {
        RL_ASSERT(destination.tensor_index < index.tensors.size(), "destination for a tensor not in the index");
        const TensorInfo& info = index.tensors[destination.tensor_index];
        auto load = std::make_unique<TensorLoad>();
        load->info = &info;
        load->destination = destination.data;
        load->record_offset = info.record_offset_bytes;
        load->data_offset = info.data_offset_bytes;
        load->record_end = info.data_offset_bytes + info.data_length_bytes;
        load->header_bytes.resize(info.data_offset_bytes - info.record_offset_bytes);
        if (options.device != nullptr && destination.dtype && converts(info.dtype, *destination.dtype)) {
            load->convert_to = destination.dtype;
        }
        if (index.encrypted) {
            load->decryption = std::make_unique<TensorLoad::Decryption>();
        }
        if (options.verify_hashes) {
            load->sequencer = std::make_unique<Sequencer>(load->record_offset);
        }
        // Adjacent records become one range: one sequential stream for a whole-file load.
        auto& ranges = graph->plan_.ranges;
        if (!ranges.empty() && ranges.back().end_bytes() == load->record_offset) {
            ranges.back().length_bytes += load->record_end - load->record_offset;
        } else {
            ranges.push_back({load->record_offset, load->record_end - load->record_offset});
        }
        graph->loads_.push_back(std::move(load));
    }
    return graph;
}

LoadGraph::LoadGraph(const Index& index, LoadGraphOptions options, std::string source_name)
    : index_(index), options_(options), source_name_(std::move(source_name)) {}

LoadGraph::~LoadGraph() {
    for (const auto& load : loads_) {
        if (load->scratch != nullptr && !load->converted.load()) {
            options_.device->free_scratch(load->scratch); // a load that failed half-way
        }
    }
}

Result<void> LoadGraph::process(const ChunkPtr& chunk) {
    if (failed_.load(std::memory_order_relaxed)) {
        std::lock_guard lock(failure_mutex_);
        return *failure_; // stops the run early: no point reading on
    }
    const std::uint64_t chunk_begin = chunk->source_offset_bytes();
    const std::uint64_t chunk_end = chunk->source_end_bytes();
    const std::byte* bytes = chunk->bytes().data();
    auto first = std::partition_point(loads_.begin(), loads_.end(),
                                      [&](const auto& load) { return load->record_end <= chunk_begin; });
    for (auto it = first; it != loads_.end() && (*it)->record_offset < chunk_end; ++it) {
        if (failed_.load(std::memory_order_relaxed)) {
            return {};
        }
        TensorLoad& load = **it;
        // Header bytes: gathered, because a header may straddle two chunks.
        std::uint64_t begin = overlap_begin(load.record_offset, chunk_begin);
        std::uint64_t end = overlap_end(load.data_offset, chunk_end);
        if (begin < end) {
            std::memcpy(load.header_bytes.data() + (begin - load.record_offset), bytes + (begin - chunk_begin),
                        end - begin);
            std::uint64_t received = load.header_received.fetch_add(end - begin) + (end - begin);
            if (received == load.header_bytes.size()) {
                auto checked = on_header_complete(load);
                if (!checked) {
                    record_failure(checked.error());
                    return checked.error();
                }
            }
        }
        // Data bytes: straight to the destination.
        begin = overlap_begin(load.data_offset, chunk_begin);
        end = overlap_end(load.record_end, chunk_end);
        if (load.decryption) {
            // Encrypted: hashing waits for decryption (the header piece was submitted with the
            // header, see prepare_decryption).
            if (begin < end && options_.device != nullptr) {
                take_ciphertext_on_device(load, chunk->mutable_bytes().data() + (begin - chunk_begin),
                                          begin - load.data_offset, end - load.data_offset, chunk);
            } else if (begin < end) {
                take_ciphertext(load, bytes + (begin - chunk_begin), begin - load.data_offset, end - load.data_offset);
            }
            continue;
        }
        if (options_.device != nullptr) {
            // The slot stays leased until the copy has completed and the piece is hashed.
            const std::byte* source = bytes + (begin - chunk_begin);
            if (begin < end) {
                auto uploaded = upload(load, begin - load.data_offset, source, end - begin, chunk);
                if (!uploaded) {
                    Error error = tensor_error(load, uploaded.error());
                    record_failure(error);
                    return error;
                }
            }
            if (load.sequencer) {
                submit_hash(load, overlap_begin(load.record_offset, chunk_begin),
                            overlap_end(load.record_end, chunk_end), begin < end ? source : nullptr, chunk);
            }
            continue;
        }
        // Bytes read in place (in_place_ranges) are already there.
        std::byte* destination = load.destination + (begin - load.data_offset);
        const std::byte* source = bytes + (begin - chunk_begin);
        if (begin < end && destination != source) {
            copy_to_destination(destination, source, end - begin);
        }
        if (load.sequencer) {
            // Hashed from the destination, not the slot: the slot goes back to the ring now, so
            // a long in-order hash (one big tensor) never stalls the reads.
            submit_hash(load, overlap_begin(load.record_offset, chunk_begin), overlap_end(load.record_end, chunk_end));
        }
    }
    return {};
}

std::vector<ReadRange> LoadGraph::in_place_ranges() const {
    std::vector<ReadRange> ranges;
    if (options_.device != nullptr) {
        return ranges; // device memory is no place for a socket to write into
    }
    for (const auto& load : loads_) {
        const std::uint64_t length = load->record_end - load->data_offset;
        if (!load->decryption && load->destination != nullptr && length >= in_place_min_bytes) {
            ranges.push_back({load->data_offset, length});
        }
    }
    return ranges;
}

std::byte* LoadGraph::in_place_destination(std::uint64_t offset_bytes) const {
    auto it = std::partition_point(loads_.begin(), loads_.end(),
                                   [&](const auto& load) { return load->record_end <= offset_bytes; });
    if (it == loads_.end() || (*it)->data_offset > offset_bytes || (*it)->decryption) {
        return nullptr;
    }
    return (*it)->destination + (offset_bytes - (*it)->data_offset);
}

std::uint16_t LoadGraph::module_index_of(const TensorInfo& tensor) const {
    auto it = std::partition_point(loads_.begin(), loads_.end(), [&](const std::unique_ptr<TensorLoad>& load) {
        return load->record_offset < tensor.record_offset_bytes;
    });
    if (it == loads_.end() || (*it)->info != &tensor || !(*it)->header) {
        return tensor.module_index;
    }
    return (*it)->header->module_index;
}

Result<void> LoadGraph::on_header_complete(TensorLoad& load) {
    auto header = parse_tensor_header(load.header_bytes, index_.encrypted);
    if (!header) {
        return tensor_error(load, header.error());
    }
    auto matches = check_header_matches_index(*header, *load.info);
    if (!matches) {
        return tensor_error(load, matches.error());
    }
    load.header = std::move(*header);
    load.header_ok.store(true, std::memory_order_release);
    if (load.decryption) {
        return prepare_decryption(load);
    }
    return {};
}

Result<void> LoadGraph::prepare_decryption(TensorLoad& load) {
    auto crypt = crypt_info_to_decrypt(load.header_bytes, *load.header, load.info->data_length_bytes);
    if (!crypt) {
        return tensor_error(load, crypt.error());
    }
    const SecretKey* key = nullptr;
    if (crypt->encrypted()) {
        auto resolved = options_.keys->key_for(*crypt); // create() made sure keys exist
        if (!resolved) {
            return tensor_error(load, resolved.error());
        }
        key = *resolved;
    }
    // H' first; the data pieces follow as their chunks decrypt. An empty block (a meta tensor
    // in an encrypted file) has no data: this piece completes it.
    auto& decryption = *load.decryption;
    if (load.sequencer) {
        submit_hash(load, load.record_offset, load.data_offset);
    }
    if (!crypt->encrypted()) {
        return {};
    }
    std::vector<std::size_t> complete;
    std::vector<TensorLoad::Decryption::EarlyPiece> early_pieces;
    {
        std::lock_guard lock(decryption.mutex);
        decryption.cipher = std::move(*crypt->cipher);
        decryption.key = key;
        const std::uint64_t data_length = load.info->data_length_bytes;
        const std::size_t chunk_count = cipher_chunk_count(decryption.cipher, data_length);
        decryption.missing.resize(chunk_count);
        for (std::size_t i = 0; i < chunk_count; ++i) {
            decryption.missing[i] = cipher_chunk(decryption.cipher, data_length, i).length_bytes;
        }
        decryption.ready = true;
        for (auto [begin, end] : decryption.early) {
            count_received(decryption, data_length, begin, end, complete);
        }
        decryption.early.clear();
        early_pieces = std::move(decryption.early_pieces);
    }
    decrypt_chunks(load, complete);
    for (const auto& piece : early_pieces) {
        take_ciphertext_on_device(load, piece.bytes, piece.begin, piece.end, piece.chunk);
    }
    return {};
}

void LoadGraph::on_ciphertext(TensorLoad& load, std::uint64_t begin, std::uint64_t end) {
    auto& decryption = *load.decryption;
    std::vector<std::size_t> complete;
    {
        std::lock_guard lock(decryption.mutex);
        if (!decryption.ready) {
            decryption.early.emplace_back(begin, end);
            return;
        }
        count_received(decryption, load.info->data_length_bytes, begin, end, complete);
    }
    decrypt_chunks(load, complete);
}

void LoadGraph::take_ciphertext(TensorLoad& load, const std::byte* bytes, std::uint64_t begin, std::uint64_t end) {
    auto& decryption = *load.decryption;
    bool ready = false;
    {
        std::lock_guard lock(decryption.mutex);
        ready = decryption.ready; // once set, the cipher parameters never change
    }
    if (!ready) {
        copy_to_destination(load.destination + begin, bytes, end - begin);
        on_ciphertext(load, begin, end);
        return;
    }
    // Chunks wholly in this slot open straight from it into the tensor: one pass over the
    // bytes instead of a copy and a second pass. Pieces of chunks that straddle slots are
    // gathered in the tensor and opened in place once complete.
    for_each_chunk_in(decryption, load.info->data_length_bytes, begin, end,
                      [&](std::size_t i, const CipherChunk& chunk) {
                          const std::uint64_t from = std::max(begin, chunk.offset_bytes);
                          const std::uint64_t to = std::min(end, chunk.offset_bytes + chunk.length_bytes);
                          if (from == chunk.offset_bytes && to == chunk.offset_bytes + chunk.length_bytes) {
                              return open_chunk(load, i, {bytes + (from - begin), chunk.length_bytes});
                          }
                          copy_to_destination(load.destination + from, bytes + (from - begin), to - from);
                          on_ciphertext(load, from, to);
                          return true;
                      });
}

bool LoadGraph::open_chunk(TensorLoad& load, std::size_t index, std::span<const std::byte> ciphertext) {
    CipherChunk chunk = cipher_chunk(load.decryption->cipher, load.info->data_length_bytes, index);
    if (!authenticate(load, index, {load.destination + chunk.offset_bytes, chunk.length_bytes}, ciphertext)) {
        return false;
    }
    if (load.sequencer) {
        submit_hash(load, load.data_offset + chunk.offset_bytes,
                    load.data_offset + chunk.offset_bytes + chunk.length_bytes);
    }
    return true;
}

bool LoadGraph::authenticate(TensorLoad& load, std::size_t index, std::span<std::byte> plaintext,
                             std::span<const std::byte> ciphertext) {
    auto& decryption = *load.decryption;
    CipherChunk chunk = cipher_chunk(decryption.cipher, load.info->data_length_bytes, index);
    Nonce nonce = nonce_plus(decryption.cipher.initial_nonce, index);
    if (!open_into(plaintext, ciphertext, decryption.cipher.macs[index], nonce, *decryption.key)) {
        record_failure(tensor_error(
            load,
            fail(errc::decryption_failed,
                 "cipher chunk " + std::to_string(index + 1) + " of " + std::to_string(decryption.missing.size()) +
                     " (data bytes " + std::to_string(chunk.offset_bytes) + ".." +
                     std::to_string(chunk.offset_bytes + chunk.length_bytes) +
                     ") failed authentication: wrong key or passphrase, or the data or its MAC is corrupted")));
        return false;
    }
    decryption.chunks_done.fetch_add(1, std::memory_order_acq_rel);
    return true;
}

Result<void> LoadGraph::upload(TensorLoad& load, std::uint64_t begin, const std::byte* bytes, std::uint64_t length,
                               std::shared_ptr<const void> keep_alive) {
    DeviceLink& device = *options_.device;
    std::byte* target = load.destination;
    if (load.convert_to) {
        std::lock_guard lock(load.scratch_mutex);
        if (load.scratch == nullptr) {
            RL_TRY(scratch, device.allocate_scratch(load.info->data_length_bytes));
            load.scratch = scratch;
        }
        target = load.scratch;
    }
    RL_TRY_VOID(device.upload(target + begin, bytes, length, std::move(keep_alive)));
    // Counted after the copy is queued: the thread that completes the count converts, after
    // every copy of this tensor (convert() orders itself after all queued uploads).
    if (load.convert_to && load.uploaded.fetch_add(length) + length == load.info->data_length_bytes) {
        load.converted.store(true);
        return device.convert(load.destination, *load.convert_to, load.scratch, load.info->dtype, load.info->numel());
    }
    return {};
}

void LoadGraph::take_ciphertext_on_device(TensorLoad& load, std::byte* bytes, std::uint64_t begin, std::uint64_t end,
                                          const ChunkPtr& chunk) {
    auto& decryption = *load.decryption;
    {
        std::lock_guard lock(decryption.mutex);
        if (failed_.load()) {
            return; // abandon() may have run: hold nothing more
        }
        if (!decryption.ready) {
            decryption.early_pieces.push_back({begin, end, bytes, chunk}); // replayed by prepare_decryption
            return;
        }
    }
    const std::uint64_t data_length = load.info->data_length_bytes;
    for_each_chunk_in(decryption, data_length, begin, end, [&](std::size_t i, const CipherChunk& cipher) {
        const std::uint64_t from = std::max(begin, cipher.offset_bytes);
        const std::uint64_t to = std::min(end, cipher.offset_bytes + cipher.length_bytes);
        if (from == cipher.offset_bytes && to == cipher.offset_bytes + cipher.length_bytes) {
            return open_on_device(load, i, {bytes + (from - begin), cipher.length_bytes}, chunk);
        }
        // A chunk that straddles slots gathers in page-locked staging and opens there.
        std::shared_ptr<std::byte> staging;
        std::vector<std::size_t> complete;
        std::optional<Error> no_staging;
        {
            std::lock_guard lock(decryption.mutex);
            auto& staged = decryption.staged[i];
            if (!staged) {
                auto taken = options_.device->staging(cipher.length_bytes);
                if (taken) {
                    staged = std::move(*taken);
                } else {
                    no_staging = taken.error();
                }
            }
        }
        if (no_staging) {
            record_failure(tensor_error(load, *no_staging)); // takes decryption.mutex
            return false;
        }
        {
            std::lock_guard lock(decryption.mutex);
            staging = decryption.staged[i];
            std::memcpy(staging.get() + (from - cipher.offset_bytes), bytes + (from - begin), to - from);
            count_received(decryption, data_length, from, to, complete);
        }
        for (std::size_t index : complete) {
            std::shared_ptr<std::byte> buffer;
            {
                std::lock_guard lock(decryption.mutex);
                auto it = decryption.staged.find(index);
                buffer = std::move(it->second);
                decryption.staged.erase(it);
            }
            CipherChunk whole = cipher_chunk(decryption.cipher, data_length, index);
            if (!open_on_device(load, index, {buffer.get(), whole.length_bytes}, buffer)) {
                return false;
            }
        }
        return true;
    });
}

bool LoadGraph::open_on_device(TensorLoad& load, std::size_t index, std::span<std::byte> bytes,
                               const std::shared_ptr<const void>& keep_alive) {
    if (!authenticate(load, index, bytes, bytes)) {
        return false;
    }
    CipherChunk chunk = cipher_chunk(load.decryption->cipher, load.info->data_length_bytes, index);
    auto uploaded = upload(load, chunk.offset_bytes, bytes.data(), chunk.length_bytes, keep_alive);
    if (!uploaded) {
        record_failure(tensor_error(load, uploaded.error()));
        return false;
    }
    if (load.sequencer) {
        submit_hash(load, load.data_offset + chunk.offset_bytes,
                    load.data_offset + chunk.offset_bytes + chunk.length_bytes, bytes.data(), keep_alive);
    }
    return true;
}

void LoadGraph::decrypt_chunks(TensorLoad& load, const std::vector<std::size_t>& chunks) {
    const std::uint64_t data_length = load.info->data_length_bytes;
    for (std::size_t i : chunks) {
        if (failed_.load(std::memory_order_relaxed)) {
            return;
        }
        CipherChunk chunk = cipher_chunk(load.decryption->cipher, data_length, i);
        if (!open_chunk(load, i, {load.destination + chunk.offset_bytes, chunk.length_bytes})) {
            return;
        }
    }
}

void LoadGraph::submit_hash(TensorLoad& load, std::uint64_t begin, std::uint64_t end, const std::byte* data,
                            std::shared_ptr<const void> keep_alive) {
    load.sequencer->submit(begin, end - begin, [this, &load, begin, end, data, keep = std::move(keep_alive)] {
        hash_piece(load, begin, end, data);
    });
}

void LoadGraph::hash_piece(TensorLoad& load, std::uint64_t begin, std::uint64_t end, const std::byte* data_at) {
    if (failed_.load(std::memory_order_relaxed) || !load.header_ok.load(std::memory_order_acquire)) {
        return; // the failure is already recorded
    }
    // The piece that holds the header's last byte feeds H' (the header itself was gathered
    // by this and earlier pieces, which ran before it).
    if (begin < load.data_offset && end >= load.data_offset) {
        auto prefix = hash_input_prefix(load.header_bytes, *load.header);
        load.crc.update(prefix);
        load.sha.update(prefix);
    }
    std::uint64_t data_begin = overlap_begin(load.data_offset, begin);
    if (data_begin < end) {
        const std::byte* from = data_at != nullptr ? data_at : load.destination + (data_begin - load.data_offset);
        std::span<const std::byte> data(from, end - data_begin);
        load.crc.update(data);
        load.sha.update(data);
    }
    if (end != load.record_end) {
        return;
    }
    const TensorHeader& header = *load.header;
    if (header.hashes.empty()) {
        record_failure(tensor_error(load, fail(errc::hash_mismatch, "no stored hashes to verify")));
        return;
    }
    const std::uint32_t crc = load.crc.value();
    const Sha256Digest sha = load.sha.finish();
    for (const auto& stored : header.hashes) {
        const std::byte* value = load.header_bytes.data() + stored.value_offset_bytes;
        if (stored.type == static_cast<std::uint8_t>(HashType::crc32) && stored.value_length_bytes == 4) {
            std::uint32_t expected = 0;
            std::memcpy(&expected, value, 4);
            if (expected != crc) {
                record_failure(
                    tensor_error(load, fail(errc::hash_mismatch, "CRC32 mismatch: stored " + std::to_string(expected) +
                                                                     ", computed " + std::to_string(crc))));
                return;
            }
        } else if (stored.type == static_cast<std::uint8_t>(HashType::sha256) && stored.value_length_bytes == 32) {
            if (std::memcmp(value, sha.data(), 32) != 0) {
                auto stored_hex = to_hex({reinterpret_cast<const std::uint8_t*>(value), 32});
                record_failure(tensor_error(load, fail(errc::hash_mismatch, "SHA-256 mismatch: stored " + stored_hex +
                                                                                ", computed " + to_hex(sha))));
                return;
            }
        } else {
            record_failure(
                tensor_error(load, fail(errc::unsupported, "unknown stored hash type " + std::to_string(stored.type))));
            return;
        }
    }
    load.verified.store(true, std::memory_order_release);
}

Result<void> LoadGraph::finish() {
    if (failed_.load()) {
        std::lock_guard lock(failure_mutex_);
        return *failure_;
    }
    for (const auto& load : loads_) {
        if (!load->header_ok.load(std::memory_order_acquire)) {
            return tensor_error(*load, fail(errc::truncated, "its header was never read completely"));
        }
        if (load->decryption && load->decryption->ready &&
            load->decryption->chunks_done.load(std::memory_order_acquire) != load->decryption->missing.size()) {
            return tensor_error(*load, fail(errc::truncated, "some of its cipher chunks were never complete"));
        }
        if (options_.verify_hashes && !load->verified.load(std::memory_order_acquire)) {
            return tensor_error(*load, fail(errc::hash_mismatch, "its hashes were never checked"));
        }
        if (load->info->is_meta && options_.device != nullptr) {
            const std::uint64_t bytes = load->info->numel() * itemsize(load->convert_to.value_or(load->info->dtype));
            auto zeroed = options_.device->fill_zero(load->destination, bytes);
            if (!zeroed) {
                return tensor_error(*load, zeroed.error());
            }
        } else if (load->info->is_meta) {
            std::memset(load->destination, 0, load->info->byte_length); // meta tensors load as zeros (§8)
        }
    }
    if (options_.device != nullptr) {
        // Every chunk is back, so every upload has landed; conversions and zero fills may not.
        auto synchronized = options_.device->synchronize();
        if (!synchronized) {
            Error error = synchronized.error();
            error.detail = source_name_ + ": " + error.detail;
            return error;
        }
    }
    return {};
}

void LoadGraph::record_failure(Error error) {
    {
        std::lock_guard lock(failure_mutex_);
        if (!failure_) {
            failure_ = std::move(error);
        }
    }
    abandon();
}

void LoadGraph::abandon() noexcept {
    failed_.store(true);
    // Device loads hold chunks in parked hash pieces and in early ciphertext pieces; a stream
    // that will not complete must not keep its slots (the run waits for all of them).
    for (const auto& load : loads_) {
        if (load->sequencer) {
            load->sequencer->abandon();
        }
        if (load->decryption) {
            std::vector<TensorLoad::Decryption::EarlyPiece> dropped;
            std::lock_guard lock(load->decryption->mutex);
            dropped.swap(load->decryption->early_pieces);
        }
    }
}

Error LoadGraph::tensor_error(const TensorLoad& load, Error error) const {
    error.detail = source_name_ + ": tensor '" + load.info->display_name() + "' (record at offset " +
                   std::to_string(load.record_offset) + "): " + error.detail;
    return error;
}

} // namespace ringload::tensorizer
