// bindings/python/src/serializer_binding.cpp
//
// _ringload.write_tensorizer: tensors given as (path, dtype, shape, address, byte length,
// device, is_meta, module_index, tensor_type), written through the engine with the GIL
// released, as a tensorizer, safetensors or torch zip file (`format`). The Python caller keeps
// the tensors alive (and unchanged) during the call.
#include "binding.hpp"

#include "ringload/formats.hpp"
#include "ringload/serializer.hpp"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

namespace ringload::python {
namespace {

std::vector<PathComponent> path_of(const nb::list& components) {
    std::vector<PathComponent> path;
    for (nb::handle component : components) {
        if (nb::isinstance<nb::str>(component)) {
            path.emplace_back(nb::cast<std::string>(component));
        } else if (nb::isinstance<nb::int_>(component)) {
            path.emplace_back(nb::cast<std::uint64_t>(component));
        } else {
            throw nb::type_error("a tensor path holds str keys and int indexes");
        }
    }
    return path;
}

// The format a Python caller names for a new file, refused (ValueError) when unknown or when it
// cannot hold what is asked of it: TensorSerializer checks this at construction, the write again.
const Format& checked_write_format(const std::string& format, bool encrypted) {
    const Format* written_as = format_named(format); // the Python caller's word for it
    if (written_as == nullptr) {
        throw nb::value_error(("format must be " + format_names_text() + ", not " + format).c_str());
    }
    if (!written_as->may_be_encrypted && encrypted) {
        throw nb::value_error(
            ("only " + format_names_text(&Format::may_be_encrypted) + " files can be encrypted").c_str());
    }
    return *written_as;
}

nb::dict write(const std::string& uri, const nb::list& tensors, std::optional<nb::bytes> key,
               std::optional<std::string> passphrase, std::uint64_t opslimit, std::uint64_t memlimit,
               std::optional<nb::bytes> salt, const std::string& format,
               std::vector<std::pair<std::string, std::string>> metadata, std::size_t alignment, nb::object progress,
               const std::string& sign_key, const std::string& signature, const nb::kwargs& network) {
    const Format& written_as = checked_write_format(format, key || passphrase);
    std::vector<TensorToWrite> records;
    for (nb::handle item : tensors) {
        auto row = nb::cast<nb::tuple>(item);
        TensorToWrite record;
        record.path = path_of(nb::cast<nb::list>(row[0]));
        auto dtype = dtype_from_torch_name(nb::cast<std::string>(row[1]));
        if (!dtype) {
            throw nb::value_error(("cannot store dtype " + nb::cast<std::string>(row[1])).c_str());
        }
        record.dtype = *dtype;
        record.shape = nb::cast<std::vector<std::uint64_t>>(row[2]);
        auto* address = reinterpret_cast<const std::byte*>(nb::cast<std::uintptr_t>(row[3]));
        record.bytes = {address, nb::cast<std::size_t>(row[4])};
        record.device = nb::cast<int>(row[5]);
        record.is_meta = nb::cast<bool>(row[6]);
        record.module_index = nb::cast<std::uint16_t>(row[7]);
        record.tensor_type = nb::cast<std::uint8_t>(row[8]);
        records.push_back(std::move(record));
    }
    WriteOptions options;
    OpenOptions open; // the option table's network rows reach a remote target (gs://, s3://)
    LoadOptions unused;
    apply_options(network, open, unused);
    options.network = std::move(open.network);
    options.encryption = encryption_params(key, passphrase, opslimit, memlimit, salt);
    options.sign_key_file = sign_key;
    options.signature_file = signature;
    SafetensorsWriteOptions layout; // a safetensors file's own: the run settings are options'
    layout.metadata = std::move(metadata);
    layout.alignment_bytes = alignment;
    CancelToken cancel;
    options.cancel = &cancel;
    PythonProgress python_progress(progress, cancel); // a callback that raises cancels the write
    options.progress = python_progress.callback();
    Result<WriteSummary> written = fail(errc::invalid_argument, "not written");
    {
        nb::gil_scoped_release released;
        written = write_format(written_as, uri, records, options, layout);
    }
    python_progress.rethrow_if_raised();
    WriteSummary summary = value_or_throw(std::move(written));
    nb::dict out;
    out["tensor_bytes"] = summary.tensor_bytes;
    out["how"] = summary.how;
    add_written(out, summary);
    return out;
}

} // namespace

void add_written(nb::dict& out, const WriteSummary& written) {
    out["file_bytes"] = written.file_bytes;
    out["data_version"] = written.data_version;
    out["seconds"] = written.seconds;
    if (!written.signature_file.empty()) {
        out["signature"] = written.signature_file;
        out["sha256"] = written.sha256_hex;
    }
}

std::optional<EncryptionParams> encryption_params(const std::optional<nb::bytes>& key,
                                                  const std::optional<std::string>& passphrase, std::uint64_t opslimit,
                                                  std::uint64_t memlimit, const std::optional<nb::bytes>& salt) {
    if (key) {
        std::span<const std::byte> bytes(static_cast<const std::byte*>(key->data()), key->size());
        return value_or_throw(EncryptionParams::from_key(bytes));
    }
    if (passphrase && salt) {
        std::span<const std::byte> bytes(static_cast<const std::byte*>(salt->data()), salt->size());
        return value_or_throw(EncryptionParams::from_passphrase(*passphrase, {opslimit, memlimit}, bytes));
    }
    if (passphrase) {
        return value_or_throw(EncryptionParams::from_passphrase(*passphrase, {opslimit, memlimit}));
    }
    return std::nullopt;
}

void bind_serializer(nb::module_& m) {
    m.def("write_tensorizer", &write, nb::arg("uri"), nb::arg("tensors"), nb::arg("key").none() = nb::none(),
          nb::arg("passphrase").none() = nb::none(), nb::arg("opslimit") = 3, nb::arg("memlimit") = 256 << 20,
          nb::arg("salt").none() = nb::none(), nb::arg("format") = "tensorizer",
          nb::arg("metadata") = std::vector<std::pair<std::string, std::string>>{}, nb::arg("alignment") = 8,
          nb::arg("progress") = nb::none(), nb::arg("sign_key") = "", nb::arg("signature") = "", nb::arg("network"),
          "Writes a tensorizer (or safetensors, torch) file from (path, dtype, shape, address, nbytes, device, "
          "is_meta, module_index, "
          "tensor_type) rows; the file appears only when complete; a passphrase is stretched with `salt` (16 "
          "bytes) or a random one; progress(bytes_done, bytes_total, tensors_done, tensors_total) is called as "
          "it goes (an exception it raises stops the write, which leaves no file)");
    m.def(
        "check_write_format",
        [](const std::string& format, bool encrypted) { checked_write_format(format, encrypted); }, nb::arg("format"),
        nb::arg("encrypted"),
        "Raises ValueError when `format` is not a registered one, or cannot be encrypted and `encrypted` is set");
    m.def("random_key", [] {
        auto params = EncryptionParams::random();
        auto key = params.key();
        return nb::bytes(key.data(), key.size());
    });
}

} // namespace ringload::python
