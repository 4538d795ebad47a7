// bindings/python/src/stream_binding.cpp
//
// A streamed load: a thread of its own runs Deserializer::load (holding the Python
// deserializer's load lock, as a load does) with LoadOptions::on_tensor queueing each tensor
// as it lands; next() takes them, in the order they completed, with the GIL released while it
// waits. close() (also on garbage collection) cancels the load and joins its thread: reads
// stop, every slot comes back, and the tensors already handed out stay valid (each keeps the
// load's memory alive through its owner).
//
//  load thread:   [ load ........ on_tensor(a) ... on_tensor(b) ........ done ]
//  queue:                          [a]              [b]
//  Python:        next() waits ----> (0, a)  next() -> (1, b)   next() -> None
#include "stream_binding.hpp"

#include "dlpack.hpp"
#include "hand_over_queue.hpp"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <thread>

namespace ringload::python {
namespace {

template <class Framework>
nb::ndarray<Framework> item_array(const std::shared_ptr<StreamedItem>& item, std::size_t k, bool raw) {
    if (k != 0) {
        throw nb::index_error("a streamed item holds one tensor (k = 0)");
    }
    // The array keeps the item, and with it the owner of the load's memory.
    auto* keep = new std::shared_ptr<StreamedItem>(item);
    nb::capsule owner(keep,
                      [](void* pointer) noexcept { delete static_cast<std::shared_ptr<StreamedItem>*>(pointer); });
    return tensor_array<Framework>(item->streamed.tensor, std::move(owner), item->streamed.device, raw);
}

class TensorStream {
public:
    struct Figures {
        double seconds = 0;
        std::uint64_t bytes_read = 0;
        std::string how;
    };

    TensorStream(nb::object owner, std::shared_ptr<Deserializer> source, std::mutex& lock, StreamRequest request)
        : owner_(std::move(owner)), source_(std::move(source)), lock_(lock), request_(std::move(request)) {
        const Index& index = source_->index();
        wanted_.assign(index.tensors.size(), false);
        for (std::size_t i : request_.indices) {
            if (i >= index.tensors.size()) {
                throw nb::index_error("tensor index out of range");
            }
            if (wanted_[i]) {
                throw nb::value_error("a tensor index appears twice in one load");
            }
            wanted_[i] = true;
        }
        // The model's positions are in index order; the caller asked in its own.
        std::vector<std::size_t> k_of_index(index.tensors.size(), 0);
        for (std::size_t k = 0; k < request_.indices.size(); ++k) {
            k_of_index[request_.indices[k]] = k;
        }
        for (std::size_t i = 0; i < index.tensors.size(); ++i) {
            if (wanted_[i]) {
                k_of_position_.push_back(k_of_index[i]);
            }
        }
        LoadOptions options = load_options();
        thread_ = std::thread([this, options = std::move(options)] { run(options); });
    }
    ~TensorStream() { close(); }
    TensorStream(const TensorStream&) = delete;
    TensorStream& operator=(const TensorStream&) = delete;

    // (k, item) for the next tensor handed over, None once all were; raises the load's failure.
    nb::object next() {
        std::optional<StreamedItem> item = handed_.next();
        if (!item) {
            return nb::none();
        }
        auto shared = std::make_shared<StreamedItem>(std::move(*item));
        const std::size_t k = k_of_position_.at(shared->streamed.position);
        return nb::make_tuple(k, nb::cast(shared));
    }

    // Cancels a load still running and waits for its thread (GIL released: it never takes it).
    void close() { handed_.stop(cancel_, thread_); }

    // After the end (next() returned None): the load's figures.
    double seconds() { return finished_state().seconds; }
    std::uint64_t bytes_read() { return finished_state().bytes_read; }
    std::string how() { return finished_state().how; }

private:
    Figures finished_state() {
        nb::gil_scoped_release released;
        std::lock_guard lock(figures_mutex_);
        return figures_;
    }

    LoadOptions load_options() {
        LoadOptions options = engine_load_options(request_.device, request_.verify, request_.dtype, request_.slot_size,
                                                  request_.slot_count, request_.threads);
        options.placement = request_.placement;
        options.contiguous = request_.contiguous;
        options.signed_file = request_.signed_file;
        const Index& index = source_->index();
        options.filter = [this, &index](const TensorInfo& info) {
            return static_cast<bool>(wanted_[static_cast<std::size_t>(&info - index.tensors.data())]);
        };
        options.cancel = &cancel_;
        options.on_tensor = [this](const StreamedTensor& tensor) { handed_.push({tensor}); };
        return options;
    }

    // The load thread: never touches Python.
    void run(const LoadOptions& options) {
        Result<LoadedModel> model = fail(errc::invalid_argument, "not loaded");
        {
            std::lock_guard load_lock(lock_);
            model = source_->load(options);
        }
        if (model) {
            std::lock_guard lock(figures_mutex_);
            figures_ = {model->seconds, model->bytes_read, model->how};
        }
        handed_.finish(model ? std::nullopt : std::optional<Error>(model.error()));
    }

    nb::object owner_; // the Python deserializer: `lock_` and the file live as long as it
    std::shared_ptr<Deserializer> source_;
    std::mutex& lock_;
    StreamRequest request_;
    std::vector<bool> wanted_;               // by index position
    std::vector<std::size_t> k_of_position_; // the model's position -> the caller's k
    CancelToken cancel_;

    HandOverQueue<StreamedItem> handed_;
    std::mutex figures_mutex_;
    Figures figures_; // guarded by figures_mutex_
    std::thread thread_;
};

} // namespace

nb::object start_stream(nb::object owner, std::shared_ptr<Deserializer> source, std::mutex& lock,
                        StreamRequest request) {
    return nb::cast(std::make_shared<TensorStream>(std::move(owner), std::move(source), lock, std::move(request)));
}

void bind_stream(nb::module_& m) {
    nb::class_<StreamedItem>(m, "StreamedItem", "One tensor handed over by a TensorStream; arrays keep it alive")
        .def("array", &item_array<nb::pytorch>, nb::arg("k") = 0, nb::arg("raw") = false,
             "The tensor as a torch tensor over the load's memory (DLPack); raw: its bytes, flat uint8")
        .def("numpy_array", &item_array<nb::numpy>, nb::arg("k") = 0, nb::arg("raw") = false)
        .def(
            "module_index",
            [](const StreamedItem& item, std::size_t k) {
                (void)k;
                return item.streamed.tensor.info.module_index;
            },
            nb::arg("k") = 0)
        .def(
            "strides",
            [](const StreamedItem& item, std::size_t k) {
                (void)k;
                return strides_of(item.streamed.tensor);
            },
            nb::arg("k") = 0);

    nb::class_<TensorStream>(m, "TensorStream", "A load that hands each tensor over as it lands")
        .def("next", &TensorStream::next,
             "(k, StreamedItem) for the next tensor handed over (k: its place in the indices asked for), None at the "
             "end; waits with the GIL released; raises the load's failure")
        .def("close", &TensorStream::close, "Cancels the load if it is still running and waits for it")
        .def_prop_ro("seconds", &TensorStream::seconds)
        .def_prop_ro("bytes_read", &TensorStream::bytes_read)
        .def_prop_ro("how", &TensorStream::how);
}

} // namespace ringload::python
