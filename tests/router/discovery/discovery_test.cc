#include "router/discovery/discovery.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace headroom::router {
namespace {

using Scheme = DiscoveryTarget::Scheme;

struct GoodCase {
  std::string target;
  Scheme scheme;
  std::vector<std::string> addresses;  // kStatic
  std::string name;                    // kDns
  std::string port;                    // kDns
};

TEST(ParseDiscoveryTargetTest, GoodTargets) {
  const std::vector<GoodCase> cases = {
      {"static:///a:1", Scheme::kStatic, {"a:1"}, "", ""},
      {"static:///a:1,b.c:50061", Scheme::kStatic, {"a:1", "b.c:50061"}, "", ""},
      {"static:///a:1, b:2 ,", Scheme::kStatic, {"a:1", "b:2"}, "", ""},
      {"static:///a:1,a:1,b:2", Scheme::kStatic, {"a:1", "b:2"}, "", ""},  // deduplicated
      {"static:///[::1]:5,10.0.0.7:6", Scheme::kStatic, {"[::1]:5", "10.0.0.7:6"}, "", ""},
      {"h1:1,h2:2", Scheme::kStatic, {"h1:1", "h2:2"}, "", ""},  // bare list = static
      {"127.0.0.1:50061", Scheme::kStatic, {"127.0.0.1:50061"}, "", ""},
      {"dns:///localhost:50061", Scheme::kDns, {}, "localhost", "50061"},
      {"dns:///g-headless.ns.svc.cluster.local:50061", Scheme::kDns, {},
       "g-headless.ns.svc.cluster.local", "50061"},
      {"dns:///[::1]:7", Scheme::kDns, {}, "::1", "7"},
  };
  for (const GoodCase& c : cases) {
    SCOPED_TRACE(c.target);
    const absl::StatusOr<DiscoveryTarget> parsed = ParseDiscoveryTarget(c.target);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(parsed->scheme, c.scheme);
    EXPECT_EQ(parsed->addresses, c.addresses);
    EXPECT_EQ(parsed->name, c.name);
    EXPECT_EQ(parsed->port, c.port);
  }
}

struct BadCase {
  std::string target;
  std::string names;  // a part of the message that names what is wrong
};

TEST(ParseDiscoveryTargetTest, BadTargetsNameTheBadPart) {
  const std::vector<BadCase> cases = {
      {"", "lists no host:port"},
      {"static:///", "lists no host:port"},
      {"static:///a:1,b", "\"b\" has no :port"},
      {"static:///a:0", "port \"0\" of \"a:0\""},
      {"static:///a:65536", "port \"65536\""},
      {"static:///a:x1", "port \"x1\""},
      {"static:///:80", "\":80\" has no host"},
      {"static:///::1:80", "IPv6"},
      {"static:///[::1]", "is not [ipv6]:port"},
      {"static:///a b:1", "contains ' '"},
      {"dns:///", "names no name:port"},
      {"dns:///name", "\"name\" has no :port"},
      {"dns:///a:1,b:2", "not a list"},
      {"dns://8.8.8.8/name:53", "three slashes"},
      {"dns:name:53", "three slashes"},
      {"http://a:1", "unknown scheme \"http\""},
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.target);
    const absl::StatusOr<DiscoveryTarget> parsed = ParseDiscoveryTarget(c.target);
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    const std::string message(parsed.status().message());
    EXPECT_EQ(message.rfind("discovery target must be static:///host:port,... or "
                            "dns:///name:port, got \"" + c.target + "\"", 0),
              0u)
        << message;
    EXPECT_NE(message.find(c.names), std::string::npos) << message;
  }
}

DiscoveryOptions Every(absl::Duration interval) {
  DiscoveryOptions options;
  options.interval = interval;
  return options;
}

// Collects the callback's lists.
class Lists {
 public:
  Discovery::Callback Callback() {
    return [this](std::vector<std::string> addresses) {
      std::lock_guard<std::mutex> lock(mu_);
      lists_.push_back(std::move(addresses));
      cv_.notify_all();
    };
  }
  // Waits (at most 5 s) until `n` lists arrived; returns them.
  std::vector<std::vector<std::string>> WaitFor(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(5), [&] { return lists_.size() >= n; });
    return lists_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::vector<std::string>> lists_;
};

TEST(DiscoveryTest, StaticCallsBackOnceWithTheListAsGiven) {
  Lists lists;
  {
    Discovery discovery(*ParseDiscoveryTarget("static:///b:2,a:1"),
                        Every(absl::Milliseconds(10)), lists.Callback());
    discovery.Start();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const auto got = lists.WaitFor(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], (std::vector<std::string>{"b:2", "a:1"}));
}

TEST(DiscoveryTest, DnsLocalhostResolvesToLoopback) {
  Lists lists;
  Discovery discovery(*ParseDiscoveryTarget("dns:///localhost:50999"),
                      Every(absl::Milliseconds(50)), lists.Callback());
  discovery.Start();  // the first resolution happens here
  const auto got = lists.WaitFor(1);
  ASSERT_GE(got.size(), 1u);
  ASSERT_FALSE(got[0].empty());
  EXPECT_NE(std::find(got[0].begin(), got[0].end(), "127.0.0.1:50999"), got[0].end());
  EXPECT_TRUE(std::is_sorted(got[0].begin(), got[0].end()));
  for (const std::string& a : got[0]) {  // IPv6 (::1) comes bracketed
    if (a.find("::") != std::string::npos) {
      EXPECT_EQ(a.front(), '[') << a;
    }
  }
  // Re-resolving the same answer does not call back again.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  discovery.Stop();
  EXPECT_EQ(lists.WaitFor(1).size(), 1u);
}

TEST(DiscoveryTest, ResolveAddressesFormatsIpv4AndBracketsIpv6) {
  // Numeric hosts: no DNS query, so this holds without a network.
  EXPECT_EQ(*ResolveAddresses("127.0.0.1", "7"), std::vector<std::string>{"127.0.0.1:7"});
  EXPECT_EQ(*ResolveAddresses("::1", "7"), std::vector<std::string>{"[::1]:7"});
}

// A scripted resolver: each call takes the next answer (the last one repeats).
TEST(DiscoveryTest, CallsBackOnChangeOnlyAndKeepsTheLastListOnFailure) {
  std::mutex mu;
  std::deque<absl::StatusOr<std::vector<std::string>>> answers = {
      std::vector<std::string>{"10.0.0.2:1", "10.0.0.1:1", "10.0.0.1:1"},
      std::vector<std::string>{"10.0.0.1:1", "10.0.0.2:1"},  // same set: no callback
      absl::UnavailableError("cannot resolve \"g\": Name or service not known"),
      absl::UnavailableError("cannot resolve \"g\": Name or service not known"),
      std::vector<std::string>{"10.0.0.3:1"},
  };
  size_t calls = 0;
  std::vector<std::string> log;
  DiscoveryOptions options;
  options.interval = absl::Milliseconds(10);
  options.resolver = [&](const std::string& name, const std::string& port)
      -> absl::StatusOr<std::vector<std::string>> {
    EXPECT_EQ(name, "g");
    EXPECT_EQ(port, "1");
    std::lock_guard<std::mutex> lock(mu);
    ++calls;
    absl::StatusOr<std::vector<std::string>> answer = answers.front();
    if (answers.size() > 1) answers.pop_front();
    return answer;
  };
  options.log = [&](std::string_view line) {
    std::lock_guard<std::mutex> lock(mu);
    log.emplace_back(line);
  };
  Lists lists;
  Discovery discovery(*ParseDiscoveryTarget("dns:///g:1"), options, lists.Callback());
  discovery.Start();
  const auto got = lists.WaitFor(2);
  discovery.Stop();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], (std::vector<std::string>{"10.0.0.1:1", "10.0.0.2:1"}));
  EXPECT_EQ(got[1], (std::vector<std::string>{"10.0.0.3:1"}));
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_GE(calls, 5u);
  ASSERT_EQ(log.size(), 2u);  // the error once, then the recovery
  EXPECT_NE(log[0].find("Name or service not known"), std::string::npos) << log[0];
  EXPECT_NE(log[0].find("keeping the last 2"), std::string::npos) << log[0];
  EXPECT_NE(log[1].find("resolves again"), std::string::npos) << log[1];
}

}  // namespace
}  // namespace headroom::router
