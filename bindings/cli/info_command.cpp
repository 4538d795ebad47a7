// bindings/cli/info_command.cpp
//
// `ringload info URI [--json]`: what a file holds, read from its index alone.
#include "commands.hpp"
#include "open_input.hpp"
#include "tensor_json.hpp"

#include "ringload/printable.hpp"
#include "ringload/ringload.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>

#include <iostream>
#include <memory>

namespace ringload::cli {
namespace {

struct InfoArgs {
    std::string uri;
    bool json = false;
    TableArgs options; // opening the file: the network rows, a key (checked, not needed to show it)
};

// The text rows of `info`, built in one buffer and written in large pieces: printf and a few
// strings per row were a sixth of `info` for a million tensors. Columns as printf's
// "  %-48s %-10s %-20s %12llu" (text up to a NUL byte, as %s takes it).
class InfoRows {
public:
    InfoRows() { buffer_.reserve(flush_bytes + 4096); }
    ~InfoRows() { flush(); }
    InfoRows(const InfoRows&) = delete;
    InfoRows& operator=(const InfoRows&) = delete;

    void add(const Index& index, const TensorInfo& tensor) {
        buffer_ += "  ";
        if (tensor.path.size() <= 1) {
            padded(tensor.name, 48); // display_name() without its copy
        } else {
            padded(tensor.display_name(), 48);
        }
        buffer_ += ' ';
        padded(torch_name(tensor.dtype), 10);
        buffer_ += ' ';
        scratch_.clear();
        list(scratch_, tensor.shape);
        padded(scratch_, 20);
        buffer_ += ' ';
        const std::size_t digits_at = buffer_.size();
        number(buffer_, tensor.byte_length);
        if (const std::size_t digits = buffer_.size() - digits_at; digits < 12) {
            buffer_.insert(digits_at, 12 - digits, ' ');
        }
        if (tensor.is_meta) {
            buffer_ += "  meta";
        }
        if (tensor.storage_index) { // where a torch view lies: "  storage 3 +16 stride [1, 4]"
            buffer_ += "  storage ";
            padded(index.storages[*tensor.storage_index].key, 0);
            if (tensor.storage_offset != 0) {
                buffer_ += " +";
                number(buffer_, tensor.storage_offset);
            }
            buffer_ += " stride ";
            list(buffer_, tensor.strides);
        }
        buffer_ += '\n';
        if (buffer_.size() >= flush_bytes) {
            flush();
        }
    }

    void flush() {
        std::fwrite(buffer_.data(), 1, buffer_.size(), stdout);
        buffer_.clear();
    }

private:
    static constexpr std::size_t flush_bytes = std::size_t{1} << 20;
    static constexpr std::size_t longest_name_bytes = 200;

    static void number(std::string& out, std::uint64_t value) {
        std::array<char, 20> digits;
        const auto end = std::to_chars(digits.data(), digits.data() + digits.size(), value).ptr;
        out.append(digits.data(), end);
    }

    static void list(std::string& out, const std::vector<std::uint64_t>& values) { // "[2, 3]"
        out += '[';
        for (std::size_t i = 0; i < values.size(); ++i) {
            if (i != 0) {
                out += ", ";
            }
            number(out, values[i]);
        }
        out += ']';
    }

    // Names from the file are printed inert (escapes for control characters, bidi overrides and
    // bytes that are not UTF-8; cut at 200 bytes); short plain ASCII, nearly every name, as it is.
    void padded(std::string_view text, std::size_t width) {
        const std::size_t start = buffer_.size();
        if (text.size() <= longest_name_bytes && plain_ascii(text)) {
            buffer_ += text;
        } else {
            buffer_ += printable(text, longest_name_bytes);
        }
        if (const std::size_t written = buffer_.size() - start; written < width) {
            buffer_.append(width - written, ' ');
        }
    }

    static bool plain_ascii(std::string_view text) {
        return std::all_of(text.begin(), text.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
    }

    std::string buffer_;
    std::string scratch_;
};

// One tensor as --json prints it: nlohmann's sorted keys, written in that order by hand.
std::string tensor_row_json(const TensorInfo& tensor) {
    std::string row = "{\"bytes\":" + std::to_string(tensor.byte_length) +
                      ",\"data_offset\":" + std::to_string(tensor.data_offset_bytes) + ",\"dtype\":\"" +
                      std::string(torch_name(tensor.dtype)) + "\",\"meta\":" + (tensor.is_meta ? "true" : "false") +
                      ",\"name\":" + dump_json(tensor.name) + ",\"path\":" + dump_json(path_json(tensor)) +
                      ",\"shape\":" + dump_json(shape_json(tensor));
    if (tensor.storage_index) {
        // Enough to rebuild the same views (or meta tensors) exactly: which storage, where in
        // it, and how the view steps through it (all in elements).
        row += ",\"storage\":" + std::to_string(*tensor.storage_index) +
               ",\"storage_offset\":" + std::to_string(tensor.storage_offset) +
               ",\"strides\":" + dump_json(tensor.strides);
    }
    return row + ",\"tensor_type\":" + std::to_string(tensor.tensor_type) + "}";
}

int run_info(const InfoArgs& args) {
    LoadSettings settings;
    if (auto applied = apply_table_options(args.options, settings); !applied) {
        return report_error(applied.error().message());
    }
    auto opened = open_input(args.uri, settings);
    if (!opened) {
        return report_error(opened.error().message());
    }
    const Index& index = opened->index();
    // What the format records about itself (tensorizer: data version and flags; safetensors:
    // __metadata__; torch: storages and byte order): the first line, and --json's extras.
    const FormatDescription about =
        describe_format(index, args.json ? DescriptionParts::text_and_json : DescriptionParts::text);
    if (args.json) {
        nlohmann::json out = nlohmann::json::parse(about.json);
        out["format"] = std::string(index.format_name());
        out["data_version"] = index.data_version;
        out["feature_flags"] = index.feature_flags;
        out["encrypted"] = index.encrypted;
        out["file_bytes"] = index.source_size_bytes;
        out["tensor_bytes"] = index.total_tensor_bytes();
        out["tensors"] = nlohmann::json::array();
        // The rows are printed as text into the "tensors":[] of the dump: a JSON object per
        // tensor (a std::map of eleven keys) cost seconds for a million tensors.
        std::string text = dump_json(out);
        const auto rows_at = text.rfind("\"tensors\":[]") + std::string_view("\"tensors\":[").size();
        std::cout << std::string_view(text).substr(0, rows_at);
        for (std::size_t i = 0; i < index.tensors.size(); ++i) {
            std::cout << (i == 0 ? "" : ",") << tensor_row_json(index.tensors[i]);
        }
        std::cout << std::string_view(text).substr(rows_at) << "\n";
        return 0;
    }
    std::printf("format: %s\n", printable(about.text).c_str());
    for (const auto& [key, value] : index.metadata) {
        std::printf("  metadata %s = %s\n", printable(key, 200).c_str(), printable(value, 1000).c_str());
    }
    std::printf("%zu tensors, %llu bytes of tensor data, file %llu bytes\n", index.tensors.size(),
                static_cast<unsigned long long>(index.total_tensor_bytes()),
                static_cast<unsigned long long>(index.source_size_bytes));
    InfoRows rows;
    for (const auto& tensor : index.tensors) {
        rows.add(index, tensor);
    }
    return 0;
}

} // namespace

Run add_info_command(CLI::App& app) {
    auto args = std::make_shared<InfoArgs>();
    auto* command = app.add_subcommand("info", "Show a file's format, version and tensors");
    command->add_option("uri", args->uri, input_uri_help())->required();
    command->add_flag("--json", args->json, "Print one JSON object");
    add_table_options(*command, args->options, rows_setting({OptionTarget::open, OptionTarget::keys}));
    return [args] { return run_info(*args); };
}

} // namespace ringload::cli
