// bindings/cli/bench_limits.cpp
//
// `ringload bench limits [--dir D | --file F] [--size BYTES] [--url U] [--only GROUP ...]
//                        [--json F] [--png F]`:
// measures what bounds a load on this machine, each figure in GB/s:
//   disk      O_DIRECT io_uring sequential reads of 4 MiB at queue depths 1, 4, 16 and 32; a
//             buffered read from a cold cache (the file evicted with fadvise, checked with
//             mincore) and again from the page cache (hot),
//   cpu       memcpy, CRC32, SHA-256, XSalsa20-Poly1305 on one core and on all cores,
//   cpu-io    the same on all cores while the disk reads (O_DIRECT, queue depth 16): what the
//             cores can do for a load while its reads run,
//   gpu       pinned host-to-device and device-to-host copies (GPU 0),
//   network   `ringload load URL` over HTTP/1.1 and over HTTP/2, when a server is given.
// A figure that cannot be measured here carries the reason instead of a number.
#include "bench_child.hpp"
#include "bench_command.hpp"
#include "bench_compute.hpp"
#include "bench_disk.hpp"
#include "bench_gpu.hpp"
#include "bench_report.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <stop_token>
#include <thread>

namespace ringload::cli {
namespace {

struct LimitsArgs {
    std::string dir = ".";
    std::string file;
    std::uint64_t size_bytes = 1ULL << 30;
    std::string url;
    std::string json_path;
    std::string png_path;
    std::vector<std::string> only; // empty: every group
};

bool wanted(const LimitsArgs& args, std::string_view group) {
    return args.only.empty() || std::find(args.only.begin(), args.only.end(), group) != args.only.end();
}

void add_disk_figures(const std::string& path, nlohmann::json& figures) {
    for (std::uint32_t depth : {1U, 4U, 16U, 32U}) {
        bench_progress("disk: O_DIRECT reads, queue depth " + std::to_string(depth));
        figures.push_back(figure("disk O_DIRECT qd" + std::to_string(depth), read_direct_gb_per_s(path, depth)));
    }
    bench_progress("disk: buffered read, cold, then hot");
    Result<double> cold = fail(errc::unsupported, "");
    if (auto evicted = evict_from_page_cache(path); !evicted) {
        cold = evicted.error();
    } else if (auto cached = cached_fraction(path); cached && *cached > 0.01) {
        cold = fail(errc::unsupported, "could not evict the file from the page cache (" +
                                           std::to_string(static_cast<int>(*cached * 100)) + "% still cached)");
    } else {
        cold = read_buffered_gb_per_s(path);
    }
    figures.push_back(figure("disk buffered cold", cold));
    figures.push_back(figure("page cache (buffered hot)", read_buffered_gb_per_s(path)));
}

void add_cpu_figures(nlohmann::json& figures) {
    const std::size_t cores = std::max(1U, std::thread::hardware_concurrency());
    for (CpuWork work : all_cpu_work) {
        const std::string name(cpu_work_name(work));
        bench_progress("cpu: " + name);
        figures.push_back(figure(name + " 1 core", cpu_gb_per_s(work, 1)));
        figures.push_back(figure(name + " " + std::to_string(cores) + " cores", cpu_gb_per_s(work, cores)));
    }
}

// On a VM the disk can cost CPU where no guest tool shows it: here (2-vCPU Firecracker VM)
// the host's copy of each read into guest memory runs beside the vCPUs, and while the disk
// reads, SHA-256 on one vCPU runs at 1.21 GB/s instead of 1.79 (an integer loop is not slowed:
// the host's copy competes for the vector units). A load's CPU bound is what the cores do while
// its reads run, so it is measured that way: a thread reads `path` with O_DIRECT over and over
// while each kind of work runs on every core.
void add_cpu_under_io_figures(const std::string& path, nlohmann::json& figures) {
    const std::size_t cores = std::max(1U, std::thread::hardware_concurrency());
    std::optional<Error> read_error;
    // A jthread asks the reader to stop and joins it on every way out, an exception included.
    // It stops between whole passes over the file.
    std::jthread reader([&](const std::stop_token& stop) {
        while (!stop.stop_requested()) {
            auto read = read_direct_gb_per_s(path, 16);
            if (!read) {
                read_error = read.error();
                return;
            }
        }
    });
    std::vector<std::pair<std::string, double>> rates;
    for (CpuWork work : all_cpu_work) {
        const std::string name(cpu_work_name(work));
        bench_progress("cpu while the disk reads: " + name);
        rates.emplace_back(name + " " + std::to_string(cores) + " cores, disk reading", cpu_gb_per_s(work, cores, 0.5));
    }
    reader.request_stop();
    reader.join();
    for (const auto& [name, rate] : rates) {
        figures.push_back(read_error ? figure(name, Result<double>(*read_error)) : figure(name, rate));
    }
}

void add_gpu_figures(nlohmann::json& figures) {
    bench_progress("gpu: pinned copies");
    auto rates = measure_gpu_copy_rates();
    if (!rates) {
        figures.push_back(figure("pinned host-to-device", rates.error()));
        figures.push_back(figure("pinned device-to-host", rates.error()));
        return;
    }
    figures.push_back(figure("pinned host-to-device", rates->host_to_device_gb_per_s));
    figures.push_back(figure("pinned device-to-host", rates->device_to_host_gb_per_s));
}

// One load of the URL by a child `ringload load`, so the figure is what a load gets.
Result<double> http_gb_per_s(const std::string& url, const std::string& version) {
    auto run = run_child({self_executable(), "load", url, "--http-version", version, "--json"});
    if (!run) {
        return run.error();
    }
    if (run->exit_status != 0) {
        return fail(errc::io_error, run->err);
    }
    const auto out = nlohmann::json::parse(run->out);
    return out["bytes"].get<double>() / out["seconds"].get<double>() / 1e9;
}

void add_http_figures(const std::string& url, nlohmann::json& figures) {
    for (const char* version : {"1.1", "2"}) {
        const std::string name = std::string("HTTP/") + version;
        if (url.empty()) {
            figures.push_back(figure(name, fail(errc::unsupported, "no server given (--url)")));
            continue;
        }
        bench_progress("network: " + name + " " + url);
        figures.push_back(figure(name, http_gb_per_s(url, version)));
    }
}

void print_table(const nlohmann::json& result) {
    std::printf("%-40s %9s  %s\n", "limit", "GB/s", "note");
    for (const auto& row : result["figures"]) {
        const std::string note = row.contains("unavailable") ? row["unavailable"].get<std::string>() : "";
        std::printf("%-40s %9s  %s\n", row["name"].get<std::string>().c_str(), format_gb_per_s(row).c_str(),
                    note.c_str());
    }
}

int run_limits(const LimitsArgs& args) {
    std::string path = args.file;
    const bool scratch = path.empty();
    if (scratch) {
        path = args.dir + "/ringload-bench-limits.tmp";
        bench_progress("writing a " + std::to_string(args.size_bytes >> 20) + " MiB scratch file " + path);
        if (auto written = write_scratch_file(path, args.size_bytes); !written) {
            std::remove(path.c_str());
            return report_error(written.error().message());
        }
    }
    nlohmann::json result;
    result["kind"] = "limits";
    result["machine"] = machine_json();
    result["file"] = path;
    result["figures"] = nlohmann::json::array();
    if (wanted(args, "disk")) {
        add_disk_figures(path, result["figures"]);
    }
    if (wanted(args, "cpu")) {
        add_cpu_figures(result["figures"]);
    }
    if (wanted(args, "cpu-io")) {
        add_cpu_under_io_figures(path, result["figures"]);
    }
    if (scratch) {
        std::remove(path.c_str());
    }
    if (wanted(args, "gpu")) {
        add_gpu_figures(result["figures"]);
    }
    if (wanted(args, "http")) {
        add_http_figures(args.url, result["figures"]);
    }
    print_table(result);
    if (auto written = write_outputs(result, args.json_path, args.png_path); !written) {
        return report_error(written.error().message());
    }
    return 0;
}

} // namespace

Run add_bench_limits_command(CLI::App& bench) {
    auto args = std::make_shared<LimitsArgs>();
    auto* command = bench.add_subcommand("limits", "Measure what bounds a load on this machine");
    command->add_option("--dir", args->dir, "Where to write the scratch file the disk is measured with");
    command->add_option("--file", args->file, "Measure the disk with this existing file instead");
    command->add_option("--size", args->size_bytes, "Scratch file size in bytes (default 1 GiB)");
    command->add_option("--url", args->url, "An http:// or https:// file to measure HTTP/1.1 and HTTP/2 with");
    command->add_option("--json", args->json_path, "Write the figures to this JSON file");
    command->add_option("--png", args->png_path, "Draw the figures into this PNG file");
    command->add_option("--only", args->only, "Measure only these groups (disk, cpu, cpu-io, gpu, http; repeatable)")
        ->check(CLI::IsMember({"disk", "cpu", "cpu-io", "gpu", "http"}));
    return [args] { return run_limits(*args); };
}

} // namespace ringload::cli
