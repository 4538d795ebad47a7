// formats/safetensors/header_members.cpp
#include "formats/safetensors/header_members.hpp"

#include <optional>
#include <vector>

namespace ringload::safetensors {
namespace {

enum class Fault : std::uint8_t { none, not_an_object, too_deep };

// nlohmann's SAX events, built into one member's value at a time. `open_` holds the containers
// being filled (the top-level object is depth 1 and is never built). After the parse: `fault`
// says why it stopped, `error` holds what `visit` returned.
class MemberBuilder {
public:
    MemberBuilder(int max_depth, const std::function<Result<void>(std::string&, Json&)>& visit)
        : max_depth_(max_depth), visit_(visit) {}

    bool null() { return place(Json(nullptr)); }
    bool boolean(bool value) { return place(Json(value)); }
    bool number_integer(Json::number_integer_t value) { return place(Json(value)); }
    bool number_unsigned(Json::number_unsigned_t value) { return place(Json(value)); }
    bool number_float(Json::number_float_t value, const Json::string_t&) { return place(Json(value)); }
    bool string(Json::string_t& value) { return place(Json(std::move(value))); }
    bool binary(Json::binary_t&) { return false; } // JSON text has none

    bool start_object(std::size_t) { return open(Json::value_t::object); }
    bool start_array(std::size_t) { return open(Json::value_t::array); }
    bool end_object() { return close(); }
    bool end_array() { return close(); }

    bool key(Json::string_t& key) {
        if (depth_ == 1) {
            member_key_ = std::move(key);
        } else {
            inner_key_ = std::move(key);
        }
        return true;
    }

    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) {
        fault = Fault::not_an_object;
        return false;
    }

    Fault fault = Fault::none;
    std::optional<Error> error;
    bool saw_top_object = false;

private:
    bool open(Json::value_t type) {
        if (depth_ == 0) { // the header itself
            if (type != Json::value_t::object) {
                fault = Fault::not_an_object;
                return false;
            }
            saw_top_object = true;
            depth_ = 1;
            return true;
        }
        if (depth_ >= max_depth_) {
            fault = Fault::too_deep;
            return false;
        }
        Json* made = insert(Json(type));
        ++depth_;
        open_.push_back(made);
        return true;
    }

    bool close() {
        --depth_;
        if (depth_ == 0) {
            return true;
        }
        open_.pop_back();
        return open_.empty() ? hand_over() : true;
    }

    bool place(Json value) {
        if (depth_ == 0) { // a header that is a bare value
            fault = Fault::not_an_object;
            return false;
        }
        insert(std::move(value));
        return open_.empty() ? hand_over() : true;
    }

    // Into the open container without a key lookup (ordered_map is a vector of pairs).
    Json* insert(Json value) {
        if (open_.empty()) {
            member_ = std::move(value);
            return &member_;
        }
        Json& parent = *open_.back();
        if (parent.is_array()) {
            auto& items = *parent.get_ptr<Json::array_t*>();
            items.push_back(std::move(value));
            return &items.back();
        }
        auto& fields = *parent.get_ptr<Json::object_t*>();
        fields.emplace_back(std::move(inner_key_), std::move(value));
        return &fields.back().second;
    }

    bool hand_over() {
        auto visited = visit_(member_key_, member_);
        member_ = Json();
        if (!visited) {
            error = visited.error();
            return false;
        }
        return true;
    }

    int max_depth_;
    const std::function<Result<void>(std::string&, Json&)>& visit_;
    int depth_ = 0;
    std::vector<Json*> open_;
    std::string member_key_;
    std::string inner_key_;
    Json member_;
};

} // namespace

Result<void> for_each_member(std::string_view text, int max_depth,
                             const std::function<Result<void>(std::string& key, Json& value)>& visit) {
    MemberBuilder builder(max_depth, visit);
    const bool parsed = Json::sax_parse(text.begin(), text.end(), &builder);
    if (builder.error) {
        return *builder.error;
    }
    if (builder.fault == Fault::too_deep) {
        return fail(errc::format_error,
                    "safetensors: the header nests deeper than " + std::to_string(max_depth) + " levels");
    }
    if (!parsed || !builder.saw_top_object) {
        return fail(errc::format_error, "safetensors: the header is not a JSON object");
    }
    return {};
}

} // namespace ringload::safetensors
