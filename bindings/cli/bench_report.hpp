// bindings/cli/bench_report.hpp
//
// What `bench limits` and `bench load` share on the way out: the progress line on stderr, the
// JSON file, the PNG chart (bench/chart.py, run with the bench's Python), a description of the
// machine, and where the bench's scripts and Python are:
//   RINGLOAD_BENCH_DIR     bench/ of the source tree (default: the one this was built from)
//   RINGLOAD_BENCH_PYTHON  the Python with the peers installed (default: the tree's .venv)
#pragma once

#include "ringload/error.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace ringload::cli {

// "bench: <what>" on stderr, one line per step, so a log shows where a long run is.
void bench_progress(const std::string& what);

std::string bench_scripts_dir();
std::string bench_python();

// {"cores", "kernel", "cpu", "memory_bytes"}.
nlohmann::json machine_json();

Result<void> write_json_file(const std::string& path, const nlohmann::json& value);

// Draws `value` (a `bench limits` or `bench load` result) into `png_path`.
Result<void> write_chart(const nlohmann::json& value, const std::string& png_path);

// What --json and --png ask for (either may be empty).
Result<void> write_outputs(const nlohmann::json& value, const std::string& json_path, const std::string& png_path);

// A figure: {"name", "gb_per_s"} or, where it cannot be measured here, {"name", "unavailable"}.
nlohmann::json figure(const std::string& name, const Result<double>& gb_per_s);

std::string format_gb_per_s(const nlohmann::json& figure);

} // namespace ringload::cli
