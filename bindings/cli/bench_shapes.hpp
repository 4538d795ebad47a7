// bindings/cli/bench_shapes.hpp
//
// The tensor names and shapes of synthetic checkpoints, in Hugging Face state-dict order and
// naming, so a benchmark can be reproduced without downloading a model. Used by
// `ringload bench model` and by bench/synthetic_checkpoint.cpp (ringload-synth), which fills
// them with its own deterministic values.
//
//     auto tensors = ringload::bench::model_tensors("llama3-8b");   // empty: unknown shape
//
// Plain std only: ringload-synth builds this file without the rest of ringload.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ringload::bench {

enum class Fill : std::uint8_t { random, ones, zeros };

struct TensorSpec {
    std::string name;
    std::vector<std::uint32_t> dims;
    Fill fill = Fill::random;
};

// "gpt2-xl" (1.56e9 parameters, lm_head tied to wte), "llama3-8b" (8.03e9) or "tiny" (two
// GPT-2 layers of width 64: the smoke test's model); empty for any other name.
std::vector<TensorSpec> model_tensors(std::string_view shape);

// The shape names model_tensors knows, for usage messages: "gpt2-xl|llama3-8b|llama-1b|tiny".
std::string_view model_shape_names();

std::uint64_t element_count(const TensorSpec& tensor);

} // namespace ringload::bench
