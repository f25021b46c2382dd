// libcurl helpers shared by every HTTP user (src/client for k3 verify / bench, src/storage for object
// stores): one process-wide curl_global_init, and the words for a failed transfer.
//
// Lives in its own library (k3_curl, src/base/CMakeLists.txt) so that k3_base itself does not link
// libcurl.
#pragma once

#include <string>

#include "src/base/status.h"

namespace k3 {

// Initialises libcurl once per process (thread-safe).
void EnsureCurlInitialized();

// The IoError for a failed libcurl transfer (code is a CURLcode; detail is curl's error buffer;
// elapsed_s is how long the transfer ran, reported for timeouts). Messages say what happened in words a
// user can act on: "connection refused: URL -- is the server running ...", "timed out after 5.0 s: URL".
Status TransportError(int code, const std::string& detail, const std::string& url, double elapsed_s);

}  // namespace k3
