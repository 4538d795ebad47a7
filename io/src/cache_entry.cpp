// io/src/cache_entry.cpp
#include "cache_entry.hpp"

#include "ringload/engine/hashes.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace ringload::object_cache {
namespace {

namespace fs = std::filesystem;

constexpr char map_magic[8] = {'R', 'L', 'C', 'M', 'A', 'P', '0', '1'};

std::string errno_text() {
    return std::strerror(errno);
}

Error io_failure(const std::string& what) {
    return fail(errc::io_error, what + ": " + errno_text());
}

// ---- A map file: magic, block size, object size, URI, version, runs of blocks with their CRCs,
// and the CRC32 of all that (a torn or flipped map is ignored, never half-trusted). ----

void put_u32(std::string& out, std::uint32_t value) {
    out.append(reinterpret_cast<const char*>(&value), sizeof value);
}
void put_u64(std::string& out, std::uint64_t value) {
    out.append(reinterpret_cast<const char*>(&value), sizeof value);
}
void put_text(std::string& out, const std::string& text) {
    put_u32(out, static_cast<std::uint32_t>(text.size()));
    out += text;
}

std::uint32_t crc_of(std::string_view bytes) {
    return block_crc(std::as_bytes(std::span(bytes.data(), bytes.size())));
}

std::string encode_map(const std::string& uri, const std::string& version, std::uint64_t size_bytes,
                       std::span<const FilledBlock> filled) {
    std::string out(map_magic, sizeof map_magic);
    put_u32(out, static_cast<std::uint32_t>(block_bytes));
    put_u64(out, size_bytes);
    put_text(out, uri);
    put_text(out, version);
    put_u64(out, filled.size());
    for (const FilledBlock& each : filled) {
        put_u64(out, each.block);
        put_u32(out, each.crc);
    }
    put_u32(out, crc_of(out));
    return out;
}

// Reads what encode_map wrote; nullopt for anything else.
class MapReader {
public:
    explicit MapReader(std::string_view bytes) : bytes_(bytes) {}
    bool take(void* out, std::size_t count) {
        if (bytes_.size() - at_ < count) {
            return false;
        }
        std::memcpy(out, bytes_.data() + at_, count);
        at_ += count;
        return true;
    }
    bool take_text(std::string& out) {
        std::uint32_t length = 0;
        if (!take(&length, sizeof length) || bytes_.size() - at_ < length) {
            return false;
        }
        out.assign(bytes_.substr(at_, length));
        at_ += length;
        return true;
    }

private:
    std::string_view bytes_;
    std::size_t at_ = 0;
};

struct DecodedMap {
    std::string uri;
    std::string version;
    std::uint64_t size_bytes = 0;
    std::vector<FilledBlock> blocks;
};

std::optional<DecodedMap> decode_map(std::string_view bytes) {
    if (bytes.size() < sizeof map_magic + 4 || std::memcmp(bytes.data(), map_magic, sizeof map_magic) != 0) {
        return std::nullopt;
    }
    std::uint32_t stored_crc = 0;
    std::memcpy(&stored_crc, bytes.data() + bytes.size() - 4, 4);
    const std::string_view body = bytes.substr(0, bytes.size() - 4);
    if (crc_of(body) != stored_crc) {
        return std::nullopt;
    }
    MapReader reader(body.substr(sizeof map_magic));
    DecodedMap map;
    std::uint32_t block_size = 0;
    std::uint64_t count = 0;
    if (!reader.take(&block_size, 4) || block_size != block_bytes || !reader.take(&map.size_bytes, 8) ||
        !reader.take_text(map.uri) || !reader.take_text(map.version) || !reader.take(&count, 8)) {
        return std::nullopt;
    }
    const std::uint64_t blocks_in_object = (map.size_bytes + block_bytes - 1) / block_bytes;
    if (count > body.size() / 12) {
        return std::nullopt; // more than the bytes could hold
    }
    map.blocks.resize(count);
    for (FilledBlock& each : map.blocks) {
        if (!reader.take(&each.block, 8) || !reader.take(&each.crc, 4) || each.block >= blocks_in_object) {
            return std::nullopt;
        }
    }
    return map;
}

Result<std::string> read_whole(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return io_failure(path);
    }
    std::string bytes;
    char buffer[1 << 16];
    for (;;) {
        const ssize_t got = ::read(fd, buffer, sizeof buffer);
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got <= 0) {
            const bool failed = got < 0;
            ::close(fd);
            if (failed) {
                return io_failure(path);
            }
            return bytes;
        }
        bytes.append(buffer, static_cast<std::size_t>(got));
    }
}

Result<void> write_all(int fd, std::string_view bytes, const std::string& path) {
    while (!bytes.empty()) {
        const ssize_t put = ::write(fd, bytes.data(), bytes.size());
        if (put < 0 && errno == EINTR) {
            continue;
        }
        if (put <= 0) {
            return io_failure("writing " + path);
        }
        bytes.remove_prefix(static_cast<std::size_t>(put));
    }
    return {};
}

Result<void> fsync_directory(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        return io_failure(path);
    }
    const int synced = ::fsync(fd);
    ::close(fd);
    return synced == 0 ? Result<void>() : io_failure("fsync " + path);
}

bool is_entry_name(const std::string& name) {
    return name.size() == 32 && std::all_of(name.begin(), name.end(),
                                            [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// Whether `fd` (a lock file) is still the one at `path`: an eviction may have removed the entry
// between our open and our lock.
bool still_linked(int fd, const std::string& path) {
    struct stat held {};
    struct stat named {};
    return ::fstat(fd, &held) == 0 && ::stat(path.c_str(), &named) == 0 && held.st_ino == named.st_ino &&
           held.st_dev == named.st_dev;
}

void remove_entry_files(const std::string& path) {
    std::error_code ignored;
    for (const auto& file : fs::directory_iterator(path, ignored)) {
        fs::remove(file.path(), ignored);
    }
    fs::remove(path, ignored);
}

} // namespace

std::uint32_t block_crc(std::span<const std::byte> bytes) {
    Crc32 crc;
    crc.update(bytes);
    return crc.value();
}

void warn(const std::string& text) {
    std::fprintf(stderr, "ringload: cache: %s\n", text.c_str());
}

Result<std::unique_ptr<CacheEntry>> CacheEntry::open(const std::string& dir, const std::string& uri) {
    std::unique_ptr<CacheEntry> entry(new CacheEntry());
    const Sha256Digest key = sha256(std::as_bytes(std::span(uri)));
    entry->path_ = dir + "/" + to_hex(std::span(key).first(16));
    entry->uri_ = uri;
    RL_TRY_VOID(entry->lock_shared());
    RL_TRY_VOID(entry->read_maps());
    if (!entry->version_.empty()) {
        RL_TRY_VOID(entry->open_data(false));
    }
    return entry;
}

CacheEntry::~CacheEntry() {
    if (data_fd_ >= 0) {
        ::close(data_fd_);
    }
    if (lock_fd_ >= 0) {
        ::close(lock_fd_); // the flock and the OFD claims end with it
    }
}

Result<void> CacheEntry::lock_shared() {
    const std::string lock_path = path_ + "/lock";
    for (int attempt = 0; attempt < 8; ++attempt) {
        std::error_code made;
        fs::create_directories(path_, made);
        if (made) {
            return fail(errc::io_error, path_ + ": cannot create the cache entry: " + made.message());
        }
        const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) {
            if (errno == ENOENT) {
                continue; // evicted between the mkdir and the open
            }
            return io_failure(lock_path);
        }
        if (::flock(fd, LOCK_SH) != 0) {
            ::close(fd);
            return io_failure("flock " + lock_path);
        }
        if (!still_linked(fd, lock_path)) {
            ::close(fd);
            continue;
        }
        lock_fd_ = fd;
        ::futimens(fd, nullptr); // last used: now
        return {};
    }
    return fail(errc::io_error, path_ + ": the cache entry kept being evicted while it was opened");
}

Result<void> CacheEntry::read_maps() {
    std::error_code listing;
    for (const auto& file : fs::directory_iterator(path_, listing)) {
        const std::string name = file.path().filename().string();
        if (!name.starts_with("map-")) {
            continue;
        }
        auto bytes = read_whole(file.path().string());
        if (!bytes) {
            continue; // removed meanwhile (an entry reset)
        }
        std::optional<DecodedMap> map = decode_map(*bytes);
        if (!map || map->uri != uri_ ||
            (!version_.empty() && (map->version != version_ || map->size_bytes != size_bytes_))) {
            stale_maps_.push_back(file.path().string()); // torn, another URI's, or another version's
            continue;
        }
        if (version_.empty()) {
            version_ = map->version;
            size_bytes_ = map->size_bytes;
            const std::uint64_t blocks = (size_bytes_ + block_bytes - 1) / block_bytes;
            crcs_.assign(blocks, 0);
            present_.assign(blocks, 0);
        }
        map_files_.push_back(file.path().string());
        for (const FilledBlock& each : map->blocks) {
            if (present_[each.block] == 0) {
                present_[each.block] = 1;
                crcs_[each.block] = each.crc;
                ++held_blocks_;
            } else if (crcs_[each.block] != each.crc) {
                forget(each.block); // two maps disagree: trust neither
            }
        }
    }
    if (listing) {
        return fail(errc::io_error, path_ + ": cannot list the cache entry: " + listing.message());
    }
    return {};
}

Result<void> CacheEntry::open_data(bool create) {
    const std::string path = data_path();
    const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0644);
    if (fd < 0) {
        if (!create && errno == ENOENT) {
            clear_blocks(); // maps without data: nothing is held
            return {};
        }
        return io_failure(path);
    }
    struct stat info {};
    if (::fstat(fd, &info) != 0 || (static_cast<std::uint64_t>(info.st_size) != size_bytes_ &&
                                    ::ftruncate(fd, static_cast<off_t>(size_bytes_)) != 0)) {
        const Error error = io_failure("sizing " + path);
        ::close(fd);
        return error;
    }
    data_fd_ = fd;
    return {};
}

void CacheEntry::clear_blocks() {
    std::fill(present_.begin(), present_.end(), 0);
    held_blocks_ = 0;
}

void CacheEntry::forget(std::uint64_t block) {
    if (holds(block)) {
        present_[block] = 0;
        --held_blocks_;
    }
    const char unmarked = 0; // filled again by whoever claims it next
    (void)::pwrite(lock_fd_, &unmarked, 1, static_cast<off_t>(block));
}

std::uint64_t CacheEntry::held_bytes() const {
    std::uint64_t bytes = held_blocks_ * block_bytes;
    if (!present_.empty() && present_.back() != 0 && size_bytes_ % block_bytes != 0) {
        bytes -= block_bytes - size_bytes_ % block_bytes;
    }
    return bytes;
}

Result<bool> CacheEntry::adopt(const std::string& version, std::uint64_t size_bytes) {
    if (version_ == version && size_bytes_ == size_bytes && data_fd_ >= 0) {
        return true;
    }
    // An entry of another version (or with maps nobody can read) starts afresh, when no other
    // load uses it: maps, data and the lock file's marks go. A new entry is not reset: loads
    // that open it together fill it together (a reset would pull the data file from under
    // another's fill, in the instant flock's downgrade leaves the entry unlocked).
    if (!version_.empty() || !stale_maps_.empty()) {
        if (::flock(lock_fd_, LOCK_EX | LOCK_NB) == 0) {
            for (const std::vector<std::string>* maps : {&map_files_, &stale_maps_}) {
                for (const std::string& map : *maps) {
                    ::unlink(map.c_str());
                }
            }
            ::unlink(data_path().c_str());
            (void)::ftruncate(lock_fd_, 0);
            ::flock(lock_fd_, LOCK_SH);
        } else if (!version_.empty()) {
            return false; // another load reads the old version's entry
        }
    } else if (::flock(lock_fd_, LOCK_EX | LOCK_NB) == 0) {
        (void)::ftruncate(lock_fd_, 0); // marks no map backs (maps removed by hand) would stop fills
        ::flock(lock_fd_, LOCK_SH);
    }
    map_files_.clear();
    stale_maps_.clear();
    if (data_fd_ >= 0) {
        ::close(data_fd_);
        data_fd_ = -1;
    }
    version_ = version;
    size_bytes_ = size_bytes;
    const std::uint64_t blocks = (size_bytes + block_bytes - 1) / block_bytes;
    crcs_.assign(blocks, 0);
    present_.assign(blocks, 0);
    held_blocks_ = 0;
    RL_TRY_VOID(open_data(true));
    return true;
}

bool CacheEntry::claim(std::uint64_t first, std::uint64_t last) {
    struct flock range {};
    range.l_type = F_WRLCK;
    range.l_whence = SEEK_SET;
    range.l_start = static_cast<off_t>(first);
    range.l_len = static_cast<off_t>(last - first + 1);
    return ::fcntl(lock_fd_, F_OFD_SETLK, &range) == 0;
}

std::vector<bool> CacheEntry::committed_since_open(std::uint64_t first, std::uint64_t last) const {
    std::vector<char> marks(static_cast<std::size_t>(last - first + 1), 0);
    (void)::pread(lock_fd_, marks.data(), marks.size(), static_cast<off_t>(first)); // past its end: 0s
    std::vector<bool> committed(marks.size());
    for (std::size_t i = 0; i < marks.size(); ++i) {
        committed[i] = marks[i] != 0;
    }
    return committed;
}

void CacheEntry::mark_committed(std::span<const FilledBlock> filled) {
    const char mark = 1;
    for (const FilledBlock& each : filled) {
        (void)::pwrite(lock_fd_, &mark, 1, static_cast<off_t>(each.block)); // a hint: the maps are the truth
    }
}

Result<void> CacheEntry::commit(std::span<const FilledBlock> filled) {
    if (filled.empty()) {
        return {};
    }
    if (::fdatasync(data_fd_) != 0) {
        return io_failure("fdatasync " + data_path());
    }
    static std::atomic<std::uint64_t> counter{0};
    const std::string name = "map-" + std::to_string(::getpid()) + "-" +
                             std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) + "-" +
                             std::to_string(counter++);
    const std::string temporary = path_ + "/." + name + ".tmp";
    const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        return io_failure(temporary);
    }
    auto written = write_all(fd, encode_map(uri_, version_, size_bytes_, filled), temporary);
    if (written && ::fsync(fd) != 0) {
        written = io_failure("fsync " + temporary);
    }
    ::close(fd);
    if (written && ::rename(temporary.c_str(), (path_ + "/" + name).c_str()) != 0) {
        written = io_failure("rename " + temporary);
    }
    if (!written) {
        ::unlink(temporary.c_str());
        return written;
    }
    RL_TRY_VOID(fsync_directory(path_));
    mark_committed(filled);
    return {};
}

bool make_room(const std::string& dir, const std::string& keep, std::uint64_t need_bytes, std::uint64_t max_bytes) {
    if (max_bytes == 0) {
        return true;
    }
    struct Held {
        std::string path;
        std::uint64_t bytes = 0;
        std::int64_t used_ns = 0;
    };
    std::vector<Held> entries;
    std::uint64_t total = 0;
    std::error_code listing;
    for (const auto& each : fs::directory_iterator(dir, listing)) {
        const std::string path = each.path().string();
        if (!is_entry_name(each.path().filename().string())) {
            continue;
        }
        struct stat data {};
        struct stat lock {};
        Held held{path};
        if (::stat((path + "/data").c_str(), &data) == 0) {
            held.bytes = static_cast<std::uint64_t>(data.st_blocks) * 512;
        }
        if (::stat((path + "/lock").c_str(), &lock) == 0) {
            held.used_ns = lock.st_mtim.tv_sec * 1'000'000'000LL + lock.st_mtim.tv_nsec;
        }
        total += held.bytes;
        entries.push_back(std::move(held));
    }
    std::sort(entries.begin(), entries.end(), [](const Held& a, const Held& b) { return a.used_ns < b.used_ns; });
    for (const Held& entry : entries) {
        if (total + need_bytes <= max_bytes) {
            break;
        }
        if (entry.path == keep) {
            continue;
        }
        const std::string lock_path = entry.path + "/lock";
        const int fd = ::open(lock_path.c_str(), O_RDWR | O_CLOEXEC);
        if (fd < 0) {
            continue;
        }
        if (::flock(fd, LOCK_EX | LOCK_NB) == 0 && still_linked(fd, lock_path)) {
            remove_entry_files(entry.path); // the lock file goes too: a later open makes a new one
            total -= std::min(total, entry.bytes);
        }
        ::close(fd);
    }
    return total + need_bytes <= max_bytes;
}

} // namespace ringload::object_cache
