// options/load_rows.cpp: the rows of each load (LoadOptions): placement, device, dtype,
// verification, the ring and its threads, and the key that decrypts the file.
#include "options/option_rows.hpp"

#include "gpu/device_name.hpp"
#include "ringload/dtype.hpp"
#include "ringload/engine/dtype_convert.hpp"

#include <cstdlib>

namespace ringload::options {
namespace {

const Words<Placement> placements{
    {{"auto", Placement::automatic}, {"arena", Placement::arena}, {"mapped", Placement::mapped_file}}};
// true/false are what --prefault took before `auto` (true was `background`).
const Words<Prefault> prefaults{{{"auto", Prefault::automatic},
                                 {"background", Prefault::background},
                                 {"on-touch", Prefault::on_touch},
                                 {"true", Prefault::background},
                                 {"false", Prefault::on_touch}}};

std::uint64_t whole_number(std::string_view text) {
    return std::strtoull(std::string(text).c_str(), nullptr, 10);
}

OptionRow load_row(std::string_view name, OptionKind kind, std::string_view help, std::uint8_t fronts = front_all) {
    OptionRow row{name, kind, {}, help};
    row.per_load = true;
    row.target = OptionTarget::load;
    row.fronts = fronts;
    return row;
}

// A LoadOptions whole-number field.
template <class Number>
FieldAccess load_number(Number LoadOptions::*field) {
    return {
        [field](const LoadSettings& s) { return std::to_string(s.load.*field); },
        [field](LoadSettings& s, std::string_view text) { s.load.*field = static_cast<Number>(whole_number(text)); },
        {}};
}

Result<void> device_check(std::string_view text) {
    if (!gpu::parse_device(text)) {
        return fail(errc::invalid_argument, "cpu, cuda or cuda:N (N a device ordinal)");
    }
    return {};
}

Result<void> dtype_check(std::string_view text) {
    const auto dtype = dtype_from_torch_name(text);
    if (!dtype || !is_convertible_float(*dtype)) {
        return fail(errc::invalid_argument, "float64, float32, float16 or bfloat16");
    }
    return {};
}

void add_device_rows(std::vector<SharedRow>& rows) {
    rows.push_back(
        {load_row("device", OptionKind::text, "where tensors go: cpu, cuda or cuda:N", front_cli | front_python),
         {[](const LoadSettings& s) { return s.load.device; },
          [](LoadSettings& s, std::string_view t) { s.load.device = std::string(t); }, &device_check}});
    rows.push_back(
        {load_row("dtype", OptionKind::text,
                  "floating tensors become float64, float32, float16 or bfloat16 on the way (default: "
                  "as stored)",
                  front_cli | front_python),
         {[](const LoadSettings& s) { return s.load.dtype ? std::string(torch_name(*s.load.dtype)) : std::string(); },
          [](LoadSettings& s, std::string_view t) { s.load.dtype = dtype_from_torch_name(t); }, &dtype_check}});
    OptionRow verify = load_row("verify_hash", OptionKind::flag, "check the stored CRC32 and SHA-256 of every tensor");
    verify.cli_flag = "--verify";
    rows.push_back({verify,
                    {[](const LoadSettings& s) { return flag_text(s.load.verify_hashes); },
                     [](LoadSettings& s, std::string_view t) { s.load.verify_hashes = t == "true"; },
                     {}}});
}

void add_ring_rows(std::vector<SharedRow>& rows) {
    rows.push_back({load_row("threads", OptionKind::integer, "worker threads (0: one per core)"),
                    load_number(&LoadOptions::worker_threads)});
    rows.push_back({load_row("slot_size", OptionKind::bytes,
                             "bytes per ring slot, a multiple of 4096 (0: 4 MiB for files, 8 MiB for http)"),
                    load_number(&LoadOptions::slot_size_bytes)});
    rows.push_back(
        {load_row("ring_bytes", OptionKind::bytes, "bytes of ring slots, i.e. of reads in flight (0: 128 MiB)"),
         {[](const LoadSettings& s) { return std::to_string(s.ring_bytes); },
          [](LoadSettings& s, std::string_view t) { s.ring_bytes = whole_number(t); },
          {}}});
    rows.push_back(
        {load_row("slots", OptionKind::integer, "ring slots, i.e. reads in flight (0: from ring_bytes)", front_cli),
         load_number(&LoadOptions::slot_count)});
    OptionRow prefault = load_row("prefault", OptionKind::choice,
                                  "when destination memory is faulted in: auto (ahead in the background for files, on "
                                  "touch for network sources), background (true) or on-touch (false)",
                                  front_cli);
    prefault.choices = prefaults.choices();
    rows.push_back({prefault, choice_access(
                                  prefaults, [](auto& s) -> auto& { return s.load.prefault; })});
}

// Secrets come only from files (never a command line, where `ps` and shell history see them);
// Python's entry points take tensorizer's encryption= object instead.
void add_key_rows(std::vector<SharedRow>& rows) {
    auto key_row = [](std::string_view name, std::string_view help) {
        OptionRow row{name, OptionKind::text, {}, help};
        row.target = OptionTarget::keys;
        row.fronts = front_cli | front_server;
        return row;
    };
    rows.push_back({key_row("key_file", "encrypted files: a file holding the raw 32-byte key"),
                    {[](const LoadSettings& s) { return s.key_file; },
                     [](LoadSettings& s, std::string_view t) { s.key_file = std::string(t); },
                     {}}});
    rows.push_back({key_row("passphrase_file",
                            "encrypted files: a file holding the passphrase (one trailing newline "
                            "ignored)"),
                    {[](const LoadSettings& s) { return s.passphrase_file; },
                     [](LoadSettings& s, std::string_view t) { s.passphrase_file = std::string(t); },
                     {}}});
}

} // namespace

void add_load_rows(std::vector<SharedRow>& rows) {
    OptionRow placement = load_row("placement", OptionKind::choice,
                                   "CPU loads: auto, arena (the load's memory, through the ring) or mapped (a local "
                                   "safetensors file's own pages, or fail saying why)");
    placement.choices = placements.choices();
    rows.push_back({placement, choice_access(
                                   placements, [](auto& s) -> auto& { return s.load.placement; })});
    add_device_rows(rows);
    add_ring_rows(rows);
    add_key_rows(rows);
}

} // namespace ringload::options
