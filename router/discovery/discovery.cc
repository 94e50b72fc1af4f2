#include "router/discovery/discovery.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iostream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace headroom::router {
namespace {

constexpr absl::string_view kStaticPrefix = "static:///";
constexpr absl::string_view kDnsPrefix = "dns:///";

absl::Status BadTarget(absl::string_view target, absl::string_view reason) {
  return absl::InvalidArgumentError(
      absl::StrCat("discovery target must be static:///host:port,... or dns:///name:port, got \"",
                   target, "\": ", reason));
}

struct HostPort {
  std::string host;  // without brackets
  std::string port;
};

// Splits "host:port" or "[v6]:port". Returns the reason it is not one in `reason`.
bool SplitHostPort(absl::string_view part, HostPort& out, std::string& reason) {
  absl::string_view host;
  absl::string_view port;
  if (absl::StartsWith(part, "[")) {
    const size_t close = part.find(']');
    if (close == absl::string_view::npos || close + 1 >= part.size() || part[close + 1] != ':') {
      reason = absl::StrCat("\"", part, "\" is not [ipv6]:port");
      return false;
    }
    host = part.substr(1, close - 1);
    port = part.substr(close + 2);
  } else {
    const size_t colon = part.rfind(':');
    if (colon == absl::string_view::npos) {
      reason = absl::StrCat("\"", part, "\" has no :port");
      return false;
    }
    host = part.substr(0, colon);
    port = part.substr(colon + 1);
    if (absl::StrContains(host, ':')) {
      reason = absl::StrCat("\"", part, "\" looks like an IPv6 address: write [address]:port");
      return false;
    }
  }
  if (host.empty()) {
    reason = absl::StrCat("\"", part, "\" has no host");
    return false;
  }
  for (const char c : host) {
    if (absl::ascii_isspace(static_cast<unsigned char>(c)) || c == '/' || c == ',') {
      reason = absl::StrCat("host \"", host, "\" of \"", part, "\" contains '", std::string(1, c),
                            "'");
      return false;
    }
  }
  uint32_t number = 0;
  if (port.empty() || !std::all_of(port.begin(), port.end(),
                                    [](char c) { return c >= '0' && c <= '9'; }) ||
      !absl::SimpleAtoi(port, &number) || number < 1 || number > 65535) {
    reason = absl::StrCat("port \"", port, "\" of \"", part, "\" is not a number in [1, 65535]");
    return false;
  }
  out.host = std::string(host);
  out.port = std::string(port);
  return true;
}

}  // namespace

absl::StatusOr<DiscoveryTarget> ParseDiscoveryTarget(std::string_view target_in) {
  const absl::string_view target(target_in.data(), target_in.size());
  DiscoveryTarget parsed;
  std::string reason;
  absl::string_view rest;
  if (absl::StartsWith(target, kDnsPrefix)) {
    rest = absl::StripAsciiWhitespace(target.substr(kDnsPrefix.size()));
    if (rest.empty()) return BadTarget(target, "dns:/// names no name:port");
    if (absl::StrContains(rest, ',')) {
      return BadTarget(target, "dns:/// takes one name:port, not a list (use static:///)");
    }
    HostPort hp;
    if (!SplitHostPort(rest, hp, reason)) return BadTarget(target, reason);
    parsed.scheme = DiscoveryTarget::Scheme::kDns;
    parsed.name = std::move(hp.host);
    parsed.port = std::move(hp.port);
    return parsed;
  }
  if (absl::StartsWith(target, kStaticPrefix)) {
    rest = target.substr(kStaticPrefix.size());
  } else if (const size_t scheme_end = target.find("://"); scheme_end != absl::string_view::npos) {
    const absl::string_view scheme = target.substr(0, scheme_end);
    if (scheme == "dns" || scheme == "static") {
      return BadTarget(target, absl::StrCat("\"", scheme, "://", target.substr(scheme_end + 3),
                                            "\" names an authority; write ", scheme,
                                            ":/// (three slashes)"));
    }
    return BadTarget(target, absl::StrCat("unknown scheme \"", scheme, "\""));
  } else if (absl::StartsWith(target, "dns:") || absl::StartsWith(target, "static:")) {
    return BadTarget(target, "write the scheme with three slashes (dns:///, static:///)");
  } else {
    rest = target;  // a bare host:port list
  }
  for (absl::string_view part : absl::StrSplit(rest, ',', absl::SkipWhitespace())) {
    part = absl::StripAsciiWhitespace(part);
    HostPort hp;
    if (!SplitHostPort(part, hp, reason)) return BadTarget(target, reason);
    std::string address(part);
    if (std::find(parsed.addresses.begin(), parsed.addresses.end(), address) ==
        parsed.addresses.end()) {
      parsed.addresses.push_back(std::move(address));
    }
  }
  if (parsed.addresses.empty()) return BadTarget(target, "it lists no host:port");
  parsed.scheme = DiscoveryTarget::Scheme::kStatic;
  return parsed;
}

absl::StatusOr<std::vector<std::string>> ResolveAddresses(const std::string& name,
                                                          const std::string& port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* result = nullptr;
  const int rc = getaddrinfo(name.c_str(), port.c_str(), &hints, &result);
  if (rc != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot resolve \"", name, "\": ", gai_strerror(rc)));
  }
  std::vector<std::string> addresses;
  for (const addrinfo* ai = result; ai != nullptr; ai = ai->ai_next) {
    char text[INET6_ADDRSTRLEN] = {};
    if (ai->ai_family == AF_INET) {
      sockaddr_in v4{};
      if (ai->ai_addrlen < sizeof(v4)) continue;
      std::memcpy(&v4, ai->ai_addr, sizeof(v4));
      if (inet_ntop(AF_INET, &v4.sin_addr, text, sizeof(text)) == nullptr) continue;
      addresses.push_back(absl::StrCat(text, ":", port));
    } else if (ai->ai_family == AF_INET6) {
      sockaddr_in6 v6{};
      if (ai->ai_addrlen < sizeof(v6)) continue;
      std::memcpy(&v6, ai->ai_addr, sizeof(v6));
      if (inet_ntop(AF_INET6, &v6.sin6_addr, text, sizeof(text)) == nullptr) continue;
      addresses.push_back(absl::StrCat("[", text, "]:", port));
    }
  }
  freeaddrinfo(result);
  std::sort(addresses.begin(), addresses.end());
  addresses.erase(std::unique(addresses.begin(), addresses.end()), addresses.end());
  if (addresses.empty()) {
    return absl::UnavailableError(absl::StrCat("\"", name, "\" resolved to no IP address"));
  }
  return addresses;
}

Discovery::Discovery(DiscoveryTarget target, DiscoveryOptions options, Callback callback)
    : target_(std::move(target)), options_(std::move(options)), callback_(std::move(callback)) {}

Discovery::~Discovery() { Stop(); }

void Discovery::Start() {
  if (target_.scheme == DiscoveryTarget::Scheme::kStatic) {
    last_ = target_.addresses;
    delivered_ = true;
    callback_(target_.addresses);
    return;
  }
  ResolveOnce();
  thread_ = std::thread([this] { Run(); });
}

void Discovery::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Discovery::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    if (wake_.wait_for(lock, absl::ToChronoMilliseconds(options_.interval),
                       [this] { return stopping_; })) {
      return;
    }
    lock.unlock();
    ResolveOnce();
    lock.lock();
  }
}

void Discovery::ResolveOnce() {
  absl::StatusOr<std::vector<std::string>> resolved =
      options_.resolver ? options_.resolver(target_.name, target_.port)
                        : ResolveAddresses(target_.name, target_.port);
  const auto log = [this](const std::string& line) {
    if (options_.log) {
      options_.log(line);
    } else {
      std::cerr << line << "\n";
    }
  };
  if (!resolved.ok()) {
    std::string error(resolved.status().message());
    if (error != last_error_) {
      log(absl::StrCat("headroom discovery: ", error, "; keeping the last ", last_.size(),
                       " address(es)"));
      last_error_ = std::move(error);
    }
    return;
  }
  if (!last_error_.empty()) {
    log(absl::StrCat("headroom discovery: \"", target_.name, "\" resolves again"));
    last_error_.clear();
  }
  std::sort(resolved->begin(), resolved->end());
  resolved->erase(std::unique(resolved->begin(), resolved->end()), resolved->end());
  if (delivered_ && *resolved == last_) return;
  last_ = *resolved;
  delivered_ = true;
  callback_(*std::move(resolved));
}

}  // namespace headroom::router
