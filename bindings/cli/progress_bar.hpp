// bindings/cli/progress_bar.hpp
//
// A one-line progress bar on stderr, drawn only when stderr is a terminal.
#pragma once

#include "ringload/progress.hpp"

namespace ringload::cli {

class ProgressBar {
public:
    ProgressBar();
    ~ProgressBar();
    bool enabled() const noexcept { return enabled_; }
    void update(const Progress& progress);

private:
    bool enabled_ = false;
    bool drawn_ = false;
};

} // namespace ringload::cli
