// bindings/cli/bench_child.cpp
#include "bench_child.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <climits>
#include <cstring>

extern char** environ;

namespace ringload::cli {
namespace {

// Reads both pipes to their ends together, so a child that fills one cannot block on it.
void drain(int out_fd, int err_fd, std::string& out, std::string& err) {
    std::array<pollfd, 2> fds{{{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}}};
    std::array<std::string*, 2> texts{&out, &err};
    std::array<char, 65536> buffer{};
    int open = 2;
    while (open > 0) {
        if (::poll(fds.data(), fds.size(), -1) < 0) {
            if (errno == EINTR) {
                continue;
            }
            return;
        }
        for (std::size_t i = 0; i < fds.size(); ++i) {
            if (fds[i].fd < 0 || fds[i].revents == 0) {
                continue;
            }
            const ssize_t n = ::read(fds[i].fd, buffer.data(), buffer.size());
            if (n > 0) {
                texts[i]->append(buffer.data(), static_cast<std::size_t>(n));
            } else if (n == 0 || errno != EINTR) {
                fds[i].fd = -1;
                --open;
            }
        }
    }
}

} // namespace

Result<ChildRun> run_child(const std::vector<std::string>& argv) {
    std::array<int, 2> out_pipe{};
    std::array<int, 2> err_pipe{};
    if (::pipe2(out_pipe.data(), O_CLOEXEC) != 0 || ::pipe2(err_pipe.data(), O_CLOEXEC) != 0) {
        return fail(errc::io_error, std::string("pipe: ") + std::strerror(errno));
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
    std::vector<char*> args;
    for (const auto& arg : argv) {
        args.push_back(const_cast<char*>(arg.c_str()));
    }
    args.push_back(nullptr);
    pid_t pid = 0;
    const int rc = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(out_pipe[1]);
    ::close(err_pipe[1]);
    ChildRun run;
    if (rc == 0) {
        drain(out_pipe[0], err_pipe[0], run.out, run.err);
    }
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    if (rc != 0) {
        return fail(errc::io_error, argv[0] + ": cannot start: " + std::strerror(rc));
    }
    int status = 0;
    rusage usage{};
    while (::wait4(pid, &status, 0, &usage) < 0) {
        if (errno != EINTR) {
            return fail(errc::io_error, argv[0] + ": wait4: " + std::strerror(errno));
        }
    }
    run.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    run.peak_rss_bytes = static_cast<std::uint64_t>(usage.ru_maxrss) * 1024; // Linux: KiB
    return run;
}

std::string self_executable() {
    std::array<char, PATH_MAX> path{};
    const ssize_t n = ::readlink("/proc/self/exe", path.data(), path.size() - 1);
    return n > 0 ? std::string(path.data(), static_cast<std::size_t>(n)) : std::string("ringload");
}

Result<double> measure_in_child(const std::function<Result<double>()>& measure) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
        return fail(errc::io_error, std::string("bench: pipe: ") + std::strerror(errno));
    }
    const pid_t pid = ::fork();
    if (pid < 0) {
        ::close(fds[0]);
        ::close(fds[1]);
        return fail(errc::io_error, std::string("bench: fork: ") + std::strerror(errno));
    }
    if (pid == 0) {
        ::close(fds[0]);
        auto figure = measure();
        const std::string text = figure ? "ok " + std::to_string(*figure) : "error " + figure.error().message();
        (void)!::write(fds[1], text.data(), text.size());
        ::_exit(0);
    }
    ::close(fds[1]);
    std::string text;
    std::array<char, 4096> buffer{};
    for (ssize_t n; (n = ::read(fds[0], buffer.data(), buffer.size())) != 0;) {
        if (n > 0) {
            text.append(buffer.data(), static_cast<std::size_t>(n));
        } else if (errno != EINTR) {
            break;
        }
    }
    ::close(fds[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (text.starts_with("ok ")) {
        return std::stod(text.substr(3));
    }
    if (text.starts_with("error ")) {
        return fail(errc::io_error, text.substr(6));
    }
    return fail(errc::io_error,
                "bench: the measuring child ended without a figure (status " + std::to_string(status) + ")");
}

} // namespace ringload::cli
