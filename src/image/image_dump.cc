// image_dump FILE OUT_PREFIX [PREPROCESSOR_CONFIG_JSON]: runs k3::image::ProcessImage on FILE (K3's
// processor config unless a preprocessor_config.json is given) and writes OUT_PREFIX.json (geometry,
// format, decoded mode) and OUT_PREFIX.f32 (the patches, raw little-endian float32,
// [grid_h * grid_w, 3 * p * p]). On a refused image it prints the error and exits 1. Test tool for
// tests/image/compare_pillow.py.
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "src/image/image.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: image_dump FILE OUT_PREFIX [preprocessor_config.json]\n");
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "image_dump: cannot read %s\n", argv[1]);
    return 2;
  }
  const std::vector<char> raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  k3::image::ProcessorConfig config = k3::image::K3ProcessorConfig();
  if (argc > 3) {
    std::ifstream cfg(argv[3]);
    const std::string text((std::istreambuf_iterator<char>(cfg)), std::istreambuf_iterator<char>());
    auto parsed = k3::image::ParseProcessorConfig(text, argv[3]);
    if (!parsed.ok()) {
      std::fprintf(stderr, "%s\n", parsed.status().ToString().c_str());
      return 2;
    }
    config = *parsed;
  }
  const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(raw.data()), raw.size());
  auto decoded = k3::image::DecodeImage(bytes, k3::image::DefaultDecodeLimits());
  if (!decoded.ok()) {
    std::printf("%s\n", decoded.status().ToString().c_str());
    return 1;
  }
  const k3::image::ProcessedImage out = k3::image::ProcessDecoded(*decoded, config);
  const k3::image::ImageGeometry& g = out.geometry;
  const std::string prefix = argv[2];
  std::ofstream json(prefix + ".json");
  json << "{\"format\": \"" << out.format << "\", \"mode\": \"" << k3::image::ModeName(decoded->mode)
       << "\", \"width\": " << g.width << ", \"height\": " << g.height
       << ", \"resized_width\": " << g.resized_width << ", \"resized_height\": " << g.resized_height
       << ", \"padded_width\": " << g.padded_width << ", \"padded_height\": " << g.padded_height
       << ", \"grid_h\": " << g.grid_h << ", \"grid_w\": " << g.grid_w << ", \"num_tokens\": " << g.num_tokens
       << "}\n";
  std::ofstream f32(prefix + ".f32", std::ios::binary);
  f32.write(reinterpret_cast<const char*>(out.patches.data()),
            static_cast<std::streamsize>(out.patches.size() * sizeof(float)));
  return json && f32 ? 0 : 2;
}
