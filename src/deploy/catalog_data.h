// The catalog files of data/catalog/, embedded at build time (generated catalog_data.cc).
#pragma once

#include <string_view>

namespace k3::deploy {

// Returns the text of data/catalog/<name>.json as it was at build time, or "" for an unknown name.
std::string_view EmbeddedCatalogFile(std::string_view name);

}  // namespace k3::deploy
