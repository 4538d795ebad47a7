// bindings/python/src/module.cpp
//
// ringload._ringload: the engine for the Python package (bindings/python/ringload/). The
// package's classes (TensorDeserializer, TensorSerializer, ...) are Python; this module gives
// them the three things they need: open and load (tensors out as DLPack arrays that keep the
// engine's memory alive), write, and errors as ringload.errors classes.
#include "binding.hpp"

#include "ringload/io/file_source.hpp"

#include <nanobind/stl/string.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace {

// What the engine's read_mode "auto" decides for a local file: whether it reads it through the
// page cache. False for a file it cannot open (its open says why).
bool mostly_in_page_cache(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return false;
    }
    struct stat info {};
    const bool cached = ::fstat(fd, &info) == 0 && S_ISREG(info.st_mode) &&
                        ringload::mostly_in_page_cache(fd, static_cast<std::uint64_t>(info.st_size));
    ::close(fd);
    return cached;
}

} // namespace

NB_MODULE(_ringload, m) {
    m.doc() = "ringload's engine for the ringload Python package (use ringload.TensorDeserializer et al.)";
    ringload::python::bind_errors(m);
    ringload::python::bind_deserializer(m);
    ringload::python::bind_serializer(m);
    ringload::python::bind_stream(m);
    ringload::python::bind_facts(m);
    ringload::python::bind_model_load(m);
    ringload::python::bind_model_stream(m);
    ringload::python::bind_signing(m);
    m.def("mostly_in_page_cache", &mostly_in_page_cache, nanobind::arg("path"),
          "Whether the engine's read_mode \"auto\" reads this local file through the page cache (enough of "
          "it is there); False where it cannot be opened");
}
