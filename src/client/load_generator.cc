// RunLoad over curl_multi: a fixed set of easy handles (one per concurrency slot) reused for every
// request so their connections stay alive; the write callback feeds SseReader + ChatStreamAccumulator
// and stamps output chunks with the clock.
#include "src/client/load_generator.h"

#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <random>

#include "src/client/openai_stream.h"
#include "src/client/sse.h"

namespace k3::client {
namespace {

constexpr size_t kMaxErrorBody = 4096;

struct Slot {
  CURL* easy = nullptr;
  bool busy = false;
  const std::function<double()>* clock = nullptr;
  double t0 = 0;
  double start = 0;
  double last_output = 0;
  bool saw_output = false;
  int output_chunks = 0;
  long status = 0;
  std::string error_body;
  SseReader sse;
  ChatStreamAccumulator chat;
  RequestRecord record;
  char errbuf[CURL_ERROR_SIZE] = {0};

  void OnEvents() {
    for (const std::string& e : sse.TakeEvents()) {
      if (!chat.OnEvent(e)) continue;
      const double now = (*clock)();
      if (!saw_output) {
        record.ttft_s = now - start;
        saw_output = true;
      } else {
        record.itl_s.push_back(now - last_output);
      }
      last_output = now;
      ++output_chunks;
    }
  }
};

size_t OnData(char* data, size_t size, size_t count, void* user) {
  Slot* slot = static_cast<Slot*>(user);
  const size_t n = size * count;
  if (slot->status == 0) curl_easy_getinfo(slot->easy, CURLINFO_RESPONSE_CODE, &slot->status);
  if (slot->status != 200) {
    if (slot->error_body.size() < kMaxErrorBody) slot->error_body.append(data, std::min(n, kMaxErrorBody));
    return n;
  }
  slot->sse.Feed(std::string_view(data, n));
  slot->OnEvents();
  return n;
}

double SteadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

LoadResult RunLoad(const std::vector<std::string>& bodies, const LoadOptions& options) {
  EnsureCurlInitialized();
  const std::function<double()> clock = options.clock ? options.clock : SteadySeconds;
  LoadResult result;
  if (bodies.empty()) return result;
  const int concurrency = std::max(1, options.concurrency);
  const std::string url = options.endpoint.Url(options.path);
  curl_slist* headers = nullptr;
  for (const std::string& h : options.endpoint.JsonHeaders()) headers = curl_slist_append(headers, h.c_str());
  headers = curl_slist_append(headers, "Accept: text/event-stream");

  CURLM* multi = curl_multi_init();
  curl_multi_setopt(multi, CURLMOPT_MAX_HOST_CONNECTIONS, static_cast<long>(concurrency));
  curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, static_cast<long>(concurrency));
  std::vector<std::unique_ptr<Slot>> slots;
  for (int i = 0; i < concurrency; ++i) {
    auto slot = std::make_unique<Slot>();
    slot->easy = curl_easy_init();
    slot->clock = &clock;
    CURL* e = slot->easy;
    curl_easy_setopt(e, CURLOPT_URL, url.c_str());
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, OnData);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, slot.get());
    curl_easy_setopt(e, CURLOPT_PRIVATE, slot.get());
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, slot->errbuf);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(options.http.timeout_s * 1000));
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options.http.connect_timeout_s * 1000));
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, options.http.verify_tls ? 1L : 0L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, options.http.verify_tls ? 2L : 0L);
    slots.push_back(std::move(slot));
  }

  std::mt19937_64 rng(options.seed);
  const bool paced = std::isfinite(options.request_rate) && options.request_rate > 0;
  std::exponential_distribution<double> gap(paced ? options.request_rate : 1.0);
  const double t0 = clock();
  double next_arrival = t0;
  size_t issued = 0;
  int active = 0, finished = 0, failed = 0;

  auto may_issue = [&](double now) {
    return options.duration_s > 0 ? now - t0 < options.duration_s : issued < bodies.size();
  };
  auto start = [&](Slot& slot, double now) {
    const std::string& body = bodies[issued % bodies.size()];
    ++issued;
    slot.busy = true;
    slot.t0 = t0;
    slot.start = now;
    slot.saw_output = false;
    slot.output_chunks = 0;
    slot.status = 0;
    slot.error_body.clear();
    slot.errbuf[0] = '\0';
    slot.sse = SseReader();
    slot.chat = ChatStreamAccumulator();
    slot.record = RequestRecord();
    slot.record.start_s = now - t0;
    curl_easy_setopt(slot.easy, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(slot.easy, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    curl_multi_add_handle(multi, slot.easy);
    ++active;
  };
  auto finish = [&](Slot& slot, CURLcode code) {
    const double now = clock();
    RequestRecord& r = slot.record;
    r.latency_s = now - slot.start;
    if (code != CURLE_OK) {
      r.error = TransportError(code, slot.errbuf, url, r.latency_s).message();
    } else if (slot.status != 200) {
      HttpResponse response{slot.status, "", slot.error_body, r.latency_s};
      Status s = ParseJsonAnswer(response, "POST " + options.path).status();
      r.error = s.ok() ? "HTTP " + std::to_string(slot.status) : s.message();
    } else {
      slot.sse.Finish();
      slot.OnEvents();
      if (!slot.sse.errors().empty()) {
        r.error = "SSE: " + slot.sse.errors().front();
      } else if (!slot.chat.errors().empty()) {
        r.error = slot.chat.errors().front();
      } else if (!slot.saw_output) {
        r.error = "the stream carried no output";
      }
    }
    const ChatResult& chat = slot.chat.result();
    r.success = r.error.empty();
    if (chat.usage) {
      r.prompt_tokens = std::max<int64_t>(0, chat.usage->prompt_tokens);
      r.output_tokens =
          chat.usage->completion_tokens >= 0 ? chat.usage->completion_tokens : slot.output_chunks;
    } else {
      r.output_tokens = slot.output_chunks;
    }
    r.generated_text = chat.reasoning + chat.content;
    for (const ToolCall& call : chat.tool_calls) r.generated_text += call.arguments;
    curl_multi_remove_handle(multi, slot.easy);
    slot.busy = false;
    --active;
    ++finished;
    failed += !r.success;
    result.records.push_back(std::move(r));
    if (options.on_progress) options.on_progress(finished, failed);
  };

  while (true) {
    double now = clock();
    if (may_issue(now) && active < concurrency && next_arrival <= now) {
      for (auto& slot : slots) {
        if (slot->busy) continue;
        if (!may_issue(now) || next_arrival > now) break;
        start(*slot, now);
        if (paced) next_arrival += gap(rng);
      }
    }
    if (active == 0 && !may_issue(now)) break;
    int running = 0;
    curl_multi_perform(multi, &running);
    int queued = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi, &queued)) {
      if (msg->msg != CURLMSG_DONE) continue;
      Slot* slot = nullptr;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &slot);
      finish(*slot, msg->data.result);
    }
    now = clock();
    int wait_ms = 100;
    if (may_issue(now) && active < concurrency) {
      wait_ms = static_cast<int>(std::clamp((next_arrival - now) * 1000.0, 0.0, 100.0));
    }
    if (wait_ms > 0 || active > 0) curl_multi_poll(multi, nullptr, 0, wait_ms, nullptr);
  }
  result.duration_s = clock() - t0;
  for (auto& slot : slots) curl_easy_cleanup(slot->easy);
  curl_multi_cleanup(multi);
  curl_slist_free_all(headers);
  return result;
}

}  // namespace k3::client
