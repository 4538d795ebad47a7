// bindings/cli/bench_load.cpp
//
// `ringload bench load MODEL [--device cpu|cuda[:N]] [--work-dir D] [--json F] [--png F]`:
// loads the same model with ringload and with every peer, each in a process of its own, cold
// (the file evicted from the page cache before each run, RAM warmed the same way for each),
// and compares them with the binding limit: the disk's O_DIRECT rate on the same files (the
// best of samples taken just before each system), and on a GPU the lower of that and the
// pinned host-to-device rate.
//
//   system                format       run as
//   ringload              each format  `ringload load FILE --json` (this executable)
//   tensorizer            tensorizer   bench/peers/tensorizer_peer.py
//   safetensors           safetensors  bench/peers/safetensors_peer.py
//   runai-model-streamer  safetensors  bench/peers/runai_streamer_peer.py
//   fastsafetensors       safetensors  bench/peers/fastsafetensors_peer.py
//   torch.load            torch        bench/peers/torch_peer.py
//
// MODEL is converted to the other two formats first (`ringload convert`, into --work-dir; kept
// for the next run). A peer that cannot run here (not installed, no GPU) is listed with why.
#include "bench_child.hpp"
#include "bench_command.hpp"
#include "bench_disk.hpp"
#include "bench_gpu.hpp"
#include "bench_report.hpp"
#include "warm_memory.hpp"

#include "ringload/formats.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

namespace ringload::cli {
namespace {

struct LoadBenchArgs {
    std::string model;
    std::string device = "cpu";
    std::string work_dir;
    std::string json_path;
    std::string png_path;
};

struct System {
    const char* name;
    const char* format;
    const char* script; // empty: ringload itself
};

constexpr std::array systems{
    System{"ringload", "tensorizer", ""},
    System{"tensorizer", "tensorizer", "tensorizer_peer.py"},
    System{"ringload", "safetensors", ""},
    System{"safetensors", "safetensors", "safetensors_peer.py"},
    System{"runai-model-streamer", "safetensors", "runai_streamer_peer.py"},
    System{"fastsafetensors", "safetensors", "fastsafetensors_peer.py"},
    System{"ringload", "torch", ""},
    System{"torch.load", "torch", "torch_peer.py"},
};

constexpr int unavailable_status = 77; // bench/peers/peer_run.py

// What a converted copy's name ends with: the format's first extension (".tensors").
std::string extension(std::string_view format) {
    const Format* described = format_named(format);
    return described != nullptr ? std::string(described->extensions.front()) : std::string();
}

bool newer_or_same(const std::string& path, const std::string& than) {
    struct stat a {};
    struct stat b {};
    return ::stat(path.c_str(), &a) == 0 && ::stat(than.c_str(), &b) == 0 && a.st_mtime >= b.st_mtime;
}

// MODEL in `format`: MODEL itself, or a copy converted by a child `ringload convert`.
Result<std::string> model_in(const LoadBenchArgs& args, const std::string& model_format, std::string_view format) {
    if (format == model_format) {
        return args.model;
    }
    const std::filesystem::path model(args.model);
    const std::filesystem::path dir =
        args.work_dir.empty() ? model.parent_path() : std::filesystem::path(args.work_dir);
    const std::string copy = (dir / model.stem()).string() + extension(format);
    if (newer_or_same(copy, args.model)) {
        return copy;
    }
    bench_progress("converting to " + std::string(format) + ": " + copy);
    auto run = run_child({self_executable(), "convert", args.model, copy, "--to", std::string(format)});
    if (!run) {
        return run.error();
    }
    if (run->exit_status != 0) {
        std::string said = run->err;
        while (!said.empty() && std::isspace(static_cast<unsigned char>(said.back())) != 0) {
            said.pop_back(); // its last newline would be printed as \u{a}
        }
        return fail(errc::io_error, "ringload convert: " + said);
    }
    return copy;
}

// On VMs that back guest RAM lazily, the first touch of a page costs a trip to the host: every
// system finds RAM in the same state if the harness touches (and frees) enough of it first:
// the model and what a Python process with torch holds beside it (bench/warm_ram.cpp does the
// same for the shell benchmarks).
void warm_ram(const std::string& file) {
    struct stat st {};
    if (::stat(file.c_str(), &st) != 0) {
        return;
    }
    // Up to 2 GiB more for the interpreter and torch; a small model needs no more than twice its size.
    const auto size = static_cast<std::size_t>(st.st_size);
    const std::size_t bytes = size + std::min(size, std::size_t{2} << 30);
    (void)bench::warm_fresh_memory(bytes); // false: a colder start for the system, not a failure
}

// "cold", or why not: a file whose pages stay cached is measured warm, and the row says so.
std::string make_cold(const std::string& path) {
    if (auto evicted = evict_from_page_cache(path); !evicted) {
        return "warm (" + evicted.error().message() + ")";
    }
    auto cached = cached_fraction(path);
    if (cached && *cached > 0.01) {
        return "warm (" + std::to_string(static_cast<int>(*cached * 100)) + "% still cached)";
    }
    return "cold";
}

std::vector<std::string> command_for(const System& system, const std::string& file, const std::string& device) {
    if (*system.script == '\0') {
        return {self_executable(), "load", file, "--json", "--device", device};
    }
    return {bench_python(), bench_scripts_dir() + "/peers/" + system.script, file, "--device", device};
}

// The last non-empty line of a child's stderr (its one-line error).
std::string last_line_of(std::string text) {
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
        text.pop_back();
    }
    const auto newline = text.rfind('\n');
    return newline == std::string::npos ? text : text.substr(newline + 1);
}

nlohmann::json run_system(const System& system, const std::string& file, const std::string& device) {
    nlohmann::json row;
    row["system"] = system.name;
    row["format"] = system.format;
    row["cache"] = make_cold(file);
    auto run = run_child(command_for(system, file, device));
    if (!run) {
        row["unavailable"] = run.error().message();
        return row;
    }
    nlohmann::json out = nlohmann::json::parse(run->out, nullptr, false);
    if (run->exit_status == unavailable_status && out.is_object() && out.contains("unavailable")) {
        row["unavailable"] = out["unavailable"];
        return row;
    }
    if (run->exit_status != 0 || !out.is_object()) {
        const std::string line = last_line_of(run->err);
        // `ringload load` says "unsupported" where the machine cannot do what was asked (no
        // GPU, a build without CUDA): a reason, as the peers give one, not a failure.
        constexpr std::string_view unsupported = "ringload: unsupported: ";
        row["unavailable"] = line.starts_with(unsupported)
                                 ? line.substr(unsupported.size())
                                 : "failed (exit " + std::to_string(run->exit_status) + "): " + line;
        return row;
    }
    double seconds = out["seconds"].get<double>();
    double first_tensor_seconds = out["first_tensor_seconds"].get<double>();
    if (*system.script == '\0') {
        // `ringload load` times opening (index, ring) apart from loading; peers time both.
        seconds += out["open_seconds"].get<double>();
        first_tensor_seconds += out["open_seconds"].get<double>();
    }
    const double gb_per_s = out["bytes"].get<double>() / seconds / 1e9;
    row["bytes"] = out["bytes"];
    row["seconds"] = seconds;
    row["gb_per_s"] = gb_per_s;
    row["first_tensor_seconds"] = first_tensor_seconds;
    row["peak_rss_bytes"] = run->peak_rss_bytes; // wait4: the whole process, interpreter included
    if (out.contains("device_peak_bytes") && !out["device_peak_bytes"].is_null()) {
        row["device_peak_bytes"] = out["device_peak_bytes"];
    }
    return row;
}

// The disk's O_DIRECT rate on `file` (queue depth 32, 4 MiB reads), measured in a child that
// first warms RAM for the system about to run: on this kind of VM the disk's rate swings from
// one minute to the next, so a sample is taken before each system and the limit is the best.
Result<double> prepare_and_sample_disk(const std::string& file) {
    return measure_in_child([&]() -> Result<double> {
        warm_ram(file);
        return read_direct_gb_per_s(file, 32);
    });
}

// The bound of this load: the disk read with O_DIRECT, and on a GPU the pinned copy too.
nlohmann::json binding_limit(const std::vector<double>& disk_samples, const std::string& device) {
    if (disk_samples.empty()) {
        return figure("disk O_DIRECT", fail(errc::unsupported, "no sample of the disk's rate"));
    }
    const double best = *std::max_element(disk_samples.begin(), disk_samples.end());
    nlohmann::json limit = figure("disk O_DIRECT qd32 (best of " + std::to_string(disk_samples.size()) + ")", best);
    if (device.starts_with("cuda")) {
        auto rates = measure_gpu_copy_rates();
        if (rates && rates->host_to_device_gb_per_s < best) {
            limit = figure("pinned host-to-device", rates->host_to_device_gb_per_s);
        }
    }
    return limit;
}

std::string mib(const nlohmann::json& row, const char* key) {
    if (!row.contains(key)) {
        return "-";
    }
    return std::to_string(row[key].get<std::uint64_t>() >> 20);
}

void print_table(const nlohmann::json& result) {
    const auto& limit = result["limit"];
    std::printf("%s, %s, on %s; limit: %s %s GB/s\n", result["model"].get<std::string>().c_str(),
                result["device"].get<std::string>().c_str(), result["machine"]["cpu"].get<std::string>().c_str(),
                limit["name"].get<std::string>().c_str(), format_gb_per_s(limit).c_str());
    std::printf("%-21s %-12s %7s %8s %10s %9s %10s  %s\n", "system", "format", "GB/s", "x limit", "first (s)",
                "RSS MiB", "device MiB", "cache");
    for (const auto& row : result["systems"]) {
        const auto name = row["system"].get<std::string>();
        const auto format = row["format"].get<std::string>();
        if (row.contains("unavailable")) {
            std::printf("%-21s %-12s %s\n", name.c_str(), format.c_str(),
                        row["unavailable"].get<std::string>().c_str());
            continue;
        }
        std::printf("%-21s %-12s %7.2f %8.2f %10.4f %9s %10s  %s\n", name.c_str(), format.c_str(),
                    row["gb_per_s"].get<double>(), row["ratio_to_limit"].get<double>(),
                    row["first_tensor_seconds"].get<double>(), mib(row, "peak_rss_bytes").c_str(),
                    mib(row, "device_peak_bytes").c_str(), row["cache"].get<std::string>().c_str());
    }
}

// The model's format, from a child `ringload info`: this process stays small (see run_load_bench).
Result<std::string> format_of(const std::string& model) {
    auto run = run_child({self_executable(), "info", model, "--json"});
    if (!run) {
        return run.error();
    }
    if (run->exit_status != 0) {
        return fail(errc::invalid_argument, run->err);
    }
    return nlohmann::json::parse(run->out)["format"].get<std::string>();
}

int run_load_bench(const LoadBenchArgs& args) {
    // A child's peak RSS (wait4) starts from this process's own peak: exec records the old
    // memory's high-water mark as the child's. So nothing large is allocated here until every
    // system has run: the format comes from a child, and RAM warming and the disk samples
    // (128 MiB of read buffers) run in forked children.
    auto model_format = format_of(args.model);
    if (!model_format) {
        return report_error(model_format.error().message());
    }
    if (!args.work_dir.empty()) { // made here, once, rather than failing every converted row
        std::error_code error;
        std::filesystem::create_directories(args.work_dir, error);
        if (error) {
            return report_error("bench load: --work-dir " + args.work_dir + ": " + error.message());
        }
    }
    nlohmann::json result;
    result["kind"] = "load";
    result["machine"] = machine_json();
    result["model"] = args.model;
    result["device"] = args.device;
    result["systems"] = nlohmann::json::array();
    std::size_t step = 0;
    std::vector<double> disk_samples;
    for (const System& system : systems) {
        bench_progress("[" + std::to_string(++step) + "/" + std::to_string(systems.size()) + "] " + system.name + " (" +
                       system.format + ")");
        auto file = model_in(args, *model_format, system.format);
        if (!file) {
            result["systems"].push_back(
                {{"system", system.name},
                 {"format", system.format},
                 {"unavailable", "no " + std::string(system.format) + " copy: " + file.error().message()}});
            continue;
        }
        auto sample = prepare_and_sample_disk(*file);
        if (!sample) {
            return report_error("bench load: the disk limit: " + sample.error().message());
        }
        disk_samples.push_back(*sample);
        result["systems"].push_back(run_system(system, *file, args.device));
    }
    result["limit"] = binding_limit(disk_samples, args.device);
    if (result["limit"].contains("unavailable")) {
        return report_error("bench load: the disk limit: " + result["limit"]["unavailable"].get<std::string>());
    }
    for (auto& row : result["systems"]) {
        if (row.contains("gb_per_s")) {
            row["ratio_to_limit"] = row["gb_per_s"].get<double>() / result["limit"]["gb_per_s"].get<double>();
        }
    }
    print_table(result);
    if (auto written = write_outputs(result, args.json_path, args.png_path); !written) {
        return report_error(written.error().message());
    }
    return 0;
}

} // namespace

Run add_bench_load_command(CLI::App& bench) {
    auto args = std::make_shared<LoadBenchArgs>();
    auto* command = bench.add_subcommand("load", "Load a model with ringload and each installed peer, cold");
    command->add_option("model", args->model, "A tensorizer, safetensors or torch file")->required();
    command->add_option("--device", args->device, "cpu (default), cuda or cuda:N");
    command->add_option("--work-dir", args->work_dir, "Where the converted copies go (default: beside MODEL)");
    command->add_option("--json", args->json_path, "Write the results to this JSON file");
    command->add_option("--png", args->png_path, "Draw the results into this PNG file");
    return [args] { return run_load_bench(*args); };
}

} // namespace ringload::cli
