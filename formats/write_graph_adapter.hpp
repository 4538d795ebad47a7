// formats/write_graph_adapter.hpp
//
// A format's own write graph (tensorizer::WriteGraph, ...) as the FormatWriteGraph that the one
// write path runs: every call forwards, one virtual call more per piece. Graphs without a data
// version or without pages to finish answer 0 and none.
//
//     RL_TRY(graph, safetensors::WriteGraph::create(tensors, options, name, device));
//     return adapt_write_graph(std::move(graph));
#pragma once

#include "formats/format_hooks.hpp"

#include <memory>
#include <utility>

namespace ringload {

template <class Graph>
class WriteGraphAdapter final : public FormatWriteGraph {
public:
    explicit WriteGraphAdapter(std::unique_ptr<Graph> graph) : graph_(std::move(graph)) {}

    const WritePlan& plan() const noexcept override { return graph_->plan(); }
    std::uint64_t tensor_bytes() const noexcept override { return graph_->tensor_bytes(); }
    std::uint32_t data_version() const noexcept override {
        if constexpr (requires(const Graph& g) { g.data_version(); }) {
            return graph_->data_version();
        } else {
            return 0;
        }
    }
    std::vector<FileExtent> tensor_extents() const override { return graph_->tensor_extents(); }
    Result<std::vector<std::pair<std::uint64_t, std::span<const std::byte>>>> finished_pages() override {
        if constexpr (requires(Graph & g) { g.finished_pages(); }) {
            return graph_->finished_pages();
        } else if constexpr (requires(Graph & g) { g.finished_header_pages(); }) {
            return graph_->finished_header_pages();
        } else {
            return std::vector<std::pair<std::uint64_t, std::span<const std::byte>>>{};
        }
    }

    Result<void> produce_part(const WritePiece& piece, std::uint64_t from, std::span<std::byte> dst) override {
        return graph_->produce_part(piece, from, dst);
    }
    Result<void> produce_whole(const WritePiece& piece, std::span<std::byte> first,
                               std::span<std::byte> second) override {
        return graph_->produce_whole(piece, first, second);
    }
    void window_filled(std::uint64_t offset_bytes, std::span<const std::byte> bytes) override {
        graph_->window_filled(offset_bytes, bytes);
    }

private:
    std::unique_ptr<Graph> graph_;
};

template <class Graph>
std::unique_ptr<FormatWriteGraph> adapt_write_graph(std::unique_ptr<Graph> graph) {
    return std::make_unique<WriteGraphAdapter<Graph>>(std::move(graph));
}

} // namespace ringload
