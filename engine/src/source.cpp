// engine/src/source.cpp
#include "ringload/engine/source.hpp"

#include <utility>

namespace ringload {

Task<Result<void>> read_exactly_at(Source& source, std::uint64_t offset_bytes, std::span<std::byte> dst) {
    std::size_t done = 0;
    while (done < dst.size()) {
        auto reading = source.read_small_at(offset_bytes + done, dst.subspan(done));
        RL_CO_TRY(read, co_await std::move(reading));
        if (read == 0) {
            co_return fail(errc::truncated, source.name() + ": needs bytes up to offset " +
                                                std::to_string(offset_bytes + dst.size()) + " but the source ends at " +
                                                std::to_string(offset_bytes + done));
        }
        done += read;
    }
    co_return Result<void>{};
}

} // namespace ringload
