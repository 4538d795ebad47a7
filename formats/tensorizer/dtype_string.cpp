// formats/tensorizer/dtype_string.cpp
#include "formats/tensorizer/dtype_string.hpp"

#include <array>
#include <charconv>

namespace ringload::tensorizer {
namespace {

struct NumpyRow {
    char kind;
    std::size_t size;
    DType dtype;
};

// numpy kinds a little-endian tensorizer writer produces, by (kind, item size).
constexpr std::array numpy_rows = {
    NumpyRow{'f', 8, DType::float64},   NumpyRow{'f', 4, DType::float32},     NumpyRow{'f', 2, DType::float16},
    NumpyRow{'i', 8, DType::int64},     NumpyRow{'i', 4, DType::int32},       NumpyRow{'i', 2, DType::int16},
    NumpyRow{'i', 1, DType::int8},      NumpyRow{'u', 1, DType::uint8},       NumpyRow{'u', 2, DType::uint16},
    NumpyRow{'u', 4, DType::uint32},    NumpyRow{'u', 8, DType::uint64},      NumpyRow{'b', 1, DType::boolean},
    NumpyRow{'c', 8, DType::complex64}, NumpyRow{'c', 16, DType::complex128},
};

Error bad_dtype(std::string_view text, std::string_view why) {
    std::string shown;
    for (char c : text) {
        shown += c == '\0' ? std::string("\\0") : std::string(1, c);
    }
    return fail(errc::format_error, "dtype '" + shown + "' " + std::string(why));
}

} // namespace

Result<FileDType> parse_dtype_string(std::string_view text) {
    std::string_view numpy_part = text;
    std::string_view torch_part;
    if (auto nul = text.find('\0'); nul != std::string_view::npos) {
        numpy_part = text.substr(0, nul);
        torch_part = text.substr(nul + 1);
        if (torch_part.find('\0') != std::string_view::npos) {
            return bad_dtype(text, "has more than one NUL");
        }
    }
    if (numpy_part.size() < 3) {
        return bad_dtype(text, "is too short");
    }
    char order = numpy_part[0];
    if (order == '>') {
        return bad_dtype(text, "is big-endian, which no tensorizer writer produces");
    }
    if (order != '<' && order != '|' && order != '=') {
        return bad_dtype(text, "has an unknown byte-order character");
    }
    char kind = numpy_part[1];
    std::size_t size = 0;
    auto digits = numpy_part.substr(2);
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), size);
    if (ec != std::errc() || end != digits.data() + digits.size()) {
        return bad_dtype(text, "has no valid item size");
    }
    if (kind == 'V') {
        auto dtype = dtype_from_torch_name(torch_part);
        if (!torch_part.starts_with("torch.") || !dtype) {
            return bad_dtype(text, "is opaque but names no torch dtype ringload knows");
        }
        if (itemsize(*dtype) != size) {
            return bad_dtype(text, "has an item size that does not match its torch dtype");
        }
        return FileDType{*dtype, true};
    }
    if (!torch_part.empty()) {
        return bad_dtype(text, "has a torch part but is not opaque");
    }
    for (const auto& row : numpy_rows) {
        if (row.kind == kind && row.size == size) {
            return FileDType{row.dtype, false};
        }
    }
    return bad_dtype(text, "is not a dtype ringload knows");
}

bool is_opaque(DType dtype) {
    for (const auto& row : numpy_rows) {
        if (row.dtype == dtype) {
            return false;
        }
    }
    return true;
}

std::string dtype_string(DType dtype) {
    for (const auto& row : numpy_rows) {
        if (row.dtype == dtype) {
            char order = row.size == 1 ? '|' : '<';
            return std::string{order, row.kind} + std::to_string(row.size);
        }
    }
    std::size_t size = itemsize(dtype);
    std::string numpy_part = std::string(size == 1 ? "|V" : "<V") + std::to_string(size);
    return numpy_part + std::string(1, '\0') + "torch." + std::string(torch_name(dtype));
}

} // namespace ringload::tensorizer
