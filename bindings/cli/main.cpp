// bindings/cli/main.cpp
//
// ringload info URI [--json]
// ringload load URI [--device cpu] [--verify] [--filter REGEX] [--sha256] [--json] ...
// ringload convert IN OUT [--decrypt-key-file F | ...] [--encrypt-key-file F | ...]
// ringload bench limits|load|model ...
#include "commands.hpp"

#include "ringload/error.hpp"

#include <cstdio>
#include <exception>

namespace ringload::cli {

int report_error(const std::string& message) {
    std::fprintf(stderr, "ringload: %s\n", message.c_str());
    return 1;
}

} // namespace ringload::cli

int main(int argc, char** argv) {
    CLI::App app{"ringload: load model weights as fast as the hardware allows"};
    app.require_subcommand(1);
    auto run_info = ringload::cli::add_info_command(app);
    auto run_load = ringload::cli::add_load_command(app);
    auto run_convert = ringload::cli::add_convert_command(app);
    auto run_bench = ringload::cli::add_bench_command(app);
    auto run_verify = ringload::cli::add_verify_command(app);
    auto run_sign = ringload::cli::add_sign_command(app);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& error) {
        return app.exit(error);
    }
    try {
        if (app.got_subcommand("info")) {
            return run_info();
        }
        if (app.got_subcommand("convert")) {
            return run_convert();
        }
        if (app.got_subcommand("bench")) {
            return run_bench();
        }
        if (app.got_subcommand("verify")) {
            return run_verify();
        }
        if (app.got_subcommand("sign")) {
            return run_sign();
        }
        return run_load();
    } catch (const std::exception& error) {
        return ringload::cli::report_error(error.what());
    }
}
