// Byte units of the plans and manifests: decimal gigabytes (what clouds quote for disks and models) and
// binary gibibytes (what Kubernetes quantities and instance RAM use).
#pragma once

namespace k3::deploy {

inline constexpr double kGb = 1e9;
inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

}  // namespace k3::deploy
