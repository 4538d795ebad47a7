// bench/micro_benchmarks.cpp: Google Benchmark micro-benchmarks of the hot parts of a load.
//
//     build/release/bench/ringload-micro [--benchmark_filter=Crc32]
//
//   Crc32, Sha256       one core hashing a 4 MiB slot (ISA-L, OpenSSL)
//   OpenChunk           one core authenticating and decrypting a 2 MiB cipher chunk (libsodium)
//   RingHandOff         the executor moving an in-memory source through a 32-slot ring to a
//                       handler that only counts: the engine's own cost per byte, no I/O
//   SafetensorsHeader   parsing a 1000-tensor safetensors header (JSON) into an Index
// Each reports bytes per second; the ratios between them show which stage bounds a load.
#include "formats/safetensors/header.hpp"
#include "ringload/engine/executor.hpp"
#include "ringload/engine/hashes.hpp"
#include "ringload/engine/secretbox.hpp"

#include <benchmark/benchmark.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>

#include <atomic>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace ringload {
namespace {

std::vector<std::byte> pattern(std::size_t size) {
    std::vector<std::byte> bytes(size);
    for (std::size_t i = 0; i < size; ++i) {
        bytes[i] = static_cast<std::byte>((i * 2654435761u) >> 13);
    }
    return bytes;
}

void Crc32Slot(benchmark::State& state) {
    const auto bytes = pattern(4 << 20);
    for (auto _ : state) {
        Crc32 crc;
        crc.update(bytes);
        benchmark::DoNotOptimize(crc.value());
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes.size()));
}
BENCHMARK(Crc32Slot);

void Sha256Slot(benchmark::State& state) {
    const auto bytes = pattern(4 << 20);
    for (auto _ : state) {
        Sha256 sha;
        sha.update(bytes);
        benchmark::DoNotOptimize(sha.finish());
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes.size()));
}
BENCHMARK(Sha256Slot);

void OpenChunk(benchmark::State& state) {
    auto ciphertext = pattern(2 << 20);
    std::vector<std::byte> plaintext(ciphertext.size());
    const auto key = SecretKey::from_bytes(pattern(32)).value();
    const Nonce nonce = random_nonce();
    const Mac mac = seal_in_place(ciphertext, nonce, key);
    for (auto _ : state) {
        benchmark::DoNotOptimize(open_into(plaintext, ciphertext, mac, nonce, key));
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * ciphertext.size()));
}
BENCHMARK(OpenChunk);

// An in-memory source: every read completes at once, on a later turn of the loop.
class MemorySource final : public Source {
public:
    explicit MemorySource(std::uint64_t size) : size_(size), name_("memory://") {}
    const std::string& name() const override { return name_; }
    std::uint64_t size_bytes() const override { return size_; }
    std::size_t alignment_bytes() const override { return 1; }
    std::string describe() const override { return "memory"; }
    Task<Result<std::size_t>> read_some_at(std::uint64_t offset, ReadTarget target) override {
        auto dst = target.bytes();
        auto executor = co_await asio::this_coro::executor;
        co_await asio::post(executor, use_task);
        const auto count = static_cast<std::size_t>(std::min<std::uint64_t>(dst.size(), size_ - offset));
        std::memset(dst.data(), 0x5a, count);
        co_return count;
    }
    Task<Result<std::size_t>> read_small_at(std::uint64_t offset, std::span<std::byte> dst) override {
        auto read = read_some_at(offset, ReadTarget{nullptr, 0, dst.size(), dst.data()});
        co_return co_await std::move(read);
    }

private:
    std::uint64_t size_;
    std::string name_;
};

class CountingHandler final : public ChunkHandler {
public:
    Result<void> process(const ChunkPtr& chunk) override {
        bytes_.fetch_add(chunk->bytes().size());
        return {};
    }
    Result<void> finish() override { return {}; }
    std::uint64_t bytes() const { return bytes_.load(); }

private:
    std::atomic<std::uint64_t> bytes_{0};
};

void RingHandOff(benchmark::State& state) {
    constexpr std::uint64_t size = 256 << 20;
    asio::io_context loop{1};
    MemorySource source(size);
    auto ring = BufferRing::create(loop, {32, 4 << 20}).value();
    WorkerPool pool(0);
    Plan plan;
    plan.ranges.push_back({0, size});
    for (auto _ : state) {
        CountingHandler handler;
        std::optional<Result<RunStats>> done;
        asio::co_spawn(loop, run_plan(source, *ring, pool, plan, handler, {}),
                       [&done](std::exception_ptr, Result<RunStats> result) { done.emplace(std::move(result)); });
        loop.restart();
        loop.run();
        if (!done || !*done || handler.bytes() != size) {
            state.SkipWithError("the run failed");
            break;
        }
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * size));
}
BENCHMARK(RingHandOff)->Unit(benchmark::kMillisecond);

void SafetensorsHeader(benchmark::State& state) {
    std::string header = "{";
    std::uint64_t offset = 0;
    for (int i = 0; i < 1000; ++i) {
        const std::uint64_t length = 4096 * 2;
        header += (i == 0 ? "" : ",") + std::string("\"model.layers.") + std::to_string(i) +
                  ".weight\":{\"dtype\":\"F16\",\"shape\":[64,64],\"data_offsets\":[" + std::to_string(offset) + "," +
                  std::to_string(offset + length) + "]}";
        offset += length;
    }
    header += "}";
    const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(header.data()), header.size());
    for (auto _ : state) {
        auto index = safetensors::parse_header(bytes, 8 + header.size() + offset);
        if (!index) {
            state.SkipWithError(index.error().message().c_str());
            break;
        }
        benchmark::DoNotOptimize(index->tensors.data());
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * header.size()));
}
BENCHMARK(SafetensorsHeader);

} // namespace
} // namespace ringload

BENCHMARK_MAIN();
