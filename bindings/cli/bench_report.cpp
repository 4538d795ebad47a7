// bindings/cli/bench_report.cpp
#include "bench_report.hpp"

#include "bench_child.hpp"
#include "tensor_json.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <thread>

namespace ringload::cli {
namespace {

std::string env_or(const char* name, const char* fallback) {
    const char* value = std::getenv(name);
    return value && *value ? value : fallback;
}

std::string cpu_model() {
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line;
    while (std::getline(cpuinfo, line)) {
        if (line.starts_with("model name")) {
            const auto colon = line.find(':');
            return colon == std::string::npos ? line : line.substr(colon + 2);
        }
    }
    return "unknown";
}

} // namespace

void bench_progress(const std::string& what) {
    std::fprintf(stderr, "bench: %s\n", what.c_str());
    std::fflush(stderr);
}

std::string bench_scripts_dir() {
    return env_or("RINGLOAD_BENCH_DIR", RINGLOAD_BENCH_DIR);
}

std::string bench_python() {
    return env_or("RINGLOAD_BENCH_PYTHON", RINGLOAD_BENCH_PYTHON);
}

nlohmann::json machine_json() {
    utsname names{};
    ::uname(&names);
    nlohmann::json machine;
    machine["cores"] = std::thread::hardware_concurrency();
    machine["kernel"] = std::string(names.release);
    machine["cpu"] = cpu_model();
    machine["memory_bytes"] =
        static_cast<std::uint64_t>(::sysconf(_SC_PHYS_PAGES)) * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    return machine;
}

Result<void> write_json_file(const std::string& path, const nlohmann::json& value) {
    std::ofstream out(path);
    out << dump_json(value) << "\n";
    out.close();
    if (!out) {
        return fail(errc::io_error, path + ": cannot write the JSON file");
    }
    return {};
}

Result<void> write_chart(const nlohmann::json& value, const std::string& png_path) {
    // The chart script reads the same JSON a --json file holds.
    const std::string json_path = png_path + ".json.tmp";
    if (auto written = write_json_file(json_path, value); !written) {
        return written.error();
    }
    auto run = run_child({bench_python(), bench_scripts_dir() + "/chart.py", json_path, png_path});
    std::remove(json_path.c_str());
    if (!run) {
        return run.error();
    }
    if (run->exit_status != 0) {
        return fail(errc::io_error, "bench/chart.py: " + run->err);
    }
    return {};
}

nlohmann::json figure(const std::string& name, const Result<double>& gb_per_s) {
    nlohmann::json row;
    row["name"] = name;
    if (gb_per_s) {
        row["gb_per_s"] = *gb_per_s;
    } else {
        row["unavailable"] = gb_per_s.error().message();
    }
    return row;
}

std::string format_gb_per_s(const nlohmann::json& figure) {
    if (figure.contains("unavailable")) {
        return "-";
    }
    char text[32];
    std::snprintf(text, sizeof text, "%.2f", figure["gb_per_s"].get<double>());
    return text;
}

Result<void> write_outputs(const nlohmann::json& value, const std::string& json_path, const std::string& png_path) {
    if (!json_path.empty()) {
        RL_TRY_VOID(write_json_file(json_path, value));
    }
    if (!png_path.empty()) {
        RL_TRY_VOID(write_chart(value, png_path));
    }
    return {};
}

} // namespace ringload::cli
