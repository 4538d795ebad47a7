// bindings/cli/progress_bar.cpp
#include "progress_bar.hpp"

#include <unistd.h>

#include <cstdio>
#include <string>

namespace ringload::cli {

ProgressBar::ProgressBar() : enabled_(::isatty(STDERR_FILENO) == 1) {}

ProgressBar::~ProgressBar() {
    if (drawn_) {
        std::fputs("\r\033[K", stderr); // leave the line clean for the summary
    }
}

void ProgressBar::update(const Progress& progress) {
    if (!enabled_ || progress.bytes_total == 0) {
        return;
    }
    constexpr int width = 40;
    double fraction = static_cast<double>(progress.bytes_done) / static_cast<double>(progress.bytes_total);
    int filled = static_cast<int>(fraction * width);
    double rate = progress.seconds > 0 ? static_cast<double>(progress.bytes_done) / progress.seconds / 1e9 : 0;
    std::string bar(static_cast<std::size_t>(filled), '#');
    bar.resize(width, '.');
    std::fprintf(stderr, "\r[%s] %5.1f%%  %.2f GB/s", bar.c_str(), fraction * 100, rate);
    std::fflush(stderr);
    drawn_ = true;
}

} // namespace ringload::cli
