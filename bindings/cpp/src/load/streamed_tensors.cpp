// bindings/cpp/src/load/streamed_tensors.cpp
#include "load/streamed_tensors.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ringload {
namespace {

constexpr std::size_t page_bytes = 4096;

std::size_t whole_pages(std::uint64_t bytes) {
    return static_cast<std::size_t>((bytes + page_bytes - 1) / page_bytes * page_bytes);
}

bool has_bytes_to_load(const TensorInfo& info) {
    return !info.is_meta && info.byte_length > 0;
}

} // namespace

StreamedTensors::StreamedTensors(Deserializer& source, const LoadOptions& load, std::uint64_t budget_bytes)
    : source_(source), load_(load), budget_bytes_(budget_bytes) {}

Result<std::unique_ptr<StreamedTensors>> StreamedTensors::create(Deserializer& source, const LoadOptions& load,
                                                                 std::uint64_t budget_bytes) {
    auto feed = std::unique_ptr<StreamedTensors>(new StreamedTensors(source, load, budget_bytes));
    const auto& infos = source.index().tensors;
    for (const auto& info : infos) {
        feed->places_.push_back(feed->reservation_bytes_);
        if (has_bytes_to_load(info)) {
            feed->reservation_bytes_ += whole_pages(info.byte_length);
        }
    }
    if (feed->reservation_bytes_ > 0) {
        // Address space only: pages cost memory once a batch is loaded into them.
        void* reserved = mmap(nullptr, feed->reservation_bytes_, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (reserved == MAP_FAILED) {
            return fail(errc::out_of_memory,
                        source.uri() + ": cannot reserve " + std::to_string(feed->reservation_bytes_) +
                            " bytes of address space to stream the tensors through: " + std::strerror(errno));
        }
        feed->reservation_ = static_cast<std::byte*>(reserved);
    }
    for (std::size_t i = 0; i < infos.size(); ++i) {
        const TensorInfo& info = infos[i];
        std::span<const std::byte> bytes;
        if (has_bytes_to_load(info)) {
            bytes = {feed->place_of(i), static_cast<std::size_t>(info.byte_length)};
        }
        feed->tensors_.push_back(
            {info.path, info.dtype, info.shape, bytes, info.is_meta, info.module_index, info.tensor_type, -1});
    }
    return feed;
}

StreamedTensors::~StreamedTensors() {
    stop_loader();
    if (reservation_ != nullptr) {
        munmap(reservation_, reservation_bytes_);
    }
}

std::byte* StreamedTensors::place_of(std::size_t tensor) const {
    return reservation_ + places_[tensor];
}

void StreamedTensors::stop_loader() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    cancel_.cancel(); // a batch being read stops early
    changed_.notify_all();
    if (loader_.joinable()) {
        loader_.join();
    }
}

StreamStats StreamedTensors::stats() const {
    std::lock_guard lock(mutex_);
    return stats_;
}

Result<void> StreamedTensors::start(std::vector<FileExtent> extents) {
    const auto& infos = source_.index().tensors;
    if (extents.size() != infos.size()) {
        return fail(errc::invalid_argument, source_.uri() + ": the writer reads " + std::to_string(extents.size()) +
                                                " tensors, the source has " + std::to_string(infos.size()));
    }
    for (std::size_t i = 0; i < infos.size(); ++i) {
        if (has_bytes_to_load(infos[i]) && extents[i].end_bytes > extents[i].begin_bytes) {
            order_.push_back(i);
        }
    }
    std::sort(order_.begin(), order_.end(),
              [&](std::size_t a, std::size_t b) { return extents[a].begin_bytes < extents[b].begin_bytes; });
    for (std::size_t position = 0; position < order_.size(); ++position) {
        extents_.push_back(extents[order_[position]]);
        if (position > 0 && extents_[position].begin_bytes < extents_[position - 1].end_bytes) {
            return fail(errc::invalid_argument,
                        source_.uri() + ": the writer reads two tensors at once (extents overlap)");
        }
    }
    loader_ = std::thread([this] { load_in_order(); });
    return {};
}

Result<bool> StreamedTensors::ready_before(std::uint64_t offset_bytes) {
    auto waits_for = std::lower_bound(extents_.begin(), extents_.end(), offset_bytes,
                                      [](const FileExtent& e, std::uint64_t offset) { return e.begin_bytes < offset; });
    const auto needed = static_cast<std::size_t>(waits_for - extents_.begin());
    std::lock_guard lock(mutex_);
    if (error_) {
        return *error_;
    }
    if (loaded_ >= needed) {
        return true;
    }
    if (needed > demanded_) {
        demanded_ = needed;
        changed_.notify_all();
    }
    return false;
}

void StreamedTensors::done_before(std::uint64_t offset_bytes) {
    std::uint64_t let_go = 0;
    {
        std::lock_guard lock(mutex_);
        const std::size_t loaded = loaded_;
        std::size_t position = released_;
        for (; position < loaded && extents_[position].end_bytes <= offset_bytes; ++position) {
            const std::size_t tensor = order_[position];
            // Its pages go back to the kernel: the writer never reads them again.
            madvise(place_of(tensor), whole_pages(tensors_[tensor].bytes.size()), MADV_DONTNEED);
            let_go += tensors_[tensor].bytes.size();
        }
        released_ = position;
        held_bytes_ -= let_go;
    }
    if (let_go > 0) {
        changed_.notify_all();
    }
}

void StreamedTensors::load_in_order() {
    // Batches of about a quarter of the budget: reading the next overlaps writing the last.
    const std::uint64_t batch_target = std::max<std::uint64_t>(budget_bytes_ / 4, 1);
    std::size_t next = 0;
    while (next < order_.size()) {
        std::size_t end = next;
        {
            std::unique_lock lock(mutex_);
            const auto size_of = [&](std::size_t position) { return tensors_[order_[position]].bytes.size(); };
            const auto may_take = [&](std::size_t position, std::uint64_t batch_bytes) {
                return held_bytes_ + batch_bytes + size_of(position) <= budget_bytes_ || position < demanded_ ||
                       (held_bytes_ == 0 && batch_bytes == 0);
            };
            changed_.wait(lock, [&] { return stopping_ || may_take(next, 0); });
            if (stopping_) {
                return;
            }
            std::uint64_t batch_bytes = 0;
            while (end < order_.size() && (end == next || batch_bytes < batch_target) && may_take(end, batch_bytes)) {
                batch_bytes += size_of(end);
                ++end;
            }
            held_bytes_ += batch_bytes;
            stats_.peak_held_bytes = std::max(stats_.peak_held_bytes, held_bytes_);
        }
        auto loaded = load_batch(next, end);
        std::lock_guard lock(mutex_);
        if (!loaded) {
            error_ = loaded.error();
            return;
        }
        loaded_ = end;
        next = end;
    }
}

Result<void> StreamedTensors::load_batch(std::size_t from, std::size_t to) {
    const auto& infos = source_.index().tensors;
    std::vector<bool> wanted(infos.size(), false);
    std::vector<std::size_t> batch; // in index order: the order destinations are asked for
    for (std::size_t position = from; position < to; ++position) {
        wanted[order_[position]] = true;
        batch.push_back(order_[position]);
    }
    std::sort(batch.begin(), batch.end());
    LoadOptions options = load_;
    options.filter = [&](const TensorInfo& info) {
        return wanted[static_cast<std::size_t>(&info - infos.data())]; // the index's own entries
    };
    std::size_t asked = 0;
    options.destination = [&](const TensorInfo&) { return place_of(batch[asked++]); };
    options.device = "cpu";
    options.dtype.reset();
    options.contiguous = true;
    options.prefault = Prefault::on_touch; // the destinations are ours, not an arena
    options.compute_sha256 = false;
    options.progress = nullptr;
    options.cancel = &cancel_;
    RL_TRY(model, source_.load(options));
    if (model.tensors.size() != batch.size()) {
        return fail(errc::io_error, source_.uri() + ": a batch of " + std::to_string(batch.size()) +
                                        " tensors loaded as " + std::to_string(model.tensors.size()));
    }
    for (std::size_t k = 0; k < batch.size(); ++k) {
        const auto& loaded = model.tensors[k];
        const TensorToWrite& tensor = tensors_[batch[k]];
        // LoadOptions::destination is a contract: every wanted tensor lands where it was asked to.
        if (loaded.bytes.data() != tensor.bytes.data() || loaded.bytes.size() != tensor.bytes.size()) {
            return fail(errc::io_error, source_.uri() + ": tensor '" + loaded.info.display_name() +
                                            "' was not loaded into its place (" + std::to_string(loaded.bytes.size()) +
                                            " bytes, " + std::to_string(tensor.bytes.size()) + " expected)");
        }
    }
    // tensorizer's module indexes are in the per-tensor headers, not the index the writer was
    // planned from: set before the bytes count as ready (the writer's hashes cover them).
    for (std::size_t k = 0; k < batch.size(); ++k) {
        tensors_[batch[k]].module_index = model.tensors[k].info.module_index;
    }
    std::lock_guard lock(mutex_);
    stats_.bytes_loaded += model.bytes;
    stats_.bytes_read += model.bytes_read;
    stats_.how = model.how;
    ++stats_.batches;
    return {};
}

} // namespace ringload
