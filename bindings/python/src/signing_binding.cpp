// bindings/python/src/signing_binding.cpp
//
// _ringload.verify_model_signature / sign_model: OpenSSF Model Signing (ringload/model_signing.hpp)
// for the package's ringload.verify_model and ringload.sign_model; the GIL is released while
// the files are hashed.
#include "binding.hpp"

#include "ringload/model_signing.hpp"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

namespace ringload::python {
namespace {

nb::dict summary_dict(const ModelSignatureSummary& summary) {
    nb::dict out;
    out["files"] = summary.files;
    out["resources"] = summary.resources;
    out["bytes"] = summary.bytes;
    out["seconds"] = summary.seconds;
    out["signer"] = summary.signer;
    out["sharded"] = summary.sharded;
    return out;
}

// The check a call's keyword arguments describe.
SignatureCheck check_of(const std::string& signature, const std::string& public_key,
                        const std::vector<std::string>& certificate_chain, const std::string& trust_root,
                        const std::string& identity, const std::string& identity_issuer,
                        const std::vector<std::string>& ignore_paths, bool ignore_git_paths, std::size_t threads) {
    SignatureCheck check;
    check.signature_file = signature;
    check.public_key_file = public_key;
    check.certificate_chain_files = certificate_chain;
    check.trust_root_file = trust_root;
    check.identity = identity;
    check.identity_issuer = identity_issuer;
    check.ignore_paths = ignore_paths;
    check.ignore_git_paths = ignore_git_paths;
    check.threads = threads;
    return check;
}

nb::dict verify(const std::string& model, const std::string& signature, const std::string& public_key,
                const std::vector<std::string>& certificate_chain, const std::string& trust_root,
                const std::string& identity, const std::string& identity_issuer,
                const std::vector<std::string>& ignore_paths, bool ignore_git_paths, std::size_t threads) {
    const SignatureCheck check = check_of(signature, public_key, certificate_chain, trust_root, identity,
                                          identity_issuer, ignore_paths, ignore_git_paths, threads);
    Result<ModelSignatureSummary> verified = fail(errc::invalid_argument, "not verified");
    {
        nb::gil_scoped_release released;
        verified = verify_model_signature(model, check);
    }
    return summary_dict(value_or_throw(std::move(verified)));
}

nb::dict sign(const std::string& model, const std::string& signature, const std::string& private_key,
              const std::vector<std::string>& ignore_paths, bool ignore_git_paths, std::size_t threads) {
    SignatureWrite write{private_key, signature, ignore_paths, ignore_git_paths, threads};
    Result<ModelSignatureSummary> written = fail(errc::invalid_argument, "not signed");
    {
        nb::gil_scoped_release released;
        written = sign_model(model, write);
    }
    return summary_dict(value_or_throw(std::move(written)));
}

// A model whose signature checked out (SignedModel), for the loads of its files.
struct PySignedModel {
    std::shared_ptr<const SignedModel> model;
    std::size_t threads = 0;

    PySignedFile file(const std::string& path) const { return {value_or_throw(model->file(path))}; }
    void verify_file(const std::string& path) const {
        Result<void> verified = fail(errc::invalid_argument, "not verified");
        {
            nb::gil_scoped_release released;
            verified = model->verify_file(path);
        }
        value_or_throw(std::move(verified));
    }
    nb::dict verify_files(const std::vector<std::string>& except_paths) const {
        Result<ModelSignatureSummary> verified = fail(errc::invalid_argument, "not verified");
        {
            nb::gil_scoped_release released;
            verified = model->verify_files(except_paths, threads);
        }
        return summary_dict(value_or_throw(std::move(verified)));
    }
};

PySignedModel open_signed(const std::string& model, const std::string& file, const std::string& signature,
                          const std::string& public_key, const std::vector<std::string>& certificate_chain,
                          const std::string& trust_root, const std::string& identity,
                          const std::string& identity_issuer, const std::vector<std::string>& ignore_paths,
                          bool ignore_git_paths, std::size_t threads) {
    const SignatureCheck check = check_of(signature, public_key, certificate_chain, trust_root, identity,
                                          identity_issuer, ignore_paths, ignore_git_paths, threads);
    Result<std::shared_ptr<const SignedModel>> opened = fail(errc::invalid_argument, "not opened");
    {
        nb::gil_scoped_release released;
        opened = file.empty() ? SignedModel::open(model, check, true) : SignedModel::open_for_file(file, model, check);
    }
    return {value_or_throw(std::move(opened)), threads};
}

} // namespace

void bind_signing(nb::module_& m) {
    nb::class_<PySignedFile>(m, "SignedFile", "A file of a signed model: what its loads must hash to")
        .def_prop_ro("path", [](const PySignedFile& self) { return self.file->path; })
        .def_prop_ro("size", [](const PySignedFile& self) { return self.file->size_bytes; })
        .def_prop_ro("shard_size", [](const PySignedFile& self) { return self.file->shard_bytes; })
        .def(
            "raise_if_changed",
            [](const PySignedFile& self) {
                // failure_of_signed_file's rule for a failed open: the engine's words when it changed.
                Error reported = fail(errc::format_error, "");
                {
                    nb::gil_scoped_release released;
                    reported = failure_of_signed_file(*self.file, reported);
                }
                if (reported.code == errc::hash_mismatch) {
                    throw EngineFailure(reported);
                }
            },
            "After a failed open of the file: raises HashMismatchError naming it where it changed since it was "
            "signed (ringload/model_signing.hpp, failure_of_signed_file), else returns");
    nb::class_<PySignedModel>(m, "SignedModel",
                              "A model whose signature (bundle, signer, statement, file list) checked out")
        .def("file", &PySignedModel::file, nb::arg("path"), "What a load of `path` must hash to")
        .def("verify_file", &PySignedModel::verify_file, nb::arg("path"), "Hashes one file of the model")
        .def("verify_files", &PySignedModel::verify_files, nb::arg("except_paths"),
             "Hashes every file of the folder but these: a summary dict")
        .def("paths", [](const PySignedModel& self) { return self.model->paths(); })
        .def_prop_ro("signer", [](const PySignedModel& self) { return self.model->signer(); })
        .def_prop_ro("sharded", [](const PySignedModel& self) { return self.model->sharded(); });
    m.def("open_signed_model", &open_signed, nb::arg("model"), nb::arg("file"), nb::arg("signature"),
          nb::arg("public_key") = "", nb::arg("certificate_chain") = std::vector<std::string>{},
          nb::arg("trust_root") = "", nb::arg("identity") = "", nb::arg("identity_issuer") = "",
          nb::arg("ignore_paths") = std::vector<std::string>{}, nb::arg("ignore_git_paths") = true,
          nb::arg("threads") = 0,
          "A signed model checked before any byte is read: `model` whole (file empty: its file list "
          "against the statement), or for a load of `file` (`model` the folder, or empty: the file's own)");
    m.def("verify_model_signature", &verify, nb::arg("model"), nb::arg("signature"), nb::arg("public_key") = "",
          nb::arg("certificate_chain") = std::vector<std::string>{}, nb::arg("trust_root") = "",
          nb::arg("identity") = "", nb::arg("identity_issuer") = "",
          nb::arg("ignore_paths") = std::vector<std::string>{}, nb::arg("ignore_git_paths") = true,
          nb::arg("threads") = 0,
          "Checks an OpenSSF Model Signing signature of `model` (a folder or a file): files, resources, bytes, "
          "seconds, signer, sharded; raises SignatureError, HashMismatchError or another RingloadError");
    m.def("sign_model", &sign, nb::arg("model"), nb::arg("signature"), nb::arg("private_key"),
          nb::arg("ignore_paths") = std::vector<std::string>{}, nb::arg("ignore_git_paths") = true,
          nb::arg("threads") = 0, "Signs `model` (the key method), as model_signing verify key accepts");
}

} // namespace ringload::python
