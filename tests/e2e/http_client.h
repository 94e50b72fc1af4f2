// A blocking HTTP/1.1 client for e2e tests: one request per connection ("Connection: close"),
// the whole response read until the server closes, chunked bodies decoded. Every socket
// operation has a timeout, so a server that never answers fails the test instead of hanging it.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace headroom::e2e {

struct HttpResponse {
  int status = 0;  // 0: no response (connection failed or timed out)
  std::vector<std::pair<std::string, std::string>> headers;  // names lowercased
  std::string body;

  [[nodiscard]] std::optional<std::string> Header(const std::string& name) const {
    for (const auto& [key, value] : headers) {
      if (key == name) return value;
    }
    return std::nullopt;
  }
  // The JSON payloads of an SSE body's "data: " lines, in order ("[DONE]" included).
  [[nodiscard]] std::vector<std::string> Events() const {
    std::vector<std::string> out;
    size_t pos = 0;
    while ((pos = body.find("data: ", pos)) != std::string::npos) {
      const size_t end = body.find("\n\n", pos);
      if (end == std::string::npos) break;
      out.push_back(body.substr(pos + 6, end - pos - 6));
      pos = end + 2;
    }
    return out;
  }
};

// "host:port" -> port.
inline int PortOf(const std::string& address) {
  return std::stoi(address.substr(address.rfind(':') + 1));
}

inline std::string DecodeChunked(const std::string& raw) {
  std::string out;
  size_t pos = 0;
  while (pos < raw.size()) {
    const size_t line_end = raw.find("\r\n", pos);
    if (line_end == std::string::npos) break;
    const size_t size = std::stoul(raw.substr(pos, line_end - pos), nullptr, 16);
    if (size == 0) break;
    out += raw.substr(line_end + 2, size);
    pos = line_end + 2 + size + 2;
  }
  return out;
}

// A TCP connection to 127.0.0.1:`port`; -1 when it cannot be made.
inline int ConnectLoopback(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Sends `method path` with `body` to 127.0.0.1:`port`; `extra_headers` are full lines without
// CRLF ("Authorization: Bearer k"). `raw_request`, when set, is sent verbatim instead.
inline HttpResponse HttpRequestTo(int port, const std::string& method, const std::string& path,
                                  const std::string& body = "",
                                  const std::vector<std::string>& extra_headers = {},
                                  int timeout_s = 60,
                                  const std::optional<std::string>& raw_request = std::nullopt) {
  HttpResponse response;
  const int fd = ConnectLoopback(port);
  if (fd < 0) return response;
  std::string request;
  if (raw_request.has_value()) {
    request = *raw_request;
  } else {
    request = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
    for (const std::string& h : extra_headers) request += h + "\r\n";
    if (!body.empty() || method == "POST") {
      request +=
          "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
          "\r\n";
    }
    request += "\r\n" + body;
  }
  size_t sent = 0;
  while (sent < request.size()) {
    const ssize_t n = send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;  // the server may answer (413) and close before reading everything
    sent += static_cast<size_t>(n);
  }
  std::string raw;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  char buffer[16384];
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      close(fd);
      return HttpResponse{};
    }
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    if (n <= 0) break;
    raw.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  const size_t header_end = raw.find("\r\n\r\n");
  if (header_end == std::string::npos || raw.size() < 12) return response;
  response.status = std::stoi(raw.substr(9, 3));
  size_t pos = raw.find("\r\n") + 2;
  while (pos < header_end) {
    const size_t end = raw.find("\r\n", pos);
    const std::string line = raw.substr(pos, end - pos);
    const size_t colon = line.find(':');
    if (colon != std::string::npos) {
      std::string name = line.substr(0, colon);
      std::transform(name.begin(), name.end(), name.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      std::string value = line.substr(colon + 1);
      value.erase(0, value.find_first_not_of(' '));
      response.headers.emplace_back(std::move(name), std::move(value));
    }
    pos = end + 2;
  }
  const std::string rest = raw.substr(header_end + 4);
  const std::optional<std::string> te = response.Header("transfer-encoding");
  response.body =
      te.has_value() && te->find("chunked") != std::string::npos ? DecodeChunked(rest) : rest;
  return response;
}

// Sends a streaming POST of `body` to `path` and closes the connection as soon as the first
// "data: " event arrived (a client that goes away mid-stream); returns the response's status
// (0 when none came within `timeout_s`).
inline int HttpStreamThenHangUp(int port, const std::string& path, const std::string& body,
                                const std::vector<std::string>& extra_headers = {},
                                int timeout_s = 60) {
  const int fd = ConnectLoopback(port);
  if (fd < 0) return 0;
  std::string request = "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  for (const std::string& h : extra_headers) request += h + "\r\n";
  request += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
             "\r\n\r\n" + body;
  if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    close(fd);
    return 0;
  }
  std::string raw;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  char buffer[4096];
  while (raw.find("data: ") == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    if (n <= 0) break;
    raw.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  return raw.size() >= 12 && raw.rfind("HTTP/1.1 ", 0) == 0 ? std::stoi(raw.substr(9, 3)) : 0;
}

// The value of the Prometheus sample whose line starts with `series` (name and labels) followed
// by a space, in a /metrics body; -1 if absent.
inline double MetricSample(const std::string& text, const std::string& series) {
  size_t pos = 0;
  while ((pos = text.find(series + " ", pos)) != std::string::npos) {
    if (pos == 0 || text[pos - 1] == '\n') return std::stod(text.substr(pos + series.size() + 1));
    pos += series.size();
  }
  return -1;
}

}  // namespace headroom::e2e
