// k3_image's public interface in one include: processor config, geometry, decoding limits, encoders, the
// processor and data URLs.
#pragma once

#include "src/image/config.h"     // IWYU pragma: export
#include "src/image/data_url.h"   // IWYU pragma: export
#include "src/image/decode.h"     // IWYU pragma: export
#include "src/image/encode.h"     // IWYU pragma: export
#include "src/image/geometry.h"   // IWYU pragma: export
#include "src/image/processor.h"  // IWYU pragma: export
