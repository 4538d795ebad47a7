// bindings/python/src/model_stream_binding.cpp
//
// _ringload.stream_model: the engine's model-level call (ringload/model_load.hpp) streamed, for
// ringload.stream_folder: a thread of its own runs load_model over a model's files (read side
// by side, by the engine's rule for how many) with ModelLoadOptions::on_tensor queueing each
// tensor as it lands; next() takes them with the GIL released while it waits, as
// TensorStream does for one file. close() (also on garbage collection) cancels every file's
// load and joins the thread; tensors already handed out stay valid (each keeps its file's
// memory alive through its owner).
//
//  load thread:  [ load_model: file 0 ... on_tensor(0, a) ... file 1 ... on_tensor(1, b) ... done ]
//  Python:       next() -> (0, row of a, a)   next() -> (1, row of b, b)   next() -> None
#include "binding.hpp"
#include "hand_over_queue.hpp"
#include "stream_binding.hpp"

#include "ringload/model_load.hpp"
#include "ringload/options.hpp"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <thread>
#include <variant>

namespace ringload::python {
namespace {

class ModelStream {
public:
    // `model`: a folder or one file (load_model(model): a signature checks in the same read),
    // or a model's files one by one.
    // held_limit_bytes: the most bytes of tensors handed over but not yet taken before the
    // loads wait (HandOverQueue's bound).
    ModelStream(ModelGiven model, ModelLoadOptions options, std::uint64_t held_limit_bytes)
        : handed_(held_limit_bytes) {
        options.keep_tensors = false; // what is handed over is kept by its owner, not the load
        options.load.cancel = &cancel_;
        options.on_tensor = [this](std::size_t file, const StreamedTensor& tensor) {
            handed_.push({file, StreamedItem{tensor}}, tensor.tensor.bytes.size());
        };
        thread_ = std::thread([this, model = std::move(model), options = std::move(options)] { run(model, options); });
    }
    ~ModelStream() { close(); }
    ModelStream(const ModelStream&) = delete;
    ModelStream& operator=(const ModelStream&) = delete;

    // (file, the tensor's index row as tensor_rows gives it, StreamedItem) for the next tensor
    // handed over, None once every file's were; raises the first failure.
    nb::object next() {
        std::optional<Handed> handed = handed_.next();
        if (!handed) {
            return nb::none();
        }
        auto item = std::make_shared<StreamedItem>(std::move(handed->item));
        nb::tuple row = tensor_tuple(item->streamed.tensor.info, item->streamed.position);
        return nb::make_tuple(handed->file, row, nb::cast(item));
    }

    // Cancels the loads still running and waits for the thread (GIL released: it never takes it).
    void close() { handed_.stop(cancel_, thread_); }

private:
    struct Handed {
        std::size_t file = 0;
        StreamedItem item;
    };

    // The load thread: never touches Python.
    void run(const ModelGiven& model, const ModelLoadOptions& options) {
        Result<ModelLoaded> loaded =
            std::visit([&options](const auto& given) { return load_model(given, options); }, model);
        handed_.finish(loaded ? std::nullopt : std::optional<Error>(loaded.error()));
    }

    CancelToken cancel_;
    HandOverQueue<Handed> handed_;
    std::thread thread_;
};

// Tensors handed over but not taken yet that a stream holds before its loads wait: enough to
// keep the reads going while the consumer works, not the whole model (files read side by side
// each hold their memory, on a GPU their device block, until their tensors are dropped).
constexpr std::uint64_t held_limit_default = std::uint64_t{1} << 30;

std::shared_ptr<ModelStream> start(nb::handle model, const std::optional<nb::bytes>& key,
                                   const std::optional<std::string>& passphrase, std::uint64_t held_bytes,
                                   const nb::kwargs& given) {
    ModelGiven what = model_given(model);
    return std::make_shared<ModelStream>(std::move(what), model_load_options(given, key, passphrase), held_bytes);
}

} // namespace

void bind_model_stream(nb::module_& m) {
    nb::class_<ModelStream>(m, "ModelStream",
                            "A model's files loaded side by side, each tensor handed over as it lands")
        .def("next", &ModelStream::next,
             "(file, index row, StreamedItem) for the next tensor handed over (file: its place in the files), None at "
             "the end; waits with the GIL released; raises the first failure, naming its file")
        .def("close", &ModelStream::close, "Cancels the loads still running and waits for them");
    m.def("stream_model", &start, nb::arg("model"), nb::arg("key").none() = nb::none(),
          nb::arg("passphrase").none() = nb::none(), nb::arg("held_bytes") = held_limit_default, nb::arg("options"),
          "ringload/model_load.hpp's load_model of `model` (a folder or one file, or a list of files or URIs in "
          "order) streamed: a ModelStream; the option table's Python rows as keyword arguments; held_bytes: the "
          "most bytes of tensors handed over but not yet taken before the loads wait (default 1 GiB)");
}

} // namespace ringload::python
