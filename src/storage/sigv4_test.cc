// The signatures libcurl puts on S3Store's requests, checked by an independent SigV4 signer
// (testing/sigv4_reference.h) on the requests as a loopback server received them: listings with
// awkward prefixes and continuation tokens, HEAD, ranged GET, PUT with a body, the multipart calls, and a
// session token. The reference signer is first checked against AWS's published examples. The same
// loopback server also plays an S3 whose multipart upload vanished (S3WriterTest).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "src/base/sha256.h"
#include "src/storage/s3_compatible.h"
#include "src/storage/s3_store.h"
#include "src/storage/testing/fake_env.h"
#include "src/storage/testing/sigv4_reference.h"

namespace k3::storage {
namespace {

using testing::SignedRequest;
using testing::Sigv4Signature;

constexpr const char* kExampleSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
constexpr const char* kEmptyHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

TEST(Sigv4ReferenceTest, MatchesAwsPublishedExamples) {
  // S3 API reference, "Example: GET Object".
  SignedRequest get;
  get.method = "GET";
  get.path = "/test.txt";
  get.headers = {{"Host", "examplebucket.s3.amazonaws.com"},
                 {"Range", "bytes=0-9"},
                 {"x-amz-content-sha256", kEmptyHash},
                 {"x-amz-date", "20130524T000000Z"}};
  get.signed_headers = {"host", "range", "x-amz-content-sha256", "x-amz-date"};
  get.payload_hash = kEmptyHash;
  get.amz_date = "20130524T000000Z";
  get.region = "us-east-1";
  EXPECT_EQ(Sigv4Signature(get, kExampleSecret),
            "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");

  // "Example: GET Bucket (List Objects)", whose query parameters must be sorted.
  SignedRequest list = get;
  list.path = "/";
  list.query = "prefix=J&max-keys=2";
  list.headers = {{"Host", "examplebucket.s3.amazonaws.com"},
                  {"x-amz-content-sha256", kEmptyHash},
                  {"x-amz-date", "20130524T000000Z"}};
  list.signed_headers = {"host", "x-amz-content-sha256", "x-amz-date"};
  EXPECT_EQ(Sigv4Signature(list, kExampleSecret),
            "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
}

struct CapturedRequest {
  std::string method, target;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::string Header(const std::string& name) const {
    for (const auto& [h, v] : headers) {
      if (strcasecmp(h.c_str(), name.c_str()) == 0) return v;
    }
    return "";
  }
};

// Answers each request the way S3 would (enough for S3Store to carry on) and keeps it.
class CaptureServer {
 public:
  CaptureServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(::listen(fd_, 16), 0);
    socklen_t len = sizeof(addr);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Loop(); });
  }
  ~CaptureServer() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // Answers part uploads with 404 NoSuchUpload (an upload aborted or expired behind the writer's back).
  void LoseUploads() { lose_uploads_ = true; }
  std::vector<CapturedRequest> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

 private:
  void Loop() {
    while (!stop_) {
      pollfd pfd{fd_, POLLIN, 0};
      if (::poll(&pfd, 1, 50) <= 0) continue;
      const int client = ::accept(fd_, nullptr, nullptr);
      if (client >= 0) Serve(client);
    }
  }
  bool ReadMore(int client, std::string* buffer) {
    pollfd pfd{client, POLLIN, 0};
    if (::poll(&pfd, 1, 5000) <= 0) return false;
    char chunk[8192];
    const ssize_t n = ::recv(client, chunk, sizeof(chunk), 0);
    if (n <= 0) return false;
    buffer->append(chunk, static_cast<size_t>(n));
    return true;
  }
  void Serve(int client) {
    std::string data;
    while (data.find("\r\n\r\n") == std::string::npos) {
      if (!ReadMore(client, &data)) return (void)::close(client);
    }
    const size_t head_end = data.find("\r\n\r\n");
    CapturedRequest request;
    std::string head = data.substr(0, head_end + 2);
    size_t line_end = head.find("\r\n");
    const std::string request_line = head.substr(0, line_end);
    request.method = request_line.substr(0, request_line.find(' '));
    request.target =
        request_line.substr(request.method.size() + 1, request_line.rfind(' ') - request.method.size() - 1);
    for (size_t pos = line_end + 2; pos < head.size();) {
      const size_t end = head.find("\r\n", pos);
      const std::string line = head.substr(pos, end - pos);
      const size_t colon = line.find(':');
      std::string value = line.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.erase(0, 1);
      request.headers.emplace_back(line.substr(0, colon), value);
      pos = end + 2;
    }
    const size_t length = std::strtoul(request.Header("Content-Length").c_str(), nullptr, 10);
    request.body = data.substr(head_end + 4);
    if (request.body.size() < length && !request.Header("Expect").empty()) {
      const std::string go = "HTTP/1.1 100 Continue\r\n\r\n";
      ::send(client, go.data(), go.size(), MSG_NOSIGNAL);
    }
    while (request.body.size() < length && ReadMore(client, &request.body)) {
    }
    std::string status = "200 OK", body, extra;
    if (request.method == "GET" && request.target.find("list-type=2") != std::string::npos) {
      body = "<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>";
    } else if (request.method == "GET") {
      const std::string range = request.Header("Range");  // bytes=A-B
      const size_t dash = range.find('-');
      const uint64_t first = std::stoull(range.substr(6, dash - 6)),
                     last = std::stoull(range.substr(dash + 1));
      status = "206 Partial Content";
      body.assign(last - first + 1, 'x');
    } else if (request.method == "HEAD") {
      extra = "ETag: \"abc\"\r\n";
    } else if (request.method == "POST" && request.target.find("uploads") != std::string::npos) {
      body = "<InitiateMultipartUploadResult><UploadId>up+1/=</UploadId></InitiateMultipartUploadResult>";
    } else if (request.method == "POST") {
      body = "<CompleteMultipartUploadResult><ETag>\"e\"</ETag></CompleteMultipartUploadResult>";
    } else if (request.method == "PUT" && lose_uploads_ &&
               request.target.find("partNumber") != std::string::npos) {
      status = "404 Not Found";
      body =
          "<Error><Code>NoSuchUpload</Code><Message>The specified upload does not exist.</Message></Error>";
    } else if (request.method == "PUT") {
      extra = "ETag: \"p\"\r\n";
    } else if (request.method == "DELETE") {
      status = "204 No Content";
    }
    const std::string length_header =
        "Content-Length: " + std::to_string(request.method == "HEAD" ? 10 : body.size()) + "\r\n";
    std::string reply = "HTTP/1.1 " + status + "\r\n" + extra + length_header + "Connection: close\r\n\r\n";
    if (request.method != "HEAD") reply += body;
    {  // recorded before the reply goes out: the client may ask for requests() as soon as it has the reply
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(std::move(request));
    }
    ::send(client, reply.data(), reply.size(), MSG_NOSIGNAL);
    ::close(client);
  }

  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<bool> lose_uploads_{false};
  std::thread thread_;
  std::mutex mu_;
  std::vector<CapturedRequest> requests_;
};

// "Credential=AK/20261204/eu-central-1/s3/aws4_request, SignedHeaders=a;b, Signature=hex" -> fields.
std::string AuthField(const std::string& authorization, const std::string& name) {
  const size_t begin = authorization.find(name + "=");
  if (begin == std::string::npos) return "";
  const size_t value = begin + name.size() + 1;
  const size_t end = authorization.find_first_of(", ", value);
  return authorization.substr(value, end == std::string::npos ? std::string::npos : end - value);
}

// Sends every kind of request through a store on `uri_text` (pointed at `server`) and checks each
// signature with the reference signer, in the scope of `region`.
void CheckEveryRequestSigned(CaptureServer& server, const std::string& uri_text, S3Options options,
                             const std::string& region) {
  options.part_size = 4;
  const bool with_token = !options.credentials->session_token.empty();
  auto uri = ParseObjectUri(uri_text);
  ASSERT_TRUE(uri.ok());
  auto store = S3Store::Create(*uri, options);
  ASSERT_TRUE(store.ok()) << store.status().ToString();

  ASSERT_TRUE((*store)->List("a b/c+d=&~").ok());
  ASSERT_TRUE((*store)->Stat("dir/obj (1).bin").ok());
  std::vector<uint8_t> range(10);
  ASSERT_TRUE((*store)->ReadRange("dir/obj", 5, range).ok());
  const std::string body = "hello, world";
  ASSERT_TRUE(
      (*store)
          ->WriteAll("small", std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(body.data()), 4))
          .ok());
  auto writer = (*store)->OpenWriter("multi part", WriteOptions{body.size(), false});
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE(
      (*writer)
          ->Append(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(body.data()), body.size()))
          .ok());
  ASSERT_TRUE((*writer)->Commit().ok());

  const std::vector<CapturedRequest> requests = server.requests();
  // list, head, get, put, create upload, 2 x (part + journal), last part + journal, complete, delete journal
  ASSERT_GE(requests.size(), 10u);
  std::set<std::string> methods;
  for (const CapturedRequest& request : requests) {
    SCOPED_TRACE(request.method + " " + request.target);
    methods.insert(request.method);
    const std::string authorization = request.Header("Authorization");
    ASSERT_EQ(authorization.rfind("AWS4-HMAC-SHA256 ", 0), 0u) << authorization;
    SignedRequest signed_request;
    signed_request.method = request.method;
    const size_t question = request.target.find('?');
    signed_request.path = request.target.substr(0, question);
    if (question != std::string::npos) signed_request.query = request.target.substr(question + 1);
    signed_request.headers = request.headers;
    std::string list = AuthField(authorization, "SignedHeaders");
    for (size_t pos = 0; pos <= list.size();) {
      size_t end = list.find(';', pos);
      if (end == std::string::npos) end = list.size();
      signed_request.signed_headers.push_back(list.substr(pos, end - pos));
      pos = end + 1;
    }
    for (const char* required : {"host", "x-amz-date", "x-amz-content-sha256", "x-amz-security-token"}) {
      if (!with_token && std::string_view(required) == "x-amz-security-token") continue;
      EXPECT_NE(
          std::find(signed_request.signed_headers.begin(), signed_request.signed_headers.end(), required),
          signed_request.signed_headers.end())
          << required << " is not signed: " << list;
    }
    signed_request.payload_hash = request.Header("x-amz-content-sha256");
    EXPECT_EQ(signed_request.payload_hash, Sha256Hex(request.body)) << "the payload hash must be the body's";
    signed_request.amz_date = request.Header("x-amz-date");
    signed_request.region = region;
    EXPECT_EQ(AuthField(authorization, "Credential"), options.credentials->access_key_id + "/" +
                                                          signed_request.amz_date.substr(0, 8) + "/" +
                                                          region + "/s3/aws4_request");
    EXPECT_EQ(AuthField(authorization, "Signature"),
              Sigv4Signature(signed_request, options.credentials->secret_access_key))
        << "canonical request:\n"
        << testing::CanonicalRequest(signed_request);
    EXPECT_EQ(authorization.find(options.credentials->secret_access_key), std::string::npos);
  }
  EXPECT_EQ(methods, (std::set<std::string>{"GET", "HEAD", "PUT", "POST", "DELETE"}));
}

TEST(Sigv4Test, EveryRequestLibcurlSignsVerifiesWithTheReferenceSigner) {
  CaptureServer server;
  S3Options options;
  options.endpoint = server.endpoint();
  options.region = "eu-central-1";
  options.credentials = AwsCredentials{"AKIAIOSFODNN7EXAMPLE", kExampleSecret, "session/token+=", "test"};
  CheckEveryRequestSigned(server, "s3://examplebucket/pre fix", options, "eu-central-1");
}

// gs:// with an HMAC key: the same SigV4 with region "auto" (s3_compatible.h).
TEST(Sigv4Test, GcsHmacRequestsAreSignedForRegionAuto) {
  CaptureServer server;
  auto options = GcsOptionsFromEnvironment(testing::FakeEnv({{"K3_GCS_ENDPOINT", server.endpoint()},
                                                             {"GCS_HMAC_ACCESS_KEY_ID", "GOOG1EXAMPLEHMACID"},
                                                             {"GCS_HMAC_SECRET", kExampleSecret}}));
  ASSERT_TRUE(options.ok()) << options.status().ToString();
  CheckEveryRequestSigned(server, "gs://examplebucket/pre fix", *options, "auto");
}

// oss:// with an STS token: SigV4 with the region ID in the scope (path-style only to reach loopback).
TEST(Sigv4Test, OssRequestsAreSignedForTheRegionIdWithTheStsToken) {
  CaptureServer server;
  auto options = OssOptionsFromEnvironment(testing::FakeEnv({{"OSS_ENDPOINT", server.endpoint()},
                                                             {"OSS_REGION", "oss-cn-hangzhou"},
                                                             {"K3_OSS_PATH_STYLE", "1"},
                                                             {"OSS_ACCESS_KEY_ID", "LTAIEXAMPLE"},
                                                             {"OSS_ACCESS_KEY_SECRET", kExampleSecret},
                                                             {"OSS_SESSION_TOKEN", "sts/token+="}}));
  ASSERT_TRUE(options.ok()) << options.status().ToString();
  CheckEveryRequestSigned(server, "oss://examplebucket/pre fix", *options, "cn-hangzhou");
}

TEST(S3WriterTest, AVanishedMultipartUploadRemovesItsJournal) {
  CaptureServer server;
  server.LoseUploads();
  S3Options options;
  options.endpoint = server.endpoint();
  options.part_size = 4;
  options.credentials = AwsCredentials{"AKID", "secret", "", "test"};
  auto store = S3Store::Create(*ParseObjectUri("s3://b/p"), options);
  ASSERT_TRUE(store.ok());
  auto writer = (*store)->OpenWriter("obj", WriteOptions{12, false});
  ASSERT_TRUE(writer.ok());
  const std::string body = "hello, world";
  const Status status =
      (*writer)->Append(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(body.data()), body.size()));
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("NoSuchUpload"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("journal was removed"), std::string::npos) << status.message();
  bool deleted = false;
  for (const CapturedRequest& request : server.requests()) {
    deleted |= request.method == "DELETE" && request.target == "/b/p/obj.k3upload";
  }
  EXPECT_TRUE(deleted);
}

}  // namespace
}  // namespace k3::storage
