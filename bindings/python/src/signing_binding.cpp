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

nb::dict verify(const std::string& model, const std::string& signature, const std::string& public_key,
                const std::vector<std::string>& certificate_chain, const std::vector<std::string>& ignore_paths,
                bool ignore_git_paths, std::size_t threads) {
    SignatureCheck check{signature, public_key, certificate_chain, ignore_paths, ignore_git_paths, threads};
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

} // namespace

void bind_signing(nb::module_& m) {
    m.def("verify_model_signature", &verify, nb::arg("model"), nb::arg("signature"), nb::arg("public_key") = "",
          nb::arg("certificate_chain") = std::vector<std::string>{},
          nb::arg("ignore_paths") = std::vector<std::string>{}, nb::arg("ignore_git_paths") = true,
          nb::arg("threads") = 0,
          "Checks an OpenSSF Model Signing signature of `model` (a folder or a file): files, resources, bytes, "
          "seconds, signer, sharded; raises SignatureError, HashMismatchError or another RingloadError");
    m.def("sign_model", &sign, nb::arg("model"), nb::arg("signature"), nb::arg("private_key"),
          nb::arg("ignore_paths") = std::vector<std::string>{}, nb::arg("ignore_git_paths") = true,
          nb::arg("threads") = 0, "Signs `model` (the key method), as model_signing verify key accepts");
}

} // namespace ringload::python
