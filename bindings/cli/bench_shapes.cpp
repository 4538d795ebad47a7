// bindings/cli/bench_shapes.cpp
#include "bench_shapes.hpp"

namespace ringload::bench {
namespace {

enum class Family : std::uint8_t { gpt2, llama };

struct ModelShape {
    int layers;
    std::uint32_t hidden;
    std::uint32_t vocab;
    std::uint32_t positions; // GPT-2: learned positions; Llama: none (rotary)
    Family family = Family::gpt2;
    std::uint32_t kv_hidden = 0;    // Llama: key/value width (grouped-query attention)
    std::uint32_t intermediate = 0; // Llama: MLP width
};

constexpr ModelShape gpt2_xl{48, 1600, 50257, 1024};
constexpr ModelShape tiny{2, 64, 1000, 128};
// Meta-Llama-3-8B: 8.03e9 parameters, 16 GB in float16 (the >= 8 GiB GPU benchmark's model).
constexpr ModelShape llama3_8b{32, 4096, 128256, 0, Family::llama, 1024, 14336};
// A Llama of 337e6 parameters, 1.35 GB in float32, that vLLM's CPU build serves (16 heads of
// 64, 4 KV heads): the vLLM benchmark's model (bench/vllm_load.py writes its config.json).
constexpr ModelShape llama_1b{18, 1024, 32000, 0, Family::llama, 256, 4096};

void add_layer_norm(std::vector<TensorSpec>& out, const std::string& prefix, std::uint32_t hidden) {
    // Freshly initialised layer norms are the identity: weight 1, bias 0.
    out.push_back({prefix + ".weight", {hidden}, Fill::ones});
    out.push_back({prefix + ".bias", {hidden}, Fill::zeros});
}

void add_linear(std::vector<TensorSpec>& out, const std::string& prefix, std::uint32_t in, std::uint32_t out_features) {
    // HF GPT-2 uses Conv1D, whose weight is [in, out] (transposed vs nn.Linear).
    out.push_back({prefix + ".weight", {in, out_features}, Fill::random});
    out.push_back({prefix + ".bias", {out_features}, Fill::random});
}

// HF GPT2Model state_dict order and naming, without lm_head (tied to wte).
std::vector<TensorSpec> gpt2_tensors(const ModelShape& m) {
    const std::uint32_t h = m.hidden;
    std::vector<TensorSpec> out;
    out.push_back({"transformer.wte.weight", {m.vocab, h}, Fill::random});
    out.push_back({"transformer.wpe.weight", {m.positions, h}, Fill::random});
    for (int i = 0; i < m.layers; ++i) {
        const std::string layer = "transformer.h." + std::to_string(i);
        add_layer_norm(out, layer + ".ln_1", h);
        add_linear(out, layer + ".attn.c_attn", h, 3 * h);
        add_linear(out, layer + ".attn.c_proj", h, h);
        add_layer_norm(out, layer + ".ln_2", h);
        add_linear(out, layer + ".mlp.c_fc", h, 4 * h);
        add_linear(out, layer + ".mlp.c_proj", 4 * h, h);
    }
    add_layer_norm(out, "transformer.ln_f", h);
    return out;
}

// HF LlamaForCausalLM state_dict order and naming (nn.Linear weights are [out, in]).
std::vector<TensorSpec> llama_tensors(const ModelShape& m) {
    const std::uint32_t h = m.hidden;
    std::vector<TensorSpec> out;
    out.push_back({"model.embed_tokens.weight", {m.vocab, h}, Fill::random});
    for (int i = 0; i < m.layers; ++i) {
        const std::string layer = "model.layers." + std::to_string(i);
        out.push_back({layer + ".self_attn.q_proj.weight", {h, h}, Fill::random});
        out.push_back({layer + ".self_attn.k_proj.weight", {m.kv_hidden, h}, Fill::random});
        out.push_back({layer + ".self_attn.v_proj.weight", {m.kv_hidden, h}, Fill::random});
        out.push_back({layer + ".self_attn.o_proj.weight", {h, h}, Fill::random});
        out.push_back({layer + ".mlp.gate_proj.weight", {m.intermediate, h}, Fill::random});
        out.push_back({layer + ".mlp.up_proj.weight", {m.intermediate, h}, Fill::random});
        out.push_back({layer + ".mlp.down_proj.weight", {h, m.intermediate}, Fill::random});
        out.push_back({layer + ".input_layernorm.weight", {h}, Fill::ones});
        out.push_back({layer + ".post_attention_layernorm.weight", {h}, Fill::ones});
    }
    out.push_back({"model.norm.weight", {h}, Fill::ones});
    out.push_back({"lm_head.weight", {m.vocab, h}, Fill::random});
    return out;
}

} // namespace

std::vector<TensorSpec> model_tensors(std::string_view shape) {
    if (shape == "gpt2-xl") {
        return gpt2_tensors(gpt2_xl);
    }
    if (shape == "llama3-8b") {
        return llama_tensors(llama3_8b);
    }
    if (shape == "llama-1b") {
        return llama_tensors(llama_1b);
    }
    if (shape == "tiny") {
        return gpt2_tensors(tiny);
    }
    return {};
}

std::string_view model_shape_names() {
    return "gpt2-xl|llama3-8b|llama-1b|tiny";
}

std::uint64_t element_count(const TensorSpec& tensor) {
    std::uint64_t n = 1;
    for (std::uint32_t d : tensor.dims) {
        n *= d;
    }
    return n;
}

} // namespace ringload::bench
