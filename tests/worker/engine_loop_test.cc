// EngineLoop: requests posted from many threads get exactly the tokens the engine computes
// synchronously; every request ends with exactly one terminal event (finish, refusal, abort or
// stop), never silently.
#include "worker/engine/engine_loop.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fixture_model.h"
#include "worker/backend/cpu_backend.h"

namespace headroom::worker {
namespace {

const testdata::FixtureModel& Fixture() { return testdata::LoadFixtureModel("llama-gqa"); }

// `vocabulary`: token id i is byte i (for constrained decoding).
std::unique_ptr<Engine> MakeEngine(Backend* backend, bool vocabulary = false) {
  EngineOptions options{.max_num_seqs = 16,
                        .max_num_batched_tokens = 512,
                        .max_model_len = 256,
                        .block_size = 16,
                        .num_kv_blocks = 200};
  if (vocabulary) {
    std::vector<std::string> table(256);
    for (int i = 0; i < 256; ++i)
      table[static_cast<size_t>(i)] = std::string(1, static_cast<char>(i));
    options.json_vocabulary = std::make_shared<const JsonVocabulary>(std::move(table));
  }
  auto engine = Engine::Create(Fixture().config, Fixture().weights, options, backend);
  EXPECT_TRUE(engine.ok()) << engine.status();
  return *std::move(engine);
}

Request MakeRequest(int64_t id, int32_t max_tokens) {
  Request r;
  r.id = RequestId{id};
  for (int64_t t = 0; t < 5 + id % 40; ++t) {
    r.prompt.push_back(static_cast<int32_t>((id * 31 + t * 7) % 256));
  }
  r.sampling.max_tokens = max_tokens;
  r.sampling.ignore_eos = true;
  r.sampling.temperature = id % 2 == 0 ? 0.0f : 0.7f;
  r.sampling.seed = static_cast<uint64_t>(id);
  return r;
}

// Collects what each request's callback received.
class Recorder {
 public:
  EngineLoop::Callback For(int64_t id) {
    return [this, id](const absl::StatusOr<StepToken>& event) {
      std::lock_guard<std::mutex> lock(mu_);
      Record& r = records_[id];
      EXPECT_FALSE(r.done) << "event after the terminal one for request " << id;
      if (!event.ok()) {
        r.status = event.status();
        r.done = true;
      } else {
        r.tokens.push_back(event->token);
        r.done = event->finish != FinishReason::kNone;
      }
      if (r.done) ++done_;
      cv_.notify_all();
    };
  }
  void WaitDone(int count) {
    std::unique_lock<std::mutex> lock(mu_);
    ASSERT_TRUE(cv_.wait_for(lock, std::chrono::seconds(60), [&] { return done_ >= count; }));
  }
  struct Record {
    std::vector<int32_t> tokens;
    absl::Status status;
    bool done = false;
  };
  std::map<int64_t, Record> records() {
    std::lock_guard<std::mutex> lock(mu_);
    return records_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<int64_t, Record> records_;
  int done_ = 0;
};

TEST(EngineLoopTest, ConcurrentSubmittersGetTheEnginesTokens) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 6;
  // Reference: the same requests through the synchronous engine.
  CpuBackend reference_backend(1);
  auto reference = MakeEngine(&reference_backend);
  std::map<int64_t, std::vector<int32_t>> expected;
  for (int64_t id = 0; id < kThreads * kPerThread; ++id) {
    ASSERT_TRUE(reference->AddRequest(MakeRequest(id, 12)).ok());
  }
  while (reference->HasWork()) {
    const absl::StatusOr<std::vector<StepToken>> step = reference->Step();
    ASSERT_TRUE(step.ok()) << step.status();
    for (const StepToken& t : *step) expected[t.id.value()].push_back(t.token);
  }

  CpuBackend backend(1);
  EngineLoop loop(MakeEngine(&backend));
  Recorder recorder;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const int64_t id = t * kPerThread + i;
        loop.Submit(MakeRequest(id, 12), recorder.For(id));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  recorder.WaitDone(kThreads * kPerThread);
  for (const auto& [id, record] : recorder.records()) {
    EXPECT_TRUE(record.status.ok()) << record.status;
    EXPECT_EQ(record.tokens, expected[id]) << "request " << id;
  }
  loop.Stop();  // Stats() is published after a step's callbacks; after Stop() it is final.
  EXPECT_EQ(loop.Stats().kv.num_used_blocks, 0);
  EXPECT_EQ(loop.Stats().scheduler.num_running, 0);
}

TEST(EngineLoopTest, RefusalAndAbortEndARequestOnce) {
  CpuBackend backend(1);
  EngineLoop loop(MakeEngine(&backend));
  Recorder recorder;
  Request too_long = MakeRequest(1, 300);  // prompt + 300 > max_model_len 256
  loop.Submit(too_long, recorder.For(1));
  // Request 2's first token holds the engine thread until the abort below was posted, so the
  // abort lands mid-request however the threads are scheduled (200 tokens of the fixture take
  // a few ms: a descheduled test thread used to abort a finished request).
  std::promise<void> abort_posted;
  std::shared_future<void> posted = abort_posted.get_future().share();
  EngineLoop::Callback record = recorder.For(2);
  loop.Submit(MakeRequest(2, 200),
              [record, posted, first = true](const absl::StatusOr<StepToken>& event) mutable {
                if (first) posted.wait();
                first = false;
                record(event);
              });
  loop.Abort(RequestId{2});
  abort_posted.set_value();
  loop.Abort(RequestId{99});  // unknown: ignored
  recorder.WaitDone(2);
  auto records = recorder.records();
  EXPECT_EQ(records[1].status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(records[2].status.code(), absl::StatusCode::kCancelled);
  EXPECT_LT(records[2].tokens.size(), 200u);
}

// A request's guided regex is compiled on the thread that submits it, not on the engine thread
// (grouping a real vocabulary for a new pattern takes milliseconds, which every running request
// would wait for): while the engine thread is held inside a callback, a bad pattern is refused
// before Submit returns, and a good one still runs once the thread is let go.
TEST(EngineLoopTest, ConstraintsAreCompiledOnTheSubmittingThread) {
  CpuBackend backend(1);
  EngineLoop loop(MakeEngine(&backend, /*vocabulary=*/true));
  Recorder recorder;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> holding;
  EngineLoop::Callback record = recorder.For(1);
  loop.Submit(MakeRequest(1, 3), [record, released, &holding,
                                  first = true](const absl::StatusOr<StepToken>& event) mutable {
    if (first) {
      holding.set_value();
      released.wait();
    }
    first = false;
    record(event);
  });
  holding.get_future().wait();  // the engine thread is inside request 1's first callback

  Request bad = MakeRequest(2, 5);
  bad.sampling.regex = "(?=a)b";
  loop.Submit(bad, recorder.For(2));
  EXPECT_EQ(recorder.records()[2].status,
            absl::InvalidArgumentError("regex: lookahead is not supported"));

  Request good = MakeRequest(3, 20);
  good.sampling.regex = "[a-c]{5}";
  loop.Submit(good, recorder.For(3));
  EXPECT_FALSE(recorder.records()[3].done);
  release.set_value();
  recorder.WaitDone(3);
  const std::vector<int32_t> tokens = recorder.records()[3].tokens;
  ASSERT_EQ(tokens.size(), 5u) << "the pattern ends the request after five characters";
  for (int32_t t : tokens) {
    EXPECT_TRUE(t >= 'a' && t <= 'c') << t;
  }
  EXPECT_TRUE(recorder.records()[3].status.ok());
}

TEST(EngineLoopTest, StopCancelsEverythingLeft) {
  CpuBackend backend(1);
  Recorder recorder;
  {
    EngineLoop loop(MakeEngine(&backend));
    for (int64_t id = 0; id < 16; ++id) loop.Submit(MakeRequest(id, 200), recorder.For(id));
    loop.Stop();
    loop.Submit(MakeRequest(100, 5), recorder.For(100));  // after Stop: refused at once
  }
  recorder.WaitDone(17);
  for (const auto& [id, record] : recorder.records()) {
    EXPECT_TRUE(record.done);
    if (id == 100) {
      EXPECT_EQ(record.status.code(), absl::StatusCode::kUnavailable);
    }
  }
}

// A posted op runs on the engine thread, and its status reaches `done`; after Stop it is refused
// at once. (That `done` sees the op's statistics published is lora_e2e_test's: a loaded adapter
// is listed by the very next /v1/models.)
TEST(EngineLoopTest, PostedOpsRunOnTheEngineThread) {
  CpuBackend backend(1);
  EngineLoop loop(MakeEngine(&backend));
  std::promise<std::thread::id> ran_on;
  std::promise<absl::Status> finished;
  loop.Post(
      [&](Engine&) {
        ran_on.set_value(std::this_thread::get_id());
        return absl::NotFoundError("the op's own status");
      },
      [&](const absl::Status& status) { finished.set_value(status); });
  EXPECT_NE(ran_on.get_future().get(), std::this_thread::get_id());
  const absl::Status status = finished.get_future().get();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "the op's own status");
  loop.Stop();
  absl::Status after_stop;
  loop.Post([](Engine&) { return absl::OkStatus(); },
            [&](const absl::Status& s) { after_stop = s; });  // refused at once, on this thread
  EXPECT_EQ(after_stop.code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace headroom::worker
