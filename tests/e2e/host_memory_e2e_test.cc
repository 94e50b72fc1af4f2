// Host memory over a long mixed workload. vLLM users have watched a server's resident memory grow
// with every request until the host killed it: per-step block ids that were never drained
// (vllm#44490), requests with n > 1 that leaked (#15597, #14353). LeakSanitizer cannot see that
// kind of leak (the memory stays reachable), so this test looks where the operator looks: it
// drives thousands of requests of every kind through a real router and two real workers
// (streams, n = 2, logprobs, chats, tools, clients that hang up, bad requests, cancelled gRPC
// calls, tokenize, embeddings and rerank) and checks that no process's resident set keeps growing once warmed up.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "grpcpp/grpcpp.h"
#include "headroom/v1/inference.grpc.pb.h"
#include "http_client.h"
#include "http_cluster.h"
#include "nlohmann/json.hpp"

namespace headroom::e2e {
namespace {

using Json = nlohmann::json;

constexpr int kThreads = 4;
constexpr int kKinds = 9;
constexpr int kWarmupRounds = 2;
constexpr int kMeasuredRounds = 8;
constexpr int kPerThreadPerRound = 40 * kKinds;  // each kind 40 times per thread and round:
                                                 // 1,440 requests a round

// Resident set of `pid` in KiB (VmRSS of /proc/PID/status); -1 if unreadable.
long RssKib(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

// One of 1,024 prompts for request `i`. They take 3 to 4 blocks each and the workers hold 64, so
// the prefix caches keep caching new blocks and evicting old ones; a pool (not a new prompt per
// request) because the router's tokenizer caches up to 10,000 words, and the byte tokenizer's
// word is the whole text (router/tokenizer/bpe_model.h): bounded growth, which warm-up fills.
std::string Prompt(int i) {
  static constexpr const char* kWords[] = {
      "alpha",  "bravo", "charlie", "delta",  "echo",    "fox",   "golf",   "hotel",
      "india",  "kilo",  "lima",    "mike",   "oscar",   "papa",  "quebec", "romeo",
      "sierra", "tango", "uniform", "victor", "whiskey", "xray",  "yankee", "zulu",
      "red",    "green", "blue",    "cyan",   "amber",   "black", "white",  "grey"};
  const int k = i % 1024;
  return std::string("soak ") + kWords[k % 32] + " " + kWords[k / 32] +
         " the quick brown fox jumps over the lazy dog";
}

// Sends request `i` of kind `kind` and checks the answer the kind must get; returns whether it
// held (the caller counts them: none may be lost).
bool OneRequest(const Cluster& cluster, int kind, int i) {
  const std::string prompt = Prompt(i);
  switch (kind) {
    case 0: {  // streamed completion, two samples with logprobs and usage
      const Json request = {{"prompt", prompt}, {"max_tokens", 6},
                            {"n", 2},           {"logprobs", 2},
                            {"stream", true},   {"stream_options", {{"include_usage", true}}}};
      const HttpResponse r = cluster.Post("/v1/completions", request.dump());
      const std::vector<std::string> events = r.Events();
      int finished = 0;
      for (const std::string& e : events) finished += e.find("\"finish_reason\":\"") != e.npos;
      EXPECT_EQ(r.status, 200) << r.body;
      EXPECT_EQ(finished, 2) << r.body;
      return r.status == 200 && finished == 2 && events.back() == "[DONE]";
    }
    case 1: {  // chat with a stop string
      const Json request = {{"messages", {{{"role", "user"}, {"content", prompt}}}},
                            {"max_tokens", 8},
                            {"stop", {" ", "e"}}};
      const HttpResponse r = cluster.Post("/v1/chat/completions", request.dump());
      EXPECT_EQ(r.status, 200) << r.body;
      return r.status == 200 && Json::parse(r.body)["choices"].size() == 1;
    }
    case 2: {  // a client that hangs up after the first event
      const Json request = {
          {"prompt", prompt}, {"max_tokens", 40}, {"ignore_eos", true}, {"stream", true}};
      const int status =
          HttpStreamThenHangUp(cluster.http_port, "/v1/completions", request.dump(), {kAuth});
      EXPECT_EQ(status, 200);
      return status == 200;
    }
    case 3: {  // bad input
      const Json request = {{"prompt", prompt}, {"max_tokens", -1}};
      const HttpResponse r = cluster.Post("/v1/completions", request.dump());
      EXPECT_EQ(r.status, 400) << r.body;
      return r.status == 400;
    }
    case 4: {  // a gRPC call cancelled after its first token
      v1::GenerateRequest request;
      request.set_text(prompt);
      request.mutable_sampling()->set_max_tokens(40);
      request.mutable_sampling()->set_ignore_eos(true);
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
      std::unique_ptr<grpc::ClientReader<v1::GenerateResponse>> reader =
          cluster.stub->Generate(&context, request);
      v1::GenerateResponse response;
      const bool first = reader->Read(&response);
      context.TryCancel();
      while (reader->Read(&response)) {
      }
      const grpc::Status status = reader->Finish();
      EXPECT_TRUE(first);
      EXPECT_TRUE(status.error_code() == grpc::StatusCode::CANCELLED || status.ok())
          << status.error_message();
      return first && (status.error_code() == grpc::StatusCode::CANCELLED || status.ok());
    }
    case 5: {  // streamed chat offering a tool (the router parses hermes tool calls)
      const Json request = {
          {"messages", {{{"role", "user"}, {"content", prompt}}}},
          {"max_tokens", 8},
          {"stream", true},
          {"tools",
           {{{"type", "function"},
             {"function",
              {{"name", "get_weather"},
               {"parameters",
                {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}}}}}}}}};
      const HttpResponse r = cluster.Post("/v1/chat/completions", request.dump());
      const std::vector<std::string> events = r.Events();
      EXPECT_EQ(r.status, 200) << r.body;
      return r.status == 200 && !events.empty() && events.back() == "[DONE]";
    }
    case 6: {  // tokenize and back
      const HttpResponse tokens = cluster.Post("/tokenize", Json{{"prompt", prompt}}.dump());
      EXPECT_EQ(tokens.status, 200) << tokens.body;
      if (tokens.status != 200) return false;
      const Json ids = Json::parse(tokens.body)["tokens"];
      const HttpResponse text = cluster.Post("/detokenize", Json{{"tokens", ids}}.dump());
      EXPECT_EQ(text.status, 200) << text.body;
      return text.status == 200 && Json::parse(text.body)["prompt"] == prompt;
    }
    case 7: {  // embeddings of two inputs (every other one base64), or a rerank of three
      if (i % 2 == 0) {
        const Json request = {{"input", {prompt, prompt + " again"}},
                              {"encoding_format", i % 4 == 0 ? "base64" : "float"}};
        const HttpResponse r = cluster.Post("/v1/embeddings", request.dump());
        EXPECT_EQ(r.status, 200) << r.body;
        return r.status == 200 && Json::parse(r.body)["data"].size() == 2;
      }
      const Json request = {{"query", prompt}, {"documents", {"red", "green", prompt}}};
      const HttpResponse r = cluster.Post("/rerank", request.dump());
      EXPECT_EQ(r.status, 200) << r.body;
      return r.status == 200 && Json::parse(r.body)["results"].size() == 3;
    }
    default: {  // two prompts, echoed, with prompt logprobs
      const Json request = {{"prompt", {prompt, prompt + " again"}},
                            {"max_tokens", 3},
                            {"echo", true},
                            {"prompt_logprobs", 1}};
      const HttpResponse r = cluster.Post("/v1/completions", request.dump());
      EXPECT_EQ(r.status, 200) << r.body;
      return r.status == 200 && Json::parse(r.body)["choices"].size() == 2;
    }
  }
}

// The router's open generation requests (vLLM's /load); -1 when it does not answer.
long ServerLoad(const Cluster& cluster) {
  const HttpResponse r = HttpRequestTo(cluster.http_port, "GET", "/load");
  const Json body = Json::parse(r.body, nullptr, false);
  return r.status == 200 && body.is_object() ? body.value("server_load", -1L) : -1L;
}

TEST(HostMemoryE2eTest, ResidentMemoryStaysFlatOverThousandsOfMixedRequests) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer's quarantine holds freed memory: resident size says nothing "
                  "about leaks in this build (its LeakSanitizer checks the exits instead)";
#endif
  Cluster cluster;
  ASSERT_TRUE(cluster.Start(64, {"--enable-auto-tool-choice", "--tool-call-parser", "hermes"}));
  const std::vector<std::pair<std::string, pid_t>> processes = {
      {"router", cluster.router->pid()},
      {"worker a", cluster.worker_a->pid()},
      {"worker b", cluster.worker_b->pid()}};

  std::atomic<int> held{0};
  std::atomic<int> next{0};
  std::vector<std::vector<long>> rss(processes.size());  // KiB after each round
  for (int round = 0; round < kWarmupRounds + kMeasuredRounds; ++round) {
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&] {
        for (int k = 0; k < kPerThreadPerRound; ++k) {
          const int i = next.fetch_add(1);
          if (OneRequest(cluster, i % kKinds, i)) held.fetch_add(1);
        }
      });
    }
    for (std::thread& t : threads) t.join();
    // Hung-up streams and cancelled calls end on the router's threads after the clients left.
    long load = ServerLoad(cluster);
    for (int wait = 0; wait < 200 && load != 0; ++wait) {
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
      load = ServerLoad(cluster);
    }
    ASSERT_EQ(load, 0) << "requests still open after round " << round;
    for (size_t p = 0; p < processes.size(); ++p) rss[p].push_back(RssKib(processes[p].second));
  }
  const int sent = next.load();
  EXPECT_EQ(held.load(), sent) << "every request gets the answer its kind must get";

  // The bound is 256 bytes per measured request. Without a leak the processes grow about 30 bytes
  // per request here (the allocator settling); leaking what a finished request leaves behind
  // does not fit under it: an engine that keeps each request's sampling state (as vllm#44490
  // kept block ids) grows 850 bytes per request, a router that keeps each Generate's reactor
  // 3,900 (both checked by breaking the code on purpose, 2026-11-24).
  const int measured = kMeasuredRounds * kThreads * kPerThreadPerRound;
  const long bound_kib = 256L * measured / 1024;
  for (size_t p = 0; p < processes.size(); ++p) {
    std::string trace;
    for (const long kib : rss[p]) trace += std::to_string(kib) + " ";
    const long warm = rss[p][kWarmupRounds - 1];
    const long last = rss[p].back();
    ASSERT_GT(warm, 0) << processes[p].first;
    EXPECT_LT(last - warm, bound_kib)
        << processes[p].first << " grew " << (last - warm) << " KiB ("
        << (last - warm) * 1024 / measured << " bytes per request) over " << measured
        << " requests after warm-up; RSS KiB after each round: " << trace;
    std::printf("%s RSS KiB after each round of %d requests: %s\n", processes[p].first.c_str(),
                kThreads * kPerThreadPerRound, trace.c_str());
  }
}

}  // namespace
}  // namespace headroom::e2e
