// ringload-synth: writes a synthetic tensorizer checkpoint (CoreWeave
// tensorizer format, data version 1, unencrypted) for benchmarks and tests.
//
//   ringload-synth --shape gpt2-xl|llama3-8b|tiny [--dtype float16|float32] [--seed N] OUT
//
// The byte layout follows shared/docs/tensorizer-format.md (sections 2-7, 10
// and 13): a 65-byte fixed header plus u64 index_len, a 262144-byte metadata
// index, per-tensor records (header | data) back to back, and an 8-byte zero
// sentinel. Every tensor carries a CRC32 and a SHA-256 over H' || data, where
// H' is its header with the hash value bytes zeroed.
//
// Values are a pure function of (seed, tensor index, element index), so two
// runs with the same arguments give byte-identical files.
//
// Build:
//   g++ -std=c++20 -O2 -Wall -Wextra -o ringload-synth synthetic_checkpoint.cpp
//       ../bindings/cli/bench_shapes.cpp -lisal -lcrypto

#include "../bindings/cli/bench_shapes.hpp"

#include <isa-l/crc.h>
#include <openssl/evp.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

// Tensor data is stored in native order and the format is little-endian, so
// the generated element buffers can be written as they are only on such hosts.
static_assert(std::endian::native == std::endian::little,
              "ringload-synth writes native element bytes; needs a little-endian host");

namespace {

constexpr const char* kTool = "ringload-synth";

// Sizes fixed by the format (spec sections 3, 4, 5.1, 10).
constexpr uint64_t kFixedHeaderSize = 65 + 8; // fixed header + u64 index_len
constexpr uint64_t kIndexLen = 262144;        // tensorizer always reserves this
constexpr uint64_t kSentinelSize = 8;
constexpr uint32_t kDataVersion = 1;
constexpr uint8_t kTensorTypeStateDict = 2;
constexpr uint8_t kHashCrc32 = 0;
constexpr uint8_t kHashSha256 = 1;
constexpr uint8_t kCrc32Len = 4;
constexpr uint8_t kSha256Len = 32;
// hash_count byte + two (type, len, value) records; excludes its own u16.
constexpr uint16_t kHashSectionLen = 1 + (2 + kCrc32Len) + (2 + kSha256Len);

// Generated data moves through a per-worker buffer of this size, so memory
// stays small even for the 320 MB fp32 embedding and hashing stays in cache.
constexpr size_t kChunkBytes = 2u << 20;

// Weights are triangular on (-kWeightScale, kWeightScale): std ~0.02, the
// GPT-2 initializer's scale.
constexpr float kWeightScale = 0.05f;

// Any failure is reported as "ringload-synth: OUT: <what>" by main.
struct Failure {
    std::string what;
};

[[noreturn]] void fail_errno(const std::string& what) {
    throw Failure{what + ": " + std::strerror(errno)};
}

// ---------------------------------------------------------------------------
// Model description: the shape tables are shared with `ringload bench model`.

using ringload::bench::element_count;
using ringload::bench::Fill;
using ringload::bench::TensorSpec;

// ---------------------------------------------------------------------------
// Element formats

// float -> IEEE binary16 bits, round to nearest even, with subnormals,
// overflow to infinity, and NaNs kept NaN (quiet, top payload bits kept).
uint16_t float_to_half(float f) {
    const uint32_t x = std::bit_cast<uint32_t>(f);
    const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
    const uint32_t abs = x & 0x7FFFFFFF;

    if (abs >= 0x7F800000) { // inf or NaN
        const uint32_t nan_bits = abs > 0x7F800000 ? 0x200 | ((abs >> 13) & 0x3FF) : 0;
        return static_cast<uint16_t>(sign | 0x7C00 | nan_bits);
    }
    if (abs >= 0x477FF000) // >= 65520: rounds past the largest half (65504)
        return static_cast<uint16_t>(sign | 0x7C00);
    if (abs <= 0x33000000) // <= 2^-25: half of the smallest subnormal, ties to 0
        return sign;

    uint32_t mantissa;
    int shift;
    if (abs < 0x38800000) { // below 2^-14: becomes a half subnormal
        // value = m * 2^(e-150); in units of 2^-24 that is m >> (126 - e).
        mantissa = (abs & 0x7FFFFF) | 0x800000;
        shift = 126 - static_cast<int>(abs >> 23); // 14..25 here
    } else {
        // Rebias the exponent (127 -> 15). A rounding carry out of the
        // mantissa bumps the exponent, which is correct; the overflow check
        // above keeps it from reaching infinity.
        mantissa = abs - 0x38000000;
        shift = 13;
    }
    const uint32_t h = mantissa >> shift;
    const uint32_t rem = mantissa & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    // Branch-free on purpose: for random data this test is a coin flip, and
    // the mispredicted branch nearly doubled the gpt2-xl run time.
    const uint32_t round_up = (rem > halfway) | ((rem == halfway) & h);
    return static_cast<uint16_t>(sign | (h + round_up));
}

struct Float16 {
    using Bits = uint16_t;
    static constexpr const char* kDtype = "<f2"; // numpy dtype.str
    static constexpr Bits kOne = 0x3C00;
    static Bits encode(float f) { return float_to_half(f); }
};

struct Float32 {
    using Bits = uint32_t;
    static constexpr const char* kDtype = "<f4";
    static constexpr Bits kOne = 0x3F800000;
    static Bits encode(float f) { return std::bit_cast<uint32_t>(f); }
};

enum class DType { Float16, Float32 };

const char* dtype_string(DType d) {
    return d == DType::Float16 ? Float16::kDtype : Float32::kDtype;
}

uint64_t item_size(DType d) {
    return d == DType::Float16 ? sizeof(Float16::Bits) : sizeof(Float32::Bits);
}

// ---------------------------------------------------------------------------
// Deterministic values

uint64_t splitmix64(uint64_t& state) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// xoshiro256** with its state expanded by splitmix64, as its authors advise.
// Each tensor gets its own stream so tensors can be generated in parallel
// and in any order without changing the output.
class Xoshiro256 {
public:
    Xoshiro256(uint64_t seed, uint64_t stream) {
        uint64_t sm = seed ^ (0xD1B54A32D192ED03ull * (stream + 1));
        for (uint64_t& word : s_)
            word = splitmix64(sm);
    }

    uint64_t next() {
        const uint64_t result = std::rotl(s_[1] * 5, 7) * 9;
        const uint64_t t = s_[1] << 17;
        s_[2] ^= s_[0];
        s_[3] ^= s_[1];
        s_[1] ^= s_[2];
        s_[0] ^= s_[3];
        s_[2] ^= t;
        s_[3] = std::rotl(s_[3], 45);
        return result;
    }

private:
    uint64_t s_[4];
};

// Sum of two 16-bit uniforms: a symmetric triangular value, cheap and more
// weight-like than a flat uniform. Exactly representable as a float.
float weight_from_word(uint32_t w) {
    const int32_t sum = static_cast<int32_t>(w & 0xFFFF) + static_cast<int32_t>(w >> 16) - 0xFFFF;
    return static_cast<float>(sum) * (kWeightScale / 65536.0f);
}

// Element 2k takes the low and element 2k+1 the high 32 bits of draw k.
// Callers pass even counts except for a tensor's final chunk, so chunking
// does not change the values.
template <typename Format>
void fill_random(typename Format::Bits* out, size_t n, Xoshiro256& rng) {
    size_t i = 0;
    for (; i + 1 < n; i += 2) {
        const uint64_t r = rng.next();
        out[i] = Format::encode(weight_from_word(static_cast<uint32_t>(r)));
        out[i + 1] = Format::encode(weight_from_word(static_cast<uint32_t>(r >> 32)));
    }
    if (i < n)
        out[i] = Format::encode(weight_from_word(static_cast<uint32_t>(rng.next())));
}

// ---------------------------------------------------------------------------
// Layout

class ByteWriter {
public:
    explicit ByteWriter(std::vector<uint8_t>& out) : out_(out) {}

    template <typename T>
    void put(T value) {
        static_assert(std::is_unsigned_v<T>);
        for (size_t i = 0; i < sizeof(T); ++i)
            out_.push_back(static_cast<uint8_t>(value >> (8 * i)));
    }

    void put_bytes(std::string_view bytes) { out_.insert(out_.end(), bytes.begin(), bytes.end()); }
    void put_zeros(size_t n) { out_.insert(out_.end(), n, 0); }
    size_t size() const { return out_.size(); }

private:
    std::vector<uint8_t>& out_;
};

void store_u64_le(uint8_t* p, uint64_t v) {
    for (int i = 0; i < 8; ++i)
        p[i] = static_cast<uint8_t>(v >> (8 * i));
}

struct Record {
    const TensorSpec* spec;
    std::vector<uint8_t> header; // H' (hash values zero) until hashed
    size_t crc_pos = 0;          // offsets of the hash values in header
    size_t sha_pos = 0;
    uint64_t header_offset = 0;
    uint64_t data_offset = 0;
    uint64_t data_length = 0;
};

struct Plan {
    std::vector<Record> records;
    std::vector<uint8_t> prefix; // fixed header, index_len and the full index
    uint64_t data_bytes = 0;     // sum of data lengths (header tensor_size)
    uint64_t sentinel_offset = 0;
    uint64_t file_size = 0;
};

void check_limits(const TensorSpec& t, const char* dtype) {
    // The format's length fields are u16 (name), u8 (dtype, ndim).
    if (t.name.size() > 0xFFFF || std::strlen(dtype) > 0xFF || t.dims.size() > 0xFF)
        throw Failure{"tensor " + t.name + " does not fit the format's length fields"};
}

// Per-tensor header (spec 5.1), with the hash values left zero: this is H'.
void build_header(Record& r, DType dtype) {
    const TensorSpec& t = *r.spec;
    const char* dt = dtype_string(dtype);
    check_limits(t, dt);

    ByteWriter w(r.header);
    w.put<uint64_t>(0); // header_size, patched below
    w.put<uint16_t>(0); // module_idx: write_state_dict always writes 0
    w.put<uint8_t>(kTensorTypeStateDict);
    w.put(static_cast<uint16_t>(t.name.size()));
    w.put_bytes(t.name);
    w.put(static_cast<uint8_t>(std::strlen(dt)));
    w.put_bytes(dt);
    w.put(static_cast<uint8_t>(t.dims.size()));
    for (uint32_t d : t.dims)
        w.put(d);
    w.put(kHashSectionLen);
    w.put<uint8_t>(2); // hash_count
    w.put(kHashCrc32);
    w.put(kCrc32Len);
    r.crc_pos = w.size();
    w.put_zeros(kCrc32Len);
    w.put(kHashSha256);
    w.put(kSha256Len);
    r.sha_pos = w.size();
    w.put_zeros(kSha256Len);
    w.put(r.data_length); // i64 in the header; always >= 0 here
    store_u64_le(r.header.data(), r.header.size());
}

// Index entry (spec 4): same name/type/dtype/shape as the header, plus offsets.
void append_index_entry(ByteWriter& w, const Record& r, DType dtype) {
    const TensorSpec& t = *r.spec;
    const char* dt = dtype_string(dtype);
    w.put(static_cast<uint16_t>(t.name.size()));
    w.put_bytes(t.name);
    w.put<uint8_t>(kTensorTypeStateDict);
    w.put(static_cast<uint8_t>(std::strlen(dt)));
    w.put_bytes(dt);
    w.put(static_cast<uint8_t>(t.dims.size()));
    for (uint32_t d : t.dims)
        w.put(d);
    w.put(r.header_offset);
    w.put(r.data_offset);
    w.put(r.data_length);
}

void build_prefix(Plan& plan, DType dtype) {
    ByteWriter w(plan.prefix);
    w.put_bytes("|TZR|");
    w.put(kDataVersion);
    w.put_zeros(32);        // feature_flags: must be zero below data version 4
    w.put(plan.data_bytes); // tensor_size
    w.put<uint64_t>(0);     // unused
    w.put(static_cast<uint64_t>(plan.records.size()));
    w.put(kIndexLen);
    for (const Record& r : plan.records)
        append_index_entry(w, r, dtype);
    if (w.size() > kFixedHeaderSize + kIndexLen)
        throw Failure{"metadata index overflows " + std::to_string(kIndexLen) + " bytes"};
    w.put_zeros(kFixedHeaderSize + kIndexLen - w.size());
}

// Every offset is known before any data is generated, so records can be
// written independently and in parallel with pwrite.
Plan make_plan(const std::vector<TensorSpec>& tensors, DType dtype) {
    Plan plan;
    plan.records.reserve(tensors.size());
    uint64_t offset = kFixedHeaderSize + kIndexLen;
    for (const TensorSpec& t : tensors) {
        Record r;
        r.spec = &t;
        r.data_length = element_count(t) * item_size(dtype);
        build_header(r, dtype);
        r.header_offset = offset;
        r.data_offset = offset + r.header.size();
        offset = r.data_offset + r.data_length;
        plan.data_bytes += r.data_length;
        plan.records.push_back(std::move(r));
    }
    plan.sentinel_offset = offset;
    plan.file_size = offset + kSentinelSize;
    build_prefix(plan, dtype);
    return plan;
}

// ---------------------------------------------------------------------------
// Output file

void pwrite_all(int fd, const void* data, size_t len, uint64_t offset) {
    const auto* p = static_cast<const uint8_t*>(data);
    while (len > 0) {
        const ssize_t n = ::pwrite(fd, p, len, static_cast<off_t>(offset));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            fail_errno("write at offset " + std::to_string(offset));
        }
        p += n;
        len -= static_cast<size_t>(n);
        offset += static_cast<uint64_t>(n);
    }
}

// A file at OUT.tmp.<pid> that is removed unless commit() renamed it onto
// OUT, so a failed or interrupted run never leaves a half-written OUT.
class TempFile {
public:
    explicit TempFile(std::string final_path)
        : final_path_(std::move(final_path)), temp_path_(final_path_ + ".tmp." + std::to_string(::getpid())) {
        fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd_ < 0)
            fail_errno("create " + temp_path_);
    }

    TempFile(const TempFile&) = delete;
    TempFile& operator=(const TempFile&) = delete;

    ~TempFile() {
        if (fd_ >= 0)
            ::close(fd_);
        if (!committed_)
            ::unlink(temp_path_.c_str());
    }

    int fd() const { return fd_; }

    // Reserving the space first makes a full disk fail in milliseconds
    // instead of after minutes of generation.
    void reserve(uint64_t size) {
        const int rc = ::posix_fallocate(fd_, 0, static_cast<off_t>(size));
        if (rc != 0 && rc != EOPNOTSUPP && rc != EINVAL) {
            errno = rc;
            fail_errno("reserve " + std::to_string(size) + " bytes");
        }
    }

    void commit() {
        if (::fsync(fd_) != 0)
            fail_errno("fsync");
        const int fd = fd_;
        fd_ = -1;
        if (::close(fd) != 0)
            fail_errno("close");
        if (::rename(temp_path_.c_str(), final_path_.c_str()) != 0)
            fail_errno("rename " + temp_path_);
        committed_ = true;
    }

private:
    std::string final_path_;
    std::string temp_path_;
    int fd_ = -1;
    bool committed_ = false;
};

// ---------------------------------------------------------------------------
// Hashing and writing records

struct EvpCtxDeleter {
    void operator()(EVP_MD_CTX* ctx) const { EVP_MD_CTX_free(ctx); }
};
using EvpCtx = std::unique_ptr<EVP_MD_CTX, EvpCtxDeleter>;

// CRC32 (zlib) and SHA-256 over the same byte stream.
class RecordHasher {
public:
    RecordHasher() : sha_(EVP_MD_CTX_new()) {
        if (!sha_)
            throw Failure{"EVP_MD_CTX_new failed"};
    }

    void reset() {
        crc_ = 0;
        if (EVP_DigestInit_ex(sha_.get(), EVP_sha256(), nullptr) != 1)
            throw Failure{"SHA-256 init failed"};
    }

    void update(const void* data, size_t len) {
        const auto* p = static_cast<const unsigned char*>(data);
        crc_ = crc32_gzip_refl(crc_, p, len);
        if (EVP_DigestUpdate(sha_.get(), p, len) != 1)
            throw Failure{"SHA-256 update failed"};
    }

    // Writes the CRC32 (u32 LE) and the SHA-256 digest into their slots.
    void finish(uint8_t* crc_slot, uint8_t* sha_slot) {
        for (int i = 0; i < 4; ++i)
            crc_slot[i] = static_cast<uint8_t>(crc_ >> (8 * i));
        unsigned int len = 0;
        if (EVP_DigestFinal_ex(sha_.get(), sha_slot, &len) != 1 || len != kSha256Len)
            throw Failure{"SHA-256 final failed"};
    }

private:
    uint32_t crc_ = 0;
    EvpCtx sha_;
};

template <typename Format>
void fill_chunk(typename Format::Bits* out, size_t n, Fill fill, Xoshiro256& rng) {
    switch (fill) {
        case Fill::random:
            fill_random<Format>(out, n, rng);
            break;
        case Fill::ones:
            std::fill_n(out, n, Format::kOne);
            break;
        case Fill::zeros:
            std::fill_n(out, n, typename Format::Bits{0});
            break;
    }
}

// Generates, hashes and writes one record. The header goes last because its
// hash values depend on the data.
template <typename Format>
void write_record(int fd, Record& r, uint64_t seed, uint64_t stream, std::vector<typename Format::Bits>& buffer,
                  RecordHasher& hasher) {
    using Bits = typename Format::Bits;
    hasher.reset();
    hasher.update(r.header.data(), r.header.size());

    Xoshiro256 rng(seed, stream);
    const uint64_t total = element_count(*r.spec);
    for (uint64_t done = 0; done < total;) {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(buffer.size(), total - done));
        fill_chunk<Format>(buffer.data(), n, r.spec->fill, rng);
        hasher.update(buffer.data(), n * sizeof(Bits));
        pwrite_all(fd, buffer.data(), n * sizeof(Bits), r.data_offset + done * sizeof(Bits));
        done += n;
    }

    hasher.finish(r.header.data() + r.crc_pos, r.header.data() + r.sha_pos);
    pwrite_all(fd, r.header.data(), r.header.size(), r.header_offset);
}

// Workers take records from a shared counter; the first failure stops the
// rest and is rethrown on the calling thread.
template <typename Format>
void write_records(int fd, Plan& plan, uint64_t seed) {
    const size_t count = plan.records.size();
    const size_t jobs = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, std::max<size_t>(count, 1));
    std::atomic<size_t> next{0};
    std::atomic<bool> stop{false};
    std::mutex error_mutex;
    std::optional<Failure> error;

    auto worker = [&] {
        try {
            // An even element count keeps random pairs aligned across chunks.
            std::vector<typename Format::Bits> buffer(kChunkBytes / sizeof(typename Format::Bits));
            RecordHasher hasher;
            while (!stop) {
                const size_t i = next++;
                if (i >= count)
                    break;
                write_record<Format>(fd, plan.records[i], seed, i, buffer, hasher);
            }
        } catch (const Failure& f) {
            std::lock_guard lock(error_mutex);
            if (!error)
                error = f;
            stop = true;
        } catch (const std::exception& e) {
            std::lock_guard lock(error_mutex);
            if (!error)
                error = Failure{e.what()};
            stop = true;
        }
    };

    std::vector<std::thread> threads;
    for (size_t j = 1; j < jobs; ++j)
        threads.emplace_back(worker);
    worker();
    for (std::thread& t : threads)
        t.join();
    if (error)
        throw *error;
}

void write_checkpoint(const std::string& out, const std::vector<TensorSpec>& tensors, DType dtype, uint64_t seed,
                      Plan& plan) {
    plan = make_plan(tensors, dtype);
    TempFile file(out);
    file.reserve(plan.file_size);
    pwrite_all(file.fd(), plan.prefix.data(), plan.prefix.size(), 0);
    if (dtype == DType::Float16)
        write_records<Float16>(file.fd(), plan, seed);
    else
        write_records<Float32>(file.fd(), plan, seed);
    const uint8_t sentinel[kSentinelSize] = {};
    pwrite_all(file.fd(), sentinel, sizeof sentinel, plan.sentinel_offset);
    file.commit();
}

// ---------------------------------------------------------------------------
// Command line

struct Options {
    std::string shape;
    DType dtype = DType::Float16;
    uint64_t seed = 0;
    std::string out;
    bool help = false;
};

void print_usage(std::FILE* to) {
    std::fprintf(to, "usage: %s --shape gpt2-xl|llama3-8b|tiny [--dtype float16|float32] [--seed N] OUT\n", kTool);
}

std::optional<uint64_t> parse_u64(std::string_view s) {
    uint64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || end != s.data() + s.size() || s.empty())
        return std::nullopt;
    return v;
}

bool usage_error(const char* what, std::string_view value) {
    std::fprintf(stderr, "%s: %s '%.*s'\n", kTool, what, static_cast<int>(value.size()), value.data());
    return false;
}

// Returns false (after saying why) on a usage error.
bool apply_option(Options& o, std::string_view key, std::string_view value) {
    if (key == "--shape") {
        if (ringload::bench::model_tensors(value).empty())
            return usage_error("unknown shape", value);
        o.shape = value;
    } else if (key == "--dtype") {
        if (value == "float16")
            o.dtype = DType::Float16;
        else if (value == "float32")
            o.dtype = DType::Float32;
        else
            return usage_error("unknown dtype", value);
    } else if (key == "--seed") {
        const auto seed = parse_u64(value);
        if (!seed)
            return usage_error("bad seed", value);
        o.seed = *seed;
    } else {
        return usage_error("unknown option", key);
    }
    return true;
}

// Accepts "--key value" and "--key=value". Returns nullopt on a usage error.
std::optional<Options> parse_args(int argc, char** argv) {
    Options o;
    bool have_out = false;
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "-h" || arg == "--help") {
            o.help = true;
            return o;
        }
        if (arg.size() > 1 && arg[0] == '-') {
            const size_t eq = arg.find('=');
            std::string_view key = arg.substr(0, eq);
            std::string_view value;
            if (eq != std::string_view::npos) {
                value = arg.substr(eq + 1);
            } else if (i + 1 < argc) {
                value = argv[++i];
            } else {
                std::fprintf(stderr, "%s: %s needs a value\n", kTool, argv[i]);
                return std::nullopt;
            }
            if (!apply_option(o, key, value))
                return std::nullopt;
        } else if (!have_out) {
            o.out = arg;
            have_out = true;
        } else {
            std::fprintf(stderr, "%s: more than one output path\n", kTool);
            return std::nullopt;
        }
    }
    if (o.shape.empty() || !have_out) {
        std::fprintf(stderr, "%s: --shape and OUT are required\n", kTool);
        return std::nullopt;
    }
    return o;
}

int run(const Options& o) {
    const auto start = std::chrono::steady_clock::now();
    const std::vector<TensorSpec> tensors = ringload::bench::model_tensors(o.shape);
    Plan plan;
    write_checkpoint(o.out, tensors, o.dtype, o.seed, plan);
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    std::printf("%s: %zu tensors, %llu bytes (%llu data), %.2f s\n", o.out.c_str(), plan.records.size(),
                static_cast<unsigned long long>(plan.file_size), static_cast<unsigned long long>(plan.data_bytes),
                elapsed.count());
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    const std::optional<Options> options = parse_args(argc, argv);
    if (!options) {
        print_usage(stderr);
        return 2;
    }
    if (options->help) {
        print_usage(stdout);
        return 0;
    }
    try {
        return run(*options);
    } catch (const Failure& f) {
        std::fprintf(stderr, "%s: %s: %s\n", kTool, options->out.c_str(), f.what.c_str());
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: %s: %s\n", kTool, options->out.c_str(), e.what());
    }
    return 1;
}
