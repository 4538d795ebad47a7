// engine/src/hashes.cpp
#include "ringload/engine/hashes.hpp"

#include <isa-l/crc.h>
#include <openssl/evp.h>

namespace ringload {

void Crc32::update(std::span<const std::byte> bytes) noexcept {
    // crc32_gzip_refl takes and returns the finished (inverted) value, like zlib's crc32().
    crc_ = ::crc32_gzip_refl(crc_, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
}

struct Sha256::State {
    EVP_MD_CTX* context = nullptr;
};

Sha256::Sha256() : state_(std::make_unique<State>()) {
    state_->context = EVP_MD_CTX_new();
    EVP_DigestInit_ex(state_->context, EVP_sha256(), nullptr);
}

Sha256::~Sha256() {
    if (state_) {
        EVP_MD_CTX_free(state_->context);
    }
}

Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&& other) noexcept {
    if (this != &other) {
        if (state_) {
            EVP_MD_CTX_free(state_->context);
        }
        state_ = std::move(other.state_);
    }
    return *this;
}

void Sha256::update(std::span<const std::byte> bytes) noexcept {
    EVP_DigestUpdate(state_->context, bytes.data(), bytes.size());
}

Sha256Digest Sha256::finish() noexcept {
    Sha256Digest digest{};
    unsigned int length = 0;
    EVP_DigestFinal_ex(state_->context, digest.data(), &length);
    return digest;
}

Sha256Digest sha256(std::span<const std::byte> bytes) {
    Sha256 hasher;
    hasher.update(bytes);
    return hasher.finish();
}

std::string to_hex(std::span<const std::uint8_t> bytes) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string text;
    text.reserve(bytes.size() * 2);
    for (std::uint8_t byte : bytes) {
        text += digits[byte >> 4];
        text += digits[byte & 15];
    }
    return text;
}

} // namespace ringload
