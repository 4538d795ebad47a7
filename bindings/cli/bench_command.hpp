// bindings/cli/bench_command.hpp
//
// `ringload bench limits|load|model`: what bounds a load on this machine, how ringload and the
// installed peers load the same model against that bound, and synthetic models to run it on.
// Each subcommand is in its own file (bench_limits.cpp, bench_load.cpp, bench_model.cpp).
#pragma once

#include "commands.hpp"

namespace ringload::cli {

Run add_bench_limits_command(CLI::App& bench);
Run add_bench_load_command(CLI::App& bench);
Run add_bench_model_command(CLI::App& bench);

} // namespace ringload::cli
