// gpu/device_name.cpp
#include "gpu/device_name.hpp"

#include <charconv>

namespace ringload::gpu {

Result<int> parse_device(std::string_view text) {
    if (text.empty() || text == "cpu") {
        return cpu_ordinal;
    }
    if (text == "cuda") {
        return 0;
    }
    constexpr std::string_view prefix = "cuda:";
    if (text.starts_with(prefix)) {
        std::string_view digits = text.substr(prefix.size());
        int ordinal = 0;
        auto [end, status] = std::from_chars(digits.data(), digits.data() + digits.size(), ordinal);
        if (!digits.empty() && status == std::errc() && end == digits.data() + digits.size() && ordinal >= 0) {
            return ordinal;
        }
    }
    return fail(errc::invalid_argument,
                "device '" + std::string(text) + "' is not one of cpu, cuda or cuda:N (N a device ordinal)");
}

std::string device_name(int ordinal) {
    return ordinal == cpu_ordinal ? "cpu" : "cuda:" + std::to_string(ordinal);
}

} // namespace ringload::gpu
