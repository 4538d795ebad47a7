// formats/model_signing/statement.cpp
#include "formats/model_signing/statement.hpp"

#include "formats/model_signing/base64.hpp"
#include "formats/model_signing/trust.hpp"

#include <nlohmann/json.hpp>

#include <charconv>
#include <cmath>

namespace ringload::model_signing {
namespace {

using nlohmann::json;

Error refused(const std::string& name, const std::string& why) {
    return fail(errc::signature_invalid, name + ": the signed statement " + why);
}

// serialization: method, hash_type, shard_size (model_signing writes it as a float: 2048.0).
Result<void> read_serialization(const json& serialization, SignedStatement& statement, const std::string& name) {
    const auto method = serialization.find("method");
    if (method == serialization.end() || !method->is_string() || (*method != "files" && *method != "shards")) {
        return refused(name, "has no serialization method 'files' or 'shards'");
    }
    statement.sharded = *method == "shards";
    const auto hash_type = serialization.find("hash_type");
    if (hash_type != serialization.end() && (!hash_type->is_string() || *hash_type != "sha256")) {
        return fail(errc::unsupported, name + ": the signature hashes with " + hash_type->dump().substr(0, 40) +
                                           "; ringload verifies SHA-256 signatures (model_signing's default)");
    }
    if (statement.sharded) {
        const auto size = serialization.find("shard_size");
        const double value = size != serialization.end() && size->is_number() ? size->get<double>() : 0;
        if (!(value >= 1) || value > 9.0e15 || std::floor(value) != value) {
            return refused(name, "has no whole positive shard_size");
        }
        statement.shard_size = static_cast<std::uint64_t>(value);
    }
    const auto ignored = serialization.find("ignore_paths");
    if (ignored != serialization.end() && ignored->is_array()) {
        for (const json& path : *ignored) {
            if (path.is_string()) {
                statement.ignore_paths.push_back(path.get<std::string>());
            }
        }
    }
    return {};
}

Result<void> read_resources(const json& resources, SignedStatement& statement, const std::string& name) {
    if (!resources.is_array() || resources.size() > 10'000'000) {
        return refused(name, "has no list of resources");
    }
    const std::string algorithm =
        statement.sharded ? "sha256-sharded-" + std::to_string(statement.shard_size) : std::string("sha256");
    for (const json& resource : resources) {
        const auto entry_name = resource.is_object() ? resource.find("name") : resource.end();
        const auto entry_algorithm = resource.is_object() ? resource.find("algorithm") : resource.end();
        const auto entry_digest = resource.is_object() ? resource.find("digest") : resource.end();
        if (entry_name == resource.end() || entry_algorithm == resource.end() || entry_digest == resource.end() ||
            !entry_name->is_string() || !entry_algorithm->is_string() || !entry_digest->is_string()) {
            return refused(name, "has a resource without name, algorithm and digest");
        }
        if (*entry_algorithm != algorithm) {
            return fail(errc::unsupported, name + ": resource '" + entry_name->get<std::string>().substr(0, 200) +
                                               "' is hashed with " + entry_algorithm->dump().substr(0, 60) + ", not " +
                                               algorithm);
        }
        RL_TRY(digest, from_hex(entry_digest->get<std::string>(), name + ": a resource's digest"));
        if (digest.size() != 32) {
            return refused(name, "has a digest that is not 32 bytes");
        }
        statement.resources.push_back({entry_name->get<std::string>(), std::move(digest)});
    }
    return {};
}

// The one subject's sha256 must be that of every resource digest in the listed order.
Result<void> check_subject(const json& document, const SignedStatement& statement, const std::string& name) {
    const auto subjects = document.find("subject");
    if (subjects == document.end() || !subjects->is_array() || subjects->size() != 1 || !(*subjects)[0].is_object()) {
        return refused(name, "does not have exactly one subject");
    }
    const auto digest = (*subjects)[0].find("digest");
    const auto sha256 = digest != (*subjects)[0].end() && digest->is_object() ? digest->find("sha256") : digest;
    if (digest == (*subjects)[0].end() || !digest->is_object() || sha256 == digest->end() || !sha256->is_string()) {
        return refused(name, "has no subject sha256 digest");
    }
    std::string all;
    for (const SignedResource& resource : statement.resources) {
        all += resource.digest;
    }
    if (sha256_hex(all) != sha256->get<std::string>()) {
        return refused(name, "is inconsistent: its subject digest is not that of its resources");
    }
    return {};
}

} // namespace

Result<SignedStatement> parse_statement(std::string_view payload, const std::string& name) {
    const json document = json::parse(payload, nullptr, false);
    if (document.is_discarded() || !document.is_object()) {
        return refused(name, "is not a JSON object");
    }
    const auto type = document.find("_type");
    const auto predicate_type = document.find("predicateType");
    if (type == document.end() || *type != statement_type) {
        return refused(name, "is not an in-toto Statement v1");
    }
    if (predicate_type == document.end() || *predicate_type != signature_predicate_type) {
        return refused(name, "is not a model signature (predicateType " + std::string(signature_predicate_type) + ")");
    }
    const auto predicate = document.find("predicate");
    if (predicate == document.end() || !predicate->is_object() || !predicate->contains("serialization") ||
        !predicate->contains("resources")) {
        return refused(name, "has no predicate with serialization and resources");
    }
    SignedStatement statement;
    RL_TRY_VOID(read_serialization(predicate->at("serialization"), statement, name));
    RL_TRY_VOID(read_resources(predicate->at("resources"), statement, name));
    RL_TRY_VOID(check_subject(document, statement, name));
    return statement;
}

std::string write_statement(const std::string& model_name, const SignedStatement& statement) {
    json resources = json::array();
    std::string all;
    for (const SignedResource& resource : statement.resources) {
        resources.push_back({{"name", resource.name}, {"algorithm", "sha256"}, {"digest", to_hex(resource.digest)}});
        all += resource.digest;
    }
    json serialization = {{"method", "files"}, {"hash_type", "sha256"}, {"allow_symlinks", false}};
    if (!statement.ignore_paths.empty()) {
        serialization["ignore_paths"] = statement.ignore_paths;
    }
    const json document = {
        {"_type", statement_type},
        {"subject", json::array({{{"name", model_name}, {"digest", {{"sha256", sha256_hex(all)}}}}})},
        {"predicateType", signature_predicate_type},
        {"predicate", {{"resources", resources}, {"serialization", serialization}}}};
    return document.dump(2);
}

} // namespace ringload::model_signing
