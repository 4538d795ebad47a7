// io/src/s3_error.cpp
#include "ringload/io/s3_error.hpp"

#include "ringload/io/s3_xml.hpp"

namespace ringload {

std::string s3_error_summary(std::string_view body) {
    if (body.find("<Error>") == std::string_view::npos) {
        return "";
    }
    std::string code = s3_xml_text(body, "Code");
    std::string message = s3_xml_text(body, "Message");
    if (code.empty() && message.empty()) {
        return "";
    }
    return message.empty() ? code : code + ": " + message;
}

} // namespace ringload
