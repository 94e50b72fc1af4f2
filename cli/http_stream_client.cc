#include "cli/http_stream_client.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace headroom::cli {
namespace {

// Owns a connected socket.
class Socket {
 public:
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() {
    if (fd_ >= 0) close(fd_);
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  [[nodiscard]] int fd() const { return fd_; }

 private:
  int fd_;
};

absl::StatusOr<int> Connect(const HttpTarget& target) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(target.port);
  if (const int rc = getaddrinfo(target.host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot resolve ", target.host, ": ", gai_strerror(rc)));
  }
  int fd = -1;
  int error = 0;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd < 0) continue;
    if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      error = errno;
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd < 0) {
    return absl::UnavailableError(absl::StrCat("cannot connect to ", target.host, ":", target.port,
                                               ": ", std::strerror(error)));
  }
  return fd;
}

absl::Status SendAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return absl::UnavailableError(absl::StrCat("send: ", std::strerror(errno)));
    data.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

// Reads what the body delivers: the status line and headers, then the body decoded from chunks
// (or up to the close), handing each decoded piece to `on_body` as it comes.
class ResponseReader {
 public:
  explicit ResponseReader(
      std::function<void(std::chrono::steady_clock::time_point, std::string_view)> on_body)
      : on_body_(std::move(on_body)) {}

  // Takes bytes read at `now`; false when the response is malformed.
  bool Feed(std::string_view bytes, std::chrono::steady_clock::time_point now) {
    raw_.append(bytes);
    if (!headers_done_) {
      const size_t end = raw_.find("\r\n\r\n");
      if (end == std::string::npos) return true;
      if (!ParseHead(raw_.substr(0, end))) return false;
      raw_.erase(0, end + 4);
      headers_done_ = true;
    }
    if (!chunked_) {
      Deliver(raw_, now);
      raw_.clear();
      return true;
    }
    while (!finished_) {
      if (chunk_left_ == 0) {
        const size_t line_end = raw_.find("\r\n");
        if (line_end == std::string::npos) return true;
        size_t size = 0;
        const char* first = raw_.data();
        const auto [ptr, ec] = std::from_chars(first, first + line_end, size, 16);
        if (ec != std::errc() || ptr == first) return false;
        raw_.erase(0, line_end + 2);
        if (size == 0) {
          finished_ = true;
          return true;
        }
        chunk_left_ = size + 2;  // the data and its CRLF
      }
      if (raw_.empty()) return true;
      const size_t take = std::min(chunk_left_, raw_.size());
      const size_t data = std::min(take, chunk_left_ > 2 ? chunk_left_ - 2 : 0);
      Deliver(std::string_view(raw_).substr(0, data), now);
      raw_.erase(0, take);
      chunk_left_ -= take;
    }
    return true;
  }

  [[nodiscard]] bool finished() const { return finished_; }
  [[nodiscard]] int status() const { return status_; }
  [[nodiscard]] const std::string& body() const { return body_; }

 private:
  bool ParseHead(std::string_view head) {
    // "HTTP/1.1 200 OK"
    const size_t space = head.find(' ');
    if (space == std::string_view::npos || head.size() < space + 4) return false;
    const char* first = head.data() + space + 1;
    if (std::from_chars(first, first + 3, status_).ec != std::errc()) return false;
    const std::string lower = absl::AsciiStrToLower(std::string(head));
    chunked_ = lower.find("\r\ntransfer-encoding: chunked") != std::string::npos;
    return true;
  }

  void Deliver(std::string_view piece, std::chrono::steady_clock::time_point now) {
    if (piece.empty()) return;
    body_.append(piece);
    on_body_(now, piece);
  }

  std::function<void(std::chrono::steady_clock::time_point, std::string_view)> on_body_;
  std::string raw_;
  std::string body_;
  bool headers_done_ = false;
  bool chunked_ = false;
  bool finished_ = false;
  size_t chunk_left_ = 0;
  int status_ = 0;
};

absl::StatusOr<StreamedResponse> Exchange(
    const HttpTarget& target, const std::string& method, const std::string& path,
    const std::string& body, const std::vector<std::string>& headers,
    const std::function<void(std::chrono::steady_clock::time_point, std::string_view)>& on_body,
    std::chrono::seconds idle_timeout) {
  absl::StatusOr<int> fd = Connect(target);
  if (!fd.ok()) return fd.status();
  const Socket socket(*fd);
  std::string request =
      absl::StrCat(method, " ", target.path_prefix, path, " HTTP/1.1\r\nHost: ", target.host, ":",
                   target.port, "\r\nConnection: close\r\n");
  if (!body.empty() || method == "POST") {
    absl::StrAppend(&request, "Content-Type: application/json\r\nContent-Length: ", body.size(),
                    "\r\n");
  }
  for (const std::string& header : headers) absl::StrAppend(&request, header, "\r\n");
  absl::StrAppend(&request, "\r\n", body);
  if (absl::Status sent = SendAll(socket.fd(), request); !sent.ok()) return sent;

  ResponseReader reader(on_body);
  char buffer[16384];
  while (!reader.finished()) {
    pollfd p{.fd = socket.fd(), .events = POLLIN, .revents = 0};
    const int ready = poll(&p, 1, static_cast<int>(idle_timeout.count() * 1000));
    if (ready == 0) {
      return absl::DeadlineExceededError(
          absl::StrCat("nothing arrived for ", idle_timeout.count(), " s"));
    }
    if (ready < 0 && errno == EINTR) continue;
    const ssize_t n = recv(socket.fd(), buffer, sizeof(buffer), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::UnavailableError(absl::StrCat("recv: ", std::strerror(errno)));
    if (n == 0) break;  // closed: the end of a close-delimited body
    if (!reader.Feed(std::string_view(buffer, static_cast<size_t>(n)),
                     std::chrono::steady_clock::now())) {
      return absl::UnavailableError("malformed HTTP response");
    }
  }
  if (reader.status() == 0) {
    return absl::UnavailableError("the connection closed before a response");
  }
  return StreamedResponse{.status = reader.status(), .body = reader.body()};
}

}  // namespace

absl::StatusOr<HttpTarget> ParseBaseUrl(std::string_view url) {
  constexpr std::string_view kScheme = "http://";
  if (url.substr(0, kScheme.size()) != kScheme) {
    return absl::InvalidArgumentError(
        absl::StrCat("--base-url must start with http:// (got \"", std::string(url), "\")"));
  }
  url.remove_prefix(kScheme.size());
  HttpTarget target;
  const size_t slash = url.find('/');
  std::string_view authority = url.substr(0, slash);
  if (slash != std::string_view::npos) {
    std::string_view prefix = url.substr(slash);
    while (!prefix.empty() && prefix.back() == '/') prefix.remove_suffix(1);
    target.path_prefix = std::string(prefix);
  }
  const size_t colon = authority.rfind(':');
  if (colon != std::string_view::npos && authority.find(']', colon) == std::string_view::npos) {
    const std::string_view port = authority.substr(colon + 1);
    if (std::from_chars(port.data(), port.data() + port.size(), target.port).ptr !=
            port.data() + port.size() ||
        target.port < 1 || target.port > 65535) {
      return absl::InvalidArgumentError(
          absl::StrCat("--base-url has a bad port \"", std::string(port), "\""));
    }
    authority = authority.substr(0, colon);
  }
  if (authority.size() >= 2 && authority.front() == '[' && authority.back() == ']') {
    authority = authority.substr(1, authority.size() - 2);
  }
  if (authority.empty()) return absl::InvalidArgumentError("--base-url has no host");
  target.host = std::string(authority);
  return target;
}

absl::StatusOr<StreamedResponse> PostStreaming(
    const HttpTarget& target, const std::string& path, const std::string& body,
    const std::vector<std::string>& headers,
    const std::function<void(std::chrono::steady_clock::time_point, std::string_view)>& on_event,
    std::chrono::seconds idle_timeout) {
  // Events are split on their blank line; a piece may end inside one.
  std::string pending;
  const auto on_body = [&](std::chrono::steady_clock::time_point now, std::string_view piece) {
    pending.append(piece);
    size_t start = 0;
    for (size_t end = pending.find("\n\n"); end != std::string::npos;
         end = pending.find("\n\n", start)) {
      std::string_view event = std::string_view(pending).substr(start, end - start);
      if (event.substr(0, 6) == "data: ") on_event(now, event.substr(6));
      start = end + 2;
    }
    pending.erase(0, start);
  };
  return Exchange(target, "POST", path, body, headers, on_body, idle_timeout);
}

absl::StatusOr<StreamedResponse> Request(const HttpTarget& target, const std::string& method,
                                         const std::string& path, const std::string& body,
                                         const std::vector<std::string>& headers,
                                         std::chrono::seconds idle_timeout) {
  return Exchange(
      target, method, path, body, headers,
      [](std::chrono::steady_clock::time_point, std::string_view) {}, idle_timeout);
}

}  // namespace headroom::cli
