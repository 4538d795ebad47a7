// engine/orchestration/model_signature.cpp
//
// verify_model_signature and sign_model (ringload/model_signing.hpp): the signature file's
// bundle and statement (formats/model_signing), the folder's files (model_folder.hpp), and the
// comparison of the two.
#include "ringload/model_signing.hpp"

#include "formats/model_signing/bundle.hpp"
#include "formats/model_signing/dsse.hpp"
#include "formats/model_signing/statement.hpp"
#include "formats/model_signing/trust.hpp"
#include "model_folder.hpp"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace ringload {
namespace {

namespace fs = std::filesystem;
using namespace model_signing;

Result<std::string> read_small_file(const std::string& path, const char* what) {
    std::error_code error;
    const auto size = fs::file_size(path, error);
    if (error) {
        return fail(errc::not_found, path + ": cannot read the " + what + ": " + error.message());
    }
    if (size > bundle_bytes_max) {
        return fail(errc::invalid_argument, path + ": " + std::to_string(size) + " bytes is too large for a " + what);
    }
    std::ifstream file(path, std::ios::binary);
    std::stringstream text;
    text << file.rdbuf();
    return text.str();
}

// What model_signing leaves out: the root's git files, the signature file when it is inside the
// folder, the caller's paths and the statement's.
std::vector<std::string> ignored_paths(const std::string& folder, const std::string& signature_file,
                                       const std::vector<std::string>& extra, bool git) {
    std::vector<std::string> ignored = extra;
    if (git) {
        ignored.insert(ignored.end(), {".git", ".gitattributes", ".github", ".gitignore"});
    }
    std::error_code error;
    const fs::path relative =
        fs::weakly_canonical(signature_file, error).lexically_relative(fs::weakly_canonical(folder, error));
    if (!error && !relative.empty() && *relative.begin() != "..") {
        ignored.push_back(relative.generic_string());
    }
    return ignored;
}

// The key that must have signed: the one given (its hint checked), or the certificate chain's leaf.
Result<EcKey> signer_key(const SignatureBundle& bundle, const SignatureCheck& check, std::string& signer) {
    const std::string& name = check.signature_file;
    if (bundle.signer == SignerKind::keyless) {
        return fail(errc::unsupported, name +
                                           ": a keyless Sigstore signature (Fulcio certificate, Rekor entry); "
                                           "ringload verifies the key and certificate methods only so far");
    }
    if (bundle.signer == SignerKind::public_key) {
        if (check.public_key_file.empty()) {
            return fail(errc::invalid_argument, name + ": signed with a key: give its public key (--public-key)");
        }
        RL_TRY(pem, read_small_file(check.public_key_file, "public key"));
        RL_TRY(key, EcKey::public_from_pem(pem, check.public_key_file));
        if (!bundle.public_key_hint.empty() && bundle.public_key_hint != sha256_hex(key.public_pem())) {
            return fail(errc::signature_invalid, name + ": signed with another key than " + check.public_key_file +
                                                     " (the bundle's key hint differs)");
        }
        signer = "ECDSA " + key.curve() + " key " + check.public_key_file;
        return key;
    }
    if (check.certificate_chain_files.empty()) {
        return fail(errc::invalid_argument,
                    name + ": signed with a certificate: give the certificates to trust (--certificate-chain)");
    }
    std::vector<std::string> trusted;
    for (const std::string& file : check.certificate_chain_files) {
        RL_TRY(pem, read_small_file(file, "certificate chain"));
        trusted.push_back(std::move(pem));
    }
    signer = "a certificate trusted through " + check.certificate_chain_files.front();
    return verify_certificate_chain(bundle.certificates, trusted, name);
}

struct Expected {
    std::vector<ByteRange> ranges;
    std::vector<std::string> names;
};

// The files or shards of the folder, named as the statement names them.
Expected pieces_of(const std::vector<FolderFile>& files, const SignedStatement& statement) {
    Expected expected;
    for (const FolderFile& file : files) {
        if (!statement.sharded) {
            expected.ranges.push_back({&file, 0, file.size_bytes});
            expected.names.push_back(file.name);
            continue;
        }
        for (std::uint64_t begin = 0; begin < file.size_bytes; begin += statement.shard_size) {
            const std::uint64_t end = std::min(file.size_bytes, begin + statement.shard_size);
            expected.ranges.push_back({&file, begin, end});
            expected.names.push_back(file.name + ":" + std::to_string(begin) + ":" + std::to_string(end));
        }
    }
    return expected;
}

Result<std::map<std::string, std::string>> signed_digests(const SignedStatement& statement, const std::string& name) {
    std::map<std::string, std::string> digests;
    for (const SignedResource& resource : statement.resources) {
        if (!digests.emplace(resource.name, resource.digest).second) {
            return fail(errc::signature_invalid, name + ": the statement lists '" + resource.name + "' twice");
        }
    }
    return digests;
}

// Every piece of the folder listed, every listed piece there, every digest equal.
Result<void> compare(const Expected& found, const std::vector<std::string>& digests,
                     std::map<std::string, std::string> listed, const std::string& name, const std::string& folder) {
    for (std::size_t k = 0; k < found.names.size(); ++k) {
        const auto entry = listed.find(found.names[k]);
        if (entry == listed.end()) {
            return fail(errc::signature_invalid, name + ": " + folder + "/" + found.names[k] +
                                                     " is not in the signed statement (an extra file)");
        }
        if (entry->second != digests[k]) {
            return fail(errc::hash_mismatch, name + ": " + folder + "/" + found.names[k] +
                                                 " does not match its signed SHA-256 (the file changed)");
        }
        listed.erase(entry);
    }
    if (!listed.empty()) {
        return fail(errc::signature_invalid,
                    name + ": " + folder + "/" + listed.begin()->first + " is signed but missing" +
                        (listed.size() > 1 ? " (and " + std::to_string(listed.size() - 1) + " more)" : std::string()));
    }
    return {};
}

} // namespace

Result<ModelSignatureSummary> verify_model_signature(const std::string& folder, const SignatureCheck& check) {
    const auto started = std::chrono::steady_clock::now();
    const std::string& name = check.signature_file;
    RL_TRY(text, read_small_file(name, "signature"));
    RL_TRY(bundle, parse_bundle(text, name));
    ModelSignatureSummary summary;
    RL_TRY(key, signer_key(bundle, check, summary.signer));
    RL_TRY_VOID(key.verify(dsse_pae(bundle.payload), bundle.signature, name));
    if (bundle.payload_type != in_toto_payload_type) {
        return fail(errc::signature_invalid, name + ": the envelope's payload is not an in-toto statement");
    }
    RL_TRY(statement, parse_statement(bundle.payload, name));
    std::vector<std::string> ignored = ignored_paths(folder, name, check.ignore_paths, check.ignore_git_paths);
    ignored.insert(ignored.end(), statement.ignore_paths.begin(), statement.ignore_paths.end());
    RL_TRY(files, list_model_files(folder, ignored));
    const Expected found = pieces_of(files, statement);
    RL_TRY(listed, signed_digests(statement, name));
    RL_TRY(digests, hash_ranges(found.ranges, check.threads));
    RL_TRY_VOID(compare(found, digests, std::move(listed), name, folder));
    summary.files = files.size();
    summary.resources = found.ranges.size();
    summary.sharded = statement.sharded;
    for (const FolderFile& file : files) {
        summary.bytes += file.size_bytes;
    }
    summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return summary;
}

Result<ModelSignatureSummary> sign_model(const std::string& folder, const SignatureWrite& write) {
    const auto started = std::chrono::steady_clock::now();
    RL_TRY(pem, read_small_file(write.private_key_file, "private key"));
    RL_TRY(key, EcKey::private_from_pem(pem, write.private_key_file));
    const std::vector<std::string> ignored =
        ignored_paths(folder, write.signature_file, write.ignore_paths, write.ignore_git_paths);
    RL_TRY(files, list_model_files(folder, ignored));
    SignedStatement statement;
    statement.ignore_paths = ignored;
    const Expected found = pieces_of(files, statement);
    RL_TRY(digests, hash_ranges(found.ranges, write.threads));
    for (std::size_t k = 0; k < found.names.size(); ++k) {
        statement.resources.push_back({found.names[k], digests[k]});
    }
    SignatureBundle bundle;
    bundle.payload = write_statement(fs::path(folder).lexically_normal().filename().string(), statement);
    bundle.public_key_hint = sha256_hex(key.public_pem());
    RL_TRY(signature, key.sign(dsse_pae(bundle.payload)));
    bundle.signature = std::move(signature);
    const std::string temporary = write.signature_file + ".ringload-tmp";
    {
        std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
        out << write_key_bundle(bundle);
        if (!out.flush()) {
            std::error_code ignored_error;
            fs::remove(temporary, ignored_error);
            return fail(errc::io_error, write.signature_file + ": cannot write the signature");
        }
    }
    std::error_code error;
    fs::rename(temporary, write.signature_file, error);
    if (error) {
        fs::remove(temporary, error);
        return fail(errc::io_error, write.signature_file + ": cannot write the signature: " + error.message());
    }
    ModelSignatureSummary summary;
    summary.files = files.size();
    summary.resources = found.ranges.size();
    for (const FolderFile& file : files) {
        summary.bytes += file.size_bytes;
    }
    summary.signer = "ECDSA " + key.curve() + " key " + write.private_key_file;
    summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return summary;
}

} // namespace ringload
