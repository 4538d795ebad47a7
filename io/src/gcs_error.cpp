// io/src/gcs_error.cpp
#include "gcs_error.hpp"

#include "ringload/printable.hpp"

#include <nlohmann/json.hpp>

namespace ringload {
namespace {

constexpr std::size_t summary_bytes_max = 300;

std::string text_of(const nlohmann::json& object, const char* field) {
    const auto found = object.find(field);
    return found != object.end() && found->is_string() ? found->get<std::string>() : std::string();
}

} // namespace

std::string gcs_error_summary(std::string_view body) {
    const auto json = nlohmann::json::parse(body, nullptr, false);
    if (json.is_discarded() || !json.is_object()) {
        return "";
    }
    const auto error = json.find("error");
    if (error == json.end()) {
        return "";
    }
    std::string summary;
    if (error->is_object()) {
        summary = text_of(*error, "message"); // the JSON API's
    } else if (error->is_string()) {
        const std::string description = text_of(json, "error_description"); // OAuth's
        summary = error->get<std::string>() + (description.empty() ? "" : ": " + description);
    }
    return printable(summary, summary_bytes_max);
}

} // namespace ringload
