// formats/safetensors/write_graph.cpp
#include "formats/safetensors/write_graph.hpp"

#include "formats/safetensors/dtype_names.hpp"

#include "ringload/engine/stream_copy.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <set>

namespace ringload::safetensors {

std::string joined_name(const std::vector<PathComponent>& path) {
    std::string name;
    for (std::size_t i = 0; i < path.size(); ++i) {
        if (i > 0) {
            name += '.';
        }
        if (const auto* key = std::get_if<std::string>(&path[i])) {
            name += *key;
        } else {
            name += std::to_string(std::get<std::uint64_t>(path[i]));
        }
    }
    return name;
}

namespace {

// What safetensors can store of one tensor: a name that is not the metadata's, data (not meta),
// a dtype it names, its bytes; and a device this write has the link to.
Result<void> check_tensor(const TensorToWrite& tensor, const std::string& name, const DeviceLink* device,
                          const std::string& target) {
    const std::string which = target + ": tensor '" + name + "'";
    if (tensor.path.empty() || name.empty()) {
        return fail(errc::invalid_tensor_name, target + ": a tensor without a name");
    }
    if (name == "__metadata__") {
        return fail(errc::invalid_tensor_name, which + ": the name is reserved for the file's metadata");
    }
    if (tensor.is_meta) {
        return fail(errc::unsupported,
                    which + ": a meta tensor (shape only): safetensors stores data for every tensor");
    }
    if (tensor.device >= 0 && (device == nullptr || device->ordinal() != tensor.device)) {
        return fail(errc::invalid_argument, which + ": on cuda:" + std::to_string(tensor.device) +
                                                " without a link to that device (one device per write)");
    }
    auto named = dtype_name(tensor.dtype);
    if (!named) {
        return fail(named.error().code, which + ": " + named.error().detail);
    }
    auto length = checked_byte_length(tensor.shape, tensor.dtype);
    if (!length) {
        return fail(errc::invalid_argument, which + ": the shape is too large");
    }
    if (auto header = header_shape_of(tensor.dtype, tensor.shape); !header) {
        return fail(header.error().code, which + ": " + header.error().detail);
    }
    if (tensor.bytes.size() != *length) {
        return fail(errc::invalid_argument, which + ": " + std::to_string(tensor.bytes.size()) +
                                                " bytes given, but its dtype and shape need " +
                                                std::to_string(*length));
    }
    return {};
}

} // namespace

Result<std::unique_ptr<WriteGraph>> WriteGraph::create(std::span<const TensorToWrite> tensors,
                                                       const LayoutOptions& options, std::string target_name,
                                                       DeviceLink* device) {
    auto graph = std::unique_ptr<WriteGraph>(new WriteGraph());
    graph->tensors_ = tensors;
    graph->target_ = std::move(target_name);
    graph->device_ = device;
    const std::string& target = graph->target_;
    for (const auto& tensor : tensors) {
        Record record{&tensor, joined_name(tensor.path)};
        RL_TRY_VOID(check_tensor(tensor, record.name, device, target));
        graph->records_.push_back(std::move(record));
    }
    std::set<std::string_view> names;
    for (const auto& record : graph->records_) {
        if (!names.insert(record.name).second) {
            return fail(errc::invalid_tensor_name, target + ": tensor '" + record.name + "' given twice");
        }
    }
    if (!options.keep_order) {
        std::stable_sort(graph->records_.begin(), graph->records_.end(), [](const Record& a, const Record& b) {
            const int rank_a = reference_rank(a.tensor->dtype);
            const int rank_b = reference_rank(b.tensor->dtype);
            return rank_a != rank_b ? rank_a > rank_b : a.name < b.name;
        });
    }
    RL_TRY_VOID(graph->lay_out(options));
    return graph;
}

Result<void> WriteGraph::lay_out(const LayoutOptions& options) {
    std::vector<HeaderEntry> entries;
    std::uint64_t offset = 0;
    for (const auto& record : records_) {
        const std::uint64_t length = record.tensor->bytes.size();
        // check_tensor found the header's shape.
        auto header_shape = header_shape_of(record.tensor->dtype, record.tensor->shape);
        entries.push_back({record.name, record.tensor->dtype, std::move(*header_shape), offset, offset + length});
        offset += length;
    }
    auto header = build_header(entries, options.metadata, options.alignment_bytes);
    if (!header) {
        return with_context(header.error(), target_);
    }
    header_ = std::move(*header);
    tensor_bytes_ = offset;

    // Pieces: the header, then each tensor's bytes (zero-length pieces for empty tensors keep
    // tags and records in step; the executor skips them).
    std::uint64_t at = 0;
    plan_.pieces.push_back({at, header_.size(), false, 0});
    at += header_.size();
    for (std::size_t r = 0; r < records_.size(); ++r) {
        const std::uint64_t length = records_[r].tensor->bytes.size();
        plan_.pieces.push_back({at, length, false, r + 1});
        at += length;
    }
    plan_.length_bytes = at;
    return {};
}

std::vector<FileExtent> WriteGraph::tensor_extents() const {
    std::vector<FileExtent> extents(tensors_.size());
    for (std::size_t r = 0; r < records_.size(); ++r) { // piece r + 1 holds record r's bytes
        const WritePiece& piece = plan_.pieces[r + 1];
        extents[static_cast<std::size_t>(records_[r].tensor - tensors_.data())] = {piece.offset_bytes,
                                                                                   piece.end_bytes()};
    }
    return extents;
}

Result<void> WriteGraph::produce_part(const WritePiece& piece, std::uint64_t from, std::span<std::byte> dst) {
    if (piece.tag == 0) {
        std::memcpy(dst.data(), header_.data() + from, dst.size());
        return {};
    }
    const Record& record = records_[piece.tag - 1];
    const std::byte* source = record.tensor->bytes.data() + from;
    if (record.tensor->device >= 0) {
        auto copied = device_->download(dst.data(), source, dst.size());
        if (!copied) {
            return fail(copied.error().code, target_ + ": tensor '" + record.name + "': " + copied.error().detail);
        }
        return {};
    }
    copy_to_destination(dst.data(), source, dst.size());
    return {};
}

Result<void> WriteGraph::produce_whole(const WritePiece& piece, std::span<std::byte> first,
                                       std::span<std::byte> second) {
    (void)piece;
    (void)first;
    (void)second;
    return fail(errc::invalid_argument, target_ + ": a safetensors file has no pieces produced whole");
}

} // namespace ringload::safetensors
