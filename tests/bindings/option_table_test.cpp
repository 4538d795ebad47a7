// tests/bindings/option_table_test.cpp
//
// The option table (ringload/options.hpp): every setting a user gives by name is a row that
// set_option stores where it belongs (open, load, keys, signature, a server loader's own), each
// value checked against its row in the same words whatever the front end, an unknown name
// refused listing what that front end takes, and finish_settings reading the key files, sizing
// the ring and checking the signature's words together.
#include "ringload/options.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

namespace ringload {
namespace {

namespace fs = std::filesystem;

std::string error_of(const Result<void>& result) {
    return result ? std::string("(no error)") : result.error().detail;
}

TEST(OptionTable, EveryRowIsNamedOnceAndTakenBySomeone) {
    std::set<std::string> names;
    for (const OptionRow& row : option_table()) {
        EXPECT_TRUE(names.insert(std::string(row.name)).second) << row.name;
        EXPECT_NE(row.fronts & front_all, 0) << row.name;
        EXPECT_FALSE(row.help.empty()) << row.name;
    }
    for (const char* name : {"device",
                             "dtype",
                             "verify_hash",
                             "threads",
                             "slot_size",
                             "ring_bytes",
                             "slots",
                             "prefault",
                             "placement",
                             "read_mode",
                             "key_file",
                             "passphrase_file",
                             "cache",
                             "signature",
                             "public_key",
                             "certificate_chain",
                             "trust_root",
                             "identity",
                             "identity_issuer",
                             "model_folder",
                             "ignore_paths",
                             "ignore_git_paths",
                             "read_once",
                             "into_parameters",
                             "save_sharded_state",
                             "uri",
                             "s3_endpoint",
                             "gcs_credentials"}) {
        EXPECT_TRUE(names.count(name)) << name;
    }
    EXPECT_EQ(cli_flag_of(*option_named("verify_hash")), "--verify");
    EXPECT_EQ(cli_flag_of(*option_named("slot_size")), "--slot-size");
}

TEST(OptionTable, DefaultsComeFromTheStructs) {
    EXPECT_EQ(option_named("device")->default_text, "cpu");
    EXPECT_EQ(option_named("threads")->default_text, "0");
    EXPECT_EQ(option_named("prefault")->default_text, "auto");
    EXPECT_EQ(option_named("ignore_git_paths")->default_text, "true");
    EXPECT_EQ(option_named("read_once")->default_text, "true");
    EXPECT_EQ(option_named("connections")->default_text, std::to_string(NetworkOptions{}.connections));
}

TEST(OptionTable, EachRowLandsInItsField) {
    LoadSettings s;
    ASSERT_TRUE(set_option(s, "device", "cuda:1"));
    ASSERT_TRUE(set_option(s, "dtype", "bfloat16"));
    ASSERT_TRUE(set_option(s, "verify_hash", "true"));
    ASSERT_TRUE(set_option(s, "threads", "3"));
    ASSERT_TRUE(set_option(s, "slot_size", "1048576"));
    ASSERT_TRUE(set_option(s, "ring_bytes", "8388608"));
    ASSERT_TRUE(set_option(s, "prefault", "on-touch"));
    ASSERT_TRUE(set_option(s, "placement", "arena"));
    ASSERT_TRUE(set_option(s, "connections", "16"));
    ASSERT_TRUE(set_option(s, "signature", "m.sig"));
    ASSERT_TRUE(set_option(s, "certificate_chain", "a.pem"));
    ASSERT_TRUE(set_option(s, "certificate_chain", "b.pem"));
    ASSERT_TRUE(set_option(s, "ignore_git_paths", "false"));
    ASSERT_TRUE(set_option(s, "read_once", "false"));
    ASSERT_TRUE(set_option(s, "s3_endpoint", "http://127.0.0.1:9000"));
    ASSERT_TRUE(finish_settings(s));
    EXPECT_EQ(s.load.device, "cuda:1");
    EXPECT_EQ(s.load.dtype, DType::bfloat16);
    EXPECT_TRUE(s.load.verify_hashes);
    EXPECT_EQ(s.load.worker_threads, 3U);
    EXPECT_EQ(s.load.slot_size_bytes, 1U << 20U);
    EXPECT_EQ(s.load.slot_count, 8U); // ring_bytes / slot_size
    EXPECT_EQ(s.load.prefault, Prefault::on_touch);
    EXPECT_EQ(s.load.placement, Placement::arena);
    EXPECT_EQ(s.open.network.connections, 16U);
    EXPECT_EQ(s.signature.signature_file, "m.sig");
    EXPECT_EQ(s.signature.certificate_chain_files, (std::vector<std::string>{"a.pem", "b.pem"}));
    EXPECT_FALSE(s.signature.ignore_git_paths);
    EXPECT_EQ(s.signature.threads, 3U); // the hashing threads are the load's
    EXPECT_EQ(s.given.at("read_once"), "false");
    EXPECT_EQ(s.open.network.source_settings.at("s3_endpoint"), "http://127.0.0.1:9000");
}

TEST(OptionTable, TheRingIsSizedInSlotsWithAtLeastOne) {
    EXPECT_EQ(slots_for_ring(128U << 20U, 0), 32U);         // 4 MiB slots by default
    EXPECT_EQ(slots_for_ring(128U << 20U, 8U << 20U), 16U); // the slot size given
    EXPECT_EQ(slots_for_ring(1U << 20U, 0), 1U);            // less than a slot is one slot, not the default
    EXPECT_EQ(slots_for_ring(9U << 20U, 4U << 20U), 2U);    // rounded down
    LoadSettings s;
    ASSERT_TRUE(set_option(s, "ring_bytes", "1048576"));
    ASSERT_TRUE(finish_settings(s));
    EXPECT_EQ(s.load.slot_count, 1U);
}

TEST(OptionTable, AValueOfTheWrongKindIsNamedWithWhatItMustBe) {
    LoadSettings s;
    EXPECT_EQ(error_of(set_option(s, "threads", "many")),
              "option threads must be a whole number (0: the default), not 'many'");
    EXPECT_EQ(error_of(set_option(s, "connections", "0")), "option connections must be a positive integer, not '0'");
    EXPECT_EQ(error_of(set_option(s, "dtype", "int8")),
              "option dtype must be float64, float32, float16 or bfloat16, not 'int8'");
    EXPECT_EQ(error_of(set_option(s, "device", "tpu")),
              "option device must be cpu, cuda or cuda:N (N a device ordinal), not 'tpu'");
    EXPECT_EQ(error_of(set_option(s, "placement", "disk")),
              "option placement must be one of auto, arena, mapped, not 'disk'");
    EXPECT_EQ(error_of(set_option(s, "read_once", "perhaps")), "option read_once must be true or false, not 'perhaps'");
    EXPECT_EQ(s.load.worker_threads, 0U); // nothing stored
}

TEST(OptionTable, AnUnknownNameListsWhatThatFrontEndTakes) {
    LoadSettings s;
    const std::string cli = error_of(set_option(s, "read_once", "true", front_cli));
    EXPECT_EQ(cli.rfind("unknown option 'read_once'; the options are read_mode, ", 0), 0U) << cli;
    EXPECT_NE(cli.find(", prefault, "), std::string::npos);
    EXPECT_EQ(cli.find("read_once"), cli.rfind("read_once")); // named once: as the unknown one
    const std::string server = error_of(set_option(s, "prefault", "auto", front_server));
    EXPECT_EQ(server.rfind("unknown option 'prefault'; the options are ", 0), 0U) << server;
    EXPECT_NE(server.find(", read_once, "), std::string::npos);
    EXPECT_EQ(server.find(", device, "), std::string::npos); // the server picks its own device
    EXPECT_EQ(error_of(set_option(s, "thread", "1")).rfind("unknown option 'thread'; the options are ", 0), 0U);
}

TEST(OptionTable, ByteCountsTakeTheirUnits) {
    LoadSettings s;
    ASSERT_TRUE(set_option(s, "ring_bytes", "64M"));
    EXPECT_EQ(s.ring_bytes, 64U << 20U);
    ASSERT_TRUE(set_option(s, "slot_size", "512K"));
    EXPECT_EQ(s.load.slot_size_bytes, 512U << 10U);
    ASSERT_TRUE(set_option(s, "cache_max_bytes", "2GiB"));
    EXPECT_EQ(option_value(s, "cache_max_bytes"), std::to_string(2ULL << 30U));
    ASSERT_TRUE(set_option(s, "ring_bytes", "4096"));
    EXPECT_EQ(s.ring_bytes, 4096U);
    for (const char* wrong : {"lots", "5X", "12MM", "-1", "M", "99999999999999999999", "20000000000T"}) {
        EXPECT_EQ(error_of(set_option(s, "ring_bytes", wrong)),
                  std::string("option ring_bytes must be a number of bytes, as 4096, 512K, 64M or "
                              "2G (0: the default), not '") +
                      wrong + "'")
            << wrong;
    }
}

TEST(WriteOptionTable, EveryRowIsAWritesAndNamedOnce) {
    std::set<std::string> names;
    for (const OptionRow& row : write_option_table()) {
        EXPECT_TRUE(names.insert(std::string(row.name)).second) << row.name;
        EXPECT_EQ(row.target, OptionTarget::write) << row.name;
        EXPECT_NE(row.fronts & front_cli, 0) << row.name; // `ringload convert` takes every one
        EXPECT_FALSE(row.help.empty()) << row.name;
    }
    EXPECT_EQ(names, (std::set<std::string>{"format", "verify_hash", "memory_budget", "decrypt_key_file",
                                            "decrypt_passphrase_file", "encrypt_key_file", "encrypt_passphrase_file",
                                            "sign_key", "signature"}));
    EXPECT_EQ(cli_flag_of(*write_option_named("format")), "--to");
    EXPECT_EQ(write_option_named("verify_hash")->default_text, "true"); // a load's is false
    EXPECT_EQ(write_option_named("memory_budget")->default_text, std::to_string(ConvertOptions{}.memory_budget_bytes));
}

TEST(WriteOptionTable, EachRowLandsInItsFieldAndTheKeyFilesAreRead) {
    const fs::path folder = fs::path(testing::TempDir()) / "write_option_table_keys";
    fs::create_directories(folder);
    std::ofstream(folder / "key", std::ios::binary) << std::string(32, 'k');
    std::ofstream(folder / "pass", std::ios::binary) << "words\n";
    WriteSettings s;
    ASSERT_TRUE(set_write_option(s, "format", "safetensors"));
    ASSERT_TRUE(set_write_option(s, "verify_hash", "false"));
    ASSERT_TRUE(set_write_option(s, "memory_budget", "256M"));
    ASSERT_TRUE(set_write_option(s, "sign_key", "k.pem"));
    ASSERT_TRUE(set_write_option(s, "signature", "out.sig"));
    ASSERT_TRUE(set_write_option(s, "encrypt_key_file", (folder / "key").string()));
    ASSERT_TRUE(set_write_option(s, "decrypt_passphrase_file", (folder / "pass").string()));
    ASSERT_TRUE(finish_write_settings(s));
    EXPECT_EQ(s.convert.format, "safetensors");
    EXPECT_FALSE(s.convert.verify_hashes);
    EXPECT_EQ(s.convert.memory_budget_bytes, 256U << 20U);
    EXPECT_EQ(s.convert.sign_key_file, "k.pem");
    EXPECT_EQ(s.convert.signature_file, "out.sig");
    ASSERT_TRUE(s.convert.encryption.has_value());
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(s.convert.encryption->key().data()), 32), std::string(32, 'k'));
    EXPECT_TRUE(s.decryption.has_value());

    WriteSettings wrong;
    EXPECT_EQ(error_of(set_write_option(wrong, "format", "tensorflow")),
              "option format must be one of tensorizer, safetensors, torch, not 'tensorflow'");
    EXPECT_EQ(error_of(set_write_option(wrong, "verify", "true"))
                  .rfind("unknown option 'verify'; "
                         "the options are format, verify_hash, ",
                         0),
              0U);
    const std::string python = error_of(set_write_option(wrong, "encrypt_key_file", "k", front_python));
    EXPECT_NE(python.find("unknown option 'encrypt_key_file'; the options are format, verify_hash, memory_budget, "
                          "sign_key, signature"),
              std::string::npos)
        << python; // Python's convert takes EncryptionParams objects instead
    ASSERT_TRUE(set_write_option(wrong, "encrypt_key_file", (folder / "key").string()));
    ASSERT_TRUE(set_write_option(wrong, "encrypt_passphrase_file", (folder / "pass").string()));
    EXPECT_EQ(error_of(finish_write_settings(wrong)), "give encrypt_key_file or encrypt_passphrase_file, not both");
    WriteSettings short_key;
    std::ofstream(folder / "short", std::ios::binary) << std::string(31, 'k');
    ASSERT_TRUE(set_write_option(short_key, "decrypt_key_file", (folder / "short").string()));
    EXPECT_NE(
        error_of(finish_write_settings(short_key)).find("a key file must hold exactly 32 raw bytes, this one holds 31"),
        std::string::npos);
}

TEST(OptionTable, KeyFilesAreReadAndNamedWhenWrong) {
    const fs::path folder = fs::path(testing::TempDir()) / "option_table_keys";
    fs::create_directories(folder);
    std::ofstream(folder / "key", std::ios::binary) << std::string(32, 'k');
    LoadSettings s;
    ASSERT_TRUE(set_option(s, "key_file", (folder / "key").string()));
    ASSERT_TRUE(finish_settings(s));
    EXPECT_TRUE(s.open.decryption.has_value());

    LoadSettings both;
    ASSERT_TRUE(set_option(both, "key_file", (folder / "key").string()));
    ASSERT_TRUE(set_option(both, "passphrase_file", (folder / "key").string()));
    EXPECT_EQ(error_of(finish_settings(both)), "give key_file or passphrase_file, not both");

    LoadSettings missing;
    ASSERT_TRUE(set_option(missing, "key_file", (folder / "absent").string()));
    EXPECT_NE(error_of(finish_settings(missing)).find((folder / "absent").string()), std::string::npos);
}

TEST(OptionTable, TheSignatureWordsAreCheckedTogether) {
    LoadSettings stray;
    ASSERT_TRUE(set_option(stray, "public_key", "pub.pem"));
    EXPECT_NE(error_of(finish_settings(stray)).find("need signature"), std::string::npos);

    LoadSettings two;
    ASSERT_TRUE(set_option(two, "signature", "m.sig"));
    ASSERT_TRUE(set_option(two, "public_key", "pub.pem"));
    ASSERT_TRUE(set_option(two, "certificate_chain", "ca.pem"));
    EXPECT_EQ(error_of(finish_settings(two)), "give one of public_key, certificate_chain or trust_root, not several");

    LoadSettings keyless;
    ASSERT_TRUE(set_option(keyless, "signature", "m.sig"));
    ASSERT_TRUE(set_option(keyless, "identity", "me@example.com"));
    EXPECT_NE(error_of(finish_settings(keyless)).find("give trust_root"), std::string::npos);
    ASSERT_TRUE(set_option(keyless, "trust_root", "trusted_root.json"));
    EXPECT_TRUE(finish_settings(keyless));
}

TEST(OptionTable, TheEngineOnlyOverloadTakesOpenAndLoadRows) {
    OpenOptions open;
    LoadOptions load;
    ASSERT_TRUE(set_option(open, load, "connections", "4"));
    ASSERT_TRUE(set_option(open, load, "placement", "mapped"));
    EXPECT_EQ(open.network.connections, 4U);
    EXPECT_EQ(load.placement, Placement::mapped_file);
    const std::string refused = error_of(set_option(open, load, "signature", "m.sig"));
    EXPECT_EQ(refused.rfind("unknown option 'signature'; the options are ", 0), 0U) << refused;
}

} // namespace
} // namespace ringload
