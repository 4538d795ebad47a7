// io/src/s3_error.cpp
#include "ringload/io/s3_error.hpp"

namespace ringload {

namespace {

std::string element_text(std::string_view body, std::string_view name) {
    const std::string open = "<" + std::string(name) + ">";
    const std::string close = "</" + std::string(name) + ">";
    const auto start = body.find(open);
    if (start == std::string_view::npos) {
        return "";
    }
    const auto end = body.find(close, start + open.size());
    if (end == std::string_view::npos) {
        return "";
    }
    std::string_view text = body.substr(start + open.size(), end - start - open.size());
    // Some servers (moto) wrap the text in CDATA.
    if (text.starts_with("<![CDATA[") && text.ends_with("]]>")) {
        text = text.substr(9, text.size() - 12);
    }
    return std::string(text);
}

} // namespace

std::string s3_error_summary(std::string_view body) {
    if (body.find("<Error>") == std::string_view::npos) {
        return "";
    }
    std::string code = element_text(body, "Code");
    std::string message = element_text(body, "Message");
    if (code.empty() && message.empty()) {
        return "";
    }
    return message.empty() ? code : code + ": " + message;
}

} // namespace ringload
