// io/src/s3_xml.cpp
#include "ringload/io/s3_xml.hpp"

#include <array>
#include <utility>

namespace ringload {
namespace {

std::string decode_entities(std::string_view text) {
    static constexpr std::array<std::pair<std::string_view, char>, 5> entities{
        {{"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}}};
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
        bool decoded = false;
        if (text[i] == '&') {
            for (const auto& [entity, character] : entities) {
                if (text.substr(i).starts_with(entity)) {
                    out += character;
                    i += entity.size() - 1;
                    decoded = true;
                    break;
                }
            }
        }
        if (!decoded) {
            out += text[i];
        }
    }
    return out;
}

} // namespace

std::string s3_xml_text(std::string_view xml, std::string_view name) {
    const std::string open = "<" + std::string(name) + ">";
    const std::string close = "</" + std::string(name) + ">";
    const auto start = xml.find(open);
    if (start == std::string_view::npos) {
        return "";
    }
    const auto end = xml.find(close, start + open.size());
    if (end == std::string_view::npos) {
        return "";
    }
    std::string_view text = xml.substr(start + open.size(), end - start - open.size());
    // Some servers (moto) wrap the text in CDATA, whose content is literal.
    if (text.starts_with("<![CDATA[") && text.ends_with("]]>")) {
        return std::string(text.substr(9, text.size() - 12));
    }
    return decode_entities(text);
}

std::vector<S3PendingUpload> s3_pending_uploads(std::string_view xml) {
    std::vector<S3PendingUpload> uploads;
    std::size_t at = 0;
    for (;;) {
        const auto start = xml.find("<Upload>", at);
        if (start == std::string_view::npos) {
            break;
        }
        const auto end = xml.find("</Upload>", start);
        if (end == std::string_view::npos) {
            break;
        }
        const std::string_view upload = xml.substr(start, end - start);
        S3PendingUpload pending{s3_xml_text(upload, "Key"), s3_xml_text(upload, "UploadId"),
                                s3_xml_text(upload, "Initiated")};
        if (!pending.upload_id.empty()) {
            uploads.push_back(std::move(pending));
        }
        at = end + 9;
    }
    return uploads;
}

} // namespace ringload
