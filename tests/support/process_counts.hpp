// tests/support/process_counts.hpp
//
// What this process holds now, read from /proc/self: open descriptors, threads, resident
// memory. For checks that work which ended (a cancelled load, a soak run) left nothing behind.
//
//     const auto before = testing::ProcessCounts::now();
//     ... open, load, cancel, drop everything ...
//     auto after = testing::ProcessCounts::settled(before);   // waits for threads that are exiting
//     EXPECT_EQ(after.descriptors, before.descriptors);
//
// Threads leave /proc/self/task a little after they are joined, and io_uring's kernel workers
// (iou-wrk-N, listed there too) when the ring's context is torn down, which the kernel does
// after close(): settled() polls until the counts are back or a deadline passes.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define RINGLOAD_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define RINGLOAD_TEST_SANITIZED 1
#endif
#endif
#ifdef RINGLOAD_TEST_SANITIZED
#include <sanitizer/common_interface_defs.h>
#endif

namespace ringload::testing {

inline std::size_t entries_in(const char* directory) {
    std::size_t count = 0;
    std::error_code error;
    for (std::filesystem::directory_iterator it(directory, error), end; !error && it != end; it.increment(error)) {
        ++count;
    }
    return count;
}

// A field of /proc/self/status in kB ("VmRSS", "VmHWM"), as bytes; 0 when absent.
inline std::uint64_t status_bytes(const std::string& field) {
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);) {
        if (line.starts_with(field + ":")) {
            return std::stoull(line.substr(field.size() + 1)) * 1024;
        }
    }
    return 0;
}

// Under a sanitizer: starts its symbolizer now. The sanitizer starts it (a process it talks to
// through two pipes, kept open) at the first report it symbolizes, a suppressed one too
// (tests/support/tsan.supp): after a count was taken, that looked like two descriptors leaked.
inline void start_sanitizer_symbolizer() {
#ifdef RINGLOAD_TEST_SANITIZED
    char text[256];
    __sanitizer_symbolize_pc(reinterpret_cast<void*>(&start_sanitizer_symbolizer), "%p %F %L", text, sizeof text);
#endif
}

struct ProcessCounts {
    std::size_t descriptors = 0; // /proc/self/fd, the directory's own descriptor not counted
    std::size_t threads = 0;     // /proc/self/task, io_uring workers included

    static ProcessCounts now() { return {entries_in("/proc/self/fd") - 1, entries_in("/proc/self/task")}; }

    // The counts once they are no higher than `baseline`, or as they are after `deadline`.
    static ProcessCounts settled(const ProcessCounts& baseline,
                                 std::chrono::milliseconds deadline = std::chrono::seconds(5)) {
        const auto until = std::chrono::steady_clock::now() + deadline;
        for (;;) {
            ProcessCounts counts = now();
            if ((counts.descriptors <= baseline.descriptors && counts.threads <= baseline.threads) ||
                std::chrono::steady_clock::now() > until) {
                return counts;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
    }
};

} // namespace ringload::testing
