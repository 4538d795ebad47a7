// formats/torch/format.hpp
//
// The torch.save zip format's registered description (ringload/format.hpp): tensors are views
// of shared storages, with no hashes and no encryption; read by formats/torch, written by
// formats/torch_writer, to local files.
#pragma once

#include "ringload/format.hpp"

namespace ringload::torch_zip {

extern const Format format;

} // namespace ringload::torch_zip
