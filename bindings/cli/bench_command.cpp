// bindings/cli/bench_command.cpp
//
// Registers `ringload bench` and runs the subcommand chosen.
#include "bench_command.hpp"

#include <memory>

namespace ringload::cli {

Run add_bench_command(CLI::App& app) {
    auto* bench =
        app.add_subcommand("bench", "Measure this machine's limits and load a model with ringload and its peers");
    bench->require_subcommand(1);
    auto run_limits = add_bench_limits_command(*bench);
    auto run_load = add_bench_load_command(*bench);
    auto run_model = add_bench_model_command(*bench);
    return [bench, run_limits, run_load, run_model] {
        if (bench->got_subcommand("limits")) {
            return run_limits();
        }
        if (bench->got_subcommand("load")) {
            return run_load();
        }
        return run_model();
    };
}

} // namespace ringload::cli
