// bindings/cpp/src/crypto_params.cpp
#include "ringload/crypto_params.hpp"

#include "secret_material.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ringload {
namespace {

constexpr std::size_t max_secret_file_bytes = 64 << 10;

// A secret holding just a key.
std::shared_ptr<SecretMaterial> holding(SecretKey key) {
    auto secret = std::make_shared<SecretMaterial>();
    secret->key.emplace(std::move(key));
    return secret;
}

std::span<const std::byte> as_bytes(std::string_view text) {
    return {reinterpret_cast<const std::byte*>(text.data()), text.size()};
}

} // namespace

Result<std::string> read_secret_file(const std::string& path, std::string_view what) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return fail(errc::not_found,
                    path + ": cannot open the " + std::string(what) + " file: " + std::strerror(errno));
    }
    std::string content;
    char buffer[4096];
    for (;;) {
        ssize_t got = ::read(fd, buffer, sizeof buffer);
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got < 0) {
            int saved = errno;
            ::close(fd);
            wipe_secret(buffer, sizeof buffer);
            wipe_secret(content.data(), content.size());
            return fail(errc::io_error,
                        path + ": cannot read the " + std::string(what) + " file: " + std::strerror(saved));
        }
        if (got == 0) {
            break;
        }
        content.append(buffer, static_cast<std::size_t>(got));
        if (content.size() > max_secret_file_bytes) {
            ::close(fd);
            wipe_secret(buffer, sizeof buffer);
            wipe_secret(content.data(), content.size());
            return fail(errc::invalid_argument, path + ": the " + std::string(what) + " file is larger than 64 KiB");
        }
    }
    ::close(fd);
    wipe_secret(buffer, sizeof buffer);
    return content;
}

Result<SecretKey> key_from_file(const std::string& path) {
    RL_TRY(content, read_secret_file(path, "key"));
    auto key = SecretKey::from_bytes(as_bytes(content));
    wipe_secret(content.data(), content.size());
    if (!key) {
        return fail(errc::invalid_argument, path + ": a key file must hold exactly 32 raw bytes, this one holds " +
                                                std::to_string(content.size()));
    }
    return key;
}

Result<std::string> passphrase_from_file(const std::string& path) {
    RL_TRY(content, read_secret_file(path, "passphrase"));
    std::size_t length = content.size();
    if (content.ends_with("\r\n")) {
        length -= 2;
    } else if (content.ends_with('\n')) {
        length -= 1;
    }
    if (length == 0) {
        wipe_secret(content.data(), content.size());
        return fail(errc::invalid_argument, path + ": the passphrase file is empty");
    }
    wipe_secret(content.data() + length, content.size() - length);
    content.resize(length);
    return content;
}

Result<std::array<std::byte, 32>> read_key_file(const std::string& path) {
    RL_TRY(key, key_from_file(path));
    std::array<std::byte, 32> bytes{};
    std::memcpy(bytes.data(), key.data(), bytes.size());
    return bytes;
}

Result<std::string> read_passphrase_file(const std::string& path) {
    return passphrase_from_file(path);
}

Result<DecryptionParams> DecryptionParams::from_key(std::span<const std::byte> key) {
    RL_TRY(parsed, SecretKey::from_bytes(key));
    return DecryptionParams(holding(std::move(parsed)));
}

Result<DecryptionParams> DecryptionParams::from_passphrase(std::string_view passphrase) {
    if (passphrase.empty()) {
        return fail(errc::invalid_argument, "the passphrase is empty");
    }
    auto secret = std::make_shared<SecretMaterial>();
    secret->passphrase = std::string(passphrase);
    return DecryptionParams(std::move(secret));
}

Result<DecryptionParams> DecryptionParams::from_key_file(const std::string& path) {
    RL_TRY(key, key_from_file(path));
    return DecryptionParams(holding(std::move(key)));
}

Result<DecryptionParams> DecryptionParams::from_passphrase_file(const std::string& path) {
    RL_TRY(passphrase, passphrase_from_file(path));
    auto params = from_passphrase(passphrase);
    wipe_secret(passphrase.data(), passphrase.size());
    return params;
}

Result<EncryptionParams> EncryptionParams::from_key(std::span<const std::byte> key) {
    RL_TRY(parsed, SecretKey::from_bytes(key));
    return EncryptionParams(holding(std::move(parsed)));
}

EncryptionParams EncryptionParams::random() {
    return EncryptionParams(holding(SecretKey::random()));
}

Result<EncryptionParams> EncryptionParams::from_passphrase(std::string_view passphrase, PassphraseCost cost) {
    const auto salt = random_salt();
    return from_passphrase(passphrase, cost, std::as_bytes(std::span(salt)));
}

Result<EncryptionParams> EncryptionParams::from_passphrase(std::string_view passphrase, PassphraseCost cost,
                                                           std::span<const std::byte> salt) {
    if (passphrase.empty()) {
        return fail(errc::invalid_argument, "the passphrase is empty");
    }
    if (salt.size() != salt_bytes) {
        return fail(errc::invalid_argument,
                    "a salt is " + std::to_string(salt_bytes) + " bytes, not " + std::to_string(salt.size()));
    }
    Argon2idParams params;
    params.opslimit = cost.opslimit;
    params.memlimit = cost.memlimit_bytes;
    std::memcpy(params.salt.data(), salt.data(), salt_bytes);
    RL_TRY(key, derive_key_argon2id(passphrase, params));
    auto secret = holding(std::move(key));
    secret->derivation = params;
    return EncryptionParams(std::move(secret));
}

Result<EncryptionParams> EncryptionParams::from_key_file(const std::string& path) {
    RL_TRY(key, key_from_file(path));
    return EncryptionParams(holding(std::move(key)));
}

Result<EncryptionParams> EncryptionParams::from_passphrase_file(const std::string& path, PassphraseCost cost) {
    RL_TRY(passphrase, passphrase_from_file(path));
    auto params = from_passphrase(passphrase, cost);
    wipe_secret(passphrase.data(), passphrase.size());
    return params;
}

std::span<const std::byte> EncryptionParams::key() const noexcept {
    return {reinterpret_cast<const std::byte*>(secret_->key->data()), SecretKey::size_bytes};
}

} // namespace ringload
