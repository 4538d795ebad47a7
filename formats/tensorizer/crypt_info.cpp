// formats/tensorizer/crypt_info.cpp
#include "formats/tensorizer/crypt_info.hpp"

#include "ringload/engine/byte_reader.hpp"

#include <cstring>

namespace ringload::tensorizer {
namespace {

constexpr std::uint16_t key_derivation_type = 1;
constexpr std::uint16_t parallel_cipher_type = 2;
constexpr std::uint16_t sequential_cipher_type = 3;
constexpr std::size_t key_derivation_body_bytes = 2 + 8 + 8 + 4 + 2 + 16; // with a 16-byte salt
constexpr std::size_t parallel_cipher_fixed_bytes = 8 + 24 + 8;

template <std::size_t N>
Result<std::array<std::uint8_t, N>> fixed_bytes(ByteReader& in) {
    RL_TRY(raw, in.bytes(N));
    std::array<std::uint8_t, N> out;
    std::memcpy(out.data(), raw.data(), N);
    return out;
}

Result<KeyDerivationRecord> parse_key_derivation(ByteReader& in) {
    KeyDerivationRecord record;
    RL_TRY(method, in.u16());
    RL_TRY(opslimit, in.u64());
    RL_TRY(memlimit, in.u64());
    RL_TRY(algorithm, in.u32());
    RL_TRY(salt_length, in.u16());
    if (salt_length != record.params.salt.size()) {
        return fail(errc::format_error,
                    "key-derivation salt of " + std::to_string(salt_length) + " bytes (libsodium's Argon2id takes 16)");
    }
    RL_TRY(salt, fixed_bytes<16>(in));
    record.method = method;
    record.algorithm = static_cast<std::int32_t>(algorithm);
    record.params = {opslimit, memlimit, salt};
    return record;
}

Result<CipherRecord> parse_parallel_cipher(ByteReader& in, std::size_t body_bytes) {
    CipherRecord record;
    RL_TRY(chunk_size, in.u64());
    RL_TRY(nonce, fixed_bytes<24>(in));
    RL_TRY(mac_count, in.u64());
    if (body_bytes < parallel_cipher_fixed_bytes || (body_bytes - parallel_cipher_fixed_bytes) / 16 != mac_count ||
        (body_bytes - parallel_cipher_fixed_bytes) % 16 != 0) {
        return fail(errc::format_error, "cipher record of " + std::to_string(body_bytes) + " bytes does not hold " +
                                            std::to_string(mac_count) + " 16-byte MACs");
    }
    if (chunk_size % 64 != 0 || chunk_size < 1024) {
        return fail(errc::format_error,
                    "cipher chunk size " + std::to_string(chunk_size) + " is not a multiple of 64 of at least 1024");
    }
    record.chunk_size_bytes = chunk_size;
    record.initial_nonce = nonce;
    for (std::uint64_t i = 0; i < mac_count; ++i) {
        RL_TRY(mac, fixed_bytes<16>(in));
        record.macs.push_back(mac);
    }
    return record;
}

Result<CipherRecord> parse_sequential_cipher(ByteReader& in) {
    CipherRecord record;
    record.sequential = true;
    RL_TRY(nonce, fixed_bytes<24>(in));
    RL_TRY(mac, fixed_bytes<16>(in));
    record.initial_nonce = nonce;
    record.macs.push_back(mac);
    return record;
}

void put(std::vector<std::byte>& out, const void* data, std::size_t length) {
    const auto* bytes = static_cast<const std::byte*>(data);
    out.insert(out.end(), bytes, bytes + length);
}
template <class T>
void put_le(std::vector<std::byte>& out, T value) {
    put(out, &value, sizeof(T)); // little-endian host (static_assert in byte_reader.hpp)
}

} // namespace

std::size_t cipher_chunk_count_for(std::uint64_t data_length_bytes, std::uint64_t chunk_size_bytes) {
    return static_cast<std::size_t>((data_length_bytes + chunk_size_bytes - 1) / chunk_size_bytes);
}

std::size_t cipher_chunk_count(const CipherRecord& cipher, std::uint64_t data_length_bytes) {
    if (data_length_bytes == 0) {
        return 0;
    }
    // One MAC means one secretbox over everything, whatever chunk_size says (§9.3).
    if (cipher.sequential || cipher.macs.size() == 1) {
        return 1;
    }
    return cipher_chunk_count_for(data_length_bytes, cipher.chunk_size_bytes);
}

CipherChunk cipher_chunk(const CipherRecord& cipher, std::uint64_t data_length_bytes, std::size_t index) {
    if (cipher_chunk_count(cipher, data_length_bytes) == 1) {
        return {0, data_length_bytes};
    }
    std::uint64_t begin = index * cipher.chunk_size_bytes;
    return {begin, std::min(cipher.chunk_size_bytes, data_length_bytes - begin)};
}

Result<CryptInfo> parse_crypt_info(std::span<const std::byte> block, std::uint64_t data_length_bytes) {
    ByteReader in(block);
    RL_TRY(block_length, in.u64());
    if (block_length != in.remaining()) {
        return fail(errc::format_error, "crypt-info block length " + std::to_string(block_length) +
                                            " does not match the header (" + std::to_string(in.remaining()) +
                                            " bytes)");
    }
    CryptInfo info;
    RL_TRY(record_count, in.u16());
    for (std::uint16_t i = 0; i < record_count; ++i) {
        RL_TRY(record_length, in.u64());
        if (record_length < 2 || record_length > in.remaining()) {
            return fail(errc::format_error, "crypt-info record " + std::to_string(i) + " has length " +
                                                std::to_string(record_length) + " but " +
                                                std::to_string(in.remaining()) + " bytes remain");
        }
        RL_TRY(record_bytes, in.bytes(record_length));
        ByteReader record(record_bytes);
        RL_TRY(type, record.u16());
        const std::size_t body_bytes = record_length - 2;
        if (type == key_derivation_type) {
            if (info.key_derivation) {
                return fail(errc::format_error, "two key-derivation records");
            }
            RL_TRY(derivation, parse_key_derivation(record));
            info.key_derivation = derivation;
        } else if (type == parallel_cipher_type || type == sequential_cipher_type) {
            if (info.cipher) {
                return fail(errc::format_error, "two cipher records");
            }
            if (type == parallel_cipher_type) {
                RL_TRY(cipher, parse_parallel_cipher(record, body_bytes));
                info.cipher = std::move(cipher);
            } else {
                RL_TRY(cipher, parse_sequential_cipher(record));
                info.cipher = std::move(cipher);
            }
        } else {
            return fail(errc::unsupported, "unknown crypt-info record type " + std::to_string(type));
        }
        if (record.remaining() != 0) {
            return fail(errc::format_error, "crypt-info record of type " + std::to_string(type) + " has " +
                                                std::to_string(record.remaining()) + " unexpected trailing bytes");
        }
    }
    if (info.cipher && data_length_bytes > 0 && info.cipher->macs.size() != 1 &&
        info.cipher->macs.size() != cipher_chunk_count_for(data_length_bytes, info.cipher->chunk_size_bytes)) {
        return fail(errc::format_error, std::to_string(info.cipher->macs.size()) + " MACs for " +
                                            std::to_string(data_length_bytes) + " bytes in chunks of " +
                                            std::to_string(info.cipher->chunk_size_bytes));
    }
    if (info.cipher && data_length_bytes > 0 && info.cipher->macs.empty()) {
        return fail(errc::format_error, "an encrypted tensor with data but no MACs");
    }
    return info;
}

std::vector<std::byte> serialize_crypt_info(const CryptInfo& info) {
    std::vector<std::byte> body;
    std::uint16_t record_count = 0;
    if (info.key_derivation) {
        const auto& kd = *info.key_derivation;
        put_le<std::uint64_t>(body, 2 + key_derivation_body_bytes);
        put_le<std::uint16_t>(body, key_derivation_type);
        put_le<std::uint16_t>(body, kd.method);
        put_le<std::uint64_t>(body, kd.params.opslimit);
        put_le<std::uint64_t>(body, kd.params.memlimit);
        put_le<std::int32_t>(body, kd.algorithm);
        put_le<std::uint16_t>(body, static_cast<std::uint16_t>(kd.params.salt.size()));
        put(body, kd.params.salt.data(), kd.params.salt.size());
        ++record_count;
    }
    if (info.cipher) {
        const auto& cipher = *info.cipher;
        put_le<std::uint64_t>(body, 2 + parallel_cipher_fixed_bytes + 16 * cipher.macs.size());
        put_le<std::uint16_t>(body, parallel_cipher_type);
        put_le<std::uint64_t>(body, cipher.chunk_size_bytes);
        put(body, cipher.initial_nonce.data(), cipher.initial_nonce.size());
        put_le<std::uint64_t>(body, cipher.macs.size());
        for (const auto& mac : cipher.macs) {
            put(body, mac.data(), mac.size());
        }
        ++record_count;
    }
    std::vector<std::byte> out;
    put_le<std::uint64_t>(out, 2 + body.size());
    put_le<std::uint16_t>(out, record_count);
    out.insert(out.end(), body.begin(), body.end());
    return out;
}

} // namespace ringload::tensorizer
