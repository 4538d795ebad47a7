// bindings/cpp/src/load/storage_load.cpp
//
// Loads of torch zip files: the storages that the wanted tensors view are read once each into
// one block, and each tensor is a view of its storage there, so tensors that share a storage
// share memory, as they did when saved. A copy is made only where the caller asks for one:
// a destination of its own, another dtype, or C order for a non-contiguous view.
#include "load/deserializer_impl.hpp"
#include "load/storage_views.hpp"
#include "load/tensor_handover.hpp"
#include "ringload/host_arena.hpp"

namespace ringload {
namespace {

std::vector<std::size_t> wanted_tensors(const LoadLayout& layout) {
    std::vector<std::size_t> wanted;
    wanted.reserve(layout.tensors.size());
    for (const auto& planned : layout.tensors) {
        wanted.push_back(planned.index);
    }
    return wanted;
}

std::vector<PlainSpan> storage_spans(const Index& index, const StorageBlock& block, std::byte* base) {
    std::vector<PlainSpan> spans;
    spans.reserve(block.storages.size());
    for (std::uint32_t s : block.storages) {
        const StorageInfo& storage = index.storages[s];
        spans.push_back({storage.data_offset_bytes, storage.byte_length, base + block.offset_of[s],
                         "storage 'data/" + storage.key + "'", storage.dtype, index.big_endian, std::nullopt, s});
    }
    return spans;
}

// The layout positions of the tensors that view each storage (by Index::storages position):
// a storage's views are complete when it is.
std::vector<std::vector<std::size_t>> views_by_storage(const Index& index, const LoadLayout& layout) {
    std::vector<std::vector<std::size_t>> views(index.storages.size());
    for (std::size_t k = 0; k < layout.tensors.size(); ++k) {
        views[*index.tensors[layout.tensors[k].index].storage_index].push_back(k);
    }
    return views;
}

// The tensor's first element in the block.
std::byte* first_element(const StorageBlock& block, std::byte* base, const TensorInfo& tensor) {
    return base + block.offset_of[*tensor.storage_index] + tensor.storage_offset * itemsize(tensor.dtype);
}

// The tensor, as a view of its storage in the block (C order, or strided when it is not).
LoadedTensor view_of(const TensorInfo& stored, const PlannedTensor& planned, std::byte* first) {
    LoadedTensor tensor{loaded_info(stored, planned), {}, {}};
    if (is_c_contiguous(stored)) {
        tensor.info.strides.clear();
        tensor.bytes = {first, stored.byte_length};
    } else {
        tensor.bytes = {first, view_extent_bytes(stored)};
    }
    return tensor;
}

// A copy in C order at `out`, converted to the planned dtype.
void copy_tensor(std::byte* out, const TensorInfo& stored, const PlannedTensor& planned, const std::byte* first) {
    if (!planned.converts) {
        gather_view(out, first, stored);
        return;
    }
    if (is_c_contiguous(stored)) {
        convert_elements(out, planned.dtype, first, stored.dtype, stored.numel());
        return;
    }
    std::vector<std::byte> gathered(stored.byte_length);
    gather_view(gathered.data(), first, stored);
    convert_elements(out, planned.dtype, gathered.data(), stored.dtype, stored.numel());
}

} // namespace

std::uint64_t Deserializer::Impl::host_bytes_needed(const LoadOptions& options, const LoadLayout& layout) const {
    if (!index.format->tensors_view_storages) {
        return layout.owned_bytes + layout.raw_bytes;
    }
    std::uint64_t bytes =
        plan_storage_block(index, wanted_tensors(layout), host_read_alignment()).bytes; // as load_storages_to_host
    for (const auto& planned : layout.tensors) {
        const TensorInfo& stored = index.tensors[planned.index];
        if (planned.given == nullptr && (planned.converts || (options.contiguous && !is_c_contiguous(stored)))) {
            bytes += planned.byte_length;
        }
    }
    return bytes;
}

Result<LoadedModel> Deserializer::Impl::load_storages_to_host(const LoadOptions& options, const LoadLayout& layout,
                                                              WorkerPool& pool) {
    RL_TRY(ring_in_use, ring_for(options));
    const StorageBlock block = plan_storage_block(index, wanted_tensors(layout), host_read_alignment());
    // After the storages: the copies the load owns.
    std::vector<std::size_t> copy_offset(layout.tensors.size(), 0);
    std::vector<bool> copies(layout.tensors.size(), false);
    std::size_t arena_bytes = block.bytes;
    for (std::size_t k = 0; k < layout.tensors.size(); ++k) {
        const PlannedTensor& planned = layout.tensors[k];
        const TensorInfo& stored = index.tensors[planned.index];
        copies[k] = planned.given != nullptr || planned.converts || (options.contiguous && !is_c_contiguous(stored));
        if (copies[k] && planned.given == nullptr) {
            copy_offset[k] = arena_bytes;
            arena_bytes = align_tensor_offset(arena_bytes + planned.byte_length);
        }
    }
    RL_TRY(arena, HostArena::create(std::max<std::size_t>(arena_bytes, 1)));
    const StartedPrefault prefault = start_prefault(options, *arena);
    std::byte* base = arena->data();
    LoadedModel model;
    model.tensors.resize(layout.tensors.size());
    // Each tensor is made (a view, or its copy) and handed over once its storage is complete,
    // by the worker that completed it.
    const auto make_tensor = [&](std::size_t k) {
        const PlannedTensor& planned = layout.tensors[k];
        const TensorInfo& stored = index.tensors[planned.index];
        std::byte* first = first_element(block, base, stored);
        if (!copies[k]) {
            model.tensors[k] = view_of(stored, planned, first);
            return;
        }
        std::byte* out = planned.given != nullptr ? planned.given : base + copy_offset[k];
        copy_tensor(out, stored, planned, first);
        model.tensors[k] = {loaded_info(stored, planned), {out, planned.byte_length}, {}};
        model.tensors[k].info.strides.clear();
    };
    const auto views = views_by_storage(index, layout);
    TensorHandover handover(options, "cpu", arena);
    RunHooks hooks{[&](std::size_t storage) {
                       for (std::size_t k : views[storage]) {
                           make_tensor(k);
                           handover.hand_over(k, copies[k] && layout.tensors[k].given != nullptr,
                                              [&] { return model.tensors[k]; });
                       }
                   },
                   handover.done()};
    RL_TRY(stats, run_copy(options, *ring_in_use, pool, storage_spans(index, block, base), nullptr,
                           layout.tensors.size(), hooks));
    arena->join_prefault();

    model.arena = arena;
    model.bytes_read = stats.bytes_read;
    model.bytes_in_place = stats.bytes_in_place;
    model.how = source->describe() + ", " + std::string(prefault.how);
    for (const auto& tensor : model.tensors) {
        model.bytes += tensor.info.byte_length;
    }
    return model;
}

Result<LoadedModel> Deserializer::Impl::load_storages_to_device(const LoadOptions& options, const LoadLayout& layout,
                                                                WorkerPool& pool, int ordinal) {
    // Copies on the device (gathers, conversions into the caller's memory) are not built yet:
    // refused up front, before anything is read.
    for (const auto& planned : layout.tensors) {
        const TensorInfo& stored = index.tensors[planned.index];
        const std::string what = source_name() + ": tensor '" + stored.display_name() + "': ";
        if (planned.converts || planned.given != nullptr) {
            return fail(errc::unsupported, what +
                                               "torch zip tensors are loaded to a GPU as views of their storages; "
                                               "a dtype or caller destinations there are not supported yet (load "
                                               "on the CPU for them)");
        }
        if (options.contiguous && !is_c_contiguous(stored)) {
            return fail(errc::unsupported, what +
                                               "a non-contiguous view cannot be made contiguous on a GPU yet: load "
                                               "with contiguous=false (a strided view) or on the CPU");
        }
    }
    RL_TRY(ring_in_use, ring_for(options));
    RL_TRY(opened_link, link_for(ordinal, *ring_in_use));
    DeviceLink& link = *opened_link;
    RL_TRY_VOID(link.order_after_default_stream());
    (void)link.take_scratch_peak_bytes(); // this load's peak starts here (torch loads take no scratch yet)
    const StorageBlock block = plan_storage_block(index, wanted_tensors(layout));
    RL_TRY(memory, allocate_device_block(ordinal, block.bytes));
    const auto view_at = [&](std::size_t k) {
        const TensorInfo& stored = index.tensors[layout.tensors[k].index];
        return view_of(stored, layout.tensors[k], first_element(block, memory.get(), stored));
    };
    const auto views = views_by_storage(index, layout);
    TensorHandover handover(options, link.name(), memory);
    RunHooks hooks{[&](std::size_t storage) {
                       for (std::size_t k : views[storage]) {
                           handover.hand_over(k, false, [&] { return view_at(k); });
                       }
                   },
                   handover.done()};
    auto stats = run_copy(options, *ring_in_use, pool, storage_spans(index, block, memory.get()), &link,
                          layout.tensors.size(), hooks);
    if (!stats) {
        (void)link.synchronize(); // copies still queued must not outlive `memory`
        return stats.error();
    }
    LoadedModel model = device_model(link, memory, block.bytes, *stats);
    for (std::size_t k = 0; k < layout.tensors.size(); ++k) {
        model.tensors.push_back(view_at(k));
        model.bytes += index.tensors[layout.tensors[k].index].byte_length;
    }
    return model;
}

} // namespace ringload
