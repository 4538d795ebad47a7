// bindings/python/src/stream_binding.hpp
//
// _ringload.TensorStream: a load that runs on a thread of its own and hands each tensor to
// Python as soon as its bytes are final (LoadOptions::on_tensor), for ringload.stream_tensors
// and TensorDeserializer.read_tensors. Started by _ringload.Deserializer.stream().
#pragma once

#include "binding.hpp"

#include "ringload/model_signing.hpp"
#include "ringload/ringload.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace ringload::python {

struct StreamRequest {
    std::vector<std::size_t> indices; // into the index; each tensor comes back with its k here
    std::string device = "cpu";
    std::optional<std::string> dtype;
    bool verify = false;
    std::size_t slot_size = 0;
    std::uint32_t slot_count = 0;
    std::size_t threads = 0;
    Placement placement = Placement::automatic;
    bool contiguous = true;                        // LoadOptions::contiguous
    std::shared_ptr<const SignedFile> signed_file; // LoadOptions::signed_file
};

// One tensor handed over, as the package's to_torch / to_numpy take a load (k is always 0):
// _ringload.StreamedItem, of a TensorStream or a ModelStream (model_stream_binding.cpp).
struct StreamedItem {
    StreamedTensor streamed;
};

// Starts the load; `owner` (the Python Deserializer) stays referenced while the stream lives,
// so that `lock` and the file do. Returns the TensorStream.
nb::object start_stream(nb::object owner, std::shared_ptr<Deserializer> source, std::mutex& lock,
                        StreamRequest request);

} // namespace ringload::python
