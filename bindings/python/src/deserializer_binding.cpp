// bindings/python/src/deserializer_binding.cpp
//
// _ringload.Deserializer: open (a path or URL, with a key or passphrase and network options),
// the index as plain Python values, and load(): the wanted tensors to "cpu" or "cuda:N",
// optionally into caller memory (a module's parameters), with the GIL released throughout.
// Loaded tensors come back as a Loaded object whose array(k) is a DLPack array over the
// engine's memory (host arena or device allocation), which the array keeps alive: torch and
// numpy take them without a copy.
#include "binding.hpp"
#include "dlpack.hpp"
#include "stream_binding.hpp"

#include "ringload/options.hpp"
#include "ringload/ringload.hpp"
#include "ringload/share_plan.hpp"

#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>

namespace ringload::python {

using dlpack_code = nb::dlpack::dtype_code;

nb::dlpack::dtype dlpack_dtype(DType dtype, bool raw) {
    if (raw) {
        return nb::dlpack::dtype{static_cast<std::uint8_t>(dlpack_code::UInt), 8, 1};
    }
    const auto bits = static_cast<std::uint8_t>(itemsize(dtype) * 8);
    auto make = [&](dlpack_code code) { return nb::dlpack::dtype{static_cast<std::uint8_t>(code), bits, 1}; };
    switch (dtype) {
        case DType::float64:
        case DType::float32:
        case DType::float16:
            return make(dlpack_code::Float);
        case DType::bfloat16:
            return make(dlpack_code::Bfloat);
        case DType::int64:
        case DType::int32:
        case DType::int16:
        case DType::int8:
            return make(dlpack_code::Int);
        case DType::uint8:
        case DType::uint16:
        case DType::uint32:
        case DType::uint64:
            return make(dlpack_code::UInt);
        case DType::boolean:
            return make(dlpack_code::Bool);
        case DType::complex32:
        case DType::complex64:
        case DType::complex128:
            return make(dlpack_code::Complex);
        case DType::float8_e4m3fn:
            return make(dlpack_code::Float8_E4M3FN);
        case DType::float8_e5m2:
            return make(dlpack_code::Float8_E5M2);
        case DType::float8_e4m3fnuz:
            return make(dlpack_code::Float8_E4M3FNUZ);
        case DType::float8_e5m2fnuz:
            return make(dlpack_code::Float8_E5M2FNUZ);
        case DType::float8_e8m0fnu:
            return make(dlpack_code::Float8_E8M0FNU);
        case DType::float4_e2m1fn_x2:
            break; // DLPack's float4 counts 4-bit values: given as its bytes, viewed by _tensors.py
    }
    return make(dlpack_code::UInt);
}

LoadOptions engine_load_options(const std::string& device, bool verify, const std::optional<std::string>& dtype,
                                std::size_t slot_size, std::uint32_t slot_count, std::size_t threads) {
    LoadOptions options;
    options.device = device;
    options.verify_hashes = verify;
    options.slot_size_bytes = slot_size;
    options.slot_count = slot_count;
    options.worker_threads = threads;
    if (dtype) {
        auto parsed = dtype_from_torch_name(*dtype);
        if (!parsed) {
            throw nb::value_error(("unknown dtype " + *dtype).c_str());
        }
        options.dtype = parsed;
    }
    return options;
}

namespace {

nb::object path_object(const PathComponent& component) {
    if (const auto* key = std::get_if<std::string>(&component)) {
        return nb::str(key->data(), key->size());
    }
    return nb::int_(std::get<std::uint64_t>(component));
}

nb::dict tensor_dict(const TensorInfo& info, std::size_t index) {
    nb::dict row;
    row["index"] = index;
    row["name"] = nb::bytes(info.name.data(), info.name.size());
    nb::list path;
    for (const auto& component : info.path) {
        path.append(path_object(component));
    }
    row["path"] = path;
    row["dtype"] = std::string(torch_name(info.dtype));
    nb::list shape;
    for (auto extent : info.shape) {
        shape.append(extent);
    }
    row["shape"] = nb::tuple(shape);
    row["byte_length"] = info.byte_length;
    row["data_length"] = info.data_length_bytes;
    row["data_offset"] = info.data_offset_bytes;
    row["is_meta"] = info.is_meta;
    row["module_index"] = info.module_index;
    row["tensor_type"] = info.tensor_type;
    return row;
}

// One load's tensors and what owns their memory.
struct Loaded {
    LoadedModel model;
    std::vector<std::size_t> order;         // index positions, as asked
    std::vector<std::size_t> position_of_k; // k (request order) -> model.tensors position
    double seconds() const { return model.seconds; }
};

template <class Framework>
nb::ndarray<Framework> array_of(const std::shared_ptr<Loaded>& loaded, std::size_t k, bool raw) {
    if (k >= loaded->position_of_k.size()) {
        throw nb::index_error("no such loaded tensor");
    }
    // The array keeps the whole load alive (one arena or allocation for all its tensors).
    auto* keep = new std::shared_ptr<Loaded>(loaded);
    nb::capsule owner(keep, [](void* pointer) noexcept { delete static_cast<std::shared_ptr<Loaded>*>(pointer); });
    return tensor_array<Framework>(loaded->model.tensors[loaded->position_of_k[k]], std::move(owner),
                                   loaded->model.device, raw);
}

// A Python callable kept by the engine's reader source, dropped with the GIL held (the source
// may go on a thread that does not hold it).
struct PythonCallable {
    nb::object function;
    explicit PythonCallable(nb::object f) : function(std::move(f)) {}
    PythonCallable(const PythonCallable&) = delete;
    PythonCallable& operator=(const PythonCallable&) = delete;
    ~PythonCallable() {
        nb::gil_scoped_acquire held;
        function.reset();
    }
};

// Deserializer(reader=(size, read, how)): `read(offset, length)` returns up to `length` bytes
// (fewer only at the end), called from the engine's I/O thread with the GIL taken for it.
std::optional<ExternalReader> external_reader_of(nb::handle reader) {
    if (reader.is_none()) {
        return std::nullopt;
    }
    auto parts = nb::cast<nb::tuple>(reader);
    if (parts.size() != 3) {
        throw nb::value_error("reader must be (size, read(offset, length) -> bytes, how)");
    }
    ExternalReader external;
    external.size_bytes = nb::cast<std::uint64_t>(parts[0]);
    external.how = nb::cast<std::string>(parts[2]);
    auto callable = std::make_shared<PythonCallable>(nb::borrow(parts[1]));
    external.read = [callable, reader_how = external.how](std::uint64_t offset,
                                                          std::span<std::byte> dst) -> Result<std::size_t> {
        nb::gil_scoped_acquire held;
        try {
            nb::object data = callable->function(offset, dst.size());
            nb::bytes bytes = nb::cast<nb::bytes>(data);
            const std::size_t count = std::min(dst.size(), bytes.size());
            std::memcpy(dst.data(), bytes.data(), count);
            return count;
        } catch (const nb::python_error& error) {
            // The exception's type and text, not the traceback python_error::what() carries.
            const std::string why = nb::cast<std::string>(nb::str(error.type().attr("__name__"))) + ": " +
                                    nb::cast<std::string>(nb::str(error.value()));
            return fail(errc::io_error, "reading through " + reader_how + " failed: " + why);
        } catch (const std::exception& error) {
            return fail(errc::io_error, "reading through " + reader_how + " failed: " + error.what());
        }
    };
    return external;
}

class PyDeserializer {
public:
    PyDeserializer(const std::string& uri, std::optional<nb::bytes> key, std::optional<std::string> passphrase,
                   OpenOptions options, Placement placement)
        : placement_(placement), network_(options.network) {
        options.ring_at_open = placement_ != Placement::mapped_file; // its loads map the file's pages
        if (key) {
            std::span<const std::byte> bytes(static_cast<const std::byte*>(key->data()), key->size());
            options.decryption = value_or_throw(DecryptionParams::from_key(bytes));
        } else if (passphrase) {
            options.decryption = value_or_throw(DecryptionParams::from_passphrase(*passphrase));
        }
        Result<Deserializer> opened = fail(errc::invalid_argument, "not opened");
        {
            nb::gil_scoped_release released; // network reads, Argon2id
            opened = Deserializer::open(uri, std::move(options));
        }
        inner_ = std::make_shared<Deserializer>(value_or_throw(std::move(opened)));
    }

    // The whole file into `target`, streamed (ringload/convert.hpp); GIL released.
    nb::dict convert_to(const std::string& target, const std::string& format, bool verify, std::optional<nb::bytes> key,
                        std::optional<std::string> passphrase, std::uint64_t opslimit, std::uint64_t memlimit,
                        std::optional<nb::bytes> salt, std::uint64_t memory_budget, const std::string& sign_key,
                        const std::string& signature) {
        opened();
        const std::shared_ptr<Deserializer> kept = inner_;
        ConvertOptions options;
        options.format = format;
        options.verify_hashes = verify;
        options.memory_budget_bytes = memory_budget;
        options.network = network_; // the open's settings reach a remote target too (gs://, s3://)
        options.encryption = encryption_params(key, passphrase, opslimit, memlimit, salt);
        options.sign_key_file = sign_key;
        options.signature_file = signature;
        Result<ConvertSummary> converted = fail(errc::invalid_argument, "not converted");
        {
            nb::gil_scoped_release released;
            std::lock_guard lock(mutex_);
            converted = convert(*kept, target, options);
        }
        ConvertSummary summary = value_or_throw(std::move(converted));
        nb::dict out;
        out["format"] = summary.format;
        out["tensors"] = summary.tensors;
        out["bytes_read"] = summary.bytes_read;
        out["peak_held_bytes"] = summary.peak_held_bytes;
        out["batches"] = summary.batches;
        add_written(out, summary.written);
        return out;
    }

    nb::list tensors() {
        nb::list rows;
        const auto& index = opened().index();
        for (std::size_t i = 0; i < index.tensors.size(); ++i) {
            rows.append(tensor_dict(index.tensors[i], i));
        }
        return rows;
    }

    nb::list tensor_rows() {
        const auto& index = opened().index();
        nb::list rows = nb::steal<nb::list>(PyList_New(static_cast<Py_ssize_t>(index.tensors.size())));
        for (std::size_t i = 0; i < index.tensors.size(); ++i) {
            PyList_SET_ITEM(rows.ptr(), static_cast<Py_ssize_t>(i), tensor_tuple(index.tensors[i], i).release().ptr());
        }
        return rows;
    }

    std::shared_ptr<Loaded> load(const std::vector<std::size_t>& indices, const std::string& device,
                                 std::optional<std::string> dtype, bool verify,
                                 std::optional<std::vector<std::uintptr_t>> destinations, std::size_t slot_size,
                                 std::uint32_t slot_count, std::size_t threads, nb::object progress, bool contiguous) {
        opened();
        const std::shared_ptr<Deserializer> kept = inner_; // alive through a close() meanwhile
        Deserializer& deserializer = *kept;
        const Index& index = deserializer.index();
        // Tensors are told apart by their place in the index (offsets are not unique: torch
        // views share a storage, empty safetensors tensors share an offset). The filter and
        // destination callbacks get references into index.tensors.
        std::map<std::size_t, std::size_t> k_of_index;
        for (std::size_t k = 0; k < indices.size(); ++k) {
            if (indices[k] >= index.tensors.size()) {
                throw nb::index_error("tensor index out of range");
            }
            if (!k_of_index.emplace(indices[k], k).second) {
                throw nb::value_error("a tensor index appears twice in one load");
            }
        }
        if (destinations && destinations->size() != indices.size()) {
            throw nb::value_error("one destination per tensor");
        }
        LoadOptions options = engine_load_options(device, verify, dtype, slot_size, slot_count, threads);
        options.placement = placement_;
        options.signed_file = signed_file_;
        options.contiguous = contiguous;
        // Asked by position (k_of_index is ascending): a load of a few tensors of a large index
        // costs what they cost (safe_open's get_tensor on a mixture of experts).
        options.tensors.reserve(k_of_index.size());
        for (const auto& [position, k] : k_of_index) {
            options.tensors.push_back(position);
        }
        // Asked once per wanted tensor, in index order (with the tensor as loaded: a copy).
        auto next_destination = k_of_index.begin();
        if (destinations) {
            options.destination = [&](const TensorInfo&) {
                return reinterpret_cast<std::byte*>((*destinations)[(next_destination++)->second]);
            };
        }
        CancelToken cancel;
        options.cancel = &cancel;
        PythonProgress python_progress(progress, cancel); // a callback that raises cancels the load
        options.progress = python_progress.callback();
        auto loaded = std::make_shared<Loaded>();
        Result<LoadedModel> model = fail(errc::invalid_argument, "not loaded");
        {
            nb::gil_scoped_release released;
            std::lock_guard lock(mutex_);
            model = deserializer.load(options);
        }
        python_progress.rethrow_if_raised();
        loaded->model = value_or_throw(std::move(model));
        // model.tensors are in index order (k_of_index's order); the caller asked in its own.
        loaded->position_of_k.resize(indices.size());
        std::size_t position = 0;
        for (const auto& [i, k] : k_of_index) {
            loaded->position_of_k[k] = position++;
        }
        return loaded;
    }

    // Slices of tensors, all read in one pass (Deserializer::load_slices): requests are
    // (tensor index, [(start, stop) per dimension]); tensor k of the result is request k;
    // destinations (one per request, 0 for none): addresses on `device` the slices go to.
    std::shared_ptr<Loaded> load_slices(
        const std::vector<std::pair<std::size_t, std::vector<std::pair<std::uint64_t, std::uint64_t>>>>& requests,
        const std::string& device, std::optional<std::string> dtype, bool verify, std::size_t slot_size,
        std::uint32_t slot_count, std::size_t threads, std::optional<std::uint64_t> merge_gap,
        const std::optional<std::vector<std::uintptr_t>>& destinations) {
        opened();
        if (destinations && destinations->size() != requests.size()) {
            throw nb::value_error("load_slices: one destination per request (0 for none)");
        }
        const std::shared_ptr<Deserializer> kept = inner_;
        std::vector<SliceRequest> slices;
        slices.reserve(requests.size());
        for (std::size_t k = 0; k < requests.size(); ++k) {
            SliceRequest request{requests[k].first, {}};
            for (const auto& [start, stop] : requests[k].second) {
                request.ranges.push_back({start, stop});
            }
            if (destinations) {
                request.destination = reinterpret_cast<std::byte*>((*destinations)[k]);
            }
            slices.push_back(std::move(request));
        }
        LoadOptions options = engine_load_options(device, verify, dtype, slot_size, slot_count, threads);
        options.signed_file = signed_file_;
        auto loaded = std::make_shared<Loaded>();
        Result<LoadedModel> model = fail(errc::invalid_argument, "not loaded");
        {
            nb::gil_scoped_release released;
            std::lock_guard lock(mutex_);
            model = kept->load_slices(slices, options, SliceReadOptions{merge_gap});
        }
        loaded->model = value_or_throw(std::move(model));
        loaded->position_of_k.resize(slices.size());
        for (std::size_t k = 0; k < slices.size(); ++k) {
            loaded->position_of_k[k] = k;
        }
        return loaded;
    }

    const Index& index() { return opened().index(); }
    const std::string& source_name() { return opened().source_name(); }
    // A streamed load (stream_binding.cpp) runs on a thread of its own with these: the
    // deserializer, kept alive by it, and the lock that makes it one load at a time.
    std::shared_ptr<Deserializer> shared() {
        opened();
        return inner_;
    }
    std::mutex& load_lock() { return mutex_; }
    Placement placement() const noexcept { return placement_; }
    // A file of a signed model: every load of it reads and hashes the whole file (LoadOptions::signed_file).
    const std::shared_ptr<const SignedFile>& signed_file() const noexcept { return signed_file_; }
    void set_signed_file(const PySignedFile& file) { signed_file_ = file.file; }
    // A load running on another thread keeps its own reference: the file goes when it ends.
    void close() { inner_.reset(); }
    bool closed() const { return inner_ == nullptr; }

private:
    Deserializer& opened() {
        if (!inner_) {
            throw nb::value_error("this deserializer is closed");
        }
        return *inner_;
    }

    std::shared_ptr<Deserializer> inner_;
    Placement placement_ = Placement::automatic; // where every load of this file puts its tensors
    std::shared_ptr<const SignedFile> signed_file_;
    NetworkOptions network_; // the open's, for a convert's remote target
    // One load at a time: the engine's deserializer is single-threaded. Taken with the GIL
    // released (a waiting thread must not hold the GIL the running load's progress needs).
    std::mutex mutex_;
};

// Deserializer.plan_shares: ringload/share_plan.hpp's plan, as nested tuples for _distributed.py.
nb::tuple share_plan_tuple(PyDeserializer& self, const std::vector<std::size_t>& indices,
                           std::optional<std::string> dtype, std::uint32_t world_size, bool split_rows,
                           std::uint64_t round_bytes) {
    std::optional<DType> wanted_dtype;
    if (dtype) {
        wanted_dtype = dtype_from_torch_name(*dtype);
        if (!wanted_dtype) {
            throw nb::value_error(("unknown dtype " + *dtype).c_str());
        }
    }
    const SharePlan plan =
        value_or_throw(plan_shares(self.index(), indices, wanted_dtype, world_size, {split_rows, round_bytes}));
    nb::list rounds;
    for (const ShareRound& round : plan.rounds) {
        nb::list ranks;
        for (const RankRound& mine : round.ranks) {
            nb::list pieces;
            for (const SharePiece& piece : mine.pieces) {
                pieces.append(nb::make_tuple(piece.position, piece.whole, piece.row_begin, piece.row_end,
                                             piece.buffer_offset, piece.buffer_length));
            }
            ranks.append(nb::make_tuple(mine.begin, mine.end, pieces));
        }
        rounds.append(ranks);
    }
    return nb::make_tuple(plan.tensor_offsets, plan.total_bytes, rounds);
}

void bind_loaded(nb::module_& m) {
    nb::class_<Loaded>(m, "Loaded", "The tensors of one load; arrays over them keep it alive")
        .def("array", &array_of<nb::pytorch>, nb::arg("k"), nb::arg("raw") = false,
             "Tensor k (in the order asked) as a torch tensor over the same memory (DLPack); raw: its bytes, a "
             "flat uint8 array")
        .def("numpy_array", &array_of<nb::numpy>, nb::arg("k"), nb::arg("raw") = false,
             "Tensor k as a numpy array over the same memory (host loads; raw: its bytes, flat uint8)")
        .def(
            "module_index",
            [](const Loaded& loaded, std::size_t k) {
                if (k >= loaded.position_of_k.size()) {
                    throw nb::index_error("no such loaded tensor");
                }
                return loaded.model.tensors[loaded.position_of_k[k]].info.module_index;
            },
            nb::arg("k"), "Tensor k's module_idx, from its header (the index does not hold it)")
        .def(
            "strides",
            [](const Loaded& loaded, std::size_t k) {
                if (k >= loaded.position_of_k.size()) {
                    throw nb::index_error("no such loaded tensor");
                }
                return strides_of(loaded.model.tensors[loaded.position_of_k[k]]);
            },
            nb::arg("k"), "Tensor k's element steps where it is a strided view of a torch storage, else None")
        .def(
            "name",
            [](const Loaded& loaded, std::size_t k) {
                if (k >= loaded.position_of_k.size()) {
                    throw nb::index_error("no such loaded tensor");
                }
                return loaded.model.tensors[loaded.position_of_k[k]].info.display_name();
            },
            nb::arg("k"), "Tensor k's name, as the file's index gives it")
        .def(
            "row",
            [](const Loaded& loaded, std::size_t k) {
                if (k >= loaded.position_of_k.size()) {
                    throw nb::index_error("no such loaded tensor");
                }
                const std::size_t position = loaded.position_of_k[k];
                return tensor_tuple(loaded.model.tensors[position].info, position);
            },
            nb::arg("k"), "Tensor k as loaded (its dtype after dtype=), as an index row of tensor_rows()")
        .def_prop_ro("seconds", &Loaded::seconds)
        .def_prop_ro("bytes", [](const Loaded& loaded) { return loaded.model.bytes; })
        .def_prop_ro("device", [](const Loaded& loaded) { return loaded.model.device; })
        .def_prop_ro("how", [](const Loaded& loaded) { return loaded.model.how; })
        .def_prop_ro("bytes_read", [](const Loaded& loaded) { return loaded.model.bytes_read; })
        .def("__len__", [](const Loaded& loaded) { return loaded.position_of_k.size(); });
}

// The index: what the file holds, its format and metadata.
void bind_index_properties(nb::class_<PyDeserializer>& deserializer) {
    deserializer.def_prop_ro("data_version", [](PyDeserializer& self) { return self.index().data_version; })
        .def_prop_ro("encrypted", [](PyDeserializer& self) { return self.index().encrypted; })
        .def_prop_ro(
            "source_name", [](PyDeserializer& self) { return self.source_name(); },
            "The file or URL as messages name it (a remote URI without its password)")
        .def_prop_ro("total_tensor_bytes", [](PyDeserializer& self) { return self.index().total_tensor_bytes(); })
        // For safe_open: which format read the file, and safetensors' __metadata__ in file order.
        .def_prop_ro("format", [](PyDeserializer& self) { return std::string(self.index().format_name()); })
        .def_prop_ro("metadata", [](PyDeserializer& self) {
            nb::list pairs;
            for (const auto& [key, value] : self.index().metadata) {
                pairs.append(nb::make_tuple(nb::str(key.data(), key.size()), nb::str(value.data(), value.size())));
            }
            return pairs;
        });
}

// load, load_slices, stream, convert_to and close: what a Deserializer does with its tensors.
void bind_loads(nb::class_<PyDeserializer>& deserializer) {
    deserializer
        .def("load", &PyDeserializer::load, nb::arg("indices"), nb::arg("device") = "cpu",
             nb::arg("dtype").none() = nb::none(), nb::arg("verify") = false,
             nb::arg("destinations").none() = nb::none(), nb::arg("slot_size") = 0, nb::arg("slot_count") = 0,
             nb::arg("threads") = 0, nb::arg("progress") = nb::none(), nb::arg("contiguous") = true,
             "Loads the tensors at `indices` (GIL released); destinations: addresses on `device` to fill; "
             "contiguous=False: torch zip views stay strided views of their storages (Loaded.strides), on a GPU "
             "too, where the engine makes no contiguous copies")
        .def("load_slices", &PyDeserializer::load_slices, nb::arg("requests"), nb::arg("device") = "cpu",
             nb::arg("dtype").none() = nb::none(), nb::arg("verify") = false, nb::arg("slot_size") = 0,
             nb::arg("slot_count") = 0, nb::arg("threads") = 0, nb::arg("merge_gap").none() = nb::none(),
             nb::arg("destinations").none() = nb::none(),
             "Reads slices: requests are (tensor index, [(start, stop) per dimension]), all in one pass (GIL "
             "released); tensor k of the result is request k; merge_gap: gaps up to this many bytes are read "
             "through (None: automatic); destinations: per request an address on `device` to put the slice "
             "(C order, as loaded), 0 for the result's own memory")
        .def("convert_to", &PyDeserializer::convert_to, nb::arg("target"), nb::arg("format") = "",
             nb::arg("verify") = true, nb::arg("key").none() = nb::none(), nb::arg("passphrase").none() = nb::none(),
             nb::arg("opslimit") = 3, nb::arg("memlimit") = 256 << 20, nb::arg("salt").none() = nb::none(),
             nb::arg("memory_budget") = 1ULL << 30, nb::arg("sign_key") = "", nb::arg("signature") = "",
             "Writes the whole file to `target` in `format` (empty: by its extension), streamed within "
             "memory_budget bytes; key/passphrase encrypt a tensorizer target")
        .def("set_signed_file", &PyDeserializer::set_signed_file, nb::arg("file"),
             "Makes every load of this file read the whole file and check it against a signed model's "
             "statement (SignedModel.file)")
        .def("close", &PyDeserializer::close)
        .def_prop_ro("closed", &PyDeserializer::closed)
        .def(
            "stream",
            [](nb::object self, std::vector<std::size_t> indices, const std::string& device,
               std::optional<std::string> dtype, bool verify, std::size_t slot_size, std::uint32_t slot_count,
               std::size_t threads, bool contiguous) {
                auto& opened = nb::cast<PyDeserializer&>(self);
                StreamRequest request{
                    std::move(indices), device,  std::move(dtype),   verify,     slot_size,
                    slot_count,         threads, opened.placement(), contiguous, opened.signed_file()};
                return start_stream(self, opened.shared(), opened.load_lock(), std::move(request));
            },
            nb::arg("indices"), nb::arg("device") = "cpu", nb::arg("dtype").none() = nb::none(),
            nb::arg("verify") = false, nb::arg("slot_size") = 0, nb::arg("slot_count") = 0, nb::arg("threads") = 0,
            nb::arg("contiguous") = true,
            "Starts loading the tensors at `indices` on a thread of its own; the TensorStream returned hands "
            "each over as it lands");
}

} // namespace

// tensor_dict's fields as a tuple, in _Entry's order (index, name, path, dtype, shape,
// byte_length, data_length, is_meta, module_index, tensor_type, data_offset): no dict and no key strings
// per tensor, for indexes of a million tensors.
nb::tuple tensor_tuple(const TensorInfo& info, std::size_t index) {
    nb::object path = nb::steal(PyTuple_New(static_cast<Py_ssize_t>(info.path.size())));
    for (std::size_t k = 0; k < info.path.size(); ++k) {
        PyTuple_SET_ITEM(path.ptr(), static_cast<Py_ssize_t>(k), path_object(info.path[k]).release().ptr());
    }
    nb::object shape = nb::steal(PyTuple_New(static_cast<Py_ssize_t>(info.shape.size())));
    for (std::size_t k = 0; k < info.shape.size(); ++k) {
        PyTuple_SET_ITEM(shape.ptr(), static_cast<Py_ssize_t>(k), PyLong_FromUnsignedLongLong(info.shape[k]));
    }
    return nb::make_tuple(index, nb::bytes(info.name.data(), info.name.size()), path,
                          nb::str(torch_name(info.dtype).data(), torch_name(info.dtype).size()), shape,
                          info.byte_length, info.data_length_bytes, info.is_meta, info.module_index, info.tensor_type,
                          info.data_offset_bytes);
}

nb::object loaded_object(LoadedModel model) {
    auto loaded = std::make_shared<Loaded>();
    loaded->model = std::move(model);
    loaded->position_of_k.resize(loaded->model.tensors.size());
    for (std::size_t k = 0; k < loaded->position_of_k.size(); ++k) {
        loaded->position_of_k[k] = k; // the load's own order: index order
    }
    return nb::cast(std::move(loaded));
}

void bind_deserializer(nb::module_& m) {
    bind_loaded(m);
    nb::class_<PyDeserializer> deserializer(m, "Deserializer",
                                            "An opened tensorizer file or URL (the engine's Deserializer)");
    deserializer
        .def(
            "__init__",
            [](PyDeserializer* self, const std::string& uri, std::optional<nb::bytes> key,
               std::optional<std::string> passphrase, const std::string& expected_format, nb::handle reader,
               const nb::kwargs& options) {
                OpenOptions open;
                LoadOptions load;
                apply_options(options, open, load);
                open.expected_format = expected_format;
                open.external_reader = external_reader_of(reader);
                new (self) PyDeserializer(uri, std::move(key), std::move(passphrase), std::move(open), load.placement);
            },
            nb::arg("uri"), nb::arg("key").none() = nb::none(), nb::arg("passphrase").none() = nb::none(),
            nb::arg("expected_format") = "", nb::arg("reader").none() = nb::none(), nb::arg("options"),
            "Opens `uri` with the option table's settings as keyword arguments (option_table() lists "
            "them: read_mode, placement, connections, ..., each registered source's)")
        .def("tensors", &PyDeserializer::tensors, "The index: one dict per tensor, in file order")
        .def("tensor_rows", &PyDeserializer::tensor_rows,
             "The index as tuples (index, name, path, dtype, shape, byte_length, data_length, is_meta, "
             "module_index, tensor_type, data_offset), in file order: tensors() without a dict per tensor")
        .def("plan_shares", &share_plan_tuple, nb::arg("indices"), nb::arg("dtype").none(), nb::arg("world_size"),
             nb::arg("split_rows"), nb::arg("round_bytes"),
             "ringload/share_plan.hpp's plan for reading `indices` once over `world_size` ranks: (tensor offsets "
             "in the buffer, buffer bytes, rounds: per rank (begin, end, pieces: (position, whole, row_begin, "
             "row_end, buffer_offset, buffer_length)))");
    bind_index_properties(deserializer);
    bind_loads(deserializer);
}

} // namespace ringload::python
