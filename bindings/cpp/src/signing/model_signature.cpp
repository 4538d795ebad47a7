// bindings/cpp/src/signing/model_signature.cpp
//
// verify_model_signature and sign_model (ringload/model_signing.hpp): the signature file's
// bundle and statement (formats/model_signing), the folder's files (model_folder.hpp), and the
// comparison of the two.
#include "ringload/model_signing.hpp"

#include "formats/model_signing/bundle.hpp"
#include "formats/model_signing/dsse.hpp"
#include "formats/model_signing/keyless.hpp"
#include "formats/model_signing/statement.hpp"
#include "formats/model_signing/trust.hpp"
#include "ringload/io/file_sink.hpp"
#include "run_on_loop.hpp"
#include "signing/model_folder.hpp"
#include "signing/piece_digests.hpp"

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
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
        if (check.trust_root_file.empty()) {
            return fail(errc::invalid_argument, name +
                                                    ": a keyless Sigstore signature: give the trusted root to check it "
                                                    "against offline (--trust-root trusted_root.json)");
        }
        RL_TRY(text, read_small_file(check.trust_root_file, "trusted root"));
        RL_TRY(root, parse_trusted_root(text, check.trust_root_file));
        return verify_keyless(bundle, root, {check.identity, check.identity_issuer}, name, signer);
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

std::string shard_name(const std::string& file, std::uint64_t begin, std::uint64_t end) {
    return file + ":" + std::to_string(begin) + ":" + std::to_string(end);
}

// One file's pieces, named as the statement names them: the whole file (shard_bytes 0, an
// empty file too), or its shards (an empty file has none).
void add_pieces(Expected& expected, const FolderFile& file, std::uint64_t shard_bytes) {
    if (shard_bytes == 0) {
        expected.ranges.push_back({&file, 0, file.size_bytes});
        expected.names.push_back(file.name);
        return;
    }
    std::uint64_t begin = 0;
    for (const std::uint64_t end : piece_ends(file.size_bytes, shard_bytes)) {
        expected.ranges.push_back({&file, begin, end});
        expected.names.push_back(shard_name(file.name, begin, end));
        begin = end;
    }
}

std::uint64_t shard_bytes_of(const SignedStatement& statement) {
    return statement.sharded ? statement.shard_size : 0;
}

// The files or shards of the folder, named as the statement names them.
Expected pieces_of(const std::vector<FolderFile>& files, const SignedStatement& statement) {
    Expected expected;
    for (const FolderFile& file : files) {
        add_pieces(expected, file, shard_bytes_of(statement));
    }
    return expected;
}

// The first piece whose SHA-256 is not its expected one, failing with `who` (the file or the
// model folder) and the piece's name; nothing when all match.
Result<void> compare_digests(const Expected& found, const std::vector<std::string>& digests,
                             const std::function<const std::string&(std::size_t)>& expected, const std::string& name,
                             const std::string& who) {
    for (std::size_t k = 0; k < digests.size(); ++k) {
        if (digests[k] != expected(k)) {
            return fail(errc::hash_mismatch,
                        name + ": " + who + found.names[k] + " does not match its signed SHA-256 (the file changed)");
        }
    }
    return {};
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

// Every piece of the folder listed, every listed piece there: names only, before any byte is read.
Result<void> compare_names(const Expected& found, std::map<std::string, std::string> listed, const std::string& name,
                           const std::string& folder) {
    for (const std::string& piece : found.names) {
        if (listed.erase(piece) == 0) {
            return fail(errc::signature_invalid,
                        name + ": " + folder + "/" + piece + " is not in the signed statement (an extra file)");
        }
    }
    if (!listed.empty()) {
        return fail(errc::signature_invalid,
                    name + ": " + folder + "/" + listed.begin()->first + " is signed but missing" +
                        (listed.size() > 1 ? " (and " + std::to_string(listed.size() - 1) + " more)" : std::string()));
    }
    return {};
}

struct VerifiedStatement {
    SignedStatement statement;
    std::map<std::string, std::string> listed; // name: raw SHA-256
    std::string signer;
};

// The bundle's signature over its statement, by the signer the check trusts.
Result<VerifiedStatement> verify_statement(const SignatureCheck& check) {
    const std::string& name = check.signature_file;
    RL_TRY(text, read_small_file(name, "signature"));
    RL_TRY(bundle, parse_bundle(text, name));
    VerifiedStatement verified;
    RL_TRY(key, signer_key(bundle, check, verified.signer));
    RL_TRY_VOID(key.verify(dsse_pae(bundle.payload), bundle.signature, name));
    if (bundle.payload_type != in_toto_payload_type) {
        return fail(errc::signature_invalid, name + ": the envelope's payload is not an in-toto statement");
    }
    RL_TRY(statement, parse_statement(bundle.payload, name));
    RL_TRY(listed, signed_digests(statement, name));
    verified.statement = std::move(statement);
    verified.listed = std::move(listed);
    return verified;
}

// A statement of one file's model names it ".".
bool signs_one_file(const SignedStatement& statement) {
    return std::all_of(statement.resources.begin(), statement.resources.end(), [](const SignedResource& resource) {
        return resource.name == "." || resource.name.starts_with(".:");
    });
}

} // namespace

struct SignedModel::State {
    std::string model; // the folder, or the one file
    bool one_file = false;
    SignatureCheck check;
    VerifiedStatement verified;
    std::vector<FolderFile> files; // the folder's, when opened whole

    // The model of a verified statement; its files listed and compared by name when whole.
    static Result<std::shared_ptr<const SignedModel>> open(std::unique_ptr<State> state, bool whole_folder);

    // The statement's name of `path`, a file of the model.
    Result<std::string> name_of(const std::string& path) const {
        if (one_file) {
            return std::string(".");
        }
        std::error_code error;
        const fs::path relative =
            fs::weakly_canonical(path, error).lexically_relative(fs::weakly_canonical(model, error));
        if (error || relative.empty() || *relative.begin() == ".." || relative == ".") {
            return fail(errc::signature_invalid,
                        check.signature_file + ": " + path + " is not a file of the model " + model + " it signs");
        }
        return relative.generic_string();
    }
};

SignedModel::SignedModel(std::unique_ptr<State> state) : state_(std::move(state)) {}
SignedModel::~SignedModel() = default;

Result<std::shared_ptr<const SignedModel>> SignedModel::State::open(std::unique_ptr<State> state, bool whole_folder) {
    const SignatureCheck& check = state->check;
    std::error_code error;
    state->one_file = fs::is_regular_file(state->model, error);
    if (whole_folder || state->one_file) {
        std::vector<std::string> ignored =
            ignored_paths(state->model, check.signature_file, check.ignore_paths, check.ignore_git_paths);
        const SignedStatement& statement = state->verified.statement;
        ignored.insert(ignored.end(), statement.ignore_paths.begin(), statement.ignore_paths.end());
        RL_TRY(files, list_model_files(state->model, ignored));
        state->files = std::move(files);
        RL_TRY_VOID(compare_names(pieces_of(state->files, statement), state->verified.listed, check.signature_file,
                                  state->model));
    }
    return std::shared_ptr<const SignedModel>(new SignedModel(std::move(state)));
}

Result<std::shared_ptr<const SignedModel>> SignedModel::open(const std::string& model, const SignatureCheck& check,
                                                             bool whole_folder) {
    auto state = std::make_unique<State>();
    state->model = model;
    state->check = check;
    RL_TRY(verified, verify_statement(check));
    state->verified = std::move(verified);
    return State::open(std::move(state), whole_folder);
}

Result<std::shared_ptr<const SignedModel>> SignedModel::open_for_file(const std::string& file,
                                                                      const std::string& folder,
                                                                      const SignatureCheck& check) {
    auto state = std::make_unique<State>();
    state->check = check;
    RL_TRY(verified, verify_statement(check));
    state->verified = std::move(verified);
    if (signs_one_file(state->verified.statement)) {
        state->model = file;
    } else {
        state->model = folder.empty() ? fs::path(file).parent_path().string() : folder;
        if (state->model.empty()) {
            state->model = ".";
        }
    }
    return State::open(std::move(state), false);
}

Result<std::shared_ptr<const SignedFile>> SignedModel::file(const std::string& path) const {
    const State& state = *state_;
    const std::string& signature = state.check.signature_file;
    RL_TRY(name, state.name_of(path));
    std::error_code error;
    auto signed_file = std::make_shared<SignedFile>();
    signed_file->path = path;
    signed_file->signature_file = signature;
    signed_file->size_bytes = fs::file_size(path, error);
    if (error) {
        return fail(errc::not_found, path + ": " + error.message());
    }
    const SignedStatement& statement = state.verified.statement;
    const auto& listed = state.verified.listed;
    signed_file->shard_bytes = shard_bytes_of(statement);
    Expected pieces;
    const FolderFile as_named{name, path, signed_file->size_bytes};
    add_pieces(pieces, as_named, signed_file->shard_bytes);
    for (const std::string& piece : pieces.names) {
        const auto entry = listed.find(piece);
        if (entry == listed.end()) {
            return fail(errc::signature_invalid,
                        signature + ": " + path + " is not in the signed statement" +
                            (statement.sharded ? " (or its size changed: no shard " + piece + ")" : std::string()));
        }
        signed_file->digests.push_back(entry->second);
    }
    return std::shared_ptr<const SignedFile>(std::move(signed_file));
}

Result<void> verify_signed_file(const SignedFile& file, std::size_t threads) {
    std::error_code error;
    if (fs::file_size(file.path, error) != file.size_bytes || error) {
        return fail(errc::hash_mismatch,
                    file.signature_file + ": " + file.path + " changed size since it was checked (the file changed)");
    }
    const FolderFile whole{"", file.path, file.size_bytes};
    Expected pieces;
    add_pieces(pieces, whole, file.shard_bytes);
    pieces.names.assign(pieces.names.size(), ""); // the message names the file (`who`) alone
    RL_TRY(digests, hash_ranges(pieces.ranges, threads));
    return compare_digests(
        pieces, digests, [&](std::size_t k) -> const std::string& { return file.digests.at(k); }, file.signature_file,
        file.path);
}

Error failure_of_signed_file(const SignedFile& file, Error failure, std::size_t threads) {
    if (failure.code == errc::hash_mismatch || failure.code == errc::cancelled) {
        return failure;
    }
    if (auto changed = verify_signed_file(file, threads); !changed) {
        return changed.error();
    }
    return failure;
}

Result<void> SignedModel::verify_file(const std::string& path) const {
    RL_TRY(expected, file(path));
    return verify_signed_file(*expected, state_->check.threads);
}

Result<ModelSignatureSummary> SignedModel::verify_files(const std::vector<std::string>& except_paths,
                                                        std::size_t threads) const {
    const auto started = std::chrono::steady_clock::now();
    const State& state = *state_;
    std::vector<std::string> except_names;
    for (const std::string& path : except_paths) {
        RL_TRY(name, state.name_of(path));
        except_names.push_back(std::move(name));
    }
    std::vector<FolderFile> files;
    for (const FolderFile& file : state.files) {
        if (std::find(except_names.begin(), except_names.end(), file.name) == except_names.end()) {
            files.push_back(file);
        }
    }
    const Expected found = pieces_of(files, state.verified.statement);
    RL_TRY(digests, hash_ranges(found.ranges, threads));
    RL_TRY_VOID(compare_digests(
        found, digests, [&](std::size_t k) -> const std::string& { return state.verified.listed.at(found.names[k]); },
        state.check.signature_file, state.model + "/"));
    ModelSignatureSummary summary;
    summary.files = files.size();
    summary.resources = found.ranges.size();
    summary.sharded = state.verified.statement.sharded;
    summary.signer = state.verified.signer;
    for (const FolderFile& file : files) {
        summary.bytes += file.size_bytes;
    }
    summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return summary;
}

std::vector<std::string> SignedModel::paths() const {
    std::vector<std::string> paths;
    for (const FolderFile& file : state_->files) {
        paths.push_back(file.path);
    }
    return paths;
}

const std::string& SignedModel::signer() const noexcept {
    return state_->verified.signer;
}

bool SignedModel::sharded() const noexcept {
    return state_->verified.statement.sharded;
}

Result<ModelSignatureSummary> verify_model_signature(const std::string& folder, const SignatureCheck& check) {
    const auto started = std::chrono::steady_clock::now();
    RL_TRY(model, SignedModel::open(folder, check, true));
    RL_TRY(summary, model->verify_files({}, check.threads));
    summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return summary;
}

namespace {

Result<EcKey> signing_key(const std::string& private_key_file) {
    RL_TRY(pem, read_small_file(private_key_file, "private key"));
    return EcKey::private_from_pem(pem, private_key_file);
}

// `text` at `path`, whole or not at all, through the writers' own FileSink (an unnamed
// temporary file, made durable, then put in place; nothing left behind after kill -9).
Result<void> write_durably(const std::string& path, const std::string& text) {
    asio::io_context loop{1};
    RL_TRY(sink, create_file_sink(loop, path));
    const PageWrite whole{0, std::as_bytes(std::span(text.data(), text.size()))};
    RL_TRY_VOID(run_on_loop(loop, sink->write_pages({&whole, 1})));
    return sink->commit(text.size());
}

// The key method's bundle of `statement`, its subject named `model_name`, at write.signature_file.
Result<void> write_signature(const std::string& model_name, const SignedStatement& statement, const EcKey& key,
                             const SignatureWrite& write) {
    SignatureBundle bundle;
    bundle.payload = write_statement(model_name, statement);
    bundle.public_key_hint = sha256_hex(key.public_pem());
    RL_TRY(signature, key.sign(dsse_pae(bundle.payload)));
    bundle.signature = std::move(signature);
    return write_durably(write.signature_file, write_key_bundle(bundle));
}

} // namespace

Result<void> check_signing_key(const std::string& private_key_file) {
    RL_TRY(key, signing_key(private_key_file));
    (void)key;
    return {};
}

Result<ModelSignatureSummary> sign_model(const std::string& folder, const SignatureWrite& write) {
    const auto started = std::chrono::steady_clock::now();
    RL_TRY(key, signing_key(write.private_key_file));
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
    RL_TRY_VOID(write_signature(fs::path(folder).lexically_normal().filename().string(), statement, key, write));
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

Result<ModelSignatureSummary> sign_file_digest(const std::string& file, std::string_view sha256,
                                               std::uint64_t size_bytes, const SignatureWrite& write) {
    const auto started = std::chrono::steady_clock::now();
    RL_TRY(key, signing_key(write.private_key_file));
    SignedStatement statement;
    statement.resources.push_back({".", std::string(sha256)});
    RL_TRY_VOID(write_signature(fs::path(file).lexically_normal().filename().string(), statement, key, write));
    ModelSignatureSummary summary;
    summary.files = 1;
    summary.resources = 1;
    summary.bytes = size_bytes;
    summary.signer = "ECDSA " + key.curve() + " key " + write.private_key_file;
    summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return summary;
}

} // namespace ringload
