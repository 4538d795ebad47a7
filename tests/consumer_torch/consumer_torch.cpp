// tests/consumer_torch/consumer_torch.cpp: loads FILE into at::Tensors through the installed
// adapter and prints "<name> <dtype> <hex of the bytes in C order>" per tensor, then writes them
// as safetensors and torch files in DIR, reads those back and prints "round trip <format> <n>"
// where every tensor came back equal.
#include <ringload/torch.hpp>

#include <cstdio>
#include <map>
#include <string>

namespace {

std::string hex_of(const at::Tensor& tensor) {
    const at::Tensor dense = tensor.contiguous();
    const auto* bytes = static_cast<const unsigned char*>(dense.const_data_ptr());
    std::string out;
    for (std::size_t k = 0; k < dense.nbytes(); ++k) {
        char pair[3];
        std::snprintf(pair, sizeof pair, "%02x", bytes[k]);
        out += pair;
    }
    return out;
}

} // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: consumer_torch FILE DIR\n");
        return 2;
    }
    ringload::LoadOptions options;
    options.verify_hashes = true;
    auto tensors = ringload::libtorch::load_file(argv[1], options);
    if (!tensors) {
        std::fprintf(stderr, "%s\n", tensors.error().message().c_str());
        return 1;
    }
    for (const auto& [name, tensor] : *tensors) {
        const auto dtype = ringload::libtorch::dtype_of(tensor.scalar_type()).value();
        std::printf("%s %s %s\n", name.c_str(), std::string(ringload::torch_name(dtype)).c_str(),
                    hex_of(tensor).c_str());
    }
    for (const char* format : {"safetensors", "torch"}) {
        const std::string path = std::string(argv[2]) + "/out." + format;
        auto written = ringload::libtorch::write_file(path, *tensors, format);
        auto read = written ? ringload::libtorch::load_file(path)
                            : ringload::Result<ringload::libtorch::NamedTensors>(written.error());
        if (!read) {
            std::fprintf(stderr, "%s\n", read.error().message().c_str());
            return 1;
        }
        // By name: safetensors lays tensors out sorted (wider dtypes first), not in the given order.
        std::map<std::string, at::Tensor> back(read->begin(), read->end());
        std::size_t equal = 0;
        for (const auto& [name, tensor] : *tensors) {
            equal += back.contains(name) && back.at(name).equal(tensor) ? 1 : 0;
        }
        std::printf("round trip %s %zu\n", format, equal);
    }
    return 0;
}
