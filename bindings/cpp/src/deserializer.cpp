// bindings/cpp/src/deserializer.cpp
//
// The C++ API's Deserializer: a thin front over the load's orchestration
// (engine/orchestration/deserializer_impl.cpp), as the CLI and the Python binding are.
#include "ringload/ringload.hpp"

#include "deserializer_impl.hpp"

namespace ringload {

Deserializer::Deserializer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Deserializer::Deserializer(Deserializer&&) noexcept = default;
Deserializer& Deserializer::operator=(Deserializer&&) noexcept = default;
Deserializer::~Deserializer() = default;

const Index& Deserializer::index() const noexcept {
    return impl_->index;
}
const std::string& Deserializer::source_name() const {
    return impl_->source_name();
}
const std::string& Deserializer::uri() const noexcept {
    return impl_->uri;
}

Result<Deserializer> Deserializer::open(std::string_view uri, OpenOptions options) {
    RL_TRY(impl, Impl::open(uri, std::move(options)));
    return Deserializer(std::move(impl));
}

Result<LoadedModel> Deserializer::load(const LoadOptions& options) {
    const ReadsDoneAtExit reads_done(*impl_->source);
    return impl_->load(options);
}

} // namespace ringload
