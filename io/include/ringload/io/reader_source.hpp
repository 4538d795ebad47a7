// io/include/ringload/io/reader_source.hpp
//
// A caller's read function as a Source (OpenOptions::external_reader): for bytes no registered
// source reaches, such as the Python package's fsspec file systems. The engine's stages run
// after it as after any source; reads go one at a time, on the loop thread, through the one
// function (it is the slow path: whatever the function does, it does serially).
//
//     auto source = make_reader_source("hf://org/model/model.safetensors", size, read, "fsspec");
// Thread: the loop thread.
#pragma once

#include "ringload/engine/source.hpp"

#include <functional>
#include <memory>
#include <span>
#include <string>

namespace ringload {

using ReadFunction = std::function<Result<std::size_t>(std::uint64_t offset_bytes, std::span<std::byte> dst)>;

std::unique_ptr<Source> make_reader_source(std::string name, std::uint64_t size_bytes, ReadFunction read,
                                           std::string how);

} // namespace ringload
