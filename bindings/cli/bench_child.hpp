// bindings/cli/bench_child.hpp
//
// Runs one measured system in a process of its own (so each starts with a fresh heap and its
// peak RSS is its own) and collects what it printed, its exit status and, from wait4, the
// peak resident set size the kernel recorded for it.
#pragma once

#include "ringload/error.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ringload::cli {

struct ChildRun {
    int exit_status = 0; // 128 + N when killed by signal N
    std::string out;     // all of stdout
    std::string err;     // all of stderr
    std::uint64_t peak_rss_bytes = 0;
};

// argv[0] is found on PATH when it has no slash. Fails only if the process cannot be started.
Result<ChildRun> run_child(const std::vector<std::string>& argv);

// Runs `measure` in a forked child and returns the figure it gives (its error only as a
// sentence), so that whatever it touches never counts in this process's peak RSS, which every
// later child inherits (see run_load_bench). The harness is single-threaded when it forks.
Result<double> measure_in_child(const std::function<Result<double>()>& measure);

// The path of the running ringload executable, for children that run `ringload load`.
std::string self_executable();

} // namespace ringload::cli
