// io/src/reader_source.cpp
#include "ringload/io/reader_source.hpp"

namespace ringload {
namespace {

class ReaderSource final : public Source {
public:
    ReaderSource(std::string name, std::uint64_t size_bytes, ReadFunction read, std::string how)
        : name_(std::move(name)), size_bytes_(size_bytes), read_(std::move(read)), how_(std::move(how)) {}

    const std::string& name() const override { return name_; }
    std::uint64_t size_bytes() const override { return size_bytes_; }
    std::size_t alignment_bytes() const override { return 1; }
    std::string describe() const override { return how_; }
    // The function copies into whatever it is given: tensors' own memory saves a slot copy.
    bool accepts_any_destination() const override { return true; }
    std::size_t preferred_read_bytes() const override { return 8 << 20; }

    Task<Result<std::size_t>> read_some_at(std::uint64_t offset_bytes, ReadTarget target) override {
        co_return read(offset_bytes, target.bytes());
    }
    Task<Result<std::size_t>> read_small_at(std::uint64_t offset_bytes, std::span<std::byte> dst) override {
        co_return read(offset_bytes, dst);
    }

private:
    Result<std::size_t> read(std::uint64_t offset_bytes, std::span<std::byte> dst) {
        if (offset_bytes >= size_bytes_ || dst.empty()) {
            return std::size_t{0};
        }
        auto done = read_(offset_bytes, dst);
        if (!done) {
            return with_context(done.error(), name_);
        }
        if (*done == 0 || *done > dst.size()) {
            // An empty read before the end would make the engine ask again for ever.
            return fail(errc::truncated, name_ + ": the reader returned " + std::to_string(*done) + " bytes at byte " +
                                             std::to_string(offset_bytes) + " of " + std::to_string(size_bytes_) +
                                             " (" + std::to_string(dst.size()) + " asked)");
        }
        return *done;
    }

    std::string name_;
    std::uint64_t size_bytes_;
    ReadFunction read_;
    std::string how_;
};

} // namespace

std::unique_ptr<Source> make_reader_source(std::string name, std::uint64_t size_bytes, ReadFunction read,
                                           std::string how) {
    return std::make_unique<ReaderSource>(std::move(name), size_bytes, std::move(read), std::move(how));
}

} // namespace ringload
