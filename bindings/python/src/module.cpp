// bindings/python/src/module.cpp
//
// ringload._ringload: the engine for the Python package (bindings/python/ringload/). The
// package's classes (TensorDeserializer, TensorSerializer, ...) are Python; this module gives
// them the three things they need: open and load (tensors out as DLPack arrays that keep the
// engine's memory alive), write, and errors as ringload.errors classes.
#include "binding.hpp"

NB_MODULE(_ringload, m) {
    m.doc() = "ringload's engine for the ringload Python package (use ringload.TensorDeserializer et al.)";
    ringload::python::bind_errors(m);
    ringload::python::bind_deserializer(m);
    ringload::python::bind_serializer(m);
    ringload::python::bind_stream(m);
}
