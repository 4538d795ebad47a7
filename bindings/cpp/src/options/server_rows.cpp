// options/server_rows.cpp: the server loaders' own words (vLLM's and SGLang's
// --model-loader-extra-config, ringload/_server_weights.py): kept as checked text in
// LoadSettings::given for the loader that applies them.
#include "options/option_rows.hpp"

namespace ringload::options {
namespace {

SharedRow server_row(std::string_view name, OptionKind kind, std::string_view default_text, std::string_view help) {
    OptionRow row{name, kind, {}, help};
    row.target = OptionTarget::front_end;
    row.fronts = front_server;
    const std::string fallback(default_text);
    return {row,
            {[name = std::string(name), fallback](const LoadSettings& s) {
                 const auto found = s.given.find(name);
                 return found == s.given.end() ? fallback : found->second;
             },
             [name = std::string(name), kind](LoadSettings& s, std::string_view t) {
                 std::string& kept = s.given[name];
                 kept = kind == OptionKind::list && !kept.empty() ? kept + "\n" + std::string(t) : std::string(t);
             },
             {}}};
}

} // namespace

void add_server_rows(std::vector<SharedRow>& rows) {
    struct Row {
        std::string_view name;
        OptionKind kind;
        std::string_view default_text;
        std::string_view help;
    };
    static constexpr Row server_words[] = {
        {"uri", OptionKind::list, "",
         "where the weights are: a path or URL of any registered source, or several (default: the model folder's "
         "weight files)"},
        {"read_once", OptionKind::flag, "true",
         "with tensor parallelism, the ranks split the reading and share the bytes over their group"},
        {"into_parameters", OptionKind::flag, "",
         "each tensor read straight into the parameters the model's load_weights would copy it to (default: on the "
         "CPU; on a GPU only when true, until checked on a device)"},
        {"save_sharded_state", OptionKind::text, "",
         "a folder: after loading, each rank writes its parameters there in vLLM's pre-sharded layout (python -m "
         "ringload.vllm_convert --sharded)"},
    };
    for (const Row& row : server_words) {
        rows.push_back(server_row(row.name, row.kind, row.default_text, row.help));
    }
}

} // namespace ringload::options
