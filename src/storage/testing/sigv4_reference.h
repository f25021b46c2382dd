// An independent AWS Signature Version 4 signer for tests: S3Store lets libcurl sign its requests
// (CURLOPT_AWS_SIGV4), and s3rver 3.7.1 does not check V4 signatures, so sigv4_test.cc recomputes the
// signature of every request libcurl sent from the request as it arrived, with this code, and compares.
// This signer itself is checked against the examples AWS publishes in the S3 API reference
// ("Signature Calculations for the Authorization Header: Transferring Payload in a Single Chunk").
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace k3::storage::testing {

struct SignedRequest {
  std::string method;
  std::string path;   // as sent on the request line (already URI-encoded)
  std::string query;  // as sent, without '?'
  std::vector<std::pair<std::string, std::string>> headers;  // name (any case), value
  std::vector<std::string> signed_headers;                   // lower-case names, any order
  std::string payload_hash;                                  // hex SHA-256 (or UNSIGNED-PAYLOAD)
  std::string amz_date;                                      // 20130524T000000Z
  std::string region;
  std::string service = "s3";
};

// The canonical request (with the query parameters sorted by name).
std::string CanonicalRequest(const SignedRequest& request);
// The hex signature for this secret.
std::string Sigv4Signature(const SignedRequest& request, const std::string& secret);

}  // namespace k3::storage::testing
