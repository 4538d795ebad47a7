// formats/model_signing/statement.hpp
//
// The in-toto statement a model signature signs: one subject whose SHA-256 digest is that of
// every resource's digest bytes in the listed order, and a predicate listing each file (or each
// shard "path:start:end") of the model folder with its SHA-256, plus how the folder was hashed
// (files or shards of shard_size bytes, and the paths left out).
//
//     RL_TRY(statement, parse_statement(bundle.payload, "model.sig"));
//     for (const SignedResource& r : statement.resources) { ... r.name, r.digest (32 raw bytes) ... }
//
// Only SHA-256 statements are taken (what model_signing's CLI writes and verifies); blake2b and
// blake3 ones are refused naming the algorithm.
#pragma once

#include "ringload/error.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ringload::model_signing {

inline constexpr std::string_view statement_type = "https://in-toto.io/Statement/v1";
inline constexpr std::string_view signature_predicate_type = "https://model_signing/signature/v1.0";

struct SignedResource {
    std::string name;   // files: "sub/file.bin" ("." for a single-file model); shards: "path:start:end"
    std::string digest; // 32 raw bytes
};

struct SignedStatement {
    bool sharded = false;
    std::uint64_t shard_size = 0; // sharded: bytes per shard
    std::vector<std::string> ignore_paths;
    std::vector<SignedResource> resources;
};

// Checks the statement's type, predicate type, algorithms and subject digest; `name` (the
// signature file) starts every message.
Result<SignedStatement> parse_statement(std::string_view payload, const std::string& name);

// The statement Model Signing writes for `statement` (files mode), its subject named
// `model_name` and its digest computed here.
std::string write_statement(const std::string& model_name, const SignedStatement& statement);

} // namespace ringload::model_signing
