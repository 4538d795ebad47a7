// formats/tensorizer/load_graph.cpp
#include "formats/tensorizer/load_graph.hpp"

#include "formats/tensorizer/crypt_info.hpp"
#include "formats/tensorizer/key_resolver.hpp"
#include "formats/tensorizer/tensor_header.hpp"
#include "ringload/engine/dtype_convert.hpp"
#include "ringload/engine/stages/decrypt.hpp"
#include "ringload/engine/stages/device_destination.hpp"
#include "ringload/engine/stages/hash.hpp"
#include "ringload/engine/stages/host_destination.hpp"

#include <algorithm>
#include <optional>

namespace ringload::tensorizer {

// Set up by the builder; module_index written once, by the thread that reads the header.
struct TensorHeaders::Record {
    const TensorInfo* info = nullptr;
    Decrypt* decrypt = nullptr; // in the record's stages, when the file is encrypted
    Hash* hash = nullptr;       // in the record's stages, with verification
    std::optional<std::uint16_t> module_index;
};

namespace {

std::vector<StoredDigest> stored_digests(std::span<const std::byte> header_bytes, const TensorHeader& header) {
    std::vector<StoredDigest> digests;
    for (const auto& stored : header.hashes) {
        StoredDigest digest;
        digest.type_code = stored.type;
        if (stored.type == static_cast<std::uint8_t>(HashType::crc32) && stored.value_length_bytes == 4) {
            digest.kind = StoredDigest::Kind::crc32;
        } else if (stored.type == static_cast<std::uint8_t>(HashType::sha256) && stored.value_length_bytes == 32) {
            digest.kind = StoredDigest::Kind::sha256;
        }
        auto value = header_bytes.subspan(stored.value_offset_bytes, stored.value_length_bytes);
        digest.value.assign(value.begin(), value.end());
        digests.push_back(std::move(digest));
    }
    return digests;
}

// The boxes of §9.3: chunk i of the data, its nonce (initial + i) and its MAC.
std::vector<SealedChunk> sealed_chunks(const CipherRecord& cipher, std::uint64_t data_length_bytes) {
    std::vector<SealedChunk> chunks(cipher_chunk_count(cipher, data_length_bytes));
    for (std::size_t i = 0; i < chunks.size(); ++i) {
        const CipherChunk chunk = cipher_chunk(cipher, data_length_bytes, i);
        chunks[i] = {chunk.offset_bytes, chunk.length_bytes, nonce_plus(cipher.initial_nonce, i), cipher.macs[i]};
    }
    return chunks;
}

// Decrypt (encrypted files) -> destination -> hash (verification).
std::vector<std::unique_ptr<Stage>> tensor_stages(const Index& index, const TensorInfo& info,
                                                  const TensorDestination& destination, const LoadGraphRequest& request,
                                                  TensorHeaders::Record& record) {
    std::unique_ptr<Destination> place;
    if (request.device != nullptr) {
        std::optional<DType> convert_to;
        if (destination.dtype && converts(info.dtype, *destination.dtype)) {
            convert_to = destination.dtype;
        }
        const std::uint64_t zeros = info.is_meta ? info.numel() * itemsize(convert_to.value_or(info.dtype)) : 0;
        place = std::make_unique<DeviceDestination>(
            *request.device, destination.data, DeviceRecord{info.data_length_bytes, info.dtype, convert_to, zeros});
    } else {
        place = std::make_unique<HostDestination>(destination.data, info.is_meta ? info.byte_length : 0);
    }
    std::vector<std::unique_ptr<Stage>> stages;
    if (index.encrypted) {
        auto decrypt = std::make_unique<Decrypt>(*place);
        record.decrypt = decrypt.get();
        stages.push_back(std::move(decrypt));
    }
    stages.push_back(std::move(place));
    if (request.verify_hashes) {
        auto hash = std::make_unique<Hash>(info.data_offset_bytes - info.record_offset_bytes, info.data_length_bytes);
        record.hash = hash.get();
        stages.push_back(std::move(hash));
    }
    return stages;
}

} // namespace

TensorHeaders::TensorHeaders(const Index& index, KeyResolver* keys) : index_(index), keys_(keys) {}
TensorHeaders::~TensorHeaders() = default;

TensorHeaders::Record& TensorHeaders::add(const TensorInfo& info) {
    records_.push_back(std::make_unique<Record>());
    records_.back()->info = &info;
    return *records_.back();
}

Result<void> TensorHeaders::on_header(std::size_t k, std::span<const std::byte> header_bytes) {
    Record& record = *records_[k];
    RL_TRY(header, parse_tensor_header(header_bytes, index_.encrypted));
    RL_TRY_VOID(check_header_matches_index(header, *record.info));
    record.module_index = header.module_index;
    // H' first; the data pieces follow as they arrive (decrypted). An empty block (a meta
    // tensor) has no data: the prefix completes the hash.
    if (record.hash != nullptr) {
        record.hash->arm(hash_input_prefix(header_bytes, header), stored_digests(header_bytes, header));
    }
    if (record.decrypt == nullptr) {
        return {};
    }
    const std::uint64_t data_length = record.info->data_length_bytes;
    RL_TRY(crypt, crypt_info_to_decrypt(header_bytes, header, data_length));
    if (!crypt.encrypted()) {
        return {};
    }
    RL_TRY(key, keys_->key_for(crypt)); // build_load_graph made sure keys exist
    return record.decrypt->arm(sealed_chunks(*crypt.cipher, data_length), *key);
}

std::uint16_t TensorHeaders::module_index_of(const TensorInfo& tensor) const {
    auto it = std::partition_point(records_.begin(), records_.end(), [&](const std::unique_ptr<Record>& record) {
        return record->info->record_offset_bytes < tensor.record_offset_bytes;
    });
    if (it == records_.end() || (*it)->info != &tensor || !(*it)->module_index) {
        return tensor.module_index;
    }
    return *(*it)->module_index;
}

Result<FormatLoadGraph> build_load_graph(const Index& index, std::vector<TensorDestination> destinations,
                                         const LoadGraphRequest& request) {
    const std::string& source_name = request.source_name;
    if (index.encrypted && request.keys == nullptr) {
        return fail(errc::encrypted_no_key, source_name + ": encrypted: supply a key (data version " +
                                                std::to_string(index.data_version) +
                                                " with encrypted tensor data; use --key-file or --passphrase-file)");
    }
    std::sort(destinations.begin(), destinations.end(), [&](const TensorDestination& a, const TensorDestination& b) {
        return index.tensors[a.tensor_index].record_offset_bytes < index.tensors[b.tensor_index].record_offset_bytes;
    });
    auto headers = std::make_shared<TensorHeaders>(index, request.keys);
    std::vector<RecordSpec> records;
    records.reserve(destinations.size());
    for (const auto& destination : destinations) {
        RL_ASSERT(destination.tensor_index < index.tensors.size(), "destination for a tensor not in the index");
        const TensorInfo& info = index.tensors[destination.tensor_index];
        RecordSpec record;
        record.name =
            "tensor '" + info.display_name() + "' (record at offset " + std::to_string(info.record_offset_bytes) + ")";
        record.record_offset_bytes = info.record_offset_bytes;
        record.data_offset_bytes = info.data_offset_bytes;
        record.data_length_bytes = info.data_length_bytes;
        record.host_destination = request.device == nullptr ? destination.data : nullptr;
        record.id = destination.tensor_index; // the tensor, for StageGraph::on_record_done
        record.stages = tensor_stages(index, info, destination, request, headers->add(info));
        record.on_header = [headers, k = records.size()](std::span<const std::byte> bytes) {
            return headers->on_header(k, bytes);
        };
        records.push_back(std::move(record));
    }
    RL_TRY(graph, StageGraph::create(std::move(records), {source_name, 0, request.device}));
    return FormatLoadGraph{std::move(graph), std::move(headers)};
}

} // namespace ringload::tensorizer
