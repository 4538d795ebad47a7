// tests/support/slow_then_failing_source.hpp
//
// A Source wrapper whose reads are slow at one offset and fail past another, after a delay:
// by then the scheduler has issued every window, later pieces are parked behind the slow one,
// and only an abandon() at the failure lets their slots go (found in review: this hung).
//
//     SlowThenFailingSource faulty(file, slow_after, slow_before, fail_from);
//     run_plan(faulty, ring, pool, plan, graph, {});   // fails with "injected read error"
#pragma once

#include "ringload/engine/source.hpp"
#include "ringload/engine/task.hpp"

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>

#include <chrono>

namespace ringload::testing {

class SlowThenFailingSource final : public Source {
public:
    SlowThenFailingSource(Source& inner, std::uint64_t slow_after, std::uint64_t slow_before, std::uint64_t fail_from)
        : inner_(inner), slow_after_(slow_after), slow_before_(slow_before), fail_from_(fail_from) {}
    const std::string& name() const override { return inner_.name(); }
    std::uint64_t size_bytes() const override { return inner_.size_bytes(); }
    std::size_t alignment_bytes() const override { return inner_.alignment_bytes(); }
    std::string describe() const override { return inner_.describe(); }
    bool uses_io_uring() const override { return inner_.uses_io_uring(); }
    Task<Result<std::size_t>> read_some_at(std::uint64_t offset, ReadTarget target) override {
        if (!slowed_ && offset > slow_after_ && offset < slow_before_) {
            slowed_ = true;
            boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor);
            timer.expires_after(std::chrono::milliseconds(300));
            co_await timer.async_wait(use_task);
        }
        if (offset >= fail_from_) {
            boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor);
            timer.expires_after(std::chrono::milliseconds(100));
            co_await timer.async_wait(use_task);
            co_return fail(errc::io_error, "injected read error");
        }
        co_return co_await inner_.read_some_at(offset, target);
    }
    Task<Result<std::size_t>> read_small_at(std::uint64_t offset, std::span<std::byte> destination) override {
        return inner_.read_small_at(offset, destination);
    }

private:
    Source& inner_;
    std::uint64_t slow_after_, slow_before_, fail_from_;
    bool slowed_ = false;
};

} // namespace ringload::testing
