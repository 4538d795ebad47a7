// tests/io/file_source_test.cpp
//
// FileSource on real files, through io_uring and through the pread fallback (each test runs
// both; io_uring skips where the host blocks it): reads at offsets land the right bytes, a read
// at the end of the file completes short and one past it with 0, O_DIRECT reports its
// alignment and still serves a misaligned read (through the page cache), a plan whose ranges
// start off the alignment reaches the handler without the lead bytes the aligned reads
// brought in, the buffered/direct choice follows the page cache, and a missing file's error
// names the path; where the kernel refuses the loop's io_uring, the file is read with pread.
// Files live under the working directory (the build tree): O_DIRECT needs a real file system,
// and $TMPDIR may be tmpfs; where O_DIRECT is refused its tests skip.
#include "ringload/io/file_source.hpp"
#include "../support/fake_source.hpp"
#include "../support/test_support.hpp"
#include "ringload/engine/executor.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

namespace ringload {
namespace {

namespace fs = std::filesystem;

constexpr std::uint64_t page_bytes = 4096;
constexpr std::uint64_t file_bytes = 3 * page_bytes + 17; // the last page is short

std::vector<std::byte> pattern(std::uint64_t from, std::uint64_t length) {
    std::vector<std::byte> bytes(static_cast<std::size_t>(length));
    for (std::uint64_t i = 0; i < length; ++i) {
        bytes[static_cast<std::size_t>(i)] = testing::pattern_byte(from + i);
    }
    return bytes;
}

// Copies each chunk's bytes to where they belong in a picture of the file.
class GatherHandler final : public ChunkHandler {
public:
    explicit GatherHandler(std::uint64_t size) : seen_(static_cast<std::size_t>(size)) {}

    Result<void> process(const ChunkPtr& chunk) override {
        std::lock_guard lock(mutex_);
        const auto bytes = chunk->bytes();
        std::memcpy(seen_.data() + chunk->source_offset_bytes(), bytes.data(), bytes.size());
        delivered_ += bytes.size();
        return {};
    }
    Result<void> finish() override { return {}; }

    std::vector<std::byte> seen_;
    std::uint64_t delivered_ = 0;

private:
    std::mutex mutex_;
};

class FileSourceTest : public ::testing::TestWithParam<bool> {
protected:
    void SetUp() override {
        if (io_uring() && !io_uring_available()) {
            GTEST_SKIP() << "io_uring blocked on this host";
        }
        path_ = testing::write_file(dir_.path() / "pattern.bin", pattern(0, file_bytes));
    }

    bool io_uring() const { return GetParam(); }

    Result<std::unique_ptr<Source>> open(FileReadMode mode, const fs::path& path) {
        return open_file_source(loop_, path.string(), {.mode = mode, .allow_io_uring = io_uring()});
    }
    std::unique_ptr<Source> open(FileReadMode mode) { return open(mode, path_).value(); }

    Result<std::size_t> read_small(Source& source, std::uint64_t offset, std::span<std::byte> dst) {
        return testing::run_to_completion(loop_, source.read_small_at(offset, dst));
    }

    // One bulk read into a slot of a (registered, where io_uring allows) ring, as the executor does.
    Result<std::vector<std::byte>> read_slot(Source& source, std::uint64_t offset, std::size_t length) {
        auto ring = BufferRing::create(loop_, {.slot_count = 2, .slot_size_bytes = 4 * page_bytes}).value();
        ring->register_with_io_uring();
        SlotLease slot = ring->try_acquire().value();
        ReadTarget target{&slot, 0, length, nullptr};
        auto read = testing::run_to_completion(loop_, source.read_some_at(offset, target));
        if (!read) {
            return read.error();
        }
        const auto bytes = slot.bytes().first(*read);
        return std::vector<std::byte>(bytes.begin(), bytes.end());
    }

    // A source opened with O_DIRECT, or a skip where the file system refuses it.
    std::unique_ptr<Source> open_direct() {
        auto source = open(FileReadMode::direct);
        if (source->describe().find("O_DIRECT") == std::string::npos) {
            return nullptr;
        }
        return source;
    }

    // Drops the file's pages from the page cache; false where the kernel kept them.
    bool evict_from_page_cache() {
        const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            return false;
        }
        const bool dropped = ::fdatasync(fd) == 0 && ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0 &&
                             page_cache_residency(fd, file_bytes) < 0.9;
        ::close(fd);
        return dropped;
    }

    boost::asio::io_context loop_;
    testing::TempDir dir_{fs::current_path()};
    fs::path path_;
};

TEST_P(FileSourceTest, ReadsAtOffsets) {
    auto source = open(FileReadMode::buffered);
    EXPECT_EQ(source->size_bytes(), file_bytes);
    EXPECT_EQ(source->name(), path_.string());
    EXPECT_EQ(source->alignment_bytes(), 1u);
    EXPECT_EQ(source->uses_io_uring(), io_uring());
    EXPECT_NE(source->describe().find(io_uring() ? "io_uring" : "pread"), std::string::npos) << source->describe();
    for (const std::uint64_t offset : {std::uint64_t{0}, std::uint64_t{1}, page_bytes - 1, page_bytes + 123}) {
        std::vector<std::byte> dst(700);
        auto read = read_small(*source, offset, dst);
        ASSERT_TRUE(read) << read.error().message();
        ASSERT_EQ(*read, dst.size()) << "offset " << offset;
        EXPECT_EQ(dst, pattern(offset, dst.size())) << "offset " << offset;
    }
    auto slot = read_slot(*source, 100, 2 * page_bytes);
    ASSERT_TRUE(slot) << slot.error().message();
    EXPECT_EQ(*slot, pattern(100, 2 * page_bytes));
}

TEST_P(FileSourceTest, ShortReadAtTheEndOfTheFile) {
    auto source = open(FileReadMode::buffered);
    std::vector<std::byte> dst(100);
    auto tail = read_small(*source, file_bytes - 10, dst);
    ASSERT_TRUE(tail) << tail.error().message();
    ASSERT_EQ(*tail, 10u);
    EXPECT_TRUE(std::equal(dst.begin(), dst.begin() + 10, pattern(file_bytes - 10, 10).begin()));
    for (const std::uint64_t offset : {file_bytes, file_bytes + page_bytes}) {
        auto past = read_small(*source, offset, dst);
        ASSERT_TRUE(past) << past.error().message();
        EXPECT_EQ(*past, 0u) << "offset " << offset;
    }
    auto slot = read_slot(*source, 3 * page_bytes, page_bytes);
    ASSERT_TRUE(slot) << slot.error().message();
    EXPECT_EQ(*slot, pattern(3 * page_bytes, 17));
}

TEST_P(FileSourceTest, DirectReadsAlignedAndServesMisalignedOnes) {
    auto source = open_direct();
    if (!source) {
        GTEST_SKIP() << "O_DIRECT refused by the file system under " << dir_.path();
    }
    EXPECT_EQ(source->alignment_bytes(), page_bytes);
    auto aligned = read_slot(*source, page_bytes, 2 * page_bytes);
    ASSERT_TRUE(aligned) << aligned.error().message();
    EXPECT_EQ(*aligned, pattern(page_bytes, 2 * page_bytes));
    // Offset and length off the alignment: read through the page cache instead, not refused.
    auto misaligned = read_slot(*source, page_bytes + 100, 1000);
    ASSERT_TRUE(misaligned) << misaligned.error().message();
    EXPECT_EQ(*misaligned, pattern(page_bytes + 100, 1000));
    // The last, short page through O_DIRECT: 17 bytes, then 0.
    auto last = read_slot(*source, 3 * page_bytes, page_bytes);
    ASSERT_TRUE(last) << last.error().message();
    EXPECT_EQ(*last, pattern(3 * page_bytes, 17));
    auto past = read_slot(*source, 4 * page_bytes, page_bytes);
    ASSERT_TRUE(past) << past.error().message();
    EXPECT_TRUE(past->empty());
}

TEST_P(FileSourceTest, PlanOffTheAlignmentSkipsTheLeadBytes) {
    auto source = open_direct();
    if (!source) {
        GTEST_SKIP() << "O_DIRECT refused by the file system under " << dir_.path();
    }
    // Ranges that start and end inside pages: the executor reads whole aligned windows and hands
    // the handler only the ranges' bytes.
    Plan plan;
    plan.ranges = {{100, 2 * page_bytes}, {2 * page_bytes + 500, 1000}, {3 * page_bytes + 3, 10}};
    auto ring = BufferRing::create(loop_, {.slot_count = 4, .slot_size_bytes = 2 * page_bytes}).value();
    ring->register_with_io_uring();
    WorkerPool pool(2);
    GatherHandler handler(file_bytes);
    auto stats = testing::run_to_completion(loop_, run_plan(*source, *ring, pool, plan, handler, {}));
    ASSERT_TRUE(stats) << stats.error().message();
    EXPECT_EQ(handler.delivered_, plan.total_bytes());
    const auto expected = pattern(0, file_bytes);
    for (const auto& range : plan.ranges) {
        for (std::uint64_t i = range.offset_bytes; i < range.end_bytes(); ++i) {
            ASSERT_EQ(handler.seen_[i], expected[i]) << "byte " << i;
        }
    }
}

TEST_P(FileSourceTest, BufferedOrDirectFollowsThePageCache) {
    EXPECT_EQ(open(FileReadMode::buffered)->describe().find("O_DIRECT"), std::string::npos);
    if (!open_direct()) {
        GTEST_SKIP() << "O_DIRECT refused by the file system under " << dir_.path();
    }
    // Just written: in the page cache, where buffered reads are faster.
    auto cached = open(FileReadMode::automatic);
    EXPECT_NE(cached->describe().find("buffered"), std::string::npos) << cached->describe();
    EXPECT_EQ(cached->alignment_bytes(), 1u);
    if (!evict_from_page_cache()) {
        GTEST_SKIP() << "the kernel kept the file's pages cached";
    }
    auto cold = open(FileReadMode::automatic);
    EXPECT_NE(cold->describe().find("O_DIRECT"), std::string::npos) << cold->describe();
    EXPECT_EQ(cold->alignment_bytes(), page_bytes);
}

// Buffered bulk reads on several pread threads (what a machine with cores to spare gets for a
// cached file) land the same bytes, reads in flight at once included.
TEST_P(FileSourceTest, BufferedReadsOnSeveralThreadsLandTheFilesBytes) {
    auto source =
        open_file_source(loop_, path_.string(),
                         {.mode = FileReadMode::buffered, .allow_io_uring = io_uring(), .buffered_read_threads = 3})
            .value();
    EXPECT_NE(source->describe().find("buffered pread x"), std::string::npos) << source->describe();
    for (std::uint64_t offset : {std::uint64_t{0}, std::uint64_t{4095}, std::uint64_t{3 * page_bytes + 7}}) {
        auto bytes = read_slot(*source, offset, 4 * page_bytes);
        ASSERT_TRUE(bytes) << bytes.error().message();
        EXPECT_EQ(*bytes, pattern(offset, bytes->size())) << "offset " << offset;
    }
    auto none = open_file_source(loop_, path_.string(),
                                 {.mode = FileReadMode::buffered, .allow_io_uring = true, .buffered_read_threads = 0})
                    .value();
    if (io_uring()) {
        EXPECT_EQ(none->describe(), "buffered io_uring");
    }
}

TEST_P(FileSourceTest, MissingFileErrorNamesThePath) {
    const fs::path missing = dir_.path() / "no-such-model.tensors";
    auto source = open(FileReadMode::automatic, missing);
    ASSERT_FALSE(source);
    EXPECT_EQ(source.error().code, errc::not_found);
    EXPECT_NE(source.error().detail.find(missing.string()), std::string::npos) << source.error().detail;
}

TEST_P(FileSourceTest, DirectoryIsNotARegularFile) {
    auto source = open(FileReadMode::automatic, dir_.path());
    ASSERT_FALSE(source);
    EXPECT_EQ(source.error().code, errc::invalid_argument);
    EXPECT_NE(source.error().detail.find(dir_.path().string()), std::string::npos) << source.error().detail;
}

INSTANTIATE_TEST_SUITE_P(Reads, FileSourceTest, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& info) { return info.param ? "IoUring" : "Pread"; });

// In a child process: io_uring_setup refused (EPERM, as Docker's default seccomp profile does),
// then `path` opened and read through a fresh loop. The exit status says how it went.
enum RefusedIoUring : int {
    read_right = 0,
    no_filter = 1,
    open_failed = 2,
    bytes_wrong = 3,
    used_io_uring = 4,
    threw = 5, // an exception out of open_file_source or the read
};

int read_where_io_uring_is_refused(const fs::path& path) {
    sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    sock_fprog program{static_cast<unsigned short>(std::size(filter)), filter};
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) != 0) {
        return no_filter;
    }
    boost::asio::io_context loop;
    auto source = open_file_source(loop, path.string(), {.mode = FileReadMode::buffered});
    if (!source) {
        return open_failed;
    }
    if ((*source)->uses_io_uring()) {
        return used_io_uring;
    }
    std::vector<std::byte> bytes(file_bytes);
    auto read = testing::run_to_completion(loop, (*source)->read_small_at(0, bytes));
    return read && *read == file_bytes && bytes == pattern(0, file_bytes) ? read_right : bytes_wrong;
}

// Where the kernel refuses a loop's io_uring after the process's probe said yes (ENOMEM with 64
// loads at once in the soak, tests/tools/soak.cpp, each loop with its 16384-entry ring; here a
// seccomp filter made after the probe), Asio's first file object threw out of open_file_source:
// std::terminate in a server. Now the file is read with pread.
TEST(FileSourceRefused, ReadsWithPreadWhereTheKernelRefusesTheLoopsIoUring) {
    if (!io_uring_available()) { // also keeps the probe's yes for the child
        GTEST_SKIP() << "io_uring blocked on this host";
    }
    testing::TempDir dir(fs::current_path());
    const auto path = testing::write_file(dir.path() / "pattern.bin", pattern(0, file_bytes));
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        int code = threw;
        try {
            code = read_where_io_uring_is_refused(path);
        } catch (...) {
        }
        ::_exit(code); // never back into the test runner
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status)) << "the child died of signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    EXPECT_EQ(WEXITSTATUS(status), read_right)
        << "1: no seccomp filter, 2: open failed, 3: wrong bytes, 4: io_uring used, 5: an exception";
}

} // namespace
} // namespace ringload
