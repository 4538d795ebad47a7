// bindings/cli/bench_model.cpp
//
// `ringload bench model --shape gpt2-xl|llama3-8b|llama-1b|tiny [--dtype T] [--to FORMAT] OUT`: writes a
// synthetic checkpoint with a real model's tensor names and shapes (bench_shapes.hpp), in any
// of the three formats, through the same writers as `convert`.
//
// Values: every "random" tensor is a prefix of one block of random finite values in
// (-2^-3, 2^-3), as large as the largest tensor, so a 16 GB llama3-8b needs ~1 GiB of memory
// rather than 16. Values repeat across tensors, which no loader can exploit (nothing here
// deduplicates or compresses); norms are ones and biases zeros as when freshly initialised.
#include "bench_command.hpp"
#include "bench_shapes.hpp"

#include "ringload/ringload.hpp"
#include "ringload/serializer.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

namespace ringload::cli {
namespace {

struct BenchModelArgs {
    std::string out;
    std::string shape;
    std::string dtype = "float16";
    std::string format = "tensorizer";
};

// splitmix64: a fixed seed, so two runs write the same bytes.
std::uint64_t next_random(std::uint64_t& state) {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

// Random bits placed straight into the format's fields (sign, a small exponent, any mantissa),
// so every value is finite and weight-sized without a float conversion per element.
template <typename Bits>
void fill_random(std::vector<std::byte>& out, int exponent_shift, std::uint32_t exponent_min,
                 std::uint64_t mantissa_mask) {
    std::uint64_t state = 7;
    const std::size_t count = out.size() / sizeof(Bits);
    auto* values = reinterpret_cast<Bits*>(out.data());
    const int sign_shift = static_cast<int>(sizeof(Bits) * 8 - 1);
    for (std::size_t i = 0; i < count; ++i) {
        const std::uint64_t r = next_random(state);
        const std::uint64_t exponent = exponent_min + (r >> 61); // 8 binades
        const std::uint64_t sign = (r >> 60) & 1;
        values[i] = static_cast<Bits>((sign << sign_shift) | (exponent << exponent_shift) | (r & mantissa_mask));
    }
}

std::vector<std::byte> random_block(DType dtype, std::size_t bytes) {
    std::vector<std::byte> block(bytes);
    switch (dtype) {
        case DType::float16:
            fill_random<std::uint16_t>(block, 10, 4, 0x3FF); // 2^-11 .. 2^-3 (bias 15)
            break;
        case DType::bfloat16:
            fill_random<std::uint16_t>(block, 7, 116, 0x7F); // bias 127
            break;
        default:
            fill_random<std::uint32_t>(block, 23, 116, 0x7FFFFF);
            break;
    }
    return block;
}

std::vector<std::byte> ones_block(DType dtype, std::size_t bytes) {
    std::vector<std::byte> block(bytes);
    const std::uint16_t half_one = dtype == DType::float16 ? 0x3C00 : 0x3F80;
    const float one = 1.0f;
    for (std::size_t at = 0; at < bytes; at += dtype == DType::float32 ? 4 : 2) {
        if (dtype == DType::float32) {
            std::memcpy(block.data() + at, &one, 4);
        } else {
            std::memcpy(block.data() + at, &half_one, 2);
        }
    }
    return block;
}

int run_model(const BenchModelArgs& args) {
    const auto specs = bench::model_tensors(args.shape);
    if (specs.empty()) {
        return report_error("bench model --shape " + args.shape + ": must be " +
                            std::string(bench::model_shape_names()));
    }
    auto dtype = dtype_from_torch_name(args.dtype);
    if (!dtype || (*dtype != DType::float16 && *dtype != DType::bfloat16 && *dtype != DType::float32)) {
        return report_error("bench model --dtype " + args.dtype + ": must be float16, bfloat16 or float32");
    }
    const std::size_t item_bytes = *dtype == DType::float32 ? 4 : 2;
    std::size_t largest_bytes = 0;
    for (const auto& spec : specs) {
        largest_bytes = std::max<std::size_t>(largest_bytes, bench::element_count(spec) * item_bytes);
    }
    const auto random = random_block(*dtype, largest_bytes);
    const auto ones = ones_block(*dtype, largest_bytes);
    const std::vector<std::byte> zeros(largest_bytes);
    std::vector<TensorToWrite> tensors;
    for (const auto& spec : specs) {
        const auto& source = spec.fill == bench::Fill::random ? random : spec.fill == bench::Fill::ones ? ones : zeros;
        TensorToWrite tensor;
        tensor.path = {spec.name};
        tensor.dtype = *dtype;
        tensor.shape.assign(spec.dims.begin(), spec.dims.end());
        tensor.bytes = std::span(source).first(bench::element_count(spec) * item_bytes);
        tensors.push_back(std::move(tensor));
    }
    const Format* format = format_named(args.format);
    if (format == nullptr) {
        return report_error(
            fail(errc::invalid_argument, "--to " + args.format + ": must be " + format_names_text()).message());
    }
    auto written = write_format(*format, args.out, tensors);
    if (!written) {
        return report_error(written.error().message());
    }
    std::printf("%s: %s %s, %zu tensors, %llu bytes, %.2f s\n", args.out.c_str(), args.shape.c_str(),
                args.format.c_str(), tensors.size(), static_cast<unsigned long long>(written->file_bytes),
                written->seconds);
    return 0;
}

} // namespace

Run add_bench_model_command(CLI::App& bench) {
    auto args = std::make_shared<BenchModelArgs>();
    auto* command = bench.add_subcommand("model", "Write a synthetic checkpoint with a real model's tensor shapes");
    command->add_option("out", args->out, "The file to write")->required();
    command->add_option("--shape", args->shape, std::string(bench::model_shape_names()))->required();
    command->add_option("--dtype", args->dtype, "float16 (default), bfloat16 or float32");
    command->add_option("--to", args->format, "tensorizer (default), safetensors or torch");
    return [args] { return run_model(*args); };
}

} // namespace ringload::cli
